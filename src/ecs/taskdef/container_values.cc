#include "ecs/taskdef/container_values.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cctype>
#include <string>

#include "common/encoding.h"
#include "common/json_fields.h"
#include "ecs/common/records.h"

namespace paddock::ecs::taskdef {
namespace json = boost::json;
using json_fields::Objects;
using json_fields::Str;
using json_fields::Strings;

namespace {

bool NameChars(std::string_view s, size_t max, std::string_view extra) {
  if (s.empty() || s.size() > max || s.front() == '-' || s.front() == '.') return false;
  for (unsigned char ch : s)
    if (!std::isalnum(ch) && extra.find(static_cast<char>(ch)) == std::string_view::npos) return false;
  return true;
}

Status Invalid(std::string_view field, std::string_view container, std::string_view what) {
  return ParamError(fmt::format("Invalid {} for container '{}': {}", field, container, what));
}

Status CheckNames(const json::object& holder, std::string_view list, std::string_view container) {
  for (const json::object* kv : Objects(holder, list)) {
    const std::string name = Str(*kv, "name");
    if (name.empty() || name.find_first_of(std::string_view("=\0\n\r", 4)) != std::string::npos)
      return Invalid(list == "secrets" ? "secret name" : "environment variable name", container,
                     fmt::format("'{}' must not be empty or contain '=', a NUL character or a line break.", TerminalSafe(name)));
  }
  return OkStatus();
}

}  // namespace

bool IsHostName(std::string_view s) { return NameChars(s, 255, "-._"); }

bool IsSearchDomain(std::string_view s) { return NameChars(s, 253, "-."); }

bool IsIpAddress(std::string_view s) {
  if (s.empty() || s.size() > 45 || s.find('\0') != std::string_view::npos) return false;
  const std::string text(s);
  unsigned char buf[16];
  return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

Status CheckEnvironmentNames(const json::object& holder, std::string_view container) {
  return CheckNames(holder, "environment", container);
}

Status CheckContainerValues(const json::object& c) {
  const std::string name = Str(c, "name");
  for (const json::object* h : Objects(c, "extraHosts")) {
    const std::string host = Str(*h, "hostname"), ip = Str(*h, "ipAddress");
    if (!IsHostName(host))
      return Invalid("extraHosts entry", name,
                     fmt::format("hostname '{}' may contain only letters, digits, '-', '.' and '_' (1 to 255 "
                                 "characters, not starting with '-' or '.').",
                                 TerminalSafe(host)));
    if (!IsIpAddress(ip))
      return Invalid("extraHosts entry", name, fmt::format("ipAddress '{}' is not an IPv4 or IPv6 address.", TerminalSafe(ip)));
  }
  for (const std::string& server : Strings(c, "dnsServers")) {
    if (!IsIpAddress(server))
      return Invalid("dnsServers entry", name, fmt::format("'{}' is not an IPv4 or IPv6 address.", TerminalSafe(server)));
  }
  for (const std::string& domain : Strings(c, "dnsSearchDomains")) {
    if (!IsSearchDomain(domain))
      return Invalid("dnsSearchDomains entry", name,
                     fmt::format("'{}' is not a domain name (letters, digits, '-' and '.', 1 to 253 characters).",
                                 TerminalSafe(domain)));
  }
  if (auto hostname = json_fields::OptStr(c, "hostname"); hostname && !IsHostName(*hostname))
    return Invalid("hostname", name,
                   fmt::format("'{}' may contain only letters, digits, '-', '.' and '_' (1 to 255 characters, not "
                               "starting with '-' or '.').",
                               TerminalSafe(*hostname)));
  RETURN_IF_ERROR(CheckNames(c, "environment", name));
  return CheckNames(c, "secrets", name);
}

}  // namespace paddock::ecs::taskdef
