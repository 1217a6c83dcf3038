// Host-level grants, Fargate's refusals and the values written into containers' files, at
// registration (host_grants.h, fargate.h, container_values.h through ValidateRegister).
#include "ecs/taskdef/host_grants.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "ecs/taskdef/container_values.h"
#include "ecs/taskdef/fargate.h"
#include "ecs/taskdef/validate.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::taskdef {
namespace {
namespace json = boost::json;

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }

// A definition of one container `container` (JSON members) plus task-level `extra` members.
std::string Def(std::string_view container, std::string_view extra = "") {
  return fmt::format(R"({{"family":"f",{}"containerDefinitions":[{{"name":"c","image":"x","memory":64{}}}]}})",
                     extra.empty() ? "" : std::string(extra) + ",", container.empty() ? "" : "," + std::string(container));
}

// The same as a FARGATE-requiring awsvpc definition of size 256/512.
std::string FargateDef(std::string_view container, std::string_view extra = "") {
  std::string task = R"("networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256","memory":"512")";
  if (!extra.empty()) task += "," + std::string(extra);
  return Def(container, task);
}

std::string ErrorOf(const std::string& text) {
  auto r = ValidateRegister(Parse(text));
  return r.ok() ? "OK" : api::AnswerFor(r.status()).type + ": " + r.status().message();
}

std::vector<std::string> Required(const std::string& text) {
  auto r = ValidateRegister(Parse(text));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::string> out;
  if (r.ok())
    for (const auto& a : r->requires_attributes) out.emplace_back(a.at("name").as_string());
  return out;
}

std::vector<std::string> Compatibilities(const std::string& text) {
  auto r = ValidateRegister(Parse(text));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->compatibilities : std::vector<std::string>{};
}

bool Has(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(HostGrantsTest, ListsEveryGrantAndNothingElse) {
  auto grants = HostGrantsOf(Parse(R"({"networkMode":"host","pidMode":"host","ipcMode":"host",
      "volumes":[{"name":"h","host":{"sourcePath":"/"}},{"name":"t"},{"name":"e","host":{}}],
      "containerDefinitions":[{"name":"a","privileged":true,"linuxParameters":{"capabilities":{"add":["SYS_PTRACE","CAP_SYS_PTRACE","NET_ADMIN"]},
        "devices":[{"hostPath":"/dev/fuse"}]}},{"name":"b","privileged":false}]})"));
  std::vector<std::string> texts;
  for (const auto& g : grants) texts.push_back(g.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"networkMode 'host'", "pidMode 'host'", "ipcMode 'host'",
                                             "volume 'h' binds the host path '/'", "container 'a' is privileged",
                                             "container 'a' adds the capability NET_ADMIN",
                                             "container 'a' maps the host device '/dev/fuse'"}));
  EXPECT_EQ(HostGrantAttributes(grants), (std::vector<std::string>{std::string(kHostAccessAttribute),
                                                                   std::string(kPrivilegedAttribute)}));
  EXPECT_TRUE(HostGrantsOf(Parse(R"({"networkMode":"bridge","pidMode":"task","ipcMode":"task","volumes":[{"name":"t"}],
      "containerDefinitions":[{"name":"a","linuxParameters":{"capabilities":{"add":["SYS_PTRACE"],"drop":["ALL"]}}}]})"))
                  .empty());
  EXPECT_TRUE(HostGrantAttributes({}).empty());
}

TEST(HostGrantsTest, RegistrationRequiresTheHostAccessAttribute) {
  EXPECT_FALSE(Has(Required(Def("")), kHostAccessAttribute));
  EXPECT_FALSE(Has(Required(Def(R"("linuxParameters":{"capabilities":{"add":["SYS_PTRACE"]}})")), kHostAccessAttribute));
  for (const std::string& def :
       {Def(R"("mountPoints":[{"sourceVolume":"h","containerPath":"/host"}])",
            R"("volumes":[{"name":"h","host":{"sourcePath":"/"}}])"),
        Def(R"("linuxParameters":{"capabilities":{"add":["SYS_ADMIN"]}})"),
        Def(R"("linuxParameters":{"devices":[{"hostPath":"/dev/kmsg"}]})"), Def("", R"("networkMode":"host")"),
        Def("", R"("pidMode":"host")"), Def("", R"("ipcMode":"host")")}) {
    auto names = Required(def);
    EXPECT_TRUE(Has(names, kHostAccessAttribute)) << def;
    EXPECT_FALSE(Has(names, kPrivilegedAttribute)) << def;
    EXPECT_EQ(Compatibilities(def), (std::vector<std::string>{"EXTERNAL", "EC2"})) << def;
  }
  auto privileged = Required(Def(R"("privileged":true)"));
  EXPECT_TRUE(Has(privileged, kHostAccessAttribute));
  EXPECT_TRUE(Has(privileged, kPrivilegedAttribute));
}

