#include "agent/images/image_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "agent/images/internal/file_lock.h"
#include "agent/images/internal/oci.h"
#include "agent/images/internal/tar.h"
#include "common/encoding.h"
#include "common/private_files.h"
#include "store/key.h"

namespace paddock::agent::images {
namespace fs = std::filesystem;
using internal::ByteBudget;
using internal::FileLock;
using internal::StagedArchive;

namespace {

constexpr std::string_view kImages = "images";
constexpr std::string_view kImageDigests = "image_digests";

std::string RecordKey(std::string_view reference) { return store::Key().Str(reference).Done(); }
std::string DigestKey(std::string_view repository, const Digest& manifest, std::string_view reference) {
  return store::Key().Str(repository).Str(manifest.str()).Str(reference).Done();
}

// The key an image is stored under: name:tag, or name@digest when it has no tag.
std::string StoredName(const Reference& r) {
  if (!r.tag.empty()) return r.Tagged();
  return r.String();
}

// Removes a directory tree when it goes out of scope, whatever happened.
class ScopedDir {
 public:
  explicit ScopedDir(std::string path) : path_(std::move(path)) {}
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;
  ~ScopedDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

StatusOr<std::string> ReadFile(const std::string& path, size_t limit) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return NotFound(fmt::format("cannot read {}: {}", path, ec.message()));
  if (size > limit) return InvalidArgument(fmt::format("{} is larger than {} bytes", path, limit));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  if (!in && !in.eof()) return Internal(fmt::format("cannot read {}", path));
  return std::move(out).str();
}

Status WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Internal(fmt::format("cannot write {}", path));
  return OkStatus();
}

Status FsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Internal(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  int r = ::fsync(fd);
  int e = errno;
  ::close(fd);
  if (r != 0) return Internal(fmt::format("fsync {}: {}", path, std::strerror(e)));
  return OkStatus();
}

// A name an archive gives an image, as a canonical Reference.
StatusOr<Reference> NameFromArchive(std::string_view name, std::string_view what) {
  auto r = ParseReference(name);
  if (!r.ok()) return InvalidArgument(fmt::format("{}: {}", what, r.status().message()));
  return *r;
}

// A failed unpack of the layer `diff_id`: a bound reached reads as containerd's "failed to extract
// layer" (what ECS reports after "CannotPullContainerError: "); the rest as it came.
Status WithLayer(Status s, const Digest& diff_id) {
  if (s.code() != StatusCode::kResourceExhausted) return s;
  return ResourceExhausted(fmt::format("failed to extract layer {}: {}", diff_id.str(), s.message()));
}

// Scans every row of `table` in key order, a page at a time, inside one snapshot.
Status ScanAll(store::ReadTxn& txn, std::string_view table, const store::Range& range,
               const std::function<Status(const store::Row&)>& fn) {
  store::Range page = range;
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(table, page, 512));
    for (const auto& row : rows) RETURN_IF_ERROR(fn(row));
    if (rows.size() < 512) return OkStatus();
    page.begin = store::KeySuccessor(rows.back().key);
  }
}

}  // namespace

std::string ResolvedImage::LowerDir() const {
  std::string out;
  for (auto it = layer_dirs.rbegin(); it != layer_dirs.rend(); ++it) {
    if (!out.empty()) out += ':';
    out += *it;
  }
  return out;
}

// An import being prepared in a work directory: files to move into the store, then records.
struct ImageStore::Pending {
  struct Blob {
    Digest digest;
    std::string source;  // a file in the work directory (or staged archive) to rename into place
  };
  struct Unpacked {
    Digest diff_id;
    std::string dir;
  };
  std::string work;
  std::vector<Blob> blobs;
  std::vector<Unpacked> layers;
  std::set<Digest> layers_seen;
  std::vector<ImageInfo> images;
  bool moved_a_name = false;  // a name that pointed at another image now points at this one
  int counter = 0;

  std::string WorkFile(std::string_view what) { return fmt::format("{}/{}-{}", work, what, counter++); }

  StatusOr<Digest> AddGeneratedBlob(std::string_view bytes) {
    std::string path = WorkFile("blob");
    RETURN_IF_ERROR(WriteFile(path, bytes));
    Digest d = Sha256Of(bytes);
    blobs.push_back({d, path});
    return d;
  }
};

ImageStore::ImageStore(store::Store& store, std::string images_dir, Clock& clock)
    : store_(store), dir_(std::move(images_dir)), clock_(clock) {}

Status ImageStore::EnsureLayout() {
  std::call_once(layout_once_, [&] {
    std::error_code ec;
    // 0700 before anything is unpacked under it: layers keep their setuid bits (see the header).
    if (Status s = MakePrivateDir(dir_); !s.ok()) {
      layout_status_ = s;
      return;
    }
    for (const char* sub : {"blobs/sha256", "layers", "tmp"}) {
      fs::create_directories(fs::path(dir_) / sub, ec);
      if (ec) {
        layout_status_ = Unavailable(fmt::format("cannot create {}/{}: {}", dir_, sub, ec.message()));
        return;
      }
    }
    // Unpacking refuses to pass through symlinks, so the store's own path must have none.
    auto canonical = fs::canonical(dir_, ec);
    if (ec) {
      layout_status_ = Unavailable(fmt::format("cannot resolve {}: {}", dir_, ec.message()));
      return;
    }
    dir_ = canonical.string();
  });
  return layout_status_;
}

