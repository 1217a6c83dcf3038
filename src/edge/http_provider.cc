#include "edge/http_provider.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include "edge/dynamic.h"
#include "edge/file_provider.h"

namespace paddock::edge {
namespace json = boost::json;

StatusOr<HttpEndpoint> ParseHttpEndpoint(std::string_view url) {
  HttpEndpoint out;
  std::string_view rest;
  if (url.rfind("https://", 0) == 0) {
    out.tls = true;
    out.port = 443;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return InvalidArgument(fmt::format("endpoint '{}' must be http[s]://HOST[:PORT][/PATH]", url));
  }
  size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.target = std::string(rest.substr(slash));
    if (out.target.front() == '?') out.target = "/" + out.target;
  }
  if (authority.find('@') != std::string_view::npos)
    return InvalidArgument(fmt::format("endpoint '{}': user information is not supported", url));
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument(fmt::format("endpoint '{}': unclosed '['", url));
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument(fmt::format("endpoint '{}': bad host", url));
      port = after.substr(1);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return InvalidArgument(fmt::format("endpoint '{}' has no host", url));
  out.host = std::string(host);
  if (!port.empty()) {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p == 0 || p > 65535)
      return InvalidArgument(fmt::format("endpoint '{}': the port must be 1 to 65535", url));
    out.port = static_cast<uint16_t>(p);
  }
  return out;
}

uint64_t Fnv1Hash64(std::string_view data) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : data) {
    h *= 1099511628211ULL;
    h ^= c;
  }
  return h;
}

namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// RFC 9110's field-name (a token) and field-value (no control character but tab), as Go's client
// checks them before it sends.
Status CheckHeader(std::string_view name, std::string_view value) {
  if (name.empty()) return InvalidArgument("a header needs a name");
  for (char c : name)
    if (!IsTokenChar(c)) return InvalidArgument(fmt::format("header name '{}' is not an HTTP token", name));
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f)
      return InvalidArgument(fmt::format("the value of header '{}' holds a control character", name));
  }
  return OkStatus();
}

// A ClientTLS value: PEM text as it is, or the file it names read whole.
StatusOr<std::string> PemOrFile(std::string_view option, const std::string& value) {
  if (value.empty() || value.find("-----BEGIN") != std::string::npos) return value;
  std::ifstream in(value, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("{}: cannot read {}: {}", option, value, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidArgument(fmt::format("{}: cannot read {}", option, value));
  return text.str();
}

StatusOr<http::ClientTlsOptions> LoadClientTls(const HttpProviderTls& tls) {
  http::ClientTlsOptions out;
  ASSIGN_OR_RETURN(out.ca_pem, PemOrFile("tls.ca", tls.ca));
  ASSIGN_OR_RETURN(out.cert_pem, PemOrFile("tls.cert", tls.cert));
  ASSIGN_OR_RETURN(out.key_pem, PemOrFile("tls.key", tls.key));
  out.insecure_skip_verify = tls.insecure_skip_verify;
  return out;
}

}  // namespace

Status TakeHttpHeaderFlags(std::vector<std::string>& args, std::map<std::string, std::string>& headers) {
  static constexpr std::string_view kPrefix = "--providers.http.headers.";
  std::vector<std::string> rest;
  std::map<std::string, std::string> out = headers;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < kPrefix.size() || !http::EqualsIgnoreCase(std::string_view(arg).substr(0, kPrefix.size()), kPrefix)) {
      rest.push_back(arg);
      continue;
    }
    std::string_view name = std::string_view(arg).substr(kPrefix.size());
    std::optional<std::string_view> value;
    if (size_t eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
      value = args[++i];
    }
    if (name.empty()) return InvalidArgument(fmt::format("'{}' is not --providers.http.headers.<name>=<value>", arg));
    if (!value) return InvalidArgument(fmt::format("'{}' needs a value", arg));
    if (Status s = CheckHeader(name, *value); !s.ok())
      return InvalidArgument(fmt::format("'{}': {}", arg, s.message()));
    std::erase_if(out, [&](const auto& kv) { return http::EqualsIgnoreCase(kv.first, name); });
    out[std::string(name)] = std::string(*value);
  }
  args = std::move(rest);
  headers = std::move(out);
  return OkStatus();
}

HttpProvider::HttpProvider(HttpProviderOptions options) : options_(std::move(options)) {}
HttpProvider::~HttpProvider() { Stop(); }

StatusOr<json::object> HttpProvider::Current() const {
  std::lock_guard lock(mu_);
  if (!have_) return Unavailable(fmt::format("no configuration read yet: {}", last_error_));
  return current_;
}