// Red team, 2026-12: a task with ulimits rtprio 99 ran a SCHED_FIFO spinner that no CPU share
// bounds. rtprio above 0 is a host-level grant; rttime (which only limits) is not.
TEST(HostGrantsTest, RealtimePriorityIsAHostGrantAndFargateRefusesIt) {
  for (const std::string& fine :
       {Def(R"("ulimits":[{"name":"rtprio","softLimit":0,"hardLimit":0}])"),
        Def(R"("ulimits":[{"name":"rttime","softLimit":1000,"hardLimit":2000},{"name":"nice","softLimit":0,"hardLimit":0}])")}) {
    EXPECT_TRUE(HostGrantsOf(Parse(fine)).empty()) << fine;
    EXPECT_FALSE(Has(Required(fine), kHostAccessAttribute)) << fine;
  }
  const std::string rt = Def(R"("ulimits":[{"name":"nofile","softLimit":10,"hardLimit":10},{"name":"rtprio","softLimit":0,"hardLimit":99}])");
  auto grants = HostGrantsOf(Parse(rt));
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].kind, HostGrantKind::kRealtimePriority);
  EXPECT_EQ(grants[0].text, "container 'c' sets the ulimit rtprio to 99 (real-time scheduling)");
  EXPECT_TRUE(Has(Required(rt), kHostAccessAttribute));
  EXPECT_EQ(Compatibilities(Def(R"("ulimits":[{"name":"rtprio","softLimit":1,"hardLimit":1}])",
                                R"("networkMode":"awsvpc","cpu":"256","memory":"512")")),
            (std::vector<std::string>{"EC2"}));
  EXPECT_EQ(ErrorOf(FargateDef(R"("ulimits":[{"name":"rtprio","softLimit":1,"hardLimit":1}])")),
            "ClientException: Fargate compatible task definitions do not support a ulimit rtprio above 0 (real-time "
            "scheduling)");
  EXPECT_EQ(ErrorOf(FargateDef(R"("ulimits":[{"name":"rtprio","softLimit":0,"hardLimit":0},{"name":"rttime","softLimit":5,"hardLimit":5}])")),
            "OK");
}