namespace {

// A budget for one import into `dir`: `max_unpacked`, and the free space and free inodes of `dir`
// less a reserve.
ByteBudget NewBudget(const std::string& dir, uint64_t max_unpacked) {
  struct statvfs fs_stat {};
  uint64_t free = 0;
  uint64_t free_inodes = 0;
  if (::statvfs(dir.c_str(), &fs_stat) == 0) {
    const uint64_t available = static_cast<uint64_t>(fs_stat.f_bavail) * fs_stat.f_frsize;
    const uint64_t total = static_cast<uint64_t>(fs_stat.f_blocks) * fs_stat.f_frsize;
    // Room kept for the store, logs and the tasks' own writes: an image never takes the last of it.
    const uint64_t reserve = std::min<uint64_t>(uint64_t{256} << 20, total / 20);
    free = available > reserve ? available - reserve : 0;
    // The same for inodes; a file system that reports none (btrfs) has no fixed number of them.
    if (fs_stat.f_files == 0) {
      free_inodes = UINT64_MAX;
    } else {
      const uint64_t inode_reserve = std::min<uint64_t>(65536, fs_stat.f_files / 20);
      free_inodes = fs_stat.f_favail > inode_reserve ? fs_stat.f_favail - inode_reserve : 0;
    }
  }
  return ByteBudget(max_unpacked, free, dir, free_inodes);
}

}  // namespace

std::string ImageStore::BlobPath(const Digest& d) const { return fmt::format("{}/blobs/sha256/{}", dir_, d.hex()); }
std::string ImageStore::LayerPath(const Digest& diff_id) const {
  return fmt::format("{}/layers/{}", dir_, diff_id.hex());
}

