// Paddock's own HTTP request and response types. Boost.Beast stays inside src/http/; every other
// module sees only these.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace paddock::http {

struct Header {
  std::string name;   // as received (case preserved)
  std::string value;  // as received
};

struct Request {
  std::string method;  // "POST"
  std::string target;  // "/path?query" as received
  std::vector<Header> headers;
  std::string body;
  std::string remote_address;  // "127.0.0.1:53120"

  // The first header named `name` (ASCII case-insensitive), or empty.
  std::string_view GetHeader(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
  std::string_view Path() const;   // target before '?'
  std::string_view Query() const;  // target after '?', or empty
};

struct Response {
  int status = 200;
  std::vector<Header> headers;
  std::string body;

  void SetHeader(std::string name, std::string value);
  std::string_view GetHeader(std::string_view name) const;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace paddock::http
