// agent/metadata: ECS's task metadata endpoint (versions 4 and 3) for the node's tasks.
//
// Every container of a task gets ECS_CONTAINER_METADATA_URI_V4=http://169.254.170.2/v4/<id> (and
// ECS_CONTAINER_METADATA_URI=…/v3/<id>), where <id> is random and unguessable, one per container.
// GET on it answers, as AWS does:
//
//   ${URI}             the container's metadata          (RenderContainer)
//   ${URI}/task        the task's, with every container  (RenderTask)
//   ${URI}/taskWithTags the same plus the task's tags     (v4 only)
//   ${URI}/stats       the container's Docker-style stats (RenderStats over ReadCgroupSample)
//   ${URI}/task/stats  {DockerId: stats or null} for every container of the task
//
// The documents are rendered on each request from what the agent knows now: the Task JSON as
// DescribeTasks returns it plus per-container runtime facts (TaskFacts), through a provider the
// agent registers. Field names and shapes follow the ECS agent's TMDS responses
// (docs/contracts/task.md, row "Task metadata endpoint", lists what is left out and why).
//
//   MetadataService service(MetadataServiceOptions{.interface = "lo"});
//   RETURN_IF_ERROR(service.Start());             // the host: 169.254.170.2/32 on lo, listens on :80
//   RETURN_IF_ERROR(service.ServeNetwork(vpc.netns_name, vpc.netns_path));  // and in a VPC namespace
//   ContainerEndpoint ep = service.RegisterContainer(task_arn, "web", provider, task_ip, vpc.netns_name);
//   for (std::string& e : ep.Env()) spec.env.push_back(std::move(e));
//   ...
//   service.UnregisterTask(task_arn);             // when the task is torn down
//   service.ReleaseNetwork(vpc.netns_name);       // once per ServeNetwork
//
// Reachability. An awsvpc task's default route goes via its subnet's gateway, its VPC router
// namespace (agent/net), which has 169.254.170.2 on lo: the service listens there, on a socket
// made inside that namespace (ServeNetwork; one listener per VPC namespace, shared by every task
// of the VPC this service serves). Bridge- and host-mode tasks reach the host, which has the
// address on `interface`: the host listener (Start). Verified from inside a task namespace by
// metadata_netns_test.
//
// Authorization. A request names a container by its id; an unknown id is 404. A container is
// served only by the listener of the network it was registered with (its VPC namespace, or the
// host), and, when it was registered with its task's IP, only to requests from that address:
// others are 404 too (AWS tells tasks apart by source address the same way), so another task
// cannot read it even with the id, not even a task of another VPC that has the same address.
//
// Task role credentials (issue 11). A task with a task role gets one credentials id (per task, as
// unguessable as the containers' ids): RegisterCredentials, whose Env() every container of the
// task gets — AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/<id> when the task's listener
// is on port 80 (the SDKs prepend http://169.254.170.2 and cannot add a port), otherwise
// AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.2:<port>/v2/credentials/<id> plus
// AWS_CONTAINER_AUTHORIZATION_TOKEN=<token>, which the request must then carry as Authorization.
// GET on it answers 200 {"RoleArn","AccessKeyId","SecretAccessKey","Token","Expiration"} from the
// task's CredentialsProvider, or {"code","message"} with 400 when the provider refuses (the role
// does not exist or does not trust ecs-tasks.amazonaws.com: the SDK fails with the message) and
// 503 with a fixed text when it cannot answer (nothing of the node reaches the task). An unknown
// id, another network, a foreign source address and a missing or wrong token (compared in
// constant time) are all the same 404 {"code":"InvalidIdInRequest",…}; so is every id of a task
// after UnregisterTask (its credentials are unreachable once it stops).
//
// Thread safety: MetadataService is thread-safe. The renderers are pure functions.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "agent/metadata/credentials.h"
#include "agent/runtime/cgroups.h"
#include "common/clock.h"
#include "common/status.h"
#include "http/message.h"

namespace paddock::http {
class Server;
}

