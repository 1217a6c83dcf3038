#include "edge/http_provider.h"

#include <mutex>

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "http/server.h"

namespace paddock::edge {
namespace {
namespace json = boost::json;

TEST(ParseHttpEndpointTest, TakesHttpAndRefusesHttps) {
  auto e = ParseHttpEndpoint("http://127.0.0.1:9000/traefik?x=1");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 9000);
  EXPECT_EQ(e->target, "/traefik?x=1");
  auto plain = ParseHttpEndpoint("http://config.test");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->port, 80);
  EXPECT_EQ(plain->target, "/");
  auto v6 = ParseHttpEndpoint("http://[::1]:81");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 81);
  auto tls = ParseHttpEndpoint("https://config.test/");
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find("https endpoints are not supported"), std::string::npos);
  EXPECT_FALSE(ParseHttpEndpoint("ftp://x").ok());
  EXPECT_FALSE(ParseHttpEndpoint("http://:80").ok());
  EXPECT_FALSE(ParseHttpEndpoint("http://x:99999").ok());
}

TEST(Fnv1Hash64Test, IsGosFnv1) {
  // Go: fnv.New64() of "" and of "a".
  EXPECT_EQ(Fnv1Hash64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1Hash64("a"), 0xaf63bd4c8601b7beULL);
}

class HttpProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, [this](const http::Request& r) {
      std::lock_guard lock(mu_);
      ++requests_;
      last_target_ = r.target;
      http::Response resp;
      resp.status = status_;
      resp.body = body_;
      return resp;
    });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok());
    endpoint_ = fmt::format("http://127.0.0.1:{}/dynamic", *port);
  }
  void TearDown() override { server_->Stop(); }
  void Serve(int status, std::string body) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }

  std::unique_ptr<http::Server> server_;
  std::string endpoint_;
  std::mutex mu_;
  int status_ = 200;
  std::string body_;
  int requests_ = 0;
  std::string last_target_;
};

TEST_F(HttpProviderTest, TakesAGoodBodySkipsAnUnchangedOneAndKeepsTheLastOnFailure) {
  const std::string first = R"J({"http":{"routers":{"r":{"rule":"Host(`a.test`)","service":"web@ecs","priority":"7"}}}})J";
  Serve(200, first);
  HttpProvider p({.endpoint = endpoint_});
  int wakes = 0;
  p.SetWake([&] { ++wakes; });
  auto polled = p.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(wakes, 1);
  EXPECT_EQ(last_target_, "/dynamic");
  auto c = p.Current();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, json::parse(R"J({"http":{"routers":{"r":{"rule":"Host(`a.test`)","service":"web@ecs","priority":7}}}})J"));

  polled = p.Poll();  // the same bytes: skipped
  ASSERT_TRUE(polled.ok());
  EXPECT_FALSE(*polled);
  EXPECT_EQ(wakes, 1);

  Serve(500, "oops");
  EXPECT_FALSE(p.Poll().ok());
  Serve(200, R"J({"http":{"routers":{"r":{"rul":"x"}}}})J");
  auto refused = p.Poll();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("http.routers.r.rul"), std::string::npos) << refused.status().message();
  Serve(200, "{not json: [");
  EXPECT_FALSE(p.Poll().ok());
  EXPECT_EQ(wakes, 1);
  EXPECT_EQ(*p.Current(), *c);  // the last good one stays

  // YAML, as Traefik's decoder reads it.
  Serve(200, "http:\n  routers:\n    r:\n      rule: Path(`/y`)\n      service: s\n");
  polled = p.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(wakes, 2);
  EXPECT_EQ(p.Current()->at("http").at("routers").at("r").at("rule"), json::value("Path(`/y`)"));
}

TEST_F(HttpProviderTest, ABodyOverTheLimitIsAnErrorAndTheLastGoodOneStays) {
  const std::string good = R"J({"http":{"routers":{"r":{"rule":"Path(`/a`)","service":"s"}}}})J";
  Serve(200, good);
  HttpProvider p({.endpoint = endpoint_, .max_body_bytes = good.size() + 10});
  ASSERT_TRUE(p.Poll().ok());
  // Valid configuration, one byte over the limit: refused unread, whatever it says.
  std::string padded = R"J({"http":{"routers":{"r":{"rule":"Path(`/b`)","service":"s"}}}})J";
  padded.insert(padded.size() - 1, std::string(good.size() + 11 - padded.size(), ' '));
  ASSERT_EQ(padded.size(), good.size() + 11);
  Serve(200, padded);
  auto refused = p.Poll();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("longer than"), std::string::npos) << refused.status().message();
  EXPECT_EQ(p.Current()->at("http").at("routers").at("r").at("rule"), json::value("Path(`/a`)"));
  // At the limit exactly it is taken, on the connection the refusal closed.
  padded.erase(padded.size() - 2, 1);
  Serve(200, padded);
  auto taken = p.Poll();
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(p.Current()->at("http").at("routers").at("r").at("rule"), json::value("Path(`/b`)"));
}

TEST_F(HttpProviderTest, StartPollsAtOnceAndRefusesHttpsAndAZeroInterval) {
  Serve(200, R"J({"http":{}})J");
  HttpProvider p({.endpoint = endpoint_, .poll_interval = std::chrono::hours(1)});
  ASSERT_TRUE(p.Start().ok());
  EXPECT_TRUE(p.Current().ok());
  p.Stop();
  EXPECT_FALSE(HttpProvider({.endpoint = "https://127.0.0.1/"}).Start().ok());
  EXPECT_FALSE(HttpProvider({.endpoint = endpoint_, .poll_interval = std::chrono::milliseconds(0)}).Start().ok());
}

TEST_F(HttpProviderTest, AnUnreachableEndpointIsAnErrorAndNothingIsCurrent) {
  server_->Stop();
  HttpProvider p({.endpoint = endpoint_, .poll_timeout = std::chrono::seconds(2)});
  EXPECT_FALSE(p.Poll().ok());
  EXPECT_FALSE(p.Current().ok());
}

}  // namespace
}  // namespace paddock::edge