StatusOr<std::string> ImageStore::MakeWorkDir() {
  std::string path = fmt::format("{}/tmp/{}", dir_, HexEncode(RandomBytes(8)));
  if (::mkdir(path.c_str(), 0700) != 0)
    return Unavailable(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  return path;
}

namespace {

struct ArchiveImage {
  std::vector<Reference> names;
  std::string manifest_source;  // staged manifest file; empty when the manifest is generated
  Digest manifest_digest;
  const StagedArchive::File* config = nullptr;
  struct LayerFile {
    const StagedArchive::File* file;
    std::string media_type;
  };
  std::vector<LayerFile> layers;
};

// The blob `d` of an OCI layout, checked against its digest and size.
StatusOr<const StagedArchive::File*> OciBlob(const StagedArchive& ar, const oci::Descriptor& d, std::string_view what) {
  auto f = ar.Find(fmt::format("blobs/sha256/{}", d.digest.hex()));
  if (!f.ok()) return InvalidArgument(fmt::format("the archive lacks the {} blob {}", what, d.digest.str()));
  if ((*f)->digest != d.digest)
    return InvalidArgument(fmt::format("the {} blob {} does not match its digest (its content hashes to {}): the "
                                       "archive is corrupt",
                                       what, d.digest.str(), (*f)->digest.str()));
  if ((*f)->size != d.size)
    return InvalidArgument(fmt::format("the {} blob {} is {} bytes, not the {} its descriptor says: the archive is "
                                       "corrupt",
                                       what, d.digest.str(), (*f)->size, d.size));
  return *f;
}

// In a docker save archive, a file named after a digest ("<hex>.json", "blobs/sha256/<hex>")
// must hash to it.
Status CheckNamedDigest(std::string_view name, const StagedArchive::File& f) {
  std::string_view base = name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
  if (base.ends_with(".json")) base.remove_suffix(5);
  if (IsSha256Hex(base) && base != f.digest.hex())
    return InvalidArgument(fmt::format("archive file '{}' does not match its digest (its content hashes to {}): the "
                                       "archive is corrupt",
                                       name, f.digest.str()));
  return OkStatus();
}

// Names from an OCI index descriptor's annotations; see ImportOptions.
StatusOr<std::vector<Reference>> OciNames(const oci::Descriptor& d, const ImportOptions& options) {
  std::string name;
  if (auto it = d.annotations.find("io.containerd.image.name"); it != d.annotations.end()) {
    name = it->second;
  } else if (auto ref = d.annotations.find("org.opencontainers.image.ref.name"); ref != d.annotations.end()) {
    name = ref->second;
    bool tag_only = name.find('/') == std::string::npos && name.find(':') == std::string::npos &&
                    name.find('@') == std::string::npos;
    if (tag_only && !options.name.empty()) {
      if (!IsValidTag(name)) return InvalidArgument(fmt::format("index.json: '{}' is not a valid tag", name));
      ASSIGN_OR_RETURN(Reference base, ParseReference(options.name));
      name = base.Repository() + ":" + name;
    }
  } else if (!options.name.empty()) {
    name = options.name;
  } else {
    return InvalidArgument(fmt::format("index.json: image {} has no name (no org.opencontainers.image.ref.name "
                                       "annotation); give one with --name",
                                       d.digest.str()));
  }
  ASSIGN_OR_RETURN(Reference r, NameFromArchive(name, "index.json"));
  return std::vector<Reference>{r};
}

StatusOr<std::string> ReadStaged(const StagedArchive::File& f) { return ReadFile(f.path, oci::kMaxDocumentBytes); }

StatusOr<std::vector<ArchiveImage>> ReadOciLayout(const StagedArchive& ar, const ImportOptions& options) {
  ASSIGN_OR_RETURN(const StagedArchive::File* index_file, ar.Find("index.json"));
  ASSIGN_OR_RETURN(std::string index_json, ReadStaged(*index_file));
  ASSIGN_OR_RETURN(oci::Index index, oci::ParseIndex(index_json));
  if (index.manifests.empty()) return InvalidArgument("index.json lists no images");
  std::vector<ArchiveImage> out;
  for (const oci::Descriptor& top : index.manifests) {
    ArchiveImage image;
    ASSIGN_OR_RETURN(image.names, OciNames(top, options));
    oci::Descriptor desc = top;
    if (oci::IsIndexMediaType(desc.media_type)) {
      // A multi-platform image: take its linux/amd64 manifest.
      ASSIGN_OR_RETURN(const StagedArchive::File* f, OciBlob(ar, desc, "image index"));
      ASSIGN_OR_RETURN(std::string nested_json, ReadStaged(*f));
      ASSIGN_OR_RETURN(oci::Index nested, oci::ParseIndex(nested_json));
      const oci::Descriptor* pick = nullptr;
      for (const auto& m : nested.manifests) {
        if (!oci::IsManifestMediaType(m.media_type)) continue;
        if ((m.platform_os.empty() || m.platform_os == "linux") &&
            (m.platform_architecture.empty() || m.platform_architecture == "amd64")) {
          pick = &m;
          break;
        }
      }
      if (pick == nullptr) return InvalidArgument(fmt::format("image {} has no linux/amd64 manifest", desc.digest.str()));
      desc = *pick;
    } else if (!desc.media_type.empty() && !oci::IsManifestMediaType(desc.media_type)) {
      return InvalidArgument(fmt::format("index.json: unsupported media type '{}'", desc.media_type));
    }
    ASSIGN_OR_RETURN(const StagedArchive::File* manifest_file, OciBlob(ar, desc, "manifest"));
    ASSIGN_OR_RETURN(std::string manifest_json, ReadStaged(*manifest_file));
    ASSIGN_OR_RETURN(oci::Manifest manifest, oci::ParseManifest(manifest_json));
    image.manifest_source = manifest_file->path;
    image.manifest_digest = desc.digest;
    ASSIGN_OR_RETURN(image.config, OciBlob(ar, manifest.config, "config"));
    for (const auto& l : manifest.layers) {
      ASSIGN_OR_RETURN(const StagedArchive::File* f, OciBlob(ar, l, "layer"));
      image.layers.push_back({f, l.media_type});
    }
    out.push_back(std::move(image));
  }
  return out;
}

StatusOr<std::vector<ArchiveImage>> ReadDockerSave(const StagedArchive& ar, const ImportOptions& options) {
  ASSIGN_OR_RETURN(const StagedArchive::File* manifest_file, ar.Find("manifest.json"));
  ASSIGN_OR_RETURN(std::string manifest_json, ReadStaged(*manifest_file));
  ASSIGN_OR_RETURN(auto entries, oci::ParseDockerSaveManifest(manifest_json));
  if (entries.empty()) return InvalidArgument("manifest.json lists no images");
  std::vector<ArchiveImage> out;
  for (const auto& e : entries) {
    ArchiveImage image;
    std::vector<std::string> names = e.repo_tags;
    if (names.empty()) {
      if (options.name.empty())
        return InvalidArgument(fmt::format("manifest.json: image {} has no RepoTags; give it a name with --name",
                                           e.config));
      names.push_back(options.name);
    }
    for (const auto& n : names) {
      ASSIGN_OR_RETURN(Reference r, NameFromArchive(n, "manifest.json"));
      image.names.push_back(std::move(r));
    }
    auto config = ar.Find(e.config);
    if (!config.ok()) return InvalidArgument(fmt::format("the archive lacks the config file '{}'", e.config));
    RETURN_IF_ERROR(CheckNamedDigest(e.config, **config));
    image.config = *config;
    for (const auto& path : e.layers) {
      auto f = ar.Find(path);
      if (!f.ok()) return InvalidArgument(fmt::format("the archive lacks the layer file '{}'", path));
      RETURN_IF_ERROR(CheckNamedDigest(path, **f));
      ASSIGN_OR_RETURN(bool gzip, internal::IsGzip((*f)->path));
      image.layers.push_back({*f, std::string(gzip ? oci::kMediaTypeLayerGzip : oci::kMediaTypeLayerTar)});
    }
    out.push_back(std::move(image));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<std::string>> ImageStore::ImportArchive(const std::string& path, const ImportOptions& options) {
  RETURN_IF_ERROR(EnsureLayout());
  if (!fs::is_regular_file(path)) return NotFound(fmt::format("{}: no such file", path));
  std::vector<std::string> names;
  bool moved_a_name = false;
  {
    ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir_ + "/lock", FileLock::Mode::kShared));
    ASSIGN_OR_RETURN(std::string work_path, MakeWorkDir());
    ScopedDir work(work_path);
    std::string stage = work.path() + "/stage";
    if (::mkdir(stage.c_str(), 0700) != 0) return Unavailable(fmt::format("cannot create {}", stage));
    ByteBudget budget = NewBudget(dir_, max_unpacked_bytes_);
    ASSIGN_OR_RETURN(StagedArchive ar, StagedArchive::Stage(path, stage, budget));

    std::vector<ArchiveImage> images;
    if (ar.Has("index.json")) {
      ASSIGN_OR_RETURN(images, ReadOciLayout(ar, options));
    } else if (ar.Has("manifest.json")) {
      ASSIGN_OR_RETURN(images, ReadDockerSave(ar, options));
    } else {
      return InvalidArgument(fmt::format(
          "{} is neither an OCI image layout archive (index.json) nor a docker save archive (manifest.json)", path));
    }

    Pending pending;
    pending.work = work.path();
    std::map<Digest, Digest> diff_ids;  // blob digest -> diffID, computed once per blob
    for (ArchiveImage& image : images) {
      ASSIGN_OR_RETURN(std::string config_json, ReadStaged(*image.config));
      ASSIGN_OR_RETURN(oci::ParsedConfig config, oci::ParseConfig(config_json));
      if (config.diff_ids.size() != image.layers.size())
        return InvalidArgument(fmt::format("image {} has {} layers but its config lists {} diff_ids: the archive is "
                                           "corrupt",
                                           image.names.front().String(), image.layers.size(), config.diff_ids.size()));
      std::vector<Layer> layers;
      uint64_t size = 0;
      for (size_t i = 0; i < image.layers.size(); ++i) {
        const StagedArchive::File& f = *image.layers[i].file;
        auto known = diff_ids.find(f.digest);
        if (known == diff_ids.end()) {
          // A dry run on a copy of the budget: a layer that would unpack past the bound is refused
          // here, having written nothing.
          ByteBudget probe = budget;
          auto d = internal::UncompressedDigest(f.path, {}, &probe);
          if (!d.ok()) {
            StatusCode code = d.status().code() == StatusCode::kResourceExhausted ? StatusCode::kResourceExhausted
                                                                                  : StatusCode::kInvalidArgument;
            std::string_view what = code == StatusCode::kResourceExhausted ? "failed to extract layer " : "layer ";
            return Status(code, fmt::format("{}{}: {}", what, f.digest.str(), d.status().message()));
          }
          known = diff_ids.emplace(f.digest, d->digest).first;
        }
        if (known->second != config.diff_ids[i])
          return InvalidArgument(fmt::format("layer {} ({}) uncompresses to {}, not the config's diff_id {}: the "
                                             "archive is corrupt",
                                             i, f.digest.str(), known->second.str(), config.diff_ids[i].str()));
        Layer layer{f.digest, known->second, f.size, image.layers[i].media_type};
        size += f.size;
        if (!fs::exists(LayerPath(layer.diff_id)) && pending.layers_seen.insert(layer.diff_id).second) {
          std::string dir = pending.WorkFile("layer");
          if (::mkdir(dir.c_str(), 0755) != 0) return Unavailable(fmt::format("cannot create {}", dir));
          RETURN_IF_ERROR(WithLayer(internal::UnpackLayer(f.path, dir, budget), layer.diff_id));
          pending.layers.push_back({layer.diff_id, dir});
        }
        pending.blobs.push_back({f.digest, f.path});
        layers.push_back(std::move(layer));
      }
      pending.blobs.push_back({image.config->digest, image.config->path});
      Digest manifest_digest;
      if (image.manifest_source.empty()) {
        std::vector<oci::Descriptor> descs;
        for (const auto& l : layers) descs.push_back({l.media_type, l.digest, l.size, {}, {}, {}});
        std::string manifest = oci::EncodeManifest(
            {std::string(oci::kMediaTypeConfig), image.config->digest, image.config->size, {}, {}, {}}, descs);
        ASSIGN_OR_RETURN(manifest_digest, pending.AddGeneratedBlob(manifest));
      } else {
        manifest_digest = image.manifest_digest;
        pending.blobs.push_back({manifest_digest, image.manifest_source});
      }
      for (const Reference& name : image.names) {
        if (name.digest && *name.digest != manifest_digest)
          return InvalidArgument(fmt::format("the archive names image {} '{}', which is another digest",
                                             manifest_digest.str(), name.String()));
        pending.images.push_back(ImageInfo{StoredName(name), manifest_digest, image.config->digest, layers, size,
                                           clock_.Now(), options.pulled_with_credentials, options.registry_digest});
      }
    }
    ASSIGN_OR_RETURN(names, Install(pending));
    moved_a_name = pending.moved_a_name;
  }
  if (moved_a_name) CollectGarbageIfIdle();
  return names;
}

StatusOr<std::string> ImageStore::ImportRootfs(const std::string& path, std::string_view reference,
                                               const ImageConfig& config) {
  ASSIGN_OR_RETURN(Reference ref, ParseReference(reference));
  if (ref.digest) return InvalidArgument(fmt::format("name the image with a tag, not a digest: '{}'", reference));
  RETURN_IF_ERROR(EnsureLayout());
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !(fs::is_directory(status) || fs::is_regular_file(status)))
    return NotFound(fmt::format("{}: no such directory or tar file", path));
  std::vector<std::string> names;
  bool moved_a_name = false;
  {
    ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir_ + "/lock", FileLock::Mode::kShared));
    ASSIGN_OR_RETURN(std::string work_path, MakeWorkDir());
    ScopedDir work(work_path);
    Pending pending;
    pending.work = work.path();
    std::string layer_tar = pending.WorkFile("layer.tar");
    ByteBudget budget = NewBudget(dir_, max_unpacked_bytes_);
    if (fs::is_directory(status)) {
      RETURN_IF_ERROR(internal::WriteTreeTar(path, layer_tar, /*skip=*/dir_));
      // The operator's own tree, counted once written (its size is what its unpacking costs too).
      RETURN_IF_ERROR(budget.Staged(fs::file_size(layer_tar, ec)));
    } else {
      RETURN_IF_ERROR(internal::UncompressedDigest(path, layer_tar, &budget).status());
    }
    ASSIGN_OR_RETURN(FileDigest tar, Sha256OfFile(layer_tar));
    Layer layer{tar.digest, tar.digest, tar.size, std::string(oci::kMediaTypeLayerTar)};
    if (!fs::exists(LayerPath(layer.diff_id))) {
      std::string dir = pending.WorkFile("layer");
      if (::mkdir(dir.c_str(), 0755) != 0) return Unavailable(fmt::format("cannot create {}", dir));
      RETURN_IF_ERROR(WithLayer(internal::UnpackLayer(layer_tar, dir, budget), layer.diff_id));
      pending.layers.push_back({layer.diff_id, dir});
    }
    pending.blobs.push_back({layer.digest, layer_tar});
    ImageConfig full = config;
    if (full.architecture.empty()) full.architecture = "amd64";
    if (full.os.empty()) full.os = "linux";
    std::string config_json = oci::EncodeConfig(full, {layer.diff_id});
    ASSIGN_OR_RETURN(Digest config_digest, pending.AddGeneratedBlob(config_json));
    std::string manifest = oci::EncodeManifest(
        {std::string(oci::kMediaTypeConfig), config_digest, config_json.size(), {}, {}, {}},
        {{layer.media_type, layer.digest, layer.size, {}, {}, {}}});
    ASSIGN_OR_RETURN(Digest manifest_digest, pending.AddGeneratedBlob(manifest));
    pending.images.push_back(
        ImageInfo{StoredName(ref), manifest_digest, config_digest, {layer}, layer.size, clock_.Now(), false,
                  std::nullopt});
    ASSIGN_OR_RETURN(names, Install(pending));
    moved_a_name = pending.moved_a_name;
  }
  if (moved_a_name) CollectGarbageIfIdle();
  return names.front();
}

