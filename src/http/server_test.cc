#include "http/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/client.h"

namespace paddock::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Request Post(std::string target, std::string body = {}) {
  Request req;
  req.method = "POST";
  req.target = std::move(target);
  req.body = std::move(body);
  return req;
}

// Echoes the body, and reports the method and path in headers.
Response Echo(const Request& req) {
  Response resp;
  resp.SetHeader("X-Method", req.method);
  resp.SetHeader("X-Path", std::string(req.Path()));
  resp.SetHeader("X-Query", std::string(req.Query()));
  resp.SetHeader("X-Test-Header", std::string(req.GetHeader("x-test-header")));
  resp.body = req.body;
  return resp;
}

// A connected POSIX socket with a receive timeout, for sending bytes no well-behaved client would.
class RawConnection {
 public:
  // From `source` (a loopback address: 127.0.0.2 is another peer than 127.0.0.1), or any.
  explicit RawConnection(uint16_t port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }

  void Write(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      ASSERT_GT(n, 0);
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  // Everything the server sends until it closes the connection (or 10 s pass).
  std::string ReadToEnd() {
    std::string out;
    char buf[4096];
    while (true) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(Handler handler, ServerOptions options = {}) {
    server_ = std::make_unique<Server>(std::move(options), std::move(handler));
    StatusOr<uint16_t> port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    ASSERT_NE(port_, 0);
  }

  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
};

TEST_F(ServerTest, EchoesRequest) {
  StartServer(Echo);
  Client client("127.0.0.1", port_);
  Request req = Post("/some/path?a=1&b=2", R"({"hello":"world"})");
  req.headers.push_back({"X-Test-Header", "value"});
  StatusOr<Response> resp = client.Send(req);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, R"({"hello":"world"})");
  EXPECT_EQ(resp->GetHeader("X-Method"), "POST");
  EXPECT_EQ(resp->GetHeader("X-Path"), "/some/path");
  EXPECT_EQ(resp->GetHeader("X-Query"), "a=1&b=2");
  EXPECT_EQ(resp->GetHeader("X-Test-Header"), "value");
  EXPECT_EQ(resp->GetHeader("Content-Length"), "17");
  EXPECT_EQ(resp->GetHeader("Connection"), "");
}

TEST_F(ServerTest, KeepAliveReusesConnection) {
  std::mutex mu;
  std::vector<std::string> peers;
  StartServer([&](const Request& req) {
    std::lock_guard lock(mu);
    peers.push_back(req.remote_address);
    return Response();
  });
  Client client("127.0.0.1", port_);
  ASSERT_TRUE(client.Send(Post("/")).ok());
  ASSERT_TRUE(client.Send(Post("/")).ok());
  std::lock_guard lock(mu);
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_THAT(peers[0], StartsWith("127.0.0.1:"));
  EXPECT_EQ(peers[0], peers[1]);
}

TEST_F(ServerTest, BodyOverLimitGets413) {
  std::atomic<int> calls{0};
  ServerOptions options;
  options.max_body_bytes = 1024;
  StartServer(
      [&](const Request&) {
        ++calls;
        return Response();
      },
      options);
  Client client("127.0.0.1", port_);
  ASSERT_TRUE(client.Send(Post("/", std::string(1024, 'a'))).ok());  // at the limit is fine
  StatusOr<Response> resp = client.Send(Post("/", std::string(4096, 'a')));
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 413);
  EXPECT_EQ(resp->body,
            R"({"__type":"SerializationException","message":"Request body exceeds the maximum size of 1024 bytes"})");
  EXPECT_EQ(resp->GetHeader("Content-Type"), "application/x-amz-json-1.1");
  EXPECT_EQ(resp->GetHeader("Connection"), "close");
  EXPECT_EQ(calls.load(), 1);
}

