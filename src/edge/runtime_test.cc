// The runtime view as the specification of Traefik's checks: each test is one rule of
// pkg/server/{aggregator.go,router,service,middleware} and pkg/config/runtime, with Traefik's texts.
#include "edge/runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include <boost/json.hpp>

namespace paddock::edge {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

ProviderConfiguration Provider(std::string name, std::string_view json) {
  return {std::move(name), boost::json::parse(json).as_object()};
}

std::string AcceptEveryRule(std::string_view) { return {}; }

RuntimeConfig Build(const std::vector<ProviderConfiguration>& providers,
                    const std::vector<std::string>& entry_points = {"web", "websecure", "traefik"},
                    const std::vector<std::string>& defaults = {"web"}, const RuleChecker& rules = AcceptEveryRule,
                    const MiddlewareChecker& middlewares = {}) {
  return BuildRuntime(providers, entry_points, defaults, rules, middlewares);
}

boost::json::value Json(std::string_view text) { return boost::json::parse(text); }

constexpr std::string_view kWhoami = R"j({"http":{
  "routers":{"whoami":{"rule":"Host(`whoami.test`)","service":"whoami","middlewares":["auth"]}},
  "services":{"whoami":{"loadBalancer":{"servers":[{"url":"http://10.0.0.5:80"},{"url":"http://10.0.0.6:80"}]}}},
  "middlewares":{"auth":{"basicAuth":{"users":["a:b"]}}}}})j";

TEST(RuntimeTest, NamesAreQualifiedAndTheRoutersMiddlewaresToo) {
  RuntimeConfig rt = Build({Provider("ecs", kWhoami)});
  ASSERT_EQ(rt.routers.count("whoami@ecs"), 1u);
  const RouterInfo& router = rt.routers.at("whoami@ecs");
  EXPECT_EQ(router.status, RuntimeStatus::kEnabled);
  EXPECT_THAT(router.errors, IsEmpty());
  EXPECT_EQ(router.provider, "ecs");
  EXPECT_EQ(router.service, "whoami@ecs");
  // Traefik rewrites the middlewares in place when it builds the router; the service stays as written.
  EXPECT_EQ(router.config.at("middlewares"), Json(R"j(["auth@ecs"])j"));
  EXPECT_EQ(router.config.at("service"), "whoami");
  EXPECT_EQ(rt.services.count("whoami@ecs"), 1u);
  EXPECT_EQ(rt.middlewares.count("auth@ecs"), 1u);
}

TEST(RuntimeTest, ARouterWithoutEntryPointsGetsTheDefaultOnes) {
  RuntimeConfig rt = Build({Provider("ecs", kWhoami)}, {"web", "websecure", "traefik"}, {"web", "websecure"});
  const RouterInfo& router = rt.routers.at("whoami@ecs");
  EXPECT_EQ(router.config.at("entryPoints"), Json(R"j(["web","websecure"])j"));
  EXPECT_THAT(router.using_entry_points, ElementsAre("web", "websecure"));
}

TEST(RuntimeTest, WithoutDefaultEntryPointsARouterNamingNoneIsDisabled) {
  RuntimeConfig rt = Build({Provider("ecs", kWhoami)}, {"web"}, {});
  const RouterInfo& router = rt.routers.at("whoami@ecs");
  EXPECT_FALSE(router.config.contains("entryPoints"));
  EXPECT_EQ(router.status, RuntimeStatus::kDisabled);
  EXPECT_THAT(router.errors, ElementsAre("no valid entryPoint for this router"));
  EXPECT_THAT(router.using_entry_points, IsEmpty());
}

TEST(RuntimeTest, AnUnknownEntryPointIsAWarningWhileAnotherRemains) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"entryPoints":["nope","web","web"],"rule":"Path(`/`)","service":"s"}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}}})j")});
  const RouterInfo& router = rt.routers.at("r@file");
  EXPECT_EQ(router.status, RuntimeStatus::kWarning);
  EXPECT_THAT(router.errors, ElementsAre("entryPoint \"nope\" doesn't exist"));
  EXPECT_THAT(router.using_entry_points, ElementsAre("web"));
}

TEST(RuntimeTest, OnlyUnknownEntryPointsDisableTheRouter) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"entryPoints":["a","b"],"rule":"Path(`/`)","service":"s"}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}}})j")});
  const RouterInfo& router = rt.routers.at("r@file");
  EXPECT_EQ(router.status, RuntimeStatus::kDisabled);
  EXPECT_THAT(router.errors, ElementsAre("entryPoint \"a\" doesn't exist", "entryPoint \"b\" doesn't exist",
                                         "no valid entryPoint for this router"));
}

