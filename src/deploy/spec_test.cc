// The app spec: paddock.toml parsed (ParseAppSpec), its rules (CheckAppSpec), its JSON form and
// image overrides. Error cases assert the whole message, line included: the line is the contract.
#include "deploy/spec.h"

#include <fstream>
#include <map>
#include <sstream>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deploy/internal/spec_keys.h"

namespace paddock::deploy {
namespace {
namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

// Line numbers are written beside the lines the tests name.
constexpr std::string_view kExample = R"([project]
name = "shop"

[containers.web]
image = "registry.local/shop-web:1.4"
port = 8080
command = ["/bin/web", "--listen", ":8080"]
env = { GREETING = "hello", LOG_LEVEL = "info" }
health_check = { path = "/healthz", interval = "10s", timeout = "2s" }

[containers.worker]
image = "registry.local/shop-worker:1.4"

[deploy]
replicas = 2
cpu = "500m"
memory = "512Mi"
capacity = "fargate"

[routes]
"/" = "web"
"/admin" = { container = "web", access = "private" }

[environments.staging]
deploy = { replicas = 1 }
containers.web.env = { GREETING = "hi from staging" }

[environments.prod.containers.metrics]
image = "registry.local/metrics:2"
port = 9090

[environments.prod.routes]
"/metrics" = { container = "metrics" }
)";
// Lines of kExample: 6 port, 8 env, 21 "/", 22 "/admin", 25 staging's deploy, 26 staging's env.

// The message of a parse that must fail with kInvalidArgument.
std::string ParseError(std::string_view toml, const ParseOptions& options = {}) {
  StatusOr<AppSpec> spec = ParseAppSpec(toml, options);
  if (spec.ok()) return "(parsed)";
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << spec.status().message();
  return spec.status().message();
}

AppSpec Parse(std::string_view toml, const ParseOptions& options = {}) {
  StatusOr<AppSpec> spec = ParseAppSpec(toml, options);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? *spec : AppSpec{};
}

void ExpectSameSpec(const AppSpec& a, const AppSpec& b) {
  EXPECT_EQ(a.project, b.project);
  ASSERT_EQ(a.containers.size(), b.containers.size());
  for (size_t i = 0; i < a.containers.size(); ++i) {
    const ContainerSpec& x = a.containers[i];
    const ContainerSpec& y = b.containers[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.image, y.image);
    EXPECT_EQ(x.port, y.port);
    EXPECT_EQ(x.command, y.command);
    EXPECT_EQ(x.env, y.env);
    ASSERT_EQ(x.health_check.has_value(), y.health_check.has_value()) << x.name;
    if (x.health_check) {
      EXPECT_EQ(x.health_check->path, y.health_check->path);
      EXPECT_EQ(x.health_check->interval_seconds, y.health_check->interval_seconds);
      EXPECT_EQ(x.health_check->timeout_seconds, y.health_check->timeout_seconds);
    }
  }
  EXPECT_EQ(a.deploy.replicas, b.deploy.replicas);
  EXPECT_EQ(a.deploy.cpu, b.deploy.cpu);
  EXPECT_EQ(a.deploy.memory, b.deploy.memory);
  EXPECT_EQ(a.deploy.capacity, b.deploy.capacity);
  ASSERT_EQ(a.routes.size(), b.routes.size());
  for (size_t i = 0; i < a.routes.size(); ++i) {
    EXPECT_EQ(a.routes[i].path_prefix, b.routes[i].path_prefix);
    EXPECT_EQ(a.routes[i].container, b.routes[i].container);
    EXPECT_EQ(a.routes[i].access, b.routes[i].access);
  }
}

// ---- The example, and its JSON form ----

TEST(ParseAppSpec, ReadsEveryFieldOfTheExample) {
  AppSpec spec = Parse(kExample);
  EXPECT_EQ(spec.project, "shop");
  ASSERT_EQ(spec.containers.size(), 2u);
  const ContainerSpec& web = spec.containers[0];
  EXPECT_EQ(web.name, "web");
  EXPECT_EQ(web.image, "registry.local/shop-web:1.4");
  EXPECT_EQ(web.port, 8080);
  EXPECT_THAT(web.command, ElementsAre("/bin/web", "--listen", ":8080"));
  EXPECT_THAT(web.env, ElementsAre(Pair("GREETING", "hello"), Pair("LOG_LEVEL", "info")));
  ASSERT_TRUE(web.health_check);
  EXPECT_EQ(web.health_check->path, "/healthz");
  EXPECT_EQ(web.health_check->interval_seconds, 10);
  EXPECT_EQ(web.health_check->timeout_seconds, 2);
  const ContainerSpec& worker = spec.containers[1];
  EXPECT_EQ(worker.name, "worker");
  EXPECT_FALSE(worker.port);
  EXPECT_TRUE(worker.command.empty());
  EXPECT_FALSE(worker.health_check);
  EXPECT_EQ(spec.deploy.replicas, 2);
  EXPECT_EQ(spec.deploy.cpu, "500m");
  EXPECT_EQ(spec.deploy.memory, "512Mi");
  EXPECT_EQ(spec.deploy.capacity, Capacity::kFargate);
  ASSERT_EQ(spec.routes.size(), 2u);
  EXPECT_EQ(spec.routes[0].path_prefix, "/admin");
  EXPECT_EQ(spec.routes[0].access, Access::kPrivate);
  EXPECT_EQ(spec.routes[1].path_prefix, "/");
  EXPECT_EQ(spec.routes[1].container, "web");
  EXPECT_EQ(spec.routes[1].access, Access::kPublic);
}

TEST(ParseAppSpec, DefaultsWhatTheFileLeavesOut) {
  AppSpec spec = Parse(R"([project]
name = "tiny"
[containers.job]
image = "busybox"
[containers.api]
image = "api"
port = 80
health_check = { path = "/" }
)");
  ASSERT_EQ(spec.containers.size(), 2u);
  EXPECT_EQ(spec.containers[0].name, "api");  // by name, not file order
  EXPECT_EQ(spec.containers[0].health_check->interval_seconds, 10);
  EXPECT_EQ(spec.containers[0].health_check->timeout_seconds, 5);
  EXPECT_EQ(spec.deploy.replicas, 1);
  EXPECT_EQ(spec.deploy.cpu, "0.25");
  EXPECT_EQ(spec.deploy.memory, "512Mi");
  EXPECT_EQ(spec.deploy.capacity, Capacity::kFargate);
  EXPECT_TRUE(spec.routes.empty());
}

TEST(ParseAppSpec, RoundTripsThroughJson) {
  for (std::string_view env : {"", "staging", "prod"}) {
    AppSpec spec = Parse(kExample, {.environment = env});
    // In memory, and through the JSON text the controller stores.
    StatusOr<AppSpec> direct = AppSpecFromJson(ToJson(spec));
    ASSERT_TRUE(direct.ok()) << env << ": " << direct.status().message();
    ExpectSameSpec(spec, *direct);
    StatusOr<AppSpec> stored = AppSpecFromJson(json::parse(json::serialize(ToJson(spec))));
    ASSERT_TRUE(stored.ok()) << env << ": " << stored.status().message();
    ExpectSameSpec(spec, *stored);
  }
}

TEST(ParseAppSpec, OrdersRoutesLongestPrefixFirst) {
  AppSpec spec = Parse(R"([project]
name = "p"
[containers.web]
image = "web"
port = 80
[routes]
"/" = "web"
"/b" = "web"
"/api/v1" = "web"
"/a" = "web"
"/api" = "web"
)");
  std::vector<std::string> order;
  for (const Route& r : spec.routes) order.push_back(r.path_prefix);
  EXPECT_THAT(order, ElementsAre("/api/v1", "/api", "/a", "/b", "/"));
}

TEST(ParseAppSpec, AcceptsNumbersForCpuAndMemoryAndDurations) {
  AppSpec spec = Parse(R"([project]
name = "p"
[containers.web]
image = "web"
port = 80
health_check = { path = "/", interval = "1m", timeout = 30 }
[deploy]
cpu = 0.5
memory = 1024
)");
  EXPECT_EQ(spec.deploy.cpu, "0.5");
  EXPECT_EQ(spec.deploy.memory, "1024");
  EXPECT_EQ(spec.containers[0].health_check->interval_seconds, 60);
  EXPECT_EQ(spec.containers[0].health_check->timeout_seconds, 30);
  EXPECT_EQ(Parse("[project]\nname = \"p\"\n[containers.w]\nimage = \"w\"\n[deploy]\ncpu = 2\n").deploy.cpu, "2");
}

// ---- Environments ----

TEST(ParseAppSpec, EnvironmentMergesTablesAndReplacesValues) {
  AppSpec spec = Parse(kExample, {.environment = "staging"});
  EXPECT_EQ(spec.deploy.replicas, 1);  // replaced
  EXPECT_EQ(spec.deploy.cpu, "500m");  // deploy's other keys kept
  EXPECT_EQ(spec.deploy.memory, "512Mi");
  const ContainerSpec& web = spec.containers[0];
  // env merged key by key: GREETING overridden, LOG_LEVEL kept.
  EXPECT_THAT(web.env, ElementsAre(Pair("GREETING", "hi from staging"), Pair("LOG_LEVEL", "info")));
  EXPECT_EQ(web.port, 8080);
  EXPECT_THAT(web.command, ElementsAre("/bin/web", "--listen", ":8080"));
  EXPECT_EQ(spec.routes.size(), 2u);
}

TEST(ParseAppSpec, EnvironmentMayAddAContainerAndARoute) {
  AppSpec spec = Parse(kExample, {.environment = "prod"});
  ASSERT_EQ(spec.containers.size(), 3u);
  EXPECT_EQ(spec.containers[0].name, "metrics");
  EXPECT_EQ(spec.containers[0].image, "registry.local/metrics:2");
  EXPECT_EQ(spec.containers[0].port, 9090);
  ASSERT_EQ(spec.routes.size(), 3u);
  EXPECT_EQ(spec.routes[0].path_prefix, "/metrics");
  EXPECT_EQ(spec.routes[0].container, "metrics");
  EXPECT_EQ(spec.deploy.replicas, 2);  // prod leaves deploy alone
  // Without an environment, none is applied.
  EXPECT_EQ(Parse(kExample).containers.size(), 2u);
}

TEST(ParseAppSpec, EnvironmentReplacesAnArrayWhole) {
  AppSpec spec = Parse(R"([project]
name = "p"
[containers.web]
image = "web"
command = ["a", "b", "c"]
[environments.dev]
containers.web.command = ["x"]
)",
                       {.environment = "dev"});
  EXPECT_THAT(spec.containers[0].command, ElementsAre("x"));
}

