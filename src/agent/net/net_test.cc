// Tests of agent/net against the real kernel: they need root and iproute2 (else they skip).
// Each run owns a bridge "pdkt<pid>", a prefix "p<pid in base 36>-" and the range
// 10.254.<pid % 200>.0/24, and only ever sends traffic to namespaces it created.
#include "agent/net/net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/net/internal/command.h"

extern char** environ;

namespace paddock::agent::net {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

uint32_t Ip(int a, int b, int c, int d) {
  return (static_cast<uint32_t>(a) << 24) | (static_cast<uint32_t>(b) << 16) | (static_cast<uint32_t>(c) << 8) |
         static_cast<uint32_t>(d);
}

std::string IpText(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

internal::CommandResult Exec(const std::vector<std::string>& argv, std::string_view input = {}) {
  StatusOr<internal::CommandResult> r = internal::RunCommand(argv, input);
  if (!r.ok()) return {.exit_code = -1, .out = {}, .err = r.status().ToString()};
  return *r;
}

// `ip ARGS...` from the host; its stdout.
std::string IpOut(std::vector<std::string> args) {
  args.insert(args.begin(), internal::IpBinary());
  return Exec(args).out;
}

std::string Base36(unsigned v) {
  std::string s;
  do {
    s.insert(s.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
    v /= 36;
  } while (v != 0);
  return s;
}

std::string BusyboxPath() {
  for (const char* p : {"/bin/busybox", "/usr/bin/busybox", "/sbin/busybox"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return {};
}

// Host interface names (without "@peer") in the host namespace.
std::vector<std::string> HostLinks() {
  std::vector<std::string> names;
  std::string out = IpOut({"-o", "link", "show"});
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::string_view line(out.data() + pos, eol - pos);
    // "12: name@if11: <...>"
    size_t colon = line.find(": ");
    if (colon != std::string_view::npos) {
      std::string_view rest = line.substr(colon + 2);
      size_t end = rest.find_first_of("@:");
      names.emplace_back(rest.substr(0, end));
    }
    pos = eol + 1;
  }
  return names;
}

std::vector<std::string> WithPrefix(const std::vector<std::string>& names, const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (n.starts_with(prefix)) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `ip netns list` prints "name" or "name (id: N)".
std::vector<std::string> NetnsList(const std::string& prefix) {
  std::vector<std::string> names;
  std::string out = IpOut({"netns", "list"});
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::string line = out.substr(pos, eol - pos);
    names.push_back(line.substr(0, line.find(' ')));
    pos = eol + 1;
  }
  return WithPrefix(names, prefix);
}

// Connects to ip:port, retrying while nothing listens yet, for at most `limit`. -1 on timeout.
int ConnectWithRetry(uint32_t ip, uint16_t port, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(ip);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    close(fd);
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    // Back off a little between attempts rather than spin; readiness is decided by connect.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// GET / over a plain socket; the whole response, or "" when nothing could be fetched.
std::string HttpGet(uint32_t ip, uint16_t port) {
  int fd = ConnectWithRetry(ip, port);
  if (fd < 0) return {};
  std::string request = "GET / HTTP/1.0\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return {};
  }
  std::string response;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

// Empty when this process may make namespaces and bridges (root without CAP_NET_ADMIN, e.g. in
// some containers, may not); else why not.
std::string CannotMakeNetworks() {
  std::string name = fmt::format("pdkprobe{}", getpid());
  internal::CommandResult r =
      Exec({internal::IpBinary(), "-batch", "-"}, fmt::format("netns add {0}\nlink add {0} type bridge\n", name));
  Exec({internal::IpBinary(), "-force", "-batch", "-"}, fmt::format("link del {0}\nnetns del {0}\n", name));
  return r.exit_code == 0 ? "" : r.err;
}

class NetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: creates network namespaces, veths and a bridge";
    internal::CommandResult v = Exec({internal::IpBinary(), "-V"});
    if (v.exit_code != 0) GTEST_SKIP() << "needs iproute2's ip: " << v.err;
    static const std::string cannot = CannotMakeNetworks();
    if (!cannot.empty()) GTEST_SKIP() << "root, but cannot make namespaces and bridges here: " << cannot;
    unsigned pid = static_cast<unsigned>(getpid());
    options_.bridge = fmt::format("pdkt{}", pid);
    options_.netns_prefix = fmt::format("p{:0>5}-", Base36(pid));
    subnet_ = static_cast<int>(pid % 200);
    options_.gateway_cidrs = {fmt::format("10.254.{}.1/24", subnet_)};
    gateway_ = Ip(10, 254, subnet_, 1);
    ready_ = true;
  }

  void TearDown() override {
    if (!ready_) return;
    for (pid_t child : children_) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
    // Everything with this run's prefix goes, whatever a failed test left.
    StatusOr<std::vector<std::string>> namespaces = ListTaskNamespaces(options_);
    if (namespaces.ok()) {
      for (const std::string& ns : *namespaces) {
        StatusOr<TaskNetwork> tn = TaskNetworkFor(options_, TaskIdOfNamespace(options_, ns), 0);
        if (tn.ok()) {
          EXPECT_TRUE(DeleteTaskNetwork(options_, *tn).ok());
        } else {
          Exec({internal::IpBinary(), "netns", "del", ns});
        }
      }
    }
    for (const std::string& link : WithPrefix(HostLinks(), options_.netns_prefix)) {
      Exec({internal::IpBinary(), "link", "del", "dev", link});
    }
    Exec({internal::IpBinary(), "link", "del", "dev", options_.bridge});
    for (const std::string& dir : dirs_) std::filesystem::remove_all(dir);
    EXPECT_THAT(NetnsList(options_.netns_prefix), IsEmpty());
    EXPECT_THAT(WithPrefix(HostLinks(), options_.netns_prefix), IsEmpty());
  }

  TaskNetwork MustCreate(std::string_view task_id, int host) {
    StatusOr<TaskNetwork> tn = CreateTaskNetwork(options_, task_id, Ip(10, 254, subnet_, host), 24, gateway_);
    EXPECT_TRUE(tn.ok()) << tn.status().ToString();
    return tn.ok() ? *tn : TaskNetwork{};
  }

  // Starts busybox httpd on :8080 inside `netns`, serving a page that says `text`.
  void StartHttpd(const std::string& netns, const std::string& text) {
    std::string dir = fmt::format("/tmp/pdk-net-test-{}-{}", getpid(), dirs_.size());
    std::filesystem::create_directories(dir);
    dirs_.push_back(dir);
    std::ofstream(dir + "/index.html") << text << "\n";
    std::vector<std::string> argv = {internal::IpBinary(), "netns", "exec", netns, busybox_, "httpd", "-f",
                                     "-p",                 "8080",  "-h",   dir};
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ), 0);
    children_.push_back(pid);
  }

  // `ip netns exec netns busybox wget -q -O - http://ip:port/`: the body, or "" on failure.
  std::string WgetFrom(const std::string& netns, uint32_t ip, uint16_t port) {
    internal::CommandResult r = Exec({internal::IpBinary(), "netns", "exec", netns, busybox_, "wget", "-q", "-O", "-",
                                     fmt::format("http://{}:{}/", IpText(ip), port)});
    return r.exit_code == 0 ? r.out : "";
  }

  std::string BridgeMac() {
    std::string link = IpOut({"-o", "link", "show", "dev", options_.bridge});
    size_t at = link.find("link/ether ");
    return at == std::string::npos ? "" : link.substr(at + 11, 17);
  }

  bool RequireBusybox() {
    busybox_ = BusyboxPath();
    return !busybox_.empty();
  }

  NetworkOptions options_;
  int subnet_ = 0;
  uint32_t gateway_ = 0;
  bool ready_ = false;
  std::string busybox_;
  std::vector<pid_t> children_;
  std::vector<std::string> dirs_;
};

TEST_F(NetTest, EnsureBridgeTwiceIsFine) {
  ASSERT_TRUE(EnsureBridge(options_).ok());
  std::string mac_before = BridgeMac();
  EXPECT_THAT(mac_before, ::testing::StartsWith("02:62:"));
  Status again = EnsureBridge(options_);
  ASSERT_TRUE(again.ok()) << again.ToString();
  std::string link = IpOut({"-d", "-o", "link", "show", "dev", options_.bridge});
  EXPECT_THAT(link, HasSubstr(" bridge "));
  EXPECT_THAT(link, HasSubstr(",UP"));
  EXPECT_EQ(BridgeMac(), mac_before);
  std::string addrs = IpOut({"-o", "-4", "addr", "show", "dev", options_.bridge});
  EXPECT_THAT(addrs, HasSubstr(fmt::format("inet 10.254.{}.1/24", subnet_)));
  // One address, not two.
  EXPECT_EQ(addrs.find("inet "), addrs.rfind("inet ")) << addrs;
}

TEST_F(NetTest, EnsureBridgeRefusesAnInterfaceThatIsNotABridge) {
  std::string not_bridge = options_.netns_prefix + "nb";
  ASSERT_EQ(Exec({internal::IpBinary(), "link", "add", not_bridge, "type", "veth", "peer", "name",
                 options_.netns_prefix + "nc"})
                .exit_code,
            0);
  NetworkOptions options = options_;
  options.bridge = not_bridge;
  Status s = EnsureBridge(options);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("not a bridge"));
}

