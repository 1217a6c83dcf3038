#include "deploy/api.h"

#include <openssl/crypto.h>

#include <set>

#include <boost/json.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/clock.h"
#include "common/encoding.h"
#include "deploy/controller.h"
#include "deploy/follow.h"

namespace paddock::deploy {
namespace json = boost::json;

namespace {

http::Response Json(int status, const json::value& body) {
  http::Response r;
  r.status = status;
  r.SetHeader("Content-Type", "application/json");
  r.body = json::serialize(body);
  return r;
}

http::Response Fail(const Status& s) {
  int status = 400;
  switch (s.code()) {
    case StatusCode::kNotFound: status = 404; break;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted: status = 409; break;
    case StatusCode::kUnavailable:
    case StatusCode::kInternal:
    case StatusCode::kDataLoss: status = 503; break;
    default: break;
  }
  return Json(status, json::object{{"error", s.message()}});
}

std::string Unescape(std::string_view s) { return PercentDecode(s, /*plus_is_space=*/true); }

std::string Param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    size_t eq = pair.find('=');
    if (Unescape(pair.substr(0, eq)) == name) return eq == std::string_view::npos ? "" : Unescape(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return "";
}

std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    if (path[0] == '/') {
      path.remove_prefix(1);
      continue;
    }
    size_t slash = path.find('/');
    out.push_back(Unescape(path.substr(0, slash)));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash);
  }
  return out;
}

std::string Iso(TimePoint t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::seconds>(t));
}

StatusOr<json::object> Body(const http::Request& req) {
  if (req.body.empty()) return json::object{};
  boost::system::error_code ec;
  json::value v = json::parse(req.body, ec);
  if (ec || !v.is_object()) return InvalidArgument("the request body must be a JSON object");
  return v.as_object();
}

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

json::object DeploymentJson(const Deployment& d, const ControllerSettings& settings) {
  json::object o{{"id", d.id},
                 {"project", d.project},
                 {"group", d.group},
                 {"environment", d.environment},
                 {"state", StateName(d.state)},
                 {"reason", d.reason},
                 {"active", d.active},
                 {"url", AppUrl(settings, d.project, d.group)},
                 {"created_at", Iso(d.created_at)},
                 {"spec", ToJson(d.spec)}};
  if (!d.from.empty()) o["from"] = d.from;
  if (d.healthy_since) o["healthy_at"] = Iso(*d.healthy_since);
  if (d.finished_at) o["finished_at"] = Iso(*d.finished_at);
  if (d.expires_at) o["expires_at"] = Iso(*d.expires_at);
  o["retired"] = d.retired;
  json::array secrets;
  for (const auto& [k, v] : d.secrets) secrets.emplace_back(k);
  o["secret_env"] = std::move(secrets);
  json::object env;
  for (const auto& [k, v] : d.env) env[k] = v;
  o["env"] = std::move(env);
  json::array tasks;
  for (const TaskObservation& t : d.tasks) {
    json::object to{{"task", t.task_arn}, {"container", t.container}, {"status", t.last_status},
                    {"health", t.health}, {"address", t.address}, {"stopped_reason", t.stopped_reason}};
    if (t.exit_code) to["exit_code"] = *t.exit_code;
    tasks.emplace_back(std::move(to));
  }
  o["tasks"] = std::move(tasks);
  return o;
}

// What a POST /v1/deployments (or /v1/diff) body asks for: the spec from the TOML or from `from`,
// with the environment and the image overrides applied.
StatusOr<NewDeployment> Api::Requested(const json::object& body) {
  NewDeployment nd;
  nd.group = Str(body, "group");
  if (nd.group.empty()) nd.group = "default";
  nd.environment = Str(body, "environment");
  nd.from = Str(body, "from");
  if (!nd.from.empty()) {
    ASSIGN_OR_RETURN(Deployment from, deployments_.Get(nd.from));
    nd.spec = from.spec;
    if (Str(body, "group").empty()) nd.group = from.group;
    nd.environment = from.environment;
  } else {
    const std::string file = Str(body, "file").empty() ? "paddock.toml" : Str(body, "file");
    ASSIGN_OR_RETURN(nd.spec, ParseAppSpec(Str(body, "toml"), {.environment = nd.environment, .file_name = file}));
  }
  if (const json::value* images = body.if_contains("images"); images && images->is_array()) {
    for (const json::value& i : images->as_array()) {
      if (!i.is_string()) return InvalidArgument("images must be strings CONTAINER=IMAGE");
      RETURN_IF_ERROR(OverrideImage(nd.spec, i.as_string()));
    }
  }
  nd.project = nd.spec.project;
  return nd;
}

