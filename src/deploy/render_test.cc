// What a deployment becomes on ECS: names, labels, the task definition, the service and its tags —
// and, through the edge's own ECS provider, what the edge makes of the labels.
#include "deploy/render.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "edge/ecs_provider.h"

namespace paddock::deploy {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

ControllerSettings Settings() {
  ControllerSettings s;
  s.controller_class = "prod";
  s.base_domain = "apps.test";
  s.auth_url = "http://paddock.internal:8000/auth/ingress";
  s.subnets = {"subnet-1"};
  s.security_groups = {"sg-1"};
  s.execution_role_arn = "arn:aws:iam::000000000000:role/exec";
  s.cloudmap_namespace = "apps.paddock.local";
  return s;
}

DeploymentRef Ref(std::string id = "20261203-1830-ab12") { return {.project = "shop", .group = "default", .id = id}; }

// web (port 8080, health check) serves "/" and, privately, "/admin"; worker has no port.
AppSpec ShopApp() {
  AppSpec app;
  app.project = "shop";
  ContainerSpec web{.name = "web",
                    .image = "registry.local/shop-web:1.4",
                    .port = 8080,
                    .command = {"/bin/web", "--listen", ":8080"},
                    .env = {{"GREETING", "hello"}},
                    .health_check = HealthCheck{.path = "/healthz", .interval_seconds = 10, .timeout_seconds = 2}};
  ContainerSpec worker;
  worker.name = "worker";
  worker.image = "registry.local/shop-worker:1.4";
  app.containers = {web, worker};
  app.deploy.replicas = 2;
  app.routes = {{.path_prefix = "/admin", .container = "web", .access = Access::kPrivate},
                {.path_prefix = "/", .container = "web", .access = Access::kPublic}};
  return app;
}

TaskSize Quarter() {
  TaskSize size;
  size.cpu_units = 256;
  size.memory_mib = 512;
  return size;
}

std::vector<Workload> MustRender(const ControllerSettings& s, const DeploymentRef& ref, const AppSpec& app,
                                 const SecretRefs& secrets = {}) {
  StatusOr<std::vector<Workload>> ws = Render(s, ref, app, Quarter(), secrets);
  EXPECT_TRUE(ws.ok()) << ws.status().message();
  return ws.ok() ? *ws : std::vector<Workload>{};
}

const json::object& OnlyContainer(const Workload& w) {
  return w.task_definition.at("containerDefinitions").as_array().at(0).as_object();
}

std::map<std::string, std::string> Labels(const Workload& w) {
  std::map<std::string, std::string> labels;
  for (const auto& [k, v] : OnlyContainer(w).at("dockerLabels").as_object()) labels[k] = std::string(v.as_string());
  return labels;
}

std::map<std::string, std::string> Env(const Workload& w) {
  std::map<std::string, std::string> env;
  for (const json::value& e : OnlyContainer(w).at("environment").as_array()) {
    env[std::string(e.at("name").as_string())] = std::string(e.at("value").as_string());
  }
  return env;
}

bool IsEcsName(const std::string& s) {
  return !s.empty() && s.size() <= 255 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// --- Names ---------------------------------------------------------------------------------------

TEST(NamesTest, ShortNamesAreTheJoinedParts) {
  ControllerSettings s = Settings();
  EXPECT_EQ(FamilyName(s, Ref(), "web"), "paddock_shop_default_web");
  EXPECT_EQ(ServiceName(s, Ref(), "web"), "paddock_shop_default_20261203-1830-ab12_web");
  EXPECT_EQ(DiscoveryName(s, Ref(), "web"), "shop-default-web");
  // Characters ECS does not take become '-'.
  DeploymentRef odd{.project = "shop", .group = "feature/x.y", .id = "d1"};
  EXPECT_EQ(FamilyName(s, odd, "web"), "paddock_shop_feature-x-y_web");
  // '_' joins the parts, so "a-b" + "c" and "a" + "b-c" are different names.
  EXPECT_NE(FamilyName(s, {.project = "a-b", .group = "c", .id = "d1"}, "web"),
            FamilyName(s, {.project = "a", .group = "b-c", .id = "d1"}, "web"));
  EXPECT_NE(ServiceName(s, {.project = "a-b", .group = "default", .id = "d1"}, "web"),
            ServiceName(s, {.project = "a", .group = "b-default", .id = "d1"}, "web"));
  EXPECT_EQ(DiscoveryName(s, {.project = "shop", .group = "PR_12", .id = "d1"}, "web"), "shop-pr-12-web");
}

TEST(NamesTest, LongProjectsGiveStableValidDistinctNames) {
  ControllerSettings s = Settings();
  const std::string long_a = std::string(199, 'a') + "x";
  const std::string long_b = std::string(199, 'a') + "y";
  ASSERT_EQ(long_a.size(), 200u);
  DeploymentRef a{.project = long_a, .group = "default", .id = "20261203-1830-ab12"};
  DeploymentRef b{.project = long_b, .group = "default", .id = "20261203-1830-ab12"};
  for (auto name : {&FamilyName, &ServiceName}) {
    std::string na = name(s, a, "web");
    std::string nb = name(s, b, "web");
    EXPECT_TRUE(IsEcsName(na)) << na;
    EXPECT_TRUE(IsEcsName(nb)) << nb;
    EXPECT_NE(na, nb);
    EXPECT_EQ(na, name(s, a, "web"));
  }
  // 200 characters still fit whole; past 255, a name keeps its first 238 and ends in "-" + 16 hex,
  // so two names that differ only past the cut stay distinct.
  EXPECT_EQ(FamilyName(s, a, "web"), "paddock_" + long_a + "_default_web");
  EXPECT_EQ(ServiceName(s, a, "web"), "paddock_" + long_a + "_default_20261203-1830-ab12_web");
  DeploymentRef lc{.project = std::string(260, 'a') + "x", .group = "default", .id = "d1"};
  DeploymentRef ld{.project = std::string(260, 'a') + "y", .group = "default", .id = "d1"};
  for (auto name : {&FamilyName, &ServiceName}) {
    std::string nc = name(s, lc, "web");
    EXPECT_EQ(nc.size(), 255u);
    EXPECT_TRUE(IsEcsName(nc)) << nc;
    EXPECT_EQ(nc.substr(0, 239), "paddock_" + std::string(230, 'a') + "-");
    EXPECT_NE(nc, name(s, ld, "web"));
    EXPECT_EQ(nc, name(s, lc, "web"));
  }

  std::string da = DiscoveryName(s, a, "web");
  std::string db = DiscoveryName(s, b, "web");
  EXPECT_LE(da.size(), 63u);
  EXPECT_NE(da, db);
  EXPECT_EQ(da, DiscoveryName(s, a, "web"));
  EXPECT_TRUE(std::all_of(da.begin(), da.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }));
  EXPECT_NE(da.back(), '-');
}

TEST(NamesTest, AppHostAndUrl) {
  ControllerSettings s = Settings();
  EXPECT_EQ(AppHost(s, "shop", "default"), "shop.apps.test");
  EXPECT_EQ(AppHost(s, "shop", "staging"), "shop-staging.apps.test");
  EXPECT_EQ(AppUrl(s, "shop", "default"), "http://shop.apps.test:8000/");
  EXPECT_EQ(AppUrl(s, "shop", "staging"), "http://shop-staging.apps.test:8000/");
  s.url_scheme = "https";
  s.url_port = 0;
  EXPECT_EQ(AppUrl(s, "shop", "default"), "https://shop.apps.test/");
  EXPECT_EQ(AppUrl(s, "shop", "pr-7"), "https://shop-pr-7.apps.test/");
}

// --- Labels --------------------------------------------------------------------------------------

TEST(RenderTest, RoutedContainerCarriesRoutersServiceHealthCheckAndAuth) {
  std::vector<Workload> ws = MustRender(Settings(), Ref(), ShopApp());
  ASSERT_THAT(ws, SizeIs(2));
  EXPECT_EQ(ws[0].container, "web");
  std::map<std::string, std::string> labels = Labels(ws[0]);
  // Routers are named by their prefix: "-r" + 8 hex of its SHA-256.
  std::string root, admin;
  for (const auto& [k, v] : labels) {
    if (!k.ends_with(".rule")) continue;
    std::string name = k.substr(std::string("traefik.http.routers.").size());
    name.resize(name.size() - std::string(".rule").size());
    (v.find("PathPrefix") == std::string::npos ? root : admin) = name;
  }
  ASSERT_THAT(root, testing::StartsWith("paddock_shop_default_web-r"));
  ASSERT_THAT(admin, testing::StartsWith("paddock_shop_default_web-r"));
  ASSERT_NE(root, admin);
  auto rr_name = [](const std::string& r) { return "traefik.http.routers." + r; };
  const std::string rr = rr_name(root);
  const std::string ra = rr_name(admin);
  // The service and the auth middleware carry a tag of their settings ("-s" / "-auth" + 8 hex).
  const std::string service = labels.at(rr_name(root) + ".service");
  const std::string auth = labels.at(rr_name(admin) + ".middlewares");
  EXPECT_THAT(service, testing::MatchesRegex("paddock_shop_default_web-s[0-9a-f]{8}"));
  EXPECT_THAT(auth, testing::MatchesRegex("paddock_shop_default_web-auth[0-9a-f]{8}"));
  const std::string sv = "traefik.http.services." + service + ".loadbalancer";
  std::map<std::string, std::string> want = {
      {"paddock.dev/controller-class", "prod"},
      {"traefik.enable", "true"},
      {sv + ".server.port", "8080"},
      {sv + ".healthcheck.path", "/healthz"},
      {sv + ".healthcheck.interval", "10s"},
      {sv + ".healthcheck.timeout", "2s"},
      {rr + ".rule", "Host(`shop.apps.test`)"},
      {rr + ".entrypoints", "web"},
      {rr + ".service", service},
      {rr + ".priority", "22"},
      {ra + ".rule", "Host(`shop.apps.test`) && PathPrefix(`/admin`)"},
      {ra + ".entrypoints", "web"},
      {ra + ".service", service},
      {ra + ".priority", "46"},
      {ra + ".middlewares", auth},
      {"traefik.http.middlewares." + auth + ".forwardauth.address",
       "http://paddock.internal:8000/auth/ingress"},
  };
  EXPECT_EQ(labels, want);
}

TEST(RenderTest, AContainerNoRouteNamesIsWithheldFromTheEdge) {
  std::vector<Workload> ws = MustRender(Settings(), Ref(), ShopApp());
  ASSERT_THAT(ws, SizeIs(2));
  EXPECT_EQ(ws[1].container, "worker");
  EXPECT_THAT(Labels(ws[1]), ElementsAre(Pair("paddock.dev/controller-class", "prod"), Pair("traefik.enable", "false")));
  EXPECT_FALSE(OnlyContainer(ws[1]).contains("portMappings"));

  // A port without a route is withheld too: the edge would otherwise give it a default router.
  AppSpec app = ShopApp();
  app.containers[1].port = 9000;
  ws = MustRender(Settings(), Ref(), app);
  EXPECT_THAT(Labels(ws[1]), ElementsAre(Pair("paddock.dev/controller-class", "prod"), Pair("traefik.enable", "false")));
  EXPECT_EQ(OnlyContainer(ws[1]).at("portMappings"), json::parse(R"([{"containerPort":9000,"protocol":"tcp"}])"));
}

TEST(RenderTest, APrivateRouteWithoutAuthIsWithheld) {
  ControllerSettings s = Settings();
  s.auth_url.clear();
  StatusOr<std::vector<Workload>> ws = Render(s, Ref(), ShopApp(), Quarter(), {});
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ws.status().message(),
            "route /admin is private, but the controller has no auth_url: it is withheld rather than served in the "
            "open");
  // Public routes alone need no auth_url.
  AppSpec app = ShopApp();
  app.routes[0].access = Access::kPublic;
  EXPECT_TRUE(Render(s, Ref(), app, Quarter(), {}).ok());
}

