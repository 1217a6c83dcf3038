// Paddock's own HTTP request and response types. Boost.Beast stays inside src/http/; every other
// module sees only these.
#pragma once

#include <functional>
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

// What a streamed response's producer writes its body through (Response::stream).
class BodyWriter {
 public:
  virtual ~BodyWriter() = default;
  // Sends `data` now (one HTTP/1.1 chunk) and blocks until it is written. False when it could not
  // be, or when the server is stopping: the producer should return, and every later Write is false
  // too. An empty `data` sends nothing (an empty chunk would end the body).
  virtual bool Write(std::string_view data) = 0;
};

// A body produced while it is sent, for responses that last (AWS event streams: StartLiveTail).
// The server writes the status line and headers (Transfer-Encoding: chunked; `body` is ignored),
// then runs the producer on a thread of its own — never a handler worker, so streams that last
// hours never starve the handlers — and ends the body when it returns. It must return soon after a
// Write fails; a peer that goes away is noticed by the next Write (a stream that writes nothing for
// a long time should write a heartbeat). Server::Stop waits for producers to return.
using BodyProducer = std::function<void(BodyWriter&)>;

struct Response {
  int status = 200;
  std::vector<Header> headers;
  std::string body;
  BodyProducer stream;  // set: a streamed body (see BodyProducer)

  void SetHeader(std::string name, std::string value);
  std::string_view GetHeader(std::string_view name) const;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace paddock::http