TEST_F(NetTest, TaskNetworksGetTheirAddressesMacsAndRoutes) {
  ASSERT_TRUE(EnsureBridge(options_).ok());
  std::string bridge_mac = BridgeMac();
  TaskNetwork a = MustCreate("task-a", 10);
  TaskNetwork b = MustCreate("task-b", 11);
  ASSERT_FALSE(a.netns_name.empty());
  ASSERT_FALSE(b.netns_name.empty());
  // Ports coming and going do not change the gateway's MAC address.
  EXPECT_EQ(BridgeMac(), bridge_mac);

  EXPECT_EQ(a.netns_name, options_.netns_prefix + "task-a");
  EXPECT_EQ(a.netns_path, "/var/run/netns/" + a.netns_name);
  EXPECT_EQ(access(a.netns_path.c_str(), F_OK), 0);
  EXPECT_EQ(a.ip, Ip(10, 254, subnet_, 10));
  EXPECT_EQ(a.mac_address, fmt::format("02:70:0a:fe:{:02x}:0a", subnet_));
  EXPECT_EQ(b.mac_address, fmt::format("02:70:0a:fe:{:02x}:0b", subnet_));
  EXPECT_NE(a.host_veth, b.host_veth);

  for (const TaskNetwork* tn : {&a, &b}) {
    std::string link = IpOut({"-n", tn->netns_name, "-o", "link", "show", "dev", "eth0"});
    EXPECT_THAT(link, HasSubstr("link/ether " + tn->mac_address));
    EXPECT_THAT(link, HasSubstr(",UP"));
    EXPECT_THAT(IpOut({"-n", tn->netns_name, "-o", "-4", "addr", "show", "dev", "eth0"}),
                HasSubstr(fmt::format("inet {}/24", IpText(tn->ip))));
    EXPECT_THAT(IpOut({"-n", tn->netns_name, "-o", "link", "show", "dev", "lo"}), HasSubstr(",UP"));
    EXPECT_THAT(IpOut({"-n", tn->netns_name, "route", "show", "default"}),
                HasSubstr(fmt::format("default via {} dev eth0", IpText(gateway_))));
    // The host end is a port of the bridge, and up.
    std::string host = IpOut({"-o", "link", "show", "dev", tn->host_veth});
    EXPECT_THAT(host, HasSubstr("master " + options_.bridge));
    EXPECT_THAT(host, HasSubstr(",UP"));
  }
}