// --- The edge's view -----------------------------------------------------------------------------

edge::EcsTask Task(int n, const Workload& w, std::string ip) {
  edge::EcsTask t;
  t.task_arn = fmt::format("arn:aws:ecs:us-east-1:000000000000:task/default/{:032x}", n);
  t.cluster = "default";
  t.group = "service:" + w.service_name;
  t.last_status = t.desired_status = "RUNNING";
  t.health_status = "UNKNOWN";
  t.network_mode = "awsvpc";
  t.has_attachments = true;
  edge::EcsContainer c;
  c.name = w.container;
  c.labels = Labels(w);
  c.private_ip = std::move(ip);
  if (const json::value* pm = OnlyContainer(w).if_contains("portMappings")) {
    int port = static_cast<int>(pm->as_array()[0].at("containerPort").to_number<int64_t>());
    c.port_mappings = {{port, port, "tcp"}};
  }
  t.containers = {c};
  return t;
}

edge::EcsProviderOptions ShippedOptions() {
  edge::EcsProviderOptions o;
  o.exposed_by_default = false;
  o.constraints = "Label(`paddock.dev/controller-class`, `prod`)";
  return o;
}

TEST(RenderTest, TwoDeploymentsMergeIntoOneLoadBalancerAtTheEdge) {
  std::vector<Workload> d1 = MustRender(Settings(), Ref("d1"), ShopApp());
  // The next deployment adds a route and a new image: the routes both have keep their routers.
  AppSpec next = ShopApp();
  next.containers[0].image = "registry.local/shop-web:1.5";
  next.routes.insert(next.routes.begin(), Route{.path_prefix = "/api/v2", .container = "web", .access = Access::kPublic});
  std::vector<Workload> d2 = MustRender(Settings(), Ref("d2"), next);
  ASSERT_THAT(d1, SizeIs(2));
  ASSERT_THAT(d2, SizeIs(2));
  std::vector<edge::EcsTask> tasks = {Task(1, d1[0], "10.0.1.5"), Task(2, d1[1], "10.0.1.6"),
                                      Task(3, d2[0], "10.0.2.5"), Task(4, d2[1], "10.0.2.6")};
  edge::EcsBuild b = edge::BuildEcsConfiguration(tasks, ShippedOptions());
  EXPECT_THAT(b.errors, IsEmpty());
  const json::object& http = b.config.at("http").as_object();
  const json::object& services = http.at("services").as_object();
  ASSERT_THAT(services, SizeIs(1));
  const std::string service(services.begin()->key());
  EXPECT_EQ(services.at(service).at("loadBalancer").at("servers"),
            json::parse(R"([{"url":"http://10.0.1.5:8080"},{"url":"http://10.0.2.5:8080"}])"));
  EXPECT_EQ(services.at(service).at("loadBalancer").at("healthCheck").at("path"), "/healthz");
  // "/", "/admin" (shared by both deployments) and "/api/v2" (the new one's).
  const json::object& routers = http.at("routers").as_object();
  EXPECT_THAT(routers, SizeIs(3));
  for (const auto& [name, r] : routers) {
    EXPECT_EQ(r.at("service").as_string(), service) << name;
    EXPECT_EQ(r.at("entryPoints"), json::parse(R"(["web"])")) << name;
    bool admin = r.at("rule").as_string().ends_with("PathPrefix(`/admin`)");
    EXPECT_EQ(r.as_object().contains("middlewares"), admin) << name;
  }
  ASSERT_THAT(http.at("middlewares").as_object(), SizeIs(1));
  EXPECT_EQ(http.at("middlewares").as_object().begin()->value().at("forwardAuth").at("address"),
            "http://paddock.internal:8000/auth/ingress");
  EXPECT_THAT(b.default_rule_routers, IsEmpty());
  // No worker server anywhere.
  for (const edge::EcsServer& s : b.servers) EXPECT_EQ(s.container, "web");
}

// A setting that differs between two deployments (here the health check, dropped by the next
// one) must not make the edge delete the shared names during the overlap: the names differ, so
// both deployments keep a router and a service with their own servers, and no request meets a 404.
TEST(RenderTest, DeploymentsWhoseSettingsDifferKeepSeparateRoutersAtTheEdge) {
  std::vector<Workload> d1 = MustRender(Settings(), Ref("d1"), ShopApp());
  AppSpec next = ShopApp();
  next.containers[0].health_check.reset();
  std::vector<Workload> d2 = MustRender(Settings(), Ref("d2"), next);
  std::vector<edge::EcsTask> tasks = {Task(1, d1[0], "10.0.1.5"), Task(3, d2[0], "10.0.2.5")};
  edge::EcsBuild b = edge::BuildEcsConfiguration(tasks, ShippedOptions());
  EXPECT_THAT(b.errors, IsEmpty());
  const json::object& http = b.config.at("http").as_object();
  ASSERT_THAT(http.at("services").as_object(), SizeIs(2));
  int roots = 0;
  for (const auto& [name, r] : http.at("routers").as_object()) {
    if (r.at("rule") == "Host(`shop.apps.test`)") ++roots;
  }
  EXPECT_EQ(roots, 2) << "each deployment's \"/\" router stays";
}

// --- The task definition -------------------------------------------------------------------------

TEST(RenderTest, TaskDefinitionOfTheWorker) {
  std::vector<Workload> ws = MustRender(Settings(), Ref(), ShopApp(), {{"DB_PASSWORD", "/paddock/shop/default/x/DB_PASSWORD"}});
  ASSERT_THAT(ws, SizeIs(2));
  EXPECT_EQ(json::value(ws[1].task_definition), json::parse(R"({
    "family": "paddock_shop_default_worker",
    "networkMode": "awsvpc",
    "requiresCompatibilities": ["FARGATE"],
    "cpu": "256",
    "memory": "512",
    "runtimePlatform": {"cpuArchitecture": "X86_64", "operatingSystemFamily": "LINUX"},
    "executionRoleArn": "arn:aws:iam::000000000000:role/exec",
    "containerDefinitions": [{
      "name": "worker",
      "image": "registry.local/shop-worker:1.4",
      "essential": true,
      "environment": [
        {"name": "PADDOCK_APP_URL", "value": "http://shop.apps.test:8000/"},
        {"name": "PADDOCK_CONTAINER_HOST__WEB", "value": "shop-default-web.apps.paddock.local"},
        {"name": "PADDOCK_DEPLOYMENT", "value": "20261203-1830-ab12"},
        {"name": "PADDOCK_PROJECT", "value": "shop"}],
      "secrets": [{"name": "DB_PASSWORD", "valueFrom": "/paddock/shop/default/x/DB_PASSWORD"}],
      "linuxParameters": {"initProcessEnabled": true},
      "dockerLabels": {"paddock.dev/controller-class": "prod", "traefik.enable": "false"},
      "logConfiguration": {"logDriver": "awslogs", "options": {
        "awslogs-group": "/paddock/apps", "awslogs-region": "us-east-1",
        "awslogs-stream-prefix": "paddock/shop/20261203-1830-ab12",
        "awslogs-create-group": "true"}}}],
    "tags": [
      {"key": "paddock.dev/managed-by", "value": "paddock"},
      {"key": "paddock.dev/controller-class", "value": "prod"},
      {"key": "paddock.dev/project", "value": "shop"},
      {"key": "paddock.dev/deployment-group", "value": "default"},
      {"key": "paddock.dev/deployment-id", "value": "20261203-1830-ab12"},
      {"key": "paddock.dev/container", "value": "worker"}]
  })"));
}

TEST(RenderTest, WebEnvironmentHasPortAppUrlAndItsSiblingsHost) {
  std::vector<Workload> ws = MustRender(Settings(), Ref(), ShopApp());
  std::map<std::string, std::string> env = Env(ws[0]);
  EXPECT_EQ(env, (std::map<std::string, std::string>{
                     {"GREETING", "hello"},
                     {"PADDOCK_APP_URL", "http://shop.apps.test:8000/"},
                     {"PADDOCK_CONTAINER_HOST__WORKER", "shop-default-worker.apps.paddock.local"},
                     {"PADDOCK_DEPLOYMENT", "20261203-1830-ab12"},
                     {"PADDOCK_PROJECT", "shop"},
                     {"PORT", "8080"}}));
  EXPECT_EQ(OnlyContainer(ws[0]).at("command"), json::parse(R"(["/bin/web","--listen",":8080"])"));
  // Sorted by name, as the task definition carries it.
  std::vector<std::string> names;
  for (const json::value& e : OnlyContainer(ws[0]).at("environment").as_array()) {
    names.emplace_back(e.at("name").as_string());
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  // Without a Cloud Map namespace there is no discovery.
  ControllerSettings s = Settings();
  s.cloudmap_namespace.clear();
  EXPECT_FALSE(Env(MustRender(s, Ref(), ShopApp())[0]).contains("PADDOCK_CONTAINER_HOST__WORKER"));
}

TEST(RenderTest, SecretsAppearOnlyAsReferences) {
  const SecretRefs secrets = {{"API_KEY", "arn:aws:ssm:us-east-1:000000000000:parameter/paddock/shop/API_KEY"},
                              {"DB_PASSWORD", "/paddock/shop/DB_PASSWORD"}};
  std::vector<Workload> ws = MustRender(Settings(), Ref(), ShopApp(), secrets);
  for (const Workload& w : ws) {
    EXPECT_EQ(OnlyContainer(w).at("secrets"), json::parse(R"([
        {"name":"API_KEY","valueFrom":"arn:aws:ssm:us-east-1:000000000000:parameter/paddock/shop/API_KEY"},
        {"name":"DB_PASSWORD","valueFrom":"/paddock/shop/DB_PASSWORD"}])"));
    EXPECT_FALSE(Env(w).contains("API_KEY"));
    EXPECT_FALSE(Env(w).contains("DB_PASSWORD"));
  }
  // Without secrets there is no secrets block.
  EXPECT_FALSE(OnlyContainer(MustRender(Settings(), Ref(), ShopApp())[0]).contains("secrets"));

  // One name in both places, or a reserved one, is refused.
  StatusOr<std::vector<Workload>> both = Render(Settings(), Ref(), ShopApp(), Quarter(), {{"GREETING", "/p/g"}});
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(both.status().message(), HasSubstr("GREETING"));
  EXPECT_EQ(Render(Settings(), Ref(), ShopApp(), Quarter(), {{"PORT", "/p/port"}}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(RenderTest, HashFollowsTheTaskDefinitionNotTheService) {
  std::vector<Workload> base = MustRender(Settings(), Ref(), ShopApp());
  ASSERT_THAT(base, SizeIs(2));
  EXPECT_THAT(base[0].hash, SizeIs(64));
  EXPECT_TRUE(std::all_of(base[0].hash.begin(), base[0].hash.end(),
                          [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
  EXPECT_NE(base[0].hash, base[1].hash);
  EXPECT_EQ(MustRender(Settings(), Ref(), ShopApp())[0].hash, base[0].hash);

  AppSpec image = ShopApp();
  image.containers[0].image = "registry.local/shop-web:1.5";
  std::vector<Workload> changed = MustRender(Settings(), Ref(), image);
  EXPECT_NE(changed[0].hash, base[0].hash);
  EXPECT_EQ(changed[1].hash, base[1].hash);  // the worker is unchanged

  AppSpec scaled = ShopApp();
  scaled.deploy.replicas = 7;
  std::vector<Workload> more = MustRender(Settings(), Ref(), scaled);
  EXPECT_EQ(more[0].hash, base[0].hash);
  EXPECT_EQ(more[0].service.at("desiredCount"), 7);

  ControllerSettings net = Settings();
  net.subnets = {"subnet-2"};
  EXPECT_EQ(MustRender(net, Ref(), ShopApp())[0].hash, base[0].hash);
}

// --- The service ---------------------------------------------------------------------------------

TEST(RenderTest, ServiceOfTheWebOnFargate) {
  std::vector<Workload> ws = MustRender(Settings(), Ref(), ShopApp());
  ASSERT_THAT(ws, SizeIs(2));
  const Workload& w = ws[0];
  json::value want = json::parse(R"({
    "cluster": "default",
    "serviceName": "paddock_shop_default_20261203-1830-ab12_web",
    "desiredCount": 2,
    "launchType": "FARGATE",
    "networkConfiguration": {"awsvpcConfiguration": {
      "subnets": ["subnet-1"], "securityGroups": ["sg-1"], "assignPublicIp": "DISABLED"}},
    "propagateTags": "SERVICE",
    "enableECSManagedTags": true,
    "deploymentConfiguration": {"maximumPercent": 200, "minimumHealthyPercent": 100},
    "tags": [
      {"key": "paddock.dev/managed-by", "value": "paddock"},
      {"key": "paddock.dev/controller-class", "value": "prod"},
      {"key": "paddock.dev/project", "value": "shop"},
      {"key": "paddock.dev/deployment-group", "value": "default"},
      {"key": "paddock.dev/deployment-id", "value": "20261203-1830-ab12"},
      {"key": "paddock.dev/container", "value": "web"}]
  })");
  want.as_object()["tags"].as_array().emplace_back(
      json::object{{"key", "paddock.dev/task-definition-hash"}, {"value", w.hash}});
  EXPECT_EQ(json::value(w.service), want);
  ASSERT_THAT(w.tags, SizeIs(7));
  EXPECT_EQ(w.tags.back(), std::make_pair(std::string("paddock.dev/task-definition-hash"), w.hash));
  EXPECT_EQ(w.family, "paddock_shop_default_web");
  EXPECT_EQ(w.service_name, "paddock_shop_default_20261203-1830-ab12_web");
}

TEST(RenderTest, CapacityShapesLaunchAndNetwork) {
  AppSpec app = ShopApp();
  app.deploy.capacity = Capacity::kInterruptible;
  Workload spot = MustRender(Settings(), Ref(), app)[0];
  EXPECT_FALSE(spot.service.contains("launchType"));
  EXPECT_EQ(spot.service.at("capacityProviderStrategy"),
            json::parse(R"([{"capacityProvider":"FARGATE_SPOT","weight":1}])"));
  EXPECT_EQ(spot.task_definition.at("requiresCompatibilities"), json::parse(R"(["FARGATE"])"));
  EXPECT_EQ(spot.service.at("networkConfiguration").at("awsvpcConfiguration").at("assignPublicIp"), "DISABLED");

  app.deploy.capacity = Capacity::kEc2;
  ControllerSettings s = Settings();
  s.assign_public_ip = true;
  s.subnets.clear();
  s.security_groups.clear();
  Workload ec2 = MustRender(s, Ref(), app)[0];
  EXPECT_EQ(ec2.service.at("launchType"), "EC2");
  EXPECT_FALSE(ec2.service.contains("capacityProviderStrategy"));
  EXPECT_EQ(ec2.task_definition.at("requiresCompatibilities"), json::parse(R"(["EC2"])"));
  EXPECT_EQ(ec2.service.at("networkConfiguration"), json::parse(R"({"awsvpcConfiguration":{}})"));

  app.deploy.capacity = Capacity::kFargate;
  EXPECT_EQ(MustRender(s, Ref(), app)[0].service.at("networkConfiguration"),
            json::parse(R"({"awsvpcConfiguration":{"assignPublicIp":"ENABLED"}})"));
}

TEST(RenderTest, TheCircuitBreakerIsOnlyOnWhenAskedAndNeverRollsBack) {
  ControllerSettings settings = Settings();
  EXPECT_FALSE(MustRender(settings, Ref(), ShopApp())[0].service.at("deploymentConfiguration").as_object().contains(
      "deploymentCircuitBreaker"));
  settings.circuit_breaker = true;
  EXPECT_EQ(MustRender(settings, Ref(), ShopApp())[0].service.at("deploymentConfiguration"),
            json::parse(R"({"maximumPercent": 200, "minimumHealthyPercent": 100,
                            "deploymentCircuitBreaker": {"enable": true, "rollback": false}})"));
}

TEST(RenderTest, OptionalPartsAreLeftOutWhenUnset) {
  ControllerSettings s = Settings();
  s.execution_role_arn.clear();
  s.log_group.clear();
  s.task_role_arn = "arn:aws:iam::000000000000:role/task";
  Workload w = MustRender(s, Ref(), ShopApp())[1];
  EXPECT_FALSE(w.task_definition.contains("executionRoleArn"));
  EXPECT_EQ(w.task_definition.at("taskRoleArn"), "arn:aws:iam::000000000000:role/task");
  EXPECT_FALSE(OnlyContainer(w).contains("logConfiguration"));
  EXPECT_FALSE(OnlyContainer(w).contains("command"));
}

TEST(TaskRoleTest, EachProjectGetsItsOwnRoleFromThePattern) {
  ControllerSettings s = Settings();
  s.task_role_pattern = "arn:aws:iam::123456789012:role/paddock-task-{project}";
  EXPECT_EQ(TaskRoleArn(s, "shop"), "arn:aws:iam::123456789012:role/paddock-task-shop");
  EXPECT_EQ(TaskRoleArn(s, "blog"), "arn:aws:iam::123456789012:role/paddock-task-blog");
  s.task_role_pattern = "arn:aws:iam::123456789012:role/apps/{class}/{class}-{project}";
  EXPECT_EQ(TaskRoleArn(s, "shop"), "arn:aws:iam::123456789012:role/apps/prod/prod-shop");
  // The pattern outranks a shared role; without either, none.
  s.task_role_arn = "arn:aws:iam::123456789012:role/shared";
  EXPECT_EQ(TaskRoleArn(s, "shop"), "arn:aws:iam::123456789012:role/apps/prod/prod-shop");
  s.task_role_pattern.clear();
  EXPECT_EQ(TaskRoleArn(s, "shop"), "arn:aws:iam::123456789012:role/shared");
  s.task_role_arn.clear();
  EXPECT_EQ(TaskRoleArn(s, "shop"), "");
}

TEST(TaskRoleTest, ALongProjectsRoleNameIsShortenedStablyAndDistinctly) {
  ControllerSettings s = Settings();
  s.task_role_pattern = "arn:aws:iam::123456789012:role/team/paddock-task-{project}";
  const std::string a(63, 'a');
  std::string b = a;
  b.back() = 'b';
  const std::string ra = TaskRoleArn(s, a), rb = TaskRoleArn(s, b);
  for (const std::string& r : {ra, rb}) {
    ASSERT_TRUE(r.starts_with("arn:aws:iam::123456789012:role/team/paddock-task-aaaa")) << r;
    EXPECT_EQ(r.size() - r.rfind('/') - 1, kMaxRoleName) << r;
  }
  EXPECT_NE(ra, rb);
  EXPECT_EQ(ra, TaskRoleArn(s, a));
  // 64 characters exactly is left alone.
  const std::string fits(64 - std::string("paddock-task-").size(), 'x');
  EXPECT_EQ(TaskRoleArn(s, fits), "arn:aws:iam::123456789012:role/team/paddock-task-" + fits);
}

TEST(TaskRoleTest, ThePatternMustBeARoleArnNamingTheProject) {
  EXPECT_TRUE(CheckTaskRolePattern("arn:aws:iam::123456789012:role/paddock-task-{project}").ok());
  EXPECT_TRUE(CheckTaskRolePattern("arn:aws:iam::123456789012:role/apps/{class}/{project}").ok());
  for (std::string_view bad : {"paddock-task-{project}", "arn:aws:iam::123456789012:user/{project}",
                               "arn:aws:iam::123456789012:role/paddock-task", "arn:aws:iam::123456789012:role/{project}/x",
                               "arn:aws:iam::{account}:role/paddock-task-{project}",
                               "arn:aws:iam::123456789012:role/paddock task-{project}",
                               "arn:aws:iam::123456789012:role/paddock-{group}-{project}"}) {
    Status st = CheckTaskRolePattern(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(st.message(), HasSubstr(bad)) << bad;
  }
}

TEST(TaskRoleTest, TheTaskDefinitionCarriesItsProjectsRole) {
  ControllerSettings s = Settings();
  s.task_role_arn = "arn:aws:iam::123456789012:role/shared";
  s.task_role_pattern = "arn:aws:iam::123456789012:role/paddock-task-{project}";
  AppSpec blog = ShopApp();
  blog.project = "blog";
  std::vector<Workload> shop_ws = MustRender(s, Ref(), ShopApp());
  std::vector<Workload> blog_ws = MustRender(s, {.project = "blog", .group = "default", .id = "x"}, blog);
  for (const Workload& w : shop_ws) EXPECT_EQ(w.task_definition.at("taskRoleArn"), "arn:aws:iam::123456789012:role/paddock-task-shop");
  for (const Workload& w : blog_ws) EXPECT_EQ(w.task_definition.at("taskRoleArn"), "arn:aws:iam::123456789012:role/paddock-task-blog");
  // The role is part of the task definition, so changing it rolls the services (D4's hash).
  s.task_role_pattern.clear();
  EXPECT_NE(MustRender(s, Ref(), ShopApp())[0].hash, shop_ws[0].hash);
}

TEST(RenderTest, ALongTagValueIsRefusedNamingTheTag) {
  StatusOr<std::vector<Workload>> ws = Render(Settings(), Ref(std::string(257, 'x')), ShopApp(), Quarter(), {});
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ws.status().message(), HasSubstr("paddock.dev/deployment-id"));
  EXPECT_TRUE(Render(Settings(), Ref(std::string(256, 'x')), ShopApp(), Quarter(), {}).ok());
}

// ECS's limits are checked before any call, with a reason naming what to change.
TEST(RenderTest, AnOversizedTaskDefinitionOrSecretsWithoutAnExecutionRoleAreRefused) {
  AppSpec app = ShopApp();
  for (int i = 0; i < 15; ++i) app.containers[0].env[fmt::format("BLOB_{}", i)] = std::string(4096, 'x');
  EXPECT_TRUE(Render(Settings(), Ref(), app, Quarter(), {}).ok()) << "60 KiB of env fits";
  app.containers[0].env["BLOB_15"] = std::string(4096, 'x');
  StatusOr<std::vector<Workload>> big = Render(Settings(), Ref(), app, Quarter(), {});
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("ECS takes at most 65536 (64 KiB)"));
  EXPECT_THAT(big.status().message(), HasSubstr(app.containers[0].name));

  ControllerSettings no_role = Settings();
  no_role.execution_role_arn.clear();
  EXPECT_TRUE(Render(no_role, Ref(), ShopApp(), Quarter(), {}).ok()) << "no secrets: no role needed";
  StatusOr<std::vector<Workload>> secret = Render(no_role, Ref(), ShopApp(), Quarter(), {{"API_KEY", "/p/k"}});
  EXPECT_EQ(secret.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(secret.status().message(), HasSubstr("--execution-role-arn"));
}

TEST(RenderTest, AnInvalidSpecIsRefused) {
  AppSpec app = ShopApp();
  app.routes.push_back({.path_prefix = "/jobs", .container = "worker", .access = Access::kPublic});
  StatusOr<std::vector<Workload>> ws = Render(Settings(), Ref(), app, Quarter(), {});
  EXPECT_EQ(ws.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ws.status().message(), HasSubstr("routes./jobs"));
}

// --- Tags read back ------------------------------------------------------------------------------

TEST(ReadTagsTest, RoundTrip) {
  ControllerSettings s = Settings();
  Workload w = MustRender(s, Ref(), ShopApp())[0];
  Ownership o = ReadTags(s, w.tags);
  EXPECT_TRUE(o.owned);
  EXPECT_TRUE(o.complete);
  EXPECT_EQ(o.project, "shop");
  EXPECT_EQ(o.group, "default");
  EXPECT_EQ(o.deployment_id, "20261203-1830-ab12");
  EXPECT_EQ(o.container, "web");
  EXPECT_EQ(o.task_definition_hash, w.hash);
}

TEST(ReadTagsTest, OwnershipNeedsBothMarksAndCompletenessEveryIdentityTag) {
  ControllerSettings s = Settings();
  std::vector<std::pair<std::string, std::string>> tags = MustRender(s, Ref(), ShopApp())[0].tags;

  ControllerSettings other = s;
  other.controller_class = "staging";
  EXPECT_FALSE(ReadTags(other, tags).owned);
  EXPECT_FALSE(ReadTags(other, tags).complete);

  auto without = [&](std::string_view key) {
    auto copy = tags;
    std::erase_if(copy, [&](const auto& kv) { return kv.first == key; });
    return copy;
  };
  EXPECT_FALSE(ReadTags(s, without("paddock.dev/managed-by")).owned);
  Ownership partial = ReadTags(s, without("paddock.dev/container"));
  EXPECT_TRUE(partial.owned);
  EXPECT_FALSE(partial.complete);
  // The hash tag is a cache (ADR D4): its absence leaves the service complete.
  EXPECT_TRUE(ReadTags(s, without("paddock.dev/task-definition-hash")).complete);
  // Another namespace's tags are not ours.
  ControllerSettings ns = s;
  ns.label_namespace = "example.com";
  EXPECT_FALSE(ReadTags(ns, tags).owned);
}

}  // namespace
}  // namespace paddock::deploy

namespace paddock::deploy {
namespace {

ControllerSettings WithIdentity() {
  ControllerSettings s = Settings();
  s.identity_agent_image = "paddock/identity-agent:1";
  s.identity_exchange_url = "http://169.254.170.2/paddock/v1/identity/token";
  s.identity_token_ttl_seconds = 900;
  return s;
}

constexpr std::string_view kCredential = "/paddock/prod/shop/default/20261203-1830-ab12/paddock-identity/credential";

// D8: every revision carries the sidecar — its secret the credential (and only it has it), the
// volume read-write in it and read-only in the app, which waits for it HEALTHY.
TEST(RenderIdentityTest, EveryRevisionCarriesTheSidecarAndTheAppWaitsForIt) {
  AppSpec app = ShopApp();
  app.identity_audiences = {{"api", "https://api.example.com"}, {"vault", "vault"}};
  StatusOr<std::vector<Workload>> ws = Render(WithIdentity(), Ref(), app, Quarter(), {{"DB_PASSWORD", "/p/db"}}, kCredential);
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  ASSERT_THAT(*ws, SizeIs(2));
  for (const Workload& w : *ws) {
    const json::array& defs = w.task_definition.at("containerDefinitions").as_array();
    ASSERT_THAT(defs, SizeIs(2));
    const json::object& appc = defs[0].as_object();
    const json::object& side = defs[1].as_object();
    EXPECT_EQ(w.task_definition.at("volumes"), json::parse(R"([{"name":"paddock-identity"}])"));
    EXPECT_EQ(appc.at("mountPoints"), json::parse(R"([{"sourceVolume":"paddock-identity",
        "containerPath":"/var/run/secrets/paddock/identity","readOnly":true}])"));
    EXPECT_EQ(appc.at("dependsOn"), json::parse(R"([{"containerName":"paddock-identity","condition":"HEALTHY"}])"));
    EXPECT_EQ(appc.at("secrets"), json::parse(R"([{"name":"DB_PASSWORD","valueFrom":"/p/db"}])"))
        << "the app never gets the credential";
    EXPECT_THAT(json::serialize(appc.at("environment")),
                HasSubstr(R"({"name":"PADDOCK_IDENTITY_DIR","value":"/var/run/secrets/paddock/identity"})"));

    EXPECT_EQ(side.at("name"), "paddock-identity");
    EXPECT_EQ(side.at("image"), "paddock/identity-agent:1");
    EXPECT_EQ(side.at("essential"), false);
    EXPECT_EQ(side.at("command"), json::parse(R"(["/bin/sh","/usr/local/bin/paddock-identity-agent"])"));
    EXPECT_EQ(side.at("secrets"), json::parse(fmt::format(R"([{{"name":"PADDOCK_IDENTITY_CREDENTIAL","valueFrom":"{}"}}])", kCredential)));
    EXPECT_EQ(side.at("environment"), json::parse(R"([
        {"name":"PADDOCK_IDENTITY_AUDIENCES","value":"api=https://api.example.com vault=vault"},
        {"name":"PADDOCK_IDENTITY_TOKEN_TTL_SECONDS","value":"900"},
        {"name":"PADDOCK_IDENTITY_TOKEN_URL","value":"http://169.254.170.2/paddock/v1/identity/token"}])"));
    EXPECT_EQ(side.at("mountPoints").at(0).at("readOnly"), false);
    EXPECT_EQ(side.at("healthCheck").at("startPeriod"), 300);
    EXPECT_EQ(side.at("restartPolicy"), json::parse(R"({"enabled":true})"));
    EXPECT_EQ(side.at("memoryReservation"), 32);
    EXPECT_EQ(side.at("dockerLabels").at("traefik.enable"), "false");
    EXPECT_EQ(side.at("logConfiguration").at("options").at("awslogs-stream-prefix"), "paddock-identity/shop/20261203-1830-ab12");
  }
}

// A new agent image rolls nothing: the hash leaves it out (and the rest of the sidecar in).
TEST(RenderIdentityTest, TheAgentImageIsLeftOutOfTheContentHash) {
  ControllerSettings a = WithIdentity(), b = WithIdentity(), c = WithIdentity();
  b.identity_agent_image = "paddock/identity-agent:2";
  c.identity_token_ttl_seconds = 1800;
  auto hash = [](const ControllerSettings& s) {
    StatusOr<std::vector<Workload>> ws = Render(s, Ref(), ShopApp(), Quarter(), {}, kCredential);
    return ws.ok() ? ws->at(0).hash : std::string();
  };
  EXPECT_FALSE(hash(a).empty());
  EXPECT_EQ(hash(a), hash(b));
  EXPECT_NE(hash(a), hash(c));
  EXPECT_NE(hash(a), MustRender(Settings(), Ref(), ShopApp()).at(0).hash);
}

// Fail closed (research B11): tokens asked for with no sidecar to write them, or a sidecar with
// no execution role to read its credential, are refused rather than deployed without.
TEST(RenderIdentityTest, IdentityThatCannotWorkIsRefused) {
  AppSpec app = ShopApp();
  app.identity_audiences = {{"api", "https://api.example.com"}};
  StatusOr<std::vector<Workload>> off = Render(Settings(), Ref(), app, Quarter(), {});
  EXPECT_THAT(off.status().message(), HasSubstr("[identity] audiences need the identity sidecar"));
  ControllerSettings no_role = WithIdentity();
  no_role.execution_role_arn.clear();
  StatusOr<std::vector<Workload>> unreadable = Render(no_role, Ref(), ShopApp(), Quarter(), {}, kCredential);
  EXPECT_THAT(unreadable.status().message(), HasSubstr("reads its credential as the task's execution role"));
}

}  // namespace
}  // namespace paddock::deploy
