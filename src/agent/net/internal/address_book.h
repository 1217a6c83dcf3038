// The bridge-mode address allocator: which task holds which address of the bridge network, in a
// file that outlives the agent.
//
//   AddressBook book(state_dir, gateway, 16);
//   ASSIGN_OR_RETURN(AddressBook::Allocation a, book.Allocate("task-a"));   // again: same address
//   RETURN_IF_ERROR(book.Release("task-a"));
//
// `<dir>/bridge-addresses` holds a cursor line "next <ip>" and a line "<ip> <task id>" per
// holder. Every operation reads it, changes it and writes it back (temp file, fsync, rename,
// fsync of the directory) holding flock on `<dir>/bridge-addresses.lock`: processes and threads
// sharing the file take turns, and a crash leaves the old or the new file, never a torn one.
// Addresses are handed out round-robin over the network, skipping its network and broadcast
// addresses, the gateway and every held address.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace paddock::agent::net::internal {

class AddressBook {
 public:
  // REQUIRES: 1 <= prefix_length <= 30
  AddressBook(std::string dir, uint32_t gateway, int prefix_length);

  struct Allocation {
    uint32_t ip = 0;
    bool is_new = false;  // false: the task held it already
  };

  // The address `task_id` holds, else the next free one. kResourceExhausted when none is free.
  StatusOr<Allocation> Allocate(std::string_view task_id);
  // Frees what `task_id` holds; nothing held is fine.
  Status Release(std::string_view task_id);
  // The address `task_id` holds, if any.
  StatusOr<std::optional<uint32_t>> Find(std::string_view task_id);
  // Task id -> address.
  StatusOr<std::map<std::string, uint32_t>> List();

  std::string path() const;

 private:
  struct Contents {
    uint32_t next = 0;
    std::map<std::string, uint32_t> holders;
  };
  template <typename F>
  auto Locked(F&& body) -> decltype(body(std::declval<Contents&>(), std::declval<bool&>()));
  StatusOr<Contents> Read();
  Status Write(const Contents& contents);

  std::string dir_;
  uint32_t gateway_;
  int prefix_length_;
  uint32_t first_;  // network + 1
  uint32_t last_;   // broadcast - 1
};

}  // namespace paddock::agent::net::internal