TEST(ParseAppSpec, UnknownEnvironmentIsAnErrorNamingIt) {
  EXPECT_EQ(ParseError(kExample, {.environment = "qa"}),
            "paddock.toml: environment \"qa\" is not defined (it defines prod, staging)");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n[containers.w]\nimage = \"w\"\n", {.environment = "qa"}),
            "paddock.toml: environment \"qa\" is not defined (the file has no [environments.<name>] table)");
}

TEST(ParseAppSpec, EnvironmentErrorsNameTheEnvironmentAndItsLine) {
  const std::string base = "[project]\nname = \"p\"\n[containers.web]\nimage = \"web\"\nport = 80\n";  // lines 1-5
  // A typo in an environment that is not deployed is still an error.
  EXPECT_EQ(ParseError(base + "[environments.prod]\ncontainers.web.imgae = \"x\"\n"),
            "paddock.toml:7: unknown key environments.prod.containers.web.imgae");
  EXPECT_EQ(ParseError(base + "[environments.prod]\nproject = { name = \"q\" }\n"),
            "paddock.toml:7: unknown key environments.prod.project");
  EXPECT_EQ(ParseError(base + "[environments.prod]\ndeploy = { replicas = \"2\" }\n"),
            "paddock.toml:7: environments.prod.deploy.replicas must be an integer");
  EXPECT_EQ(ParseError(base + "[environments]\nprod = 3\n"), "paddock.toml:7: environments.prod must be a table");
  EXPECT_EQ(ParseError("environments = 3\n" + base), "paddock.toml:1: environments must be a table");
  // A container an environment adds needs an image; the error is at the environment's line.
  EXPECT_EQ(ParseError(base + "[environments.prod]\n\n[environments.prod.containers.side]\nport = 81\n",
                       {.environment = "prod"}),
            "paddock.toml:8: containers.side.image is required");
  // A rule broken by a value the environment set is reported at that value's line.
  EXPECT_EQ(ParseError(base + "[environments.prod]\ndeploy.replicas = 3\ncontainers.web.env = { PORT = \"1\" }\n",
                       {.environment = "prod"}),
            "paddock.toml:8: containers.web.env.PORT is set by Paddock (PORT and PADDOCK_* are reserved)");
  EXPECT_EQ(ParseError(base + "[environments.prod]\n\n\ncontainers.web.image = \"a b\"\n", {.environment = "prod"}),
            "paddock.toml:9: containers.web.image must be a non-empty image reference without whitespace");
}

