// The controller's HTTP API (deploy/api.h) over a real store: the token, creating from paddock.toml
// and --from, the host-collision refusal, events, stop, env, and error codes; and logs?follow=1
// (deploy/follow.h) over a scripted CloudWatch Logs: the seam between its backfill and its live
// tail, and the fallback to polling.
#include "deploy/api.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <deque>
#include <filesystem>

#include <boost/json.hpp>

#include "common/encoding.h"
#include "common/testing/fake_clock.h"
#include "deploy/deployments.h"
#include "deploy/follow.h"
#include "deploy/identity.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::deploy {
namespace {
namespace json = boost::json;

constexpr std::string_view kToml = R"([project]
name = "shop"

[containers.web]
image = "reg/web:1"
port = 8080

[routes]
"/" = "web"
)";

class ApiTest : public ::testing::Test {
 protected:
  ApiTest() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-deploy-api-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    auto s = store::SqliteStore::Open({.path = dir_ + "/deploy.db", .durable = false, .schemas = {kSchema}});
    if (!s.ok()) std::abort();
    store_ = std::move(*s);
    deployments_ = std::make_unique<Deployments>(*store_, clock_);
    api_ = std::make_unique<Api>(*deployments_, ControllerSettings{}, "sesame", [this] { ++changes_; });
  }
  ~ApiTest() override {
    store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // (status, parsed body)
  std::pair<int, json::value> Call(std::string method, std::string target, const json::object* body = nullptr,
                                   std::string token = "sesame") {
    http::Request req;
    req.method = std::move(method);
    req.target = std::move(target);
    if (!token.empty()) req.headers.push_back({"Authorization", "Bearer " + token});
    if (body) req.body = json::serialize(*body);
    http::Response r = api_->Handle(req);
    clock_.Advance(std::chrono::seconds(2));
    return {r.status, json::parse(r.body)};
  }

  std::string Create(json::object body) {
    auto [status, v] = Call("POST", "/v1/deployments", &body);
    EXPECT_EQ(status, 201) << v;
    return status == 201 ? std::string(v.at("id").as_string()) : "";
  }

  std::string dir_;
  paddock::testing::FakeClock clock_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Deployments> deployments_;
  std::unique_ptr<Api> api_;
  int changes_ = 0;
};

TEST_F(ApiTest, EveryRequestWantsTheToken) {
  for (std::string token : {"", "wrong", "sesamesesame"}) {
    auto [status, v] = Call("GET", "/v1/deployments", nullptr, token);
    EXPECT_EQ(status, 401) << token;
  }
  EXPECT_EQ(Call("GET", "/v1/deployments").first, 200);
}

TEST_F(ApiTest, ACreatedDeploymentIsPendingWithItsUrlAndNudgesTheController) {
  std::string id = Create({{"toml", kToml}, {"images", json::array{"web=reg/web:2"}}});
  EXPECT_EQ(changes_, 1);
  auto [status, v] = Call("GET", "/v1/deployments/" + id);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(v.at("state"), "Pending");
  EXPECT_EQ(v.at("url"), "http://shop.localhost:8000/");
  EXPECT_EQ(v.at("spec").at("containers").at(0).at("image"), "reg/web:2");
}

TEST_F(ApiTest, ABadSpecIsA400WithItsLineAndCreatesNothing) {
  json::object body{{"toml", "[project]\nname = \"shop\"\n[containers.web]\nimage = \"x\"\nport = 0\n"}};
  auto [status, v] = Call("POST", "/v1/deployments", &body);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(v.at("error"), "paddock.toml:5: containers.web.port must be between 1 and 65535 (got 0)");
  EXPECT_EQ(Call("GET", "/v1/deployments").second.at("deployments").as_array().size(), 0u);
  EXPECT_EQ(changes_, 0);
}

