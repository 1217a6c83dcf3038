// paddock_load: a closed-loop load driver for any ECS-compatible endpoint (Paddock, moto, ...).
//
// Holds --connections keep-alive connections, multiplexed on --io-threads epoll threads (or, with
// --io-threads 0, one blocking thread and http::Client each). Every connection sends one request,
// waits for the answer, and sends the next, so the offered load is whatever the server sustains
// at that concurrency. Every request is signed afresh with SigV4 at the
// moment it is sent: nothing is cached, so a server that checks signatures, dates and payload
// hashes sees exactly what the AWS SDKs would send. (Signing costs a few microseconds of CPU per
// request; see docs/benchmarks.md.)
//
//   paddock_load --endpoint http://127.0.0.1:4566 --access-key AKID --secret-key SECRET
//       --action describe-task-definition --family web --connections 16 --duration 10s --json
//
// Latency is measured around Client::Send (write, server time, read), not around signing.
// Errors are counted by AWS error type (the response's "__type"), by HTTP status when there is
// no type, and by transport failure ("transport:UNAVAILABLE").
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "aws/sigv4.h"
#include "epoll_conns.h"
#include "common/clock.h"
#include "common/status.h"
#include "http/client.h"
#include "http/message.h"

namespace paddock::bench {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::nanoseconds;

enum class Action {
  kDescribeTaskDefinition,
  kRegisterTaskDefinition,
  kListTaskDefinitions,
  kCreateCluster,
  kDescribeClusters,
  kGetParameter,           // SSM: GetParameter of "/<family>/value" (the bench creates it)
  kGetParameterDecrypted,  // the same, WithDecryption (a SecureString: one AES-GCM open per call)
  kDescribeTasks,          // --tasks of --cluster (they must exist: bench/ceiling.sh makes them)
  kListTasks,              // every task of --cluster
  kDescribeServices,       // --services of --cluster (they must exist)
};

struct ActionInfo {
  Action action;
  std::string_view flag;    // --action value
  std::string_view target;  // X-Amz-Target operation
  std::string_view prefix = "AmazonEC2ContainerServiceV20141113";  // X-Amz-Target's service prefix
  std::string_view service = "ecs";                                // SigV4 signing name
};

constexpr ActionInfo kActions[] = {
    {Action::kDescribeTaskDefinition, "describe-task-definition", "DescribeTaskDefinition"},
    {Action::kRegisterTaskDefinition, "register-task-definition", "RegisterTaskDefinition"},
    {Action::kListTaskDefinitions, "list-task-definitions", "ListTaskDefinitions"},
    {Action::kCreateCluster, "create-cluster", "CreateCluster"},
    {Action::kDescribeClusters, "describe-clusters", "DescribeClusters"},
    {Action::kGetParameter, "get-parameter", "GetParameter", "AmazonSSM", "ssm"},
    {Action::kGetParameterDecrypted, "get-parameter-decrypted", "GetParameter", "AmazonSSM", "ssm"},
    {Action::kDescribeTasks, "describe-tasks", "DescribeTasks"},
    {Action::kListTasks, "list-tasks", "ListTasks"},
    {Action::kDescribeServices, "describe-services", "DescribeServices"},
};

const ActionInfo& Info(Action a) {
  for (const ActionInfo& i : kActions)
    if (i.action == a) return i;
  std::abort();  // every enumerator is in kActions
}

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 4566;
  std::string access_key = "test";
  std::string secret_key = "test";
  std::string region = "us-east-1";
  int connections = 16;
  int io_threads = 1;  // 0: one blocking thread per connection
  std::optional<std::chrono::milliseconds> duration;  // one of duration / requests
  std::optional<uint64_t> requests;
  Action action = Action::kDescribeTaskDefinition;
  std::string family = "paddock-bench";
  std::string cluster;                // describe-tasks, list-tasks, describe-services; default --family
  std::vector<std::string> tasks;     // describe-tasks: task ARNs or ids
  std::vector<std::string> services;  // describe-services: names or ARNs
  uint64_t warmup = 0;
  uint64_t prefill = 0;
  bool json = false;
  bool print_body = false;  // print the action's request body and exit (bench/ceiling.sh checks it)
};

