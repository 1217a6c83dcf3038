// Sizing: CPU and memory quantities, and Fargate's round-up to its table of task sizes.
#include "deploy/sizing.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace paddock::deploy {
namespace {
using ::testing::HasSubstr;

TEST(ParseCpuUnits, VcpuAndMillicores) {
  EXPECT_EQ(*ParseCpuUnits("500m"), 512);
  EXPECT_EQ(*ParseCpuUnits("0.25"), 256);
  EXPECT_EQ(*ParseCpuUnits("0.5"), 512);
  EXPECT_EQ(*ParseCpuUnits("2"), 2048);
  EXPECT_EQ(*ParseCpuUnits("1m"), 2);  // 1.024 units, rounded up
}

TEST(ParseCpuUnits, RefusesZeroNegativeAndMalformed) {
  for (std::string_view q : {"0", "0m", "0.0", "abc", "-1", "", "m", "1.2.3", "1 ", "1vcpu"}) {
    StatusOr<int> units = ParseCpuUnits(q);
    ASSERT_FALSE(units.ok()) << q;
    EXPECT_EQ(units.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(units.status().message(), HasSubstr(fmt::format("\"{}\"", q)));
  }
}

TEST(ParseMemoryMib, BinaryDecimalAndPlainMib) {
  EXPECT_EQ(*ParseMemoryMib("512Mi"), 512);
  EXPECT_EQ(*ParseMemoryMib("1G"), 954);  // 10^9 bytes = 953.7 MiB, rounded up
  EXPECT_EQ(*ParseMemoryMib("2Gi"), 2048);
  EXPECT_EQ(*ParseMemoryMib("512"), 512);
  EXPECT_EQ(*ParseMemoryMib("512M"), 489);  // 488.3 MiB
  EXPECT_EQ(*ParseMemoryMib("0.5Gi"), 512);
}

TEST(ParseMemoryMib, RefusesZeroNegativeAndMalformed) {
  for (std::string_view q : {"0", "0Mi", "-512", "lots", "", "Mi", "512mi", "512 Mi"}) {
    StatusOr<int> mib = ParseMemoryMib(q);
    ASSERT_FALSE(mib.ok()) << q;
    EXPECT_EQ(mib.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(mib.status().message(), HasSubstr(fmt::format("\"{}\"", q)));
  }
}

// Fargate's Linux task sizes, written out from AWS's table (CPU units -> allowed MiB).
std::vector<std::pair<int, int>> FargateTable() {
  std::vector<std::pair<int, int>> sizes;
  for (int mib : {512, 1024, 2048}) sizes.emplace_back(256, mib);
  for (int gib = 1; gib <= 4; ++gib) sizes.emplace_back(512, gib * 1024);
  for (int gib = 2; gib <= 8; ++gib) sizes.emplace_back(1024, gib * 1024);
  for (int gib = 4; gib <= 16; ++gib) sizes.emplace_back(2048, gib * 1024);
  for (int gib = 8; gib <= 30; ++gib) sizes.emplace_back(4096, gib * 1024);
  for (int gib = 16; gib <= 60; gib += 4) sizes.emplace_back(8192, gib * 1024);
  for (int gib = 32; gib <= 120; gib += 8) sizes.emplace_back(16384, gib * 1024);
  return sizes;
}

TEST(ResolveSize, EveryFargateSizeResolvesToItself) {
  const std::vector<std::pair<int, int>> table = FargateTable();
  ASSERT_EQ(table.size(), 3u + 4u + 7u + 13u + 23u + 12u + 12u);
  for (const auto& [cpu_units, mib] : table) {
    // As vCPU ("0.25", "16") and as plain MiB.
    const std::string cpu = fmt::format("{}", cpu_units / 1024.0);
    const std::string memory = fmt::format("{}", mib);
    for (Capacity capacity : {Capacity::kFargate, Capacity::kInterruptible}) {
      StatusOr<TaskSize> size = ResolveSize(cpu, memory, capacity);
      ASSERT_TRUE(size.ok()) << cpu << "/" << memory << ": " << size.status().message();
      EXPECT_EQ(size->cpu_units, cpu_units) << cpu << "/" << memory;
      EXPECT_EQ(size->memory_mib, mib) << cpu << "/" << memory;
      EXPECT_FALSE(size->rounded_up) << cpu << "/" << memory;
      EXPECT_EQ(size->note, "");
    }
  }
}

TEST(ResolveSize, FargateRoundsUpToTheNearestSizeAndSaysSo) {
  StatusOr<TaskSize> size = ResolveSize("500m", "256Mi", Capacity::kFargate);
  ASSERT_TRUE(size.ok()) << size.status().message();
  EXPECT_EQ(size->cpu_units, 512);
  EXPECT_EQ(size->memory_mib, 1024);
  EXPECT_TRUE(size->rounded_up);
  EXPECT_EQ(size->note, "cpu 500m and memory 256Mi were rounded up to Fargate's 512 CPU units / 1024 MiB");

  // Memory beyond a CPU size's range moves to a larger CPU size.
  size = ResolveSize("0.25", "3Gi", Capacity::kFargate);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->cpu_units, 512);
  EXPECT_EQ(size->memory_mib, 3072);
  // Between steps: 8 vCPU takes memory by 4 GiB.
  size = ResolveSize("8", "17Gi", Capacity::kFargate);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->cpu_units, 8192);
  EXPECT_EQ(size->memory_mib, 20480);
  // A decimal gigabyte is not a Fargate size.
  size = ResolveSize("1", "2G", Capacity::kFargate);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->memory_mib, 2048);
  EXPECT_TRUE(size->rounded_up);
}

TEST(ResolveSize, BeyondFargatesLargestSizeIsAnError) {
  for (auto [cpu, memory] : {std::pair<std::string_view, std::string_view>{"17", "32Gi"}, {"16", "121Gi"},
                             {"0.25", "128Gi"}}) {
    StatusOr<TaskSize> size = ResolveSize(cpu, memory, Capacity::kFargate);
    ASSERT_FALSE(size.ok()) << cpu << "/" << memory;
    EXPECT_EQ(size.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(size.status().message(), HasSubstr("16 vCPU"));
    EXPECT_THAT(size.status().message(), HasSubstr("120 GiB"));
  }
  EXPECT_TRUE(ResolveSize("16", "120Gi", Capacity::kFargate).ok());
}

TEST(ResolveSize, Ec2PassesThrough) {
  StatusOr<TaskSize> size = ResolveSize("500m", "300Mi", Capacity::kEc2);
  ASSERT_TRUE(size.ok()) << size.status().message();
  EXPECT_EQ(size->cpu_units, 512);
  EXPECT_EQ(size->memory_mib, 300);
  EXPECT_FALSE(size->rounded_up);
  EXPECT_EQ(size->note, "");
  size = ResolveSize("64", "512Gi", Capacity::kEc2);  // no Fargate ceiling
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->cpu_units, 65536);
  EXPECT_EQ(size->memory_mib, 524288);
  EXPECT_FALSE(ResolveSize("1", "64Mi", Capacity::kEc2).ok());  // below a task's minimum
  EXPECT_FALSE(ResolveSize("abc", "512Mi", Capacity::kEc2).ok());
}

}  // namespace
}  // namespace paddock::deploy
