#include "cli/deploy_command.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <boost/json.hpp>

#include "aws/json_client.h"
#include "cli/call_log.h"
#include "cli/credentials.h"
#include "common/clock.h"
#include "common/encoding.h"
#include "common/private_files.h"
#include "deploy/api.h"
#include "deploy/controller.h"
#include "deploy/identity.h"
#include "deploy/verify.h"
#include "http/client.h"
#include "http/server.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::cli {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

int Fail(std::string_view what, const Status& s) {
  fmt::print(stderr, "paddock: {}: {}\n", what, TerminalSafe(s.message()));
  return 1;
}

// "30s", "5m", "2h", "7d" or a number of seconds.
StatusOr<std::chrono::seconds> ParseDuration(std::string_view flag, std::string_view s) {
  if (s.empty()) return InvalidArgument(fmt::format("{} is empty", flag));
  int64_t unit = 1;
  std::string_view n = s;
  switch (s.back()) {
    case 's': unit = 1; n.remove_suffix(1); break;
    case 'm': unit = 60; n.remove_suffix(1); break;
    case 'h': unit = 3600; n.remove_suffix(1); break;
    case 'd': unit = 86400; n.remove_suffix(1); break;
    default: break;
  }
  int64_t v = 0;
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string_view::npos) {
    return InvalidArgument(fmt::format("{} '{}' is not a duration (such as 30s, 5m, 2h, 7d)", flag, s));
  }
  v = std::stoll(std::string(n));
  return std::chrono::seconds(v * unit);
}

// "HOST:PORT" or "http://HOST:PORT"; port 0 only with `any_port` (a listen address).
StatusOr<std::pair<std::string, uint16_t>> HostPort(std::string_view flag, std::string_view s, bool any_port = false) {
  if (s.starts_with("https://")) {
    return InvalidArgument(fmt::format("{} '{}': https endpoints are not supported yet (plain http only)", flag, s));
  }
  if (s.starts_with("http://")) s.remove_prefix(7);
  while (s.ends_with('/')) s.remove_suffix(1);
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return InvalidArgument(fmt::format("{} '{}' must be HOST:PORT", flag, s));
  const std::string digits(s.substr(colon + 1));
  int port = std::atoi(digits.c_str());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || port > 65535 ||
      (port == 0 && !any_port)) {
    return InvalidArgument(fmt::format("{} '{}' has no valid port", flag, s));
  }
  return std::pair<std::string, uint16_t>(std::string(s.substr(0, colon)), static_cast<uint16_t>(port));
}

std::string ConfigPath() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return fmt::format("{}/paddock/deploy.json", x);
  const char* home = std::getenv("HOME");
  return fmt::format("{}/.config/paddock/deploy.json", home ? home : "/root");
}

Status Publish(const std::string& url, const std::string& token) {
  const std::string path = ConfigPath();
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return Unavailable(fmt::format("cannot create {}: {}", fs::path(path).parent_path().string(), ec.message()));
  const std::string tmp = path + ".tmp";
  // Made 0600 from the start: the token is never readable by others, not even for a moment.
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  const std::string text = json::serialize(json::object{{"url", url}, {"token", token}}) + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) return Unavailable(fmt::format("cannot write {}", tmp));
  fs::rename(tmp, path, ec);
  if (ec) return Unavailable(fmt::format("cannot write {}: {}", path, ec.message()));
  return OkStatus();
}

// ---- The controller, wherever it runs -----------------------------------------------------------

// Whether `holder` ("<life><pid>:<random>") is a controller of this host and state directory whose
// process no longer runs. Replicas sharing a state directory share the host and its pid namespace,
// so a pid that signal 0 cannot find (ESRCH) holds nothing; a reused pid only makes us wait.
bool HolderDied(std::string_view life, std::string_view holder) {
  if (!holder.starts_with(life)) return false;
  std::string_view rest = holder.substr(life.size());
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  if (ec != std::errc() || end == rest.data() || pid <= 0 || end == rest.data() + rest.size() || *end != ':') return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

struct ControllerConfig {
  std::string state_dir;
  deploy::HttpAwsOptions aws;
  std::optional<std::pair<std::string, uint16_t>> edge_api;
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;
  deploy::ControllerOptions options;
  // The process holds the state directory's lock (`paddock up`): its restart takes its earlier
  // life's lease at once instead of waiting it out.
  bool locked = false;
  std::string call_log;  // a file to append a line per AWS call to (cli/call_log.h); "": none
  // D8, with settings.identity_agent_image: the issuer URL ("": the API's own URL once it listens).
  // Its signing key is <state_dir>/identity.key.
  std::string identity_issuer;
};

class Running {
 public:
  static StatusOr<std::unique_ptr<Running>> Start(ControllerConfig config) {
    auto r = std::unique_ptr<Running>(new Running());
    RETURN_IF_ERROR(MakePrivateDir(config.state_dir));
    ASSIGN_OR_RETURN(r->store_, store::SqliteStore::Open({.path = config.state_dir + "/controller.db",
                                                          .schemas = {deploy::kSchema}}));
    r->deployments_ = std::make_unique<deploy::Deployments>(*r->store_, r->clock_);
    r->aws_ = std::make_unique<deploy::HttpAws>(config.aws);
    if (!config.call_log.empty()) {
      ASSIGN_OR_RETURN(CallObserver log, OpenCallLog(config.call_log));
      r->aws_->set_observer(std::move(log));
    }
    if (config.edge_api) r->edge_ = std::make_unique<deploy::HttpEdgeView>(config.edge_api->first, config.edge_api->second);
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    const std::string life = fmt::format("{}:{:016x}:", host, Fnv1a64(config.state_dir));
    config.options.holder = fmt::format("{}{}:{}", life, getpid(), RandomString(6, "abcdefghijklmnopqrstuvwxyz0123456789"));
    if (config.locked) {
      config.options.successor_of = life;
    } else {
      // Replicas may share this store (one host, one state directory): a holder of this host and
      // directory whose pid no longer runs was killed, and its lease is taken at once.
      config.options.holder_gone = [life](std::string_view holder) { return HolderDied(life, holder); };
    }
    r->controller_ = std::make_unique<deploy::Controller>(*r->store_, *r->deployments_, *r->aws_, r->edge_.get(),
                                                          r->clock_, config.options, r->aws_.get());
    // The token lives in the state directory, so a restart keeps the CLI's config valid.
    const std::string token_path = config.state_dir + "/controller.token";
    std::ifstream in(token_path);
    std::getline(in, r->token_);
    if (r->token_.size() < 32) {
      r->token_ = HexEncode(RandomBytes(24));
      ::unlink(token_path.c_str());
      int fd = ::open(token_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) return Unavailable(fmt::format("cannot create {}: {}", token_path, std::strerror(errno)));
      const std::string text = r->token_ + "\n";
      const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!written) return Unavailable(fmt::format("cannot write {}", token_path));
    }
    if (!config.options.settings.identity_agent_image.empty()) {
      ASSIGN_OR_RETURN(r->issuer_,
                       deploy::Issuer::Load(config.state_dir + "/identity.key", config.identity_issuer,
                                            std::chrono::seconds(config.options.settings.identity_token_ttl_seconds)));
    }
    r->api_ = std::make_unique<deploy::Api>(*r->deployments_, config.options.settings, r->token_,
                                            [c = r->controller_.get()] { c->Nudge(); },
                                            deploy::ApiBackends{.aws = r->aws_.get(), .query = r->aws_.get(),
                                                                  .edge = r->edge_.get(),
                                                                  .verify = {.create_cluster = config.options.create_cluster,
                                                                             .create_task_roles = config.options.create_task_roles},
                                                                  .issuer = r->issuer_.get()});
    http::ServerOptions so;
    so.host = config.listen_host;
    so.port = config.listen_port;
    // Each log follow holds a worker for as long as it streams: room for ApiBackends::max_follows
    // of them and the other endpoints besides.
    so.worker_threads = 16;
    r->server_ = std::make_unique<http::Server>(
        so, [a = r->api_.get()](const http::Request& req) { return a->Handle(req); });
    ASSIGN_OR_RETURN(uint16_t port, r->server_->Start());
    std::string host_text = config.listen_host == "0.0.0.0" ? "127.0.0.1" : config.listen_host;
    r->url_ = fmt::format("http://{}:{}", host_text, port);
    if (r->issuer_ && config.identity_issuer.empty()) r->issuer_->SetUrl(r->url_);
    r->loop_ = std::jthread([c = r->controller_.get()](std::stop_token st) { c->Run(st); });
    return r;
  }

  ~Running() {
    if (loop_.joinable()) {
      loop_.request_stop();
      loop_.join();
    }
    if (controller_) controller_->Release();
    if (server_) server_->Stop();
    if (store_) store_->Close();
  }

  const std::string& url() const { return url_; }
  const std::string& token() const { return token_; }
  deploy::Api& api() { return *api_; }

 private:
  Running() = default;
  SystemClock clock_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<deploy::Deployments> deployments_;
  std::unique_ptr<deploy::HttpAws> aws_;
  std::unique_ptr<deploy::HttpEdgeView> edge_;
  std::unique_ptr<deploy::Controller> controller_;
  std::unique_ptr<deploy::Issuer> issuer_;
  std::unique_ptr<deploy::Api> api_;
  std::unique_ptr<http::Server> server_;
  std::string url_;
  std::string token_;
  std::jthread loop_;
};

