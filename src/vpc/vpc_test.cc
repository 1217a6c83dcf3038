#include <gtest/gtest.h>
#include <fmt/format.h>

#include <set>
#include <thread>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"
#include "vpc/security_groups.h"

namespace paddock::vpc {
namespace {

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
const Scope kOther{AccountId("210987654321"), Region("us-east-1")};

TEST(DefaultVpcTest, StableIdsAndAwsLayout) {
  DefaultVpc a = DefaultVpcFor(kScope), b = DefaultVpcFor(kScope), c = DefaultVpcFor(kOther);
  EXPECT_EQ(a.vpc_id, b.vpc_id);
  EXPECT_NE(a.vpc_id, c.vpc_id);
  EXPECT_EQ(a.vpc_id.size(), 21u);  // "vpc-" + 17 hex digits
  ASSERT_EQ(a.subnets.size(), 3u);
  EXPECT_EQ(a.subnets[0].Cidr(), "172.31.0.0/20");
  EXPECT_EQ(a.subnets[1].Cidr(), "172.31.16.0/20");
  EXPECT_EQ(a.subnets[2].Cidr(), "172.31.32.0/20");
  EXPECT_EQ(a.subnets[0].az, "us-east-1a");
  EXPECT_EQ(a.subnets[2].az_id, "use1-az3");
  EXPECT_EQ(a.subnets[0].UsableCount(), 4091u);  // 4096 less AWS's five reserved addresses
  EXPECT_EQ(Ipv4ToString(a.subnets[0].FirstUsable()), "172.31.0.4");
  EXPECT_EQ(Ipv4ToString(a.subnets[0].LastUsable()), "172.31.15.254");
  EXPECT_EQ(a.FindSubnet(a.subnets[1].id), &a.subnets[1]);
  EXPECT_EQ(a.FindSubnet("subnet-nope"), nullptr);
  uint32_t ip = 0;
  EXPECT_TRUE(ParseIpv4("172.31.16.9", &ip));
  EXPECT_TRUE(a.subnets[1].Contains(ip));
  EXPECT_FALSE(ParseIpv4("172.31.16", &ip));
  EXPECT_FALSE(ParseIpv4("172.31.16.256", &ip));
}

class IpamTest : public ::testing::Test {
 protected:
  StatusOr<uint32_t> Allocate(const Subnet& s, std::string owner) {
    uint32_t out = 0;
    Status st = store_->Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(out, AllocateIp(txn, kScope, s, owner, {}));
      return OkStatus();
    });
    if (!st.ok()) return st;
    return out;
  }
  Status Release(const Subnet& s, uint32_t ip) {
    return store_->Write([&](store::WriteTxn& txn) { return ReleaseIp(txn, kScope, s, ip); });
  }
  uint32_t Available(const Subnet& s) {
    uint32_t n = 0;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                  ASSIGN_OR_RETURN(n, AvailableIps(txn, kScope, s));
                  return OkStatus();
                }).ok());
    return n;
  }
  // A /28: 16 addresses, 11 usable.
  Subnet Small() {
    Subnet s = DefaultVpcFor(kScope).subnets[0];
    s.prefix_length = 28;
    return s;
  }
  paddock::testing::TempStore store_;
};

// The address after `ip` in the subnet, wrapping around past the last usable one.
uint32_t NextIn(const Subnet& s, uint32_t ip) { return ip == s.LastUsable() ? s.FirstUsable() : ip + 1; }

