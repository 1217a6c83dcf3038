#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "common/arn.h"
#include "common/private_files.h"
#include "common/encoding.h"
#include "common/ids.h"
#include "common/mountinfo.h"
#include "common/proc_routes.h"
#include "common/status.h"

namespace paddock {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  ASSIGN_OR_RETURN(*out, Half(x));
  return OkStatus();
}

TEST(StatusTest, AssignOrReturnPropagatesErrors) {
  int v = 0;
  EXPECT_TRUE(UseHalf(4, &v).ok());
  EXPECT_EQ(v, 2);
  Status s = UseHalf(3, &v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd");
}

TEST(PrivateFilesTest, DirectoriesAre0700AndFilesLoseGroupAndOtherBits) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "paddock-private-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path root = tmpl;
  auto mode = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  };
  const mode_t old_umask = ::umask(0);
  ASSERT_TRUE(MakePrivateDir((root / "a" / "state").string()).ok());
  ::umask(old_umask);
  EXPECT_EQ(mode(root / "a" / "state"), 0700u);
  fs::create_directories(root / "loose");
  fs::permissions(root / "loose", fs::perms(0755));
  ASSERT_TRUE(MakePrivateDir((root / "loose").string()).ok());
  EXPECT_EQ(mode(root / "loose"), 0700u);  // tightened
  std::ofstream(root / "f") << "secret";
  fs::permissions(root / "f", fs::perms(0644));
  ASSERT_TRUE(TightenPrivateFile((root / "f").string()).ok());
  EXPECT_EQ(mode(root / "f"), 0600u);
  EXPECT_TRUE(TightenPrivateFile((root / "missing").string()).ok());
  // A symlink planted in place of the file is not followed.
  std::ofstream(root / "target") << "x";
  fs::permissions(root / "target", fs::perms(0644));
  fs::create_symlink(root / "target", root / "link");
  ASSERT_TRUE(TightenPrivateFile((root / "link").string()).ok());
  EXPECT_EQ(mode(root / "target"), 0644u);
  std::ofstream(root / "file-not-dir") << "x";
  EXPECT_FALSE(MakePrivateDir((root / "file-not-dir").string()).ok());
  fs::remove_all(root);
}