[[noreturn]] void Usage(std::string_view error) {
  if (!error.empty()) fmt::print(stderr, "paddock_load: {}\n\n", error);
  fmt::print(stderr,
             "usage: paddock_load --endpoint http://HOST:PORT [--access-key K --secret-key S] [--region us-east-1]\n"
             "                    [--connections 16] [--io-threads 1] [--duration 10s | --requests N]\n"
             "                    [--action describe-task-definition|register-task-definition|list-task-definitions|\n"
             "                              create-cluster|describe-clusters|get-parameter|\n"
             "                              get-parameter-decrypted|describe-tasks|list-tasks|describe-services]\n"
             "                    [--family NAME] [--cluster NAME] [--tasks ARN,ARN,...] [--services NAME,NAME,...]\n"
             "                    [--warmup N] [--prefill N] [--json] [--print-body]\n"
             "\n"
             "  --warmup N   send N untimed requests of the action first (describe-*: creates the family or\n"
             "               cluster first if it does not exist)\n"
             "               (get-parameter*: SSM's GetParameter of /<family>/value, which must exist)\n"
             "  --prefill N  register N revisions of --family before measuring, on all connections\n"
             "  --cluster NAME  the cluster of describe-tasks, list-tasks and describe-services (default --family);\n"
             "               --tasks and --services name what they describe, which must exist. Their request\n"
             "               bodies are compact JSON, cluster first (as json.dumps with separators=(',', ':'))\n"
             "  --json       print one machine-readable JSON line instead of the table\n"
             "  --print-body print the action's request body (the first one, for register-task-definition) and exit\n"
             "  --io-threads N  multiplex the connections on N epoll threads (default 1); 0 runs one\n"
             "               blocking thread per connection\n");
  std::exit(2);
}

// "a,b,c" -> {"a", "b", "c"}; empty items are dropped.
std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "10s", "500ms", "2m", or bare seconds.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view s) {
  uint64_t scale = 1000;
  if (s.ends_with("ms")) {
    scale = 1;
    s.remove_suffix(2);
  } else if (s.ends_with("s")) {
    s.remove_suffix(1);
  } else if (s.ends_with("m")) {
    scale = 60'000;
    s.remove_suffix(1);
  }
  auto v = ParseU64(s);
  if (!v) return std::nullopt;
  return std::chrono::milliseconds(*v * scale);
}