namespace {

// Every leaf where `a` and `b` differ, as {"path", "from", "to"} (a missing side is absent).
void JsonDiff(const std::string& path, const json::value* a, const json::value* b, json::array& out) {
  if (a && b && *a == *b) return;
  if (a && b && a->is_object() && b->is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a->as_object()) keys.insert(std::string(k));
    for (const auto& [k, v] : b->as_object()) keys.insert(std::string(k));
    for (const std::string& k : keys) {
      JsonDiff(path.empty() ? k : path + "." + k, a->as_object().if_contains(k), b->as_object().if_contains(k), out);
    }
    return;
  }
  if (a && b && a->is_array() && b->is_array()) {
    const size_t n = std::max(a->as_array().size(), b->as_array().size());
    for (size_t i = 0; i < n; ++i) {
      JsonDiff(fmt::format("{}[{}]", path, i), i < a->as_array().size() ? &a->as_array()[i] : nullptr,
               i < b->as_array().size() ? &b->as_array()[i] : nullptr, out);
    }
    return;
  }
  json::object change{{"path", path}};
  if (a) change["from"] = *a;
  if (b) change["to"] = *b;
  out.emplace_back(std::move(change));
}

}  // namespace

// What deploying `nd` would change against the group's active deployment, container by container:
// both rendered as the controller renders (the active one as it is, the new one with the project's
// current env) under one id, so only real differences show (an image, an env var, a size, a route).
StatusOr<json::object> Api::Diff(const NewDeployment& nd) {
  ASSIGN_OR_RETURN(std::vector<Deployment> live, deployments_.Unfinished());
  const Deployment* active = nullptr;
  for (const Deployment& d : live) {
    if (d.active && d.project == nd.project && d.group == nd.group) active = &d;
  }
  Deployment incoming;
  incoming.id = active ? active->id : "00000000-000000-none";
  incoming.project = nd.project;
  incoming.group = nd.group;
  incoming.spec = nd.spec;
  ASSIGN_OR_RETURN(std::vector<EnvVar> env, deployments_.ListEnv(nd.project));
  for (const EnvVar& e : env) (e.secret ? incoming.secrets : incoming.env)[e.name] = e.value;
  ControllerOptions o;
  o.settings = settings_;
  o.ssm_prefix = backends_.ssm_prefix;
  ASSIGN_OR_RETURN(std::vector<Workload> next, RenderDeployment(o, incoming));
  std::map<std::string, const Workload*> before_by_container;
  std::vector<Workload> before;
  if (active) {
    ASSIGN_OR_RETURN(before, RenderDeployment(o, *active));
    for (const Workload& w : before) before_by_container[w.container] = &w;
  }
  auto comparable = [](const Workload& w) {
    json::object service = w.service;
    service.erase("tags");  // the content hash rides in the tags: it moves whenever the definition does
    return json::value(json::object{{"taskDefinition", w.task_definition}, {"service", std::move(service)}});
  };
  json::array containers;
  for (const Workload& w : next) {
    json::array changes;
    auto it = before_by_container.find(w.container);
    const json::value now = comparable(w);
    if (it == before_by_container.end()) {
      containers.emplace_back(json::object{{"container", w.container}, {"added", true}, {"changes", json::array{}}});
      continue;
    }
    const json::value was = comparable(*it->second);
    JsonDiff("", &was, &now, changes);
    before_by_container.erase(it);
    containers.emplace_back(json::object{{"container", w.container}, {"changes", std::move(changes)}});
  }
  for (const auto& [name, w] : before_by_container) {
    containers.emplace_back(json::object{{"container", name}, {"removed", true}, {"changes", json::array{}}});
  }
  json::object out{{"project", nd.project}, {"group", nd.group}, {"containers", std::move(containers)}};
  out["active"] = active ? json::value(active->id) : json::value(nullptr);
  return out;
}