// REQUIRES: the shared lock is held, so no garbage collection runs until the records commit.
StatusOr<std::vector<std::string>> ImageStore::Install(Pending& pending) {
  for (const auto& blob : pending.blobs) {
    std::string target = BlobPath(blob.digest);
    if (fs::exists(target)) continue;
    RETURN_IF_ERROR(FsyncPath(blob.source));
    if (::rename(blob.source.c_str(), target.c_str()) != 0)
      return Internal(fmt::format("cannot move blob into {}: {}", target, std::strerror(errno)));
  }
  for (const auto& layer : pending.layers) {
    std::string target = LayerPath(layer.diff_id);
    // Another import may have unpacked the same layer meanwhile; then its copy stays.
    if (::rename(layer.dir.c_str(), target.c_str()) != 0 && errno != EEXIST && errno != ENOTEMPTY)
      return Internal(fmt::format("cannot move layer into {}: {}", target, std::strerror(errno)));
  }
  // One syncfs makes the unpacked files and every directory entry above durable before the
  // records that name them commit.
  int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Internal(fmt::format("cannot open {}: {}", dir_, std::strerror(errno)));
  int synced = ::syncfs(dir_fd);
  int sync_errno = errno;
  ::close(dir_fd);
  if (synced != 0) return Internal(fmt::format("syncfs {}: {}", dir_, std::strerror(sync_errno)));

  std::vector<std::string> names;
  bool moved = false;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    names.clear();
    moved = false;
    for (ImageInfo& image : pending.images) {
      ASSIGN_OR_RETURN(Reference ref, ParseReference(image.reference));
      ASSIGN_OR_RETURN(auto old, txn.Get(kImages, RecordKey(image.reference)));
      if (old) {
        ASSIGN_OR_RETURN(ImageInfo previous, oci::DecodeRecord(*old));
        if (previous.manifest_digest == image.manifest_digest) {
          image.created_at = previous.created_at;  // re-importing changes nothing
        } else {
          moved = true;
          RETURN_IF_ERROR(txn.Delete(kImageDigests, DigestKey(ref.Repository(), previous.manifest_digest,
                                                              image.reference)));
        }
      }
      RETURN_IF_ERROR(txn.Put(kImages, RecordKey(image.reference), oci::EncodeRecord(image)));
      RETURN_IF_ERROR(txn.Put(kImageDigests, DigestKey(ref.Repository(), image.manifest_digest, image.reference), ""));
      names.push_back(image.reference);
    }
    return OkStatus();
  }));
  pending.moved_a_name = moved;
  return names;
}

