#include "edge/proxy/entry_point_flags.h"

#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace paddock::edge {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Go's strconv.ParseBool.
std::optional<bool> GoBool(std::string_view v) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"})
    if (v == t) return true;
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"})
    if (v == f) return false;
  return std::nullopt;
}

}  // namespace

Status ApplyEntryPointFlags(const std::vector<std::string>& args, std::vector<EntryPointOptions>& entry_points) {
  static constexpr std::string_view kPrefix = "--entrypoints.";
  std::vector<EntryPointOptions> out = entry_points;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() <= kPrefix.size() || Lower(arg.substr(0, kPrefix.size())) != kPrefix)
      return InvalidArgument(fmt::format("unknown argument '{}'", arg));
    std::string_view rest = std::string_view(arg).substr(kPrefix.size());
    std::optional<std::string_view> value;
    if (size_t eq = rest.find('='); eq != std::string_view::npos) {
      value = rest.substr(eq + 1);
      rest = rest.substr(0, eq);
    } else if (i + 1 < args.size() && GoBool(args[i + 1])) {
      value = args[++i];
    }
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0)
      return InvalidArgument(fmt::format("'{}' is not --entrypoints.<name>.<option>", arg));
    const std::string name = Lower(rest.substr(0, dot));
    const std::string option = Lower(rest.substr(dot + 1));
    EntryPointOptions* ep = nullptr;
    for (EntryPointOptions& e : out)
      if (Lower(e.name) == name) ep = &e;
    if (!ep)
      return InvalidArgument(
          fmt::format("'{}': entry point {} is not declared (--entrypoint {}=[HOST]:PORT)", arg, name, name));
    if (option != "http.sanitizepath")
      return InvalidArgument(fmt::format("'{}': the edge does not take entry point option {}", arg, option));
    std::optional<bool> on = value ? GoBool(*value) : std::optional<bool>(true);
    if (!on) return InvalidArgument(fmt::format("'{}': '{}' is not a bool", arg, *value));
    ep->sanitize_path = *on;
  }
  entry_points = std::move(out);
  return OkStatus();
}

}  // namespace paddock::edge