// allow_large_body raises the limit for the requests it picks by one header, before the body is read: a Content-Length past the request's own limit is refused as the header
// ends, a chunked body as it passes it.
TEST_F(ServerTest, LargeBodiesOnlyForTheRequestsAllowLargeBodyPicks) {
  std::atomic<int> calls{0};
  ServerOptions options;
  options.max_body_bytes = 1024;
  options.large_body_bytes = 8192;
  options.large_body_header = "X-Amz-Target";
  options.allow_large_body = [](std::string_view target) { return target == "Big"; };
  StartServer(
      [&](const Request& r) {
        ++calls;
        Response resp;
        resp.body = std::to_string(r.body.size());
        return resp;
      },
      options);
  Client client("127.0.0.1", port_);
  Request big = Post("/", std::string(8192, 'a'));
  big.headers.push_back({"X-Amz-Target", "Big"});
  StatusOr<Response> ok = client.Send(big);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "8192");

  Client other("127.0.0.1", port_);
  StatusOr<Response> refused = other.Send(Post("/", std::string(2048, 'a')));  // not picked: 1024
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 413);
  EXPECT_EQ(refused->body,
            R"({"__type":"SerializationException","message":"Request body exceeds the maximum size of 1024 bytes"})");

  Client third("127.0.0.1", port_);
  Request too_big = Post("/", std::string(8193, 'a'));
  too_big.headers.push_back({"X-Amz-Target", "Big"});
  StatusOr<Response> past = third.Send(too_big);
  ASSERT_TRUE(past.ok()) << past.status().ToString();
  EXPECT_EQ(past->status, 413);
  EXPECT_EQ(past->body,
            R"({"__type":"SerializationException","message":"Request body exceeds the maximum size of 8192 bytes"})");

  // A chunked body not picked is counted against 1024 as it comes.
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  conn.Write("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" + std::string(2048, 'c') +
             "\r\n0\r\n\r\n");
  EXPECT_THAT(conn.ReadToEnd(), StartsWith("HTTP/1.1 413 "));
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(ServerTest, HeaderOverLimitGets431) {
  ServerOptions options;
  options.max_header_bytes = 1024;
  StartServer(Echo, options);
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  conn.Write("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2048, 'b') + "\r\n\r\n");
  std::string out = conn.ReadToEnd();
  EXPECT_THAT(out, StartsWith("HTTP/1.1 431 "));
  EXPECT_THAT(out, HasSubstr("Connection: close\r\n"));
}

TEST_F(ServerTest, MalformedRequestLineGets400AndClose) {
  std::atomic<int> calls{0};
  StartServer([&](const Request&) {
    ++calls;
    return Response();
  });
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  conn.Write("THIS IS NOT HTTP\r\n\r\n");
  std::string out = conn.ReadToEnd();  // returns at EOF: the server closed
  EXPECT_THAT(out, StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_THAT(out, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(out, HasSubstr("SerializationException"));
  EXPECT_EQ(calls.load(), 0);
}

TEST_F(ServerTest, HandlerExceptionGets500) {
  StartServer([](const Request&) -> Response { throw std::runtime_error("boom \"quoted\""); });
  Client client("127.0.0.1", port_);
  StatusOr<Response> resp = client.Send(Post("/"));
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 500);
  EXPECT_EQ(resp->body, R"({"__type":"InternalFailure","message":"boom \"quoted\""})");
  EXPECT_EQ(resp->GetHeader("Content-Type"), "application/x-amz-json-1.1");
  // The connection survives a handler failure.
  resp = client.Send(Post("/"));
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 500);
}

