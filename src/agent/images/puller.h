// The seam for fetching images from registries: SkopeoPuller (skopeo_puller.h) on a node, fakes in
// tests. ImageStore::ResolveOrPull imports whatever it writes.
#pragma once

#include <string>

#include "agent/images/reference.h"
#include "common/status.h"

namespace paddock::agent::images {

class Puller {
 public:
  virtual ~Puller() = default;
  // Fetches `ref` from its registry and writes it to `archive_path` as an OCI image-layout tar
  // (oci-archive) holding that one image, either unnamed (the store names it `ref.String()`) or
  // named `ref.String()` in the org.opencontainers.image.ref.name annotation. The message of a
  // failure is what ECS reports after "CannotPullContainerError: ". Safe to call concurrently.
  virtual Status Pull(const Reference& ref, const std::string& archive_path) = 0;
};

}  // namespace paddock::agent::images
