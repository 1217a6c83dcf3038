#include "agent/images/skopeo_puller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace paddock::agent::images {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

Reference Ref(std::string_view text) {
  auto r = ParseReference(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Reference{};
}

// A line as skopeo (logrus) writes it.
std::string Fatal(std::string_view msg) {
  std::string quoted;
  for (char c : msg) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return "time=\"2026-11-30T11:43:18Z\" level=fatal msg=\"" + quoted + "\"\n";
}

TEST(SkopeoPullerTest, InsecureRegistriesAreTheListedOnesAndLoopback) {
  SkopeoOptions o;
  o.insecure_registries = {"registry.lan:5000"};
  EXPECT_TRUE(IsInsecureRegistry("registry.lan:5000", o));
  EXPECT_FALSE(IsInsecureRegistry("registry.lan", o));
  EXPECT_FALSE(IsInsecureRegistry("registry.lan:5001", o));
  EXPECT_TRUE(IsInsecureRegistry("localhost", o));
  EXPECT_TRUE(IsInsecureRegistry("localhost:5000", o));
  EXPECT_TRUE(IsInsecureRegistry("127.0.0.1:5000", o));
  EXPECT_TRUE(IsInsecureRegistry("127.9.8.7", o));
  EXPECT_TRUE(IsInsecureRegistry("[::1]:5000", o));
  EXPECT_FALSE(IsInsecureRegistry("128.0.0.1:5000", o));
  EXPECT_FALSE(IsInsecureRegistry("localhost.example.com", o));
  EXPECT_FALSE(IsInsecureRegistry("docker.io", o));
  o.insecure_loopback = false;
  EXPECT_FALSE(IsInsecureRegistry("127.0.0.1:5000", o));
  EXPECT_TRUE(IsInsecureRegistry("registry.lan:5000", o));
}

TEST(SkopeoPullerTest, CopyArguments) {
  SkopeoOptions o;
  o.arch = "amd64";
  EXPECT_THAT(SkopeoCopyArgs(Ref("busybox"), "/s/tmp/x/pulled.tar", o),
              ElementsAre("env", "TMPDIR=/s/tmp/x", "skopeo", "--override-os", "linux", "--override-arch", "amd64",
                          "copy", "--quiet", "--src-no-creds", "docker://docker.io/library/busybox:latest",
                          "oci-archive:/s/tmp/x/pulled.tar"));
  EXPECT_THAT(SkopeoCopyArgs(Ref("127.0.0.1:5000/busybox:1"), "/w/a.tar", o),
              ElementsAre("env", "TMPDIR=/w", "skopeo", "--override-os", "linux", "--override-arch", "amd64", "copy",
                          "--quiet", "--src-tls-verify=false", "--src-no-creds", "docker://127.0.0.1:5000/busybox:1",
                          "oci-archive:/w/a.tar"));
  const std::string digest = "sha256:" + std::string(64, 'a');
  o.auth_file = "/etc/paddock/auth.json";
  o.skopeo = "/opt/skopeo";
  auto args = SkopeoCopyArgs(Ref("quay.io/a/b:1@" + digest), "/a.tar", o);
  EXPECT_EQ(args[2], "/opt/skopeo");
  EXPECT_THAT(args, Contains("--preserve-digests"));
  EXPECT_THAT(args, Contains("docker://quay.io/a/b@" + digest));  // skopeo takes a tag or a digest
  EXPECT_THAT(args, Not(Contains("--src-no-creds")));
  EXPECT_THAT(args, Not(Contains("--src-tls-verify=false")));
  auto at = std::find(args.begin(), args.end(), "--src-authfile");
  ASSERT_NE(at, args.end());
  EXPECT_EQ(*(at + 1), "/etc/paddock/auth.json");
  // A tag pinned to the digest it named: copied by that digest, which skopeo may convert.
  const Digest pinned = Sha256Of("manifest");
  CopyFlags flags;
  flags.pinned = &pinned;
  auto tag = SkopeoCopyArgs(Ref("quay.io/a/b:1"), "/a.tar", o, flags);
  EXPECT_THAT(tag, Contains("docker://quay.io/a/b@" + pinned.str()));
  EXPECT_THAT(tag, Not(Contains("--preserve-digests")));
}

// A task's credentials reach skopeo only as a file of their own (never on its command line).
TEST(SkopeoPullerTest, TaskCredentialsGoInAPrivateAuthFileRemovedAfterUse) {
  SkopeoOptions o;
  o.auth_file = "/etc/paddock/auth.json";
  const std::string mine = "/s/tmp/x/auth-1/auth.json";
  CopyFlags flags;
  flags.auth_file = &mine;
  auto args = SkopeoCopyArgs(Ref("127.0.0.1:5000/app:1"), "/s/tmp/x/pulled.tar", o, flags);
  auto at = std::find(args.begin(), args.end(), "--src-authfile");
  ASSERT_NE(at, args.end());
  EXPECT_EQ(*(at + 1), mine);  // instead of the node's
  EXPECT_THAT(SkopeoInspectArgs(Ref("127.0.0.1:5000/app:1"), o, &mine),
              ElementsAre("skopeo", "inspect", "--raw", "--tls-verify=false", "--authfile", mine,
                          "docker://127.0.0.1:5000/app:1"));
  o.auth_file.clear();
  EXPECT_THAT(SkopeoInspectArgs(Ref("quay.io/a/b:1"), o, nullptr),
              ElementsAre("skopeo", "inspect", "--raw", "--no-creds", "docker://quay.io/a/b:1"));

  const std::string parent = ::testing::TempDir() + "/auth-parent";
  fs::create_directories(parent);
  std::string dir;
  {
    auto file = TaskAuthFile::Write(parent, "127.0.0.1:5000", RegistryCredentials{"alice", "pa:ss"});
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    const std::string path = (*file)->path();
    dir = fs::path(path).parent_path();
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, R"({"auths":{"127.0.0.1:5000":{"auth":"YWxpY2U6cGE6c3M="}}})");  // base64("alice:pa:ss")
  }
  EXPECT_FALSE(fs::exists(dir));
  fs::remove_all(parent);
}