StatusOr<std::optional<ImageInfo>> ImageStore::Lookup(const Reference& ref) {
  std::optional<ImageInfo> found;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    std::string name;
    if (ref.digest) {
      // name@digest (or name:tag@digest): any name of that repository on that manifest.
      auto range = store::PrefixRange(store::Key().Str(ref.Repository()).Str(ref.digest->str()).Done());
      RETURN_IF_ERROR(ScanAll(txn, kImageDigests, range, [&](const store::Row& row) -> Status {
        store::KeyReader reader(row.key);
        ASSIGN_OR_RETURN(std::string repo, reader.Str());
        ASSIGN_OR_RETURN(std::string digest, reader.Str());
        ASSIGN_OR_RETURN(std::string reference, reader.Str());
        if (name.empty() && (ref.tag.empty() || reference == ref.Tagged())) name = reference;
        return OkStatus();
      }));
      if (name.empty()) return OkStatus();
    } else {
      name = ref.Tagged();
    }
    ASSIGN_OR_RETURN(auto value, txn.Get(kImages, RecordKey(name)));
    if (!value) return OkStatus();
    ASSIGN_OR_RETURN(found, oci::DecodeRecord(*value));
    return OkStatus();
  }));
  return found;
}

StatusOr<std::vector<ImageInfo>> ImageStore::List() {
  std::vector<ImageInfo> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    out.clear();
    return ScanAll(txn, kImages, store::Range{}, [&](const store::Row& row) -> Status {
      ASSIGN_OR_RETURN(ImageInfo info, oci::DecodeRecord(row.value));
      out.push_back(std::move(info));
      return OkStatus();
    });
  }));
  return out;
}