TEST_F(ServerTest, Http10ClosesByDefault) {
  StartServer(Echo);
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  conn.Write("GET /old HTTP/1.0\r\n\r\n");
  std::string out = conn.ReadToEnd();
  EXPECT_THAT(out, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(out, HasSubstr("Connection: close\r\n"));
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrderAndConnectionCloseHonored) {
  StartServer(Echo);
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  conn.Write(
      "POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst"
      "POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecond");
  std::string out = conn.ReadToEnd();
  size_t first = out.find("\r\n\r\nfirst");
  size_t second = out.find("\r\n\r\nsecond");
  ASSERT_NE(first, std::string::npos) << out;
  ASSERT_NE(second, std::string::npos) << out;
  EXPECT_LT(first, second);
  EXPECT_EQ(out.find("Connection: close"), out.rfind("Connection: close"));  // only on the last
  EXPECT_GT(out.find("Connection: close"), first);
}

TEST_F(ServerTest, ExpectContinueIsAnswered) {
  StartServer(Echo);
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  conn.Write("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\n");
  conn.Write("body");
  std::string out = conn.ReadToEnd();
  EXPECT_THAT(out, StartsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(out, ::testing::EndsWith("\r\n\r\nbody"));
}

TEST_F(ServerTest, StartFailsWhenPortInUse) {
  StartServer(Echo);
  ServerOptions options;
  options.port = port_;
  Server second(options, Echo);
  StatusOr<uint16_t> port = second.Start();
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(port.status().message(), "address 127.0.0.1:" + std::to_string(port_) + " is in use");
}

TEST_F(ServerTest, GracefulStopLetsInFlightRequestFinish) {
  std::latch entered(1);
  std::latch release(1);
  StartServer([&](const Request& req) {
    Response resp;
    if (req.Path() == "/slow") {
      entered.count_down();
      release.wait();
      resp.body = "slow done";
    }
    return resp;
  });

  Client idle("127.0.0.1", port_);
  ASSERT_TRUE(idle.Send(Post("/fast")).ok());  // leaves an idle kept-alive connection

  std::promise<StatusOr<Response>> slow_result;
  std::thread slow([&] {
    Client client("127.0.0.1", port_);
    slow_result.set_value(client.Send(Post("/slow")));
  });
  entered.wait();

  std::future<void> stopped = std::async(std::launch::async, [&] { server_->Stop(); });
  // Stop closes the listener at once; new connections are refused from then on.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (RawConnection(port_).connected()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the listener was not closed";
    std::this_thread::yield();
  }
  // ...but Stop waits for the request in the handler.
  EXPECT_EQ(stopped.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);

  release.count_down();
  StatusOr<Response> resp = slow_result.get_future().get();
  slow.join();
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, "slow done");
  EXPECT_EQ(resp->GetHeader("Connection"), "close");
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(10)), std::future_status::ready);

  // The idle connection was closed, and reconnecting fails.
  StatusOr<Response> after = idle.Send(Post("/fast"));
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
}