TEST(SkopeoPullerTest, ErrorDetailIsTheFatalMessageUnquoted) {
  EXPECT_EQ(SkopeoErrorDetail("time=\"x\" level=warning msg=\"ignored\"\n" +
                              Fatal("a \"quoted\" word\\and more") + "\n"),
            "a \"quoted\" word\\and more");
  EXPECT_EQ(SkopeoErrorDetail("Error: something plain\n\n"), "Error: something plain");
  EXPECT_EQ(SkopeoErrorDetail(""), "");
}

TEST(SkopeoPullerTest, NotFoundReadsAsEcsReportsIt) {
  Reference r = Ref("127.0.0.1:5000/busybox:nope");
  Status s = PullFailure(r,
                         Fatal("initializing source docker://127.0.0.1:5000/busybox:nope: reading manifest nope in "
                               "127.0.0.1:5000/busybox: manifest unknown: manifest unknown"),
                         SkopeoOptions{});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref 127.0.0.1:5000/busybox:nope: "
            "127.0.0.1:5000/busybox:nope: not found");
}

TEST(SkopeoPullerTest, AuthorizationFailuresReadAsPullAccessDenied) {
  Reference r = Ref("127.0.0.1:5000/busybox:1");
  Status s = PullFailure(r,
                         Fatal("initializing source docker://127.0.0.1:5000/busybox:1: reading manifest 1 in "
                               "127.0.0.1:5000/busybox: unauthorized: authentication required"),
                         SkopeoOptions{});
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref 127.0.0.1:5000/busybox:1: pull "
            "access denied, repository does not exist or may require authorization: authentication required");
  // skopeo inspect (SkopeoPuller::CheckAccess) says the same in other words, and reads the same.
  Status inspect = PullFailure(r,
                               Fatal("Error parsing image name \"docker://127.0.0.1:5000/busybox:1\": reading "
                                     "manifest 1 in 127.0.0.1:5000/busybox: unauthorized: authentication required"),
                               SkopeoOptions{});
  EXPECT_EQ(inspect.code(), s.code());
  EXPECT_EQ(inspect.message(), s.message());
  // Docker Hub answers a repository that does not exist the same way.
  Status hub = PullFailure(Ref("me/private"),
                           Fatal("initializing source docker://me/private:latest: reading manifest latest in "
                                 "docker.io/me/private: requested access to the resource is denied"),
                           SkopeoOptions{});
  EXPECT_EQ(hub.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(hub.message(), "pull image manifest has been retried 1 time(s): failed to resolve ref "
                           "docker.io/me/private:latest: pull access denied, repository does not exist or may require "
                           "authorization: authorization failed");
}