Options ParseFlags(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--json") {
      o.json = true;
      continue;
    }
    if (flag == "--print-body") {
      o.print_body = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") Usage("");
    if (i + 1 >= argc) Usage(fmt::format("{} needs a value", flag));
    std::string_view value = argv[++i];
    auto number = [&]() -> uint64_t {
      auto v = ParseU64(value);
      if (!v) Usage(fmt::format("{} wants a number, not '{}'", flag, value));
      return *v;
    };
    if (flag == "--endpoint") {
      if (!value.starts_with("http://")) Usage("--endpoint must be http://HOST:PORT");
      value.remove_prefix(7);
      while (value.ends_with("/")) value.remove_suffix(1);
      size_t colon = value.rfind(':');
      if (colon == std::string_view::npos) Usage("--endpoint must name a port");
      auto port = ParseU64(value.substr(colon + 1));
      if (!port || *port == 0 || *port > 65535) Usage("--endpoint has a bad port");
      o.host = std::string(value.substr(0, colon));
      if (o.host.size() > 2 && o.host.front() == '[') o.host = o.host.substr(1, o.host.size() - 2);
      o.port = static_cast<uint16_t>(*port);
    } else if (flag == "--access-key") {
      o.access_key = value;
    } else if (flag == "--secret-key") {
      o.secret_key = value;
    } else if (flag == "--region") {
      o.region = value;
    } else if (flag == "--connections") {
      o.connections = static_cast<int>(number());
      if (o.connections < 1 || o.connections > 1024) Usage("--connections must be 1..1024");
    } else if (flag == "--io-threads") {
      o.io_threads = static_cast<int>(number());
      if (o.io_threads < 0 || o.io_threads > 64) Usage("--io-threads must be 0..64");
    } else if (flag == "--duration") {
      o.duration = ParseDuration(value);
      if (!o.duration || o.duration->count() == 0) Usage("--duration wants e.g. 10s, 500ms, 2m");
    } else if (flag == "--requests") {
      o.requests = number();
    } else if (flag == "--action") {
      bool found = false;
      for (const ActionInfo& a : kActions) {
        if (a.flag == value) {
          o.action = a.action;
          found = true;
        }
      }
      if (!found) Usage(fmt::format("unknown --action '{}'", value));
    } else if (flag == "--family") {
      o.family = value;
    } else if (flag == "--cluster") {
      o.cluster = value;
    } else if (flag == "--tasks") {
      o.tasks = SplitCommas(value);
    } else if (flag == "--services") {
      o.services = SplitCommas(value);
    } else if (flag == "--warmup") {
      o.warmup = number();
    } else if (flag == "--prefill") {
      o.prefill = number();
    } else {
      Usage(fmt::format("unknown flag {}", flag));
    }
  }
  if (o.duration && o.requests) Usage("give --duration or --requests, not both");
  if (!o.duration && !o.requests) o.duration = std::chrono::seconds(10);
  if (o.cluster.empty()) o.cluster = o.family;
  if (o.action == Action::kDescribeTasks && o.tasks.empty()) Usage("describe-tasks needs --tasks");
  if (o.action == Action::kDescribeServices && o.services.empty()) Usage("describe-services needs --services");
  return o;
}

// ~1 KB, two containers, environment, a port mapping and awslogs, like a small web service.
// `seq` goes into an environment variable so no two bodies are the same.
std::string RegisterBody(std::string_view family, uint64_t seq) {
  return fmt::format(
      R"({{"family":"{0}","networkMode":"bridge","requiresCompatibilities":["EC2"],"cpu":"512","memory":"1024",)"
      R"("containerDefinitions":[)"
      R"({{"name":"web","image":"public.ecr.aws/nginx/nginx:1.25","cpu":384,"memory":768,"essential":true,)"
      R"("portMappings":[{{"containerPort":80,"hostPort":0,"protocol":"tcp"}}],)"
      R"("environment":[{{"name":"BENCH_SEQ","value":"{1}"}},{{"name":"APP_ENV","value":"production"}},)"
      R"({{"name":"LOG_LEVEL","value":"info"}},{{"name":"UPSTREAM_URL","value":"http://127.0.0.1:8080/api/v1"}}],)"
      R"("logConfiguration":{{"logDriver":"awslogs","options":{{"awslogs-group":"/ecs/{0}",)"
      R"("awslogs-region":"us-east-1","awslogs-stream-prefix":"web"}}}},)"
      R"("healthCheck":{{"command":["CMD-SHELL","curl -f http://localhost/ || exit 1"],"interval":30,"timeout":5,"retries":3}}}},)"
      R"({{"name":"sidecar","image":"public.ecr.aws/docker/library/busybox:1.36","cpu":128,"memory":256,"essential":false,)"
      R"("command":["sh","-c","while true; do date; sleep 60; done"],)"
      R"("environment":[{{"name":"BENCH_SEQ","value":"{1}"}},{{"name":"ROLE","value":"sidecar"}}],)"
      R"("logConfiguration":{{"logDriver":"awslogs","options":{{"awslogs-group":"/ecs/{0}",)"
      R"("awslogs-region":"us-east-1","awslogs-stream-prefix":"sidecar"}}}}}}]}})",
      family, seq);
}

