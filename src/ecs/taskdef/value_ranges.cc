#include "ecs/taskdef/value_ranges.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/json_fields.h"
#include "ecs/common/records.h"

namespace paddock::ecs::taskdef {
namespace json = boost::json;
using json_fields::Int;
using json_fields::Obj;
using json_fields::Objects;
using json_fields::Str;

namespace {

// `holder[key]`, when set, lies in [low, high] (`unit` ends the message: " seconds", "").
Status InRange(const json::object& holder, std::string_view key, std::string_view field, std::string_view container,
               int64_t low, int64_t high, std::string_view unit) {
  std::optional<int64_t> v = Int(holder, key);
  if (!v || (*v >= low && *v <= high)) return OkStatus();
  return InvalidContainerSetting(field, container,
                                 fmt::format("The value must be between {} and {}{}.", low, high, unit));
}

Status AtLeast(const json::object& holder, std::string_view key, std::string_view field, std::string_view container,
               int64_t low) {
  std::optional<int64_t> v = Int(holder, key);
  if (!v || *v >= low) return OkStatus();
  return InvalidContainerSetting(field, container, fmt::format("The value must be {} or greater.", low));
}

}  // namespace

Status InvalidContainerSetting(std::string_view field, std::string_view container, std::string_view rule) {
  return ClientError(fmt::format("Invalid '{}' setting for container '{}'. {}", field, container, rule));
}

Status CheckContainerRanges(const json::object& c, const RangeRules& rules) {
  const std::string name = Str(c, "name");
  const bool short_timings = rules.short_timings;

  if (const json::object& rp = Obj(c, "restartPolicy"); !rp.empty()) {
    RETURN_IF_ERROR(InRange(rp, "restartAttemptPeriod", "restartPolicy.restartAttemptPeriod", name,
                            short_timings ? 1 : 60, 1800, " seconds"));
    if (const json::value* codes = rp.if_contains("ignoredExitCodes");
        codes != nullptr && codes->is_array() && codes->get_array().size() > 50)
      return InvalidContainerSetting("restartPolicy.ignoredExitCodes", name,
                     fmt::format("At most 50 exit codes can be ignored; {} were given.", codes->get_array().size()));
  }

  if (const json::object& hc = Obj(c, "healthCheck"); !hc.empty()) {
    RETURN_IF_ERROR(InRange(hc, "interval", "healthCheck.interval", name, short_timings ? 1 : 5, 300, " seconds"));
    RETURN_IF_ERROR(InRange(hc, "timeout", "healthCheck.timeout", name, short_timings ? 1 : 2, 60, " seconds"));
    RETURN_IF_ERROR(InRange(hc, "retries", "healthCheck.retries", name, 1, 10, ""));
    RETURN_IF_ERROR(InRange(hc, "startPeriod", "healthCheck.startPeriod", name, 0, 300, " seconds"));
  }

  // ECS documents 2-120 for Fargate and no range for EC2 beyond a count of seconds.
  for (std::string_view key : {"startTimeout", "stopTimeout"}) {
    if (rules.fargate)
      RETURN_IF_ERROR(InRange(c, key, key, name, short_timings ? 0 : 2, 120, " seconds"));
    else
      RETURN_IF_ERROR(AtLeast(c, key, key, name, 0));
  }

  const json::object& lp = Obj(c, "linuxParameters");
  RETURN_IF_ERROR(InRange(lp, "swappiness", "linuxParameters.swappiness", name, 0, 100, ""));
  RETURN_IF_ERROR(AtLeast(lp, "maxSwap", "linuxParameters.maxSwap", name, 0));
  RETURN_IF_ERROR(AtLeast(lp, "sharedMemorySize", "linuxParameters.sharedMemorySize", name, 0));
  for (const json::object* t : Objects(lp, "tmpfs"))
    RETURN_IF_ERROR(AtLeast(*t, "size", "linuxParameters.tmpfs.size", name, 1));

  // Docker's rules for a ulimit: -1 is unlimited, and the soft limit is at most the hard one.
  for (const json::object* u : Objects(c, "ulimits")) {
    const std::string field = fmt::format("ulimits.{}", Str(*u, "name"));
    std::optional<int64_t> soft = Int(*u, "softLimit"), hard = Int(*u, "hardLimit");
    for (std::optional<int64_t> v : {soft, hard})
      if (v && *v < -1) return InvalidContainerSetting(field, name, "A limit must be -1 (unlimited) or 0 or greater.");
    auto unlimited = [](std::optional<int64_t> v) { return v && *v == -1; };
    if (soft && hard && !unlimited(hard) && (unlimited(soft) || *soft > *hard))
      return InvalidContainerSetting(field, name, "The soft limit must be less than or equal to the hard limit.");
  }
  return OkStatus();
}

Status CheckTaskRanges(const json::object& definition) {
  if (std::optional<int64_t> size = Int(Obj(definition, "ephemeralStorage"), "sizeInGiB");
      size && (*size < 21 || *size > 200))
    return ClientError(fmt::format(
        "Invalid 'ephemeralStorage.sizeInGiB' setting for task. The value must be between 21 and 200 GiB; {} was "
        "given.",
        *size));
  return OkStatus();
}

}  // namespace paddock::ecs::taskdef