TEST(SkopeoPullerTest, UnreachableRegistriesReadAsFailedRequests) {
  Reference r = Ref("127.0.0.1:1/busybox:1");
  Status refused = PullFailure(r,
                               Fatal("initializing source docker://127.0.0.1:1/busybox:1: pinging container registry "
                                     "127.0.0.1:1: Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: "
                                     "connection refused"),
                               SkopeoOptions{});
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable);
  EXPECT_EQ(refused.message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref 127.0.0.1:1/busybox:1: failed to "
            "do request: Get \"http://127.0.0.1:1/v2/\": dial tcp: connect: connection refused");
  Status dns = PullFailure(Ref("nothere:1"),
                           Fatal("initializing source docker://nothere:1: pinging container registry "
                                 "registry-1.docker.io: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup "
                                 "registry-1.docker.io on 10.0.0.53:53: no such host"),
                           SkopeoOptions{});
  EXPECT_EQ(dns.code(), StatusCode::kUnavailable);
  EXPECT_EQ(dns.message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref docker.io/library/nothere:1: "
            "failed to do request: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: "
            "no such host");
  // A plain-HTTP registry not listed as insecure.
  Status tls = PullFailure(Ref("registry.lan:5000/x:1"),
                           Fatal("initializing source docker://registry.lan:5000/x:1: pinging container registry "
                                 "registry.lan:5000: Get \"https://registry.lan:5000/v2/\": http: server gave HTTP "
                                 "response to HTTPS client"),
                           SkopeoOptions{});
  EXPECT_EQ(tls.code(), StatusCode::kUnavailable);
  EXPECT_THAT(tls.message(), HasSubstr("failed to do request: Get \"https://registry.lan:5000/v2/\": http: server "
                                       "gave HTTP response to HTTPS client"));
  // A listener that writes and closes at once may be gone before the request is written.
  Status closed = PullFailure(r,
                              Fatal("initializing source docker://127.0.0.1:1/busybox:1: pinging container registry "
                                    "127.0.0.1:1: Get \"http://127.0.0.1:1/v2/\": write tcp 127.0.0.1:40000->127.0.0.1:1: "
                                    "write: broken pipe"),
                              SkopeoOptions{});
  EXPECT_EQ(closed.message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref 127.0.0.1:1/busybox:1: failed to "
            "do request: Get \"http://127.0.0.1:1/v2/\": write: broken pipe");
}

TEST(SkopeoPullerTest, PlatformAndCopyFailures) {
  SkopeoOptions o;
  o.arch = "amd64";
  Status platform = PullFailure(Ref("x.io/a:1"),
                                Fatal("choosing an image from manifest list docker://x.io/a:1: no image found in "
                                      "manifest list for architecture amd64, variant \"\", OS linux"),
                                o);
  EXPECT_EQ(platform.code(), StatusCode::kNotFound);
  EXPECT_EQ(platform.message(), "pull image manifest has been retried 1 time(s): image Manifest does not contain "
                                "descriptor matching platform 'linux/amd64'");
  Status copy = PullFailure(Ref("x.io/a:1"), Fatal("writing blob: happened to fail: connection reset by peer"), o);
  EXPECT_EQ(copy.code(), StatusCode::kUnavailable);
  EXPECT_EQ(copy.message(),
            "ref pull has been retried 1 time(s): failed to copy: the registry's answer could not be used");
  Status other = PullFailure(Ref("x.io/a:1"), Fatal("initializing source docker://x.io/a:1: something new"), o);
  EXPECT_EQ(other.message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref x.io/a:1: the registry's answer could "
            "not be used");
  EXPECT_THAT(PullFailure(Ref("x.io/a:1"), "", o).message(), HasSubstr("skopeo failed without a message"));
  std::string long_detail(5000, 'x');
  EXPECT_LT(PullFailure(Ref("x.io/a:1"), Fatal(long_detail), o).message().size(), 1024u);
}

