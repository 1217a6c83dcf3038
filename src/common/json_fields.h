// common/json_fields: reading members of JSON that was validated elsewhere (a pinned task
// definition, a wire message checked by the API model) without ceremony. A missing member or one
// of another type reads as empty / nullopt: the reader only needs to be safe, not to diagnose.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "common/clock.h"

namespace paddock::json_fields {

inline std::string Str(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_string()) ? std::string(it->value().get_string()) : std::string();
}

// As Str, without the copy: a view into `o`, valid while `o` is unchanged.
inline std::string_view StrView(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// A string member, or nullopt (absent, or not a string).
inline std::optional<std::string> OptStr(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return std::nullopt;
  return std::string(it->value().get_string());
}

inline std::optional<int64_t> Int(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_number()) return std::nullopt;
  return it->value().to_number<int64_t>();
}

// A number of seconds since the epoch (AWS's JSON timestamps, fractions kept), or nullopt.
inline std::optional<TimePoint> EpochSeconds(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_number()) return std::nullopt;
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::duration<double>(it->value().to_number<double>())));
}

inline std::optional<bool> Bool(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_bool()) return std::nullopt;
  return it->value().get_bool();
}

// An array of strings; non-strings are skipped. `present` tells an absent member from [].
inline std::vector<std::string> Strings(const boost::json::object& o, std::string_view key, bool* present = nullptr) {
  std::vector<std::string> out;
  auto it = o.find(key);
  if (present) *present = it != o.end() && it->value().is_array();
  if (it == o.end() || !it->value().is_array()) return out;
  for (const auto& v : it->value().get_array())
    if (v.is_string()) out.emplace_back(v.get_string());
  return out;
}

// A nested object, or an empty one.
inline const boost::json::object& Obj(const boost::json::object& o, std::string_view key) {
  static const boost::json::object kEmpty;
  auto it = o.find(key);
  return (it != o.end() && it->value().is_object()) ? it->value().get_object() : kEmpty;
}

// A nested array or object, copied onto the default heap (so it outlives `o` even when `o` was
// parsed into a short-lived memory resource), or nullopt when absent or of another type.
inline std::optional<boost::json::array> OptArray(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_array()) return std::nullopt;
  return boost::json::array(it->value().get_array(), boost::json::storage_ptr());
}
inline std::optional<boost::json::object> OptObject(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_object()) return std::nullopt;
  return boost::json::object(it->value().get_object(), boost::json::storage_ptr());
}

// A nested array of objects (non-objects skipped), as pointers into `o`.
inline std::vector<const boost::json::object*> Objects(const boost::json::object& o, std::string_view key) {
  std::vector<const boost::json::object*> out;
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_array()) return out;
  for (const auto& v : it->value().get_array())
    if (v.is_object()) out.push_back(&v.get_object());
  return out;
}

}  // namespace paddock::json_fields
