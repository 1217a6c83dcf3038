// The value types of the local image store: what an image is made of and what a runtime needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/images/digest.h"
#include "common/clock.h"

namespace paddock::agent::images {

// The parts of an OCI image config a runtime acts on ("config" in the config blob).
struct ImageConfig {
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // "NAME=value"
  std::string working_dir;
  std::string user;
  std::string architecture;      // "amd64"
  std::string os;                // "linux"
};

struct Layer {
  Digest digest;         // of the blob as stored (compressed or not)
  Digest diff_id;        // of the uncompressed tar; names the unpacked directory
  uint64_t size = 0;     // of the blob
  std::string media_type;
};

// One name in the store and what it points at.
struct ImageInfo {
  std::string reference;  // canonical, "docker.io/library/busybox:latest"
  Digest manifest_digest;
  Digest config_digest;
  std::vector<Layer> layers;  // base first, as in the manifest
  uint64_t size = 0;          // sum of the layer blobs' sizes
  TimePoint created_at;       // when this name was written
  // Pulled with a task's private registry credentials: reused only by a caller its registry still
  // admits (ImageStore::ResolveOrPull), never lent out (WithLayout) nor suggested as a near name.
  bool pulled_with_credentials = false;
  // Pulled from a registry: the digest of the manifest the registry served for the name when it
  // was pulled (for a tag naming a manifest list or index, the list's), which is what ECS reports
  // as a container's imageDigest. It differs from manifest_digest when skopeo rewrote a Docker
  // manifest into OCI form, or chose one platform's manifest from a list. nullopt: imported.
  std::optional<Digest> registry_digest;
};

// What a runtime needs to start a container from an image.
struct ResolvedImage {
  std::string reference;
  Digest manifest_digest;
  std::optional<Digest> registry_digest;  // ImageInfo::registry_digest
  ImageConfig config;
  std::string config_json;  // the config blob, verbatim
  // Unpacked layer directories, base first. overlayfs wants them the other way round: see LowerDir.
  std::vector<std::string> layer_dirs;

  // What a task reports as its container's imageDigest: the registry's digest when the image was
  // pulled, else the stored manifest's.
  const Digest& ReportedDigest() const { return registry_digest ? *registry_digest : manifest_digest; }

  // The overlayfs lowerdir= value: the layer directories top-to-bottom, ':'-separated.
  std::string LowerDir() const;
};

}  // namespace paddock::agent::images
