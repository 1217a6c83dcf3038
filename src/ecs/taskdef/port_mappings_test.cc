// portMappings at RegisterTaskDefinition (port_mappings.h): containerPortRange's rules and the
// single ports' bounds.
#include "ecs/taskdef/port_mappings.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "ecs/api/errors.h"
#include "ecs/taskdef/validate.h"

namespace paddock::ecs::taskdef {
namespace {
namespace json = boost::json;

// Registers one container "c" with `mappings` (a JSON array) in `mode` ("" for none).
StatusOr<Validated> RegisterWith(std::string_view mappings, std::string_view mode = "bridge") {
  std::string text = fmt::format(R"({{"family":"f",{}"containerDefinitions":[{{"name":"c","image":"x","memory":64,
      "portMappings":{}}}]}})",
                                 mode.empty() ? "" : fmt::format(R"("networkMode":"{}",)", mode), mappings);
  return ValidateRegister(json::parse(text).as_object());
}

std::string ErrorOf(std::string_view mappings, std::string_view mode = "bridge") {
  auto r = RegisterWith(mappings, mode);
  return r.ok() ? "OK" : api::AnswerFor(r.status()).type + ": " + r.status().message();
}

TEST(PortMappingsTest, ContainerPortRangeIsForBridgeAndAwsvpc) {
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"}])", "bridge"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"}])", ""), "OK");  // bridge is the default
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"}])", "awsvpc"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"}])", "host"),
            "ClientException: Invalid 'containerPortRange' setting for container 'c'. Port ranges are supported only "
            "in the bridge and awsvpc network modes, not networkMode=host.");
  EXPECT_NE(ErrorOf(R"([{"containerPortRange":"8000-8010"}])", "none"), "OK");
}

TEST(PortMappingsTest, ARangeIsStoredAsGivenWithTheDefaultProtocolAndNoHostPort) {
  for (std::string_view mode : {"bridge", "awsvpc"}) {
    auto r = RegisterWith(R"([{"containerPortRange":"8000-8010"},{"containerPort":80}])", mode);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto& pm = r->definition.at("containerDefinitions").as_array()[0].at("portMappings").as_array();
    EXPECT_EQ(pm[0].as_object(), (json::object{{"containerPortRange", "8000-8010"}, {"protocol", "tcp"}})) << mode;
  }
}

TEST(PortMappingsTest, RangeBoundsAndForm) {
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"1-2"}])"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"65534-65535"}])"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"0-10"}])"),
            "ClientException: Invalid 'containerPortRange' setting for container 'c'. The ports of '0-10' must be "
            "between 1 and 65535.");
  EXPECT_NE(ErrorOf(R"([{"containerPortRange":"65535-65536"}])"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"10-10"}])"),
            "ClientException: Invalid 'containerPortRange' setting for container 'c'. The first port of '10-10' must "
            "be less than the last.");
  EXPECT_NE(ErrorOf(R"([{"containerPortRange":"11-10"}])"), "OK");
  for (std::string_view bad : {"8000", "8000-", "-8000", "a-b", "8000-8010-8020", " 8000-8010", "8000:8010", ""})
    EXPECT_EQ(ErrorOf(fmt::format(R"([{{"containerPortRange":"{}"}}])", bad)),
              fmt::format("ClientException: Invalid 'containerPortRange' setting for container 'c'. '{}' is not a port "
                          "range of the form first-last, for example 8000-8010.",
                          bad))
        << bad;
}

TEST(PortMappingsTest, ARangeTakesNoHostPortAndNoContainerPort) {
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010","hostPort":9000}])"),
            "ClientException: Invalid 'hostPort' setting for container 'c'. A port mapping with a 'containerPortRange' "
            "takes no 'hostPort': the host port range is assigned when the task starts.");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010","hostPort":0}])"), "OK");  // 0: not set
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010","containerPort":8000}])"),
            "ClientException: Invalid 'containerPortRange' setting for container 'c'. A port mapping has either a "
            "'containerPort' or a 'containerPortRange', not both.");
  EXPECT_EQ(ErrorOf(R"([{"protocol":"tcp"}])"),
            "ClientException: Invalid 'containerPort' setting for container 'c'. A port mapping needs a "
            "'containerPort' or a 'containerPortRange'.");
}

TEST(PortMappingsTest, NoPortInTwoMappingsWithARange) {
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"},{"containerPortRange":"8011-8020"}])"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"},{"containerPortRange":"8010-8020"}])"),
            "ClientException: Invalid 'portMappings' setting for container 'c'. Container port 8010-8020/tcp overlaps "
            "8000-8010/tcp: a port can be in only one port mapping.");
  EXPECT_NE(ErrorOf(R"([{"containerPortRange":"8005-8006"},{"containerPortRange":"8000-8010"}])"), "OK");
  EXPECT_NE(ErrorOf(R"([{"containerPort":8005},{"containerPortRange":"8000-8010"}])"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"},{"containerPort":8010}])"),
            "ClientException: Invalid 'portMappings' setting for container 'c'. Container port 8010/tcp overlaps "
            "8000-8010/tcp: a port can be in only one port mapping.");
  // Another protocol is another port space; single ports keep ECS's older rule (one container
  // port may be published on two host ports).
  EXPECT_EQ(ErrorOf(R"([{"containerPortRange":"8000-8010"},{"containerPortRange":"8000-8010","protocol":"udp"}])"),
            "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPort":80,"hostPort":8080},{"containerPort":80,"hostPort":8081}])"), "OK");
}

TEST(PortMappingsTest, AtMostAHundredRangesPerContainer) {
  auto ranges = [](int n) {
    std::string list = "[";
    for (int i = 0; i < n; ++i)
      list += fmt::format(R"({}{{"containerPortRange":"{}-{}"}})", i ? "," : "", 10000 + 2 * i, 10001 + 2 * i);
    return list + "]";
  };
  EXPECT_EQ(ErrorOf(ranges(100)), "OK");
  EXPECT_EQ(ErrorOf(ranges(101)),
            "ClientException: Invalid 'containerPortRange' setting for container 'c'. A container can have at most 100 "
            "port ranges.");
}

TEST(PortMappingsTest, SinglePortBounds) {
  EXPECT_EQ(ErrorOf(R"([{"containerPort":1,"hostPort":0},{"containerPort":65535,"hostPort":65535}])"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPort":0}])"),
            "ClientException: Invalid 'containerPort' setting for container 'c'. The value must be between 1 and 65535.");
  EXPECT_NE(ErrorOf(R"([{"containerPort":65536}])"), "OK");
  EXPECT_EQ(ErrorOf(R"([{"containerPort":80,"hostPort":65536}])"),
            "ClientException: Invalid 'hostPort' setting for container 'c'. The value must be between 0 and 65535.");
  EXPECT_NE(ErrorOf(R"([{"containerPort":80,"hostPort":-1}])"), "OK");
}

}  // namespace
}  // namespace paddock::ecs::taskdef