TEST_F(ApiTest, DiffShowsWhatADeployWouldChangeAgainstTheActiveDeployment) {
  json::object first{{"toml", kToml}};
  auto [s0, none] = Call("POST", "/v1/diff", &first);
  ASSERT_EQ(s0, 200) << none;
  EXPECT_TRUE(none.at("active").is_null());
  EXPECT_EQ(none.at("containers").at(0).at("added"), true);

  std::string id = Create({{"toml", kToml}});
  ASSERT_TRUE(deployments_->Transition(id, State::kDeploying, "", {}).ok());
  ASSERT_TRUE(deployments_->Transition(id, State::kHealthy, "", {}).ok());
  json::object same{{"toml", kToml}};
  auto [s1, unchanged] = Call("POST", "/v1/diff", &same);
  ASSERT_EQ(s1, 200) << unchanged;
  EXPECT_EQ(unchanged.at("active"), json::value(id));
  EXPECT_EQ(unchanged.at("containers").at(0).at("changes"), json::array{}) << "the same spec changes nothing";

  json::object next{{"toml", kToml}, {"images", json::array{"web=reg/web:2"}}};
  auto [s2, changed] = Call("POST", "/v1/diff", &next);
  ASSERT_EQ(s2, 200) << changed;
  EXPECT_EQ(changed.at("containers").at(0).at("changes"),
            json::parse(R"([{"path": "taskDefinition.containerDefinitions[0].image", "from": "reg/web:1",
                             "to": "reg/web:2"}])"));
  EXPECT_EQ(changes_, 1) << "a diff deploys nothing";
}

