// The seam for fetching images from registries: SkopeoPuller (skopeo_puller.h) on a node,
// ClusterPuller (agent/remote/cluster_puller.h) on a `paddock agent`, fakes in tests.
// ImageStore::ResolveOrPull imports whatever it writes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/images/reference.h"
#include "common/status.h"

namespace paddock::agent::images {

// How far a pull has come, as skopeo shows it. skopeo copies at most 6 layers at once and shows a
// layer once it starts, so for images of more layers the totals grow as the pull goes.
struct PullProgress {
  size_t layers_done = 0;
  size_t layers_total = 0;  // layers started so far
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;  // of the layers started so far

  friend bool operator==(const PullProgress&, const PullProgress&) = default;
};

// Called (from the pulling thread) whenever a pull's progress changes. Must be quick.
using PullProgressFn = std::function<void(const PullProgress&)>;

// "2/5 layers, 12.3 MiB of 67.8 MiB" (or "starting" before the first layer shows).
std::string FormatPullProgress(const PullProgress& progress);

// A task's own credentials for a private registry (a container's repositoryCredentials).
struct RegistryCredentials {
  std::string username;
  std::string password;
};

// What a Pull is told and tells back besides its Status.
struct PullContext {
  PullProgressFn progress;  // may be empty
  // The task's own credentials for the reference's registry; null: the node's (SkopeoOptions::
  // auth_file) or none. Never logged, never on a command line or in an environment.
  const RegistryCredentials* credentials = nullptr;
  // Set by a failing puller: the places it asked that did not have the image, in the order asked,
  // ending with the one whose failure the Status carries — each a phrase a user recognises ("the
  // cluster's image store", "its registry docker.io"). Empty when the failure is not about where
  // the image is (it was found but could not be fetched, stored, or the node is stopping).
  // ImageStore::ResolveOrPull words the miss from it ("… is neither in this node's image store
  // nor in …").
  std::vector<std::string> looked_in;
  // Names of images the places asked do have that are close to the one asked for (typos).
  std::vector<std::string> near_names;
  // Set by a successful puller that knows it: the digest of the manifest the registry served for
  // the reference (for a tag, the one the tag named when pulled — a manifest list's or index's
  // own) — the image store keeps it as ImageInfo::registry_digest.
  std::optional<Digest> registry_digest;
};

class Puller {
 public:
  virtual ~Puller() = default;
  // Fetches `ref` and writes it to `archive_path` as an OCI image-layout tar (oci-archive)
  // holding that one image, either unnamed (the store names it `ref.String()`) or named
  // `ref.String()` in the org.opencontainers.image.ref.name annotation. The message of a failure
  // is what ECS reports after "CannotPullContainerError: "; its code says what kind: NotFound (no
  // such image), PermissionDenied (refused), Unavailable (could not be fetched), ResourceExhausted
  // (past a bound), Aborted (the node is stopping). Safe to call concurrently.
  virtual Status Pull(const Reference& ref, const std::string& archive_path, PullContext& context) = 0;

  // Whether CheckAccess asks the registry (false: the image store pulls again instead).
  virtual bool ChecksAccess() const { return false; }
  // Whether `ref`'s registry serves its manifest now to `context.credentials` (null: anonymously):
  // OK, or the failure Pull would have had, worded alike. The image store asks it before reusing
  // an image pulled with credentials (ImageStore::ResolveOrPull). REQUIRES: ChecksAccess().
  virtual Status CheckAccess(const Reference& ref, PullContext& context);
};

}  // namespace paddock::agent::images