TEST(RuntimeTest, AMissingServiceDisablesTheRouterAndItsRuleIsNotChecked) {
  int rules_checked = 0;
  RuntimeConfig rt = Build({Provider("ecs", R"j({"http":{
    "routers":{"r":{"rule":"Nonsense(`x`)","service":"missing"}}}})j")},
                           {"web"}, {"web"}, [&](std::string_view) {
                             ++rules_checked;
                             return std::string("unknown matcher");
                           });
  const RouterInfo& router = rt.routers.at("r@ecs");
  EXPECT_EQ(router.status, RuntimeStatus::kDisabled);
  EXPECT_THAT(router.errors, ElementsAre("the service \"missing@ecs\" does not exist"));
  EXPECT_EQ(rules_checked, 0);
}

TEST(RuntimeTest, AServiceOfAnotherProviderIsReferencedByItsQualifiedName) {
  RuntimeConfig rt = Build({Provider("ecs", R"j({"http":{"routers":{"r":{"rule":"Path(`/`)","service":"s@file"}}}})j"),
                            Provider("file", R"j({"http":{"services":{"s":{"loadBalancer":{"servers":[]}}}}})j")});
  EXPECT_EQ(rt.routers.at("r@ecs").status, RuntimeStatus::kEnabled);
  EXPECT_EQ(rt.routers.at("r@ecs").service, "s@file");
  EXPECT_THAT(rt.services.at("s@file").used_by, ElementsAre("r@ecs"));
}

TEST(RuntimeTest, ABadRuleDisablesTheRouterWithTraefiksPrefix) {
  RuntimeConfig rt = Build({Provider("ecs", R"j({"http":{
    "routers":{"r":{"rule":"WrongRule(`x`)","service":"s"}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}}})j")},
                           {"web"}, {"web"}, [](std::string_view rule) {
                             return rule.starts_with("WrongRule") ? std::string("unknown matcher WrongRule")
                                                                   : std::string();
                           });
  const RouterInfo& router = rt.routers.at("r@ecs");
  EXPECT_EQ(router.status, RuntimeStatus::kDisabled);
  EXPECT_THAT(router.errors, ElementsAre("error while parsing rule WrongRule(`x`): unknown matcher WrongRule"));
  // The service built all the same: its servers are up, and it is used.
  EXPECT_EQ(rt.services.at("s@ecs").status, RuntimeStatus::kEnabled);
  EXPECT_THAT(rt.services.at("s@ecs").used_by, ElementsAre("r@ecs"));
}

TEST(RuntimeTest, AMissingMiddlewareDisablesTheRouterAndTheLastOneIsReported) {
  RuntimeConfig rt = Build({Provider("ecs", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"s","middlewares":["first","second"]}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}}})j")});
  const RouterInfo& router = rt.routers.at("r@ecs");
  EXPECT_EQ(router.status, RuntimeStatus::kDisabled);
  // Traefik builds a chain last to first (alice), and the first failure stops it.
  EXPECT_THAT(router.errors, ElementsAre("middleware \"second@ecs\" does not exist"));
}

TEST(RuntimeTest, ARouterWithoutServiceGetsBothOfTraefiksErrors) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{"routers":{"r":{"rule":"Path(`/`)"}}}})j")});
  const RouterInfo& router = rt.routers.at("r@file");
  EXPECT_EQ(router.status, RuntimeStatus::kDisabled);
  EXPECT_THAT(router.errors, ElementsAre("router has no service and no child routers",
                                         "router must have either a service or child routers"));
}

TEST(RuntimeTest, PriorityDefaultsToTheRulesLengthAndTooHighOnesAreRefused) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"implicit":{"rule":"Host(`a.test`)","service":"s"},
               "explicit":{"rule":"Host(`a.test`)","service":"s","priority":3},
               "greedy":{"rule":"Host(`a.test`)","service":"s","priority":9223372036854775000}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}}})j")});
  EXPECT_EQ(rt.routers.at("implicit@file").config.at("priority"), 14);
  EXPECT_EQ(rt.routers.at("explicit@file").config.at("priority"), 3);
  const RouterInfo& greedy = rt.routers.at("greedy@file");
  EXPECT_EQ(greedy.status, RuntimeStatus::kDisabled);
  EXPECT_THAT(greedy.errors, ElementsAre("the router priority 9223372036854775000 exceeds the max user-defined "
                                         "priority 9223372036854774807"));
}

