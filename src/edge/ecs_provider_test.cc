// The ecs provider's rules, case by case — Traefik's builder and config tests
// (pkg/provider/ecs/config_test.go) re-expressed over our own data.
#include "edge/ecs_provider.h"

#include <map>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace paddock::edge {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using Labels = std::map<std::string, std::string>;

// A task id of 32 hex characters whose last 12 are `tail` padded with zeros.
std::string TaskArn(int n) { return fmt::format("arn:aws:ecs:eu-west-1:111122223333:task/prod/{:032x}", n); }
std::string TaskId(int n) { return fmt::format("{:012x}", n); }

EcsContainer Container(std::string name, Labels labels, std::string ip = "10.0.1.5",
                       std::vector<EcsPortMapping> mappings = {{8080, 8080, "tcp"}}) {
  EcsContainer c;
  c.name = std::move(name);
  c.labels = std::move(labels);
  c.private_ip = std::move(ip);
  c.port_mappings = std::move(mappings);
  return c;
}

// An awsvpc (Fargate-style) task: its containers' own IPs, the definition's port mappings.
EcsTask Awsvpc(int n, std::string group, std::vector<EcsContainer> containers) {
  EcsTask t;
  t.task_arn = TaskArn(n);
  t.cluster = "prod";
  t.group = std::move(group);
  t.last_status = "RUNNING";
  t.desired_status = "RUNNING";
  t.health_status = "UNKNOWN";
  t.network_mode = "awsvpc";
  t.has_attachments = true;
  t.containers = std::move(containers);
  return t;
}

// A bridge task on an EC2 instance: the host's IP and state, the containers' network bindings.
EcsTask Bridge(int n, std::string group, std::string host_ip, std::vector<EcsContainer> containers) {
  EcsTask t = Awsvpc(n, std::move(group), {});
  t.network_mode = "bridge";
  t.has_attachments = false;
  t.host_ip = std::move(host_ip);
  t.machine_state = "running";
  for (EcsContainer& c : containers) {
    c.network_bindings = c.port_mappings;
    c.port_mappings.clear();
    c.private_ip.clear();
  }
  t.containers = std::move(containers);
  return t;
}

EcsProviderOptions Options() { return EcsProviderOptions{}; }

json::value Json(std::string_view text) { return json::parse(text); }

// The url of the only server of `service`, or "" when there is no such service.
std::string OnlyUrl(const EcsBuild& b, std::string_view service) {
  const json::object* http = b.config.contains("http") ? b.config.at("http").if_object() : nullptr;
  if (http == nullptr || !http->contains("services")) return "";
  const json::object& services = http->at("services").as_object();
  if (!services.contains(service)) return "";
  const json::array& servers = services.at(service).at("loadBalancer").at("servers").as_array();
  if (servers.size() != 1) return "servers: " + json::serialize(servers);
  return std::string(servers[0].at("url").as_string());
}

const json::object& Http(const EcsBuild& b) { return b.config.at("http").as_object(); }

// --- Normalize ------------------------------------------------------------------------------

TEST(NormalizeTest, JoinsRunsOfLettersAndDigitsWithDashes) {
  struct Case {
    std::string in;
    std::string out;
  };
  const Case cases[] = {
      {"service:rise-web-app", "service-rise-web-app"},
      {"a..b__c", "a-b-c"},
      {"--lead and trail--", "lead-and-trail"},
      {"", ""},
      {"::", ""},
      {"café_ünïcode", "café-ünïcode"},      // letters beyond ASCII are letters
      {"日本語.x", "日本語-x"},               // Lo
      {"v٣½x", "v٣½x"},                       // Nd and No are numbers
      {"price€5", "price-5"},                 // Sc is not
      {"a\xff" "b", "a-b"},                   // a malformed byte is U+FFFD, not a letter
      {"a\xed\xa0\x80" "b", "a-b"},           // an encoded surrogate is malformed, byte by byte
      {"a\xc3", "a"},                         // a truncated sequence too
  };
  for (const Case& c : cases) EXPECT_EQ(Normalize(c.in), c.out) << c.in;
}

// --- The default router and service ---------------------------------------------------------

TEST(EcsProviderTest, AContainerWithoutLabelsGetsTheDefaultServiceAndRouter) {
  EcsBuild b = BuildEcsConfiguration({Awsvpc(1, "service:web", {Container("app", {})})}, Options());
  EXPECT_THAT(b.errors, IsEmpty());
  EXPECT_EQ(json::value(b.config), Json(R"j({"http":{
      "routers":{"service-web-app":{"rule":"Host(`service-web-app`)","service":"service-web-app"}},
      "services":{"service-web-app":{"loadBalancer":{"servers":[{"url":"http://10.0.1.5:8080"}],
          "passHostHeader":true,"strategy":"wrr","responseForwarding":{"flushInterval":"100ms"}}}}}})j"));
  EXPECT_THAT(b.default_rule_routers, ElementsAre("service-web-app"));
  ASSERT_THAT(b.servers, SizeIs(1));
  EXPECT_EQ(b.servers[0].service, "service-web-app");
  EXPECT_EQ(b.servers[0].url, "http://10.0.1.5:8080");
  EXPECT_EQ(b.servers[0].task_arn, TaskArn(1));
  EXPECT_EQ(b.servers[0].container, "app");
  EXPECT_EQ(b.servers[0].drain_timeout_ms, std::nullopt);
}