TEST(ArnTest, ParsesAllParts) {
  auto arn = ParseArn("arn:aws:ecs:us-east-1:123456789012:task-definition/web:3");
  ASSERT_TRUE(arn.ok());
  EXPECT_EQ(arn->service, "ecs");
  EXPECT_EQ(arn->region, "us-east-1");
  EXPECT_EQ(arn->account, "123456789012");
  EXPECT_EQ(arn->resource, "task-definition/web:3");
  EXPECT_EQ(arn->ToString(), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:3");
}

TEST(ArnTest, RejectsMalformed) {
  EXPECT_FALSE(ParseArn("arn:aws:ecs").ok());
  EXPECT_FALSE(ParseArn("nope:aws:ecs:r:a:x").ok());
  EXPECT_FALSE(ParseArn("arn:aws:ecs:r:a:").ok());
}

TEST(IdsTest, AccountAndRegionShapes) {
  EXPECT_TRUE(IsAccountId("123456789012"));
  EXPECT_FALSE(IsAccountId("12345678901"));
  EXPECT_FALSE(IsAccountId("12345678901a"));
  EXPECT_TRUE(IsRegionName("us-east-1"));
  EXPECT_FALSE(IsRegionName("US-EAST-1"));
  EXPECT_FALSE(IsRegionName("useast1"));
}

TEST(EncodingTest, HexAndBase64RoundTrip) {
  std::string bytes = RandomBytes(37);
  EXPECT_EQ(*HexDecode(HexEncode(bytes)), bytes);
  EXPECT_EQ(*Base64UrlDecode(Base64UrlEncode(bytes)), bytes);
  EXPECT_FALSE(Base64UrlDecode("a+b").ok());
}

TEST(EncodingTest, PercentEncodingKeepsOnlyTheUnreservedCharacters) {
  EXPECT_EQ(PercentEncode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(PercentEncode("a b/c?d=e&f+g%\xff"), "a%20b%2Fc%3Fd%3De%26f%2Bg%25%FF");
  EXPECT_EQ(PercentDecode("a%20b%2fc%3F%FF"), "a b/c?\xff");
  EXPECT_EQ(PercentDecode("100%"), "100%") << "a '%' without two hex digits stays";
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");
  EXPECT_EQ(PercentDecode("a+b"), "a+b");
  EXPECT_EQ(PercentDecode("a+b", /*plus_is_space=*/true), "a b");
  for (std::string s : {std::string("x"), std::string("\0\x01 %+\xfe", 6), std::string("{\"k\": [1]}")}) {
    EXPECT_EQ(PercentDecode(PercentEncode(s)), s);
  }
}

// An AWS Query answer's text: EC2 writes "the subnet ID &apos;subnet-1&apos; does not exist".
TEST(EncodingTest, XmlUnescapeDecodesTheFiveEntitiesAndCharacterReferences) {
  EXPECT_EQ(XmlUnescape("The subnet ID &apos;subnet-1&apos; does not exist"), "The subnet ID 'subnet-1' does not exist");
  EXPECT_EQ(XmlUnescape("&lt;a href=&quot;x&quot;&gt;&amp;amp;"), "<a href=\"x\">&amp;");
  EXPECT_EQ(XmlUnescape("&#39;&#x27;&#233;&#x1F600;"), "''\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(XmlUnescape("AT&T; &nbsp; &#xD800; &#; & &amp"), "AT&T; &nbsp; &#xD800; &#; & &amp") << "unknown ones stay";
}

// FNV-1a's published 64-bit test vectors: names hashed with it must not change between releases.
TEST(EncodingTest, TerminalSafeEscapesControlsAndKeepsText) {
  EXPECT_EQ(TerminalSafe("plain text\twith a tab, ünïcödé ✓"), "plain text\twith a tab, ünïcödé ✓");
  EXPECT_EQ(TerminalSafe("\x1b[2J\x1b]0;pwned\x07ok\rover\x7f"), "\\x1b[2J\\x1b]0;pwned\\x07ok\\x0dover\\x7f");
  EXPECT_EQ(TerminalSafe("a\xc2\x9b" "31mb\xc2\xa0" "c"), "a\\x9b" "31mb\xc2\xa0" "c") << "C1 CSI escaped, NBSP kept";
  EXPECT_EQ(TerminalSafe("line\n"), "line\\x0a");
  EXPECT_EQ(TerminalSafe("trailing \xc2"), "trailing \xc2");
}

TEST(EncodingTest, Fnv1a64IsTheStandardHash) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(EncodingTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(EncodingTest, UuidShape) {
  for (int i = 0; i < 1000; ++i) {  // several refills of the per-thread buffer
    std::string u = RandomUuid();
    ASSERT_EQ(u.size(), 36u);
    EXPECT_EQ(u[8], '-');
    EXPECT_EQ(u[13], '-');
    EXPECT_EQ(u[18], '-');
    EXPECT_EQ(u[23], '-');
    EXPECT_EQ(u[14], '4');                                    // version 4
    EXPECT_NE(std::string_view("89ab").find(u[19]), std::string_view::npos);  // RFC 4122 variant
    EXPECT_EQ(u.find_first_not_of("0123456789abcdef-"), std::string::npos) << u;
  }
}

TEST(EncodingTest, UuidsDoNotRepeatAcrossThreadsOrAFork) {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(seen.insert(RandomUuid()).second);
  std::string other;
  std::thread([&] { other = RandomUuid(); }).join();
  EXPECT_TRUE(seen.insert(other).second);

  // A child forked with a half-used buffer must not hand out what the parent hands out next.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string u = RandomUuid();
    _exit(write(fds[1], u.data(), u.size()) == static_cast<ssize_t>(u.size()) ? 0 : 1);
  }
  close(fds[1]);
  const std::string parent_next = RandomUuid();
  char child[36];
  ASSERT_EQ(read(fds[0], child, sizeof(child)), 36);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_NE(std::string(child, 36), parent_next);
  EXPECT_FALSE(seen.count(std::string(child, 36)));
}

TEST(MountInfoTest, FieldsAfterTheSeparatorAndEscapesDecoded) {
  const std::string text =
      "24 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
      "35 24 0:30 / /sys/fs/cgroup/memory rw,nosuid master:1 shared:9 - cgroup cgroup rw,memory\n"
      "36 24 0:31 /sub /mnt/with\\040space rw - ext4 /dev/disk\\011x rw,errors=remount-ro\n"
      "garbage without a separator\n";
  const std::vector<MountInfo> mounts = ParseMountInfo(text);
  ASSERT_EQ(mounts.size(), 3u);
  EXPECT_EQ(mounts[0].mount_point, "/sys");
  EXPECT_EQ(mounts[0].fstype, "sysfs");
  EXPECT_EQ(mounts[1].fstype, "cgroup");  // two optional fields before the "-"
  EXPECT_EQ(mounts[1].super_options, "rw,memory");
  EXPECT_EQ(mounts[2].root, "/sub");
  EXPECT_EQ(mounts[2].mount_point, "/mnt/with space");
  EXPECT_EQ(mounts[2].source, "/dev/disk\tx");
  EXPECT_TRUE(HasMountOption(mounts[1].super_options, "memory"));
  EXPECT_FALSE(HasMountOption("rw,memoryx", "memory"));
}

TEST(ProcRoutesTest, HostOrderAddressesAndTheUpFlag) {
  const std::vector<Ipv4Route> routes = ParseIpv4Routes(
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
      "pdv-1\t141FAC0A\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n"
      "down0\t0000A8C0\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      "short line\n");
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[1].iface, "pdv-1");
  EXPECT_EQ(routes[1].destination, 0x0aac1f14u);  // 10.172.31.20
  EXPECT_EQ(routes[1].mask, 0xffffffffu);
  EXPECT_TRUE(routes[1].up);
  EXPECT_EQ(routes[2].destination, 0xc0a80000u);  // 192.168.0.0
  EXPECT_EQ(routes[2].mask, 0xffffff00u);
  EXPECT_FALSE(routes[2].up);
}

}  // namespace
}  // namespace paddock