// Red team, 2026-12: a registry's own bytes came back verbatim in the task's stoppedReason (a
// loopback service's banner, an error body). Whatever a registry says, the reason holds ECS's
// phrases, fixed causes and at most an HTTP status.
TEST(SkopeoPullerTest, NothingTheRegistrySaysReachesTheReason) {
  const std::string secret = "SECRET-BANNER-4f1c";
  const std::vector<std::string> answers = {
      "initializing source docker://10.1.2.3:9998/x:y: pinging container registry 10.1.2.3:9998: Get "
      "\"http://10.1.2.3:9998/v2/\": net/http: HTTP/1.x transport connection broken: malformed HTTP response \"" +
          secret + "\"",
      "initializing source docker://10.1.2.3:9998/x:y: reading manifest y in 10.1.2.3:9998/x: " + secret +
          ": unknown: " + secret,
      "initializing source docker://10.1.2.3:9998/x:y: reading manifest y in 10.1.2.3:9998/x: manifest unknown: " +
          secret,
      "initializing source docker://10.1.2.3:9998/x:y: reading manifest y in 10.1.2.3:9998/x: unauthorized: " + secret,
      "initializing source docker://10.1.2.3:9998/x:y: pinging container registry 10.1.2.3:9998: Get "
      "\"https://10.1.2.3:9998/v2/\": tls: failed to verify certificate: x509: certificate is valid for " +
          secret + ", not 10.1.2.3",
      "initializing source docker://10.1.2.3:9998/x:y: invalid status code from registry 500 (Internal Server "
      "Error): " + secret,
      "reading blob sha256:0123: fetching blob: StatusCode 404 " + secret,
      "writing blob: " + secret,
  };
  for (const std::string& a : answers) {
    Status s = PullFailure(Ref("10.1.2.3:9998/x:y"), Fatal(a), SkopeoOptions{});
    EXPECT_EQ(s.message().find(secret), std::string::npos) << s.message();
    EXPECT_LT(s.message().size(), 400u) << s.message();
  }
  EXPECT_EQ(PullFailure(Ref("10.1.2.3:9998/x:y"), Fatal(answers[0]), SkopeoOptions{}).message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref 10.1.2.3:9998/x:y: failed to do "
            "request: Get \"http://10.1.2.3:9998/v2/\": net/http: HTTP/1.x transport connection broken: malformed "
            "HTTP response");
  EXPECT_EQ(PullFailure(Ref("10.1.2.3:9998/x:y"), Fatal(answers[5]), SkopeoOptions{}).message(),
            "pull image manifest has been retried 1 time(s): failed to resolve ref 10.1.2.3:9998/x:y: the registry's "
            "answer could not be used");
  EXPECT_EQ(PullFailure(Ref("10.1.2.3:9998/x:y"), Fatal(answers[6]), SkopeoOptions{}).message(),
            "ref pull has been retried 1 time(s): failed to copy: a blob of the image was not found");
  EXPECT_EQ(PullFailure(Ref("10.1.2.3:9998/x:y"), Fatal("reading blob: fetching blob: status code 503 x"),
                        SkopeoOptions{})
                .message(),
            "ref pull has been retried 1 time(s): failed to copy: the registry's answer could not be used");
}

// A registry sends skopeo on to hosts of its choosing (a redirect of a manifest or a blob, its
// token realm), the node's loopback included: how such a request failed would make a port scanner
// of the reason. Only failures of requests to the registry itself keep their cause.
TEST(SkopeoPullerTest, HowARequestToAnotherHostFailedIsNotTold) {
  const Reference r = Ref("registry.lan:5000/x:y");
  for (const char* redirected : {
           "initializing source docker://registry.lan:5000/x:y: reading manifest y in registry.lan:5000/x: Get "
           "\"http://127.0.0.1:22/x\": net/http: HTTP/1.x transport connection broken: malformed HTTP response "
           "\"SSH-2.0-OpenSSH_9.2\"",
           "initializing source docker://registry.lan:5000/x:y: reading manifest y in registry.lan:5000/x: Get "
           "\"http://127.0.0.1:23/x\": dial tcp 127.0.0.1:23: connect: connection refused",
           "initializing source docker://registry.lan:5000/x:y: Requesting bearer token: Get \"http://127.0.0.1:25/t\": "
           "dial tcp 127.0.0.1:25: connect: connection refused",
       }) {
    EXPECT_EQ(PullFailure(r, Fatal(redirected), SkopeoOptions{}).message(),
              "pull image manifest has been retried 1 time(s): failed to resolve ref registry.lan:5000/x:y: the "
              "registry's answer could not be used")
        << redirected;
  }
  EXPECT_EQ(PullFailure(r, Fatal("reading blob sha256:00: fetching blob: Get \"http://127.0.0.1:24/b\": dial tcp "
                                 "127.0.0.1:24: connect: connection refused"),
                        SkopeoOptions{})
                .message(),
            "ref pull has been retried 1 time(s): failed to copy: the registry's answer could not be used");
  // The registry's own refusal keeps its cause.
  EXPECT_THAT(PullFailure(r, Fatal("initializing source docker://registry.lan:5000/x:y: pinging container registry "
                                   "registry.lan:5000: Get \"https://registry.lan:5000/v2/\": dial tcp 10.0.0.5:5000: "
                                   "connect: connection refused"),
                          SkopeoOptions{})
                  .message(),
              HasSubstr("Get \"https://registry.lan:5000/v2/\": dial tcp: connect: connection refused"));
}

NodeAddresses Node() {
  NodeAddresses node;
  node.own = {IpAddress::V4(0xc0000202), *IpAddress::Parse("2001:db8::2")};  // 192.0.2.2
  node.routes = {{0x00000000, 0x00000000, "eth0"},
                 {0xc0000200, 0xffffff00, "eth0"},
                 {0xac1f0007, 0xffffffff, "pdv-0123456789a"},  // a VPC task's host route
                 {0xac110000, 0xffff0000, "paddock1"}};         // the bridge-mode network
  node.task_interface_prefixes = {"pdv-", "paddock1"};
  return node;
}

