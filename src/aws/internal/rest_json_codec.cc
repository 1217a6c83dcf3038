#include "aws/internal/rest_json_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include <boost/json.hpp>

#include "common/encoding.h"

namespace paddock::aws::internal {
namespace json = boost::json;

namespace {

// Request bodies nest far less than this (as the JSON protocols' front bound).
constexpr std::size_t kMaxJsonDepth = 64;

Status Serialization(std::string message) { return InvalidArgument(std::move(message), Error::kSerialization); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 percent-decoding; '+' stays '+' (SDKs send a space as %20). False when malformed or
// not UTF-8.
bool PercentDecode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;  // "%" needs two hex digits
    int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return IsValidUtf8(out);
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

// The path's segments, without the leading '/' and a trailing empty one ("/a/b/" -> a, b).
std::vector<std::string_view> PathSegments(std::string_view path) {
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return {};
  std::vector<std::string_view> segs = Split(path, '/');
  if (segs.size() > 1 && segs.back().empty()) segs.pop_back();
  return segs;
}

// Decoded query parameters in arrival order; malformed pairs are skipped.
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  if (query.empty()) return out;
  for (std::string_view pair : Split(query, '&')) {
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key, value;
    if (!PercentDecode(pair.substr(0, eq), key)) continue;
    if (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), value)) continue;
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Epoch seconds from the forms restJson1 sends outside the body: ISO 8601 (labels and query
// strings: "2026-12-01T10:00:00Z", optionally with fractional seconds), an HTTP date (headers:
// "Tue, 01 Dec 2026 10:00:00 GMT"), or epoch seconds.
std::optional<double> ParseTimestamp(std::string_view text) {
  double seconds = 0;
  if (auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
      ec == std::errc() && p == text.data() + text.size())
    return std::isfinite(seconds) ? std::optional<double>(seconds) : std::nullopt;
  std::string s(text);
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  double fraction = 0;
  if (rest != nullptr) {
    if (*rest == '.') {
      char* end = nullptr;
      fraction = std::strtod(rest, &end);
      rest = end;
    }
    if (std::string_view(rest) != "Z") return std::nullopt;
  } else {
    tm = {};
    rest = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (rest == nullptr || *rest != '\0') return std::nullopt;
  }
  return static_cast<double>(timegm(&tm)) + fraction;
}

// `text` as a JSON value of `kind`; nullopt when it does not parse as one.
std::optional<json::value> Scalar(HttpBinding::Kind kind, std::string_view text) {
  switch (kind) {
    case HttpBinding::Kind::kInteger: {
      int64_t n = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
      return json::value(n);
    }
    case HttpBinding::Kind::kBoolean:
      if (text == "true") return json::value(true);
      if (text == "false") return json::value(false);
      return std::nullopt;
    case HttpBinding::Kind::kDouble: {
      double d = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      // NaN and the infinities have no JSON form to hand the owner: they do not decode.
      if (ec != std::errc() || p != text.data() + text.size() || text.empty() || !std::isfinite(d))
        return std::nullopt;
      return json::value(d);
    }
    case HttpBinding::Kind::kTimestamp: {
      std::optional<double> t = ParseTimestamp(text);
      if (!t) return std::nullopt;
      return json::value(*t);
    }
    default:
      return json::value(json::string(text));
  }
}

Status BadText(std::string_view member, std::string_view where, std::string_view text) {
  return Serialization(
      fmt::format("The {} value '{}' of '{}' is not of the member's type.", where, text.substr(0, 128), member));
}

StatusOr<json::value> Converted(const HttpBinding::Member& m, std::string_view where, std::string_view text) {
  std::optional<json::value> v = Scalar(m.kind, text);
  if (!v) return BadText(m.name, where, text);
  return std::move(*v);
}

StatusOr<json::value> ParseBody(std::string_view body) {
  if (!IsValidUtf8(body)) return Serialization("The request body is not valid UTF-8.");
  json::parse_options opts;
  opts.max_depth = kMaxJsonDepth;
  boost::system::error_code ec;
  json::value v = json::parse(json::string_view(body.data(), body.size()), ec, {}, opts);
  if (ec == json::error::too_deep)
    return Serialization(fmt::format("The request body nests deeper than {} levels.", kMaxJsonDepth));
  if (ec) return Serialization(fmt::format("The request body is not valid JSON: {}.", ec.message()));
  return v;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && http::EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

}  // namespace

RestJsonRoutes::RestJsonRoutes(const ServiceModel& model) {
  for (HttpBinding& b : model.HttpBindings()) {
    Template& t = templates_.emplace_back();
    std::string_view uri = b.request_uri;
    size_t q = uri.find('?');
    if (q != std::string_view::npos) {
      for (std::string_view pair : Split(uri.substr(q + 1), '&')) {
        if (pair.empty()) continue;
        size_t eq = pair.find('=');
        t.query.emplace_back(std::string(pair.substr(0, eq)),
                             eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1)));
      }
      uri = uri.substr(0, q);
    }
    for (std::string_view seg : PathSegments(uri)) {
      if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
        std::string_view name = seg.substr(1, seg.size() - 2);
        const bool greedy = !name.empty() && name.back() == '+';
        if (greedy) name.remove_suffix(1);
        t.segments.push_back({greedy ? Segment::Kind::kGreedy : Segment::Kind::kLabel, std::string(name)});
        t.greedy = t.greedy || greedy;
      } else {
        t.segments.push_back({Segment::Kind::kLiteral, std::string(seg)});
        ++t.literals;
      }
    }
    t.binding = std::move(b);
  }
}