TEST(EcsProviderTest, DefaultRuleTemplates) {
  struct Case {
    std::string templ;
    std::string rule;  // "" : the router is dropped with an error, the service stays
  };
  const Case cases[] = {
      {"Host(`{{ normalize .Name }}`)", "Host(`service-web-app`)"},
      {"Host(`{{ .Name }}.apps.test`)", "Host(`service-web-app.apps.test`)"},
      {"Host(`{{ .Name | normalize }}`)", "Host(`service-web-app`)"},
      {R"(Host(`{{ index .Labels "domain" }}`))", "Host(`shop.test`)"},
      {R"(Host(`{{ normalize (index .Labels "domain") }}`))", "Host(`shop-test`)"},
      {R"(Host(`{{ index .Labels "absent" }}x`))", "Host(`x`)"},
      {"Host(`{{ .Labels.domain }}`)", "Host(`shop.test`)"},
      {"Host(`{{ .Labels.absent }}`)", "Host(`<no value>`)"},
      {"Host(`a`)  {{- \" \" -}}  && Path(`/`)", "Host(`a`) && Path(`/`)"},
      {"Host(`static.test`)", "Host(`static.test`)"},
      {"Host(`{{ .Toto }}`)", ""},         // no such field
      {"", ""},                           // an empty rule
      {"{{ lower .Name }}", ""},          // sprig: not in the subset
      {"Host(`{{ .Name`)", ""},           // unterminated action
      {"{{ .Labels }}", ""},              // printing the map
      {"{{ index .Name \"x\" }}", ""},    // index of a string
      {"{{ .Name .Name }}", ""},          // argument to a non-function
      {"{{/* comment */}}x", ""},
  };
  for (const Case& c : cases) {
    EcsProviderOptions o = Options();
    o.default_rule = c.templ;
    EcsBuild b = BuildEcsConfiguration({Awsvpc(1, "service:web", {Container("app", {{"domain", "shop.test"}})})}, o);
    EXPECT_EQ(OnlyUrl(b, "service-web-app"), "http://10.0.1.5:8080") << c.templ;
    if (c.rule.empty()) {
      EXPECT_FALSE(Http(b).contains("routers")) << c.templ;
      EXPECT_THAT(b.errors, ElementsAre(HasSubstr("router \"service-web-app\""))) << c.templ;
      EXPECT_THAT(b.default_rule_routers, IsEmpty());
    } else {
      EXPECT_THAT(b.errors, IsEmpty()) << c.templ;
      EXPECT_EQ(Http(b).at("routers").at("service-web-app").at("rule"), json::value(c.rule)) << c.templ;
    }
  }
}

TEST(EcsProviderTest, ARouterWithoutARuleGetsTheDefaultRuleAndOneWithAnOwnRuleKeepsIt) {
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {{"traefik.http.routers.own.rule", "Path(`/own`)"},
                                                    {"traefik.http.routers.bare.entrypoints", "web"}})})},
      Options());
  EXPECT_THAT(b.errors, IsEmpty());
  EXPECT_EQ(json::value(Http(b).at("routers")), Json(R"j({
      "bare":{"entryPoints":["web"],"rule":"Host(`service-web-app`)","service":"service-web-app"},
      "own":{"rule":"Path(`/own`)","service":"service-web-app"}})j"));
  EXPECT_THAT(b.default_rule_routers, ElementsAre("bare"));
}

// --- Port choice (Traefik's getPort and addServer) ------------------------------------------

TEST(EcsProviderTest, PortChoice) {
  struct Case {
    std::string what;
    Labels labels;
    std::vector<EcsPortMapping> bindings;  // a bridge task's (containerPort, hostPort)
    std::string url;                       // "" : the container is dropped with this error
    std::string error = "";
  };
  const std::string kPort = "traefik.http.services.s.loadbalancer.server.port";
  const std::string kScheme = "traefik.http.services.s.loadbalancer.server.scheme";
  const std::string kUrl = "traefik.http.services.s.loadbalancer.server.url";
  const Case cases[] = {
      {"no label: the lowest host port", {}, {{443, 32771, "tcp"}, {80, 32770, "tcp"}}, "http://172.31.0.9:32770"},
      {"no label: udp counts too", {}, {{53, 32000, "udp"}, {80, 32770, ""}}, "http://172.31.0.9:32000"},
      {"no label: out-of-range host ports are skipped", {}, {{1, 70000, "tcp"}, {2, 9000, "tcp"}},
       "http://172.31.0.9:9000"},
      {"a label equal to a container port: its host port", {{kPort, "80"}},
       {{443, 32771, "tcp"}, {80, 32770, "tcp"}}, "http://172.31.0.9:32770"},
      {"a label matching no container port: as written", {{kPort, "9999"}}, {{80, 32770, "tcp"}},
       "http://172.31.0.9:9999"},
      {"a label, no mappings", {{kPort, "9999"}}, {}, "http://172.31.0.9:9999"},
      {"a scheme", {{kPort, "80"}, {kScheme, "https"}}, {{80, 32770, "tcp"}}, "https://172.31.0.9:32770"},
      {"a url is used verbatim", {{kUrl, "http://elsewhere.test:81/x"}}, {}, "http://elsewhere.test:81/x"},
      {"no label, no mappings", {}, {}, "", "service \"service-web-app\" error: port is missing"},
      {"a url with a port", {{kUrl, "http://a.test"}, {kPort, "80"}}, {{80, 80, "tcp"}}, "",
       "defining scheme or port is not allowed when URL is defined"},
      {"a url with a scheme", {{kUrl, "http://a.test"}, {kScheme, "https"}}, {{80, 80, "tcp"}}, "",
       "defining scheme or port is not allowed when URL is defined"},
  };
  for (const Case& c : cases) {
    Labels labels = c.labels;
    // A label-defined service "s", or (no service label) the default one.
    bool named = false;
    for (const auto& [k, v] : labels) named = named || k.starts_with("traefik.http.services.s.");
    EcsContainer container = Container("app", labels, "", c.bindings);
    EcsTask task = Bridge(1, "service:web", "172.31.0.9", {container});
    EcsBuild b = BuildEcsConfiguration({task}, Options());
    std::string service = named ? "s" : "service-web-app";
    if (c.url.empty()) {
      EXPECT_FALSE(b.config.contains("http")) << c.what;
      EXPECT_THAT(b.errors, ElementsAre(HasSubstr(c.error))) << c.what;
      EXPECT_THAT(b.servers, IsEmpty()) << c.what;
    } else {
      EXPECT_THAT(b.errors, IsEmpty()) << c.what;
      EXPECT_EQ(OnlyUrl(b, service), c.url) << c.what;
      ASSERT_THAT(b.servers, SizeIs(1)) << c.what;
      EXPECT_EQ(b.servers[0].url, c.url) << c.what;
      // port and scheme are the labels', never the configuration's.
      const json::object& server =
          Http(b).at("services").at(service).at("loadBalancer").at("servers").at(0).as_object();
      EXPECT_FALSE(server.contains("port")) << c.what;
      EXPECT_FALSE(server.contains("scheme")) << c.what;
    }
  }
}

