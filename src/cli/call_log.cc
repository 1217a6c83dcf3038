#include "cli/call_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace paddock::cli {
namespace json = boost::json;

namespace {

// "arn:aws:ecs:us-east-1:123456789012:task-definition/web:3", "web:3" and "web" are all "web".
std::string Family(std::string_view td) {
  if (size_t slash = td.rfind('/'); slash != std::string_view::npos) td.remove_prefix(slash + 1);
  if (size_t colon = td.rfind(':'); colon != std::string_view::npos) td = td.substr(0, colon);
  return std::string(td);
}

// An ARN's resource name: what follows its last '/' (the whole text when it has none).
std::string LastSegment(std::string_view arn) {
  if (size_t slash = arn.rfind('/'); slash != std::string_view::npos) arn.remove_prefix(slash + 1);
  return std::string(arn);
}

// Only plain names and numbers are copied: a list is kept when every member is a string.
std::optional<json::value> Plain(const json::value& v) {
  if (v.is_string() || v.is_int64() || v.is_uint64() || v.is_bool()) return v;
  if (v.is_array()) {
    for (const json::value& e : v.as_array()) {
      if (!e.is_string()) return std::nullopt;
    }
    return v;
  }
  return std::nullopt;
}

}  // namespace

json::object CallLogKey(const json::object& body) {
  // One allow-list for every action, in a fixed order (the body's own order may vary). Nothing
  // outside it is ever copied: a parameter's Value, a container definition, a token.
  static constexpr std::string_view kNames[] = {"cluster",  "clusterName",   "clusters", "serviceName", "service",
                                                "family",   "desiredCount",  "desiredStatus", "Name", "Names",
                                                "Path",     "logGroupName"};
  json::object key;
  for (std::string_view name : kNames) {
    const json::value* v = body.if_contains(name);
    if (!v) continue;
    if (std::optional<json::value> plain = Plain(*v)) key[name] = std::move(*plain);
  }
  if (const json::value* td = body.if_contains("taskDefinition"); td && td->is_string()) {
    key["taskDefinition"] = Family(td->as_string());
  }
  if (const json::value* arn = body.if_contains("resourceArn"); arn && arn->is_string()) {
    key["resource"] = LastSegment(arn->as_string());
  }
  return key;
}

std::string FormatCallLogLine(deploy::AwsService service, std::string_view action, const json::object& body, bool ok) {
  return json::serialize(json::object{{"service", deploy::AwsServiceName(service)},
                                      {"action", action},
                                      {"ok", ok},
                                      {"key", CallLogKey(body)}});
}

StatusOr<CallObserver> OpenCallLog(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot open the call log {}: {}", path, std::strerror(errno)));
  // Closed with the last copy of the observer.
  auto file = std::shared_ptr<int>(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  return CallObserver([file](deploy::AwsService service, std::string_view action, const json::object& body, bool ok) {
    const std::string line = FormatCallLogLine(service, action, body, ok) + "\n";
    // O_APPEND: each line lands whole after the last, whichever thread writes it.
    (void)!::write(*file, line.data(), line.size());
  });
}

}  // namespace paddock::cli