// A streamed body is written chunk by chunk while the producer runs, and the connection stays
// usable for the next request.
TEST_F(ServerTest, StreamedBodyIsChunkedAndKeepsTheConnection) {
  StartServer([](const Request& req) {
    Response resp;
    if (req.Path() != "/stream") {
      resp.body = "plain";
      return resp;
    }
    resp.SetHeader("Content-Type", "application/vnd.amazon.eventstream");
    resp.stream = [](BodyWriter& w) {
      EXPECT_TRUE(w.Write("a"));
      EXPECT_TRUE(w.Write(""));  // nothing: an empty chunk would end the body
      EXPECT_TRUE(w.Write(std::string(300, 'b')));
    };
    return resp;
  });
  RawConnection raw(port_);
  ASSERT_TRUE(raw.connected());
  raw.Write("POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            "POST /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  std::string got = raw.ReadToEnd();
  EXPECT_THAT(got, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(got, HasSubstr("Transfer-Encoding: chunked\r\n"));
  EXPECT_THAT(got, ::testing::Not(HasSubstr("Content-Length: 0\r\n\r\n1\r\n")));
  EXPECT_THAT(got, HasSubstr("\r\n\r\n1\r\na\r\n12c\r\n" + std::string(300, 'b') + "\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(got, ::testing::EndsWith("\r\n\r\nplain"));

  Client client("127.0.0.1", port_);  // Beast's parser reads the chunked body whole
  StatusOr<Response> resp = client.Send(Post("/stream"));
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->body, "a" + std::string(300, 'b'));
  EXPECT_EQ(resp->GetHeader("Content-Type"), "application/vnd.amazon.eventstream");
}

// Client::Stream hands each piece over as it arrives: the producer waits for the client to have
// seen its first write before making the second. Then the connection serves the next request; a
// non-2xx answer's body is read whole; and a reader that stops closes the connection, which the
// producer's next write notices.
TEST_F(ServerTest, ClientStreamReadsABodyAsItArrivesAndStopsWhenAsked) {
  std::latch seen_first(1);
  std::promise<bool> after_stop;
  StartServer([&](const Request& req) {
    Response resp;
    if (req.Path() == "/plain") {
      resp.status = 404;
      resp.body = "none here";
      return resp;
    }
    if (req.Path() == "/forever") {
      resp.stream = [&](BodyWriter& w) {
        bool ok = true;
        for (int i = 0; i < 1000 && ok; ++i) ok = w.Write(std::string(1024, 'x'));
        after_stop.set_value(ok);
      };
      return resp;
    }
    resp.stream = [&](BodyWriter& w) {
      EXPECT_TRUE(w.Write("first"));
      seen_first.wait();
      EXPECT_TRUE(w.Write("second"));
    };
    return resp;
  });
  Client client("127.0.0.1", port_);
  std::string got;
  StatusOr<Response> resp = client.Stream(Post("/stream"), [&](std::string_view piece) {
    EXPECT_FALSE(piece.empty());
    got += piece;
    if (got == "first") seen_first.count_down();
    return true;
  });
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, "");
  EXPECT_EQ(got, "firstsecond");
  StatusOr<Response> plain = client.Stream(Post("/plain"), [](std::string_view) {
    ADD_FAILURE() << "a 404's body is not streamed";
    return true;
  });
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->status, 404);
  EXPECT_EQ(plain->body, "none here");

  size_t pieces = 0;
  StatusOr<Response> stopped = client.Stream(Post("/forever"), [&](std::string_view) { return ++pieces < 2; });
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_EQ(pieces, 2u);
  EXPECT_FALSE(after_stop.get_future().get());  // the producer learned the reader left
}

// Streams run on threads of their own: more of them than there are handler workers still leave
// the handlers free.
TEST_F(ServerTest, StreamsDoNotHoldHandlerWorkers) {
  std::latch all_streaming(3);
  std::latch release(1);
  ServerOptions options;
  options.worker_threads = 1;
  StartServer(
      [&](const Request& req) {
        Response resp;
        if (req.Path() == "/stream") {
          resp.stream = [&](BodyWriter& w) {
            w.Write("x");
            all_streaming.count_down();
            release.wait();
          };
        }
        return resp;
      },
      options);
  std::vector<std::unique_ptr<RawConnection>> streams;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(std::make_unique<RawConnection>(port_));
    streams.back()->Write("POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  }
  all_streaming.wait();
  Client client("127.0.0.1", port_);
  StatusOr<Response> resp = client.Send(Post("/other"));
  release.count_down();
  server_->Stop();  // the producers use this test's latches: they end before the latches do
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 200);
}

// Stop ends a stream that would last forever: its next Write is refused, and the body it was
// writing is ended.
TEST_F(ServerTest, StopEndsAStreamAtItsNextWrite) {
  std::latch streaming(1);
  std::atomic<bool> refused{false};
  StartServer([&](const Request&) {
    Response resp;
    resp.stream = [&](BodyWriter& w) {
      w.Write("first");
      streaming.count_down();
      while (w.Write("tick")) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      refused = true;
      EXPECT_FALSE(w.Write("after"));
    };
    return resp;
  });
  RawConnection raw(port_);
  raw.Write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  streaming.wait();
  server_->Stop();
  EXPECT_TRUE(refused);
  std::string got = raw.ReadToEnd();
  EXPECT_THAT(got, HasSubstr("5\r\nfirst\r\n"));
  EXPECT_THAT(got, ::testing::EndsWith("0\r\n\r\n"));
  EXPECT_THAT(got, ::testing::Not(HasSubstr("after")));
}

// A peer that goes away is noticed by the producer's writes.
TEST_F(ServerTest, AStreamLearnsItsPeerLeft) {
  std::latch streaming(1);
  std::promise<void> ended;
  StartServer([&](const Request&) {
    Response resp;
    resp.stream = [&](BodyWriter& w) {
      w.Write("first");
      streaming.count_down();
      while (w.Write(std::string(4096, 'x'))) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ended.set_value();
    };
    return resp;
  });
  {
    RawConnection raw(port_);
    raw.Write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    streaming.wait();
  }
  EXPECT_EQ(ended.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  server_->Stop();
}

TEST_F(ServerTest, StopIsIdempotent) {
  Server never_started(ServerOptions(), Echo);
  never_started.Stop();
  never_started.Stop();

  StartServer(Echo);
  Client client("127.0.0.1", port_);
  ASSERT_TRUE(client.Send(Post("/")).ok());
  server_->Stop();
  server_->Stop();
  EXPECT_FALSE(server_->Start().ok());
  server_.reset();  // the destructor stops again
}

TEST_F(ServerTest, ConcurrentClients) {
  ServerOptions options;
  options.io_threads = 2;
  options.worker_threads = 4;
  StartServer(Echo, options);
  constexpr int kThreads = 8;
  constexpr int kRequests = 200;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Client client("127.0.0.1", port_);
      for (int i = 0; i < kRequests; ++i) {
        std::string body = std::to_string(t) + "-" + std::to_string(i);
        StatusOr<Response> resp = client.Send(Post("/", body));
        if (resp.ok() && resp->status == 200 && resp->body == body) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kRequests);
}

// Each connection lives on one I/O thread: the requests run inline keep to the thread of their
// connection (no hop between threads mid-connection), and connections are dealt to every thread.
TEST_F(ServerTest, AConnectionKeepsToOneIoThreadAndConnectionsAreSpreadOverThem) {
  ServerOptions options;
  options.io_threads = 2;
  options.run_inline = [](const Request&) { return true; };
  std::mutex mu;
  std::map<std::string, std::set<std::thread::id>> threads_of;  // by the connection's peer address
  StartServer(
      [&](const Request& req) {
        std::lock_guard lock(mu);
        threads_of[req.remote_address].insert(std::this_thread::get_id());
        return Response();
      },
      options);
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < 4; ++c) clients.push_back(std::make_unique<Client>("127.0.0.1", port_));
  for (int round = 0; round < 20; ++round) {
    for (auto& client : clients) ASSERT_TRUE(client->Send(Post("/")).ok());
  }
  std::lock_guard lock(mu);
  ASSERT_EQ(threads_of.size(), 4u);
  std::set<std::thread::id> all;
  for (const auto& [peer, ids] : threads_of) {
    EXPECT_EQ(ids.size(), 1u) << peer;
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), 2u);
}