TEST_F(NetTest, HostReachesTasksAndTasksReachEachOtherAndTheHost) {
  if (!RequireBusybox()) GTEST_SKIP() << "needs busybox (busybox-static) for httpd and wget";
  ASSERT_TRUE(EnsureBridge(options_).ok());
  TaskNetwork a = MustCreate("task-a", 10);
  TaskNetwork b = MustCreate("task-b", 11);
  ASSERT_FALSE(a.netns_name.empty());
  ASSERT_FALSE(b.netns_name.empty());
  StartHttpd(a.netns_name, "page of task a");
  StartHttpd(b.netns_name, "page of task b");

  // Host -> each task, from this process.
  EXPECT_THAT(HttpGet(a.ip, 8080), HasSubstr("page of task a"));
  EXPECT_THAT(HttpGet(b.ip, 8080), HasSubstr("page of task b"));
  // Task -> task, both ways.
  EXPECT_THAT(WgetFrom(a.netns_name, b.ip, 8080), HasSubstr("page of task b"));
  EXPECT_THAT(WgetFrom(b.netns_name, a.ip, 8080), HasSubstr("page of task a"));

  // Task -> host, at the gateway address: a one-shot HTTP answer from this process.
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(gateway_);
  addr.sin_port = 0;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::thread server([listener] {
    int conn = accept(listener, nullptr, nullptr);
    if (conn < 0) return;
    char buf[1024];
    ssize_t ignored = read(conn, buf, sizeof buf);
    (void)ignored;
    std::string answer = "HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nthe host!\n";
    ignored = write(conn, answer.data(), answer.size());
    close(conn);
  });
  std::string body = WgetFrom(a.netns_name, gateway_, ntohs(addr.sin_port));
  if (body.empty()) shutdown(listener, SHUT_RDWR);  // unblocks accept if wget never connected
  server.join();
  close(listener);
  EXPECT_EQ(body, "the host!\n");
}