TEST(RuntimeTest, UsedByListsRoutersOfEveryProviderSorted) {
  RuntimeConfig rt = Build({Provider("ecs", R"j({"http":{
    "routers":{"b":{"rule":"Path(`/b`)","service":"s","middlewares":["strip@file"]}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}}})j"),
                            Provider("file", R"j({"http":{
    "routers":{"a":{"rule":"Path(`/a`)","service":"s@ecs","middlewares":["strip"]},
               "z":{"rule":"Path(`/z`)","service":"s@ecs","middlewares":["strip"]}},
    "middlewares":{"strip":{"stripPrefix":{"prefixes":["/a"]}},"unused":{"addPrefix":{"prefix":"/x"}}}}})j")});
  EXPECT_THAT(rt.services.at("s@ecs").used_by, ElementsAre("a@file", "b@ecs", "z@file"));
  EXPECT_THAT(rt.middlewares.at("strip@file").used_by, ElementsAre("a@file", "b@ecs", "z@file"));
  EXPECT_THAT(rt.middlewares.at("unused@file").used_by, IsEmpty());
  EXPECT_EQ(rt.middlewares.at("unused@file").status, RuntimeStatus::kEnabled);
}

TEST(RuntimeTest, AServiceIsCheckedOnlyWhenARouterUsesIt) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"empty"}},
    "services":{"empty":{},"alsoEmpty":{}}}})j")});
  const std::string error = "the service \"empty@file\" does not have any type defined";
  EXPECT_EQ(rt.services.at("empty@file").status, RuntimeStatus::kDisabled);
  EXPECT_THAT(rt.services.at("empty@file").errors, ElementsAre(error));
  EXPECT_THAT(rt.routers.at("r@file").errors, ElementsAre(error));
  EXPECT_EQ(rt.services.at("alsoEmpty@file").status, RuntimeStatus::kEnabled);
  EXPECT_THAT(rt.services.at("alsoEmpty@file").errors, IsEmpty());
}

TEST(RuntimeTest, AServiceOfTwoKindsIsRefused) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"both"}},
    "services":{"both":{"loadBalancer":{"servers":[]},"weighted":{"services":[]}}}}})j")});
  EXPECT_THAT(rt.services.at("both@file").errors,
              ElementsAre("cannot create service: multi-types service not supported, consider declaring two "
                          "different pieces of service instead"));
  EXPECT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kDisabled);
}

TEST(RuntimeTest, AWeightedServiceReportsItsMissingChild) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"canary"}},
    "services":{"canary":{"weighted":{"services":[{"name":"v1","weight":3},{"name":"gone","weight":1}]}},
                "v1":{"loadBalancer":{"servers":[{"url":"http://v1"}]}}}}})j")});
  const std::string error = "building HTTP service \"gone\": the service \"gone@file\" does not exist";
  EXPECT_THAT(rt.services.at("canary@file").errors, ElementsAre(error));
  EXPECT_THAT(rt.routers.at("r@file").errors, ElementsAre(error));
  EXPECT_EQ(rt.services.at("v1@file").status, RuntimeStatus::kEnabled);
}

// weighted.healthCheck {}: status propagation, which every child must be able to give.
TEST(RuntimeTest, AWeightedHealthCheckNeedsEveryChildToHaveOne) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"canary"},"ok":{"rule":"Path(`/ok`)","service":"checked"}},
    "services":{"canary":{"weighted":{"services":[{"name":"v1"},{"name":"v2"}],"healthCheck":{}}},
                "checked":{"weighted":{"services":[{"name":"v1"},{"name":"inner"}],"healthCheck":{}}},
                "inner":{"weighted":{"services":[{"name":"v1"}],"healthCheck":{}}},
                "v1":{"loadBalancer":{"servers":[{"url":"http://v1"}],"healthCheck":{"path":"/"}}},
                "v2":{"loadBalancer":{"servers":[{"url":"http://v2"}]}}}}})j")});
  const std::string error =
      "cannot register v2 as updater for canary@file: healthCheck not enabled in config for this WRR service";
  EXPECT_THAT(rt.services.at("canary@file").errors, ElementsAre(error));
  EXPECT_THAT(rt.routers.at("r@file").errors, ElementsAre(error));
  EXPECT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.services.at("v2@file").status, RuntimeStatus::kEnabled);
  EXPECT_THAT(rt.services.at("checked@file").errors, IsEmpty());
  EXPECT_EQ(rt.routers.at("ok@file").status, RuntimeStatus::kEnabled);
}

