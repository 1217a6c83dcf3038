// Traefik's API, byte for byte. Most cases are golden files (testdata/api/*.test, DuckDB-style):
//
//   fixture myprovider                       testdata/api/fixtures/myprovider.json: the view's input
//   request GET /api/http/routers/bar@myprovider
//   status 200
//   header X-Next-Page: 2                    a header the answer must carry (others are not checked)
//   ---- json                                the body: this JSON written as Go writes it, then "\n"
//   {"entryPoints": ["web"], ...}            members in the order written here, which is checked
//
// A body runs to the next blank line. Body modes: `json` (json.Encoder: compact, newline), `json nonl` (json.Marshal), `text` (the
// lines as written, each ending in "\n"), `text nonl` (no final newline); no `----`: empty body.
// The `json` modes re-write the expected JSON with the same Go writer, so escapes are pinned by the
// `text` cases and by GoJsonTest below. Each file's opening comment names the Traefik fixture
// (pkg/api/testdata/*.json) its cases mirror; the expected bodies are ours, from Traefik's shapes.
//
// A fixture is {"entryPoints": [{"name","address","asDefault","defaults" (EntryPointDefaults()),
// "fields"}], "providers": {"<name>": <dynamic configuration>}, "internal": {"apiInsecure","ping"},
// "badRules": {"<rule>": "<why>"}, "serverStatus": {"<service>": {"<url>": "UP"|"DOWN"}},
// "drains": [{"taskArn","url","inFlight","sinceMs","deadlineMs"}], "version", "codename",
// "startDateMs", "tracing", "metrics", "accessLog", "providerKinds", "certificates", "shuttingDown"}.
#include "edge/api.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "edge/internal/go_json.h"