TEST_F(NetTest, DeleteRemovesNamespaceAndVethAndIsIdempotent) {
  ASSERT_TRUE(EnsureBridge(options_).ok());
  TaskNetwork a = MustCreate("task-a", 10);
  ASSERT_FALSE(a.netns_name.empty());
  EXPECT_THAT(NetnsList(options_.netns_prefix), ElementsAre(a.netns_name));
  EXPECT_THAT(WithPrefix(HostLinks(), options_.netns_prefix), ElementsAre(a.host_veth));

  Status s = DeleteTaskNetwork(options_, a);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(NetnsList(options_.netns_prefix), IsEmpty());
  EXPECT_THAT(WithPrefix(HostLinks(), options_.netns_prefix), IsEmpty());
  EXPECT_NE(access(a.netns_path.c_str(), F_OK), 0);

  s = DeleteTaskNetwork(options_, a);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // The names are free again at once: the same task id can be set up again.
  TaskNetwork again = MustCreate("task-a", 10);
  EXPECT_EQ(again.host_veth, a.host_veth);
}

TEST_F(NetTest, DuplicateTaskIdFailsAndLeavesTheFirstIntact) {
  ASSERT_TRUE(EnsureBridge(options_).ok());
  TaskNetwork a = MustCreate("task-a", 10);
  ASSERT_FALSE(a.netns_name.empty());
  StatusOr<TaskNetwork> dup = CreateTaskNetwork(options_, "task-a", Ip(10, 254, subnet_, 12), 24, gateway_);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status().ToString();
  EXPECT_THAT(NetnsList(options_.netns_prefix), ElementsAre(a.netns_name));
  EXPECT_THAT(WithPrefix(HostLinks(), options_.netns_prefix), ElementsAre(a.host_veth));
  EXPECT_THAT(IpOut({"-n", a.netns_name, "-o", "-4", "addr", "show", "dev", "eth0"}),
              HasSubstr(fmt::format("inet {}/24", IpText(a.ip))));
}

TEST_F(NetTest, FailureHalfwayLeavesNothingBehind) {
  ASSERT_TRUE(EnsureBridge(options_).ok());
  // The kernel refuses a default route via a gateway outside eth0's subnet: the last step fails
  // after the namespace and the veth pair exist.
  StatusOr<TaskNetwork> bad =
      CreateTaskNetwork(options_, "task-bad", Ip(10, 254, subnet_, 20), 24, Ip(10, 253, subnet_, 1));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_THAT(bad.status().message(), HasSubstr("task-bad"));
  EXPECT_THAT(bad.status().message(), HasSubstr("Nexthop has invalid gateway"));  // iproute2's stderr
  EXPECT_THAT(NetnsList(options_.netns_prefix), IsEmpty());
  EXPECT_THAT(WithPrefix(HostLinks(), options_.netns_prefix), IsEmpty());
}

TEST_F(NetTest, MissingBridgeIsAPreconditionAndCreatesNothing) {
  StatusOr<TaskNetwork> tn = CreateTaskNetwork(options_, "task-a", Ip(10, 254, subnet_, 10), 24, gateway_);
  ASSERT_FALSE(tn.ok());
  EXPECT_EQ(tn.status().code(), StatusCode::kFailedPrecondition) << tn.status().ToString();
  EXPECT_THAT(NetnsList(options_.netns_prefix), IsEmpty());
}

TEST_F(NetTest, ListTaskNamespacesSeesExactlyThisInstancesNamespaces) {
  StatusOr<std::vector<std::string>> listed = ListTaskNamespaces(options_);
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(*listed, IsEmpty());
  ASSERT_TRUE(EnsureBridge(options_).ok());
  TaskNetwork b = MustCreate("task-b", 11);
  TaskNetwork a = MustCreate("task-a", 10);
  listed = ListTaskNamespaces(options_);
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(*listed, ElementsAre(a.netns_name, b.netns_name));
  EXPECT_EQ(TaskIdOfNamespace(options_, (*listed)[0]), "task-a");
  // Re-adoption: the record is recomputed from the name alone.
  StatusOr<TaskNetwork> readopted = TaskNetworkFor(options_, "task-a", a.ip);
  ASSERT_TRUE(readopted.ok());
  EXPECT_EQ(readopted->host_veth, a.host_veth);
  EXPECT_EQ(readopted->netns_path, a.netns_path);
  EXPECT_EQ(readopted->mac_address, a.mac_address);

  ASSERT_TRUE(DeleteTaskNetwork(options_, a).ok());
  listed = ListTaskNamespaces(options_);
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(*listed, ElementsAre(b.netns_name));
}

