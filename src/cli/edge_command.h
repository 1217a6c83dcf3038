// `paddock edge`: the edge (edge/edge.h) in a process of its own — any number of replicas, each
// reading the ECS API of a Paddock (or of AWS) with its own credentials, as Traefik's ECS provider
// does, routing its entry points, and holding the tasks it routes to for drain-before-stop under
// its own --edge-id through the control plane's holds service (edge/remote_holds.h). And the
// in-process edge that `paddock up` runs on the account it bootstrapped, change-driven and holding
// its tasks for drain-before-stop.
//
//   paddock edge --endpoint http://127.0.0.1:4566 --entrypoint web=:8000 [--entrypoint websecure=:8443]
//                [--api 127.0.0.1:8081] [--cluster default]... [--auto-discover-clusters]
//                [--exposed-by-default=false] [--constraints 'Label(`team`,`a`)'] [--healthy-tasks-only]
//                [--default-rule 'Host(`{{ normalize .Name }}.localhost`)'] [--refresh-seconds 15]
//                [--providers.file.filename dynamic.yml | --providers.file.directory DIR]
//                [--providers.http.endpoint http[s]://HOST[:PORT]/PATH] [--providers.http.pollinterval 5s]
//                [--providers.http.polltimeout 5s] [--providers.http.headers.NAME=VALUE]...
//                [--providers.http.tls.ca FILE] [--providers.http.tls.cert FILE --providers.http.tls.key FILE]
//                [--providers.http.tls.insecureskipverify]
//                [--entrypoints.web.http.sanitizepath=false]
//                [--entrypoints.web.http.redirections.entrypoint.to=websecure
//                 [--entrypoints.web.http.redirections.entrypoint.scheme=https]
//                 [--entrypoints.web.http.redirections.entrypoint.permanent=true]]
//                [--edge-id edge-<host>-<pid>] [--credentials FILE] [--profile paddock] [--region us-east-1]
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "aws/sigv4.h"
#include "common/ids.h"
#include "common/status.h"
#include "edge/edge.h"

namespace paddock::ecs::drain { class DrainHolds; }

namespace paddock::cli {

// The http provider's flags, as `paddock edge` (Traefik's --providers.http.*) and `paddock up`
// (--edge-http-*) take them. Apply checks them and sets `options`' http provider; InvalidArgument
// naming the flag (`names`: the command's own flag names) otherwise, `options` then unchanged.
struct HttpProviderFlags {
  std::string endpoint;               // none when empty
  std::string poll_interval = "5s";   // a Go duration, > 0
  std::string poll_timeout = "5s";    // a Go duration, > 0
  std::map<std::string, std::string> headers;
  // Traefik's ClientTLS: CA, client certificate and key (files or PEM text), or no verification.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  bool tls_insecure_skip_verify = false;
  // Traefik's maxResponseBodySize: bytes, or -1 (its default: no limit); Paddock bounds the body
  // at edge::kMaxHttpProviderBody either way.
  std::string max_response_body_size = "-1";