Status HttpProvider::Prepare() {
  if (client_) return OkStatus();
  ASSIGN_OR_RETURN(endpoint_, ParseHttpEndpoint(options_.endpoint));
  if (options_.poll_interval.count() <= 0) return InvalidArgument("poll interval must be greater than 0");
  if (options_.poll_timeout.count() <= 0) return InvalidArgument("poll timeout must be greater than 0");
  for (const auto& [name, value] : options_.headers) RETURN_IF_ERROR(CheckHeader(name, value));
  std::unique_ptr<http::Client> client;
  if (options_.tls || endpoint_.tls) {
    http::ClientTlsOptions tls;  // none given: the system's CAs, verified
    if (options_.tls) {
      ASSIGN_OR_RETURN(tls, LoadClientTls(*options_.tls));
    }
    StatusOr<std::unique_ptr<http::Client>> secure =
        http::Client::Tls(endpoint_.host, endpoint_.port, options_.poll_timeout, tls);
    if (!secure.ok()) return Status(secure.status().code(), fmt::format("tls: {}", secure.status().message()));
    if (endpoint_.tls) client = std::move(*secure);
  }
  if (!client) client = std::make_unique<http::Client>(endpoint_.host, endpoint_.port, options_.poll_timeout);
  client->set_max_response_body(options_.max_body_bytes);
  client_ = std::move(client);
  return OkStatus();
}

Status HttpProvider::Start() {
  RETURN_IF_ERROR(Prepare());
  (void)Poll();
  thread_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void HttpProvider::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (client_) client_->Cancel();
  if (thread_.joinable()) thread_.join();
}

void HttpProvider::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (cv_.wait_for(lock, options_.poll_interval, [&] { return stop_; })) break;
    lock.unlock();
    (void)Poll();
    lock.lock();
  }
}

StatusOr<bool> HttpProvider::Poll() {
  RETURN_IF_ERROR(Prepare());
  // nullopt: the body is the last one's.
  StatusOr<std::optional<json::object>> next = [&]() -> StatusOr<std::optional<json::object>> {
    http::Request req;
    req.method = "GET";
    req.target = endpoint_.target;
    bool accept = false;
    for (const auto& [name, value] : options_.headers) {
      req.headers.push_back({name, value});
      accept = accept || http::EqualsIgnoreCase(name, "Accept");
    }
    if (!accept) req.headers.push_back({"Accept", "application/json"});
    StatusOr<http::Response> resp = client_->Send(req);
    if (!resp.ok()) {
      // Traefik's words for a body over maxResponseBodySize, then ours (which bound applied).
      if (resp.status().code() == StatusCode::kResourceExhausted)
        return Unavailable(fmt::format("cannot fetch configuration data: response body too large ({})",
                                       resp.status().message()));
      return Unavailable(fmt::format("cannot fetch configuration data: {}", resp.status().message()));
    }
    if (resp->status != 200)
      return Unavailable(fmt::format("cannot fetch configuration data: received non-ok response code: {}", resp->status));
    const uint64_t hash = Fnv1Hash64(resp->body);
    if (hashed_ && hash == last_hash_) return std::optional<json::object>();
    hashed_ = true;
    last_hash_ = hash;
    boost::system::error_code ec;
    json::value tree = json::parse(resp->body, ec);
    if (ec) {
      StatusOr<json::value> yaml = YamlToJson(resp->body);
      if (!yaml.ok())
        return InvalidArgument(fmt::format("cannot decode configuration data: {}", yaml.status().message()));
      tree = std::move(*yaml);
    }
    if (!tree.is_object()) return InvalidArgument("cannot decode configuration data: the body is not an object");
    StatusOr<json::object> checked = CheckDynamic(tree);
    if (!checked.ok())
      return InvalidArgument(fmt::format("cannot decode configuration data: {}", checked.status().message()));
    return std::optional<json::object>(std::move(*checked));
  }();
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    if (!next.ok()) {
      const std::string error(next.status().message());
      if (error != last_error_)
        fmt::print(stderr, "paddock: edge: http provider: {}: {} (keeping the last good configuration)\n",
                   options_.endpoint, error);
      last_error_ = error;
      return next.status();
    }
    last_error_.clear();
    if (!next->has_value()) return false;
    changed = !have_ || current_ != **next;
    current_ = std::move(**next);
    have_ = true;
  }
  if (changed && wake_) wake_();
  return true;
}

}  // namespace paddock::edge
