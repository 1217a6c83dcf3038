#include "agent/net/internal/address_book.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/subprocess.h"

namespace paddock::agent::net::internal {
namespace {

constexpr std::string_view kFile = "bridge-addresses";

std::string Ipv4(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

std::optional<uint32_t> ParseIpv4(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

Status Errno(std::string_view what, const std::string& path) {
  return Internal(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Status WriteFully(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("writing", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

}  // namespace

AddressBook::AddressBook(std::string dir, uint32_t gateway, int prefix_length)
    : dir_(std::move(dir)), gateway_(gateway), prefix_length_(prefix_length) {
  uint32_t mask = prefix_length <= 0 ? 0 : ~uint32_t{0} << (32 - prefix_length);
  first_ = (gateway & mask) + 1;
  last_ = (gateway | ~mask) - 1;
}

std::string AddressBook::path() const { return fmt::format("{}/{}", dir_, kFile); }

template <typename F>
auto AddressBook::Locked(F&& body) -> decltype(body(std::declval<Contents&>(), std::declval<bool&>())) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Internal(fmt::format("creating {}: {}", dir_, ec.message()));
  std::string lock_path = path() + ".lock";
  subprocess::UniqueFd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock.valid()) return Errno("opening", lock_path);
  while (flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return Errno("locking", lock_path);
  }
  auto contents = Read();
  if (!contents.ok()) return contents.status();
  bool changed = false;
  auto result = body(*contents, changed);
  if (result.ok() && changed) {
    if (Status s = Write(*contents); !s.ok()) return s;
  }
  return result;  // the lock goes with the descriptor
}

StatusOr<AddressBook::Contents> AddressBook::Read() {
  Contents contents;
  contents.next = first_;
  std::error_code ec;
  if (!std::filesystem::exists(path(), ec) && !ec) return contents;
  std::ifstream in(path());
  if (!in) return Internal(fmt::format("cannot open {}", path()));
  std::string line;
  int number = 0;
  std::set<uint32_t> taken;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string first, second, extra;
    words >> first >> second >> extra;
    auto bad = [&] { return DataLoss(fmt::format("{} line {}: cannot parse '{}'", path(), number, line)); };
    if (second.empty() || !extra.empty()) return bad();
    if (first == "next") {
      auto ip = ParseIpv4(second);
      if (!ip) return bad();
      contents.next = *ip;
      continue;
    }
    auto ip = ParseIpv4(first);
    if (!ip || !taken.insert(*ip).second || !contents.holders.emplace(second, *ip).second) return bad();
  }
  if (in.bad()) return Internal(fmt::format("cannot read {}", path()));
  return contents;
}

Status AddressBook::Write(const Contents& contents) {
  std::string text = "# bridge-mode addresses held by tasks (agent/net): <ip> <task id>\n";
  text += fmt::format("next {}\n", Ipv4(contents.next));
  for (const auto& [task, ip] : contents.holders) text += fmt::format("{} {}\n", Ipv4(ip), task);
  std::string tmp = path() + ".tmp";
  {
    subprocess::UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd.valid()) return Errno("creating", tmp);
    RETURN_IF_ERROR(WriteFully(fd.get(), text, tmp));
    if (fsync(fd.get()) != 0) return Errno("syncing", tmp);
  }
  if (rename(tmp.c_str(), path().c_str()) != 0) return Errno("renaming", tmp);
  subprocess::UniqueFd dir(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid()) (void)fsync(dir.get());
  return OkStatus();
}

StatusOr<AddressBook::Allocation> AddressBook::Allocate(std::string_view task_id) {
  return Locked([&](Contents& c, bool& changed) -> StatusOr<Allocation> {
    auto held = c.holders.find(std::string(task_id));
    if (held != c.holders.end()) return Allocation{.ip = held->second, .is_new = false};
    std::set<uint32_t> taken;
    for (const auto& [task, ip] : c.holders) taken.insert(ip);
    uint64_t size = uint64_t{last_} - first_ + 1;
    uint32_t start = (c.next >= first_ && c.next <= last_) ? c.next : first_;
    for (uint64_t i = 0; i < size; ++i) {
      uint32_t ip = static_cast<uint32_t>(first_ + (uint64_t{start} - first_ + i) % size);
      if (ip == gateway_ || taken.count(ip)) continue;
      c.holders.emplace(std::string(task_id), ip);
      c.next = ip == last_ ? first_ : ip + 1;
      changed = true;
      return Allocation{.ip = ip, .is_new = true};
    }
    return ResourceExhausted(
        fmt::format("no free address left in {}/{} ({} held)", Ipv4(first_ - 1), prefix_length_, c.holders.size()));
  });
}

Status AddressBook::Release(std::string_view task_id) {
  return Locked([&](Contents& c, bool& changed) -> Status {
    changed = c.holders.erase(std::string(task_id)) > 0;
    return OkStatus();
  });
}

StatusOr<std::optional<uint32_t>> AddressBook::Find(std::string_view task_id) {
  return Locked([&](Contents& c, bool&) -> StatusOr<std::optional<uint32_t>> {
    auto held = c.holders.find(std::string(task_id));
    if (held == c.holders.end()) return std::optional<uint32_t>();
    return std::optional<uint32_t>(held->second);
  });
}

StatusOr<std::map<std::string, uint32_t>> AddressBook::List() {
  return Locked([&](Contents& c, bool&) -> StatusOr<std::map<std::string, uint32_t>> { return c.holders; });
}

}  // namespace paddock::agent::net::internal