TEST(EcsProviderTest, AwsvpcPortsComeFromTheDefinitionAndAMissingHostPortIsZero) {
  // Traefik reads a nil hostPort as 0 and 0 is the lowest: Paddock's DescribeTaskDefinition must
  // echo hostPort == containerPort for awsvpc (research note §1.2).
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {}, "10.0.1.5", {{8080, 0, "tcp"}})}),
       Awsvpc(2, "service:api", {Container("app", {}, "fd00::7", {{8080, 8080, "tcp"}})})},
      Options());
  EXPECT_EQ(OnlyUrl(b, "service-web-app"), "http://10.0.1.5:0");
  EXPECT_EQ(OnlyUrl(b, "service-api-app"), "http://[fd00::7]:8080");
}

// Bridge tasks (Traefik's non-awsvpc branch): the EC2 instance's privateIpAddress and the
// container's networkBindings; the definition's portMappings are not read.
TEST(EcsProviderTest, BridgeTasksAreReachedAtTheirInstancesAddressAndBoundHostPort) {
  auto bridge = [](int n, std::string group, std::vector<EcsPortMapping> bindings, Labels labels = {}) {
    EcsTask t = Bridge(n, std::move(group), "10.0.0.11", {Container("app", std::move(labels), "", bindings)});
    t.containers[0].port_mappings = {{8080, 0, "tcp"}};  // the definition's: a dynamic host port
    return t;
  };
  const std::string kPort = "traefik.http.services.s.loadbalancer.server.port";
  EcsBuild b = BuildEcsConfiguration(
      {// Two tasks of one service on one host, dynamic host ports: one service, two servers.
       bridge(1, "service:web", {{8080, 32768, "tcp"}}), bridge(2, "service:web", {{8080, 32769, "tcp"}}),
       // Several bindings, a label port naming one container port: that binding's host port.
       bridge(3, "service:multi", {{9090, 32770, "tcp"}, {8080, 32771, "tcp"}}, {{kPort, "8080"}}),
       // No bindings and no label port: dropped, as Traefik drops it.
       bridge(4, "service:unbound", {})},
      Options());
  const json::array& web = Http(b).at("services").at("service-web-app").at("loadBalancer").at("servers").as_array();
  ASSERT_EQ(web.size(), 2u);
  EXPECT_EQ(web[0].at("url"), "http://10.0.0.11:32768");
  EXPECT_EQ(web[1].at("url"), "http://10.0.0.11:32769");
  EXPECT_EQ(OnlyUrl(b, "s"), "http://10.0.0.11:32771");
  EXPECT_EQ(OnlyUrl(b, "service-unbound-app"), "");
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("service \"service-unbound-app\" error: port is missing")));
  EXPECT_THAT(b.servers, SizeIs(3));
}

// Host tasks: the same branch; the port is the binding's when ECS reports one, else the label's.
TEST(EcsProviderTest, HostTasksAreReachedAtTheirInstancesAddress) {
  auto host = [](int n, std::string group, std::vector<EcsPortMapping> bindings, Labels labels = {}) {
    EcsTask t = Bridge(n, std::move(group), "10.0.0.12", {Container("app", std::move(labels), "", bindings)});
    t.network_mode = "host";
    return t;
  };
  EcsBuild b = BuildEcsConfiguration(
      {host(1, "service:bound", {{8080, 8080, "tcp"}}),
       host(2, "service:labelled", {}, {{"traefik.http.services.l.loadbalancer.server.port", "8081"}}),
       host(3, "service:bare", {})},
      Options());
  EXPECT_EQ(OnlyUrl(b, "service-bound-app"), "http://10.0.0.12:8080");
  EXPECT_EQ(OnlyUrl(b, "l"), "http://10.0.0.12:8081");
  EXPECT_EQ(OnlyUrl(b, "service-bare-app"), "");
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("service \"service-bare-app\" error: port is missing")));
}