StatusOr<RestJsonRoute> RestJsonRoutes::Route(std::string_view method, std::string_view path,
                                              std::string_view query) const {
  const std::vector<std::string_view> segs = PathSegments(path);
  std::vector<std::pair<std::string, std::string>> params;
  bool params_parsed = false;
  const Template* best = nullptr;
  Labels best_labels;
  std::string decoded;
  for (const Template& t : templates_) {
    if (t.binding.method != method) continue;
    Labels labels;
    size_t i = 0;
    bool ok = true;
    for (size_t s = 0; s < t.segments.size() && ok; ++s) {
      const Segment& seg = t.segments[s];
      if (seg.kind == Segment::Kind::kGreedy) {
        // The rest of the path, but the literal segments that follow the greedy label.
        const size_t after = t.segments.size() - s - 1;
        if (segs.size() < i + 1 + after) {
          ok = false;
          break;
        }
        const size_t end = segs.size() - after;
        std::string joined;
        for (size_t k = i; k < end; ++k) {
          if (!PercentDecode(segs[k], decoded)) ok = false;
          if (k > i) joined += '/';
          joined += decoded;
        }
        if (joined.empty()) ok = false;
        labels.emplace_back(seg.text, std::move(joined));
        i = end;
        continue;
      }
      if (i >= segs.size() || !PercentDecode(segs[i], decoded)) {
        ok = false;
        break;
      }
      if (seg.kind == Segment::Kind::kLiteral) {
        ok = decoded == seg.text;
      } else {
        ok = !decoded.empty();
        labels.emplace_back(seg.text, decoded);
      }
      ++i;
    }
    if (!ok || i != segs.size()) continue;
    if (!t.query.empty()) {
      if (!params_parsed) {
        params = ParseQuery(query);
        params_parsed = true;
      }
      const bool present = std::all_of(t.query.begin(), t.query.end(), [&](const auto& want) {
        return std::any_of(params.begin(), params.end(), [&](const auto& p) {
          return p.first == want.first && (want.second.empty() || p.second == want.second);
        });
      });
      if (!present) continue;
    }
    const bool tie = best != nullptr && t.literals == best->literals;
    const bool better = best == nullptr || t.literals > best->literals || (tie && best->greedy && !t.greedy) ||
                        (tie && t.greedy == best->greedy && t.query.size() > best->query.size());
    if (better) {
      best = &t;
      best_labels = std::move(labels);
    }
  }
  if (best == nullptr) {
    return InvalidArgument(fmt::format("No operation matches {} {}.", method.substr(0, 16), path.substr(0, 256)),
                           Error::kUnknownOperation);
  }
  return RestJsonRoute{&best->binding, std::move(best_labels)};
}