// D11: the deployment's streams are "<prefix>/<project>/<deployment>/<container>/<task>" in the
// install's group (render.h's awslogs-stream-prefix, then the driver's container and task).
http::Response Api::Logs(const Deployment& d, std::string_view query) {
  if (!backends_.aws || settings_.log_group.empty()) {
    return Fail(FailedPrecondition("this controller ships no logs (it has no log group)"));
  }
  if (Param(query, "follow") == "1") {
    if (follows_->fetch_add(1) >= backends_.max_follows) {
      follows_->fetch_sub(1);
      return Fail(Unavailable(fmt::format("too many log follows at once (at most {}); try again when one ends",
                                          backends_.max_follows)));
    }
    // The slot is the stream's: freed when the stream ends, or with the response if it is never sent.
    std::shared_ptr<void> slot(nullptr, [follows = follows_](void*) { follows->fetch_sub(1); });
    FollowRequest f;
    f.group_arn = LogGroupArn();
    f.group_name = settings_.log_group;
    f.stream_prefix = fmt::format("{}/{}/{}/", settings_.resource_prefix, d.project, d.id);
    const std::string start = Param(query, "start_ms");
    f.start_ms = start.empty() ? EpochMillis(SystemClock::Get().Now()) : std::strtoll(start.c_str(), nullptr, 10);
    f.poll_interval = backends_.follow_poll_interval;
    http::Response r;
    r.SetHeader("Content-Type", "application/x-ndjson");
    r.stream = [aws = backends_.aws, f = std::move(f), slot = std::move(slot)](http::BodyWriter& w) {
      FollowLogs(*aws, f, [&w](std::string_view line) { return w.Write(line); });
    };
    return r;
  }
  json::object body{{"logGroupName", settings_.log_group},
                    {"logStreamNamePrefix", fmt::format("{}/{}/{}/", settings_.resource_prefix, d.project, d.id)},
                    {"limit", 1000}};
  if (std::string start = Param(query, "start_ms"); !start.empty()) body["startTime"] = std::strtoll(start.c_str(), nullptr, 10);
  if (std::string token = Param(query, "next_token"); !token.empty()) body["nextToken"] = token;
  StatusOr<json::value> v = backends_.aws->Call(AwsService::kLogs, "FilterLogEvents", body);
  if (!v.ok()) {
    // No group yet: nothing has logged.
    if (IsError(v.status(), Error::kNotFound)) return Json(200, json::object{{"events", json::array{}}});
    return Fail(Unavailable(v.status().message()));
  }
  json::array events;
  if (const json::value* es = v->as_object().if_contains("events"); es && es->is_array()) {
    for (const json::value& e : es->as_array()) {
      if (!e.is_object()) continue;
      const json::object& o = e.as_object();
      json::object out{{"stream", Str(o, "logStreamName")}, {"message", Str(o, "message")}, {"id", Str(o, "eventId")}};
      if (const json::value* t = o.if_contains("timestamp"); t && t->is_number()) out["timestamp"] = t->to_number<int64_t>();
      events.emplace_back(std::move(out));
    }
  }
  json::object out{{"events", std::move(events)}};
  if (std::string next = Str(v->as_object(), "nextToken"); !next.empty()) out["next_token"] = next;
  return Json(200, out);
}

std::string Api::LogGroupArn() {
  std::lock_guard lock(arn_mu_);
  if (!log_group_arn_.empty()) return log_group_arn_;
  if (!backends_.query) return settings_.log_group;
  StatusOr<std::string> who = backends_.query->Query("sts", {{"Action", "GetCallerIdentity"}, {"Version", "2011-06-15"}});
  if (!who.ok()) return settings_.log_group;
  auto text = [&](std::string_view tag) {
    const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
    const size_t a = who->find(open);
    const size_t b = a == std::string::npos ? a : who->find(close, a);
    return b == std::string::npos ? std::string() : who->substr(a + open.size(), b - a - open.size());
  };
  const std::string account = text("Account"), caller = text("Arn");
  // The caller's own ARN names the partition ("aws", "aws-cn", ...).
  const size_t colon = caller.find(':', 4);
  const std::string partition = caller.starts_with("arn:") && colon != std::string::npos ? caller.substr(4, colon - 4) : "aws";
  if (account.empty()) return settings_.log_group;
  log_group_arn_ = fmt::format("arn:{}:logs:{}:{}:log-group:{}", partition, settings_.log_region, account, settings_.log_group);
  return log_group_arn_;
}

