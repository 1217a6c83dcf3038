// dns/testing: an Authority answering from a table the test fills, recording what it was asked.
//
//   testing::FakeAuthority names;
//   names.Set("web.internal", 1, Answer::Records(10, {ARecord("172.31.0.7")}));
//   ... // every (name, type) not set is forwarded
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dns/responder.h"

namespace paddock::dns::testing {

class FakeAuthority : public Authority {
 public:
  struct Lookup_ {
    std::string listener, address, name;
    uint16_t type;
  };

  void Set(std::string name, uint16_t type, Answer answer) {
    std::lock_guard lock(mu_);
    answers_[{std::move(name), type}] = std::move(answer);
  }
  std::vector<Lookup_> lookups() {
    std::lock_guard lock(mu_);
    return lookups_;
  }

  Answer Lookup(const QuerySource& source, std::string_view name, uint16_t type) override {
    std::lock_guard lock(mu_);
    if (record_lookups_) lookups_.push_back({std::string(source.listener), std::string(source.address), std::string(name), type});
    auto it = answers_.find({std::string(name), type});
    return it == answers_.end() ? Answer::Forward() : it->second;
  }

  // For benchmarks: stop remembering every lookup.
  void set_record_lookups(bool on) {
    std::lock_guard lock(mu_);
    record_lookups_ = on;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, uint16_t>, Answer> answers_;  // GUARDED_BY(mu_)
  std::vector<Lookup_> lookups_;                                // GUARDED_BY(mu_)
  bool record_lookups_ = true;                                  // GUARDED_BY(mu_)
};

}  // namespace paddock::dns::testing