// ---- Errors, each at its line ----

TEST(ParseAppSpec, SyntaxErrorGivesTheParsersLineAndColumn) {
  std::string error = ParseError("[project]\nname = \"p\"\n[containers.web]\nimage = \"web\n");
  EXPECT_THAT(error, StartsWith("paddock.toml:4:"));
  error = ParseError("[project]\nname = \"p\"\nname = \"q\"\n", {.environment = "", .file_name = "apps/shop.toml"});
  EXPECT_THAT(error, StartsWith("apps/shop.toml:3:8: "));
  EXPECT_THAT(error, HasSubstr("name"));
  // A route routed twice is a key given twice: TOML refuses it.
  EXPECT_THAT(ParseError("[project]\nname = \"p\"\n[containers.web]\nimage = \"w\"\nport = 1\n[routes]\n\"/\" = "
                         "\"web\"\n\"/\" = \"web\"\n"),
              StartsWith("paddock.toml:8:7: "));
}

TEST(ParseAppSpec, WrongTypesAreErrorsAtTheirLine) {
  const std::string head = "[project]\nname = \"p\"\n[containers.web]\nimage = \"web\"\n";  // lines 1-4
  EXPECT_EQ(ParseError(head + "port = \"8080\"\n"), "paddock.toml:5: containers.web.port must be an integer");
  EXPECT_EQ(ParseError(head + "port = 80.0\n"), "paddock.toml:5: containers.web.port must be an integer");
  EXPECT_EQ(ParseError(head + "command = \"/bin/web\"\n"),
            "paddock.toml:5: containers.web.command must be an array of strings");
  EXPECT_EQ(ParseError(head + "command = [\"/bin/web\", 1]\n"),
            "paddock.toml:5: containers.web.command must be an array of strings");
  EXPECT_EQ(ParseError(head + "env = { A = 1 }\n"), "paddock.toml:5: containers.web.env.A must be a string");
  EXPECT_EQ(ParseError(head + "env = \"A=1\"\n"), "paddock.toml:5: containers.web.env must be a table");
  EXPECT_EQ(ParseError(head + "health_check = \"/\"\n"), "paddock.toml:5: containers.web.health_check must be a table");
  EXPECT_EQ(ParseError(head + "port = 1\nhealth_check = { path = \"/\", interval = \"500ms\" }\n"),
            "paddock.toml:6: containers.web.health_check.interval must be a duration such as \"10s\" or \"1m\", or a "
            "number of seconds (got \"500ms\")");
  EXPECT_EQ(ParseError(head + "port = 1\nhealth_check = { path = \"/\", timeout = 1.5 }\n"),
            "paddock.toml:6: containers.web.health_check.timeout must be a duration such as \"10s\" or \"1m\", or a "
            "number of seconds");
  EXPECT_EQ(ParseError("[project]\nname = 3\n"), "paddock.toml:2: project.name must be a string");
  EXPECT_EQ(ParseError("project = \"p\"\n"), "paddock.toml:1: project must be a table");
  EXPECT_EQ(ParseError("containers = [\"web\"]\n[project]\nname = \"p\"\n"),
            "paddock.toml:1: containers must be a table");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n[containers]\nweb = \"nginx\"\n"),
            "paddock.toml:4: containers.web must be a table");
  EXPECT_EQ(ParseError(head + "[deploy]\nreplicas = 1.5\n"), "paddock.toml:6: deploy.replicas must be an integer");
  EXPECT_EQ(ParseError(head + "[deploy]\ncpu = true\n"),
            "paddock.toml:6: deploy.cpu must be a string such as \"0.5\" or \"500m\", or a number of vCPU");
  EXPECT_EQ(ParseError(head + "[deploy]\nmemory = 0.5\n"),
            "paddock.toml:6: deploy.memory must be a string such as \"512Mi\" or \"1Gi\", or an integer number of MiB");
  EXPECT_EQ(ParseError(head + "[deploy]\ncapacity = \"spot\"\n"),
            "paddock.toml:6: deploy.capacity must be fargate, ec2 or interruptible (got \"spot\")");
  EXPECT_EQ(ParseError(head + "[routes]\n\"/\" = 1\n"),
            "paddock.toml:6: routes./ must be a container's name or a table { container = \"...\", access = "
            "\"public\" }");
  EXPECT_EQ(ParseError(head + "port = 1\n[routes]\n\"/\" = { container = \"web\", access = \"internal\" }\n"),
            "paddock.toml:7: routes./.access must be public or private (got \"internal\")");
}