// Traefik's getFailoverServiceHandler: the main service must report its status (a health check of
// its own); the fallback only when the failover reports its own (failover.healthCheck).
TEST(RuntimeTest, AFailoversMainNeedsAHealthCheckAndItsFallbackOneWhenItReportsItsOwn) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"a":{"rule":"Path(`/a`)","service":"unchecked-main"},"b":{"rule":"Path(`/b`)","service":"reported"},
               "c":{"rule":"Path(`/c`)","service":"plain"},"d":{"rule":"Path(`/d`)","service":"missing"}},
    "services":{"unchecked-main":{"failover":{"service":"v2","fallback":"v1"}},
                "reported":{"failover":{"service":"v1","fallback":"v2","healthCheck":{}}},
                "plain":{"failover":{"service":"v1","fallback":"v2"}},
                "missing":{"failover":{"service":"v1","fallback":"nope"}},
                "v1":{"loadBalancer":{"servers":[{"url":"http://v1"}],"healthCheck":{"path":"/"}}},
                "v2":{"loadBalancer":{"servers":[{"url":"http://v2"}]}}}}})j")});
  EXPECT_THAT(rt.services.at("unchecked-main@file").errors,
              ElementsAre("cannot register v2 as updater for unchecked-main@file: healthCheck not enabled in config "
                          "for this WRR service"));
  EXPECT_THAT(rt.services.at("reported@file").errors,
              ElementsAre("cannot register v2 as updater for reported@file: healthCheck not enabled in config for "
                          "this WRR service"));
  EXPECT_THAT(rt.services.at("plain@file").errors, IsEmpty());
  EXPECT_EQ(rt.routers.at("c@file").status, RuntimeStatus::kEnabled);
  EXPECT_THAT(rt.services.at("missing@file").errors, ElementsAre("the service \"nope@file\" does not exist"));
  EXPECT_EQ(rt.routers.at("a@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.routers.at("b@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.routers.at("d@file").status, RuntimeStatus::kDisabled);
}

// With failover.errors.status the main need not report its status (Traefik's
// getFailoverServiceHandler: isErrorDefined); statuses that are not ranges are failover.New's error.
TEST(RuntimeTest, AFailoverWithErrorStatusesNeedsNoHealthCheckAndBadStatusesAreItsError) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"a":{"rule":"Path(`/a`)","service":"by-status"},"b":{"rule":"Path(`/b`)","service":"bad"},
               "c":{"rule":"Path(`/c`)","service":"empty"}},
    "services":{"by-status":{"failover":{"service":"v2","fallback":"v1","errors":{"status":["500-599"]}}},
                "bad":{"failover":{"service":"v2","fallback":"v1","errors":{"status":["5xx"]}}},
                "empty":{"failover":{"service":"v2","fallback":"v1","errors":{"maxRequestBodyBytes":10}}},
                "v1":{"loadBalancer":{"servers":[{"url":"http://v1"}]}},
                "v2":{"loadBalancer":{"servers":[{"url":"http://v2"}]}}}}})j")});
  EXPECT_THAT(rt.services.at("by-status@file").errors, IsEmpty());
  EXPECT_EQ(rt.routers.at("a@file").status, RuntimeStatus::kEnabled);
  EXPECT_THAT(rt.services.at("bad@file").errors,
              ElementsAre("error creating failover service bad@file: creating HTTP code ranges: invalid status \"5xx\""));
  EXPECT_EQ(rt.routers.at("b@file").status, RuntimeStatus::kDisabled);
  // errors without a status are no errors at all: the main must report, as without them
  EXPECT_THAT(rt.services.at("empty@file").errors,
              ElementsAre("cannot register v2 as updater for empty@file: healthCheck not enabled in config for this "
                          "WRR service"));
}