// ---- The client side ----------------------------------------------------------------------------

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string token;
};

StatusOr<Endpoint> FindController() {
  std::string url, token;
  if (const char* u = std::getenv("PADDOCK_DEPLOY_URL"); u && *u) url = u;
  if (const char* t = std::getenv("PADDOCK_DEPLOY_TOKEN"); t && *t) token = t;
  if (url.empty() || token.empty()) {
    std::ifstream in(ConfigPath());
    if (!in) {
      return FailedPrecondition(fmt::format("no deploy controller is known: start one with `paddock up` (it writes {}) "
                                            "or set PADDOCK_DEPLOY_URL and PADDOCK_DEPLOY_TOKEN",
                                            ConfigPath()));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    json::value v = json::parse(ss.str(), ec);
    if (ec || !v.is_object()) return DataLoss(fmt::format("{} is not JSON", ConfigPath()));
    if (url.empty() && v.as_object().contains("url") && v.at("url").is_string()) url = v.at("url").as_string();
    if (token.empty() && v.as_object().contains("token") && v.at("token").is_string()) token = v.at("token").as_string();
  }
  ASSIGN_OR_RETURN(auto hp, HostPort("deploy controller url", url));
  return Endpoint{hp.first, hp.second, token};
}

class ApiClient {
 public:
  explicit ApiClient(Endpoint e) : e_(std::move(e)), http_(e_.host, e_.port, std::chrono::seconds(30)) {}
  // The answer's JSON, or its {"error"} as a Status.
  StatusOr<json::value> Call(std::string method, std::string target, const json::object* body = nullptr) {
    http::Request req;
    req.method = std::move(method);
    req.target = std::move(target);
    req.headers = {{"Authorization", "Bearer " + e_.token}, {"Content-Type", "application/json"}};
    if (body) req.body = json::serialize(*body);
    ASSIGN_OR_RETURN(http::Response resp, http_.Send(req));
    boost::system::error_code ec;
    json::value v = json::parse(resp.body, ec);
    if (ec) return DataLoss(fmt::format("the controller answered {} with a body that is not JSON", resp.status));
    if (resp.status >= 300) {
      std::string message = v.is_object() && v.as_object().contains("error") && v.at("error").is_string()
                                ? std::string(v.at("error").as_string())
                                : resp.body;
      return Status(resp.status == 404 ? StatusCode::kNotFound : StatusCode::kInvalidArgument, message);
    }
    return v;
  }

  // GET `target`, whose answer is newline-delimited JSON streamed for as long as it lasts: each
  // non-empty line parsed and handed to `on_line` (false stops). OK when the controller ended it.
  Status Stream(std::string target, const std::function<bool(const json::value&)>& on_line) {
    http::Request req;
    req.method = "GET";
    req.target = std::move(target);
    req.headers = {{"Authorization", "Bearer " + e_.token}};
    std::string pending;
    Status bad;
    StatusOr<http::Response> resp = http_.Stream(req, [&](std::string_view piece) {
      pending += piece;
      size_t start = 0;
      for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        const std::string_view line = std::string_view(pending).substr(start, nl - start);
        if (line.empty()) continue;  // a heartbeat
        boost::system::error_code ec;
        json::value v = json::parse(line, ec);
        if (ec) {
          bad = DataLoss("the controller streamed a line that is not JSON");
          return false;
        }
        if (!on_line(v)) return false;
      }
      pending.erase(0, start);
      return true;
    });
    if (!resp.ok()) return resp.status();
    if (resp->status >= 300) {
      boost::system::error_code ec;
      json::value v = json::parse(resp->body, ec);
      return Status(resp->status == 404 ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
                    !ec && v.is_object() && v.as_object().contains("error") ? S(v, "error") : resp->body);
    }
    return bad;
  }

 private:
  static std::string S(const json::value& o, std::string_view key) {
    const json::value* v = o.as_object().if_contains(key);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  }

  Endpoint e_;
  http::Client http_;
};