// A kept-alive connection's requests each see exactly their own headers, however many the one
// before had (the server reuses the previous request's header strings).
TEST_F(ServerTest, EachRequestOnAConnectionSeesOnlyItsOwnHeaders) {
  std::mutex mu;
  using Fields = std::vector<std::pair<std::string, std::string>>;
  std::vector<Fields> seen;
  StartServer([&](const Request& req) {
    std::lock_guard lock(mu);
    Fields mine;
    for (const Header& h : req.headers)
      if (h.name.starts_with("X-")) mine.emplace_back(h.name, h.value);
    seen.push_back(std::move(mine));
    return Response();
  });
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  conn.Write(
      "POST / HTTP/1.1\r\nHost: a\r\nX-One: 1\r\nX-Two: a longer value than the next one has\r\n"
      "Content-Length: 0\r\n\r\n"
      "POST / HTTP/1.1\r\nHost: a\r\nX-Two: 2\r\nContent-Length: 0\r\n\r\n"
      "POST / HTTP/1.1\r\nHost: a\r\nX-Three: 3\r\nX-Four: 4\r\nX-Five: 5\r\nConnection: close\r\n"
      "Content-Length: 0\r\n\r\n");
  conn.ReadToEnd();
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], (Fields{{"X-One", "1"}, {"X-Two", "a longer value than the next one has"}}));
  EXPECT_EQ(seen[1], (Fields{{"X-Two", "2"}}));
  EXPECT_EQ(seen[2], (Fields{{"X-Three", "3"}, {"X-Four", "4"}, {"X-Five", "5"}}));
}