TEST(EcsProviderTest, ServerPortsGoToEveryServiceOfTheContainer) {
  EcsBuild b = BuildEcsConfiguration(
      {Bridge(1, "service:web", "172.31.0.9",
              {Container("app",
                         {{"traefik.http.routers.a.rule", "Host(`a.test`)"},
                          {"traefik.http.routers.a.service", "one"},
                          {"traefik.http.services.one.loadbalancer.server.port", "4445"},
                          {"traefik.http.routers.b.rule", "Host(`b.test`)"},
                          {"traefik.http.routers.b.service", "two"},
                          {"traefik.http.services.two.loadbalancer.server.port", "4444"}},
                         "", {{4444, 32123, "tcp"}, {4445, 32124, "tcp"}})})},
      Options());
  EXPECT_THAT(b.errors, IsEmpty());
  EXPECT_EQ(OnlyUrl(b, "one"), "http://172.31.0.9:32124");
  EXPECT_EQ(OnlyUrl(b, "two"), "http://172.31.0.9:32123");
  EXPECT_THAT(b.servers, SizeIs(2));
}

// --- Routers and services -------------------------------------------------------------------

TEST(EcsProviderTest, TwoServicesAndNoRouterMakeNoRouter) {
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {{"traefik.http.services.a.loadbalancer.server.port", "80"},
                                                    {"traefik.http.services.b.loadbalancer.server.port", "81"}})})},
      Options());
  EXPECT_FALSE(Http(b).contains("routers"));
  EXPECT_EQ(OnlyUrl(b, "a"), "http://10.0.1.5:80");
  EXPECT_EQ(OnlyUrl(b, "b"), "http://10.0.1.5:81");
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("too many services")));
}

TEST(EcsProviderTest, ARouterWithoutServiceIsLinkedToTheOnlyOneAndDroppedAmongSeveral) {
  EcsBuild one = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {{"traefik.http.routers.r.rule", "Host(`a.test`)"},
                                                    {"traefik.http.services.s.loadbalancer.server.port", "80"}})})},
      Options());
  EXPECT_THAT(one.errors, IsEmpty());
  EXPECT_EQ(Http(one).at("routers").at("r").at("service"), "s");

  EcsBuild two = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {{"traefik.http.routers.r.rule", "Host(`a.test`)"},
                                                    {"traefik.http.routers.k.rule", "Host(`k.test`)"},
                                                    {"traefik.http.routers.k.service", "t"},
                                                    {"traefik.http.services.s.loadbalancer.server.port", "80"},
                                                    {"traefik.http.services.t.loadbalancer.server.port", "81"}})})},
      Options());
  EXPECT_EQ(json::value(Http(two).at("routers")), Json(R"j({"k":{"rule":"Host(`k.test`)","service":"t"}})j"));
  EXPECT_THAT(two.errors, ElementsAre(HasSubstr("router \"r\" cannot be linked automatically with multiple services")));
}

TEST(EcsProviderTest, ARouterNamingAnUndefinedServiceKeepsItAndTheDefaultServiceIsCreated) {
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {{"traefik.http.routers.r.rule", "Host(`a.test`)"},
                                                    {"traefik.http.routers.r.service", "elsewhere"}})})},
      Options());
  EXPECT_EQ(Http(b).at("routers").at("r").at("service"), "elsewhere");
  EXPECT_EQ(OnlyUrl(b, "service-web-app"), "http://10.0.1.5:8080");
}

TEST(EcsProviderTest, ServiceDefaultsApplyToLabelledServicesAndKeepWhatIsSet) {
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web",
              {Container("app", {{"traefik.http.services.s.loadbalancer.passhostheader", "false"},
                                 {"traefik.http.services.s.loadbalancer.healthcheck.path", "/health"},
                                 {"traefik.http.services.s.loadbalancer.healthcheck.interval", "10s"}})})},
      Options());
  EXPECT_THAT(b.errors, IsEmpty());
  EXPECT_EQ(json::value(Http(b).at("services").at("s")), Json(R"j({"loadBalancer":{
      "servers":[{"url":"http://10.0.1.5:8080"}],"passHostHeader":false,"strategy":"wrr",
      "responseForwarding":{"flushInterval":"100ms"},
      "healthCheck":{"path":"/health","interval":"10s","followRedirects":true,"mode":"http","timeout":"5s"}}})j"));
}

TEST(ApplyServiceDefaultsTest, FillsOnlyWhatIsAbsent) {
  json::object service = Json(R"j({"loadBalancer":{"strategy":"p2c","sticky":{"cookie":{"name":"c"}},
      "passiveHealthCheck":{"maxFailedAttempts":3},"responseForwarding":{"flushInterval":"-1s"}}})j").as_object();
  ApplyServiceDefaults(service);
  EXPECT_EQ(json::value(service), Json(R"j({"loadBalancer":{"strategy":"p2c","passHostHeader":true,
      "sticky":{"cookie":{"name":"c","path":"/"}},"passiveHealthCheck":{"maxFailedAttempts":3,"failureWindow":"10s"},
      "responseForwarding":{"flushInterval":"-1s"}}})j"));
  json::object weighted = Json(R"j({"weighted":{}})j").as_object();
  ApplyServiceDefaults(weighted);
  EXPECT_EQ(json::value(weighted), Json(R"j({"weighted":{}})j"));
}