// A failover's main that is a mirroring service reports through it: the mirroring needs its own
// healthCheck, and its main service one too (Traefik's Mirroring.RegisterStatusUpdater).
TEST(RuntimeTest, AMirroringThatMustReportItsStatusNeedsAHealthCheckAndItsMainOne) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"a":{"rule":"Path(`/a`)","service":"f-unchecked"},"b":{"rule":"Path(`/b`)","service":"f-main"},
               "c":{"rule":"Path(`/c`)","service":"f-ok"}},
    "services":{"f-unchecked":{"failover":{"service":"m-unchecked","fallback":"v1"}},
                "f-main":{"failover":{"service":"m-plain-main","fallback":"v1"}},
                "f-ok":{"failover":{"service":"m-ok","fallback":"v1"}},
                "m-unchecked":{"mirroring":{"service":"v1","mirrors":[{"name":"v2","percent":5}]}},
                "m-plain-main":{"mirroring":{"service":"v2","healthCheck":{}}},
                "m-ok":{"mirroring":{"service":"v1","healthCheck":{},"mirrors":[{"name":"v2","percent":5}]}},
                "v1":{"loadBalancer":{"servers":[{"url":"http://v1"}],"healthCheck":{"path":"/"}}},
                "v2":{"loadBalancer":{"servers":[{"url":"http://v2"}]}}}}})j")});
  EXPECT_THAT(rt.services.at("f-unchecked@file").errors,
              ElementsAre("cannot register m-unchecked as updater for f-unchecked@file: healthCheck not enabled in "
                          "config for this mirroring service"));
  EXPECT_THAT(rt.services.at("f-main@file").errors,
              ElementsAre("cannot register m-plain-main as updater for f-main@file: cannot register service of "
                          "mirroring as updater: healthCheck not enabled in config for this WRR service"));
  EXPECT_THAT(rt.services.at("f-ok@file").errors, IsEmpty());
  EXPECT_EQ(rt.routers.at("c@file").status, RuntimeStatus::kEnabled);
  EXPECT_EQ(rt.routers.at("a@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.routers.at("b@file").status, RuntimeStatus::kDisabled);
}

// Traefik v3.7's resolveHTTPTLSOptions, per entry point: a router in conflict on one entry point
// keeps its name and options on the others, and a copy serves it on that one with the defaults.
TEST(RuntimeTest, ARouterInConflictOnOneEntryPointIsCopiedThereAndKeepsTheOthers) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{"routers":{
      "strict":{"rule":"Host(`a.test`)","service":"s","entryPoints":["web","websecure"],"tls":{"options":"modern"}},
      "lax":{"rule":"Host(`a.test`)","service":"s","entryPoints":["websecure"],"tls":{}}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:1"}]}}}},
    "tls":{"options":{"modern":{"minVersion":"VersionTLS13"}}}})j")});
  const RouterInfo& strict = rt.routers.at("strict@file");
  EXPECT_EQ(strict.using_entry_points, std::vector<std::string>{"web"});
  EXPECT_EQ(strict.config.at("entryPoints"), boost::json::value(boost::json::array{"web"}));
  EXPECT_TRUE(strict.errors.empty());
  EXPECT_EQ(rt.tls_options_by_router.at("web").at("strict@file"), "modern@file");
  EXPECT_EQ(rt.tls_options_by_host.at("web").at("a.test"), "modern@file");
  const RouterInfo& copy = rt.routers.at("websecure-conflicted-strict@file");
  EXPECT_EQ(copy.using_entry_points, std::vector<std::string>{"websecure"});
  EXPECT_EQ(copy.status, RuntimeStatus::kWarning);
  EXPECT_EQ(rt.tls_options_by_router.at("websecure").at("websecure-conflicted-strict@file"), "default");
  EXPECT_EQ(rt.tls_options_by_host.at("websecure").at("a.test"), "default");
  EXPECT_EQ(rt.routers.count("lax@file"), 0u);
  EXPECT_TRUE(rt.routers.at("websecure-conflicted-lax@file").errors.empty());
}

