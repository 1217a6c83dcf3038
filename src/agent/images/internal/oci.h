// Codecs for the JSON documents of OCI image layouts and `docker save` archives, and for the
// image store's own records. The only place in agent/images that touches Boost.JSON.
//
// Every parser takes untrusted bytes and answers InvalidArgument with what is wrong; none throws.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/images/digest.h"
#include "agent/images/image.h"
#include "common/status.h"

namespace paddock::agent::images::oci {

inline constexpr std::string_view kMediaTypeIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kMediaTypeManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kMediaTypeConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kMediaTypeLayerTar = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kMediaTypeLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";

// Documents larger than this are refused before parsing.
inline constexpr size_t kMaxDocumentBytes = 4 << 20;

struct Descriptor {
  std::string media_type;
  Digest digest;
  uint64_t size = 0;
  std::map<std::string, std::string> annotations;
  std::string platform_os;            // empty when the descriptor has no platform
  std::string platform_architecture;
};

struct Index {
  std::vector<Descriptor> manifests;
};

struct Manifest {
  std::string media_type;
  Descriptor config;
  std::vector<Descriptor> layers;
};

struct ParsedConfig {
  ImageConfig config;
  std::vector<Digest> diff_ids;
};

// One entry of a `docker save` manifest.json.
struct DockerSaveImage {
  std::string config;                  // path inside the archive
  std::vector<std::string> repo_tags;  // may be empty
  std::vector<std::string> layers;     // paths inside the archive, base first
};

bool IsIndexMediaType(std::string_view t);
bool IsManifestMediaType(std::string_view t);

StatusOr<Index> ParseIndex(std::string_view json);
StatusOr<Manifest> ParseManifest(std::string_view json);
StatusOr<ParsedConfig> ParseConfig(std::string_view json);
StatusOr<std::vector<DockerSaveImage>> ParseDockerSaveManifest(std::string_view json);

// An OCI image manifest for `config` and `layers`, serialized deterministically.
std::string EncodeManifest(const Descriptor& config, const std::vector<Descriptor>& layers);
// An image layout's index.json naming only `manifest`.
std::string EncodeIndex(const Descriptor& manifest);
// An OCI image config with `config`'s fields and rootfs.diff_ids, serialized deterministically.
std::string EncodeConfig(const ImageConfig& config, const std::vector<Digest>& diff_ids);

std::string EncodeRecord(const ImageInfo& info);
// kDataLoss if the stored record does not parse.
StatusOr<ImageInfo> DecodeRecord(std::string_view json);

}  // namespace paddock::agent::images::oci
