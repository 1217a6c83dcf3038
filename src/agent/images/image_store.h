// agent/images: the node's content-addressed image store, in OCI layout under the state directory.
//
//   <images_dir>/blobs/sha256/<hex>     layers (tar or tar+gzip), configs, manifests
//   <images_dir>/layers/<diff-id hex>/  each layer unpacked once, whiteouts in overlayfs form,
//                                       ready to stack as overlayfs lowerdirs
//   <images_dir>/tmp/                   work space of imports in progress
//   <images_dir>/lock                   flock: imports and unpacks hold it shared, GC exclusive
//
// Names live in the Store, so `paddock image …` in one process and a server in another see the
// same images at once. Images are node-local: not per account, no region.
//
//   ImageStore images(store, state_dir + "/images");
//   ASSIGN_OR_RETURN(auto refs, images.ImportArchive("busybox.tar"));
//   ASSIGN_OR_RETURN(ResolvedImage img, images.Resolve("busybox"));
//   mount("overlay", ..., "lowerdir=" + img.LowerDir() + ",upperdir=...");
//
// Records (agent/images/schema.h):
//   images         (reference) -> {reference, manifestDigest, configDigest,
//                                  layers: [{digest, diffId, size, mediaType}], size, createdAt}
//   image_digests  (repository, manifest digest, reference) -> ""   for name@sha256:… lookups
//
// Bounds: an import (or a pull's import) writes at most `max_unpacked_bytes` of unpacked layers
// (and as much of staged archive files), and never more than the state directory's free space
// less a reserve (min(256 MiB, 5% of the filesystem)), nor makes more entries than the file
// system's free inodes less a reserve (min(65,536, 5%)); the bytes are counted as they come out of
// the decompressor, every entry as at least one 4 KiB block (internal::ByteBudget), so a gzip bomb
// — of data, of empty files or of directories — stops at the bound, not after. Past a bound the
// import fails with ResourceExhausted and leaves nothing: no blob, no layer, no record.
//
// Privacy: <images_dir> is 0700 (made so, and tightened when looser): unpacked layers keep their
// setuid bits, and no local user may reach one through the state directory.
//
// Crash safety: files are written and fsync'd before the transaction that names them commits;
// files no record names (a crashed import's, or a removed image's) are deleted by the next
// CollectGarbage, which every Remove runs after its transaction.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "agent/images/image.h"
#include "agent/images/puller.h"
#include "agent/images/reference.h"
#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::agent::images {

struct ImportOptions {
  // The name for an archive image that carries none; when the archive names an image by a tag
  // only (an OCI ref.name like "1.0"), the repository of this name gets that tag.
  std::string name;
  // The archive was pulled with a task's private registry credentials: every name written is
  // marked so (ImageInfo::pulled_with_credentials).
  bool pulled_with_credentials = false;
  // The archive was pulled from a registry that served this digest for `name` (ImageInfo::
  // registry_digest): kept with every name written.
  std::optional<Digest> registry_digest = std::nullopt;
};

// A command as users write it for --cmd / --entrypoint: a JSON array of strings
// ('["sh", "-c", "echo hi"]'), or words separated by spaces ("httpd -f -p 80").
StatusOr<std::vector<std::string>> ParseCommand(std::string_view text);

// The bound on what one import may unpack, unless the node says otherwise (images.max_unpacked_bytes).
inline constexpr uint64_t kDefaultMaxUnpackedBytes = uint64_t{20} << 30;

class ImageStore {
 public:
  ImageStore(store::Store& store, std::string images_dir, Clock& clock = SystemClock::Get());

  // The bound on the unpacked layers one import may write (see the header). REQUIRES: called
  // before any import.
  void SetMaxUnpackedBytes(uint64_t bytes) { max_unpacked_bytes_ = bytes; }

  // Imports every image of an OCI image-layout tar (index.json + blobs/) or a `docker save` tar
  // (manifest.json + layer tars), either optionally gzip-compressed. Every blob is checked against
  // its digest and every layer against the config's diff_ids before anything is named; a bad
  // archive leaves nothing behind. Returns the canonical references written; a name that
  // pointed elsewhere is moved (as `docker load` does). Re-importing is a no-op.
  StatusOr<std::vector<std::string>> ImportArchive(const std::string& path, const ImportOptions& options = {});

  // A one-layer image from a directory tree or a tar (optionally compressed), like `docker
  // import`. A directory becomes a deterministic tar (see internal::WriteTreeTar), so the same
  // tree and config give the same digests. The config is `config` with architecture amd64 and
  // os linux unless set. Returns the canonical reference.
  StatusOr<std::string> ImportRootfs(const std::string& path, std::string_view reference,
                                     const ImageConfig& config = {});

  // Every image, ordered by reference.
  StatusOr<std::vector<ImageInfo>> List();

  // Removes `reference` (name:tag), or with name@sha256:… every tag of that repository pointing
  // at that manifest; then collects garbage. NotFound if nothing matched. Returns what was removed.
  StatusOr<std::vector<std::string>> Remove(std::string_view reference);

  // What a runtime needs to start `reference`: the config and the unpacked layers. A layer
  // directory that has gone missing is unpacked again from its blob.
  StatusOr<ResolvedImage> Resolve(std::string_view reference);

