#include "ecs/execution/value_from.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace paddock::ecs::execution {
namespace {

namespace json = boost::json;

constexpr std::string_view kPrefix =
    "ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed: ";

// "arn:aws:<service>:<region>:<account>:<rest>" split into its fields; nullopt for anything else.
struct Arn {
  std::string_view service, region, account, rest;
};
std::optional<Arn> SplitArn(std::string_view s) {
  if (!s.starts_with("arn:aws:")) return std::nullopt;
  std::string_view fields[3];
  s.remove_prefix(8);
  for (std::string_view& f : fields) {
    const size_t colon = s.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    f = s.substr(0, colon);
    s.remove_prefix(colon + 1);
  }
  return Arn{fields[0], fields[1], fields[2], s};
}

// Go's strconv.FormatFloat(v, 'g', -1, 64), which fmt's %v uses for a float64: the shortest
// digits that round-trip, in %e form when the decimal exponent is below -4 or at least 6 (the
// precision Go decides by when it is the shortest), else in %f form.
std::string GoFloat(double v) {
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  char sci[64];
  auto [end, ec] = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
  if (ec != std::errc()) return "0";  // not reached: 64 bytes hold any double
  const std::string_view text(sci, static_cast<size_t>(end - sci));
  const int exponent = std::atoi(std::string(text.substr(text.find('e') + 1)).c_str());
  // C++'s shortest scientific form is Go's %e one: "1e+06", "1.5e-05", at least two exponent digits.
  if (exponent < -4 || exponent >= 6) return std::string(text);
  char fixed[64];
  auto [fend, fec] = std::to_chars(fixed, fixed + sizeof fixed, v, std::chars_format::fixed);
  if (fec != std::errc()) return std::string(text);
  return std::string(fixed, static_cast<size_t>(fend - fixed));
}

std::string ServiceError(std::string_view code, std::string_view message, std::string_view request_id) {
  return fmt::format("{}: {} status code: 400, request id: {}", code, message, request_id);
}

// A Secrets Manager failure as the SDK prints it; ResourceNotFoundException (no request id) is
// quoted without the SDK's status line in every record of it.
std::string SecretsError(std::string_view code, std::string_view message, std::string_view request_id) {
  return request_id.empty() ? fmt::format("{}: {}", code, message) : ServiceError(code, message, request_id);
}

}  // namespace

StatusOr<SecretRef> ParseValueFrom(std::string_view value_from, const Scope& task) {
  SecretRef ref;
  ref.scope = task;
  std::optional<Arn> arn = SplitArn(value_from);
  if (arn && arn->service == "secretsmanager" && arn->rest.starts_with("secret:")) {
    ref.source = Source::kSecretsManager;
    ref.scope = Scope{AccountId(std::string(arn->account)), Region(std::string(arn->region))};
    // secret:<id>[:json-key[:version-stage[:version-id]]]; a secret's name holds no ':'.
    std::string_view rest = arn->rest.substr(7);
    std::vector<std::string_view> parts;
    for (size_t colon; (colon = rest.find(':')) != std::string_view::npos;) {
      parts.push_back(rest.substr(0, colon));
      rest.remove_prefix(colon + 1);
    }
    parts.push_back(rest);
    if (parts.size() > 4 || parts[0].empty())
      return InvalidArgument(fmt::format(
          "The secret ARN '{}' is not valid: after 'secret:' come the secret's name and at most "
          "':json-key:version-stage:version-id'.",
          value_from));
    const size_t head = value_from.size() - arn->rest.size();  // "arn:aws:secretsmanager:<region>:<account>:"
    ref.secret_id = std::string(value_from.substr(0, head + 7 + parts[0].size()));
    if (parts.size() > 1) ref.json_key = std::string(parts[1]);
    if (parts.size() > 2) ref.version_stage = std::string(parts[2]);
    if (parts.size() > 3) ref.version_id = std::string(parts[3]);
    return ref;
  }
  ref.source = Source::kSsmParameter;
  if (arn && arn->service == "ssm" && arn->rest.starts_with("parameter/")) {
    ref.scope = Scope{AccountId(std::string(arn->account)), Region(std::string(arn->region))};
    std::string_view name = arn->rest.substr(10);
    ref.name = name.find('/') != std::string_view::npos ? "/" + std::string(name) : std::string(name);
    return ref;
  }
  ref.name = std::string(value_from);
  return ref;
}