// Traefik's applyModel: on an entry point with a model, a router takes the model's middlewares
// first and its TLS section when it has none; one on several entry points is copied as
// `<ep>-<name>` for each with a model, and keeps its name on the others.
TEST(RuntimeTest, AnEntryPointsModelGivesItsRoutersTlsAndMiddlewares) {
  std::map<std::string, EntryPointModel> models;
  models["websecure"] = EntryPointModel{.tls = boost::json::object{{"options", "modern"}},
                                        .middlewares = {"auth@file"}};
  RuntimeConfig rt = BuildRuntime(
      {Provider("file", R"j({"http":{"routers":{
          "both":{"rule":"Host(`a.test`)","service":"s","entryPoints":["web","websecure"],"middlewares":["own"]},
          "secure":{"rule":"Host(`b.test`)","service":"s","entryPoints":["websecure"],"tls":{}},
          "plain":{"rule":"Host(`c.test`)","service":"s","entryPoints":["web"]}},
        "middlewares":{"auth":{"headers":{"customRequestHeaders":{"X-A":"1"}}},
                       "own":{"headers":{"customRequestHeaders":{"X-B":"1"}}}},
        "services":{"s":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:1"}]}}}},
        "tls":{"options":{"modern":{"minVersion":"VersionTLS13"}}}})j")},
      {"web", "websecure", "traefik"}, {"web"}, AcceptEveryRule, {}, {}, models);
  const RouterInfo& web = rt.routers.at("both@file");
  EXPECT_EQ(web.using_entry_points, std::vector<std::string>{"web"});
  EXPECT_FALSE(web.config.contains("tls"));
  EXPECT_EQ(web.config.at("middlewares"), boost::json::value(boost::json::array{"own@file"}));
  const RouterInfo& copy = rt.routers.at("websecure-both@file");
  EXPECT_EQ(copy.status, RuntimeStatus::kEnabled) << (copy.errors.empty() ? "" : copy.errors[0]);
  EXPECT_EQ(copy.using_entry_points, std::vector<std::string>{"websecure"});
  EXPECT_EQ(copy.config.at("tls"), boost::json::value(boost::json::object{{"options", "modern"}}));
  EXPECT_EQ(copy.config.at("middlewares"), boost::json::value(boost::json::array{"auth@file", "own@file"}));
  EXPECT_EQ(rt.tls_options_by_router.at("websecure").at("websecure-both@file"), "modern@file");
  const RouterInfo& secure = rt.routers.at("secure@file");  // one entry point: its own name, its own tls
  EXPECT_EQ(secure.config.at("tls"), boost::json::value(boost::json::object{}));
  EXPECT_EQ(secure.config.at("middlewares"), boost::json::value(boost::json::array{"auth@file"}));
  EXPECT_FALSE(rt.routers.at("plain@file").config.contains("tls"));
  EXPECT_THAT(rt.middlewares.at("auth@file").used_by, ElementsAre("secure@file", "websecure-both@file"));
}

// Traefik's tls.Manager: entry points serve the `default` store, so a certificate named only in
// other stores is not among those served; one naming no store is the default store's.
TEST(RuntimeTest, OnlyTheDefaultStoresCertificatesAreServed) {
  RuntimeConfig rt = Build({Provider("file", R"j({"tls":{"certificates":[
    {"certFile":"/a.crt","keyFile":"/a.key"},
    {"certFile":"/b.crt","keyFile":"/b.key","stores":["other"]},
    {"certFile":"/c.crt","keyFile":"/c.key","stores":["other","default"]}],
    "stores":{"other":{"defaultCertificate":{"certFile":"/o.crt","keyFile":"/o.key"}}}}})j")});
  std::vector<std::string> served;
  for (const boost::json::value& cert : rt.tls_certificates)
    served.emplace_back(cert.at("certFile").as_string());
  EXPECT_THAT(served, ElementsAre("/a.crt", "/c.crt"));
  EXPECT_TRUE(rt.default_certificate.empty());  // another store's default is no one's
}

// Traefik's getHRWServiceHandler: with its healthCheck every child must report its status.
TEST(RuntimeTest, AHighestRandomWeightHealthCheckNeedsEveryChildToHaveOne) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"a":{"rule":"Path(`/a`)","service":"checked"},"b":{"rule":"Path(`/b`)","service":"plain"}},
    "services":{"checked":{"highestRandomWeight":{"services":[{"name":"v1"},{"name":"v2"}],"healthCheck":{}}},
                "plain":{"highestRandomWeight":{"services":[{"name":"v1"},{"name":"v2","weight":2}]}},
                "v1":{"loadBalancer":{"servers":[{"url":"http://v1"}],"healthCheck":{"path":"/"}}},
                "v2":{"loadBalancer":{"servers":[{"url":"http://v2"}]}}}}})j")});
  EXPECT_THAT(rt.services.at("checked@file").errors,
              ElementsAre("cannot register v2 as updater for checked@file: healthCheck not enabled in config for "
                          "this WRR service"));
  EXPECT_EQ(rt.routers.at("a@file").status, RuntimeStatus::kDisabled);
  EXPECT_THAT(rt.services.at("plain@file").errors, IsEmpty());
  EXPECT_EQ(rt.routers.at("b@file").status, RuntimeStatus::kEnabled);
}