  struct Names {
    std::string_view poll_interval, poll_timeout, max_response_body_size = "--providers.http.maxresponsebodysize";
  };
  Status Apply(edge::EdgeOptions& options, Names names) const;
};

// `paddock up`'s names for them.
inline constexpr HttpProviderFlags::Names kUpHttpFlagNames{"--edge-http-poll-interval", "--edge-http-poll-timeout",
                                                           "--edge-http-max-response-body-size"};

struct EdgeCommand {
  CLI::App* cmd = nullptr;
  std::string endpoint = "http://127.0.0.1:4566";
  std::vector<std::string> entry_points;  // NAME=[HOST]:PORT; default web=127.0.0.1:8000
  std::string api = "127.0.0.1:8081";
  bool no_api = false;
  std::vector<std::string> clusters;  // default: default
  bool auto_discover_clusters = false;
  bool exposed_by_default = true;
  std::string constraints;
  std::string default_rule = "Host(`{{ normalize .Name }}`)";
  bool healthy_tasks_only = false;
  int refresh_seconds = 15;
  int io_threads = 2;
  std::string edge_id;  // default: DefaultEdgeId(hostname, pid); checked by ecs::drain::CheckEdgeId
  std::string credentials_file;
  std::string profile = "paddock";
  std::string region = "us-east-1";
  std::string file_filename;   // Traefik's providers.file.filename
  std::string file_directory;  // providers.file.directory
  // providers.http.*; its headers (providers.http.headers.<name>) name the header in the flag,
  // and arrive as extras.
  HttpProviderFlags http;
  bool add_routers_labels = false;  // metrics.prometheus.addRoutersLabels
  bool add_entry_points_labels = true;  // metrics.prometheus.addEntryPointsLabels
  bool add_services_labels = true;      // metrics.prometheus.addServicesLabels
  std::string buckets;                  // metrics.prometheus.buckets; "" Traefik's 0.1,0.3,1.2,5
};

void AddEdgeCommand(CLI::App& app, EdgeCommand& c);
int RunEdgeCommand(const EdgeCommand& c);

// "web=:8000" / "web=127.0.0.1:8000" -> an entry point (an empty host is 0.0.0.0, as Traefik's
// ":8000"). InvalidArgument naming the flag otherwise.
StatusOr<edge::EntryPointOptions> ParseEntryPoint(std::string_view spec);
// "127.0.0.1:8081" / ":8081" -> (host, port).
StatusOr<edge::EntryPointOptions> ParseAddress(std::string_view name, std::string_view address);

// `paddock edge`'s edge id when --edge-id is not given: "edge-<host>-<pid>", with every character
// outside [A-Za-z0-9._-] as '-' and the host cut short to keep it within 64 characters (the pid
// kept whole), so that it always passes ecs::drain::CheckEdgeId.
std::string DefaultEdgeId(std::string_view host, int pid);

// The edge `paddock up` runs: reads the node's own API as the bootstrap account (so it sees that
// account's tasks, never another's), is woken by every task change, and holds its tasks in the
// node's drain holds (ecs/drain) in that account's scope, as the edge "up".
struct InProcessEdgeOptions {
  std::string web = "127.0.0.1:8000";
  std::string api = "127.0.0.1:8081";
  std::string api_host;  // the node's API endpoint
  uint16_t api_port = 0;
  aws::SigningCredentials credentials;
  Scope scope;  // the bootstrap account's, in the node's region
  std::chrono::milliseconds drain_timeout{30'000};
  std::string file;  // Traefik's file provider: a dynamic-configuration file or directory; none when empty
  HttpProviderFlags http;  // Traefik's http provider; none when its endpoint is empty
  // [HOST]:PORT of a `websecure` entry point (TLS, and plain HTTP, as every entry point); none when
  // empty. With `redirect_to_websecure`, `web` redirects plain HTTP to it (Traefik's
  // http.redirections.entryPoint to websecure, https, permanent).
  std::string websecure;
  bool redirect_to_websecure = false;
};
class InProcessEdge {
 public:
  // `holds` may be null: no drain protocol.
  static StatusOr<std::unique_ptr<InProcessEdge>> Start(const InProcessEdgeOptions& options,
                                                        ecs::drain::DrainHolds* holds);
  ~InProcessEdge();
  void Wake() { edge_->Wake(); }
  uint16_t web_port() const { return web_port_; }
  uint16_t api_port() const { return api_port_; }
  uint16_t websecure_port() const { return websecure_port_; }  // 0: none
  // GET `path` on this edge's API (Traefik's JSON, edge/api.h): the body of a 200, or why not.
  // For the console (console/console_service.h); thread-safe.
  StatusOr<std::string> ApiGet(std::string_view path) const;

 private:
  InProcessEdge() = default;
  std::unique_ptr<edge::EcsApiSource> source_;
  std::unique_ptr<edge::DrainHoldSink> holds_;
  std::unique_ptr<edge::Edge> edge_;
  uint16_t web_port_ = 0, api_port_ = 0, websecure_port_ = 0;
  std::string api_host_ = "127.0.0.1";  // where the API is reached from this process
};

}  // namespace paddock::cli