  // Resolve, first pulling through `puller` when the store lacks the reference. Concurrent calls
  // for one reference in this process share one pull and its outcome (other processes on the
  // state directory may pull it too; the import is content-addressed, so that only costs time).
  // `progress` (may be empty) sees the pull's progress, also when the call joins another's pull.
  // Errors read as ECS's after "CannotPullContainerError: ": the puller's, an invalid reference
  // ("invalid reference format: …"), or a pulled archive the store refuses. A miss — the puller
  // says where it looked (PullContext::looked_in) — adds where the image is not, and the store's
  // names close to it: "<ECS text>; docker.io/library/busybx:demo is neither in this node's image
  // store nor in its registry docker.io (did you mean busybox:demo?)"; the ECS text is cut so
  // that the whole stays within ECS's 1024 characters with the prefix.
  //
  // Private images. `credentials` (may be null) are the caller's own for the reference's registry
  // (a container's repositoryCredentials): a pull made with them marks what it stores
  // (ImageInfo::pulled_with_credentials), and pulls share a flight only with callers of the same
  // credentials. A stored image so marked is reused only after the registry admitted this
  // caller's credentials (none: anonymous) to its manifest now (Puller::CheckAccess; a puller
  // that cannot check pulls again): the store is the node's, shared by every account, and a
  // private image must not run for a task whose own pull would be refused. A refusal reads as
  // that pull's failure would, whether the image was stored or not.
  StatusOr<ResolvedImage> ResolveOrPull(std::string_view reference, Puller& puller,
                                        const PullProgressFn& progress = {},
                                        const RegistryCredentials* credentials = nullptr);
  // The same through the puller set with SetPuller; without one, a reference not in the store is
  // NotFound ("REF: not found in the local image store, and this node does not pull").
  StatusOr<ResolvedImage> ResolveOrPull(std::string_view reference, const PullProgressFn& progress = {},
                                        const RegistryCredentials* credentials = nullptr);
  // REQUIRES: called before any ResolveOrPull; `puller` outlives this store (nullptr: none).
  void SetPuller(Puller* puller) { puller_ = puller; }

  // The store's names closest to `reference` by edit distance (a typo's likely meaning), closest
  // first, at most 3, in their familiar form ("busybox:demo" for docker.io/library/busybox:demo).
  // Never an image pulled with credentials (its name is its puller's business).
  StatusOr<std::vector<std::string>> NearNames(std::string_view reference);

  // `reference`'s image lent as an OCI image layout for reading (skopeo's oci: transport), for
  // `use` only (NotFound for an image pulled with credentials: it is lent to no one): `layout_dir` holds oci-layout and an index.json naming only its manifest; its blobs
  // are the store's own, in `blob_dir` (skopeo's --src-shared-blob-dir). Garbage collection waits
  // until `use` returns. NotFound when the store lacks the reference.
  struct Layout {
    std::string layout_dir;
    std::string blob_dir;
    ImageInfo image;
  };
  Status WithLayout(std::string_view reference, const std::function<Status(const Layout&)>& use);

  // Deletes every blob and unpacked layer no image names, and what interrupted imports left in
  // tmp/. Waits for imports in progress to finish.
  Status CollectGarbage();

  const std::string& images_dir() const { return dir_; }

 private:
  struct Pending;

  Status EnsureLayout();
  std::string BlobPath(const Digest& d) const;
  std::string LayerPath(const Digest& diff_id) const;
  StatusOr<std::string> MakeWorkDir();
  // Moves the pending import's files into place, makes them durable and commits its records.
  StatusOr<std::vector<std::string>> Install(Pending& pending);
  StatusOr<std::optional<ImageInfo>> Lookup(const Reference& ref);
  Status EnsureUnpacked(const Layer& layer);
  // After an import moved a name: collect garbage unless someone holds the lock (then a later
  // Remove or CollectGarbage does it). Never waits, so it is safe under a caller's shared lock.
  void CollectGarbageIfIdle();
  // REQUIRES: the exclusive lock is held.
  Status CollectGarbageLocked();

  // One pull in flight, shared by every ResolveOrPull of its reference.
  struct PullFlight {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;  // GUARDED_BY(mu)
    Status status;      // GUARDED_BY(mu)
    std::vector<PullProgressFn> watchers;  // GUARDED_BY(mu): every caller's progress
  };
  // A failed pull's (or access check's) status, worded with where the image is not and the
  // store's names close to it.
  Status MissStatus(const Reference& ref, const Status& failure, const PullContext& context);
  // Pulls `ref` into tmp/ (with `credentials`, may be null) and imports it; a miss is worded with
  // where the image is not.
  Status PullAndImport(const Reference& ref, Puller& puller, PullFlight& flight,
                       const RegistryCredentials* credentials);

  store::Store& store_;
  std::string dir_;
  Clock& clock_;
  std::once_flag layout_once_;
  Status layout_status_;
  Puller* puller_ = nullptr;
  uint64_t max_unpacked_bytes_ = kDefaultMaxUnpackedBytes;
  std::mutex flights_mu_;
  std::map<std::string, std::shared_ptr<PullFlight>> flights_;  // GUARDED_BY(flights_mu_), by reference
};

}  // namespace paddock::agent::images
