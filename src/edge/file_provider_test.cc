#include "edge/file_provider.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <boost/json/parse.hpp>
#include <fmt/format.h>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace paddock::edge {
namespace {
namespace json = boost::json;
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "edge-file-provider-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? fs::path(tmpl) : fs::path();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary | std::ios::trunc) << text;
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

TEST(YamlToJsonTest, ScalarsAreTextPlainNullsAreNullAndEmptyIsAnEmptyObject) {
  auto v = YamlToJson("a: 10\nb: true\nc: ~\nd: \"null\"\ne: [x, 'y']\nf:\n");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, json::parse(R"J({"a":"10","b":"true","c":null,"d":"null","e":["x","y"],"f":null})J"));
  auto empty = YamlToJson("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, json::value(json::object()));
  auto bad = YamlToJson("a: [1, 2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("YAML: line"), std::string::npos) << bad.status().message();
}

TEST(YamlToJsonTest, AnAliasBombIsRefusedNotExpanded) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += fmt::format("a{}: &a{} [", i, i);
    for (int j = 0; j < 10; ++j) text += fmt::format("{}*a{}", j ? ", " : "", i - 1);
    text += "]\n";
  }
  auto v = YamlToJson(text);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("YAML nodes"), std::string::npos) << v.status().message();
}

TEST(TomlToJsonTest, KeepsTomlTypes) {
  auto v = TomlToJson("[http.routers.r]\nrule = \"Path(`/`)\"\npriority = 10\nentryPoints = [\"web\"]\n");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, json::parse(R"J({"http":{"routers":{"r":{"rule":"Path(`/`)","priority":10,"entryPoints":["web"]}}}})J"));
  EXPECT_FALSE(TomlToJson("[http\n").ok());
}

TEST(ReadDynamicFileTest, YamlAndTomlGiveTheSameCheckedTree) {
  TempDir dir;
  const std::string yaml = dir.Write("a.yml", R"J(
http:
  routers:
    r:
      rule: "PathPrefix(`/f`)"
      service: web@ecs
      priority: 10
  services:
    s:
      loadBalancer:
        servers:
          - url: http://127.0.0.1:8080
        healthCheck:
          path: /health
          interval: 90
tls:
  certificates:
    - certFile: /certs/a.crt
      keyFile: /certs/a.key
)J");
  const std::string toml = dir.Write("a.TOML", R"J(
[http.routers.r]
rule = "PathPrefix(`/f`)"
service = "web@ecs"
priority = 10
[http.services.s.loadBalancer]
servers = [{url = "http://127.0.0.1:8080"}]
[http.services.s.loadBalancer.healthCheck]
path = "/health"
interval = "90s"
[[tls.certificates]]
certFile = "/certs/a.crt"
keyFile = "/certs/a.key"
)J");
  auto a = ReadDynamicFile(yaml);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = ReadDynamicFile(toml);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->at("http").at("routers").at("r").at("priority"), json::value(10));
  EXPECT_EQ(a->at("http").at("services").at("s").at("loadBalancer").at("healthCheck").at("interval"),
            json::value("1m30s"));
  // Certificates stay in the tree for the TLS step.
  EXPECT_EQ(a->at("tls").at("certificates"), json::parse(R"J([{"certFile":"/certs/a.crt","keyFile":"/certs/a.key"}])J"));
}

// A mirroring service, as Traefik's documentation writes one: YAML's text scalars become the
// schema's numbers and booleans, the same tree as TOML's.
TEST(ReadDynamicFileTest, AMirroringServiceIsReadInTraefiksTypes) {
  TempDir dir;
  const std::string yaml = dir.Write("m.yaml", R"J(
http:
  services:
    mirrored-api:
      mirroring:
        service: appv1
        mirrorBody: false
        maxBodySize: 1024
        mirrors:
          - name: appv2
            percent: 10
)J");
  const std::string toml = dir.Write("m.toml", R"J(
[http.services.mirrored-api.mirroring]
service = "appv1"
mirrorBody = false
maxBodySize = 1024
[[http.services.mirrored-api.mirroring.mirrors]]
name = "appv2"
percent = 10
)J");
  auto a = ReadDynamicFile(yaml);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = ReadDynamicFile(toml);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->at("http").at("services").at("mirrored-api"),
            json::parse(R"J({"mirroring":{"service":"appv1","mirrorBody":false,"maxBodySize":1024,
                                          "mirrors":[{"name":"appv2","percent":10}]}})J"));
}