// A string member of the controller's answer, as the CLI prints it: terminal-safe, since log lines,
// events and reasons carry text a tenant's app or ECS wrote (an escape sequence in a log line must
// not reach the operator's terminal as one).
std::string S(const json::value& o, std::string_view key) {
  const json::value* v = o.is_object() ? o.as_object().if_contains(key) : nullptr;
  return v && v->is_string() ? TerminalSafe(v->as_string()) : std::string();
}

void PrintDeployment(const json::value& d) {
  fmt::print("id          {}\n", S(d, "id"));
  fmt::print("project     {} (group {})\n", S(d, "project"), S(d, "group"));
  fmt::print("state       {}{}\n", S(d, "state"), S(d, "reason").empty() ? "" : " — " + S(d, "reason"));
  fmt::print("url         {}\n", S(d, "url"));
  fmt::print("created     {}\n", S(d, "created_at"));
  if (!S(d, "from").empty()) fmt::print("from        {}\n", S(d, "from"));
  if (const json::value* ts = d.as_object().if_contains("tasks"); ts && ts->is_array() && !ts->as_array().empty()) {
    fmt::print("tasks\n");
    for (const json::value& t : ts->as_array()) {
      std::string exit;
      if (const json::value* x = t.as_object().if_contains("exit_code")) exit = fmt::format(" exit {}", json::serialize(*x));
      fmt::print("  {:<10} {:<9} {:<21} {:<5}{}{}\n", S(t, "container"), S(t, "status"), S(t, "address"), S(t, "health"),
                 exit, S(t, "stopped_reason").empty() ? "" : " — " + S(t, "stopped_reason"));
    }
  }
}