TEST(ParseAppSpec, OutOfRangeIntegersAreCaughtWithTheirLine) {
  const std::string head = "[project]\nname = \"p\"\n[containers.web]\nimage = \"web\"\n";
  EXPECT_EQ(ParseError(head + "port = 70000\n"),
            "paddock.toml:5: containers.web.port must be between 1 and 65535 (got 70000)");
  EXPECT_EQ(ParseError(head + "port = -1\n"),
            "paddock.toml:5: containers.web.port must be between 1 and 65535 (got -1)");
  EXPECT_EQ(ParseError(head + "port = 0\n"), "paddock.toml:5: containers.web.port must be between 1 and 65535 (got 0)");
  EXPECT_EQ(ParseError(head + "[deploy]\nreplicas = 101\n"),
            "paddock.toml:6: deploy.replicas must be between 0 and 100 (got 101)");
  EXPECT_EQ(ParseError(head + "[deploy]\nreplicas = -9223372036854775808\n"),
            "paddock.toml:6: deploy.replicas must be between 0 and 100 (got -9223372036854775808)");
  EXPECT_EQ(ParseError(head + "port = 1\nhealth_check = { path = \"/\", interval = 9999999999 }\n"),
            "paddock.toml:6: containers.web.health_check.interval is out of range (got 9999999999)");
  EXPECT_EQ(ParseError(head + "port = 1\nhealth_check = { path = \"/\", interval = \"9999999m\" }\n"),
            "paddock.toml:6: containers.web.health_check.interval is out of range (got \"9999999m\")");
}

