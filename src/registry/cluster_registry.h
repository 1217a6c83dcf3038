// registry/cluster_registry: one image store per cluster, as remote agents see it.
//
// The server's image store (agent/images) is node-local, and a `paddock agent` on another host has
// its own. So that an image imported on (or pulled by) the server runs on every instance, the server
// runs Distribution's registry — Debian's `docker-registry` — as a child process, copies images from
// its store into it when an agent asks for one, and the agent pulls from it
// (agent/remote/cluster_puller.h). No protocol of our own: the registry speaks Docker's, skopeo on
// both sides.
//
//   <dir>/config.yml          the registry's configuration (written at each start)
//   <dir>/storage/            its blobs and repositories (Distribution's filesystem driver)
//   <dir>/token.key, .crt     the token signing key (0600) and the certificate the registry trusts
//   <dir>/registry.log        its log;  <dir>/registry.pid  its pid (a leftover one is stopped)
//
// Names: the image of manifest sha256:H is repository images/H, pulled by digest (images/H@sha256:H),
// so an agent gets exactly the server's manifest and names it as its task does.
//
// Access (Distribution's token auth, registry/token.h): Paddock pushes with a push token of its own;
// an agent gets, through the agent protocol's GetImageAccess (signed with its instance's own
// credential), a pull-only token for the one repository of an image that a task assigned to its
// instance names, valid 15 minutes. No token opens the catalog, none but Paddock's pushes, and
// without one nothing is served. The registry listens on the API's host (loopback by default) or
// where `[images] cluster_registry_listen` says.
//
// Lifecycle: started by the first Grant (a node whose agents are all in-process never runs it),
// started again by a later Grant when it has died, stopped by Stop. Pushes are idempotent; what was
// pushed in this process's life is not pushed again. Removing an image from the store does not
// remove it from the registry (docs/contracts/image.md, Open).
//
//   ClusterRegistry registry({.dir = state + "/registry", .listen_host = "127.0.0.1"});
//   ASSIGN_OR_RETURN(ImageGrant g, registry.Grant(images, "busybox:demo", instance_arn));
//   // g.registry = "127.0.0.1:41234", g.repository = "images/ab…", g.digest = "sha256:ab…", g.token
//   registry.Stop();
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/images/image_store.h"
#include "agent/remote/server/agent_service.h"
#include "common/clock.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "registry/token.h"

namespace paddock::registry {

struct RegistryOptions {
  std::string dir;                    // <state>/registry; made 0700
  std::string listen_host = "127.0.0.1";
  uint16_t port = 0;                  // 0: a free port, chosen at each start
  std::string binary = "docker-registry";
  std::string skopeo = "skopeo";
  std::chrono::seconds pull_token_ttl{900};
  std::chrono::seconds start_timeout{15};
  std::chrono::seconds push_timeout{600};
};

// Where an image is, and the token that pulls it.
struct ImageGrant {
  std::string registry;    // HOST:PORT as it listens
  std::string repository;  // images/<hex>
  std::string digest;      // sha256:<hex>
  std::string token;
  TimePoint expires_at;
};

class ClusterRegistry {
 public:
  explicit ClusterRegistry(RegistryOptions options, Clock& clock = SystemClock::Get());
  ~ClusterRegistry();  // Stop()
  ClusterRegistry(const ClusterRegistry&) = delete;
  ClusterRegistry& operator=(const ClusterRegistry&) = delete;

  // `reference`'s image from `images`, in the registry (pushed now unless it already is), with a
  // pull token for `subject`. NotFound when `images` has no such name; Unavailable when the registry
  // cannot run (docker-registry missing: says to install it) or the push fails. Thread-safe.
  StatusOr<ImageGrant> Grant(agent::images::ImageStore& images, std::string_view reference, std::string_view subject);

  // The registry's address once it has started ("" before).
  std::string Address();

  // Stops the registry (SIGTERM, then SIGKILL after 5 s). Idempotent; a later Grant starts it again.
  void Stop();

 private:
  // REQUIRES: mu_ held.
  Status EnsureRunningLocked();
  Status StartLocked();
  // Runs the registry on `port` and waits until it answers.
  Status ServeOnLocked(const std::string& config_path, uint16_t port);
  void StopLocked();
  // Pushes the image `layout` lends to images/<hex>. REQUIRES: mu_ held.
  Status PushLocked(const agent::images::ImageStore::Layout& layout, const std::string& repository);

  const RegistryOptions options_;
  Clock& clock_;
  std::mutex mu_;
  std::optional<TokenSigner> signer_;       // GUARDED_BY(mu_)
  std::optional<subprocess::Child> child_;  // GUARDED_BY(mu_)
  std::string address_;                     // GUARDED_BY(mu_): HOST:PORT while running
  uint16_t last_port_ = 0;                  // GUARDED_BY(mu_): the port it last served on
  std::set<std::string> pushed_;            // GUARDED_BY(mu_): manifest digests in the registry
};

// GetImageAccess's provider (agent/remote/server/agent_service.h) over `registry` and the server's store:
// found with a grant, or not found with the store's near names.
agent::remote::ImageAccessProvider AccessProvider(ClusterRegistry& registry, agent::images::ImageStore& images);

}  // namespace paddock::registry
