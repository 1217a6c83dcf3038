// The controller's HTTP API (deploy/api.h) over a real store: the token, creating from paddock.toml
// and --from, the host-collision refusal, events, stop, env, and error codes.
#include "deploy/api.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include <boost/json.hpp>

#include "common/testing/fake_clock.h"
#include "deploy/deployments.h"
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

}  // namespace
}  // namespace paddock::deploy