TEST_F(IpamTest, NextFitSkipsReservedAndDoesNotReuseAtOnce) {
  Subnet s = Small();
  auto a = Allocate(s, "eni-a"), b = Allocate(s, "eni-b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GE(*a, s.FirstUsable());  // .0-.3 and .15 are AWS's
  EXPECT_LE(*a, s.LastUsable());
  EXPECT_EQ(*b, NextIn(s, *a));
  ASSERT_TRUE(Release(s, *a).ok());
  ASSERT_TRUE(Release(s, *a).ok());  // a repeated release is harmless
  auto c = Allocate(s, "eni-c");
  EXPECT_EQ(*c, NextIn(s, *b));  // a's address is free again but not handed out yet
  EXPECT_EQ(Available(s), 11u - 2u);
}

TEST_F(IpamTest, EachVpcStartsAtItsOwnPlace) {
  // The first cursor is a hash of the VPC and subnet: VPCs do not all start at .4.
  std::set<uint32_t> firsts;
  for (int i = 0; i < 8; ++i) {
    const Scope scope{AccountId(fmt::format("1000000000{:02}", i)), Region("us-east-1")};
    const Subnet s = DefaultVpcFor(scope).subnets[0];
    uint32_t ip = 0;
    ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
                  ASSIGN_OR_RETURN(ip, AllocateIp(txn, scope, s, "eni", {}));
                  return OkStatus();
                }).ok());
    firsts.insert(ip);
  }
  EXPECT_GE(firsts.size(), 7u);
}

TEST_F(IpamTest, FillsWrapsAndReportsExhaustion) {
  Subnet s = Small();
  std::set<uint32_t> got;
  for (int i = 0; i < 11; ++i) {
    auto ip = Allocate(s, "eni-" + std::to_string(i));
    ASSERT_TRUE(ip.ok()) << i << ip.status().ToString();
    EXPECT_TRUE(got.insert(*ip).second);
    EXPECT_GE(*ip, s.FirstUsable());
    EXPECT_LE(*ip, s.LastUsable());
  }
  auto full = Allocate(s, "eni-x");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(Release(s, s.FirstUsable() + 3).ok());
  auto again = Allocate(s, "eni-y");  // wraps around to the one free address
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, s.FirstUsable() + 3);
  EXPECT_EQ(Available(s), 0u);
}

TEST_F(IpamTest, EachVpcHasItsOwnPoolAndPrefersAddressesNoOtherVpcHolds) {
  // Both accounts' default VPCs are 172.31.0.0/16; each has its own pool of a subnet's addresses.
  Subnet mine = Small(), theirs = DefaultVpcFor(kOther).subnets[0];
  theirs.prefix_length = 28;
  ASSERT_NE(mine.id, theirs.id);
  auto allocate = [&](const Scope& scope, const Subnet& s) {
    uint32_t ip = 0;
    EXPECT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
                  ASSIGN_OR_RETURN(ip, AllocateIp(txn, scope, s, "eni", {}));
                  return OkStatus();
                }).ok());
    return ip;
  };
  // While the other VPC has addresses no one holds, it gets those: addresses stay unique on the
  // node as long as they can.
  std::set<uint32_t> mine_held;
  for (int i = 0; i < 6; ++i) mine_held.insert(allocate(kScope, mine));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(mine_held.count(allocate(kOther, theirs)));
  // Then it takes addresses my VPC holds: the pools are separate, so both fill up.
  std::set<uint32_t> theirs_late;
  for (int i = 0; i < 6; ++i) theirs_late.insert(allocate(kOther, theirs));
  EXPECT_EQ(theirs_late, mine_held);
  EXPECT_EQ(Available(mine), 11u - 6u);
  uint32_t n = 0;
  ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                ASSIGN_OR_RETURN(n, AvailableIps(txn, kOther, theirs));
                return OkStatus();
              }).ok());
  EXPECT_EQ(n, 0u);
  // Releasing in one VPC leaves the other's holder of the same address alone.
  ASSERT_TRUE(Release(mine, *mine_held.begin()).ok());
  std::vector<HeldAddress> held;
  ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                ASSIGN_OR_RETURN(held, HeldAddresses(txn, kOther));
                return OkStatus();
              }).ok());
  EXPECT_EQ(held.size(), 11u);
}

TEST_F(IpamTest, ConcurrentAllocationsNeverCollide) {
  Subnet s = DefaultVpcFor(kScope).subnets[1];
  std::mutex mu;
  std::set<uint32_t> got;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto ip = Allocate(s, fmt::format("eni-{}-{}", t, i));
        ASSERT_TRUE(ip.ok());
        std::lock_guard lock(mu);
        EXPECT_TRUE(got.insert(*ip).second) << Ipv4ToString(*ip);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(got.size(), 400u);
  EXPECT_EQ(Available(s), 4091u - 400u);
}

}  // namespace
}  // namespace paddock::vpc