namespace paddock::agent::metadata {

// A task volume a container mounts, as Docker's inspect lists it among the container's Mounts.
struct MountedVolume {
  std::string source;       // the host directory
  std::string destination;  // where the container sees it
};

// What the runtime knows about one container, beyond the task record.
struct ContainerFacts {
  std::string name;       // the container definition's name (the Task JSON's containers[].name)
  std::string docker_id;  // the runtime's container id; empty: not created yet (left out of /task)
  int pid = 0;            // host pid of the container's init; 0 when not running
  std::optional<TimePoint> created_at;
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> finished_at;
  int64_t cpu_units = 0;    // the definition's cpu (Limits.CPU; below 2 reads as 2, as ECS's agent)
  int64_t memory_mib = 0;   // the definition's memory (hard limit; Limits.Memory), 0 when unset
  std::string image_id;     // "sha256:…": the image config's digest (Docker's image ID), if known
  std::string log_driver;   // logConfiguration.logDriver; empty: none
  std::map<std::string, std::string> log_options;
  std::map<std::string, std::string> docker_labels;  // the definition's dockerLabels
  std::optional<int> restart_count;                   // with a restartPolicy: restarts so far
  std::vector<MountedVolume> volumes;  // its mountPoints' and volumesFrom's task volumes (Volumes)
  // The container's cgroup, absolute from each hierarchy's root. Empty: read from
  // /proc/<pid>/cgroup (then stats need a running container).
  std::string cgroup_path;
};

// The node's clock as ClockDrift shows it (ECS on Fargate measures it against Amazon Time Sync).
struct ClockDrift {
  TimePoint reference;                   // ReferenceTimestamp: when the bound was read
  std::optional<double> error_bound_ms;  // ClockErrorBound; unset when not synchronized
  bool synchronized = false;             // ClockSynchronizationStatus
};

// The ClockDrift of one adjtimex(2) answer: `state` its return value, `status` and `maxerror_us`
// the timex fields, read at `at`. Synchronized unless the state is TIME_ERROR or the status has
// STA_UNSYNC (the kernel's own test: no NTP/PTP daemon disciplines the clock); the bound is the
// kernel's maximum error (which the daemon sets and the kernel ages by 500 ppm), in ms.
ClockDrift ClockDriftOf(int state, int status, int64_t maxerror_us, TimePoint at);

// adjtimex(2) read-only (modes 0, no privilege needed), now. Unavailable when the call fails.
StatusOr<ClockDrift> ReadKernelClock();

// What a provider returns: the task now.
struct TaskFacts {
  std::string task_json;  // the Task, serialized as DescribeTasks returns it
  std::vector<ContainerFacts> containers;
  // awsvpc: eth0's subnet prefix length and the subnet's gateway (LaunchSpec::Network). 0/empty:
  // IPv4SubnetCIDRBlock and SubnetGatewayIpv4Address are left out.
  int prefix_length = 0;
  std::string gateway;
  // Tasks without an ENI: "bridge" (with the task's address on the bridge-mode bridge) or "host"
  // (no address of its own). Empty for awsvpc, whose address comes from the Task JSON.
  std::string network_mode;
  std::string ipv4;
  std::vector<std::string> dns_servers;  // the task's resolv.conf nameservers
  std::vector<std::string> dns_search;   // and its search list
  // EphemeralStorageMetrics.Utilized (MiB): the containers' writable layers together. Unset: the
  // block is left out (Reserved alone would mislead).
  std::optional<int64_t> ephemeral_utilized_mib;
  // The VPC of an awsvpc task's network (VPCID, shown for tasks on EC2 container instances only, as
  // AWS does). Empty: left out.
  std::string vpc_id;
  // The node's clock (ClockDrift); unset: left out. The service fills it on each request from its
  // clock source when the provider leaves it unset.
  std::optional<ClockDrift> clock_drift;
};

// The facts a container definition (as the pinned task definition holds it) gives: name, cpu,
// memory (the hard limit), logConfiguration and dockerLabels. The runtime's (docker_id, pid,
// times, image_id, cgroup_path) are the caller's to add.
ContainerFacts FactsFromDefinition(const boost::json::object& container_definition);

// The nameservers and search list of a resolv.conf (the task's, as agent/task_files writes it),
// into facts.dns_servers and facts.dns_search.
void ParseResolvConf(std::string_view text, TaskFacts& facts);

// Whether the task document carries TaskTags (${URI}/taskWithTags).
enum class WithTags : bool { kNo = false, kYes = true };

// Called on every request for a task's document; must be cheap and must not call back into the
// service. An error answers 500. Asked for the task's tags (kYes) only by ${URI}/taskWithTags, the
// one document that shows them: the others' task_json may leave them out.
using TaskProvider = std::function<StatusOr<TaskFacts>(WithTags)>;

enum class Version { kV3, kV4 };

// RFC 3339 with nanoseconds, trailing zeros trimmed, 'Z': Go's time.Time JSON, as the ECS agent
// writes timestamps ("2020-10-02T00:15:07.620912337Z").
std::string FormatTime(TimePoint t);

// The container document (${URI}) for `container_name` of `task` (a parsed Task JSON).
// NotFound when the task has no such container or the facts have none for it.
StatusOr<boost::json::object> RenderContainer(const boost::json::object& task, const TaskFacts& facts,
                                              std::string_view container_name, Version version = Version::kV4);

// The task document (${URI}/task): the task's fields and every created container's document.
// With tags (v4): TaskTags from the Task's `tags` (DescribeTasks with include TAGS: the task's own
// and those propagated to it), left out when it has none.
boost::json::object RenderTask(const boost::json::object& task, const TaskFacts& facts, Version version = Version::kV4,
                               WithTags with_tags = WithTags::kNo);

// JSON text the way Go's encoding/json writes these documents: compact, members in insertion
// order, numbers without exponents (0.25, not 2.5E-1).
std::string Serialize(const boost::json::value& v);

// ---- Stats -------------------------------------------------------------------------------------

struct NetDevCounters {
  uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_dropped = 0;
  uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_dropped = 0;
};

struct BlkioEntry {
  uint64_t major = 0, minor = 0;
  std::string op;  // v1: "Read", "Write", "Sync", "Async", "Discard", "Total"; v2: "read", "write"
  uint64_t value = 0;
};

// One reading of a container's counters (the cgroup, /proc/stat and the task netns's net/dev).
struct CgroupSample {
  TimePoint read;
  uint64_t cpu_total_ns = 0, cpu_user_ns = 0, cpu_kernel_ns = 0;
  std::vector<uint64_t> cpu_percpu_ns;  // v1 only (cpuacct.usage_percpu)
  uint64_t system_cpu_ns = 0;           // /proc/stat's first seven cpu fields, in ns
  uint32_t online_cpus = 0;
  uint64_t throttling_periods = 0, throttled_periods = 0, throttled_time_ns = 0;
  uint64_t memory_usage = 0;
  std::optional<uint64_t> memory_max_usage;  // v1 only (memory.max_usage_in_bytes)
  std::optional<uint64_t> memory_failcnt;    // v1 only
  uint64_t memory_limit = 0;                 // unlimited reads as the host's MemTotal, as Docker
  std::vector<std::pair<std::string, uint64_t>> memory_stat;  // memory.stat, in file order
  std::optional<uint64_t> pids_current;
  std::vector<BlkioEntry> io_service_bytes, io_serviced;
  std::optional<std::map<std::string, NetDevCounters>> networks;  // by interface, lo left out
};

// Where the counters live. FromLayout fills the roots from the host's cgroup mounts.
struct StatsSources {
  runtime::CgroupLayout layout;
  std::string cpuacct_root;  // v1: the cpuacct hierarchy (cpuacct.*); v2: the root
  std::string pids_root;     // empty: no pids controller
  std::string blkio_root;    // empty: no blkio / io controller
  std::string proc_root = "/proc";