TEST(RuntimeTest, ServicesReferringToEachOtherAreARecursion) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"a"}},
    "services":{"a":{"weighted":{"services":[{"name":"b"}]}},"b":{"weighted":{"services":[{"name":"a"}]}}}}})j")});
  const std::string recursion =
      "could not instantiate service a@file: recursion detected in service:a@file->service:b@file->service:a@file";
  const std::string in_b = "building HTTP service \"a\": " + recursion;
  const std::string in_a = "building HTTP service \"b\": " + in_b;
  EXPECT_THAT(rt.services.at("a@file").errors, ElementsAre(recursion, in_a));
  EXPECT_THAT(rt.services.at("b@file").errors, ElementsAre(in_b));
  EXPECT_THAT(rt.routers.at("r@file").errors, ElementsAre(in_a));
}

TEST(RuntimeTest, ServersOfAServiceWithoutHealthCheckAreUpAndWithOneWaitForTheProbe) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"plain"},"h":{"rule":"Path(`/h`)","service":"checked"}},
    "services":{"plain":{"loadBalancer":{"servers":[{"url":"http://a"},{"url":"http://b"}]}},
                "checked":{"loadBalancer":{"servers":[{"url":"http://c"}],"healthCheck":{"path":"/health"}}},
                "unused":{"loadBalancer":{"servers":[{"url":"http://d"}]}}}}})j")});
  EXPECT_THAT(rt.services.at("plain@file").server_status,
              UnorderedElementsAre(Pair("http://a", ServerStatus::kUp), Pair("http://b", ServerStatus::kUp)));
  EXPECT_THAT(rt.services.at("checked@file").server_status, IsEmpty());
  EXPECT_THAT(rt.services.at("unused@file").server_status, IsEmpty());

  EXPECT_TRUE(rt.SetServerStatus("checked@file", "http://c", ServerStatus::kDown));
  EXPECT_THAT(rt.services.at("checked@file").server_status, ElementsAre(Pair("http://c", ServerStatus::kDown)));
  EXPECT_FALSE(rt.SetServerStatus("nope@file", "http://c", ServerStatus::kUp));
}

TEST(RuntimeTest, AChainsMembersAreQualifiedWithTheChainsProviderAndAMissingOneFailsIt) {
  RuntimeConfig rt = Build({Provider("ecs", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"s","middlewares":["secure@file"]}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}}})j"),
                            Provider("file", R"j({"http":{"middlewares":{
    "secure":{"chain":{"middlewares":["strip","missing"]}},
    "strip":{"stripPrefix":{"prefixes":["/a"]}}}}})j")});
  const MiddlewareInfo& chain = rt.middlewares.at("secure@file");
  EXPECT_EQ(chain.config.at("chain").at("middlewares"), Json(R"j(["strip@file","missing@file"])j"));
  const std::string error = "middleware \"missing@file\" does not exist";
  EXPECT_THAT(chain.errors, ElementsAre(error));
  EXPECT_THAT(rt.routers.at("r@ecs").errors, ElementsAre(error));
  EXPECT_EQ(rt.middlewares.at("strip@file").status, RuntimeStatus::kEnabled);
}

TEST(RuntimeTest, AMiddlewareOfNoKindOrOfTwoIsRefused) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"s","middlewares":["none"]},
               "q":{"rule":"Path(`/q`)","service":"s","middlewares":["two"]}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}},
    "middlewares":{"none":{},"two":{"addPrefix":{"prefix":"/a"},"stripPrefix":{"prefixes":["/b"]}}}}})j")});
  EXPECT_THAT(rt.middlewares.at("none@file").errors,
              ElementsAre("invalid middleware \"none@file\" configuration: invalid middleware type or middleware "
                          "does not exist"));
  EXPECT_THAT(rt.middlewares.at("two@file").errors,
              ElementsAre("cannot create middleware: multi-types middleware not supported, consider declaring two "
                          "different pieces of middleware instead"));
  EXPECT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.routers.at("q@file").status, RuntimeStatus::kDisabled);
}

TEST(RuntimeTest, TheMiddlewareCheckerSpeaksForTheConstructor) {
  std::vector<std::string> asked;
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"r":{"rule":"Path(`/`)","service":"s","middlewares":["bad","good"]}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}},
    "middlewares":{"bad":{"stripPrefixRegex":{"regex":["("]}},"good":{"addPrefix":{"prefix":"/a"}}}}})j")},
                           {"web"}, {"web"}, AcceptEveryRule,
                           [&](std::string_view type, const boost::json::object& options) {
                             asked.emplace_back(type);
                             return type == "stripPrefixRegex" && options.contains("regex")
                                        ? std::string("error parsing regexp: missing closing ): `(`")
                                        : std::string();
                           });
  EXPECT_THAT(asked, ElementsAre("addPrefix", "stripPrefixRegex"));
  EXPECT_THAT(rt.middlewares.at("bad@file").errors, ElementsAre("error parsing regexp: missing closing ): `(`"));
  EXPECT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.middlewares.at("good@file").status, RuntimeStatus::kEnabled);
}