std::optional<http::Response> Api::Identity(const http::Request& req) {
  const std::string_view path = req.Path();
  if (path != "/v1/identity/token" && path != "/.well-known/jwks.json" && path != "/.well-known/openid-configuration") {
    return std::nullopt;
  }
  if (!backends_.issuer) return Json(404, json::object{{"error", "this controller issues no workload identity tokens"}});
  const Issuer& issuer = *backends_.issuer;
  if (path != "/v1/identity/token") {
    if (req.method != "GET") return Json(405, json::object{{"error", "GET only"}});
    return Json(200, path == "/.well-known/jwks.json" ? issuer.Jwks() : issuer.OpenIdConfiguration());
  }
  if (req.method != "POST") return Json(405, json::object{{"error", "POST only"}});
  const TimePoint now = SystemClock::Get().Now();
  // The address without its port: a sidecar's next connection comes from another port.
  std::string source(req.remote_address.substr(0, req.remote_address.rfind(':')));
  if (!exchange_limiter_.SourceMayTry(source, now)) {
    return Json(429, json::object{{"error", "too many exchanges with credentials that match nothing from this address; "
                                            "slow down"}});
  }
  auto refuse = [&] {
    exchange_limiter_.SourceFailed(source, now);
    return Json(401, json::object{{"error", "a deployment's identity credential is required (Authorization: Bearer "
                                            "<credential>)"}});
  };
  std::string_view auth = req.GetHeader("Authorization");
  if (!auth.starts_with("Bearer ")) return refuse();
  const std::string_view credential = auth.substr(7);
  std::optional<std::string> id = IdentityCredentialDeployment(credential);
  if (!id) return refuse();
  StatusOr<Deployment> d = deployments_.Get(*id);
  if (!d.ok() && d.status().code() == StatusCode::kNotFound) return refuse();
  if (!d.ok()) return Fail(Unavailable(d.status().message()));
  const std::string hash = IdentityCredentialHash(credential);
  if (d->identity_credential_hash.size() != hash.size() ||
      CRYPTO_memcmp(d->identity_credential_hash.data(), hash.data(), hash.size()) != 0) {
    return refuse();
  }
  if (!exchange_limiter_.DeploymentMayMint(d->id, now)) {
    return Json(429, json::object{{"error", fmt::format("deployment {} is exchanging faster than its budget; slow down",
                                                        d->id)}});
  }
  // Revocation: a deployment that should no longer run mints nothing more.
  if (IsTerminal(d->state)) {
    return Json(403, json::object{{"error", fmt::format("deployment {} is {}: it gets no more tokens", d->id,
                                                        StateName(d->state))}});
  }
  StatusOr<json::object> body = Body(req);
  if (!body.ok()) return Fail(body.status());
  const json::value* audience = body->if_contains("audience");
  if (!audience || !audience->is_string() || audience->as_string().empty() || audience->as_string().size() > 256) {
    return Fail(InvalidArgument("audience must be a string of 1 to 256 characters"));
  }
  std::optional<int64_t> ttl;
  if (const json::value* t = body->if_contains("ttl_seconds")) {
    if (!t->is_int64()) return Fail(InvalidArgument("ttl_seconds must be an integer"));
    ttl = t->as_int64();
  }
  StatusOr<Issuer::Token> token = issuer.Mint(*d, settings_.controller_class, audience->as_string(), ttl, now);
  if (!token.ok()) return Fail(token.status());
  return Json(200, json::object{{"token", token->jwt}, {"expires_in", token->expires_in}, {"token_type", "Bearer"}});
}

