#include "edge/proxy/sticky.h"

#include <gtest/gtest.h>

#include "edge/proxy/table.h"

namespace paddock::edge {
namespace {

// Traefik's own cookie_test.go cases, and one service name as the ecs provider qualifies it.
TEST(StickyCookieNameTest, IsTraefiksSha1NameOrTheConfiguredOneSanitized) {
  struct Case {
    std::string configured, service, want;
  };
  const Case cases[] = {
      {"", "backend", "_76eb3"},
      {"", "/my/BACKEND-v1.0~rc1", "_5f7bc"},
      {"", "app@ecs", "_05bcf"},
      {"/my/BACKEND-v1.0~rc1", "", "_my_BACKEND-v1.0~rc1"},
      {"cookie", "backend", "cookie"},
      {"!#$%&'()*+-./:<=>?@[]^_`{|}~", "x", "!#$%&'__*+-._________^_`_|_~"},
      {"caf\xc3\xa9", "x", "caf_"},  // one '_' per rune, as Go's strings.Map
  };
  for (const Case& c : cases)
    EXPECT_EQ(StickyCookieName(c.configured, c.service), c.want) << c.configured << " / " << c.service;
}

TEST(StickyServerHashTest, IsTheFirst16HexDigitsOfSha256AndFnvIsGosFnv1) {
  EXPECT_EQ(StickyServerHash("http://10.0.1.5:8080"), "185f631f65ab9802");
  EXPECT_EQ(StickyFnvHash(""), "cbf29ce484222325");
  EXPECT_EQ(StickyFnvHash("a"), "af63bd4c8601b7be");  // FNV-1, not FNV-1a (af63dc4c8601ec8c)
  EXPECT_EQ(StickyFnvHash("http://10.0.1.5:8080"), "d71e48f32e8a3718");
}

TEST(RequestCookieTest, ReadsAsGosRequestCookie) {
  struct Case {
    HeaderList headers;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {{{"Cookie", "a=1; _05bcf=abc; b=2"}}, "abc"},
      {{{"cookie", "  _05bcf=\"abc\"  "}}, "abc"},                   // quotes removed, any case of the name
      {{{"Cookie", "x=1"}, {"Cookie", "_05bcf=second"}}, "second"},  // every Cookie line
      {{{"Cookie", "_05bcf=bad\\value; _05bcf=good"}}, "good"},      // a value Go refuses is skipped
      {{{"Cookie", "_05bcfx=1; x_05bcf=2"}}, std::nullopt},
      {{{"Set-Cookie", "_05bcf=abc"}}, std::nullopt},
      {{{"Cookie", ";;_05bcf="}}, ""},
  };
  for (const Case& c : cases) EXPECT_EQ(RequestCookie(c.headers, "_05bcf"), c.want) << c.headers[0].second;
}

TEST(StickyCookieTest, SetCookieIsGosCookieString) {
  StickyCookie c;
  c.name = "_05bcf";
  EXPECT_EQ(c.SetCookie("http://10.0.1.5:8080"), "_05bcf=185f631f65ab9802; Path=/");

  c = StickyCookie{.name = "s", .secure = true, .http_only = true, .same_site = SameSite::kNone, .max_age = 42,
                   .path = "/foo", .domain = ".foo.com"};
  EXPECT_EQ(c.SetCookie("http://10.0.1.5:8080"),
            "s=185f631f65ab9802; Path=/foo; Domain=foo.com; Max-Age=42; HttpOnly; Secure; SameSite=None");

  c = StickyCookie{.name = "s", .same_site = ParseSameSite("STRICT"), .max_age = -1, .path = "", .domain = "bad_domain"};
  EXPECT_EQ(c.SetCookie("u"), "s=" + StickyServerHash("u") + "; Max-Age=0; SameSite=Strict");

  c = StickyCookie{.name = "s", .same_site = ParseSameSite("Lax"), .path = "/a;b\x01", .domain = "10.0.0.1"};
  EXPECT_EQ(c.SetCookie("u"), "s=" + StickyServerHash("u") + "; Path=/ab; Domain=10.0.0.1; SameSite=Lax");
  EXPECT_EQ(ParseSameSite("whatever"), SameSite::kDefault);
}

class ChooseStickyTest : public ::testing::Test {
 protected:
  ChooseStickyTest() {
    backend_.name = "app@ecs";
    backend_.sticky = StickyCookie{.name = "c"};
    for (const char* url : {"http://10.0.0.1:80", "http://10.0.0.2:80", "http://10.0.0.3:80"})
      backend_.servers.push_back({std::make_shared<ServerState>("app@ecs", url, "10.0.0.1", 80), 1});
    backend_.servers[2].weight = 0;
  }
  StickyChoice Choose(const std::string& value) const {
    return ChooseSticky(backend_, HeaderList{{"Cookie", "c=" + value}});
  }
  Backend backend_;
};

TEST_F(ChooseStickyTest, TheSha256FormPicksItsServerAndOlderFormsPickItAndAreRewritten) {
  const auto& second = backend_.servers[1].state;
  struct Case {
    std::string value;
    bool rewrite;
  };
  const Case cases[] = {
      {StickyServerHash(second->url()), false},
      {second->url(), true},
      {StickyFnvHash(second->url()), true},
      {StickyFnvHash(StickyFnvHash(second->url())), true},
  };
  for (const Case& c : cases) {
    StickyChoice got = Choose(c.value);
    EXPECT_EQ(got.server, second) << c.value;
    EXPECT_EQ(got.rewrite, c.rewrite) << c.value;
  }
}

TEST_F(ChooseStickyTest, NoCookieABogusOneAServerGoneDownFencedOrWeightZeroPickNothing) {
  EXPECT_EQ(ChooseSticky(backend_, {}).server, nullptr);
  EXPECT_EQ(Choose("bogus").server, nullptr);
  EXPECT_EQ(Choose(StickyServerHash("http://10.9.9.9:80")).server, nullptr);   // not in the service
  EXPECT_EQ(Choose(backend_.servers[2].state->sticky_hash()).server, nullptr);  // weight 0
  backend_.servers[0].state->set_health(Health::kDown);
  EXPECT_EQ(Choose(backend_.servers[0].state->sticky_hash()).server, nullptr);
  backend_.servers[0].state->set_health(Health::kPending);
  EXPECT_EQ(Choose(backend_.servers[0].state->sticky_hash()).server, nullptr);
  backend_.servers[0].state->set_health(Health::kUp);
  EXPECT_EQ(Choose(backend_.servers[0].state->sticky_hash()).server, backend_.servers[0].state);
  // Our drain-before-stop (Traefik still sends a sticky client to a fenced server).
  backend_.servers[0].state->Fence([] {});
  StickyChoice fenced = Choose(StickyFnvHash(backend_.servers[0].state->url()));
  EXPECT_EQ(fenced.server, nullptr);
  EXPECT_FALSE(fenced.rewrite);
}

}  // namespace
}  // namespace paddock::edge
