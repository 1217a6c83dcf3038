#include "cli/config.h"

#include <fmt/format.h>

#include <charconv>
#include <toml++/toml.h>

#include "common/ids.h"

namespace paddock::cli {

Status LoadConfigFile(const std::string& path, ServerConfig& config) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("config file {}: {}", path, e.description()));
  }
  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    auto str = [&](std::string& out) -> Status {
      if (!node.is_string()) return InvalidArgument(fmt::format("config file {}: '{}' must be a string", path, k));
      out = node.as_string()->get();
      return OkStatus();
    };
    if (k == "listen") {
      RETURN_IF_ERROR(str(config.listen));
    } else if (k == "state_dir") {
      RETURN_IF_ERROR(str(config.state_dir));
    } else if (k == "default_account") {
      RETURN_IF_ERROR(str(config.default_account));
    } else if (k == "api_rate_limits") {
      RETURN_IF_ERROR(str(config.api_rate_limits));
    } else if (k == "region") {
      RETURN_IF_ERROR(str(config.region));
    } else if (k == "accept_any_credentials") {
      if (!node.is_boolean()) return InvalidArgument(fmt::format("config file {}: '{}' must be true or false", path, k));
      config.accept_any_credentials = node.as_boolean()->get();
    } else {
      return InvalidArgument(fmt::format("config file {}: unknown key '{}'", path, k));
    }
  }
  return OkStatus();
}

StatusOr<std::pair<std::string, uint16_t>> SplitListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return InvalidArgument(fmt::format("--listen '{}' is not HOST:PORT", listen));
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto [p, ec] = std::from_chars(listen.data() + colon + 1, listen.data() + listen.size(), port);
  if (ec != std::errc() || p != listen.data() + listen.size() || port > 65535)
    return InvalidArgument(fmt::format("--listen '{}' has an invalid port", listen));
  return std::make_pair(host, static_cast<uint16_t>(port));
}

Status ValidateConfig(const ServerConfig& config) {
  RETURN_IF_ERROR(SplitListen(config.listen).status());
  if (config.api_rate_limits != "aws" && config.api_rate_limits != "off")
    return InvalidArgument(fmt::format("--api-rate-limits must be 'aws' or 'off', not '{}'", config.api_rate_limits));
  if (!IsAccountId(config.default_account))
    return InvalidArgument(fmt::format("--default-account '{}' is not a 12-digit account id", config.default_account));
  if (!IsRegionName(config.region)) return InvalidArgument(fmt::format("--region '{}' is not a region name", config.region));
  return OkStatus();
}

}  // namespace paddock::cli