namespace paddock::edge {
namespace {

namespace fs = std::filesystem;
using internal::GoJson;

const fs::path kTestData = PADDOCK_EDGE_API_TESTDATA;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::chrono::system_clock::time_point FromMillis(int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

ApiView LoadFixture(const std::string& name) {
  const boost::json::object f = boost::json::parse(ReadFile(kTestData / "fixtures" / (name + ".json"))).as_object();
  ApiView view;
  if (const auto* eps = f.if_contains("entryPoints")) {
    for (const auto& e : eps->as_array()) {
      const boost::json::object& o = e.as_object();
      EntryPoint ep;
      ep.name = o.at("name").as_string();
      ep.address = o.at("address").as_string();
      if (const auto* d = o.if_contains("asDefault")) ep.as_default = d->as_bool();
      if (const auto* d = o.if_contains("defaults"); d != nullptr && d->as_bool()) ep.fields = EntryPointDefaults();
      if (const auto* fields = o.if_contains("fields")) {
        for (const auto& member : fields->as_object()) ep.fields[member.key()] = member.value();
      }
      view.entry_points.push_back(std::move(ep));
    }
  }
  std::vector<ProviderConfiguration> providers;
  if (const auto* p = f.if_contains("providers")) {
    for (const auto& member : p->as_object()) {
      providers.push_back({std::string(member.key()), member.value().as_object()});
    }
  }
  if (const auto* i = f.if_contains("internal")) {
    InternalOptions options;
    options.api_insecure = i->as_object().at("apiInsecure").as_bool();
    options.ping = i->as_object().at("ping").as_bool();
    providers.push_back({"internal", InternalConfiguration(options)});
  }
  std::map<std::string, std::string> bad_rules;
  if (const auto* b = f.if_contains("badRules")) {
    for (const auto& member : b->as_object()) bad_rules[member.key()] = member.value().as_string();
  }
  std::vector<std::string> names;
  for (const EntryPoint& ep : view.entry_points) names.push_back(ep.name);
  view.runtime = BuildRuntime(providers, names, DefaultEntryPoints(view.entry_points), [&](std::string_view rule) {
    auto it = bad_rules.find(std::string(rule));
    return it == bad_rules.end() ? std::string() : it->second;
  });
  if (const auto* s = f.if_contains("serverStatus")) {
    for (const auto& service : s->as_object()) {
      for (const auto& server : service.value().as_object()) {
        const bool up = server.value().as_string() == "UP";
        EXPECT_TRUE(view.runtime.SetServerStatus(service.key(), server.key(), up ? ServerStatus::kUp : ServerStatus::kDown))
            << service.key();
      }
    }
  }
  if (const auto* d = f.if_contains("drains")) {
    for (const auto& e : d->as_array()) {
      const boost::json::object& o = e.as_object();
      view.drains.push_back(Drain{std::string(o.at("taskArn").as_string()), std::string(o.at("url").as_string()),
                                  o.at("inFlight").as_int64(), FromMillis(o.at("sinceMs").as_int64()),
                                  FromMillis(o.at("deadlineMs").as_int64())});
    }
  }
  if (const auto* v = f.if_contains("version")) view.version = v->as_string();
  if (const auto* v = f.if_contains("codename")) view.codename = v->as_string();
  if (const auto* v = f.if_contains("startDateMs")) view.start_date = FromMillis(v->as_int64());
  if (const auto* v = f.if_contains("tracing")) view.tracing = v->as_string();
  if (const auto* v = f.if_contains("metrics")) view.metrics = v->as_string();
  if (const auto* v = f.if_contains("accessLog")) view.access_log = v->as_bool();
  if (const auto* v = f.if_contains("providerKinds")) {
    std::vector<std::string> kinds;
    for (const auto& k : v->as_array()) kinds.emplace_back(k.as_string());
    view.providers = OverviewProviders(kinds);
  }
  if (const auto* v = f.if_contains("certificates")) {
    const boost::json::object& o = v->as_object();
    view.certificates = OverviewSection{static_cast<int>(o.at("total").as_int64()),
                                        static_cast<int>(o.at("warnings").as_int64()),
                                        static_cast<int>(o.at("errors").as_int64())};
  }
  if (const auto* v = f.if_contains("shuttingDown")) view.shutting_down = v->as_bool();
  return view;
}

struct GoldenCase {
  std::string where;  // file:line
  std::string fixture;
  std::string method, target;
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body_mode;  // "", "json", "json nonl", "text", "text nonl"
  std::string body;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.where; }

std::vector<GoldenCase> ReadCases() {
  std::vector<GoldenCase> cases;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kTestData)) {
    if (entry.path().extension() == ".test") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::istringstream in(ReadFile(file));
    std::string line, fixture;
    int number = 0;
    GoldenCase* current = nullptr;
    bool in_body = false;
    while (std::getline(in, line)) {
      ++number;
      if (line.starts_with("fixture ")) {
        fixture = line.substr(8);
        current = nullptr;
        in_body = false;
        continue;
      }
      if (line.starts_with("request ")) {
        cases.push_back({});
        current = &cases.back();
        current->where = fmt::format("{}:{}", file.filename().string(), number);
        current->fixture = fixture;
        const std::string rest = line.substr(8);
        current->method = rest.substr(0, rest.find(' '));
        current->target = rest.substr(rest.find(' ') + 1);
        in_body = false;
        continue;
      }
      if (current == nullptr) continue;  // comments and blank lines between cases
      if (in_body) {
        if (line.empty()) {  // a blank line ends the case
          current = nullptr;
          in_body = false;
        } else {
          current->body += line + "\n";
        }
        continue;
      }
      if (line.starts_with("status ")) {
        current->status = std::stoi(line.substr(7));
      } else if (line.starts_with("header ")) {
        const std::string h = line.substr(7);
        const size_t colon = h.find(':');
        current->headers.emplace_back(h.substr(0, colon), h.substr(colon + 2));
      } else if (line.starts_with("----")) {
        current->body_mode = line.size() > 5 ? line.substr(5) : "text";
        in_body = true;
      }
    }
  }
  return cases;
}

std::string ExpectedBody(const GoldenCase& c) {
  if (c.body_mode.empty()) return {};
  if (c.body_mode == "json") return GoJson(boost::json::parse(c.body)) + "\n";
  if (c.body_mode == "json nonl") return GoJson(boost::json::parse(c.body));
  if (c.body_mode == "text") return c.body;
  if (c.body_mode == "text nonl") return c.body.empty() ? c.body : c.body.substr(0, c.body.size() - 1);
  ADD_FAILURE() << "unknown body mode " << c.body_mode;
  return {};
}

class ApiGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ApiGoldenTest, AnswersExactly) {
  const GoldenCase& c = GetParam();
  static std::map<std::string, ApiView>* views = new std::map<std::string, ApiView>();
  if (views->count(c.fixture) == 0) (*views)[c.fixture] = LoadFixture(c.fixture);
  http::Request request;
  request.method = c.method;
  request.target = c.target;
  const http::Response response = ServeApi(views->at(c.fixture), request);
  EXPECT_EQ(response.status, c.status);
  for (const auto& [name, value] : c.headers) {
    EXPECT_EQ(response.GetHeader(name), value) << name;
  }
  EXPECT_EQ(response.body, ExpectedBody(c));
}