TEST(ReadDynamicFileTest, ErrorsNameTheFileAndThePath) {
  TempDir dir;
  auto bad = ReadDynamicFile(dir.Write("bad.yaml", "http:\n  routers:\n    r:\n      rul: x\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.yaml"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("http.routers.r.rul"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ReadDynamicFile(dir.Write("x.json", "{}")).ok());
  EXPECT_FALSE(ReadDynamicFile((dir.path() / "missing.yml").string()).ok());
}

TEST(ReadDynamicFileTest, AFileIsAGoTemplateRenderedBeforeItIsRead) {
  TempDir dir;
  setenv("PADDOCK_FILE_PROVIDER_TEST_PORT", "8080", 1);
  auto rendered = ReadDynamicFile(dir.Write("many.yml", R"(http:
  routers:
{{- range $i := until 3 }}
    router{{ $i }}:
      rule: Path(`/{{ $i }}`)
      service: app
{{- end }}
  services:
    app:
      loadBalancer:
        servers:
          - url: http://10.0.0.1:{{ env "PADDOCK_FILE_PROVIDER_TEST_PORT" }}
)"));
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  const auto& routers = rendered->at("http").as_object().at("routers").as_object();
  EXPECT_EQ(routers.size(), 3u);
  EXPECT_EQ(routers.at("router2").as_object().at("rule").as_string(), "Path(`/2`)");
  EXPECT_EQ(rendered->at("http").at_pointer("/services/app/loadBalancer/servers/0/url").as_string(),
            "http://10.0.0.1:8080");
  auto broken = ReadDynamicFile(dir.Write("broken.toml", "[http.routers.r]\nrule = \"{{ nosuch }}\"\n"));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message(),
            "template: " + (dir.path() / "broken.toml").string() + ":2: function \"nosuch\" not defined");
}

TEST(FileProviderTest, StartRefusesWhatTraefikRefuses) {
  EXPECT_FALSE(FileProvider({}).Start().ok());
  EXPECT_FALSE(FileProvider({.filename = "/a.yml", .directory = "/d"}).Start().ok());
  EXPECT_FALSE(FileProvider({.filename = "/a.json"}).Start().ok());
}

TEST(FileProviderTest, ADirectoryIsWalkedInOrderAndTheFirstDefinitionWins) {
  TempDir dir;
  dir.Write("b.yml", "http:\n  routers:\n    r:\n      rule: Path(`/b`)\n      service: s\n");
  dir.Write("a/x.toml", "[http.routers.r]\nrule = \"Path(`/a`)\"\nservice = \"s\"\n[http.routers.only-a]\nrule = \"Path(`/o`)\"\nservice = \"s\"\n");
  dir.Write("c.yaml", "http:\n  services:\n    s:\n      loadBalancer:\n        servers:\n          - url: http://10.0.0.1\n");
  dir.Write("notes.txt", "not: [configuration");
  FileProvider p({.directory = dir.path().string()});
  ASSERT_TRUE(p.Reload().ok());
  auto c = p.Current();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // "a/x.toml" sorts before "b.yml": its router r wins; c.yaml's service joins.
  EXPECT_EQ(c->at("http").at("routers").at("r").at("rule"), json::value("Path(`/a`)"));
  EXPECT_TRUE(c->at("http").at("routers").as_object().contains("only-a"));
  EXPECT_TRUE(c->at("http").at("services").as_object().contains("s"));
}

TEST(FileProviderTest, ABadFileKeepsTheLastGoodConfigurationAndAChangeWakes) {
  TempDir dir;
  const std::string file = dir.Write("dynamic.yml", "http:\n  routers:\n    r:\n      rule: Path(`/1`)\n      service: s\n");
  FileProvider p({.filename = file});
  int wakes = 0;
  p.SetWake([&] { ++wakes; });
  EXPECT_FALSE(p.Current().ok());  // nothing read yet
  EXPECT_TRUE(p.CheckForChanges());
  EXPECT_EQ(wakes, 1);
  ASSERT_TRUE(p.Current().ok());
  EXPECT_FALSE(p.CheckForChanges());  // nothing changed: nothing read
  EXPECT_EQ(wakes, 1);

  dir.Write("dynamic.yml", "http:\n  routers:\n    r:\n      rule: [unclosed\n");
  EXPECT_TRUE(p.CheckForChanges());
  EXPECT_FALSE(p.Reload().ok());
  EXPECT_EQ(wakes, 1);
  auto kept = p.Current();
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->at("http").at("routers").at("r").at("rule"), json::value("Path(`/1`)"));

  dir.Write("dynamic.yml", "http:\n  routers:\n    r:\n      rule: Path(`/two`)\n      service: s\n");
  EXPECT_TRUE(p.CheckForChanges());
  EXPECT_EQ(wakes, 2);
  EXPECT_EQ(p.Current()->at("http").at("routers").at("r").at("rule"), json::value("Path(`/two`)"));
}

TEST(FileProviderTest, StartReadsAtOnceAndAFileThatFailsFirstIsNotFatal) {
  TempDir dir;
  const std::string file = dir.Write("d.yml", "http: [not an object]\n");
  FileProvider p({.filename = file, .watch_interval = std::chrono::hours(1)});
  ASSERT_TRUE(p.Start().ok());
  auto c = p.Current();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("d.yml"), std::string::npos) << c.status().message();
  p.Stop();
}

}  // namespace
}  // namespace paddock::edge
