// libFuzzer: dns::Parse on hostile bytes must fail cleanly or give a message that encodes and
// parses back to the same shape; the Responder must answer anything without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dns/message.h"
#include "dns/responder.h"

namespace {

class Names : public paddock::dns::Authority {
 public:
  paddock::dns::Answer Lookup(const paddock::dns::QuerySource&, std::string_view name, uint16_t type) override {
    using paddock::dns::Answer;
    if (name.size() % 3 == 0) return Answer::Forward();
    if (name.size() % 3 == 1) return Answer::NxDomain();
    std::vector<paddock::dns::Record> records;
    for (int i = 0; i < 12; ++i) records.push_back(type == 33 ? paddock::dns::SrvRecord(1, 1, 80, std::string(name))
                                                              : paddock::dns::ARecord("10.0.0.1"));
    return Answer::Records(5, std::move(records));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view wire(reinterpret_cast<const char*>(data), size);
  auto parsed = paddock::dns::Parse(wire);
  if (parsed.ok()) {
    auto again = paddock::dns::Encode(*parsed);
    if (again.ok()) {
      auto back = paddock::dns::Parse(*again);
      if (!back.ok() || back->questions.size() != parsed->questions.size() ||
          back->answers.size() != parsed->answers.size() || back->edns.has_value() != parsed->edns.has_value()) {
        std::abort();
      }
      for (size_t i = 0; i < back->questions.size(); ++i) {
        if (back->questions[i].name != parsed->questions[i].name) std::abort();
      }
    }
  }
  static Names names;
  static paddock::dns::Responder responder(names, {});
  paddock::dns::QuerySource source{.address = "10.0.0.9", .tcp = size % 2 == 0};
  paddock::dns::Decision d = responder.Respond(wire, source);
  if (d.action == paddock::dns::Decision::Action::kReply && !source.tcp && d.reply.size() > 1232) std::abort();
  return 0;
}