StatusOr<std::vector<std::string>> ImageStore::Remove(std::string_view reference) {
  ASSIGN_OR_RETURN(Reference ref, ParseReference(reference));
  std::vector<std::string> removed;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    removed.clear();
    std::vector<std::string> names;
    if (ref.digest) {
      auto range = store::PrefixRange(store::Key().Str(ref.Repository()).Str(ref.digest->str()).Done());
      RETURN_IF_ERROR(ScanAll(txn, kImageDigests, range, [&](const store::Row& row) -> Status {
        store::KeyReader reader(row.key);
        ASSIGN_OR_RETURN(std::string repo, reader.Str());
        ASSIGN_OR_RETURN(std::string digest, reader.Str());
        ASSIGN_OR_RETURN(std::string name, reader.Str());
        if (ref.tag.empty() || name == ref.Tagged()) names.push_back(std::move(name));
        return OkStatus();
      }));
    } else {
      names.push_back(ref.Tagged());
    }
    for (const auto& name : names) {
      ASSIGN_OR_RETURN(auto value, txn.Get(kImages, RecordKey(name)));
      if (!value) continue;
      ASSIGN_OR_RETURN(ImageInfo info, oci::DecodeRecord(*value));
      ASSIGN_OR_RETURN(Reference stored, ParseReference(name));
      RETURN_IF_ERROR(txn.Delete(kImages, RecordKey(name)));
      RETURN_IF_ERROR(txn.Delete(kImageDigests, DigestKey(stored.Repository(), info.manifest_digest, name)));
      removed.push_back(name);
    }
    if (removed.empty()) return NotFound(fmt::format("image {} not found in the local image store", ref.String()));
    return OkStatus();
  }));
  if (Status gc = CollectGarbage(); !gc.ok())
    return Internal(fmt::format("removed {}, but deleting its unused files failed (the next removal retries): {}",
                                removed.front(), gc.message()));
  return removed;
}

Status ImageStore::EnsureUnpacked(const Layer& layer) {
  std::string target = LayerPath(layer.diff_id);
  if (fs::exists(target)) return OkStatus();
  ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir_ + "/lock", FileLock::Mode::kShared));
  if (fs::exists(target)) return OkStatus();
  std::string blob = BlobPath(layer.digest);
  auto digest = internal::UncompressedDigest(blob);
  if (!digest.ok() || digest->digest != layer.diff_id)
    return DataLoss(fmt::format("layer {} is missing or corrupt in {}; remove the image and import it again",
                                layer.digest.str(), dir_));
  ASSIGN_OR_RETURN(std::string work_path, MakeWorkDir());
  ScopedDir work(work_path);
  std::string dir = work.path() + "/layer";
  if (::mkdir(dir.c_str(), 0755) != 0) return Unavailable(fmt::format("cannot create {}", dir));
  ByteBudget budget = NewBudget(dir_, max_unpacked_bytes_);
  RETURN_IF_ERROR(WithLayer(internal::UnpackLayer(blob, dir, budget), layer.diff_id));
  if (::rename(dir.c_str(), target.c_str()) != 0 && errno != EEXIST && errno != ENOTEMPTY)
    return Internal(fmt::format("cannot move layer into {}: {}", target, std::strerror(errno)));
  return OkStatus();
}

StatusOr<ResolvedImage> ImageStore::Resolve(std::string_view reference) {
  ASSIGN_OR_RETURN(Reference ref, ParseReference(reference));
  RETURN_IF_ERROR(EnsureLayout());
  ASSIGN_OR_RETURN(std::optional<ImageInfo> info, Lookup(ref));
  if (!info) return NotFound(fmt::format("image {} not found in the local image store", ref.String()));
  ResolvedImage out;
  out.reference = info->reference;
  out.manifest_digest = info->manifest_digest;
  out.registry_digest = info->registry_digest;
  auto config_json = ReadFile(BlobPath(info->config_digest), oci::kMaxDocumentBytes);
  if (!config_json.ok() || Sha256Of(*config_json) != info->config_digest)
    return DataLoss(fmt::format("the config blob {} of {} is missing or corrupt; remove the image and import it again",
                                info->config_digest.str(), info->reference));
  auto parsed = oci::ParseConfig(*config_json);
  if (!parsed.ok()) return DataLoss(fmt::format("the config of {}: {}", info->reference, parsed.status().message()));
  out.config = std::move(parsed->config);
  out.config_json = std::move(*config_json);
  for (const Layer& layer : info->layers) {
    RETURN_IF_ERROR(EnsureUnpacked(layer));
    out.layer_dirs.push_back(LayerPath(layer.diff_id));
  }
  return out;
}