// A peer over its connection cap is closed at once; its other connections, and other peers, are
// served, and a closed connection frees its place. Endpoints served to tasks rely on it
// (agent/metadata: one task must not hold every descriptor of the node's process).
TEST_F(ServerTest, APeerOverItsConnectionCapIsClosedAtOnceAndOthersAreServed) {
  ServerOptions options;
  options.max_connections_per_peer = 3;
  StartServer(Echo, options);
  const std::string request = "GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawConnection>(port_, "127.0.0.1"));
    ASSERT_TRUE(held.back()->connected());
  }
  // The kernel completes the handshake before the server accepts: the fourth connects, then is
  // closed without an answer.
  RawConnection over(port_, "127.0.0.1");
  ASSERT_TRUE(over.connected());
  over.Write(request);
  EXPECT_EQ(over.ReadToEnd(), "");
  // Another address is another peer.
  RawConnection other(port_, "127.0.0.2");
  ASSERT_TRUE(other.connected());
  other.Write(request);
  EXPECT_THAT(other.ReadToEnd(), ::testing::StartsWith("HTTP/1.1 200"));
  // The held connections are served; once one is answered and closed, its place is free again.
  held[0]->Write(request);
  EXPECT_THAT(held[0]->ReadToEnd(), ::testing::StartsWith("HTTP/1.1 200"));
  held[0].reset();
  std::string answer;
  for (int attempt = 0; attempt < 100 && answer.empty(); ++attempt) {
    RawConnection again(port_, "127.0.0.1");
    again.Write(request);
    answer = again.ReadToEnd();
    if (answer.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(answer, ::testing::StartsWith("HTTP/1.1 200"));
}

// A listening POSIX socket that answers each connection's first request and then closes it, as
// a server whose keep-alive timeout just fired would.
class OneShotServer {
 public:
  OneShotServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 8);
  }
  ~OneShotServer() { ::close(fd_); }

  uint16_t port() const { return port_; }

  // Serves `n` connections, one request each.
  void Serve(int n) {
    for (int i = 0; i < n; ++i) {
      int conn = ::accept(fd_, nullptr, nullptr);
      ASSERT_GE(conn, 0);
      std::string in;
      char buf[1024];
      while (in.find("\r\n\r\n") == std::string::npos) {
        ssize_t r = ::recv(conn, buf, sizeof(buf), 0);
        if (r <= 0) break;
        in.append(buf, static_cast<size_t>(r));
      }
      std::string out = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + std::to_string(i);
      ::send(conn, out.data(), out.size(), MSG_NOSIGNAL);
      ::close(conn);
    }
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

TEST(ClientTest, ReconnectsWhenKeptAliveConnectionWasClosed) {
  OneShotServer server;
  std::thread serving([&] { server.Serve(2); });
  Client client("127.0.0.1", server.port());
  StatusOr<Response> first = client.Send(Post("/"));
  StatusOr<Response> second = client.Send(Post("/"));
  serving.join();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(first->body, "0");
  EXPECT_EQ(second->body, "1");
}

TEST(ClientTest, ConnectionRefusedIsUnavailable) {
  // A bound socket that does not listen: connecting to its port is refused.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  Client client("127.0.0.1", ntohs(addr.sin_port));
  StatusOr<Response> resp = client.Send(Post("/"));
  ::close(fd);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(resp.status().message(), HasSubstr("connecting to 127.0.0.1:"));
}

TEST(ClientTest, ReadTimeoutIsUnavailable) {
  std::latch release(1);
  Server server(ServerOptions(), [&](const Request&) {
    release.wait();
    return Response();
  });
  StatusOr<uint16_t> port = server.Start();
  ASSERT_TRUE(port.ok());
  Client client("127.0.0.1", *port, std::chrono::milliseconds(100));
  StatusOr<Response> resp = client.Send(Post("/"));
  release.count_down();
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(resp.status().message(), HasSubstr("timed out"));
}

}  // namespace
}  // namespace paddock::http