TEST(RuntimeTest, ACertResolverIsAWarningAndUnknownTlsOptionsDisable) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"acme":{"rule":"Host(`a.test`)","service":"s","tls":{"certResolver":"le"}},
               "mine":{"rule":"Host(`b.test`)","service":"s","tls":{"options":"modern"}},
               "theirs":{"rule":"Host(`c.test`)","service":"s","tls":{"options":"nope"}},
               "plain":{"rule":"Host(`d.test`)","service":"s","tls":{}}},
    "services":{"s":{"loadBalancer":{"servers":[{"url":"http://a"}]}}}},
    "tls":{"options":{"modern":{"minVersion":"VersionTLS13"}}}})j")});
  const RouterInfo& acme = rt.routers.at("acme@file");
  EXPECT_EQ(acme.status, RuntimeStatus::kWarning);
  EXPECT_THAT(acme.errors, ElementsAre("certificate resolver \"le\" is not available (ACME is not supported): the "
                                       "router is served with a static or the default certificate"));
  EXPECT_EQ(rt.routers.at("mine@file").status, RuntimeStatus::kEnabled);
  EXPECT_EQ(rt.routers.at("plain@file").status, RuntimeStatus::kEnabled);
  EXPECT_THAT(rt.routers.at("theirs@file").errors,
              ElementsAre("building router handler: unknown TLS options: nope@file"));
}

TEST(RuntimeTest, EveryRootRouterGetsTheDefaultObservabilityModel) {
  RuntimeConfig rt = Build({Provider("file", R"j({"http":{
    "routers":{"quiet":{"rule":"Path(`/`)","service":"s","observability":{"accessLogs":false}}},
    "services":{"s":{"loadBalancer":{"servers":[]}}}}})j")});
  EXPECT_EQ(rt.routers.at("quiet@file").config.at("observability"),
            Json(R"j({"accessLogs":false,"metrics":true,"tracing":true,"traceVerbosity":"minimal"})j"));
}

TEST(RuntimeTest, TheInternalProvidersRoutersAndServicesAreEnabled) {
  InternalOptions options;
  options.api_insecure = true;
  options.ping = true;
  RuntimeConfig rt = Build({Provider("ecs", kWhoami), ProviderConfiguration{"internal", InternalConfiguration(options)}});
  const RouterInfo& api = rt.routers.at("api@internal");
  EXPECT_EQ(api.status, RuntimeStatus::kEnabled) << api.errors.front();
  EXPECT_EQ(api.config.at("priority"), std::numeric_limits<int64_t>::max() - 1);
  EXPECT_THAT(api.using_entry_points, ElementsAre("traefik"));
  EXPECT_EQ(rt.routers.at("ping@internal").status, RuntimeStatus::kEnabled);
  EXPECT_THAT(rt.services.at("api@internal").used_by, ElementsAre("api@internal"));
  EXPECT_EQ(rt.services.at("api@internal").status, RuntimeStatus::kEnabled);
  EXPECT_EQ(rt.services.count("noop@internal"), 1u);
  EXPECT_EQ(rt.services.count("prometheus@internal"), 0u);
}

TEST(RuntimeTest, AddErrorKeepsEachTextOnceAndAWarningNeverLiftsADisabledRouter) {
  RouterInfo router;
  router.AddError("first", false);
  EXPECT_EQ(router.status, RuntimeStatus::kWarning);
  router.AddError("second", true);
  router.AddError("first", false);
  router.AddError("third", false);
  EXPECT_EQ(router.status, RuntimeStatus::kDisabled);
  EXPECT_THAT(router.errors, ElementsAre("first", "second", "third"));
}

TEST(RuntimeTest, QualifiedNameLeavesQualifiedNamesAlone) {
  EXPECT_EQ(QualifiedName("auth", "ecs"), "auth@ecs");
  EXPECT_EQ(QualifiedName("auth@file", "ecs"), "auth@file");
}

}  // namespace
}  // namespace paddock::edge
