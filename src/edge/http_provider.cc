#include "edge/http_provider.h"

#include <charconv>
#include <optional>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include "edge/dynamic.h"
#include "edge/file_provider.h"

namespace paddock::edge {
namespace json = boost::json;

StatusOr<HttpEndpoint> ParseHttpEndpoint(std::string_view url) {
  if (url.rfind("https://", 0) == 0)
    return InvalidArgument(fmt::format("endpoint '{}': https endpoints are not supported yet (use http://)", url));
  if (url.rfind("http://", 0) != 0) return InvalidArgument(fmt::format("endpoint '{}' must be http://HOST[:PORT][/PATH]", url));
  std::string_view rest = url.substr(7);
  size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  HttpEndpoint out;
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

HttpProvider::HttpProvider(HttpProviderOptions options) : options_(std::move(options)) {}
HttpProvider::~HttpProvider() { Stop(); }

StatusOr<json::object> HttpProvider::Current() const {
  std::lock_guard lock(mu_);
  if (!have_) return Unavailable(fmt::format("no configuration read yet: {}", last_error_));
  return current_;
}

Status HttpProvider::Start() {
  ASSIGN_OR_RETURN(endpoint_, ParseHttpEndpoint(options_.endpoint));
  if (options_.poll_interval.count() <= 0) return InvalidArgument("poll interval must be greater than 0");
  client_ = std::make_unique<http::Client>(endpoint_.host, endpoint_.port, options_.poll_timeout);
  client_->set_max_response_body(options_.max_body_bytes);
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
  if (!client_) {
    ASSIGN_OR_RETURN(endpoint_, ParseHttpEndpoint(options_.endpoint));
    client_ = std::make_unique<http::Client>(endpoint_.host, endpoint_.port, options_.poll_timeout);
    client_->set_max_response_body(options_.max_body_bytes);
  }
  // nullopt: the body is the last one's.
  StatusOr<std::optional<json::object>> next = [&]() -> StatusOr<std::optional<json::object>> {
    http::Request req;
    req.method = "GET";
    req.target = endpoint_.target;
    req.headers.push_back({"Accept", "application/json"});
    StatusOr<http::Response> resp = client_->Send(req);
    if (!resp.ok()) return Unavailable(fmt::format("cannot fetch configuration data: {}", resp.status().message()));
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