TEST(FargateTest, RequiresCompatibilitiesFargateRefusesWithAwsTexts) {
  const std::pair<std::string, std::string> cases[] = {
      {FargateDef("", R"("volumes":[{"name":"h","host":{"sourcePath":"/"}}])"),
       "ClientException: Fargate compatible task definitions do not support sourcePath"},
      {FargateDef("", R"("volumes":[{"name":"d","dockerVolumeConfiguration":{"scope":"task"}}])"),
       "ClientException: Fargate compatible task definitions do not support dockerVolumeConfiguration"},
      {FargateDef("", R"("placementConstraints":[{"type":"memberOf","expression":"attribute:x == y"}])"),
       "ClientException: Fargate compatible task definitions do not support placementConstraints"},
      {FargateDef(R"("privileged":true)"), "ClientException: Fargate requires that the 'privileged' setting be 'false'"},
      {FargateDef(R"("linuxParameters":{"capabilities":{"add":["SYS_PTRACE","NET_ADMIN"]}})"),
       "ClientException: NET_ADMIN is not allowed on Fargate."},
      {FargateDef(R"("linuxParameters":{"devices":[{"hostPath":"/dev/fuse"}]})"),
       "ClientException: Fargate compatible task definitions do not support devices"},
      {FargateDef(R"("linuxParameters":{"sharedMemorySize":64})"),
       "ClientException: Fargate compatible task definitions do not support sharedMemorySize"},
      {FargateDef(R"("linuxParameters":{"maxSwap":64})"),
       "ClientException: Fargate compatible task definitions do not support maxSwap"},
      {FargateDef(R"("linuxParameters":{"swappiness":10})"),
       "ClientException: Fargate compatible task definitions do not support swappiness"},
      {FargateDef(R"("dockerSecurityOptions":["apparmor=unconfined"])"),
       "ClientException: Fargate compatible task definitions do not support dockerSecurityOptions"},
      {FargateDef(R"("dnsSearchDomains":["corp.example"])"),
       "ClientException: Fargate compatible task definitions do not support dnsSearchDomains"},
      {FargateDef(R"("resourceRequirements":[{"type":"GPU","value":"1"}])"),
       "ClientException: Tasks using the Fargate launch type do not support GPU resource requirements"},
      {FargateDef(R"("systemControls":[{"namespace":"kernel.panic","value":"1"}])"),
       "ClientException: Fargate compatible task definitions do not support the systemControls namespace "
       "'kernel.panic' (only net.*, fs.mqueue.* and the IPC kernel.* parameters are namespaced)"},
      {FargateDef("", R"("pidMode":"host")"),
       "ClientException: Tasks using the Fargate launch type do not support pidMode 'host'. The supported value for "
       "pidMode is 'task'."},
      {FargateDef("", R"("ipcMode":"host")"), "ClientException: Tasks using the Fargate launch type do not support ipcMode."},
      // awsvpc (which Fargate requires) refuses these on any launch type.
      {FargateDef(R"("extraHosts":[{"hostname":"db","ipAddress":"10.0.0.1"}])"),
       "ClientException: Extra hosts are not supported on container when networkMode=awsvpc."},
      {FargateDef(R"("dnsServers":["10.0.0.2"])"),
       "ClientException: DNS servers are not supported on container when networkMode=awsvpc."},
      {FargateDef(R"("links":["other"])"), "ClientException: Links are not supported when networkMode=awsvpc."},
      {FargateDef(R"("disableNetworking":true)"),
       "ClientException: Disable Networking is not supported on container when networkMode=awsvpc."},
  };
  for (const auto& [def, want] : cases) EXPECT_EQ(ErrorOf(def), want) << def;
  // What Fargate does give.
  EXPECT_EQ(ErrorOf(FargateDef(R"("privileged":false,"disableNetworking":false,"linuxParameters":{
      "capabilities":{"add":["SYS_PTRACE"],"drop":["ALL"]},"initProcessEnabled":true,
      "tmpfs":[{"containerPath":"/scratch","size":4}]},"systemControls":[{"namespace":"net.core.somaxconn","value":"1024"},
      {"namespace":"kernel.shmmax","value":"1"},{"namespace":"fs.mqueue.msg_max","value":"10"}],
      "ulimits":[{"name":"nofile","softLimit":10,"hardLimit":10}])",
                             R"("pidMode":"task","volumes":[{"name":"t"}])")),
            "OK");
}

TEST(FargateTest, CompatibilitiesIncludeFargateOnlyForWhatFargateRuns) {
  const std::string awsvpc = R"("networkMode":"awsvpc","cpu":"256","memory":"512")";
  EXPECT_EQ(Compatibilities(Def("", awsvpc)), (std::vector<std::string>{"EC2", "FARGATE"}));
  for (const std::string& def :
       {Def(R"("privileged":true)", awsvpc), Def(R"("linuxParameters":{"capabilities":{"add":["SYS_ADMIN"]}})", awsvpc),
        Def(R"("linuxParameters":{"sharedMemorySize":64})", awsvpc), Def("", awsvpc + R"(,"pidMode":"host")"),
        Def("", awsvpc + R"(,"ipcMode":"task")"), Def(R"("dockerSecurityOptions":["no-new-privileges"])", awsvpc),
        Def(R"("systemControls":[{"namespace":"kernel.panic","value":"1"}])", awsvpc),
        Def("", awsvpc + R"(,"volumes":[{"name":"h","host":{"sourcePath":"/srv"}}])")}) {
    EXPECT_EQ(Compatibilities(def), (std::vector<std::string>{"EC2"})) << def;
  }
}