  static StatsSources FromLayout(const runtime::CgroupLayout& layout);
};

// Reads the counters of cgroup `cgroup_path` in every hierarchy (when empty: each controller's
// own path from /proc/<pid>/cgroup) and, with a pid, the interfaces of its network namespace
// (/proc/<pid>/net/dev). NotFound when the memory cgroup is gone (the container was deleted) or
// is the root.
StatusOr<CgroupSample> ReadCgroupSample(const StatsSources& sources, std::string_view cgroup_path, int pid,
                                        TimePoint now);

// Docker's container stats document (GET /containers/{id}/stats?stream=false) with ECS's
// network_rate_stats: precpu_stats and preread from `previous` (zeros and 0001-01-01 without).
// v3 leaves out networks and network_rate_stats, as ECS's v3 endpoint does.
boost::json::object RenderStats(const CgroupSample& current, const CgroupSample* previous, std::string_view docker_id,
                                std::string_view name, Version version = Version::kV4);

// ---- The service -------------------------------------------------------------------------------

struct MetadataServiceOptions {
  // Where to listen and what the URIs name. AWS's address and port by default.
  std::string host = "169.254.170.2";
  uint16_t port = 80;  // 0: an ephemeral port (tests); the URIs then carry it
  // The port tried first in each served network (ServeNetwork), then an ephemeral one.
  uint16_t network_port = 80;
  // When set, Start adds host/32 to this interface of the host (lo) first, if it lacks it.
  // The interface must exist (FailedPrecondition otherwise).
  std::string interface;
  // Requests must come from the task IP a container was registered with (when it was).
  bool check_source = true;
  int worker_threads = 4;
  // Secret bytes (at least 16) the ids are derived from: HMAC-SHA256(key, "<task ARN>\n<container
  // name>"), so that an agent restarted on the same state registers a re-adopted container under
  // the id already in its environment. Empty: random ids (a restarted agent cannot serve the
  // containers it re-adopts).
  std::string id_key;
  // Empty: StatsSources::FromLayout(DetectCgroupLayout()) at Start; no cgroups then stats are null.
  std::optional<StatsSources> stats_sources;
  // The v4 task document's ClockDrift, read on each request; an error leaves it out.
  std::function<StatusOr<ClockDrift>()> clock = ReadKernelClock;
};

struct ContainerEndpoint {
  std::string id;
  std::string v4_uri;  // "http://169.254.170.2/v4/<id>"
  std::string v3_uri;  // "http://169.254.170.2/v3/<id>"
  // {"ECS_CONTAINER_METADATA_URI_V4=…", "ECS_CONTAINER_METADATA_URI=…"}
  std::vector<std::string> Env() const;
};

// Called on every credentials request; may block on the control plane (bounded by its client's
// timeout); must not call back into the service.
using CredentialsProvider = std::function<StatusOr<RoleCredentials>()>;

struct CredentialsEndpoint {
  std::string id;
  std::string relative_uri;  // "/v2/credentials/<id>" (listener on port 80), else empty
  std::string full_uri;      // "http://169.254.170.2:<port>/v2/credentials/<id>" (any other port), else empty
  std::string token;         // with full_uri: what Authorization must carry
  // AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, or AWS_CONTAINER_CREDENTIALS_FULL_URI and
  // AWS_CONTAINER_AUTHORIZATION_TOKEN.
  std::vector<std::string> Env() const;
};

// The 200 body of a credentials request (Expiration as "2026-01-01T12:00:00Z").
std::string RenderCredentials(const RoleCredentials& c);

class MetadataService {
 public:
  explicit MetadataService(MetadataServiceOptions options);
  ~MetadataService();  // Stops.
  MetadataService(const MetadataService&) = delete;
  MetadataService& operator=(const MetadataService&) = delete;