TEST(RegistryAddressTest, ClassifiesWhatIsTheNodeAndWhatIsAnotherMachine) {
  const NodeAddresses node = Node();
  auto scope = [&](std::string_view text) { return Classify(*IpAddress::Parse(text), node); };
  EXPECT_EQ(scope("127.0.0.1"), AddressScope::kLoopback);
  EXPECT_EQ(scope("127.200.0.9"), AddressScope::kLoopback);
  EXPECT_EQ(scope("::1"), AddressScope::kLoopback);
  EXPECT_EQ(scope("::ffff:127.0.0.1"), AddressScope::kLoopback);
  EXPECT_EQ(scope("169.254.169.254"), AddressScope::kLinkLocal);
  EXPECT_EQ(scope("169.254.170.2"), AddressScope::kLinkLocal);
  EXPECT_EQ(scope("fe80::1"), AddressScope::kLinkLocal);
  EXPECT_EQ(scope("0.0.0.0"), AddressScope::kUnspecified);
  EXPECT_EQ(scope("::"), AddressScope::kUnspecified);
  EXPECT_EQ(scope("192.0.2.2"), AddressScope::kNodeOwn);
  EXPECT_EQ(scope("::ffff:192.0.2.2"), AddressScope::kNodeOwn);
  EXPECT_EQ(scope("2001:db8::2"), AddressScope::kNodeOwn);
  EXPECT_EQ(scope("172.31.0.7"), AddressScope::kTaskNetwork);
  EXPECT_EQ(scope("172.17.0.5"), AddressScope::kTaskNetwork);
  EXPECT_EQ(scope("172.31.0.8"), AddressScope::kRemote);  // the default route
  EXPECT_EQ(scope("192.0.2.9"), AddressScope::kRemote);
  EXPECT_EQ(scope("2001:db8::9"), AddressScope::kRemote);
  EXPECT_EQ(RegistryHostOf("127.0.0.1:9998"), "127.0.0.1");
  EXPECT_EQ(RegistryHostOf("[::1]:5000"), "::1");
  EXPECT_EQ(RegistryHostOf("localhost"), "localhost");
  EXPECT_EQ(RegistryHostOf("docker.io"), "registry-1.docker.io");
  // The real host: its loopback and its own addresses are the node.
  NodeAddresses here = NodeAddresses::Read({"pdv-"});
  EXPECT_EQ(Classify(IpAddress::V4(0x7f000001), here), AddressScope::kLoopback);
  ASSERT_FALSE(here.own.empty());
  for (const IpAddress& a : here.own) EXPECT_NE(Classify(a, here), AddressScope::kRemote) << a.ToString();
}

TEST(SkopeoPullerTest, RegistriesOnTheNodeAreRefusedUnlessTheOperatorListsThem) {
  const NodeAddresses node = Node();
  SkopeoOptions o;
  const std::string prefix = "pull image manifest has been retried 1 time(s): failed to resolve ref ";
  Status s = CheckRegistryAddress(Ref("127.0.0.1:9998/x:y"), o, node);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), prefix + "127.0.0.1:9998/x:y: failed to do request: Get \"http://127.0.0.1:9998/v2/\": the "
                                  "registry 127.0.0.1:9998 is on this node (a loopback address), and this node's "
                                  "operator does not list it in [images] local_registries");
  for (const char* local : {"localhost:5000/x:y", "169.254.169.254/latest:1", "192.0.2.2:22/x:y",
                            "172.31.0.7:8080/x:y", "0.0.0.0:80/x:y", "127.1.2.3/x:y"}) {
    EXPECT_EQ(CheckRegistryAddress(Ref(local), o, node).code(), StatusCode::kPermissionDenied) << local;
  }
  // IPv6 literals are no registry domain in Docker's grammar: refused as a reference already.
  EXPECT_FALSE(ParseReference("[::1]:5000/x:y").ok());
  EXPECT_TRUE(CheckRegistryAddress(Ref("192.0.2.9:5000/x:y"), o, node).ok());
  Status unresolved = CheckRegistryAddress(Ref("registry.invalid/x:y"), o, node);
  EXPECT_EQ(unresolved.code(), StatusCode::kUnavailable);
  EXPECT_EQ(unresolved.message(), prefix + "registry.invalid/x:y: failed to do request: Get "
                                           "\"https://registry.invalid/v2/\": dial tcp: lookup registry.invalid: no such "
                                           "host");
  o.local_registries = {"127.0.0.1:9998"};  // exactly as in image names
  EXPECT_TRUE(CheckRegistryAddress(Ref("127.0.0.1:9998/x:y"), o, node).ok());
  EXPECT_FALSE(CheckRegistryAddress(Ref("127.0.0.1:9999/x:y"), o, node).ok());
  EXPECT_FALSE(CheckRegistryAddress(Ref("127.0.0.1/x:y"), o, node).ok());
  o.local = LocalRegistries::kAllowed;  // the operator's own pulls
  EXPECT_TRUE(CheckRegistryAddress(Ref("127.0.0.1:9999/x:y"), o, node).ok());
}

