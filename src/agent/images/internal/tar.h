// Everything agent/images does with tar streams, through libarchive: reading image archives,
// unpacking layers safely, and writing a layer from a directory tree.
//
// All input is untrusted. A path that is absolute, climbs out with "..", or reaches through a
// symlink is refused with InvalidArgument naming the entry; so is a truncated or corrupt stream.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "agent/images/digest.h"
#include "common/status.h"

namespace paddock::agent::images::internal {

// `path` as a clean relative path: no leading "/", no ".." component, "." and empty components
// dropped ("./a//b/" -> "a/b"; "./" -> ""). InvalidArgument for absolute paths and "..".
StatusOr<std::string> SafeRelative(std::string_view path);

// An image archive (tar, optionally gzip-compressed) with its regular files copied out to a
// staging directory and hashed, so blobs can be verified and then renamed into the store.
class StagedArchive {
 public:
  struct File {
    std::string path;  // the staged copy
    Digest digest;
    uint64_t size = 0;
  };

  // REQUIRES: stage_dir exists and is empty.
  static StatusOr<StagedArchive> Stage(const std::string& archive, const std::string& stage_dir);

  // The file at `name` inside the archive, following the archive's own symlinks and hard links.
  // NotFound when the archive has no such file.
  StatusOr<const File*> Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name).ok(); }

 private:
  std::map<std::string, File> files_;
  std::map<std::string, std::string> links_;  // entry -> the entry it points at
};

// SHA-256 and size of the uncompressed bytes of a possibly compressed stream (a layer's diffID),
// optionally also writing those bytes to `out_path`.
StatusOr<FileDigest> UncompressedDigest(const std::string& path, const std::string& out_path = {});

// Whether the file starts with the gzip magic number.
StatusOr<bool> IsGzip(const std::string& path);

// Unpacks the layer tar (optionally compressed) at `layer` into the existing empty directory
// `dir`, preserving ownership, modes, times, xattrs, hard links, symlinks and devices. OCI
// whiteouts become overlayfs whiteouts: ".wh.NAME" a 0:0 character device NAME, ".wh..wh..opq"
// the xattr trusted.overlay.opaque=y on its directory. Entries' own trusted.overlay.* xattrs are
// dropped. REQUIRES: `dir` is a canonical path (no symlinks in it). Needs root (mknod, chown).
Status UnpackLayer(const std::string& layer, const std::string& dir);

// Writes an uncompressed tar of the tree under `dir` to `out_path`, deterministically: entries in
// byte order of their paths, numeric uid/gid and mode as on disk, mtime in whole seconds, no
// user or group names, atime or ctime; hard links kept. The root itself is not an entry. Sockets
// are skipped; extended attributes are not copied. The directory `skip` (the image store itself,
// when the tree contains it) is left out, with everything under it.
Status WriteTreeTar(const std::string& dir, const std::string& out_path, const std::string& skip = {});

}  // namespace paddock::agent::images::internal