TEST(EcsProviderTest, ALabelTheDecoderRefusesDropsTheContainer) {
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {{"traefik.http.routers.r.rulez", "Host(`a.test`)"}})}),
       Awsvpc(2, "service:api", {Container("app", {})})},
      Options());
  EXPECT_EQ(OnlyUrl(b, "service-web-app"), "");
  EXPECT_EQ(OnlyUrl(b, "service-api-app"), "http://10.0.1.5:8080");
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("service-web-app-" + TaskId(1))));
}

// --- Merging across tasks -------------------------------------------------------------------

TEST(EcsProviderTest, TasksOfOneServiceShareOneLoadBalancer) {
  EcsBuild b = BuildEcsConfiguration({Awsvpc(2, "service:web", {Container("app", {}, "10.0.1.6")}),
                                      Awsvpc(1, "service:web", {Container("app", {}, "10.0.1.5")}),
                                      Awsvpc(3, "service:web", {Container("app", {}, "10.0.1.7")})},
                                     Options());
  EXPECT_THAT(b.errors, IsEmpty());
  // Merged in instance-name order: by task id.
  EXPECT_EQ(json::serialize(Http(b).at("services").at("service-web-app").at("loadBalancer").at("servers")),
            R"([{"url":"http://10.0.1.5:8080"},{"url":"http://10.0.1.6:8080"},{"url":"http://10.0.1.7:8080"}])");
  ASSERT_THAT(b.servers, SizeIs(3));
  EXPECT_EQ(b.servers[0].task_arn, TaskArn(1));
  EXPECT_EQ(b.servers[1].task_arn, TaskArn(2));
  EXPECT_EQ(b.servers[2].task_arn, TaskArn(3));
  EXPECT_THAT(b.default_rule_routers, ElementsAre("service-web-app"));
}

TEST(EcsProviderTest, ConflictingDefinitionsAreDeletedAndLogged) {
  auto labels = [](std::string rule, std::string pass) {
    return Labels{{"traefik.http.routers.r.rule", rule},
                  {"traefik.http.routers.r.service", "s"},
                  {"traefik.http.services.s.loadbalancer.passhostheader", pass},
                  {"traefik.http.middlewares.m.addprefix.prefix", "/same"}};
  };
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", labels("Host(`a.test`)", "true"), "10.0.1.5")}),
       Awsvpc(2, "service:web", {Container("app", labels("Host(`b.test`)", "false"), "10.0.1.6")})},
      Options());
  EXPECT_EQ(json::value(b.config), Json(R"j({"http":{"middlewares":{"m":{"addPrefix":{"prefix":"/same"}}}}})j"));
  EXPECT_THAT(b.servers, IsEmpty());
  std::string origins = fmt::format("service-web-app-{}, service-web-app-{}", TaskId(1), TaskId(2));
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("HTTP router \"r\" defined multiple times with different "
                                              "configurations (in " + origins + ")"),
                                    HasSubstr("HTTP service \"s\" defined multiple times")));
}

TEST(EcsProviderTest, ADefaultRuleAndTheSameRuleWrittenOutConflictAsInTraefik) {
  // Router.DefaultRule takes part in Traefik's equality.
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("app", {}, "10.0.1.5")}),
       Awsvpc(2, "service:web", {Container("app", {{"traefik.http.routers.service-web-app.rule",
                                                    "Host(`service-web-app`)"}}, "10.0.1.6")})},
      Options());
  EXPECT_FALSE(Http(b).contains("routers"));
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("HTTP router \"service-web-app\" defined multiple times")));
  EXPECT_THAT(b.servers, SizeIs(2));
}

TEST(EcsProviderTest, ALaterContainerOfTheSameInstanceNameReplacesTheEarlier) {
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:web", {Container("a_b", {}, "10.0.1.5"), Container("a.b", {}, "10.0.1.6")})}, Options());
  EXPECT_EQ(OnlyUrl(b, "service-web-a-b"), "http://10.0.1.6:8080");
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("the earlier one is replaced")));
}

// --- The filter -----------------------------------------------------------------------------

TEST(EcsProviderTest, WhatIsFilteredIsNotRoutedAndNotAnError) {
  struct Case {
    std::string what;
    EcsTask task;
    EcsProviderOptions options = Options();
  };
  std::vector<Case> cases;
  {
    EcsTask t = Awsvpc(1, "service:web", {Container("app", {})});
    t.last_status = "PENDING";
    cases.push_back({"awsvpc: a task not running", t});
  }
  {
    EcsTask t = Awsvpc(1, "service:web", {Container("app", {})});
    t.desired_status = "STOPPED";
    cases.push_back({"desired STOPPED", t});
  }
  {
    EcsTask t = Awsvpc(1, "service:web", {Container("app", {})});
    t.health_status = "UNHEALTHY";
    cases.push_back({"awsvpc: UNHEALTHY", t});
  }
  {
    EcsTask t = Bridge(1, "service:web", "172.31.0.9", {Container("app", {})});
    t.machine_state = "stopped";
    cases.push_back({"bridge: the machine not running", t});
  }
  {
    EcsTask t = Bridge(1, "service:web", "", {Container("app", {})});
    cases.push_back({"bridge: no host IP", t});
  }
  {
    EcsProviderOptions o = Options();
    o.exposed_by_default = false;
    cases.push_back({"exposedByDefault false, no traefik.enable", Awsvpc(1, "service:web", {Container("app", {})}), o});
  }
  cases.push_back(
      {"traefik.enable=false", Awsvpc(1, "service:web", {Container("app", {{"traefik.enable", "false"}})})});
  {
    EcsProviderOptions o = Options();
    o.healthy_tasks_only = true;
    cases.push_back({"healthyTasksOnly, UNKNOWN", Awsvpc(1, "service:web", {Container("app", {})}), o});
  }
  {
    EcsProviderOptions o = Options();
    o.constraints = "Label(`rise.dev/controller-class`, `prod`)";
    cases.push_back({"constraint not matched",
                     Awsvpc(1, "service:web", {Container("app", {{"rise.dev/controller-class", "staging"}})}), o});
  }
  {
    EcsProviderOptions o = Options();
    o.constraints = "LabelRegex(`team`, `^pay`) && !Label(`rise.dev/controller-class`, `staging`)";
    cases.push_back({"a compound constraint not matched",
                     Awsvpc(1, "service:web", {Container("app", {{"team", "payments"},
                                                                 {"rise.dev/controller-class", "staging"}})}),
                     o});
  }
  for (const Case& c : cases) {
    EcsBuild b = BuildEcsConfiguration({c.task}, c.options);
    EXPECT_TRUE(b.config.empty()) << c.what << ": " << json::serialize(b.config);
    EXPECT_THAT(b.errors, IsEmpty()) << c.what;
    EXPECT_THAT(b.servers, IsEmpty()) << c.what;
  }
}