StatusOr<json::value> DecodeRestJsonInput(const HttpBinding& binding, const Labels& labels, const http::Request& req) {
  using Location = HttpBinding::Location;
  using Kind = HttpBinding::Kind;
  json::object input;

  // The body first: bound members below replace whatever it says about them.
  const bool empty_body = req.body.find_first_not_of(" \t\r\n") == std::string::npos;
  if (!binding.payload.empty()) {
    auto m = std::find_if(binding.members.begin(), binding.members.end(),
                          [&](const HttpBinding::Member& x) { return x.name == binding.payload; });
    if (m != binding.members.end() && !empty_body) {
      if (m->kind == Kind::kStructure || m->kind == Kind::kOther) {
        ASSIGN_OR_RETURN(json::value v, ParseBody(req.body));
        input[m->name] = std::move(v);
      } else {
        if (!IsValidUtf8(req.body)) return Serialization("The request body is not valid UTF-8.");
        input[m->name] = json::string(req.body);
      }
    }
  } else if (!empty_body) {
    ASSIGN_OR_RETURN(json::value v, ParseBody(req.body));
    if (!v.is_object()) return Serialization("The request body must be a JSON object.");
    input = std::move(v.get_object());
    for (const HttpBinding::Member& m : binding.members)
      if (m.location != Location::kBody) input.erase(m.name);
  }

  std::vector<std::pair<std::string, std::string>> params;
  bool params_parsed = false;
  auto query_params = [&]() -> const std::vector<std::pair<std::string, std::string>>& {
    if (!params_parsed) {
      params = ParseQuery(req.Query());
      params_parsed = true;
    }
    return params;
  };
  // Names the members bind by name, so that an unnamed query map takes only the others.
  std::vector<std::string_view> bound_query_keys;
  for (const HttpBinding::Member& m : binding.members)
    if (m.location == Location::kQueryString && !m.location_name.empty()) bound_query_keys.push_back(m.location_name);

  for (const HttpBinding::Member& m : binding.members) {
    switch (m.location) {
      case Location::kBody:
        break;
      case Location::kUri: {
        for (const auto& [name, value] : labels) {
          if (name != m.location_name) continue;
          ASSIGN_OR_RETURN(input[m.name], Converted(m, "path label", value));
        }
        break;
      }
      case Location::kQueryString: {
        if (m.kind == Kind::kMap) {
          json::object map;
          for (const auto& [key, value] : query_params()) {
            if (std::find(bound_query_keys.begin(), bound_query_keys.end(), key) != bound_query_keys.end()) continue;
            if (m.element == Kind::kList) {
              json::value& list = map[key];
              if (!list.is_array()) list = json::array();
              list.get_array().emplace_back(json::string(value));
            } else if (!map.contains(key)) {
              map[key] = json::string(value);
            }
          }
          if (!map.empty()) input[m.name] = std::move(map);
          break;
        }
        json::array list;
        for (const auto& [key, value] : query_params()) {
          if (key != m.location_name) continue;
          HttpBinding::Member element = m;
          if (m.kind == Kind::kList) element.kind = m.element;
          ASSIGN_OR_RETURN(json::value v, Converted(element, "query parameter", value));
          list.push_back(std::move(v));
          if (m.kind != Kind::kList) break;  // a scalar takes the first
        }
        if (list.empty()) break;
        if (m.kind == Kind::kList) {
          input[m.name] = std::move(list);
        } else {
          input[m.name] = std::move(list[0]);
        }
        break;
      }
      case Location::kHeader: {
        if (!req.HasHeader(m.location_name)) break;
        std::string_view text = Trim(req.GetHeader(m.location_name));
        if (m.kind == Kind::kList) {
          json::array list;
          HttpBinding::Member element = m;
          element.kind = m.element;
          for (std::string_view item : Split(text, ',')) {
            ASSIGN_OR_RETURN(json::value v, Converted(element, "header", Trim(item)));
            list.push_back(std::move(v));
          }
          input[m.name] = std::move(list);
        } else {
          ASSIGN_OR_RETURN(input[m.name], Converted(m, "header", text));
        }
        break;
      }
      case Location::kHeaders: {
        json::object map;
        for (const http::Header& h : req.headers) {
          if (!StartsWithIgnoreCase(h.name, m.location_name) || h.name.size() == m.location_name.size()) continue;
          map[h.name.substr(m.location_name.size())] = json::string(Trim(h.value));
        }
        if (!map.empty()) input[m.name] = std::move(map);
        break;
      }
    }
  }
  return json::value(std::move(input));
}

http::Response RestJsonResponse(int status, std::string body, std::string_view request_id) {
  http::Response resp;
  resp.status = status;
  resp.headers.reserve(3);
  resp.headers.push_back({"x-amzn-RequestId", std::string(request_id)});
  resp.headers.push_back({"Content-Type", "application/json"});
  if (body.empty() && status != 204) body = "{}";
  resp.body = std::move(body);
  return resp;
}

http::Response RestJsonErrorResponse(const Status& status, const AwsError& error, std::string_view message_member,
                                     std::string_view request_id) {
  std::string message = status.message();
  if (!IsValidUtf8(message)) {
    // Messages may quote request bytes; keep the body valid JSON.
    for (char& c : message)
      if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  }
  json::object body;
  body[message_member] = message;
  http::Response resp = RestJsonResponse(error.http_status, json::serialize(body), request_id);
  resp.headers.push_back({"x-amzn-ErrorType", error.type});
  return resp;
}

}  // namespace paddock::aws::internal
