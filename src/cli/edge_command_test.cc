// The http provider's flags as `paddock edge` and `paddock up` take them (cli/edge_command.h).
#include "cli/edge_command.h"

#include <gtest/gtest.h>

#include "edge/edge.h"
#include "edge/http_provider.h"

namespace paddock::cli {
namespace {

const HttpProviderFlags::Names kEdgeNames{"--providers.http.pollinterval", "--providers.http.polltimeout"};

TEST(HttpProviderFlagsTest, MaxResponseBodySizeIsTraefiksWithinPaddocksBound) {
  auto limit = [](std::string value) {
    HttpProviderFlags flags;
    flags.max_response_body_size = std::move(value);
    edge::EdgeOptions options;
    EXPECT_TRUE(flags.Apply(options, kEdgeNames).ok());
    return options.http_max_body_bytes;
  };
  EXPECT_EQ(limit("-1"), edge::kMaxHttpProviderBody);  // the default: Traefik's no limit, Paddock's bound
  EXPECT_EQ(limit("0"), 0u);
  EXPECT_EQ(limit("4096"), 4096u);
  EXPECT_EQ(limit("99999999999"), edge::kMaxHttpProviderBody);
  EXPECT_EQ(HttpProviderFlags().max_response_body_size, "-1");
}

TEST(HttpProviderFlagsTest, AMaxResponseBodySizeThatIsNotBytesIsRefusedNamingTheFlag) {
  for (const char* bad : {"1k", "", "-2", "1.5", " 10"}) {
    HttpProviderFlags flags;
    flags.max_response_body_size = bad;
    edge::EdgeOptions options;
    options.http_max_body_bytes = 7;
    Status s = flags.Apply(options, kEdgeNames);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("--providers.http.maxresponsebodysize must be a number of bytes, or -1"),
              std::string::npos)
        << s.message();
    EXPECT_EQ(options.http_max_body_bytes, 7u) << bad;  // unchanged
  }
  HttpProviderFlags flags;
  flags.max_response_body_size = "x";
  edge::EdgeOptions options;
  EXPECT_NE(flags.Apply(options, kUpHttpFlagNames).message().find("--edge-http-max-response-body-size"),
            std::string::npos);
}

}  // namespace
}  // namespace paddock::cli