TEST(ParseAppSpec, UnknownKeysAreErrorsAtEveryLevel) {
  const std::string head = "[project]\nname = \"p\"\n[containers.web]\nimage = \"web\"\nport = 1\n";  // lines 1-5
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\nversion = 2\n"), "paddock.toml:3: unknown key project.version");
  EXPECT_EQ(ParseError(head + "\n\n\nimgae = \"x\"\n"), "paddock.toml:9: unknown key containers.web.imgae");
  EXPECT_EQ(ParseError(head + "health_check = { path = \"/\", retries = 3 }\n"),
            "paddock.toml:6: unknown key containers.web.health_check.retries");
  EXPECT_EQ(ParseError(head + "[deploy]\nreplica = 2\n"), "paddock.toml:7: unknown key deploy.replica");
  EXPECT_EQ(ParseError(head + "[routes]\n\"/\" = { container = \"web\", acess = \"private\" }\n"),
            "paddock.toml:7: unknown key routes./.acess");
  EXPECT_EQ(ParseError(head + "[volumes]\ndata = \"/data\"\n"), "paddock.toml:6: unknown key volumes");
  EXPECT_EQ(ParseError("name = \"p\"\n"), "paddock.toml:1: unknown key name");
}

TEST(ParseAppSpec, MissingRequiredValuesAreErrors) {
  EXPECT_EQ(ParseError("[containers.web]\nimage = \"web\"\n"),
            "paddock.toml:1: project.name is required (a [project] table)");
  EXPECT_EQ(ParseError("\n[project]\n[containers.web]\nimage = \"web\"\n"), "paddock.toml:2: project.name is required");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n\n[containers.web]\nport = 80\n"),
            "paddock.toml:4: containers.web.image is required");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n[containers.web]\nimage = \"w\"\nport = 80\n"
                       "health_check = { interval = \"5s\" }\n"),
            "paddock.toml:6: containers.web.health_check.path is required");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n[containers.web]\nimage = \"w\"\nport = 80\n[routes]\n"
                       "\"/\" = { access = \"private\" }\n"),
            "paddock.toml:7: routes./.container is required");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n"), "paddock.toml:1: containers must name at least one container");
}