// ["a","b"]. Task ARNs and service names need no escaping.
std::string JsonStrings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const std::string& item : items) {
    if (out.size() > 1) out += ',';
    out += fmt::format("\"{}\"", item);
  }
  return out + "]";
}

std::string Body(Action action, const Options& o, uint64_t seq) {
  const std::string& family = o.family;
  switch (action) {
    case Action::kDescribeTaskDefinition:
      return fmt::format(R"({{"taskDefinition":"{}"}})", family);
    case Action::kRegisterTaskDefinition:
      return RegisterBody(family, seq);
    case Action::kListTaskDefinitions:
      return fmt::format(R"({{"familyPrefix":"{}","sort":"DESC","maxResults":10}})", family);
    case Action::kCreateCluster:
      // A new cluster per request, so it measures a write rather than ECS's idempotent no-op.
      return fmt::format(R"({{"clusterName":"{}-{}"}})", family, seq);
    case Action::kDescribeClusters:
      return fmt::format(R"({{"clusters":["{}"]}})", family);
    case Action::kGetParameter:
      return fmt::format(R"({{"Name":"/{}/value"}})", family);
    case Action::kGetParameterDecrypted:
      return fmt::format(R"({{"Name":"/{}/value","WithDecryption":true}})", family);
    case Action::kDescribeTasks:
      return fmt::format(R"({{"cluster":"{}","tasks":{}}})", o.cluster, JsonStrings(o.tasks));
    case Action::kListTasks:
      return fmt::format(R"({{"cluster":"{}"}})", o.cluster);
    case Action::kDescribeServices:
      return fmt::format(R"({{"cluster":"{}","services":{}}})", o.cluster, JsonStrings(o.services));
  }
  return {};
}

// The value of a top-level-ish "__type" in a JSON error body, trimmed of any "prefix#" as
// awsJson1.1 allows. Good enough to bucket errors; the body is not otherwise parsed.
std::string ErrorType(const http::Response& resp) {
  size_t at = resp.body.find("\"__type\"");
  if (at != std::string::npos) {
    size_t open = resp.body.find('"', resp.body.find(':', at) + 1);
    size_t close = open == std::string::npos ? open : resp.body.find('"', open + 1);
    if (close != std::string::npos) {
      std::string type = resp.body.substr(open + 1, close - open - 1);
      if (size_t hash = type.rfind('#'); hash != std::string::npos) type = type.substr(hash + 1);
      return type;
    }
  }
  return fmt::format("HTTP {}", resp.status);
}

class Runner {
 public:
  explicit Runner(const Options& options) : o_(options) {
    host_header_ = o_.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", o_.host, o_.port)
                                                            : fmt::format("{}:{}", o_.host, o_.port);
  }