INSTANTIATE_TEST_SUITE_P(Golden, ApiGoldenTest, ::testing::ValuesIn(ReadCases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& param) {
                           std::string name = param.param.where;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(ApiGoldenFilesTest, ThereAreCasesInEveryFile) {
  std::map<std::string, int> per_file;
  for (const GoldenCase& c : ReadCases()) ++per_file[c.where.substr(0, c.where.find(':'))];
  EXPECT_GE(per_file.size(), 6u);
  for (const auto& [file, n] : per_file) EXPECT_GT(n, 0) << file;
}

// ---- The Go writer on its own ------------------------------------------------------------------

TEST(GoJsonTest, EscapesAsGoDoesWithHtmlSafety) {
  EXPECT_EQ(GoJson(boost::json::value("Host(`a`) && Path(`/<x>`)")),
            R"j("Host(`a`) \u0026\u0026 Path(`/\u003cx\u003e`)")j");
  EXPECT_EQ(GoJson(boost::json::value("q\"b\\s\b\f\n\r\t\x01\x1f\x7f")), R"j("q\"b\\s\b\f\n\r\t\u0001\u001f)j" "\x7f\"");
  EXPECT_EQ(GoJson(boost::json::value("caf\xc3\xa9 \xe2\x80\xa8 \xff")), "\"caf\xc3\xa9 \\u2028 \\ufffd\"");
}

TEST(GoJsonTest, WritesMembersInStoredOrderAndNumbersAsGo) {
  boost::json::object o;
  o["z"] = 1;
  o["a"] = boost::json::array{true, nullptr, 2.5, 1e21, 0.000001, -3};
  EXPECT_EQ(GoJson(o), R"j({"z":1,"a":[true,null,2.5,1e+21,0.000001,-3]})j");
}

TEST(GoJsonTest, ShapesAServiceInDeclarationOrderWithGosOmissions) {
  const boost::json::object service = boost::json::parse(R"j({
    "loadBalancer": {"responseForwarding": {"flushInterval": "0.1s"}, "strategy": "", "servers": [
      {"weight": 0, "url": "http://a", "preservePath": false}],
      "healthCheck": {"headers": {"b": "2", "a": "1"}, "interval": 10, "timeout": "5000ms", "path": "/h"},
      "sticky": {"cookie": {}}}})j").as_object();
  EXPECT_EQ(GoJson(internal::GoShape(service, "Service")),
            R"j({"loadBalancer":{"sticky":{"cookie":{}},"servers":[{"url":"http://a","weight":0}],)j"
            R"j("healthCheck":{"path":"/h","interval":"10s","timeout":"5s","headers":{"a":"1","b":"2"}},)j"
            R"j("passHostHeader":null,"responseForwarding":{"flushInterval":"100ms"}}})j");
}

TEST(GoJsonTest, KeepsUndeclaredMembersAfterTheDeclaredOnes) {
  const boost::json::object router =
      boost::json::parse(R"j({"zeta": 1, "rule": "Path(`/`)", "entryPoints": ["web"], "priority": 0})j").as_object();
  EXPECT_EQ(GoJson(internal::GoShape(router, "Router")), R"j({"entryPoints":["web"],"rule":"Path(`/`)","zeta":1})j");
}

TEST(GoJsonTest, DurationsReadAndWriteAsGo) {
  using internal::FormatGoDurationNanos;
  using internal::ParseGoDurationNanos;
  EXPECT_EQ(FormatGoDurationNanos(0), "0s");
  EXPECT_EQ(FormatGoDurationNanos(1'500), "1.5\xc2\xb5s");
  EXPECT_EQ(FormatGoDurationNanos(100'000'000), "100ms");
  EXPECT_EQ(FormatGoDurationNanos(60'000'000'000), "1m0s");
  EXPECT_EQ(FormatGoDurationNanos(3'723'500'000'000), "1h2m3.5s");
  EXPECT_EQ(FormatGoDurationNanos(-2'000'000'000), "-2s");
  EXPECT_EQ(ParseGoDurationNanos("1h30m"), 5'400'000'000'000);
  EXPECT_EQ(ParseGoDurationNanos("1.5s"), 1'500'000'000);
  EXPECT_EQ(ParseGoDurationNanos("10"), 10'000'000'000);
  EXPECT_EQ(ParseGoDurationNanos("0"), 0);
  EXPECT_EQ(ParseGoDurationNanos("250us"), 250'000);
  EXPECT_EQ(ParseGoDurationNanos("3 s"), std::nullopt);
  EXPECT_EQ(ParseGoDurationNanos("5d"), std::nullopt);
  EXPECT_EQ(ParseGoDurationNanos(""), std::nullopt);
}

TEST(GoJsonTest, TimesAndQuotesAsGo) {
  EXPECT_EQ(internal::FormatGoTime(FromMillis(1'796'119'200'500)), "2026-12-01T10:00:00.5Z");
  EXPECT_EQ(internal::FormatGoTime(FromMillis(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(internal::GoQuote("a\"b\\c\td\x01"), R"j("a\"b\\c\td\x01")j");
}

// ---- What the golden files cannot say ---------------------------------------------------------

TEST(ApiTest, DefaultEntryPointsAreTheMarkedOnesOrAllButTraefikAndUdp) {
  std::vector<EntryPoint> eps = {{"websecure", ":443", false, {}}, {"traefik", ":8080", false, {}},
                                 {"dns", ":53/udp", false, {}}, {"web", ":80", false, {}}};
  EXPECT_EQ(DefaultEntryPoints(eps), (std::vector<std::string>{"web", "websecure"}));
  eps[0].as_default = true;
  EXPECT_EQ(DefaultEntryPoints(eps), (std::vector<std::string>{"websecure"}));
}

TEST(ApiTest, OverviewProvidersFollowTraefiksDeclarationOrder) {
  EXPECT_EQ(OverviewProviders({"http", "ecs", "file"}), (std::vector<std::string>{"File", "Ecs", "HTTP"}));
  EXPECT_TRUE(OverviewProviders({}).empty());
}

TEST(ApiTest, TheViewIsReadNotChanged) {
  ApiView view = LoadFixture("myprovider");
  const std::string before = ServeApi(view, http::Request{"GET", "/api/rawdata", {}, {}, {}}).body;
  (void)ServeApi(view, http::Request{"GET", "/api/http/routers", {}, {}, {}});
  (void)ServeApi(view, http::Request{"GET", "/api/http/routers/baz@myprovider", {}, {}, {}});
  EXPECT_EQ(ServeApi(view, http::Request{"GET", "/api/rawdata", {}, {}, {}}).body, before);
}

}  // namespace
}  // namespace paddock::edge
