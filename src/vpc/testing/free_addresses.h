// vpc/testing: how many addresses of a subnet are free in a scope's VPC, read in a transaction of
// its own — for tests that check an address is held, or given back, by what they drive.
//
//   const uint32_t before = vpc::testing::FreeAddresses(*store_, kScope, subnet);
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "common/ids.h"
#include "store/store.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"

namespace paddock::vpc::testing {

// AvailableIps(subnet) now; a failed read fails the calling test and answers 0.
inline uint32_t FreeAddresses(store::Store& store, const Scope& scope, const Subnet& subnet) {
  uint32_t n = 0;
  Status read = store.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(n, AvailableIps(txn, scope, subnet));
    return OkStatus();
  });
  EXPECT_TRUE(read.ok()) << read.ToString();
  return n;
}

}  // namespace paddock::vpc::testing