TEST(ParseAppSpec, RuleBreaksAreMappedToTheirLine) {
  const std::string head = "[project]\nname = \"p\"\n[containers.web]\nimage = \"web\"\n";  // lines 1-4
  EXPECT_EQ(ParseError(head + "port = 80\nenv = { A = \"1\", PORT = \"81\" }\n"),
            "paddock.toml:6: containers.web.env.PORT is set by Paddock (PORT and PADDOCK_* are reserved)");
  EXPECT_EQ(ParseError(head + "port = 80\n[containers.web.env]\nA = \"1\"\nPADDOCK_TOKEN = \"x\"\n"),
            "paddock.toml:8: containers.web.env.PADDOCK_TOKEN is set by Paddock (PORT and PADDOCK_* are reserved)");
  EXPECT_EQ(ParseError(head + "health_check = { path = \"/\" }\n"),
            "paddock.toml:5: containers.web.health_check needs the container's port");
  EXPECT_EQ(ParseError(head + "[routes]\n\"/\" = \"web\"\n"),
            "paddock.toml:6: routes./ routes to \"web\", which has no port");
  EXPECT_EQ(ParseError(head + "port = 1\n[routes]\n\"/\" = \"web\"\n\"/x\" = \"api\"\n"),
            "paddock.toml:8: routes./x names no container (\"api\")");
  EXPECT_EQ(ParseError("[project]\nname = \"Shop\"\n[containers.web]\nimage = \"web\"\n"),
            "paddock.toml:2: project.name must be 1 to 63 lowercase letters, digits and '-', starting with a letter "
            "and not ending with '-' (got \"Shop\")");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n\n[containers.Web]\nimage = \"web\"\n"),
            "paddock.toml:4: containers.Web names must be 1 to 32 lowercase letters, digits and '-', starting with a "
            "letter");
  EXPECT_EQ(ParseError("[project]\nname = \"p\"\n[containers.web]\nimage = \"has space\"\n"),
            "paddock.toml:4: containers.web.image must be a non-empty image reference without whitespace");
  EXPECT_EQ(ParseError(head + "[deploy]\ncpu = \"abc\"\n"),
            "paddock.toml:6: deploy.cpu cpu \"abc\" is not a CPU quantity (vCPU such as \"0.5\" or \"2\", or "
            "millicores such as \"500m\")");
}

TEST(ParseAppSpec, RefusesMoreThan256KiB) {
  std::string text = "[project]\nname = \"p\"\n[containers.web]\nimage = \"web\"\n";
  text += std::string(256 * 1024 - text.size(), '#');
  EXPECT_TRUE(ParseAppSpec(text).ok());  // comments only past the header: exactly 256 KiB parses
  text += "\n";
  EXPECT_EQ(ParseError(text), "paddock.toml: is 262145 bytes, more than the 256 KiB an app spec may have");
}

// ---- CheckAppSpec on a spec built in code ----

AppSpec Valid() {
  AppSpec spec;
  spec.project = "shop";
  ContainerSpec web;
  web.name = "web";
  web.image = "web:1";
  web.port = 8080;
  ContainerSpec worker;
  worker.name = "worker";
  worker.image = "worker:1";
  spec.containers = {web, worker};
  spec.routes.push_back({.path_prefix = "/", .container = "web", .access = Access::kPublic});
  return spec;
}

// D8: [identity] audiences, file name -> audience, kept through the record's JSON; a bad file
// name or audience, or the sidecar's own name for a container, is an error at its line.
TEST(ParseAppSpec, IdentityAudiencesAreReadCheckedAndKept) {
  constexpr std::string_view kBase = "[project]\nname = \"shop\"\n\n[containers.web]\nimage = \"busybox\"\n\n";
  StatusOr<AppSpec> spec = ParseAppSpec(std::string(kBase) +
                                        "[identity]\naudiences = { api = \"https://api.example.com\", \"vault.jwt\" = \"vault\" }\n");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->identity_audiences,
            (std::map<std::string, std::string>{{"api", "https://api.example.com"}, {"vault.jwt", "vault"}}));
  StatusOr<AppSpec> back = AppSpecFromJson(ToJson(*spec));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->identity_audiences, spec->identity_audiences);
  EXPECT_FALSE(ToJson(*ParseAppSpec(kBase)).contains("identity")) << "no [identity]: nothing in the record";

  EXPECT_EQ(ParseAppSpec(std::string(kBase) + "[identity]\naudiences = { \"../x\" = \"a\" }\n").status().message(),
            "paddock.toml:8: identity.audiences.../x is not a token file name (1 to 64 letters, digits, '.', '_' and "
            "'-', starting with a letter or digit)");
  EXPECT_EQ(ParseAppSpec(std::string(kBase) + "[identity]\naudiences = { api = \"a b\" }\n").status().message(),
            "paddock.toml:8: identity.audiences.api must be an audience of 1 to 256 printable characters without "
            "whitespace, quotes, '\\', '`' or '$'");
  EXPECT_EQ(ParseAppSpec(std::string(kBase) + "[identity]\naudiences = { api = \"$(id)\" }\n").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAppSpec(std::string(kBase) + "[identity]\ntokens = {}\n").status().message(),
            "paddock.toml:8: unknown key identity.tokens");
  EXPECT_EQ(ParseAppSpec("[project]\nname = \"shop\"\n[containers.paddock-identity]\nimage = \"busybox\"\n")
                .status()
                .message(),
            "paddock.toml:3: containers.paddock-identity is the identity sidecar's name (D8): choose another");
}