TEST(EcsProviderTest, WhatPassesTheFilter) {
  struct Case {
    std::string what;
    EcsTask task;
    EcsProviderOptions options = Options();
    std::string url;
  };
  std::vector<Case> cases;
  {
    EcsTask t = Awsvpc(1, "service:web", {Container("app", {})});
    t.last_status = "Running";
    cases.push_back({"awsvpc: lastStatus is lowercased", t, Options(), "http://10.0.1.5:8080"});
  }
  {
    EcsTask t = Bridge(1, "service:web", "172.31.0.9", {Container("app", {})});
    t.last_status = "PENDING";
    t.health_status = "UNHEALTHY";
    cases.push_back({"bridge: the machine's state counts, and health is not read", t, Options(),
                     "http://172.31.0.9:8080"});
  }
  {
    EcsTask t = Awsvpc(1, "service:web", {Container("app", {})});
    t.has_attachments = false;
    t.host_ip = "172.31.0.9";
    t.machine_state = "running";
    t.containers[0].network_bindings = {{8080, 31000, "tcp"}};
    cases.push_back({"awsvpc without attachments: read as bridge", t, Options(), "http://172.31.0.9:31000"});
  }
  {
    EcsProviderOptions o = Options();
    o.exposed_by_default = false;
    cases.push_back({"exposedByDefault false, traefik.enable=true",
                     Awsvpc(1, "service:web", {Container("app", {{"traefik.enable", "true"}})}), o,
                     "http://10.0.1.5:8080"});
  }
  {
    EcsProviderOptions o = Options();
    o.exposed_by_default = false;
    cases.push_back({"traefik.enable in another case, Go's bool spellings",
                     Awsvpc(1, "service:web", {Container("app", {{"traefik.ENABLE", "T"}})}), o,
                     "http://10.0.1.5:8080"});
  }
  {
    EcsTask t = Awsvpc(1, "service:web", {Container("app", {})});
    t.health_status = "HEALTHY";
    EcsProviderOptions o = Options();
    o.healthy_tasks_only = true;
    cases.push_back({"healthyTasksOnly, HEALTHY", t, o, "http://10.0.1.5:8080"});
  }
  {
    EcsProviderOptions o = Options();
    o.constraints = "Label(`rise.dev/controller-class`, `prod`)";
    cases.push_back({"constraint matched",
                     Awsvpc(1, "service:web", {Container("app", {{"rise.dev/controller-class", "prod"}})}), o,
                     "http://10.0.1.5:8080"});
  }
  {
    EcsProviderOptions o = Options();
    o.constraints = "LabelRegex(`team`, `^pay`) && !Label(`rise.dev/controller-class`, `staging`)";
    cases.push_back({"a compound constraint matched", Awsvpc(1, "service:web", {Container("app", {{"team", "payments"}})}),
                     o, "http://10.0.1.5:8080"});
  }
  for (const Case& c : cases) {
    EcsBuild b = BuildEcsConfiguration({c.task}, c.options);
    EXPECT_THAT(b.errors, IsEmpty()) << c.what;
    EXPECT_EQ(OnlyUrl(b, "service-web-app"), c.url) << c.what;
  }
}