http::Response Api::Handle(const http::Request& req) {
  if (std::optional<http::Response> r = Identity(req)) return std::move(*r);
  std::string_view auth = req.GetHeader("Authorization");
  std::string want = "Bearer " + token_;
  if (token_.empty() || auth.size() != want.size() || CRYPTO_memcmp(auth.data(), want.data(), want.size()) != 0) {
    return Json(401, json::object{{"error", "a valid token is required (Authorization: Bearer <token>)"}});
  }
  const std::vector<std::string> p = Split(req.Path());
  const std::string_view m = req.method;
  if (p.size() < 2 || p[0] != "v1") return Json(404, json::object{{"error", "no such endpoint"}});

  if (p[1] == "diff" && p.size() == 2 && m == "POST") {
    StatusOr<json::object> body = Body(req);
    if (!body.ok()) return Fail(body.status());
    StatusOr<NewDeployment> nd = Requested(*body);
    if (!nd.ok()) return Fail(nd.status());
    StatusOr<json::object> diff = Diff(*nd);
    if (!diff.ok()) return Fail(diff.status());
    return Json(200, *diff);
  }
  if (p[1] == "deployments" && p.size() == 2 && m == "POST") {
    StatusOr<json::object> body = Body(req);
    if (!body.ok()) return Fail(body.status());
    StatusOr<NewDeployment> requested = Requested(*body);
    if (!requested.ok()) return Fail(requested.status());
    NewDeployment& nd = *requested;
    if (const json::value* e = body->if_contains("expire_seconds"); e && e->is_int64() && e->as_int64() > 0) {
      constexpr int64_t kMaxExpire = 10LL * 365 * 86400;  // ten years: far below a time point's range
      if (e->as_int64() > kMaxExpire) {
        return Fail(InvalidArgument(fmt::format("expire_seconds must be at most {} (ten years)", kMaxExpire)));
      }
      nd.expire_after = std::chrono::seconds(e->as_int64());
    }
    nd.host_of = [this](std::string_view project, std::string_view group) { return AppHost(settings_, project, group); };
    StatusOr<Deployment> d = deployments_.Create(nd);
    if (!d.ok()) return Fail(d.status());
    if (changed_) changed_();
    return Json(201, DeploymentJson(*d, settings_));
  }
  if (p[1] == "deployments" && p.size() == 2 && m == "GET") {
    int limit = 50;
    if (std::string l = Param(req.Query(), "limit"); !l.empty()) limit = std::clamp(std::atoi(l.c_str()), 1, 100);
    StatusOr<DeploymentPage> page = deployments_.List(Param(req.Query(), "project"), Param(req.Query(), "group"),
                                                      Param(req.Query(), "next_token"), limit);
    if (!page.ok()) return Fail(page.status());
    json::array out;
    for (const Deployment& d : page->deployments) out.emplace_back(DeploymentJson(d, settings_));
    json::object o{{"deployments", std::move(out)}};
    if (!page->next_token.empty()) o["next_token"] = page->next_token;
    return Json(200, o);
  }
  if (p[1] == "deployments" && p.size() >= 3) {
    const std::string& id = p[2];
    if (p.size() == 3 && m == "GET") {
      StatusOr<Deployment> d = deployments_.Get(id);
      if (!d.ok()) return Fail(d.status());
      return Json(200, DeploymentJson(*d, settings_));
    }
    if (p.size() == 4 && p[3] == "events" && m == "GET") {
      uint64_t after = std::strtoull(Param(req.Query(), "after").c_str(), nullptr, 10);
      StatusOr<Deployment> d = deployments_.Get(id);
      if (!d.ok()) return Fail(d.status());
      StatusOr<std::vector<Event>> events = deployments_.Events(id, after, 500);
      if (!events.ok()) return Fail(events.status());
      json::array out;
      for (const Event& e : *events) {
        out.emplace_back(json::object{{"seq", e.seq}, {"at", Iso(e.at)}, {"kind", e.kind}, {"message", e.message}});
      }
      return Json(200, json::object{{"events", std::move(out)}, {"state", StateName(d->state)}, {"reason", d->reason}});
    }
    if (p.size() == 4 && p[3] == "logs" && m == "GET") {
      StatusOr<Deployment> d = deployments_.Get(id);
      if (!d.ok()) return Fail(d.status());
      return Logs(*d, req.Query());
    }
    if (p.size() == 4 && p[3] == "stop" && m == "POST") {
      Status s = deployments_.Stop(id, "stopped by a user");
      if (!s.ok()) return Fail(s);
      if (changed_) changed_();
      StatusOr<Deployment> d = deployments_.Get(id);
      if (!d.ok()) return Fail(d.status());
      return Json(200, DeploymentJson(*d, settings_));
    }
  }
  if (p[1] == "verify" && p.size() == 2 && m == "GET") {
    if (!backends_.aws || !backends_.query) return Fail(FailedPrecondition("this controller cannot run its preflight"));
    json::array checks;
    for (const Check& c : Verify(*backends_.aws, *backends_.query, backends_.edge, settings_, backends_.verify)) {
      checks.emplace_back(json::object{{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
    }
    return Json(200, json::object{{"checks", std::move(checks)}});
  }
  if (p[1] == "projects" && p.size() >= 4 && p[3] == "env") {
    const std::string& project = p[2];
    if (p.size() == 4 && m == "GET") {
      StatusOr<std::vector<EnvVar>> env = deployments_.ListEnv(project);
      if (!env.ok()) return Fail(env.status());
      json::array out;
      for (const EnvVar& e : *env) {
        json::object o{{"name", e.name}, {"secret", e.secret}};
        if (!e.secret) o["value"] = e.value;
        out.emplace_back(std::move(o));
      }
      return Json(200, json::object{{"env", std::move(out)}});
    }
    if (p.size() == 5 && m == "PUT") {
      StatusOr<json::object> body = Body(req);
      if (!body.ok()) return Fail(body.status());
      const json::value* secret = body->if_contains("secret");
      Status s = deployments_.SetEnv(project, p[4], Str(*body, "value"), secret && secret->is_bool() && secret->as_bool());
      if (!s.ok()) return Fail(s);
      return Json(200, json::object{{"name", p[4]}});
    }
    if (p.size() == 5 && m == "DELETE") {
      Status s = deployments_.UnsetEnv(project, p[4]);
      if (!s.ok()) return Fail(s);
      return Json(200, json::object{{"name", p[4]}});
    }
  }
  return Json(404, json::object{{"error", "no such endpoint"}});
}

}  // namespace paddock::deploy