// How a watched deployment ended (`deploy --wait`, `deployments show --follow`): 0 Healthy, 1 any
// terminal state or the deadline passed, each said on stderr; `out` gets every event, and with
// `tasks` every change of a task (status, address, the edge's verdict) as it is seen.
int Watch(ApiClient& api, const std::string& id, std::FILE* out, std::optional<std::chrono::steady_clock::time_point> deadline,
          std::string_view timeout_text, std::string_view what, bool tasks) {
  uint64_t after = 0;
  std::map<std::string, std::string> task_lines;  // task ARN -> its line, as last printed
  while (true) {
    auto ev = api.Call("GET", fmt::format("/v1/deployments/{}/events?after={}", PercentEncode(id), after));
    if (!ev.ok()) return Fail(what, ev.status());
    for (const json::value& e : ev->at("events").as_array()) {
      after = e.at("seq").to_number<uint64_t>();
      fmt::print(out, "  {} {:<7} {}\n", S(e, "at"), S(e, "kind"), S(e, "message"));
    }
    const std::string state = S(*ev, "state");
    std::optional<json::value> d;
    if (tasks || state == "Healthy") {
      auto got = api.Call("GET", "/v1/deployments/" + PercentEncode(id));
      if (got.ok()) d = std::move(*got);
    }
    if (tasks && d) {
      for (const json::value& t : d->at("tasks").as_array()) {
        const std::string task = S(t, "task");
        const std::string line = fmt::format("{}/{} {} {} {}", S(t, "container"), task.substr(task.rfind('/') + 1, 8),
                                             S(t, "status"), S(t, "address"), S(t, "health"));
        if (task_lines[task] == line) continue;
        task_lines[task] = line;
        fmt::print(out, "  task {}\n", line);
      }
    }
    std::fflush(out);
    if (state == "Healthy") {
      fmt::print(stderr, "{} is Healthy{}\n", id, d ? " at " + S(*d, "url") : "");
      return 0;
    }
    if (state == "Failed" || state == "Stopped" || state == "Expired" || state == "Superseded") {
      fmt::print(stderr, "{} is {}: {}\n", id, state, S(*ev, "reason"));
      return 1;
    }
    if (deadline && std::chrono::steady_clock::now() > *deadline) {
      fmt::print(stderr, "{} is still {} after {}: {}\n", id, state, timeout_text, S(*ev, "reason"));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

int RunDeploy(const DeployCommands& c) {
  auto endpoint = FindController();
  if (!endpoint.ok()) return Fail("deploy", endpoint.status());
  ApiClient api(*endpoint);
  json::object body{{"group", c.group}, {"environment", c.environment}};
  if (!c.from.empty()) {
    body["from"] = c.from;
    if (c.group == "default") body.erase("group");
  } else {
    std::ifstream in(c.file);
    if (!in) return Fail("deploy", NotFound(fmt::format("cannot read {}", c.file)));
    std::stringstream ss;
    ss << in.rdbuf();
    body["toml"] = ss.str();
    body["file"] = c.file;
  }
  json::array images;
  for (const std::string& i : c.images) images.emplace_back(i);
  body["images"] = std::move(images);
  if (!c.expire.empty()) {
    auto e = ParseDuration("--expire", c.expire);
    if (!e.ok()) return Fail("deploy", e.status());
    body["expire_seconds"] = e->count();
  }
  auto created = api.Call("POST", "/v1/deployments", &body);
  if (!created.ok()) return Fail("deploy", created.status());
  const std::string id = S(*created, "id");
  fmt::print("{}\n", id);
  std::fflush(stdout);
  if (!c.wait) return 0;
  auto timeout = ParseDuration("--wait-timeout", c.wait_timeout);
  if (!timeout.ok()) return Fail("deploy", timeout.status());
  return Watch(api, id, stderr, std::chrono::steady_clock::now() + *timeout, c.wait_timeout, "deploy", /*tasks=*/false);
}

std::string UrlEscape(std::string_view s) { return PercentEncode(s); }

int RunDeployments(const DeployCommands& c) {
  auto endpoint = FindController();
  if (!endpoint.ok()) return Fail("deployments", endpoint.status());
  ApiClient api(*endpoint);
  if (c.list->parsed()) {
    auto v = api.Call("GET", fmt::format("/v1/deployments?project={}&limit=100", UrlEscape(c.project)));
    if (!v.ok()) return Fail("deployments list", v.status());
    fmt::print("{:<22} {:<20} {:<10} {:<11} {}\n", "ID", "PROJECT", "GROUP", "STATE", "URL");
    for (const json::value& d : v->at("deployments").as_array()) {
      fmt::print("{:<22} {:<20} {:<10} {:<11} {}{}\n", S(d, "id"), S(d, "project"), S(d, "group"), S(d, "state"),
                 S(d, "url"), d.at("active").as_bool() ? " (active)" : "");
    }
    return 0;
  }
  if (c.diff->parsed()) {
    std::ifstream in(c.file);
    if (!in) return Fail("deployments diff", NotFound(fmt::format("cannot read {}", c.file)));
    std::stringstream ss;
    ss << in.rdbuf();
    json::array images;
    for (const std::string& i : c.images) images.emplace_back(i);
    json::object body{{"toml", ss.str()}, {"file", c.file}, {"group", c.group}, {"environment", c.environment},
                      {"images", std::move(images)}};
    auto v = api.Call("POST", "/v1/diff", &body);
    if (!v.ok()) return Fail("deployments diff", v.status());
    const json::value& active = v->at("active");
    fmt::print("{} (group {}) against {}\n", S(*v, "project"), S(*v, "group"),
               active.is_string() ? "its active deployment " + TerminalSafe(active.as_string()) : "nothing (no active deployment)");
    int changes = 0;
    for (const json::value& container : v->at("containers").as_array()) {
      const std::string name = S(container, "container");
      if (container.as_object().contains("added")) {
        fmt::print("+ {}: a new container\n", name);
        ++changes;
        continue;
      }
      if (container.as_object().contains("removed")) {
        fmt::print("- {}: removed\n", name);
        ++changes;
        continue;
      }
      for (const json::value& ch : container.at("changes").as_array()) {
        const json::object& o = ch.as_object();
        fmt::print("~ {}: {}: {} -> {}\n", name, S(ch, "path"),
                   o.contains("from") ? TerminalSafe(json::serialize(o.at("from"))) : "(none)",
                   o.contains("to") ? TerminalSafe(json::serialize(o.at("to"))) : "(none)");
        ++changes;
      }
    }
    if (changes == 0) fmt::print("no change\n");
    return 0;
  }
  if (c.show->parsed()) {
    auto v = api.Call("GET", "/v1/deployments/" + UrlEscape(c.id));
    if (!v.ok()) return Fail("deployments show", v.status());
    PrintDeployment(*v);
    std::fflush(stdout);
    if (!c.follow) return 0;
    return Watch(api, S(*v, "id"), stdout, std::nullopt, "", "deployments show", /*tasks=*/true);
  }
  if (c.stop->parsed()) {
    auto v = api.Call("POST", fmt::format("/v1/deployments/{}/stop", UrlEscape(c.id)));
    if (!v.ok()) return Fail("deployments stop", v.status());
    fmt::print("{} {}\n", S(*v, "id"), S(*v, "state"));
    return 0;
  }
  if (c.logs->parsed()) {
    // Lines since --since; with --follow the controller streams them, then new ones as they come
    // (its live tail, or its polling when StartLiveTail is refused: said once on stderr).
    auto since = ParseDuration("--since", c.since);
    if (!since.ok()) return Fail("deployments logs", since.status());
    const int64_t start = EpochMillis(std::chrono::system_clock::now() - *since);
    // "<prefix>/<project>/<deployment>/<container>/<task>": printed "<container>/<task 8> <message>".
    auto print = [](const json::value& e) {
      std::string stream = S(e, "stream");
      std::vector<std::string> parts;
      for (size_t i = 0, j; i <= stream.size(); i = j + 1) {
        j = stream.find('/', i);
        if (j == std::string::npos) j = stream.size();
        parts.push_back(stream.substr(i, j - i));
      }
      std::string who = parts.size() >= 2 ? parts[parts.size() - 2] + "/" + parts.back().substr(0, 8) : stream;
      fmt::print("{} {}\n", who, S(e, "message"));
    };
    if (c.follow) {
      std::set<std::string> said;
      std::string error;
      Status s = api.Stream(fmt::format("/v1/deployments/{}/logs?follow=1&start_ms={}", UrlEscape(c.id), start),
                            [&](const json::value& line) {
                              if (!line.is_object()) return true;
                              const json::object& o = line.as_object();
                              if (o.contains("error")) {
                                error = S(line, "error");
                                return false;
                              }
                              if (o.contains("notice")) {
                                if (said.insert(S(line, "notice")).second) {
                                  fmt::print(stderr, "paddock: deployments logs: {}\n", S(line, "notice"));
                                }
                                return true;
                              }
                              print(line);
                              std::fflush(stdout);
                              return true;
                            });
      if (!s.ok()) return Fail("deployments logs", s);
      if (!error.empty()) return Fail("deployments logs", Unavailable(error));
      return Fail("deployments logs", Unavailable("the controller ended the follow (it is stopping)"));
    }
    std::string token;
    do {
      std::string target = fmt::format("/v1/deployments/{}/logs?start_ms={}", UrlEscape(c.id), start);
      if (!token.empty()) target += "&next_token=" + UrlEscape(token);
      auto v = api.Call("GET", target);
      if (!v.ok()) return Fail("deployments logs", v.status());
      for (const json::value& e : v->at("events").as_array()) print(e);
      token = v->as_object().contains("next_token") ? S(*v, "next_token") : "";
    } while (!token.empty());
    std::fflush(stdout);
    return 0;
  }
  if (c.events->parsed()) {
    uint64_t after = 0;
    while (true) {
      auto v = api.Call("GET", fmt::format("/v1/deployments/{}/events?after={}", UrlEscape(c.id), after));
      if (!v.ok()) return Fail("deployments events", v.status());
      for (const json::value& e : v->at("events").as_array()) {
        after = e.at("seq").to_number<uint64_t>();
        fmt::print("{} {:<7} {}\n", S(e, "at"), S(e, "kind"), S(e, "message"));
      }
      std::fflush(stdout);
      if (!c.follow) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  return 0;
}

int RunVerify() {
  auto endpoint = FindController();
  if (!endpoint.ok()) return Fail("verify", endpoint.status());
  ApiClient api(*endpoint);
  auto v = api.Call("GET", "/v1/verify");
  if (!v.ok()) return Fail("verify", v.status());
  int failed = 0;
  for (const json::value& c : v->at("checks").as_array()) {
    const bool ok = c.at("ok").as_bool();
    failed += ok ? 0 : 1;
    fmt::print("{}  {:<16} {}\n", ok ? "ok  " : "FAIL", S(c, "name"), S(c, "detail"));
  }
  if (failed == 0) {
    fmt::print("Every check passed: this controller can deploy.\n");
    return 0;
  }
  fmt::print("{} check(s) failed.\n", failed);
  return 1;
}

int RunEnv(const DeployCommands& c) {
  std::string project = c.project;
  if (project.empty()) {
    // The project of the app spec in this directory (or -f's).
    std::ifstream in(c.file);
    if (!in) return Fail("env", NotFound(fmt::format("no --project, and cannot read {} to find it", c.file)));
    std::stringstream ss;
    ss << in.rdbuf();
    auto spec = deploy::ParseAppSpec(ss.str(), {.environment = "", .file_name = c.file});
    if (!spec.ok()) return Fail("env", spec.status());
    project = spec->project;
  }
  auto endpoint = FindController();
  if (!endpoint.ok()) return Fail("env", endpoint.status());
  ApiClient api(*endpoint);
  const std::string base = fmt::format("/v1/projects/{}/env", UrlEscape(project));
  if (c.env_set->parsed()) {
    std::string value = c.value;
    if (c.env_set->count("value") == 0) {
      // Not on the command line (where `ps` and the shell's history would keep a secret): stdin.
      std::stringstream ss;
      ss << std::cin.rdbuf();
      value = ss.str();
      if (value.ends_with('\n')) value.pop_back();
    }
    json::object body{{"value", value}, {"secret", c.secret}};
    auto v = api.Call("PUT", base + "/" + UrlEscape(c.key), &body);
    if (!v.ok()) return Fail("env set", v.status());
    fmt::print("{} set{} for {} (the next deployment takes it)\n", c.key, c.secret ? " (secret)" : "", project);
    return 0;
  }
  if (c.env_unset->parsed()) {
    auto v = api.Call("DELETE", base + "/" + UrlEscape(c.key));
    if (!v.ok()) return Fail("env unset", v.status());
    return 0;
  }
  auto v = api.Call("GET", base);
  if (!v.ok()) return Fail("env list", v.status());
  for (const json::value& e : v->at("env").as_array()) {
    fmt::print("{}={}\n", S(e, "name"), e.at("secret").as_bool() ? "(secret)" : S(e, "value"));
  }
  return 0;
}

// ADR D6: a standalone controller checks at start what no deployment could succeed without — its
// cluster ACTIVE, its own identity, the execution and task roles — and refuses to start, naming
// each failure, rather than fail every deployment later. What may come right without a restart
// (subnets, security groups, the edge) is only warned of. `paddock verify` asks for all of it.
bool Preflight(const ControllerConfig& config) {
  deploy::HttpAws aws(config.aws);
  std::unique_ptr<deploy::HttpEdgeView> edge;
  if (config.edge_api) edge = std::make_unique<deploy::HttpEdgeView>(config.edge_api->first, config.edge_api->second);
  static const std::set<std::string, std::less<>> kRefusing = {"cluster", "identity", "execution role", "task role"};
  bool refused = false;
  for (const deploy::Check& check :
       deploy::Verify(aws, aws, edge.get(), config.options.settings,
                      {.create_cluster = config.options.create_cluster, .create_task_roles = config.options.create_task_roles})) {
    if (check.ok) continue;
    const bool refusing = kRefusing.contains(check.name);
    refused |= refusing;
    fmt::print(stderr, "paddock: controller: {} {}: {}\n", refusing ? "cannot start:" : "warning:", check.name, check.detail);
  }
  if (refused) {
    fmt::print(stderr, "paddock: controller: not started; mend the above, or start with --skip-preflight\n");
  }
  return !refused;
}

// An endpoint flag's URL: http://HOST:PORT, or https://HOST[:PORT] (443 unless given), whose
// certificate is checked against `tls`.
StatusOr<deploy::AwsEndpoint> ParseEndpoint(std::string_view flag, std::string_view url, const http::ClientTlsOptions& tls) {
  const bool https = url.starts_with("https://");
  std::string hostport(https ? url.substr(8) : url);
  while (hostport.ends_with('/')) hostport.pop_back();
  if (https && (hostport.empty() || hostport.back() == ']' || hostport.find(':') == std::string::npos)) hostport += ":443";
  ASSIGN_OR_RETURN(auto hp, HostPort(flag, hostport));
  deploy::AwsEndpoint e{.host = hp.first, .port = hp.second};
  if (https) e.tls = tls;
  return e;
}

int RunController(const DeployCommands& c) {
  ControllerConfig config;
  auto creds = ResolveCredentials(c.credentials_file, c.profile);
  if (!creds.ok()) return Fail("controller: credentials", creds.status());
  http::ClientTlsOptions tls;
  if (!c.ca_bundle.empty()) {
    std::ifstream in(c.ca_bundle);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in) return Fail("controller", InvalidArgument(fmt::format("--ca-bundle {} cannot be read", c.ca_bundle)));
    tls.ca_pem = pem.str();
    // Loaded once here, so a bundle that holds no certificate stops the start with its reason.
    auto probe = http::Client::Tls("127.0.0.1", 443, std::chrono::seconds(5), tls);
    if (!probe.ok()) return Fail("controller: --ca-bundle", probe.status());
  }
  config.aws.region = c.region;
  config.aws.credentials = *creds;
  bool any_https = false;
  if (c.endpoint == "aws") {
    // AWS's own: each service at its regional host (IAM's global one), over HTTPS.
    config.aws.per_service = deploy::AwsPublicEndpoints(c.region, tls);
    any_https = true;
  } else {
    auto ep = ParseEndpoint("--endpoint", c.endpoint, tls);
    if (!ep.ok()) return Fail("controller", ep.status());
    config.aws.host = ep->host;
    config.aws.port = ep->port;
    config.aws.tls = ep->tls;
    any_https = ep->tls.has_value();
  }
  for (const std::string& spec : c.service_endpoints) {
    static const std::set<std::string, std::less<>> kServices = {"ecs", "ssm", "logs", "servicediscovery", "sts", "ec2", "iam"};
    const size_t eq = spec.find('=');
    const std::string service = spec.substr(0, eq);
    if (eq == std::string::npos || !kServices.contains(service)) {
      return Fail("controller", InvalidArgument(fmt::format(
                                    "--service-endpoint '{}' must be SERVICE=URL, SERVICE one of ecs, ssm, logs, "
                                    "servicediscovery, sts, ec2, iam", spec)));
    }
    auto ep = ParseEndpoint("--service-endpoint", spec.substr(eq + 1), tls);
    if (!ep.ok()) return Fail("controller", ep.status());
    any_https |= ep->tls.has_value();
    config.aws.per_service[service] = *ep;
  }
  if (!c.ca_bundle.empty() && !any_https) {
    return Fail("controller", InvalidArgument("--ca-bundle is for an https:// --endpoint"));
  }
  if (!c.edge_api.empty()) {
    auto e = HostPort("--edge-api", c.edge_api);
    if (!e.ok()) return Fail("controller", e.status());
    config.edge_api = *e;
  }
  auto listen = HostPort("--listen", c.listen, /*any_port=*/true);
  if (!listen.ok()) return Fail("controller", listen.status());
  config.listen_host = listen->first;
  config.listen_port = listen->second;
  config.call_log = c.call_log;
  config.state_dir = c.state_dir.empty() ? fmt::format("{}/.local/share/paddock-controller",
                                                       std::getenv("HOME") ? std::getenv("HOME") : "/root")
                                         : c.state_dir;
  auto interval = ParseDuration("--interval", c.interval);
  auto timeout = ParseDuration("--deploying-timeout", c.deploying_timeout);
  auto drain = ParseDuration("--drain", c.drain);
  for (const auto* d : {&interval, &timeout, &drain}) {
    if (!d->ok()) return Fail("controller", d->status());
  }
  // The class names an SSM path segment, a tag and a label: one DNS-label-like word.
  if (c.controller_class.empty() || c.controller_class.size() > 63 ||
      c.controller_class.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    return Fail("controller", InvalidArgument(fmt::format("--class '{}' must be 1 to 63 lowercase letters, digits and '-'",
                                                          c.controller_class)));
  }
  deploy::ControllerSettings& s = config.options.settings;
  s.cluster = c.cluster;
  s.controller_class = c.controller_class;
  s.base_domain = c.base_domain;
  s.url_port = static_cast<uint16_t>(c.url_port);
  s.auth_url = c.auth_url;
  s.subnets = c.subnets;
  s.security_groups = c.security_groups;
  s.execution_role_arn = c.execution_role_arn;
  s.task_role_arn = c.task_role_arn;
  s.task_role_pattern = c.task_role_pattern;
  if (!s.task_role_pattern.empty()) {
    if (!s.task_role_arn.empty()) {
      return Fail("controller", InvalidArgument("--task-role-arn and --task-role-pattern exclude each other: one role "
                                                "for every project, or each project's own"));
    }
    if (Status ok = deploy::CheckTaskRolePattern(s.task_role_pattern); !ok.ok()) return Fail("controller", ok);
  } else if (c.create_task_roles) {
    return Fail("controller", InvalidArgument("--create-task-roles needs --task-role-pattern (the roles it names)"));
  }
  config.options.create_task_roles = c.create_task_roles;
  s.log_group = c.log_group;
  s.log_region = c.region;
  s.cloudmap_namespace = c.cloudmap_namespace;
  s.circuit_breaker = c.circuit_breaker;
  config.options.interval = *interval;
  // The lease outlives a tick's wait (interval +20%, a throttled tick's backoff aside) three times over.
  config.options.lease_ttl = std::max<std::chrono::milliseconds>(3 * config.options.interval, std::chrono::seconds(30));
  config.options.deploying_timeout = *timeout;
  config.options.drain = *drain;
  config.options.keep_revisions = std::max(0, c.keep_revisions);
  if (!c.identity_agent_image.empty()) {
    // A task reaches the controller only at an address the operator knows tasks can route to.
    if (c.identity_exchange_url.empty()) {
      return Fail("controller", InvalidArgument("--identity-agent-image needs --identity-exchange-url: the URL of "
                                                "this controller's /v1/identity/token as the tasks reach it"));
    }
    if (!c.identity_exchange_url.starts_with("http://")) {
      return Fail("controller", InvalidArgument("--identity-exchange-url must be http://… (the busybox agent speaks "
                                                "no TLS; put the controller behind a private address)"));
    }
    auto ttl = ParseDuration("--identity-token-ttl", c.identity_token_ttl);
    if (!ttl.ok()) return Fail("controller", ttl.status());
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(*ttl).count();
    if (seconds < 60 || seconds > 86400) {
      return Fail("controller", InvalidArgument("--identity-token-ttl must be between 1m and 24h"));
    }
    s.identity_agent_image = c.identity_agent_image;
    s.identity_exchange_url = c.identity_exchange_url;
    s.identity_token_ttl_seconds = static_cast<int>(seconds);
    config.identity_issuer = c.identity_issuer;
  }
  if (!c.skip_preflight && !Preflight(config)) return 1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto running = Running::Start(config);
  if (!running.ok()) return Fail("controller", running.status());
  fmt::print("paddock controller (class {}) on {} for {}; its token is in {}/controller.token\n", c.controller_class,
             (*running)->url(), c.endpoint, config.state_dir);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  running->reset();
  return 0;
}

// The execution role `paddock up`'s deployments run with: ECS's managed execution policy (pulls,
// log streams) plus, scoped to this controller's own paths, reading its secrets and making its log
// group on first use. Idempotent; a role of that name that exists already gets this trust policy
// and these permissions (whoever made it), so what the controller passes is what it describes.
StatusOr<std::string> EnsureExecutionRole(const deploy::HttpAwsOptions& o, const std::string& account,
                                          const deploy::ControllerOptions& c) {
  deploy::HttpAws aws(o);
  const std::string name = "paddock-deploy-execution";
  const std::string trust =
      R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},)"
      R"("Action":"sts:AssumeRole"}]})";
  auto call = [&](std::vector<std::pair<std::string, std::string>> params) -> Status {
    params.emplace_back("Version", "2010-05-08");
    return aws.Query("iam", params).status();
  };
  Status made = call({{"Action", "CreateRole"}, {"RoleName", name}, {"AssumeRolePolicyDocument", trust},
                      {"Description", "Runs the deployments of paddock up's deploy controller"}});
  if (IsError(made, deploy::Error::kAlreadyExists)) {
    made = call({{"Action", "UpdateAssumeRolePolicy"}, {"RoleName", name}, {"PolicyDocument", trust}});
  }
  RETURN_IF_ERROR(made);
  RETURN_IF_ERROR(call({{"Action", "AttachRolePolicy"}, {"RoleName", name},
                        {"PolicyArn", "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"}}));
  const std::string extra = fmt::format(
      R"({{"Version":"2012-10-17","Statement":[)"
      R"({{"Effect":"Allow","Action":"ssm:GetParameters","Resource":"arn:aws:ssm:{0}:{1}:parameter/{2}/{3}/*"}},)"
      R"({{"Effect":"Allow","Action":"logs:CreateLogGroup","Resource":"arn:aws:logs:{0}:{1}:log-group:{4}*"}}]}})",
      o.region, account, c.ssm_prefix, c.settings.controller_class, c.settings.log_group);
  RETURN_IF_ERROR(call({{"Action", "PutRolePolicy"}, {"RoleName", name}, {"PolicyName", "paddock-deploy"},
                        {"PolicyDocument", extra}}));
  return fmt::format("arn:aws:iam::{}:role/{}", account, name);
}

}  // namespace

class InProcessController::Impl {
 public:
  std::unique_ptr<Running> running;
};

InProcessController::InProcessController(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InProcessController::~InProcessController() = default;
const std::string& InProcessController::url() const { return impl_->running->url(); }
http::Response InProcessController::Door(const http::Request& request) { return impl_->running->api().Handle(request); }
http::Response InProcessController::CallApi(http::Request request) {
  std::erase_if(request.headers, [](const http::Header& h) { return http::EqualsIgnoreCase(h.name, "Authorization"); });
  request.headers.push_back({"Authorization", "Bearer " + impl_->running->token()});
  return impl_->running->api().Handle(request);
}

Status WriteIdentityAgentRootfs(const std::string& dir) {
  constexpr const char* kBusybox = "/bin/busybox";
  std::error_code ec;
  if (!fs::is_regular_file(kBusybox, ec)) {
    return FailedPrecondition("workload identity needs a static busybox at /bin/busybox (Debian's busybox-static) for "
                              "its sidecar image");
  }
  fs::remove_all(dir, ec);
  for (const char* sub : {"bin", "etc", "tmp", "usr/local/bin"}) {
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) return Unavailable(fmt::format("cannot make {}/{}: {}", dir, sub, ec.message()));
  }
  fs::copy_file(kBusybox, fs::path(dir) / "bin/busybox", ec);
  if (ec) return Unavailable(fmt::format("cannot copy {}: {}", kBusybox, ec.message()));
  for (const char* applet : {"sh", "wget", "sed", "mv", "mkdir", "sleep", "timeout", "cat", "printf", "echo", "ls"}) {
    fs::create_symlink("busybox", fs::path(dir) / "bin" / applet, ec);
    if (ec) return Unavailable(fmt::format("cannot link {}: {}", applet, ec.message()));
  }
  auto write = [&](const fs::path& path, std::string_view text, fs::perms mode) -> Status {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Unavailable(fmt::format("cannot write {}", path.string()));
    fs::permissions(path, mode, ec);
    return OkStatus();
  };
  using P = fs::perms;
  RETURN_IF_ERROR(write(fs::path(dir) / "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", P::owner_read | P::owner_write | P::group_read | P::others_read));
  return write(fs::path(dir) / std::string(deploy::kIdentityAgentPath).substr(1), deploy::kIdentityAgentScript,
               P::owner_all | P::group_read | P::group_exec | P::others_read | P::others_exec);
}

StatusOr<std::unique_ptr<InProcessController>> InProcessController::Start(const InProcessControllerOptions& o) {
  ControllerConfig config;
  config.state_dir = o.state_dir + "/controller";
  config.aws = {.host = o.api_host, .port = o.api_port, .region = o.region, .credentials = o.credentials};
  if (o.edge_api_port != 0) config.edge_api = std::pair<std::string, uint16_t>("127.0.0.1", o.edge_api_port);
  config.options.settings.url_port = o.edge_web_port;
  config.options.settings.subnets = o.subnets;
  if (!o.vpc_id.empty()) {
    // D10: containers find each other as <project>-<group>-<container>.paddock.internal.
    config.options.settings.cloudmap_namespace = "paddock.internal";
    config.options.namespace_vpc = o.vpc_id;
  }
  config.options.settings.security_groups = o.security_groups;
  config.options.settings.log_region = o.region;
  // A developer's machine: short ticks (a deploy is watched live), a drain the in-process edge's
  // holds make safe.
  config.options.interval = std::chrono::seconds(2);
  config.options.busy_interval = std::chrono::milliseconds(200);
  config.options.drain = std::chrono::seconds(2);
  config.options.create_cluster = true;
  config.options.settings.circuit_breaker = true;
  config.options.ticked = o.ticked;
  if (!o.identity_agent_image.empty()) {
    // D8: tasks reach the exchange through the metadata endpoint's door, at an address that is the
    // same on every node and across restarts — also the issuer's URL (its keys are served there too).
    config.options.settings.identity_agent_image = o.identity_agent_image;
    config.options.settings.identity_exchange_url = "http://169.254.170.2/paddock/v1/identity/token";
    config.identity_issuer = "http://169.254.170.2/paddock";
  }
  config.locked = true;
  if (!o.account.empty()) {
    ASSIGN_OR_RETURN(config.options.settings.execution_role_arn, EnsureExecutionRole(config.aws, o.account, config.options));
    // Each project's tasks run as a role of their own, made when the project first deploys.
    config.options.settings.task_role_pattern = fmt::format("arn:aws:iam::{}:role/paddock-task-{{project}}", o.account);
    config.options.create_task_roles = true;
  }
  auto impl = std::make_unique<Impl>();
  ASSIGN_OR_RETURN(impl->running, Running::Start(config));
  if (o.publish) RETURN_IF_ERROR(Publish(impl->running->url(), impl->running->token()));
  return std::unique_ptr<InProcessController>(new InProcessController(std::move(impl)));
}

void AddDeployCommands(CLI::App& app, DeployCommands& c) {
  c.controller = app.add_subcommand("controller", "Run the deploy controller against an ECS endpoint (docs/deploy.md)");
  c.controller->add_option("--endpoint", c.endpoint,
                           "Every service's endpoint, http://HOST:PORT or https://HOST[:PORT], or 'aws' for AWS's own (default http://127.0.0.1:4566)");
  c.controller->add_option("--ca-bundle", c.ca_bundle, "PEM certificates to trust for an https endpoint (default: the system's)");
  c.controller->add_option("--service-endpoint", c.service_endpoints,
                           "SERVICE=URL: that service's own endpoint (ecs, ssm, logs, servicediscovery, sts, ec2, iam; repeatable)");
  c.controller->add_option("--region", c.region, "Region (default us-east-1)");
  c.controller->add_option("--credentials", c.credentials_file, "AWS credentials file (default: the environment, then ~/.aws)");
  c.controller->add_option("--profile", c.profile, "Profile in the credentials file (default paddock)");
  c.controller->add_option("--edge-api", c.edge_api, "HOST:PORT of the edge's (or Traefik's) API, for readiness");
  c.controller->add_option("--listen", c.listen, "HOST:PORT of the controller's API (default 127.0.0.1:4580)");
  c.controller->add_option("--state-dir", c.state_dir, "Its store (default ~/.local/share/paddock-controller)");
  c.controller->add_option("--class", c.controller_class, "Controller class: the isolation token (default default)");
  c.controller->add_option("--cluster", c.cluster, "ECS cluster (default default)");
  c.controller->add_option("--interval", c.interval, "Reconcile interval, ±20% jitter (default 30s)");
  c.controller->add_option("--deploying-timeout", c.deploying_timeout, "Deploying longer than this fails (default 5m)");
  c.controller->add_option("--drain", c.drain, "A retired service waits this long at 0 before deletion (default 15s)");
  c.controller->add_option("--base-domain", c.base_domain, "Apps answer at <project>.<base-domain> (default localhost)");
  c.controller->add_option("--url-port", c.url_port, "The port in app URLs, 0 for none (default 8000)");
  c.controller->add_option("--auth-url", c.auth_url, "forwardAuth address for private routes");
  c.controller->add_option("--subnet", c.subnets, "awsvpc subnet (repeatable)");
  c.controller->add_option("--security-group", c.security_groups, "awsvpc security group (repeatable)");
  c.controller->add_option("--execution-role-arn", c.execution_role_arn, "Task execution role");
  c.controller->add_option("--task-role-arn", c.task_role_arn,
                           "One task role for every project's tasks (weaker: each project's workload holds every "
                           "other's permissions; see --task-role-pattern)");
  c.controller->add_option("--task-role-pattern", c.task_role_pattern,
                           "Each project's own task role, an ARN holding {project} (and optionally {class}) in its "
                           "name: arn:aws:iam::ACCOUNT:role/paddock-task-{project}");
  c.controller->add_flag("--skip-preflight", c.skip_preflight,
                         "Start even when the preflight (cluster, identity, execution and task roles) fails");
  c.controller->add_flag("--create-task-roles", c.create_task_roles,
                         "Create a project's missing task role (CreateRole, trusting ecs-tasks.amazonaws.com, no "
                         "permissions) instead of failing its deployment; needs iam:CreateRole");
  c.controller->add_option("--log-group", c.log_group, "awslogs group ('' for none; default /paddock/apps)");
  c.controller->add_option("--cloudmap-namespace", c.cloudmap_namespace, "Cloud Map namespace for discovery");
  c.controller->add_option("--keep-revisions", c.keep_revisions,
                           "Revisions of a family kept ACTIVE when a deployment retires; older ones are deregistered "
                           "and deleted (0: never; default 10)");
  c.controller->add_flag("--circuit-breaker", c.circuit_breaker,
                         "ECS's deployment circuit breaker on each service (rollback off): a deployment whose tasks "
                         "keep failing fails at once instead of at --deploying-timeout");
  c.controller->add_option("--identity-agent-image", c.identity_agent_image,
                           "Workload identity (D8): the identity sidecar's image, which every task then carries "
                           "(default: none, identity off)");
  c.controller->add_option("--identity-exchange-url", c.identity_exchange_url,
                           "http:// URL of this controller's /v1/identity/token as tasks reach it (required with "
                           "--identity-agent-image)");
  c.controller->add_option("--identity-issuer", c.identity_issuer,
                           "The tokens' iss, where /.well-known/jwks.json is served (default: this API's URL)");
  c.controller->add_option("--identity-token-ttl", c.identity_token_ttl,
                           "Lifetime of every identity token, 1m to 24h (default 1h)");
  c.controller->add_option("--call-log", c.call_log,
                           "Append one JSON line per AWS call to FILE: service, action, ok and its identifying "
                           "parameters (never a secret's value)");

  c.deploy = app.add_subcommand("deploy", "Deploy an app described by paddock.toml; prints the deployment id");
  c.deploy->add_option("-f,--file", c.file, "The app spec (default paddock.toml)");
  c.deploy->add_option("--image", c.images, "CONTAINER=IMAGE: override a container's image (repeatable)");
  c.deploy->add_option("--group", c.group, "Deployment group (default default)");
  c.deploy->add_option("--env", c.environment, "Apply the spec's [environments.<ENV>] table");
  c.deploy->add_option("--from", c.from, "Redeploy an earlier deployment's exact workload (rollback)");
  c.deploy->add_option("--expire", c.expire, "Stop the deployment after this long (e.g. 7d)");
  c.deploy->add_flag("--wait", c.wait, "Wait: exit 0 when Healthy, 1 when it fails (with the reason)");
  c.deploy->add_option("--wait-timeout", c.wait_timeout, "How long --wait waits (default 10m)");

  c.deployments = app.add_subcommand("deployments", "List, show, follow and stop deployments");
  c.deployments->require_subcommand(1);
  c.list = c.deployments->add_subcommand("list", "Deployments, newest first");
  c.list->add_option("--project", c.project, "Only this project's");
  c.show = c.deployments->add_subcommand("show", "A deployment: state, URL, tasks");
  c.show->add_option("id", c.id, "Deployment id")->required();
  c.show->add_flag("--follow", c.follow,
                   "Then print each event and task change as it happens; exit 0 when Healthy, 1 when it fails or ends");
  c.events = c.deployments->add_subcommand("events", "A deployment's events (state changes, ECS events, failures)");
  c.events->add_option("id", c.id, "Deployment id")->required();
  c.events->add_flag("--follow", c.follow, "Keep printing new events");
  c.logs = c.deployments->add_subcommand("logs", "A deployment's container output (CloudWatch Logs)");
  c.logs->add_option("id", c.id, "Deployment id")->required();
  c.logs->add_flag("--follow", c.follow, "Keep printing new lines as they are written (CloudWatch Logs' live tail)");
  c.logs->add_option("--since", c.since, "From this long ago (default 1h)");
  c.diff = c.deployments->add_subcommand("diff", "What deploying the spec would change against the active deployment");
  c.diff->add_option("-f,--file", c.file, "The app spec (default paddock.toml)");
  c.diff->add_option("--image", c.images, "CONTAINER=IMAGE: override a container's image (repeatable)");
  c.diff->add_option("--group", c.group, "Deployment group (default default)");
  c.diff->add_option("--env", c.environment, "Apply the spec's [environments.<ENV>] table");
  c.stop = c.deployments->add_subcommand("stop", "Stop a deployment (its services are retired)");
  c.stop->add_option("id", c.id, "Deployment id")->required();

  c.verify = app.add_subcommand("verify", "Preflight: can the deploy controller deploy (cluster, identity, subnets, roles, edge)?");

  c.env = app.add_subcommand("env", "A project's environment variables, taken by its next deployment");
  c.env->require_subcommand(1);
  auto project = [&](CLI::App* cmd) {
    cmd->add_option("--project", c.project, "The project (default: [project] name of -f's file)");
    cmd->add_option("-f,--file", c.file, "The app spec naming the project (default paddock.toml)");
  };
  c.env_set = c.env->add_subcommand("set", "Set a variable (VALUE omitted: read from standard input)");
  c.env_set->add_flag("--secret", c.secret, "Store it as a secret (SSM SecureString, never in the task definition)");
  project(c.env_set);
  c.env_set->add_option("key", c.key)->required();
  c.env_set->add_option("value", c.value);
  c.env_unset = c.env->add_subcommand("unset", "Remove a variable");
  project(c.env_unset);
  c.env_unset->add_option("key", c.key)->required();
  c.env_list = c.env->add_subcommand("list", "List variables (secret values hidden)");
  project(c.env_list);
}

std::optional<int> RunDeployCommands(const DeployCommands& c) {
  if (c.controller && c.controller->parsed()) return RunController(c);
  if (c.deploy && c.deploy->parsed()) return RunDeploy(c);
  if (c.deployments && c.deployments->parsed()) return RunDeployments(c);
  if (c.env && c.env->parsed()) return RunEnv(c);
  if (c.verify && c.verify->parsed()) return RunVerify();
  return std::nullopt;
}

}  // namespace paddock::cli