TEST(EcsProviderTest, ProblemsBeforeTheFilterAreErrors) {
  struct Case {
    std::string what;
    EcsTask task;
    std::string error;
    EcsProviderOptions options = Options();
  };
  std::vector<Case> cases;
  cases.push_back({"awsvpc without an IP", Awsvpc(1, "service:web", {Container("app", {}, "")}),
                   "skip container app: no network interfaces"});
  {
    EcsTask t = Bridge(1, "service:web", "172.31.0.9", {Container("app", {})});
    t.machine_state.clear();
    cases.push_back({"bridge without a container instance", t, "unable to find container instance information"});
  }
  cases.push_back({"traefik.enable not a bool",
                   Awsvpc(1, "service:web", {Container("app", {{"traefik.enable", "yes"}})}), "invalid syntax"});
  cases.push_back({"a traefik.ecs. label", Awsvpc(1, "service:web", {Container("app", {{"traefik.ecs.x", "1"}})}),
                   "field not found, node: ecs"});
  cases.push_back({"traefik.enabled", Awsvpc(1, "service:web", {Container("app", {{"traefik.enabled", "true"}})}),
                   "field not found, node: enabled"});
  cases.push_back({"a root in another case",
                   Awsvpc(1, "service:web", {Container("app", {{"Traefik.enable", "true"}})}),
                   "invalid label root Traefik"});
  cases.push_back({"a bracket without its opening (Traefik panics)",
                   Awsvpc(1, "service:web", {Container("app", {{"traefik.enable]", "true"}})}), "invalid element"});
  cases.push_back({"traefik.enable with children",
                   Awsvpc(1, "service:web", {Container("app", {{"traefik.enable.x", "true"}})}),
                   "invalid node enable: bool"});
  {
    EcsTask t = Awsvpc(1, "service:web", {Container("app", {})});
    t.task_arn = "short";
    cases.push_back({"an ARN too short for an id", t, "too short"});
  }
  {
    EcsProviderOptions o = Options();
    o.constraints = "Label(`a`";
    cases.push_back({"a constraint that does not parse", Awsvpc(1, "service:web", {Container("app", {})}),
                     "error matching constraint expression", o});
  }
  for (const Case& c : cases) {
    EcsBuild b = BuildEcsConfiguration({c.task}, c.options);
    EXPECT_TRUE(b.config.empty()) << c.what;
    EXPECT_THAT(b.errors, ElementsAre(HasSubstr(c.error))) << c.what;
  }
}

TEST(EcsProviderTest, ALaterCopyOfATaskReplacesTheEarlierInItsPlace) {
  EcsTask old_copy = Awsvpc(1, "service:web", {Container("app", {}, "10.0.1.5")});
  EcsTask new_copy = Awsvpc(1, "service:web", {Container("app", {}, "10.0.1.9")});
  EcsBuild b = BuildEcsConfiguration({old_copy, new_copy}, Options());
  EXPECT_EQ(OnlyUrl(b, "service-web-app"), "http://10.0.1.9:8080");
}

// --- The drain timeout label ----------------------------------------------------------------

TEST(EcsProviderTest, DrainTimeoutLabel) {
  struct Case {
    std::string value;
    std::optional<int64_t> ms;
    bool error = false;
  };
  const Case cases[] = {
      {"30s", 30'000},     {"1m30s", 90'000}, {"2h", kMaxDrainTimeoutMs}, {"45", 45'000},
      {"0s", 0},           {"bogus", std::nullopt, true},                 {"-5s", std::nullopt, true},
  };
  for (const Case& c : cases) {
    EcsBuild b = BuildEcsConfiguration(
        {Awsvpc(1, "service:web", {Container("app", {{"paddock.edge.drain-timeout", c.value}})})}, Options());
    ASSERT_THAT(b.servers, SizeIs(1)) << c.value;
    EXPECT_EQ(b.servers[0].drain_timeout_ms, c.ms) << c.value;
    EXPECT_EQ(b.errors.size(), c.error ? 1u : 0u) << c.value;
  }
}

// --- Rise (research note §1.5) --------------------------------------------------------------

Labels RiseLabels(std::string_view controller_class) {
  return {
      {"traefik.enable", "true"},
      {"traefik.http.routers.shop-web.rule", "Host(`shop.apps.example.test`)"},
      {"traefik.http.routers.shop-web.entrypoints", "websecure"},
      {"traefik.http.routers.shop-web.service", "shop-web"},
      {"traefik.http.routers.shop-web.priority", "10"},
      {"traefik.http.routers.shop-web.middlewares", "shop-web-auth"},
      {"traefik.http.routers.shop-web.tls", "true"},
      {"traefik.http.routers.shop-web.tls.certresolver", "letsencrypt"},
      {"traefik.http.services.shop-web.loadbalancer.server.port", "3000"},
      {"traefik.http.services.shop-web.loadbalancer.healthcheck.path", "/healthz"},
      {"traefik.http.services.shop-web.loadbalancer.healthcheck.interval", "10s"},
      {"traefik.http.services.shop-web.loadbalancer.healthcheck.timeout", "5s"},
      {"traefik.http.services.shop-web.loadbalancer.healthcheck.scheme", "http"},
      {"traefik.http.middlewares.shop-web-auth.forwardauth.address",
       "http://rise.internal:3000/api/v1/auth/ingress?project=shop&access=member&signin_redirect=1"},
      {"traefik.http.middlewares.shop-web-auth.forwardauth.authResponseHeaders",
       "X-Auth-Request-Email,X-Auth-Request-User"},
      {"rise.dev/controller-class", std::string(controller_class)},
  };
}

TEST(EcsProviderTest, RisesTwoDeploymentsShareOneServiceDuringTheOverlap) {
  EcsContainer sidecar = Container("identity", {{"rise.dev/controller-class", "prod"}});
  std::vector<EcsTask> tasks = {
      // The outgoing deployment, and the new one, each an ECS service of its own.
      Awsvpc(1, "service:rise-shop-web-d1-app",
             {Container("app", RiseLabels("prod"), "10.0.1.5", {{3000, 3000, "tcp"}}), sidecar}),
      Awsvpc(2, "service:rise-shop-web-d2-app",
             {Container("app", RiseLabels("prod"), "10.0.2.7", {{3000, 3000, "tcp"}}), sidecar}),
      // Another install's task in the same cluster.
      Awsvpc(3, "service:rise-shop-web-d9-app",
             {Container("app", RiseLabels("staging"), "10.0.3.1", {{3000, 3000, "tcp"}})}),
  };
  EcsProviderOptions options;
  options.exposed_by_default = false;
  options.constraints = "Label(`rise.dev/controller-class`, `prod`)";
  EcsBuild b = BuildEcsConfiguration(tasks, options);
  EXPECT_THAT(b.errors, IsEmpty());
  EXPECT_EQ(json::value(b.config), Json(R"j({"http":{
      "middlewares":{"shop-web-auth":{"forwardAuth":{
          "address":"http://rise.internal:3000/api/v1/auth/ingress?project=shop&access=member&signin_redirect=1",
          "authResponseHeaders":["X-Auth-Request-Email","X-Auth-Request-User"]}}},
      "routers":{"shop-web":{"rule":"Host(`shop.apps.example.test`)","entryPoints":["websecure"],
          "service":"shop-web","priority":10,"middlewares":["shop-web-auth"],"tls":{"certResolver":"letsencrypt"}}},
      "services":{"shop-web":{"loadBalancer":{
          "servers":[{"url":"http://10.0.1.5:3000"},{"url":"http://10.0.2.7:3000"}],
          "healthCheck":{"path":"/healthz","interval":"10s","timeout":"5s","scheme":"http",
                         "followRedirects":true,"mode":"http"},
          "passHostHeader":true,"strategy":"wrr","responseForwarding":{"flushInterval":"100ms"}}}}}})j"));
  EXPECT_THAT(b.default_rule_routers, IsEmpty());
  ASSERT_THAT(b.servers, SizeIs(2));
  EXPECT_EQ(b.servers[0].task_arn, TaskArn(1));
  EXPECT_EQ(b.servers[1].task_arn, TaskArn(2));

  // The outgoing deployment retired: its server leaves, nothing else changes.
  tasks.erase(tasks.begin());
  EcsBuild after = BuildEcsConfiguration(tasks, options);
  EXPECT_EQ(OnlyUrl(after, "shop-web"), "http://10.0.2.7:3000");
  EXPECT_EQ(Http(after).at("routers"), Http(b).at("routers"));
}