TEST(CheckAppSpec, AcceptsAValidSpec) { EXPECT_FALSE(CheckAppSpec(Valid())); }

TEST(CheckAppSpec, ReservedEnvironmentVariables) {
  for (std::string name : {"PORT", "PADDOCK_TASK", "PADDOCK_"}) {
    AppSpec spec = Valid();
    spec.containers[0].env[name] = "1";
    std::optional<SpecProblem> p = CheckAppSpec(spec);
    ASSERT_TRUE(p) << name;
    EXPECT_EQ(p->path, "containers.web.env." + name);
    EXPECT_EQ(p->message, "containers.web.env." + name + " is set by Paddock (PORT and PADDOCK_* are reserved)");
  }
  AppSpec spec = Valid();
  spec.containers[0].env["PORTS"] = "1";  // only PORT itself
  spec.containers[0].env["MY_PADDOCK_X"] = "1";
  EXPECT_FALSE(CheckAppSpec(spec));
}

TEST(CheckAppSpec, RouteToAContainerWithoutPort) {
  AppSpec spec = Valid();
  spec.routes.push_back({.path_prefix = "/jobs", .container = "worker", .access = Access::kPublic});
  std::optional<SpecProblem> p = CheckAppSpec(spec);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->path, "routes./jobs");
  EXPECT_EQ(p->message, "routes./jobs routes to \"worker\", which has no port");
}

TEST(CheckAppSpec, HealthCheckWithoutPort) {
  AppSpec spec = Valid();
  spec.containers[1].health_check = HealthCheck{.path = "/healthz", .interval_seconds = 10, .timeout_seconds = 5};
  std::optional<SpecProblem> p = CheckAppSpec(spec);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->path, "containers.worker.health_check");
  EXPECT_EQ(p->message, "containers.worker.health_check needs the container's port");
}

// A route's prefix is written into the edge's rule: one that could close the rule's quoting and
// add a matcher (another project's Host) is refused, as is whitespace.
TEST(CheckAppSpec, ARoutePrefixCannotInjectIntoTheRule) {
  for (std::string prefix : {"/x`) || Host(`other.localhost", "/a b", "/tab\there"}) {
    AppSpec spec = Valid();
    spec.routes.push_back({.path_prefix = prefix, .container = "web", .access = Access::kPublic});
    std::optional<SpecProblem> p = CheckAppSpec(spec);
    ASSERT_TRUE(p) << prefix;
    EXPECT_EQ(p->message, "routes." + prefix + " must not contain whitespace or '`'");
  }
}

TEST(CheckAppSpec, AHealthCheckPathIsOneLineWithoutBackticks) {
  for (std::string path : {"/health\r\nX-Injected: 1", "/a b", "/x`y"}) {
    AppSpec spec = Valid();
    spec.containers[0].health_check = HealthCheck{.path = path, .interval_seconds = 10, .timeout_seconds = 5};
    std::optional<SpecProblem> p = CheckAppSpec(spec);
    ASSERT_TRUE(p) << path;
    EXPECT_EQ(p->path, "containers.web.health_check.path");
  }
}

TEST(CheckAppSpec, DuplicateRoute) {
  AppSpec spec = Valid();
  spec.routes.push_back({.path_prefix = "/", .container = "web", .access = Access::kPrivate});
  std::optional<SpecProblem> p = CheckAppSpec(spec);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->path, "routes./");
  EXPECT_EQ(p->message, "routes./ is routed twice");
}

TEST(CheckAppSpec, HealthCheckTimingAndSize) {
  AppSpec spec = Valid();
  spec.containers[0].health_check = HealthCheck{.path = "/", .interval_seconds = 5, .timeout_seconds = 5};
  std::optional<SpecProblem> p = CheckAppSpec(spec);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->path, "containers.web.health_check.timeout");
  spec = Valid();
  spec.deploy.cpu = "32";
  p = CheckAppSpec(spec);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->path, "deploy");
  EXPECT_THAT(p->message, HasSubstr("16 vCPU"));
}

// ---- OverrideImage ----