TEST(ContainerValuesTest, RefusesWhatWouldForgeLinesOrVariables) {
  const std::pair<std::string, std::string> cases[] = {
      {Def(R"("extraHosts":[{"hostname":"a\n6.6.6.6 evil","ipAddress":"1.2.3.4"}])"),
       "InvalidParameterException: Invalid extraHosts entry for container 'c': hostname 'a\\x0a6.6.6.6 evil' may "
       "contain only letters, digits, '-', '.' and '_' (1 to 255 characters, not starting with '-' or '.')."},
      {Def(R"("extraHosts":[{"hostname":"db","ipAddress":"1.2.3.4\n5.5.5.5 injected"}])"),
       "InvalidParameterException: Invalid extraHosts entry for container 'c': ipAddress '1.2.3.4\\x0a5.5.5.5 "
       "injected' is not an IPv4 or IPv6 address."},
      {Def(R"("dnsServers":["8.8.8.8\nnameserver 6.6.6.6"])"),
       "InvalidParameterException: Invalid dnsServers entry for container 'c': '8.8.8.8\\x0anameserver 6.6.6.6' is "
       "not an IPv4 or IPv6 address."},
      {Def(R"("dnsSearchDomains":["x\nnameserver 7.7.7.7"])"),
       "InvalidParameterException: Invalid dnsSearchDomains entry for container 'c': 'x\\x0anameserver 7.7.7.7' is "
       "not a domain name (letters, digits, '-' and '.', 1 to 253 characters)."},
      {Def(R"("hostname":"web\n1.2.3.4 evil")"),
       "InvalidParameterException: Invalid hostname for container 'c': 'web\\x0a1.2.3.4 evil' may contain only "
       "letters, digits, '-', '.' and '_' (1 to 255 characters, not starting with '-' or '.')."},
      {Def(R"("environment":[{"name":"LD_PRELOAD=/x","value":"1"}])"),
       "InvalidParameterException: Invalid environment variable name for container 'c': 'LD_PRELOAD=/x' must not be "
       "empty or contain '=', a NUL character or a line break."},
      {Def(R"("environment":[{"name":"A\u0000B","value":"1"}])"),
       "InvalidParameterException: Invalid environment variable name for container 'c': 'A\\x00B' must not be empty "
       "or contain '=', a NUL character or a line break."},
      {Def(R"("environment":[{"name":"","value":"1"}])"),
       "InvalidParameterException: Invalid environment variable name for container 'c': '' must not be empty or "
       "contain '=', a NUL character or a line break."},
      {Def(R"("secrets":[{"name":"A\nB","valueFrom":"arn:aws:ssm:us-east-1:123456789012:parameter/p"}])",
           R"("executionRoleArn":"arn:aws:iam::123456789012:role/x")"),
       "InvalidParameterException: Invalid secret name for container 'c': 'A\\x0aB' must not be empty or contain '=', "
       "a NUL character or a line break."},
  };
  for (const auto& [def, want] : cases) EXPECT_EQ(ErrorOf(def), want) << def;
  EXPECT_EQ(ErrorOf(Def(R"("hostname":"web-1.internal","extraHosts":[{"hostname":"db.internal","ipAddress":"10.99.0.7"},
      {"hostname":"v6_host","ipAddress":"fd00::1"}],"dnsServers":["10.99.0.2","2001:db8::53"],
      "dnsSearchDomains":["corp.example","svc.local"],"environment":[{"name":"PATH","value":"a=b\nc"},{"name":"lower_1","value":""}])")),
            "OK");
}

TEST(ContainerValuesTest, Predicates) {
  EXPECT_TRUE(IsIpAddress("10.0.0.1"));
  EXPECT_TRUE(IsIpAddress("::1"));
  EXPECT_FALSE(IsIpAddress("10.0.0.256"));
  EXPECT_FALSE(IsIpAddress("10.0.0.1 "));
  EXPECT_FALSE(IsIpAddress(std::string_view("10.0.0.1\0x", 10)));
  EXPECT_FALSE(IsIpAddress(""));
  EXPECT_TRUE(IsHostName("a"));
  EXPECT_FALSE(IsHostName("-a"));
  EXPECT_FALSE(IsHostName("a b"));
  EXPECT_FALSE(IsHostName(std::string(256, 'a')));
  EXPECT_TRUE(IsSearchDomain("example.com"));
  EXPECT_FALSE(IsSearchDomain("ex_ample.com"));
  EXPECT_FALSE(IsSearchDomain(std::string(254, 'a')));
  EXPECT_TRUE(CheckEnvironmentNames(Parse(R"({"environment":[{"name":"A","value":"x=y"}]})"), "c").ok());
  EXPECT_EQ(api::AnswerFor(CheckEnvironmentNames(Parse(R"({"environment":[{"name":"A=B","value":""}]})"), "c")).type,
            "InvalidParameterException");
}

}  // namespace
}  // namespace paddock::ecs::taskdef
