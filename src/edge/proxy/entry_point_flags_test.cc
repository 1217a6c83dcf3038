#include "edge/proxy/entry_point_flags.h"

#include <limits>

#include <gtest/gtest.h>

namespace paddock::edge {
namespace {

TEST(ApplyEntryPointFlagsTest, SetsSanitizePathPerEntryPointAsTraefiksFlags) {
  struct Case {
    std::vector<std::string> args;
    bool web, admin;  // sanitize_path after
  };
  const Case cases[] = {
      {{}, true, true},
      {{"--entrypoints.web.http.sanitizepath=false"}, false, true},
      {{"--entryPoints.Admin.http.sanitizePath=FALSE"}, true, false},  // any case, as Traefik's flags
      {{"--entrypoints.web.http.sanitizepath", "f"}, false, true},
      {{"--entrypoints.web.http.sanitizepath=0", "--entrypoints.web.http.sanitizepath"}, true, true},  // bare: true
  };
  for (const Case& c : cases) {
    std::vector<EntryPointOptions> eps = {{.name = "web"}, {.name = "admin"}};
    Status s = ApplyEntryPointFlags(c.args, eps);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(eps[0].sanitize_path, c.web) << (c.args.empty() ? "" : c.args[0]);
    EXPECT_EQ(eps[1].sanitize_path, c.admin) << (c.args.empty() ? "" : c.args[0]);
  }
}

TEST(ApplyEntryPointFlagsTest, RefusesWhatItDoesNotCarryOutNamingIt) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"--bogus"}, "unknown argument '--bogus'"},
      {{"--entrypoints.other.http.sanitizepath=false"}, "entry point other is not declared"},
      {{"--entrypoints.web.address=:80"}, "does not take entry point option address"},
      {{"--entrypoints.web.http.sanitizepath=maybe"}, "'maybe' is not a bool"},
      {{"--entrypoints.web=false"}, "is not --entrypoints.<name>.<option>"},
      {{"--entrypoints.web.http.sanitizepath=false", "--nope"}, "unknown argument '--nope'"},
  };
  for (const Case& c : cases) {
    std::vector<EntryPointOptions> eps = {{.name = "web"}};
    Status s = ApplyEntryPointFlags(c.args, eps);
    ASSERT_FALSE(s.ok()) << c.args[0];
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    EXPECT_TRUE(eps[0].sanitize_path);  // unchanged on a refusal
  }
}

TEST(ApplyEntryPointFlagsTest, TakesTraefiksRedirectionFlags) {
  std::vector<EntryPointOptions> eps = {{.name = "web", .port = 80}, {.name = "websecure", .port = 443}};
  Status s = ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.to=websecure",
                                   "--entryPoints.web.http.redirections.entryPoint.scheme", "https",
                                   "--entrypoints.web.http.redirections.entrypoint.permanent=false",
                                   "--entrypoints.web.http.redirections.entrypoint.priority=10"},
                                  eps);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(eps[0].redirect.has_value());
  EXPECT_EQ(eps[0].redirect->to, "websecure");
  EXPECT_EQ(eps[0].redirect->scheme, "https");
  EXPECT_FALSE(eps[0].redirect->permanent);
  EXPECT_EQ(eps[0].redirect->priority, 10);
  EXPECT_FALSE(eps[1].redirect.has_value());

  std::vector<EntryPointOptions> defaults = {{.name = "web", .port = 80}};
  ASSERT_TRUE(ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.to=:443"}, defaults).ok());
  EXPECT_EQ(defaults[0].redirect->scheme, "https");  // Traefik's defaults
  EXPECT_TRUE(defaults[0].redirect->permanent);
  EXPECT_EQ(defaults[0].redirect->priority, std::numeric_limits<int64_t>::max() - 1);
  EXPECT_TRUE(defaults[0].sanitize_path);
}

TEST(ApplyEntryPointFlagsTest, RefusesABadRedirectionAndChangesNothing) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"--entrypoints.web.http.tls=true"}, "does not take entry point option http.tls"},
      {{"--entrypoints.other.http.redirections.entrypoint.to=web"}, "entry point other is not declared"},
      {{"--entrypoints.web.http.redirections.entrypoint.to=:443",
        "--entrypoints.web.http.redirections.entrypoint.permanent=maybe"}, "'maybe' is not a bool"},
      {{"--entrypoints.web.http.redirections.entrypoint.scheme=https"}, "a redirection needs"},
      {{"--entrypoints.web.http.redirections.entrypoint.to"}, "needs a value"},
      {{"--entrypoints.web.http.redirections.entrypoint.to=:443",
        "--entrypoints.web.http.redirections.entrypoint.priority=high"}, "'high' is not an integer"},
  };
  for (const Case& c : cases) {
    std::vector<EntryPointOptions> eps = {{.name = "web"}};
    Status s = ApplyEntryPointFlags(c.args, eps);
    ASSERT_FALSE(s.ok()) << c.args[0];
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    EXPECT_FALSE(eps[0].redirect.has_value());  // unchanged on a refusal
  }
}

TEST(ApplyEntryPointFlagsTest, TakesTraefiksRespondingTimeouts) {
  using std::chrono::milliseconds;
  std::vector<EntryPointOptions> eps = {{.name = "web"}, {.name = "admin"}};
  Status s = ApplyEntryPointFlags({"--entrypoints.web.transport.respondingTimeouts.readTimeout=5s",
                                   "--entryPoints.web.transport.respondingtimeouts.writetimeout", "1m30s",
                                   "--entrypoints.web.transport.respondingtimeouts.idletimeout=0",
                                   "--entrypoints.admin.transport.respondingtimeouts.idletimeout=42"},  // seconds
                                  eps);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(eps[0].read_timeout, milliseconds(5'000));
  EXPECT_EQ(eps[0].write_timeout, milliseconds(90'000));
  EXPECT_EQ(eps[0].idle_timeout, milliseconds(0));  // none
  EXPECT_EQ(eps[1].idle_timeout, milliseconds(42'000));
  EXPECT_FALSE(eps[1].read_timeout.has_value());  // the proxy's default

  for (std::string bad : {"--entrypoints.web.transport.respondingtimeouts.readtimeout=soon",
                          "--entrypoints.web.transport.respondingtimeouts.readtimeout=-1s",
                          "--entrypoints.web.transport.respondingtimeouts.lingertimeout=1s"}) {
    std::vector<EntryPointOptions> before = {{.name = "web"}};
    Status refused = ApplyEntryPointFlags({bad}, before);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.message().find(bad.substr(0, bad.find('='))), std::string::npos) << refused.message();
    EXPECT_FALSE(before[0].read_timeout.has_value()) << bad;
  }
}

}  // namespace
}  // namespace paddock::edge