// No root needed below: names and validation only.

TEST(NetNamesTest, NamesFitIfnamsizAndAreStable) {
  NetworkOptions options;
  std::set<std::string> veths;
  for (int i = 0; i < 1000; ++i) {
    std::string task_id = fmt::format("{:032x}", static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL);
    StatusOr<TaskNetwork> tn = TaskNetworkFor(options, task_id, Ip(172, 31, 0, 5));
    ASSERT_TRUE(tn.ok()) << tn.status().ToString();
    EXPECT_EQ(tn->netns_name, "pdk-" + task_id);
    EXPECT_EQ(tn->netns_path, "/var/run/netns/pdk-" + task_id);
    EXPECT_EQ(tn->host_veth.size(), 15u);
    EXPECT_TRUE(tn->host_veth.starts_with("pdk-"));
    EXPECT_EQ(tn->mac_address, "02:70:ac:1f:00:05");
    EXPECT_EQ(TaskIdOfNamespace(options, tn->netns_name), task_id);
    veths.insert(tn->host_veth);
  }
  EXPECT_EQ(veths.size(), 1000u);
  EXPECT_EQ(TaskNetworkFor(options, "abc", 1)->host_veth, TaskNetworkFor(options, "abc", 2)->host_veth);
  EXPECT_EQ(TaskIdOfNamespace(options, "other-ns"), "");
}

TEST(NetNamesTest, RefusesBadInputBeforeTouchingTheSystem) {
  NetworkOptions options;
  for (std::string_view bad : {"", "a/b", "a b", "x\nnetns del victim", "..", "a.b",
                               "0123456789012345678901234567890123456789012345678901234567890123456789"}) {
    StatusOr<TaskNetwork> tn = CreateTaskNetwork(options, bad, Ip(172, 31, 0, 5), 20, Ip(172, 31, 0, 1));
    EXPECT_EQ(tn.status().code(), StatusCode::kInvalidArgument) << "task id '" << bad << "'";
  }
  NetworkOptions long_prefix = options;
  long_prefix.netns_prefix = "toolong-";
  EXPECT_EQ(TaskNetworkFor(long_prefix, "t", 1).status().code(), StatusCode::kInvalidArgument);
  NetworkOptions no_prefix = options;
  no_prefix.netns_prefix = "";
  EXPECT_EQ(ListTaskNamespaces(no_prefix).status().code(), StatusCode::kInvalidArgument);
  NetworkOptions bad_bridge = options;
  bad_bridge.bridge = "paddock0\nlink del eth0";
  EXPECT_EQ(EnsureBridge(bad_bridge).code(), StatusCode::kInvalidArgument);
  for (std::string cidr : {"172.31.0.1", "172.31.0.1/33", "172.31.0.1/0", "172.31.0/20", "x/20", "172.31.0.1/20x"}) {
    NetworkOptions bad_gateway = options;
    bad_gateway.bridge = "pdk-unused0";
    bad_gateway.gateway_cidrs = {cidr};
    EXPECT_EQ(EnsureBridge(bad_gateway).code(), StatusCode::kInvalidArgument) << cidr;
  }
  EXPECT_EQ(CreateTaskNetwork(options, "t", Ip(172, 31, 0, 5), 31, Ip(172, 31, 0, 1)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(NetNamesTest, DeleteRefusesNamesOfOtherInstances) {
  NetworkOptions options;
  options.netns_prefix = "pq-";
  TaskNetwork foreign{.netns_name = "pdk-sometask", .netns_path = "/var/run/netns/pdk-sometask",
                      .host_veth = "pdk-0123456789a", .mac_address = {}, .ip = 0};
  Status s = DeleteTaskNetwork(options, foreign);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  foreign.netns_name = "pq-sometask";  // ours, but the veth is not
  s = DeleteTaskNetwork(options, foreign);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

TEST(CommandTest, CapturesOutputErrorAndExitCode) {
  StatusOr<internal::CommandResult> r = internal::RunCommand({"sh", "-c", "cat; echo oops >&2; exit 3"}, "in\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "in\n");
  EXPECT_EQ(r->err, "oops\n");
  r = internal::RunCommand({"/nonexistent/program"}, "");
  EXPECT_FALSE(r.ok());
  r = internal::RunCommand({"sleep", "5"}, "", std::chrono::milliseconds(50));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace paddock::agent::net