  // One signed request. On failure returns the error bucket; on success, nullopt.
  std::optional<std::string> Call(http::Client& client, Action action, uint64_t seq, std::string* body_out = nullptr) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", host_header_},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", fmt::format("{}.{}", Info(action).prefix, Info(action).target)}};
    req.body = Body(action, o_, seq);
    aws::SignRequest(req, {o_.access_key, o_.secret_key}, o_.region, Info(action).service, SystemClock::Get().Now());
    StatusOr<http::Response> resp = client.Send(req);
    if (!resp.ok()) return fmt::format("transport:{}", StatusCodeName(resp.status().code()));
    if (body_out) *body_out = resp->body;
    if (resp->status != 200) return ErrorType(*resp);
    return std::nullopt;
  }

  struct Result {
    uint64_t ok = 0;
    std::map<std::string, uint64_t> errors;
    std::vector<uint32_t> latencies_us;  // every request, successful or not
    double seconds = 0;

    void Merge(const Result& other) {
      ok += other.ok;
      for (const auto& [k, v] : other.errors) errors[k] += v;
      latencies_us.insert(latencies_us.end(), other.latencies_us.begin(), other.latencies_us.end());
    }
  };

  // Prints "<label>: N done, R/s now" to stderr about every 2 s while it lives (when enabled).
  class Progress {
   public:
    Progress(bool enabled, const char* label, std::optional<uint64_t> count, const std::atomic<uint64_t>& done,
             Clock::time_point start) {
      if (!enabled) return;
      thread_ = std::thread([=, this, &done] {
        uint64_t last = 0;
        auto last_t = Clock::now();
        std::unique_lock lock(mu_);
        while (!cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stop_; })) {
          uint64_t d = done.load();
          auto now = Clock::now();
          double dt = std::chrono::duration<double>(now - last_t).count();
          fmt::print(stderr, "{}: {}{} done, {:.0f}/s now, {:.0f} s elapsed\n", label, d,
                     count ? fmt::format("/{}", *count) : std::string(), (d - last) / dt,
                     std::chrono::duration<double>(now - start).count());
          last = d;
          last_t = now;
        }
      });
    }
    ~Progress() {
      {
        std::lock_guard lock(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      if (thread_.joinable()) thread_.join();
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
  };

  // Runs `action` on every connection until `count` requests were sent or `deadline` passed.
  // Calls `progress(done)` about every 2 s from the calling thread when given.
  // The request's bytes on the wire, signed now.
  std::string Serialize(Action action, uint64_t seq) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", host_header_},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", fmt::format("{}.{}", Info(action).prefix, Info(action).target)}};
    req.body = Body(action, o_, seq);
    aws::SignRequest(req, {o_.access_key, o_.secret_key}, o_.region, Info(action).service, SystemClock::Get().Now());
    std::string out = "POST / HTTP/1.1\r\n";
    for (const auto& h : req.headers) out += h.name + ": " + h.value + "\r\n";
    out += fmt::format("Content-Length: {}\r\n\r\n", req.body.size());
    out += req.body;
    return out;
  }

  static std::string ErrorTypeOf(int status, std::string_view body) {
    if (status == 0) return "transport:UNAVAILABLE";
    http::Response r;
    r.status = status;
    r.body = std::string(body);
    return ErrorType(r);
  }

  Result Drive(Action action, std::optional<uint64_t> count, std::optional<Clock::time_point> deadline,
               bool record_latency, bool print_progress, const char* label) {
    if (o_.io_threads > 0) return DriveEpoll(action, count, deadline, record_latency, print_progress, label);
    std::atomic<uint64_t> next{0};
    std::atomic<uint64_t> done{0};
    std::mutex mu;
    Result total;
    auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < o_.connections; ++t) {
      threads.emplace_back([&, t] {
        http::Client& client = *clients_[t];
        Result mine;
        if (record_latency) mine.latencies_us.reserve(1 << 16);
        for (;;) {
          uint64_t seq = next.fetch_add(1, std::memory_order_relaxed);
          if (count && seq >= *count) break;
          if (deadline && Clock::now() >= *deadline) break;
          auto t0 = Clock::now();
          std::optional<std::string> err = Call(client, action, seq_base_ + seq);
          auto us = duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
          if (record_latency) mine.latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
          if (err) {
            ++mine.errors[*err];
          } else {
            ++mine.ok;
          }
          done.fetch_add(1, std::memory_order_relaxed);
        }
        std::lock_guard lock(mu);
        total.Merge(mine);
      });
    }
    {
      Progress progress(print_progress, label, count, done, start);
      for (auto& th : threads) th.join();
      total.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    seq_base_ += next.load();
    return total;
  }

  // Drive, with the connections multiplexed on --io-threads epoll threads.
  Result DriveEpoll(Action action, std::optional<uint64_t> count, std::optional<Clock::time_point> deadline,
                    bool record_latency, bool print_progress, const char* label) {
    std::atomic<uint64_t> next{0};
    std::atomic<uint64_t> done{0};
    std::mutex mu;
    Result total;
    std::optional<std::string> failure;
    auto start = Clock::now();
    std::vector<std::thread> threads;
    const int n_threads = std::min(o_.io_threads, o_.connections);
    for (int t = 0; t < n_threads; ++t) {
      int share = o_.connections / n_threads + (t < o_.connections % n_threads ? 1 : 0);
      threads.emplace_back([&, share] {
        Result mine;
        if (record_latency) mine.latencies_us.reserve(1 << 18);
        EpollCallbacks cb;
        cb.next_request = [&]() -> std::optional<std::string> {
          uint64_t seq = next.fetch_add(1, std::memory_order_relaxed);
          if (count && seq >= *count) return std::nullopt;
          if (deadline && Clock::now() >= *deadline) return std::nullopt;
          return Serialize(action, seq_base_ + seq);
        };
        cb.on_response = [&](int status, std::string_view body, std::chrono::nanoseconds latency) {
          auto us = duration_cast<std::chrono::microseconds>(latency).count();
          if (record_latency) mine.latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
          if (status == 200) {
            ++mine.ok;
          } else {
            ++mine.errors[ErrorTypeOf(status, body)];
          }
          done.fetch_add(1, std::memory_order_relaxed);
        };
        std::optional<std::string> err = RunEpollLoop({o_.host, o_.port, share}, cb);
        std::lock_guard lock(mu);
        if (err) failure = err;
        total.Merge(mine);
      });
    }
    {
      Progress progress(print_progress, label, count, done, start);
      for (auto& th : threads) th.join();
      total.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    if (failure) fmt::print(stderr, "paddock_load: {}\n", *failure);
    seq_base_ += next.load();
    return total;
  }

  int Run() {
    for (int t = 0; t < o_.connections; ++t) clients_.push_back(std::make_unique<http::Client>(o_.host, o_.port));

    double prefill_seconds = 0;
    uint64_t prefill_errors = 0;
    if (o_.prefill > 0) {
      Result r = Drive(Action::kRegisterTaskDefinition, o_.prefill, std::nullopt, false, true, "prefill");
      prefill_seconds = r.seconds;
      for (auto& [k, v] : r.errors) prefill_errors += v;
      fmt::print(stderr, "prefill: registered {} revisions of {} in {:.1f} s ({:.0f}/s), {} errors\n", r.ok, o_.family,
                 r.seconds, r.ok / r.seconds, prefill_errors);
      for (auto& [k, v] : r.errors) fmt::print(stderr, "prefill:   {} x {}\n", v, k);
    }
    if (!EnsureTarget()) return 1;
    if (o_.warmup > 0) Drive(o_.action, o_.warmup, std::nullopt, false, false, "warmup");

    std::optional<Clock::time_point> deadline;
    if (o_.duration) deadline = Clock::now() + *o_.duration;
    Result r = Drive(o_.action, o_.requests, deadline, true, !o_.json && o_.duration && *o_.duration > std::chrono::seconds(5), "run");
    Report(r, prefill_seconds, prefill_errors);
    return r.ok > 0 ? 0 : 1;
  }

 private:
  // Describe actions need something to describe: create it when it is missing.
  bool EnsureTarget() {
    http::Client& client = *clients_[0];
    std::string body;
    if (o_.action == Action::kDescribeTaskDefinition) {
      auto err = Call(client, Action::kDescribeTaskDefinition, 0, &body);
      if (!err) return true;
      if (err->starts_with("transport:")) {
        fmt::print(stderr, "paddock_load: cannot reach {}: {}\n", host_header_, *err);
        return false;
      }
      err = Call(client, Action::kRegisterTaskDefinition, seq_base_++, &body);
      if (err) {
        fmt::print(stderr, "paddock_load: registering {} failed: {}: {}\n", o_.family, *err, body);
        return false;
      }
    } else if (o_.action == Action::kDescribeClusters) {
      auto err = Call(client, Action::kDescribeClusters, 0, &body);
      if (!err && body.find("\"clusterName\"") != std::string::npos) return true;
      // CreateCluster of an existing name is a no-op, so this never needs the family suffix.
      http::Request req;
      req.method = "POST";
      req.target = "/";
      req.headers = {{"Host", host_header_},
                     {"Content-Type", "application/x-amz-json-1.1"},
                     {"X-Amz-Target", "AmazonEC2ContainerServiceV20141113.CreateCluster"}};
      req.body = fmt::format(R"({{"clusterName":"{}"}})", o_.family);
      aws::SignRequest(req, {o_.access_key, o_.secret_key}, o_.region, "ecs", SystemClock::Get().Now());
      auto resp = client.Send(req);
      if (!resp.ok() || resp->status != 200) {
        fmt::print(stderr, "paddock_load: creating cluster {} failed: {}\n", o_.family,
                   resp.ok() ? resp->body : resp.status().ToString());
        return false;
      }
    }
    return true;
  }

  void Report(Result& r, double prefill_seconds, uint64_t prefill_errors) {
    std::sort(r.latencies_us.begin(), r.latencies_us.end());
    auto pct = [&](double p) -> double {
      if (r.latencies_us.empty()) return 0;
      size_t rank = static_cast<size_t>(p / 100.0 * static_cast<double>(r.latencies_us.size()));
      return r.latencies_us[std::min(rank, r.latencies_us.size() - 1)] / 1000.0;
    };
    uint64_t errors = 0;
    for (auto& [k, v] : r.errors) errors += v;
    uint64_t sent = r.ok + errors;
    double rps = r.seconds > 0 ? r.ok / r.seconds : 0;
    double max_ms = r.latencies_us.empty() ? 0 : r.latencies_us.back() / 1000.0;
    const std::string_view name = Info(o_.action).target;
    if (o_.json) {
      std::string errs = "{";
      for (auto& [k, v] : r.errors) {
        if (errs.size() > 1) errs += ',';
        errs += fmt::format("\"{}\":{}", k, v);
      }
      errs += '}';
      fmt::print(
          "{{\"action\":\"{}\",\"endpoint\":\"{}\",\"connections\":{},\"family\":\"{}\",\"requests\":{},\"ok\":{},"
          "\"errors\":{},\"errorsByType\":{},\"seconds\":{:.3f},\"rps\":{:.1f},\"p50_ms\":{:.3f},\"p90_ms\":{:.3f},"
          "\"p99_ms\":{:.3f},\"max_ms\":{:.3f},\"prefill\":{},\"prefill_seconds\":{:.1f},\"prefill_errors\":{}}}\n",
          name, host_header_, o_.connections, o_.family, sent, r.ok, errors, errs, r.seconds, rps, pct(50), pct(90),
          pct(99), max_ms, o_.prefill, prefill_seconds, prefill_errors);
    } else {
      fmt::print("{:<24} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}\n", "action", "requests", "req/s", "p50 ms",
                 "p90 ms", "p99 ms", "max ms", "errors");
      fmt::print("{:<24} {:>9} {:>10.0f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>8}\n", name, sent, rps, pct(50), pct(90),
                 pct(99), max_ms, errors);
      for (auto& [k, v] : r.errors) fmt::print("  error {} x {}\n", v, k);
      fmt::print("({} connections to {}, {:.2f} s)\n", o_.connections, host_header_, r.seconds);
    }
  }

  const Options& o_;
  std::string host_header_;
  std::vector<std::unique_ptr<http::Client>> clients_;
  // Sequence numbers continue across prefill, warmup and the run so register bodies never repeat
  // within one invocation; the wall-clock start keeps separate invocations apart too.
  uint64_t seq_base_ = static_cast<uint64_t>(EpochMillis(SystemClock::Get().Now())) * 1000;
};

}  // namespace
}  // namespace paddock::bench

int main(int argc, char** argv) {
  paddock::bench::Options options = paddock::bench::ParseFlags(argc, argv);
  if (options.print_body) {
    fmt::print("{}", paddock::bench::Body(options.action, options, 0));
    return 0;
  }
  paddock::bench::Runner runner(options);
  return runner.Run();
}