  // Adds the address (with options.interface) and starts the host listener. REQUIRES: not
  // started.
  Status Start();
  // Stops every listener (in-flight requests finish). Leaves the address. Idempotent.
  void Stop();
  // The host listener's port (after Start).
  uint16_t port() const { return port_; }

  // Serves the endpoint inside network namespace `netns_path` too, as network `network` (a VPC
  // router namespace's name), on options.network_port there, or on an ephemeral port when that is taken
  // (another process of the node serves that namespace). Counted: the listener stays until as
  // many ReleaseNetwork calls. When the namespace at `netns_path` is not the one the listener was
  // made in (removed and made again meanwhile), a new listener replaces the old one.
  // REQUIRES: started.
  Status ServeNetwork(std::string_view network, const std::string& netns_path);
  // One ServeNetwork less; the last one stops that listener (and lets its namespace go).
  void ReleaseNetwork(std::string_view network);
  // The port of `network`'s listener ("" for the host's); 0 when it has none.
  uint16_t PortOf(std::string_view network);

  // Registers one container of a task: the returned URIs answer for it from now on, on the
  // listener of `network` ("" for the host's). `provider` replaces the task's previous one.
  // `task_ip` (dotted quad): requests must come from it when options.check_source; empty: from
  // anywhere. Registering the same container again gives it a second id; both answer until
  // UnregisterTask.
  // REQUIRES: started, and `network` served (the URIs carry its port when it is not 80).
  ContainerEndpoint RegisterContainer(std::string_view task_arn, std::string_view container_name, TaskProvider provider,
                                      std::string_view task_ip = {}, std::string_view network = {});
  // Registers the task's role credentials: its one credentials id answers `provider`'s
  // credentials on the listener of `network`, to requests from `task_ip` (as RegisterContainer),
  // from now on. Registering again replaces the provider and keeps the id.
  // REQUIRES: started, and `network` served.
  CredentialsEndpoint RegisterCredentials(std::string_view task_arn, CredentialsProvider provider,
                                          std::string_view task_ip = {}, std::string_view network = {});
  // Forgets every container of the task (and its credentials id) (their URIs answer 404) and the task's stats history,
  // and waits for requests already calling the task's provider: once it returns, the provider
  // is never called again (so whatever it captured may go).
  // REQUIRES: not called from a provider.
  void UnregisterTask(std::string_view task_arn);

