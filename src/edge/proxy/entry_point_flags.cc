#include "edge/proxy/entry_point_flags.h"

#include <charconv>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "edge/dynamic.h"

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
  static constexpr std::string_view kRedirect = "http.redirections.entrypoint.";
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
    const bool is_bool = option == "http.sanitizepath" || option == std::string(kRedirect) + "permanent";
    if (!value && i + 1 < args.size() && (is_bool ? GoBool(args[i + 1]).has_value() : !args[i + 1].starts_with("--")))
      value = args[++i];
    std::optional<bool> on;
    if (is_bool) {
      on = value ? GoBool(*value) : std::optional<bool>(true);
      if (!on) return InvalidArgument(fmt::format("'{}': '{}' is not a bool", arg, *value));
    } else if (!value || value->empty()) {
      return InvalidArgument(fmt::format("'{}' needs a value", arg));
    }
    if (option == "http.sanitizepath") {
      ep->sanitize_path = *on;
      continue;
    }
    static constexpr std::string_view kResponding = "transport.respondingtimeouts.";
    if (option.starts_with(kResponding)) {
      const std::string field = option.substr(kResponding.size());
      std::optional<std::chrono::milliseconds>* slot = field == "readtimeout"    ? &ep->read_timeout
                                                       : field == "writetimeout" ? &ep->write_timeout
                                                       : field == "idletimeout"  ? &ep->idle_timeout
                                                                                 : nullptr;
      if (!slot) return InvalidArgument(fmt::format("'{}': the edge does not take entry point option {}", arg, option));
      auto d = ParseGoDuration(*value);
      if (!d.ok()) return InvalidArgument(fmt::format("'{}': {}", arg, d.status().message()));
      *slot = std::chrono::ceil<std::chrono::milliseconds>(*d);
      continue;
    }
    if (!option.starts_with(kRedirect))
      return InvalidArgument(fmt::format("'{}': the edge does not take entry point option {}", arg, option));
    EntryPointRedirect& r = ep->redirect ? *ep->redirect : ep->redirect.emplace();
    const std::string field = option.substr(kRedirect.size());
    if (field == "to") {
      r.to = std::string(*value);
    } else if (field == "scheme") {
      r.scheme = std::string(*value);
    } else if (field == "permanent") {
      r.permanent = *on;
    } else if (field == "priority") {
      int64_t p = 0;
      auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), p);
      if (ec != std::errc() || end != value->data() + value->size())
        return InvalidArgument(fmt::format("'{}': '{}' is not an integer", arg, *value));
      r.priority = p;
    } else {
      return InvalidArgument(fmt::format("'{}': the edge does not take entry point option {}", arg, option));
    }
  }
  for (const EntryPointOptions& ep : out)
    if (ep.redirect && ep.redirect->to.empty())
      return InvalidArgument(fmt::format("entry point {}: a redirection needs --entrypoints.{}.{}to", ep.name, ep.name,
                                         kRedirect));
  entry_points = std::move(out);
  return OkStatus();
}

}  // namespace paddock::edge