namespace {

// Levenshtein distance (names are at most 255 characters).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// A failed pull's text plus where the image is not (see ResolveOrPull in the header).
std::string WordMiss(const Reference& ref, const Status& failure, const PullContext& context,
                     const std::vector<std::string>& near) {
  // With "CannotPullContainerError: " in front, a task's reason keeps ECS's 1024 characters.
  constexpr size_t kMaxText = 1024 - 26;
  const StatusCode code = failure.code();
  if (context.looked_in.empty() ||
      (code != StatusCode::kNotFound && code != StatusCode::kPermissionDenied && code != StatusCode::kUnavailable))
    return std::string(failure.message());
  const std::vector<std::string>& places = context.looked_in;
  std::string note;
  if (code == StatusCode::kNotFound) {
    note = fmt::format("{} is neither in this node's image store", ref.String());
    for (const auto& place : places) note += " nor in " + place;
  } else {
    note = fmt::format("{} is not in this node's image store", ref.String());
    for (size_t i = 0; i + 1 < places.size(); ++i) note += ", nor in " + places[i];
    note += ", and " + places.back() +
            (code == StatusCode::kPermissionDenied ? " refused it (no such repository, or it needs credentials)"
                                                   : " could not be reached or could not serve it");
  }
  if (!near.empty()) {
    note += " (did you mean " + near[0];
    for (size_t i = 1; i < near.size(); ++i) note += (i + 1 == near.size() ? " or " : ", ") + near[i];
    note += "?)";
  }
  std::string text(failure.message());
  if (text.size() + 2 + note.size() > kMaxText) {
    size_t keep = kMaxText > note.size() + 5 ? kMaxText - note.size() - 5 : 0;
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;  // not inside a character
    text = text.substr(0, keep) + "…";
  }
  return text + "; " + note;
}

}  // namespace

StatusOr<std::vector<std::string>> ImageStore::NearNames(std::string_view reference) {
  ASSIGN_OR_RETURN(Reference asked, ParseReference(reference));
  ASSIGN_OR_RETURN(std::vector<ImageInfo> all, List());
  const std::string want = asked.Familiar();
  // A typo: a few characters off, more for longer names.
  const size_t bound = std::max<size_t>(2, want.size() / 6);
  std::vector<std::pair<size_t, std::string>> near;
  for (const ImageInfo& info : all) {
    if (info.pulled_with_credentials) continue;
    auto ref = ParseReference(info.reference);
    if (!ref.ok()) continue;
    const std::string name = ref->Familiar();
    if (size_t d = EditDistance(want, name); d > 0 && d <= bound) near.emplace_back(d, name);
  }
  std::sort(near.begin(), near.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < near.size() && i < 3; ++i) out.push_back(near[i].second);
  return out;
}

StatusOr<ResolvedImage> ImageStore::ResolveOrPull(std::string_view reference, Puller& puller,
                                                  const PullProgressFn& progress,
                                                  const RegistryCredentials* credentials) {
  auto parsed = ParseReference(reference);
  if (!parsed.ok()) return InvalidArgument(fmt::format("invalid reference format: {}", parsed.status().message()));
  const Reference& ref = *parsed;
  RETURN_IF_ERROR(EnsureLayout());
  ASSIGN_OR_RETURN(std::optional<ImageInfo> info, Lookup(ref));
  if (info && info->pulled_with_credentials) {
    // A private image: reused only if this caller's own pull would be admitted now.
    if (!puller.ChecksAccess()) {
      info.reset();  // pulled again, with this caller's credentials
    } else {
      PullContext context;
      context.credentials = credentials;
      if (Status allowed = puller.CheckAccess(ref, context); !allowed.ok()) return MissStatus(ref, allowed, context);
    }
  }
  if (!info) {
    // Callers with other credentials (or none) never share a pull: each is its own proof of access.
    std::string key = ref.String();
    if (credentials != nullptr)
      key += "\n" + Sha256Of(credentials->username + "\n" + credentials->password).str();
    std::shared_ptr<PullFlight> flight;
    bool leader = false;
    {
      std::lock_guard lock(flights_mu_);
      auto [it, inserted] = flights_.try_emplace(key);
      if (inserted) it->second = std::make_shared<PullFlight>();
      flight = it->second;
      leader = inserted;
    }
    Status status;
    if (leader) {
      if (progress) {
        std::lock_guard lock(flight->mu);
        flight->watchers.push_back(progress);
      }
      status = PullAndImport(ref, puller, *flight, credentials);
      {
        std::lock_guard lock(flights_mu_);
        flights_.erase(key);
      }
      std::lock_guard lock(flight->mu);
      flight->done = true;
      flight->status = status;
      flight->cv.notify_all();
    } else {
      std::unique_lock lock(flight->mu);
      if (progress) flight->watchers.push_back(progress);
      flight->cv.wait(lock, [&] { return flight->done; });
      status = flight->status;
    }
    RETURN_IF_ERROR(status);
  }
  return Resolve(reference);
}

StatusOr<ResolvedImage> ImageStore::ResolveOrPull(std::string_view reference, const PullProgressFn& progress,
                                                  const RegistryCredentials* credentials) {
  if (puller_ != nullptr) return ResolveOrPull(reference, *puller_, progress, credentials);
  auto r = Resolve(reference);
  if (r.status().code() == StatusCode::kNotFound)
    return NotFound(fmt::format("{}: not found in the local image store, and this node does not pull from registries",
                                reference));
  return r;
}

Status ImageStore::MissStatus(const Reference& ref, const Status& failure, const PullContext& context) {
  std::vector<std::string> near = context.near_names;
  if (!context.looked_in.empty()) {
    auto mine = NearNames(ref.String());
    if (mine.ok())
      for (auto& n : *mine)
        if (std::find(near.begin(), near.end(), n) == near.end()) near.push_back(std::move(n));
    if (near.size() > 3) near.resize(3);
  }
  return Status(failure.code(), WordMiss(ref, failure, context, near));
}