// SkopeoPuller against a stand-in skopeo script: no network.
class SkopeoPullerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skopeo-puller-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A fake skopeo running `body` (sh) with the real one's arguments; $last is the destination. Its
  // `inspect` (a pull's first step for a tag) prints kManifest unless `body` starts with "#all".
  static constexpr std::string_view kManifest = R"({"schemaVersion":2})";
  std::string Script(std::string_view body) {
    std::string path = dir_ + "/skopeo";
    std::ofstream(path) << "#!/bin/sh\nfor last; do :; done\n"
                        << (body.starts_with("#all") ? "" : "[ \"$1\" = inspect ] && { printf '%s' '" +
                                                               std::string(kManifest) + "'; exit 0; }\n")
                        << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  SkopeoOptions Options(std::string_view body) {
    SkopeoOptions o;
    o.skopeo = Script(body);
    o.local = LocalRegistries::kAllowed;  // these cases are about the process; no registry is contacted
    o.timeout = std::chrono::seconds(20);
    return o;
  }

  std::string dir_;
};

TEST_F(SkopeoPullerProcessTest, WritesTheArchiveWhereAsked) {
  SkopeoPuller puller(Options(R"(echo "$TMPDIR $@" > "${last#oci-archive:}")"));
  std::string archive = dir_ + "/pulled.tar";
  ASSERT_TRUE(puller.Pull(Ref("127.0.0.1:5000/busybox:1"), archive).ok());
  std::ifstream in(archive);
  std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(args, StartsWith(dir_ + " --override-os"));  // skopeo stages in the archive's directory
  // The tag is copied by the digest of the manifest it named (inspected first).
  EXPECT_THAT(args, HasSubstr("copy --quiet --src-tls-verify=false --src-no-creds docker://127.0.0.1:5000/busybox@" +
                              Sha256Of(kManifest).str()));
}

// A pull by tag keeps the digest of the manifest as the registry served it (what ECS reports as
// imageDigest), and copies that very manifest — converted as skopeo needs, not preserved.
TEST_F(SkopeoPullerProcessTest, APullByTagKeepsTheRegistrysDigestOfWhatTheTagNamed) {
  const std::string docker_manifest =
      R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json"})";
  const std::string log = dir_ + "/calls";
  SkopeoPuller puller(Options("#all\necho \"$@\" >> " + log + "\n[ \"$1\" = inspect ] && { printf '%s' '" +
                              docker_manifest + "'; exit 0; }\necho a > \"${last#oci-archive:}\""));
  PullContext context;
  ASSERT_TRUE(puller.Pull(Ref("127.0.0.1:5000/busybox:1"), dir_ + "/a.tar", context).ok());
  ASSERT_TRUE(context.registry_digest.has_value());
  EXPECT_EQ(*context.registry_digest, Sha256Of(docker_manifest));
  std::ifstream in(log);
  std::string inspect, copy;
  std::getline(in, inspect);
  std::getline(in, copy);
  EXPECT_EQ(inspect, "inspect --raw --tls-verify=false --no-creds docker://127.0.0.1:5000/busybox:1");
  EXPECT_THAT(copy, HasSubstr(" docker://127.0.0.1:5000/busybox@" + Sha256Of(docker_manifest).str() + " "));
  EXPECT_THAT(copy, Not(HasSubstr("--preserve-digests")));
  // By digest: one copy, digests preserved, and the digest is the one asked for.
  const std::string digest = "sha256:" + std::string(64, 'b');
  PullContext by_digest;
  ASSERT_TRUE(puller.Pull(Ref("127.0.0.1:5000/busybox@" + digest), dir_ + "/b.tar", by_digest).ok());
  EXPECT_EQ(by_digest.registry_digest->str(), digest);
}

TEST_F(SkopeoPullerProcessTest, MapsAFailureAndNoticesAMissingArchive) {
  SkopeoPuller failing(Options(
      R"(echo 'time="t" level=fatal msg="initializing source docker://x.io/a:1: reading manifest 1 in x.io/a: manifest unknown"' >&2; exit 1)"));
  Status s = failing.Pull(Ref("x.io/a:1"), dir_ + "/a.tar");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("failed to resolve ref x.io/a:1: x.io/a:1: not found"));

  SkopeoPuller silent(Options("exit 0"));
  EXPECT_EQ(silent.Pull(Ref("x.io/a:1"), dir_ + "/b.tar").code(), StatusCode::kInternal);

  SkopeoOptions missing;
  missing.skopeo = dir_ + "/no-such-skopeo";
  missing.local = LocalRegistries::kAllowed;
  Status m = SkopeoPuller(missing).Pull(Ref("x.io/a:1"), dir_ + "/c.tar");
  EXPECT_EQ(m.code(), StatusCode::kUnavailable);
  EXPECT_THAT(m.message(), HasSubstr("cannot run skopeo"));
}

TEST_F(SkopeoPullerProcessTest, ALocalRegistryIsRefusedBeforeSkopeoRuns) {
  const std::string ran = dir_ + "/ran";
  SkopeoOptions o = Options("touch " + ran + "; exit 1");
  o.local = LocalRegistries::kRefusedUnlessListed;
  PullContext refused;
  Status s = SkopeoPuller(o).Pull(Ref("127.0.0.1:9998/x:y"), dir_ + "/a.tar", refused);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(fs::exists(ran));
  EXPECT_TRUE(refused.looked_in.empty());  // the registry was not asked: no miss to word
  // A host that does not resolve is a registry that could not be reached (and nothing ran).
  PullContext unresolved;
  EXPECT_EQ(SkopeoPuller(o).Pull(Ref("registry.invalid/x:y"), dir_ + "/a.tar", unresolved).code(),
            StatusCode::kUnavailable);
  EXPECT_THAT(unresolved.looked_in, ElementsAre("its registry registry.invalid"));
  EXPECT_FALSE(fs::exists(ran));
  o.local_registries = {"127.0.0.1:9998"};
  SkopeoPuller(o).Pull(Ref("127.0.0.1:9998/x:y"), dir_ + "/a.tar").IgnoreError();
  EXPECT_TRUE(fs::exists(ran));
}

TEST_F(SkopeoPullerProcessTest, ATimeoutKillsSkopeo) {
  SkopeoOptions o = Options("exec sleep 30");
  o.timeout = std::chrono::milliseconds(200);
  SkopeoPuller puller(o);
  auto start = std::chrono::steady_clock::now();
  Status s = puller.Pull(Ref("x.io/a:1"), dir_ + "/a.tar");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "ref pull has been retried 1 time(s): failed to copy: context deadline exceeded (skopeo did not finish "
            "within 0.2 s)");
}

TEST_F(SkopeoPullerProcessTest, ShutdownAbandonsPullsInFlightAndLater) {
  const std::string started = dir_ + "/started";
  SkopeoPuller puller(Options("touch " + started + "; exec sleep 30"));
  Status s;
  std::thread t([&] { s = puller.Pull(Ref("x.io/a:1"), dir_ + "/a.tar"); });
  auto start = std::chrono::steady_clock::now();
  while (!fs::exists(started) && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(started));
  puller.Shutdown();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_THAT(s.message(), HasSubstr("the node is shutting down"));
  EXPECT_EQ(puller.Pull(Ref("x.io/a:1"), dir_ + "/b.tar").code(), StatusCode::kAborted);
}

// What skopeo 1.9 draws on a terminal (captured from a real pull under `script`), cut anywhere.
TEST(SkopeoProgressTest, ReadsTheBarsSkopeoDraws) {
  const std::string screen =
      "Getting image source signatures\r\n"
      "Copying blob 7ed53567ac7a [=============>------------] 1.0MiB / 1.9MiB\r\n"
      "Copying blob 9a1b2c3d4e5f [>-------------------------] 12.0KiB / 3.0MiB\r"
      "\x1b[2A\x1b[JCopying blob 7ed53567ac7a done  \r\n"
      "Copying blob 9a1b2c3d4e5f [=====>--------------------] 1.5MiB / 3.0MiB\r\n";
  SkopeoProgress p;
  // Fed a few bytes at a time, as a pty hands them over; escape sequences split across reads too.
  bool changed = false;
  for (size_t i = 0; i < screen.size(); i += 7) changed |= p.Feed(std::string_view(screen).substr(i, 7));
  EXPECT_TRUE(changed);
  PullProgress now = p.Current();
  EXPECT_EQ(now.layers_total, 2u);
  EXPECT_EQ(now.layers_done, 1u);
  EXPECT_EQ(now.bytes_total, 1992294u + 3145728u);  // 1.9 MiB as skopeo rounds it, and 3.0 MiB
  EXPECT_EQ(now.bytes_done, 1992294u + 1572864u);
  EXPECT_EQ(FormatPullProgress(now), "1/2 layers, 3.4 MiB of 4.9 MiB");
  // The config blob is not a layer; "skipped" (already there) counts as done; nothing new: no change.
  EXPECT_TRUE(p.Feed("Copying config 8312fd27fb [====] 186.0b / 186.0b\r\nCopying blob 9a1b2c3d4e5f skipped: "
                     "already exists\r\n"));
  EXPECT_EQ(p.Current().layers_done, 2u);
  EXPECT_FALSE(p.Feed("Writing manifest to image destination\r\nStoring signatures\r\n"));
  EXPECT_EQ(FormatPullProgress(PullProgress{}), "starting");
}

// A stand-in skopeo that draws bars when its stdout is a terminal, as skopeo does.
TEST_F(SkopeoPullerProcessTest, ShowsProgressFromSkopeosTerminalOutput) {
  SkopeoPuller puller(Options(
      R"([ -t 1 ] || { echo "stdout is not a terminal" >&2; exit 1; }
case " $* " in *" --quiet "*) echo "quiet on a terminal" >&2; exit 1;; esac
printf 'Copying blob 7ed53567ac7a [==>----] 1.0MiB / 2.0MiB
'
printf '[1A[JCopying blob 7ed53567ac7a done  
'
printf 'Copying config 8312fd27fb done  
'
echo archive > "${last#oci-archive:}")"));
  std::vector<PullProgress> seen;
  PullContext context;
  context.progress = [&](const PullProgress& p) { seen.push_back(p); };
  Status s = puller.Pull(Ref("x.io/a:1"), dir_ + "/a.tar", context);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), (PullProgress{1, 1, 2097152, 2097152}));
  // Without a progress callback it stays quiet (no terminal at all).
  SkopeoPuller quiet(Options(R"(case " $* " in *" --quiet "*) ;; *) exit 1;; esac; echo a > "${last#oci-archive:}")"));
  EXPECT_TRUE(quiet.Pull(Ref("x.io/a:1"), dir_ + "/b.tar").ok());
}

TEST_F(SkopeoPullerProcessTest, SaysWhereItLookedWhenTheImageIsMissing) {
  SkopeoPuller failing(Options(
      R"(echo 'time="t" level=fatal msg="initializing source docker://x.io/a:1: reading manifest 1 in x.io/a: manifest unknown"' >&2; exit 1)"));
  PullContext context;
  EXPECT_EQ(failing.Pull(Ref("x.io/a:1"), dir_ + "/a.tar", context).code(), StatusCode::kNotFound);
  EXPECT_THAT(context.looked_in, ElementsAre("its registry x.io"));
  // Found but too big is no miss.
  SkopeoOptions o = Options("head -c 5000 /dev/zero > \"${last#oci-archive:}\"; exec sleep 30");
  o.max_bytes = 1000;
  PullContext big;
  EXPECT_EQ(SkopeoPuller(o).Pull(Ref("x.io/a:1"), dir_ + "/b.tar", big).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(big.looked_in.empty());
}

TEST_F(SkopeoPullerProcessTest, PullFromFetchesAnotherNameWithATokenAndWordsFailuresForTheImage) {
  PullSource source{Ref("10.0.0.1:5000/m/abc@sha256:" + std::string(64, 'a')), "TOKEN", true,
                    "the cluster's registry 10.0.0.1:5000"};
  SkopeoPuller puller(Options(R"(echo "$@" > "${last#oci-archive:}")"));
  PullContext context;
  const std::string archive = dir_ + "/a.tar";
  ASSERT_TRUE(puller.PullFrom(Ref("busybox:demo"), source, archive, context).ok());
  std::ifstream in(archive);
  std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(args, HasSubstr("copy --quiet --src-tls-verify=false --src-registry-token TOKEN --preserve-digests "
                              "docker://10.0.0.1:5000/m/abc@sha256:aaaa"));
  SkopeoPuller failing(Options(
      R"(echo 'time="t" level=fatal msg="initializing source docker://10.0.0.1:5000/m/abc: pinging container registry 10.0.0.1:5000: connection refused"' >&2; exit 1)"));
  Status s = failing.PullFrom(Ref("busybox:demo"), source, dir_ + "/b.tar", context);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), StartsWith("ref pull has been retried 1 time(s): failed to copy: pulling "
                                      "docker.io/library/busybox:demo from the cluster's registry 10.0.0.1:5000 "
                                      "failed: initializing source"));
}

}  // namespace
}  // namespace paddock::agent::images