// --- Bounds ---------------------------------------------------------------------------------

TEST(EcsProviderTest, TasksAndContainersPastTheBoundsAreIgnored) {
  std::vector<EcsTask> tasks;
  for (size_t i = 0; i < kMaxEcsTasks; ++i) tasks.push_back(Awsvpc(static_cast<int>(i + 1), "service:idle", {}));
  tasks.push_back(Awsvpc(static_cast<int>(kMaxEcsTasks + 1), "service:web", {Container("app", {})}));
  std::vector<EcsContainer> many;
  for (size_t i = 0; i <= kMaxEcsContainersPerTask; ++i) {
    many.push_back(Container(fmt::format("c{}", i), {}, fmt::format("10.1.{}.{}", i / 200, i % 200)));
  }
  tasks.insert(tasks.begin(), Awsvpc(0, "service:big", many));
  EcsBuild b = BuildEcsConfiguration(tasks, Options());
  EXPECT_EQ(OnlyUrl(b, "service-web-app"), "");  // the 10,001st task
  EXPECT_EQ(Http(b).at("services").as_object().size(), kMaxEcsContainersPerTask);
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr("2 tasks past the first 10000 ignored"),
                                    HasSubstr("1 containers past the first 100 ignored")));
}

TEST(EcsProviderTest, ErrorsAreBounded) {
  std::vector<EcsTask> tasks;
  for (int t = 0; t < 20; ++t) {
    std::vector<EcsContainer> containers;
    for (int c = 0; c < 100; ++c) containers.push_back(Container(fmt::format("c{}", c), {{"traefik.enable", "?"}}));
    tasks.push_back(Awsvpc(t + 1, "service:web", containers));
  }
  EcsBuild b = BuildEcsConfiguration(tasks, Options());
  ASSERT_EQ(b.errors.size(), kMaxEcsErrors);
  EXPECT_EQ(b.errors.back(), fmt::format("{} more errors not shown", 2000 - (kMaxEcsErrors - 1)));
  EXPECT_TRUE(b.config.empty());
}

TEST(EcsProviderTest, HostileNamesAndLabelsAreHandled) {
  std::string long_name(100'000, 'x');
  long_name[50'000] = '\xff';
  EcsBuild b = BuildEcsConfiguration(
      {Awsvpc(1, "service:" + long_name, {Container("\x01\x02", {{"traefik.http.routers.r.rule", ""}})}),
       Awsvpc(2, "", {Container("", {{"traefik.http.services..loadbalancer.server.port", "80"}})})},
      Options());
  // The first: a router with an empty rule gets the default one.
  ASSERT_TRUE(b.config.contains("http"));
  EXPECT_THAT(b.servers, SizeIs(1));
  EXPECT_THAT(b.errors, ElementsAre(HasSubstr(TaskId(2))));

  // Errors quote what a tenant wrote: bounded, control characters escaped.
  EcsBuild quoted = BuildEcsConfiguration(
      {Awsvpc(3, "service:web", {Container("a\nFORGED\x01", {}, "")}),
       Awsvpc(4, "service:" + long_name, {Container("app", {}, "")})},
      Options());
  ASSERT_THAT(quoted.errors, SizeIs(2));
  EXPECT_THAT(quoted.errors[0], HasSubstr("skip container a\\x0aFORGED\\x01: no network interfaces"));
  EXPECT_LE(quoted.errors[1].size(), 1024u + 3);
  EXPECT_TRUE(quoted.errors[1].ends_with("..."));
}

}  // namespace
}  // namespace paddock::edge
