// libFuzzer: edge::Rule::Parse and Constraint::Parse on hostile text must fail cleanly or give a
// rule that matches any request without crashing. The input is the rule text, then, after each
// '\x01', the request's path, query, host, client address and one header value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edge/rule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view parts[6];
  for (std::string_view& part : parts) {
    std::size_t cut = input.find('\x01');
    part = input.substr(0, cut);
    input = cut == std::string_view::npos ? std::string_view() : input.substr(cut + 1);
  }
  std::string_view text = parts[0];
  auto rule = paddock::edge::Rule::Parse(text);
  if (rule.ok()) {
    if (rule->DefaultPriority() != static_cast<int>(text.size())) std::abort();
    std::vector<std::pair<std::string_view, std::string_view>> headers = {{"X-A", parts[5]}, {"x-a", "1"}};
    paddock::edge::RequestFacts request{.method = "GET", .host = parts[3], .path = parts[1], .query = parts[2],
                                        .client_ip = parts[4], .headers = &headers};
    rule->Matches(request);
    paddock::edge::Rule copy = *rule;
    copy.Matches(paddock::edge::RequestFacts{});
  }
  auto constraint = paddock::edge::Constraint::Parse(text);
  if (constraint.ok()) constraint->Matches({{"a", std::string(parts[1])}, {std::string(parts[2]), "b"}});
  return 0;
}