TEST_F(ApiTest, AnExpiryBeyondTenYearsIsRefused) {
  json::object body{{"toml", kToml}, {"expire_seconds", int64_t{9'300'000'000}}};
  auto [status, v] = Call("POST", "/v1/deployments", &body);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(v.at("error"), "expire_seconds must be at most 315360000 (ten years)");
}

TEST_F(ApiTest, FromRedeploysTheExactSpecOfAnEarlierDeployment) {
  std::string first = Create({{"toml", kToml}, {"images", json::array{"web=reg/web:7"}}});
  std::string again = Create({{"from", first}});
  auto a = Call("GET", "/v1/deployments/" + first).second;
  auto b = Call("GET", "/v1/deployments/" + again).second;
  EXPECT_EQ(a.at("spec"), b.at("spec"));
  EXPECT_EQ(b.at("from").as_string(), first);
  json::object missing{{"from", "20200101-000000-zzzz"}};
  EXPECT_EQ(Call("POST", "/v1/deployments", &missing).first, 404);
}

TEST_F(ApiTest, TwoProjectsCannotShareOneHost) {
  Create({{"toml", kToml}, {"group", "staging"}});  // shop-staging.localhost
  std::string other(kToml);
  other.replace(other.find("\"shop\""), 6, "\"shop-staging\"");
  json::object body{{"toml", other}};
  auto [status, v] = Call("POST", "/v1/deployments", &body);
  EXPECT_EQ(status, 409);
  EXPECT_EQ(v.at("error"),
            "shop-staging.localhost is already the host of project shop (group staging): choose another project or "
            "group name");
}

TEST_F(ApiTest, StopEndsADeploymentAndEventsSayWhy) {
  std::string id = Create({{"toml", kToml}});
  EXPECT_EQ(Call("POST", "/v1/deployments/" + id + "/stop").first, 200);
  EXPECT_EQ(Call("POST", "/v1/deployments/" + id + "/stop").first, 409) << "already stopped";
  auto [status, v] = Call("GET", "/v1/deployments/" + id + "/events?after=0");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(v.at("state"), "Stopped");
  const json::array& events = v.at("events").as_array();
  ASSERT_FALSE(events.empty());
  EXPECT_NE(std::string(events.back().at("message").as_string()).find("stopped by a user"), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/deployments/nope").first, 404);
}

TEST_F(ApiTest, SecretEnvValuesAreNeverShown) {
  json::object secret{{"value", "hunter2"}, {"secret", true}};
  json::object plain{{"value", "hello"}};
  EXPECT_EQ(Call("PUT", "/v1/projects/shop/env/DB_PASSWORD", &secret).first, 200);
  EXPECT_EQ(Call("PUT", "/v1/projects/shop/env/GREETING", &plain).first, 200);
  auto [status, v] = Call("GET", "/v1/projects/shop/env");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(json::serialize(v).find("hunter2"), std::string::npos);
  std::string id = Create({{"toml", kToml}});
  auto d = Call("GET", "/v1/deployments/" + id).second;
  EXPECT_EQ(json::serialize(d).find("hunter2"), std::string::npos);
  EXPECT_EQ(d.at("secret_env"), json::parse(R"(["DB_PASSWORD"])"));
  json::object bad{{"value", "x"}};
  EXPECT_EQ(Call("PUT", "/v1/projects/shop/env/PORT", &bad).first, 400);
  EXPECT_EQ(Call("DELETE", "/v1/projects/shop/env/NOPE").first, 404);
}

// CloudWatch Logs as a script: FilterLogEvents answers its pages in turn (then none); each
// StartLiveTail plays one session — sessionStart, then its updates — and ends as the server's end,
// or is refused with `refusal`.
class ScriptedLogs final : public Aws, public QueryAws {
 public:
  StatusOr<json::value> Call(AwsService service, std::string_view action, const json::object& body) override {
    EXPECT_EQ(service, AwsService::kLogs);
    EXPECT_EQ(action, "FilterLogEvents");
    filters.push_back(body);
    if (pages.empty()) return json::value(json::object{{"events", json::array{}}});
    json::value page = pages.front();
    pages.pop_front();
    return page;
  }
  StatusOr<LiveTailEnd> StartLiveTail(const json::object& body, const LiveTailHandler& handler) override {
    tails.push_back(body);
    if (!refusal.ok()) return refusal;
    if (sessions.empty()) return Unavailable("no more sessions in the script");
    std::vector<LiveTailUpdate> session = sessions.front();
    sessions.pop_front();
    if (!handler.started()) return LiveTailEnd::kStoppedByCaller;
    for (const LiveTailUpdate& u : session) {
      if (!handler.update(u)) return LiveTailEnd::kStoppedByCaller;
    }
    return LiveTailEnd::kEndedByServer;
  }
  StatusOr<std::string> Query(std::string_view service, const std::vector<std::pair<std::string, std::string>>&) override {
    EXPECT_EQ(service, "sts");
    return std::string("<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/c</Arn>"
                       "<Account>123456789012</Account></GetCallerIdentityResult>");
  }

  std::deque<json::value> pages;
  std::deque<std::vector<LiveTailUpdate>> sessions;
  Status refusal;
  std::vector<json::object> filters, tails;
};

LiveTailEvent Ev(std::string message, int64_t ts, int64_t ingested) {
  return {.stream = "paddock/shop/x/web/t1", .message = std::move(message), .timestamp_ms = ts, .ingestion_ms = ingested};
}

json::value Page(const std::vector<LiveTailEvent>& events) {
  json::array out;
  for (const LiveTailEvent& e : events) {
    out.push_back(json::object{{"logStreamName", e.stream}, {"message", e.message}, {"timestamp", e.timestamp_ms},
                               {"ingestionTime", e.ingestion_ms}, {"eventId", e.message}});
  }
  return json::object{{"events", std::move(out)}};
}

class ApiFollowTest : public ApiTest {
 protected:
  ApiFollowTest() {
    ApiBackends backends;
    backends.aws = &logs_;
    backends.query = &logs_;
    backends.follow_poll_interval = std::chrono::milliseconds(0);
    api_ = std::make_unique<Api>(*deployments_, ControllerSettings{}, "sesame", nullptr, backends);
    id_ = Create({{"toml", kToml}});
  }

  // The streamed lines of logs?follow=1 until `enough` says the reader leaves (after that line).
  std::vector<std::string> Follow(std::function<bool(const std::vector<std::string>&)> enough) {
    http::Request req;
    req.method = "GET";
    req.target = "/v1/deployments/" + id_ + "/logs?follow=1&start_ms=50";
    req.headers.push_back({"Authorization", "Bearer sesame"});
    http::Response r = api_->Handle(req);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.GetHeader("Content-Type"), "application/x-ndjson");
    struct Lines final : http::BodyWriter {
      bool Write(std::string_view data) override {
        EXPECT_TRUE(data.ends_with('\n')) << data;
        lines.emplace_back(data.substr(0, data.size() - 1));
        return !enough(lines);
      }
      std::function<bool(const std::vector<std::string>&)> enough;
      std::vector<std::string> lines;
    } w;
    w.enough = std::move(enough);
    if (r.stream) r.stream(w);
    return w.lines;
  }

  // The messages of the event lines, in order.
  static std::vector<std::string> Messages(const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (const std::string& l : lines) {
      if (l.empty()) continue;
      json::value v = json::parse(l);
      if (v.as_object().contains("message")) out.emplace_back(v.at("message").as_string());
    }
    return out;
  }

  static std::function<bool(const std::vector<std::string>&)> Until(std::string message) {
    return [message](const std::vector<std::string>& lines) {
      return !lines.back().empty() && lines.back().find("\"" + message + "\"") != std::string::npos;
    };
  }

  ScriptedLogs logs_;
  std::string id_;
};

// The seam: B was ingested after the tail began and before the backfill read it, so both hold it;
// it is given once. A session the server ends is followed by another whose backfill (from five
// minutes before the newest line) repeats B and C and adds D, which the tail missed between the
// sessions. Every line once, none lost, in the order they came.
TEST_F(ApiFollowTest, TheBackfillAndTheLiveTailMeetWithoutDuplicateOrGap) {
  logs_.pages = {Page({Ev("A", 100, 100), Ev("B", 200, 300)}), Page({Ev("B", 200, 300), Ev("C", 400, 400), Ev("D", 500, 500)})};
  logs_.sessions = {{{.events = {Ev("B", 200, 300), Ev("C", 400, 400)}}, {}}, {{.events = {Ev("E", 600, 600)}}}};
  std::vector<std::string> lines = Follow(Until("E"));
  EXPECT_EQ(Messages(lines), (std::vector<std::string>{"A", "B", "C", "D", "E"}));
  EXPECT_NE(std::find(lines.begin(), lines.end(), ""), lines.end()) << "an empty update is a heartbeat line";
  EXPECT_EQ(json::parse(lines[0]), json::parse(R"({"stream":"paddock/shop/x/web/t1","message":"A","timestamp":100})"));

  ASSERT_EQ(logs_.tails.size(), 2u);
  EXPECT_EQ(logs_.tails[0].at("logGroupIdentifiers"), json::array{"arn:aws:logs:us-east-1:123456789012:log-group:/paddock/apps"});
  EXPECT_EQ(logs_.tails[0].at("logStreamNamePrefixes"), json::array{json::string("paddock/shop/" + id_ + "/")});
  ASSERT_EQ(logs_.filters.size(), 2u);
  EXPECT_EQ(logs_.filters[0].at("startTime"), 50);
  EXPECT_EQ(logs_.filters[0].at("logGroupName"), "/paddock/apps");
  EXPECT_EQ(logs_.filters[0].at("logStreamNamePrefix"), json::string("paddock/shop/" + id_ + "/"));
  EXPECT_EQ(logs_.filters[1].at("startTime"), 50) << "five minutes before C's 400 is before start_ms";
}

// A StartLiveTail refused (here AccessDenied) turns the follow into polling, said once; each poll
// reads from the newest line's time again, and a line it read before is not given twice.
TEST_F(ApiFollowTest, ARefusedLiveTailFallsBackToPollingAndSaysSoOnce) {
  logs_.refusal = PermissionDenied("AccessDeniedException: not allowed", Error::kDenied);
  logs_.pages = {Page({Ev("A", 100, 100)}), Page({Ev("A", 100, 100)}), Page({Ev("A", 100, 100), Ev("B", 100, 150)})};
  std::vector<std::string> lines = Follow(Until("B"));
  EXPECT_EQ(Messages(lines), (std::vector<std::string>{"A", "B"}));
  int notices = 0;
  for (const std::string& l : lines) {
    if (l.find("\"notice\"") == std::string::npos) continue;
    ++notices;
    EXPECT_EQ(json::parse(l).at("notice"),
              "StartLiveTail was refused (AccessDeniedException: not allowed); following by polling FilterLogEvents "
              "every 0 ms");
  }
  EXPECT_EQ(notices, 1);
  EXPECT_EQ(logs_.tails.size(), 1u) << "tried once";
  ASSERT_EQ(logs_.filters.size(), 3u);
  EXPECT_EQ(logs_.filters[0].at("startTime"), 50);
  EXPECT_EQ(logs_.filters[1].at("startTime"), 100);
}

// Each follow holds a server worker while it streams, so only max_follows run at once: one more is
// 503 saying why, and a follow's slot comes back when its response goes (streamed or not).
TEST_F(ApiFollowTest, FollowsBeyondTheCapAreRefusedUntilOneEnds) {
  ApiBackends backends;
  backends.aws = &logs_;
  backends.query = &logs_;
  backends.max_follows = 2;
  api_ = std::make_unique<Api>(*deployments_, ControllerSettings{}, "sesame", nullptr, backends);
  http::Request req;
  req.method = "GET";
  req.target = "/v1/deployments/" + id_ + "/logs?follow=1";
  req.headers.push_back({"Authorization", "Bearer sesame"});
  auto first = std::make_unique<http::Response>(api_->Handle(req));
  http::Response second = api_->Handle(req);
  ASSERT_EQ(first->status, 200);
  ASSERT_EQ(second.status, 200);
  http::Response third = api_->Handle(req);
  EXPECT_EQ(third.status, 503);
  EXPECT_EQ(json::parse(third.body).at("error"), "too many log follows at once (at most 2); try again when one ends");
  EXPECT_FALSE(third.stream);

  first.reset();
  EXPECT_EQ(api_->Handle(req).status, 200) << "the ended follow's slot is free again";
}

// Distinct lines with the same text in the same millisecond are not taken for one another: each
// source holds each event once, so a source's copies beyond those given are new.
TEST(SeenEventsTest, TwinLinesAreCountedNotMerged) {
  SeenEvents seen(300'000);
  seen.NewSource();  // a backfill holding the twins X, X
  EXPECT_TRUE(seen.Admit(Ev("X", 1, 1)));
  EXPECT_TRUE(seen.Admit(Ev("X", 1, 1)));
  seen.NewSource();  // the tail: the two, and a third written since
  EXPECT_FALSE(seen.Admit(Ev("X", 1, 1)));
  EXPECT_FALSE(seen.Admit(Ev("X", 1, 1)));
  EXPECT_TRUE(seen.Admit(Ev("X", 1, 1)));
  EXPECT_TRUE(seen.Admit(Ev("X", 1, 2))) << "another ingestion: another event";
}

TEST(SeenEventsTest, KeysOlderThanTheWindowAreForgotten) {
  SeenEvents seen(1000);
  seen.NewSource();
  EXPECT_TRUE(seen.Admit(Ev("old", 1, 1)));
  for (int i = 0; i < 5000; ++i) EXPECT_TRUE(seen.Admit(Ev("n" + std::to_string(i), 5000 + i, 5000 + i)));
  // Pruned every 1,024 admissions: the window's 1,000 keys and those admitted since.
  EXPECT_LT(seen.size(), 2100u);
  seen.NewSource();
  EXPECT_TRUE(seen.Admit(Ev("old", 1, 1))) << "forgotten: a source holding it again gives it again";
  EXPECT_FALSE(seen.Admit(Ev("n4999", 9999, 9999))) << "within the window: remembered";
}

}  // namespace
}  // namespace paddock::deploy

namespace paddock::deploy {
namespace {

// ---- D8: the exchange and the issuer's keys -----------------------------------------------------

class ApiIdentityTest : public ApiTest {
 protected:
  ApiIdentityTest() {
    StatusOr<std::unique_ptr<Issuer>> issuer =
        Issuer::Load(dir_ + "/identity.key", "http://169.254.170.2/paddock", std::chrono::seconds(900));
    if (!issuer.ok()) std::abort();
    issuer_ = std::move(*issuer);
    ApiBackends backends;
    backends.issuer = issuer_.get();
    backends.exchange_per_deployment = {4, 0};      // no refill: the counts below are exact
    backends.exchange_per_failing_source = {2, 0};
    api_ = std::make_unique<Api>(*deployments_, ControllerSettings{}, "sesame", nullptr, backends);
    id_ = Create({{"toml", kToml}});
    credential_ = NewIdentityCredential(id_);
    if (!deployments_->SetIdentityCredentialHash(id_, IdentityCredentialHash(credential_), {}).ok()) std::abort();
  }

  std::pair<int, json::value> Exchange(const std::string& credential, json::object body,
                                       std::string source = "vpc-1/10.0.0.5:40000") {
    http::Request req;
    req.method = "POST";
    req.target = "/v1/identity/token";
    req.remote_address = std::move(source);
    if (!credential.empty()) req.headers.push_back({"Authorization", "Bearer " + credential});
    req.body = json::serialize(body);
    http::Response r = api_->Handle(req);
    return {r.status, json::parse(r.body)};
  }

  static json::value Part(std::string_view jwt, int n) {
    size_t start = 0;
    for (int i = 0; i < n; ++i) start = jwt.find('.', start) + 1;
    StatusOr<std::string> text = Base64UrlDecode(jwt.substr(start, jwt.find('.', start) - start));
    return text.ok() ? json::parse(*text) : json::value();
  }

  std::unique_ptr<Issuer> issuer_;
  std::string id_, credential_;
};

// A task's credential (no API token) buys a token for any audience, its lifetime capped; the
// keys and discovery document are public.
TEST_F(ApiIdentityTest, ACredentialBuysASignedTokenForTheDeploymentAndTheKeysArePublic) {
  auto [status, v] = Exchange(credential_, {{"audience", "https://api.example.com"}});
  ASSERT_EQ(status, 200) << v;
  EXPECT_EQ(v.at("expires_in"), 900) << "the cap is the default";
  EXPECT_EQ(v.at("token_type"), "Bearer");
  const std::string jwt(v.at("token").as_string());
  const json::value header = Part(jwt, 0), claims = Part(jwt, 1);
  EXPECT_EQ(header.at("alg"), "ES256");
  EXPECT_EQ(header.at("kid"), json::string(issuer_->key_id()));
  EXPECT_EQ(claims.at("iss"), "http://169.254.170.2/paddock");
  EXPECT_EQ(claims.at("aud"), "https://api.example.com");
  EXPECT_EQ(claims.at("sub"), "default:shop:default");
  EXPECT_EQ(claims.at("paddock_deployment"), json::string(id_));
  EXPECT_EQ(claims.at("exp").as_int64() - claims.at("iat").as_int64(), 900);

  EXPECT_EQ(Exchange(credential_, {{"audience", "a"}, {"ttl_seconds", 120}}).second.at("expires_in"), 120);
  EXPECT_EQ(Exchange(credential_, {{"audience", "a"}, {"ttl_seconds", 86400}}).second.at("expires_in"), 900);
  auto [short_status, short_body] = Exchange(credential_, {{"audience", "a"}, {"ttl_seconds", 30}});
  EXPECT_EQ(short_status, 400);
  EXPECT_EQ(short_body.at("error"), "ttl_seconds must be at least 60 (got 30)");

  auto [jwks_status, jwks] = Call("GET", "/.well-known/jwks.json", nullptr, "");
  ASSERT_EQ(jwks_status, 200);
  const json::value& key = jwks.at("keys").at(0);
  EXPECT_EQ(key.at("kty"), "EC");
  EXPECT_EQ(key.at("crv"), "P-256");
  EXPECT_EQ(key.at("kid"), json::string(issuer_->key_id()));
  EXPECT_EQ(Base64UrlDecode(key.at("x").as_string())->size(), 32u);
  auto [oidc_status, oidc] = Call("GET", "/.well-known/openid-configuration", nullptr, "");
  ASSERT_EQ(oidc_status, 200);
  EXPECT_EQ(oidc.at("jwks_uri"), "http://169.254.170.2/paddock/.well-known/jwks.json");
}

// Refusals: no, a malformed or a wrong credential (401, charged to the address, which is then
// refused even a right one: 429), a finished deployment's (403), over the deployment's budget
// (429), a bad audience (400), a wrong method (405). The API's own token buys nothing here.
TEST_F(ApiIdentityTest, TheExchangeRefusesWhatItShouldAndSlowsGuessing) {
  EXPECT_EQ(Exchange("", {{"audience", "a"}}, "vpc-1/10.0.0.9:1").first, 401);
  EXPECT_EQ(Exchange("sesame", {{"audience", "a"}}, "vpc-1/10.0.0.9:2").first, 401) << "the API token is no credential";
  EXPECT_EQ(Exchange(credential_, {{"audience", "a"}}, "vpc-1/10.0.0.9:3").first, 429)
      << "two failures spent the address's budget";
  std::string wrong = credential_;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  EXPECT_EQ(Exchange(wrong, {{"audience", "a"}}, "vpc-2/10.0.0.9:1").first, 401) << "another network's address is another";
  EXPECT_EQ(Exchange(NewIdentityCredential("20990101-000000-zzzz"), {{"audience", "a"}}, "vpc-3/10.0.0.1:1").first, 401);

  auto [bad_status, bad] = Exchange(credential_, {{"audience", ""}});
  EXPECT_EQ(bad_status, 400);
  EXPECT_EQ(bad.at("error"), "audience must be a string of 1 to 256 characters");
  http::Request get;
  get.method = "GET";
  get.target = "/v1/identity/token";
  EXPECT_EQ(api_->Handle(get).status, 405);

  EXPECT_EQ(Exchange(credential_, {{"audience", "a"}}).first, 200);
  EXPECT_EQ(Exchange(credential_, {{"audience", "a"}}).first, 200);
  EXPECT_EQ(Exchange(credential_, {{"audience", "a"}}).first, 200);
  EXPECT_EQ(Exchange(credential_, {{"audience", "a"}}).first, 429) << "the deployment's budget of 4 is spent";

  // A stopped deployment gets nothing more (from a fresh limiter, so the budget does not answer).
  ASSERT_TRUE(deployments_->Stop(id_, "by test").ok());
  ApiBackends backends;
  backends.issuer = issuer_.get();
  api_ = std::make_unique<Api>(*deployments_, ControllerSettings{}, "sesame", nullptr, backends);
  auto [stopped_status, stopped] = Exchange(credential_, {{"audience", "a"}});
  EXPECT_EQ(stopped_status, 403);
  EXPECT_EQ(stopped.at("error"), json::string("deployment " + id_ + " is Stopped: it gets no more tokens"));
}

// Without an issuer the identity endpoints are 404, not the API's 401.
TEST_F(ApiTest, WithoutAnIssuerTheIdentityEndpointsAreNotFound) {
  EXPECT_EQ(Call("GET", "/.well-known/jwks.json", nullptr, "").first, 404);
  EXPECT_EQ(Call("POST", "/v1/identity/token", nullptr, "").first, 404);
}

}  // namespace
}  // namespace paddock::deploy