Status ImageStore::PullAndImport(const Reference& ref, Puller& puller, PullFlight& flight,
                                 const RegistryCredentials* credentials) {
  // Shared: garbage collection empties tmp/ only when no import holds the lock.
  ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir_ + "/lock", FileLock::Mode::kShared));
  ASSIGN_OR_RETURN(std::string work_path, MakeWorkDir());
  ScopedDir work(work_path);
  const std::string archive = work.path() + "/pulled.tar";
  PullContext context;
  context.credentials = credentials;
  context.progress = [&flight](const PullProgress& p) {
    std::lock_guard l(flight.mu);
    for (const auto& watcher : flight.watchers) watcher(p);
  };
  if (Status pulled = puller.Pull(ref, archive, context); !pulled.ok()) return MissStatus(ref, pulled, context);
  ImportOptions options;
  options.name = ref.String();
  options.pulled_with_credentials = credentials != nullptr;
  options.registry_digest = context.registry_digest;
  auto imported = ImportArchive(archive, options);
  if (!imported.ok())
    return Status(imported.status().code(),
                  fmt::format("ref pull has been retried 1 time(s): the pulled image {} cannot be stored: {}",
                              ref.String(), imported.status().message()));
  return OkStatus();
}

Status ImageStore::WithLayout(std::string_view reference, const std::function<Status(const Layout&)>& use) {
  ASSIGN_OR_RETURN(Reference ref, ParseReference(reference));
  RETURN_IF_ERROR(EnsureLayout());
  // Shared: no garbage collection deletes the blobs (or the layout in tmp/) while `use` reads them.
  ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir_ + "/lock", FileLock::Mode::kShared));
  ASSIGN_OR_RETURN(std::optional<ImageInfo> info, Lookup(ref));
  if (!info || info->pulled_with_credentials)
    return NotFound(fmt::format("image {} not found in the local image store", ref.String()));
  ASSIGN_OR_RETURN(std::string manifest, ReadFile(BlobPath(info->manifest_digest), oci::kMaxDocumentBytes));
  if (Sha256Of(manifest) != info->manifest_digest)
    return DataLoss(fmt::format("the manifest blob {} of {} is missing or corrupt; remove the image and import it again",
                                info->manifest_digest.str(), info->reference));
  // The manifest's own media type (OCI for everything the store writes; a pulled Docker manifest
  // kept by digest has its own).
  ASSIGN_OR_RETURN(oci::Manifest parsed, oci::ParseManifest(manifest));
  oci::Descriptor descriptor;
  descriptor.media_type = parsed.media_type.empty() ? std::string(oci::kMediaTypeManifest) : parsed.media_type;
  descriptor.digest = info->manifest_digest;
  descriptor.size = manifest.size();
  ASSIGN_OR_RETURN(std::string work_path, MakeWorkDir());
  ScopedDir work(work_path);
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"oci-layout", R"({"imageLayoutVersion":"1.0.0"})"},
                                   std::pair<std::string, std::string>{"index.json", oci::EncodeIndex(descriptor)}}) {
    std::ofstream out(work.path() + "/" + name, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return Internal(fmt::format("cannot write {}/{}", work.path(), name));
  }
  return use(Layout{work.path(), dir_ + "/blobs", *info});
}

Status ImageStore::CollectGarbage() {
  RETURN_IF_ERROR(EnsureLayout());
  ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir_ + "/lock", FileLock::Mode::kExclusive));
  return CollectGarbageLocked();
}

void ImageStore::CollectGarbageIfIdle() {
  auto lock = FileLock::TryAcquire(dir_ + "/lock", FileLock::Mode::kExclusive);
  if (lock.ok() && lock->has_value()) CollectGarbageLocked().IgnoreError();
}

Status ImageStore::CollectGarbageLocked() {
  std::set<std::string> blobs, layers;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    blobs.clear();
    layers.clear();
    return ScanAll(txn, kImages, store::Range{}, [&](const store::Row& row) -> Status {
      // A record that does not decode stops the collection: its files might be deleted otherwise.
      ASSIGN_OR_RETURN(ImageInfo info, oci::DecodeRecord(row.value));
      blobs.emplace(info.manifest_digest.hex());
      blobs.emplace(info.config_digest.hex());
      for (const auto& l : info.layers) {
        blobs.emplace(l.digest.hex());
        layers.emplace(l.diff_id.hex());
      }
      return OkStatus();
    });
  }));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_ + "/blobs/sha256", ec)) {
    std::string name = e.path().filename().string();
    if (IsSha256Hex(name) && !blobs.contains(name)) fs::remove(e.path(), ec);
  }
  if (ec) return Internal(fmt::format("cannot clean {}/blobs: {}", dir_, ec.message()));
  for (const auto& e : fs::directory_iterator(dir_ + "/layers", ec)) {
    std::string name = e.path().filename().string();
    if (!IsSha256Hex(name) || layers.contains(name)) continue;
    // Renamed away first, so a half-deleted tree never sits under a layer's name.
    std::string doomed = fmt::format("{}/tmp/gc-{}", dir_, HexEncode(RandomBytes(8)));
    if (::rename(e.path().c_str(), doomed.c_str()) != 0)
      return Internal(fmt::format("cannot remove layer {}: {}", name, std::strerror(errno)));
  }
  if (ec) return Internal(fmt::format("cannot clean {}/layers: {}", dir_, ec.message()));
  // Nothing in tmp/ belongs to a running import: they all hold the shared lock.
  for (const auto& e : fs::directory_iterator(dir_ + "/tmp", ec)) fs::remove_all(e.path(), ec);
  if (ec) return Internal(fmt::format("cannot clean {}/tmp: {}", dir_, ec.message()));
  return OkStatus();
}

}  // namespace paddock::agent::images