SecretRef ParseCredentialsParameter(std::string_view credentials_parameter, const Scope& task) {
  SecretRef ref;
  ref.source = Source::kSecretsManager;
  ref.scope = task;
  ref.secret_id = std::string(credentials_parameter);
  if (std::optional<Arn> arn = SplitArn(credentials_parameter); arn && arn->service == "secretsmanager")
    ref.scope = Scope{AccountId(std::string(arn->account)), Region(std::string(arn->region))};
  return ref;
}

StatusOr<RegistryCredentials> ParseRegistryCredentials(std::string_view secret_string) {
  if (secret_string.empty()) return InvalidArgument("asm fetching authorization data: empty secrets value");
  boost::system::error_code ec;
  const json::value doc = json::parse(secret_string, ec);
  const auto invalid = [] {
    return InvalidArgument("asm fetching authorization data: unable to unmarshal secret value, invalid schema");
  };
  // encoding/json: null leaves the fields empty; anything but an object (or a field of another
  // type than string or null) is an error.
  if (ec || !(doc.is_object() || doc.is_null())) return invalid();
  RegistryCredentials out;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.get_object()) {
      std::string lower(key);
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string* field = lower == "username" ? &out.username : lower == "password" ? &out.password : nullptr;
      if (field == nullptr) continue;
      if (!value.is_string() && !value.is_null()) return invalid();
      *field = value.is_string() ? std::string(value.get_string()) : std::string();
    }
  }
  if (out.username.empty()) return InvalidArgument("asm fetching username: AuthorizationData is malformed, empty field");
  if (out.password.empty()) return InvalidArgument("asm fetching password: AuthorizationData is malformed, empty field");
  return out;
}

std::string GoValueText(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return std::string(v.get_string());
    case json::kind::null:
      return "<nil>";
    case json::kind::bool_:
      return v.get_bool() ? "true" : "false";
    case json::kind::int64:
      return GoFloat(static_cast<double>(v.get_int64()));
    case json::kind::uint64:
      return GoFloat(static_cast<double>(v.get_uint64()));
    case json::kind::double_:
      return GoFloat(v.get_double());
    case json::kind::array: {
      std::string out = "[";
      for (const json::value& e : v.get_array()) {
        if (out.size() > 1) out += ' ';
        out += GoValueText(e);
      }
      return out + "]";
    }
    case json::kind::object: {
      // Go prints a map's entries sorted by key (fmt, since Go 1.12).
      std::vector<std::pair<std::string_view, const json::value*>> entries;
      for (const auto& [k, e] : v.get_object()) entries.emplace_back(k, &e);
      std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string out = "map[";
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += ' ';
        out += fmt::format("{}:{}", entries[i].first, GoValueText(*entries[i].second));
      }
      return out + "]";
    }
  }
  return "";
}

std::string SsmParametersMissing(const std::vector<std::string>& names) {
  return fmt::format("{}unable to retrieve secrets from ssm: service call has been retried 1 time(s): invalid ssm "
                     "parameters: {}",
                     kPrefix, fmt::join(names, ","));
}

std::string SsmDenied(std::string_view denial_message, std::string_view request_id) {
  return fmt::format("{}unable to retrieve secrets from ssm: service call has been retried 1 time(s): {}", kPrefix,
                     ServiceError("AccessDeniedException", denial_message, request_id));
}

std::string SecretNotFound(std::string_view secret_id) {
  return SecretReadFailed(secret_id, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.",
                          "");
}

std::string SecretDenied(std::string_view secret_id, std::string_view denial_message, std::string_view request_id) {
  return SecretReadFailed(secret_id, "AccessDeniedException", denial_message, request_id);
}

std::string SecretJsonKeyMissing(std::string_view json_key) {
  return fmt::format("{}unable to retrieve secret from asm: service call has been retried 1 time(s): retrieved secret "
                     "from Secrets Manager did not contain json key {}",
                     kPrefix, json_key);
}

std::string SecretReadFailed(std::string_view secret_id, std::string_view code, std::string_view message,
                             std::string_view request_id) {
  return fmt::format("{}unable to retrieve secret from asm: service call has been retried 1 time(s): failed to fetch "
                     "secret {} from secrets manager: {}",
                     kPrefix, secret_id, SecretsError(code, message, request_id));
}

std::string RegistryAuthFailed(std::string_view why) {
  return fmt::format("{}unable to get registry auth from asm: service call has been retried 1 time(s): {}", kPrefix,
                     why);
}

std::string RegistryAuthReadFailed(std::string_view secret_id, std::string_view code, std::string_view message,
                                   std::string_view request_id) {
  return RegistryAuthFailed(fmt::format("asm fetching secret from the service for {}: {}", secret_id,
                                        SecretsError(code, message, request_id)));
}

}  // namespace paddock::ecs::execution
