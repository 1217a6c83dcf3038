// `paddock edge`'s Traefik-style entry-point redirection flags.
#include "cli/edge_command.h"

#include <gtest/gtest.h>

namespace paddock::cli {
namespace {

TEST(ApplyEntryPointFlagsTest, TakesTraefiksRedirectionFlags) {
  std::vector<edge::EntryPointOptions> eps = {{"web", "0.0.0.0", 80}, {"websecure", "0.0.0.0", 443}};
  ASSERT_TRUE(ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.to=websecure",
                                    "--entryPoints.web.http.redirections.entryPoint.scheme", "https",
                                    "--entrypoints.web.http.redirections.entrypoint.permanent=false",
                                    "--entrypoints.web.http.redirections.entrypoint.priority=10"},
                                   eps)
                  .ok());
  ASSERT_TRUE(eps[0].redirect.has_value());
  EXPECT_EQ(eps[0].redirect->to, "websecure");
  EXPECT_EQ(eps[0].redirect->scheme, "https");
  EXPECT_FALSE(eps[0].redirect->permanent);
  EXPECT_EQ(eps[0].redirect->priority, 10);
  EXPECT_FALSE(eps[1].redirect.has_value());

  std::vector<edge::EntryPointOptions> defaults = {{"web", "0.0.0.0", 80}};
  ASSERT_TRUE(ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.to=:443"}, defaults).ok());
  EXPECT_EQ(defaults[0].redirect->scheme, "https");  // Traefik's defaults
  EXPECT_TRUE(defaults[0].redirect->permanent);
  EXPECT_EQ(defaults[0].redirect->priority, std::numeric_limits<int64_t>::max() - 1);
}

TEST(ApplyEntryPointFlagsTest, RefusesOtherFlagsUnknownEntryPointsAndARedirectionWithoutTo) {
  std::vector<edge::EntryPointOptions> eps = {{"web", "0.0.0.0", 80}};
  EXPECT_FALSE(ApplyEntryPointFlags({"--bogus=1"}, eps).ok());
  EXPECT_FALSE(ApplyEntryPointFlags({"--entrypoints.web.http.tls=true"}, eps).ok());
  EXPECT_FALSE(ApplyEntryPointFlags({"--entrypoints.other.http.redirections.entrypoint.to=web"}, eps).ok());
  EXPECT_FALSE(ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.permanent=maybe"}, eps).ok());
  std::vector<edge::EntryPointOptions> fresh = {{"web", "0.0.0.0", 80}};
  EXPECT_FALSE(ApplyEntryPointFlags({"--entrypoints.web.http.redirections.entrypoint.scheme=https"}, fresh).ok());
}

}  // namespace
}  // namespace paddock::cli