  // The deploy controller's door (ADR D8's workload identity): POST /paddock/v1/identity/token
  // and GET /paddock/.well-known/jwks.json and /paddock/.well-known/openid-configuration, from any
  // task on any served network, are handed to `door` with "/paddock" taken off the target and
  // "<network>/" put before the remote address (so that two VPCs' equal addresses stay apart);
  // any other path under /paddock/ is 404. It is the one way from a task to the control plane
  // besides its own metadata and credentials, on purpose and this narrow: the handler
  // authenticates each exchange itself (a deployment's credential). With null (the default) the
  // door answers 404, and once a call with null returns the previous door is never called again
  // (whatever it captured may go).
  // REQUIRES: not called from the door.
  void SetControllerDoor(std::function<http::Response(const http::Request&)> door);

  // The request handler of `network`'s listener ("": the host's), exposed for tests.
  http::Response Handle(const http::Request& request, std::string_view network = {});

 private:
  struct Entry {
    std::string task_arn;
    std::string container_name;
    std::string source_ip;
    std::string network;
  };
  struct Listener {
    std::unique_ptr<http::Server> server;
    uint16_t port = 0;
    uint64_t netns_id = 0;  // the namespace it listens in (netns::NamespaceId)
    int users = 0;
  };
  struct TaskEntry {
    // Replaced by each RegisterContainer; a request calls the one it copied under mu_, so a
    // registration while a request is in the provider never destroys the function being called.
    std::shared_ptr<const TaskProvider> provider;
    std::vector<std::string> ids;
    std::map<std::string, CgroupSample> last_samples;  // by docker id
    // RegisterCredentials: its provider (copied by a request as `provider` is), its id in
    // credentials_, and the token a full-URI request must carry (empty: none needed).
    std::shared_ptr<const CredentialsProvider> credentials;
    std::string credentials_id;
    int in_flight = 0;  // requests using `provider` now
  };

  std::string BaseUri(uint16_t port) const;
  http::Response Serve(const Entry& entry, std::string_view rest, Version version, TaskEntry& task,
                       const TaskProvider& provider);
  // The stats document of one container, or null when it has none (not running, cgroup gone).
  boost::json::value StatsFor(TaskEntry& task, const ContainerFacts& c, Version version);

  const MetadataServiceOptions options_;
  std::optional<StatsSources> sources_;  // set by Start
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;

  std::mutex listeners_mu_;  // never held while mu_ is, nor by a handler
  std::map<std::string, Listener, std::less<>> networks_;  // GUARDED_BY(listeners_mu_)

  std::mutex mu_;
  std::condition_variable idle_;                                // a task's in_flight fell
  std::map<std::string, Entry> by_id_;                          // GUARDED_BY(mu_)
  std::map<std::string, std::shared_ptr<TaskEntry>> by_task_;  // GUARDED_BY(mu_), and their fields
  struct CredentialsEntry {
    std::string task_arn;
    std::string source_ip;
    std::string network;
    std::string token;  // empty: the relative form, no Authorization needed
  };
  // GUARDED_BY(mu_), by credentials id; looked up by the request's string_view (no copy per request).
  std::map<std::string, CredentialsEntry, std::less<>> credentials_;

  // GUARDED_BY(mu_): the door (SetControllerDoor) and the calls in it now (idle_ is notified as they end).
  std::shared_ptr<const std::function<http::Response(const http::Request&)>> door_;
  int door_in_flight_ = 0;

  // An id for `message` (HMAC under options.id_key, or random without one), 32 hex digits.
  std::string IdFor(std::string_view message) const;
  http::Response HandleCredentials(const http::Request& request, std::string_view id, std::string_view network);
};

}  // namespace paddock::agent::metadata