TEST(OverrideImage, ReplacesTheNamedContainersImage) {
  AppSpec spec = Valid();
  ASSERT_TRUE(OverrideImage(spec, "worker=registry.local/worker:2").ok());
  EXPECT_EQ(spec.containers[1].image, "registry.local/worker:2");
  EXPECT_EQ(spec.containers[0].image, "web:1");
  // Only the first '=' separates: an image may not contain one, but the check is CheckAppSpec's.
  ASSERT_TRUE(OverrideImage(spec, "web=registry.local/web@sha256:abc").ok());
  EXPECT_EQ(spec.containers[0].image, "registry.local/web@sha256:abc");
}

TEST(OverrideImage, RefusesUnknownContainersAndEmptyImages) {
  AppSpec spec = Valid();
  Status s = OverrideImage(spec, "api=api:2");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--image names no container of the spec (\"api\")");
  s = OverrideImage(spec, "web=");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--image web= names no image");
  s = OverrideImage(spec, "web");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("CONTAINER=IMAGE"));
  s = OverrideImage(spec, "web=a b");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), StartsWith("containers.web.image"));
  EXPECT_EQ(spec.containers[0].image, "web:1");
}

// ---- The JSON Schema editors read ----

json::value ReadSchema() {
  std::ifstream in(std::string(PADDOCK_SOURCE_DIR) + "/docs/paddock-toml.schema.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << "docs/paddock-toml.schema.json";
  return json::parse(text.str());
}

// `node`, or the definition its "$ref" ("#/$defs/<name>") points to.
const json::object& Resolve(const json::value& schema, const json::value& node) {
  const json::object& o = node.as_object();
  if (const json::value* ref = o.if_contains("$ref")) {
    std::string_view target = ref->as_string();
    EXPECT_THAT(std::string(target), StartsWith("#/$defs/"));
    return schema.at("$defs").at(target.substr(8)).as_object();
  }
  return o;
}

std::vector<std::string> PropertyNames(const json::object& o) {
  std::vector<std::string> names;
  for (const auto& [k, v] : o.at("properties").as_object()) names.emplace_back(k);
  std::sort(names.begin(), names.end());
  return names;
}

template <size_t N>
std::vector<std::string> Sorted(const std::array<std::string_view, N>& keys) {
  std::vector<std::string> names(keys.begin(), keys.end());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Schema, DescribesExactlyTheKeysTheParserAccepts) {
  const json::value schema = ReadSchema();
  EXPECT_EQ(schema.at("$schema").as_string(), "https://json-schema.org/draft/2020-12/schema");
  const json::object& root = Resolve(schema, schema);
  EXPECT_EQ(PropertyNames(root), Sorted(internal::kTopLevelKeys));
  EXPECT_FALSE(root.at("additionalProperties").as_bool());
  const json::value& props = root.at("properties");
  EXPECT_EQ(PropertyNames(Resolve(schema, props.at("project"))), Sorted(internal::kProjectKeys));
  const json::object& container = Resolve(schema, props.at("containers").at("additionalProperties"));
  EXPECT_EQ(PropertyNames(container), Sorted(internal::kContainerKeys));
  EXPECT_FALSE(container.at("additionalProperties").as_bool());
  EXPECT_EQ(PropertyNames(Resolve(schema, container.at("properties").at("health_check"))),
            Sorted(internal::kHealthCheckKeys));
  EXPECT_EQ(PropertyNames(Resolve(schema, props.at("deploy"))), Sorted(internal::kDeployKeys));
  EXPECT_EQ(PropertyNames(Resolve(schema, props.at("identity"))), Sorted(internal::kIdentityKeys));
  // A route is a container's name or a table: the table's keys.
  const json::object& routes = Resolve(schema, props.at("routes"));
  bool found_table = false;
  for (const json::value& alternative : Resolve(schema, routes.at("additionalProperties")).at("oneOf").as_array()) {
    const json::object& a = Resolve(schema, alternative);
    if (a.if_contains("properties")) {
      EXPECT_EQ(PropertyNames(a), Sorted(internal::kRouteKeys));
      found_table = true;
    }
  }
  EXPECT_TRUE(found_table);
  const json::object& environment = Resolve(schema, props.at("environments").at("additionalProperties"));
  EXPECT_EQ(PropertyNames(environment), Sorted(internal::kEnvironmentKeys));
  // An environment's container is the same definition, without the required image.
  EXPECT_EQ(PropertyNames(Resolve(schema, environment.at("properties").at("containers").at("additionalProperties"))),
            Sorted(internal::kContainerKeys));
}

}  // namespace
}  // namespace paddock::deploy
