// Everything agent/images does with tar streams, through libarchive: reading image archives,
// unpacking layers safely, and writing a layer from a directory tree.
//
// All input is untrusted. A path that is absolute, climbs out with "..", or reaches through a
// symlink is refused with InvalidArgument naming the entry; so is a truncated or corrupt stream.
// What an archive may write is bounded by a ByteBudget, counted as the bytes come out of the
// decompressor — never from sizes an archive or a manifest claims — so a gzip bomb stops within
// one block of its bound.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "agent/images/digest.h"
#include "common/status.h"

namespace paddock::agent::images::internal {

// What one import may still write under the images directory.
//
// Two kinds of bytes are counted: a layer's unpacked content (its data plus one 4 KiB block per
// entry: what an entry costs on disk at least — a directory takes a block, a file's last partial
// block a whole one — so a million empty directories count as the 4 GiB they take, not as their
// 512-byte tar headers) and the files copied out of an image archive before they are verified
// (staged blobs). Each kind may reach `max_unpacked`; both together may reach `free_bytes` (the
// state directory's free space, less a reserve, when the import began). Every entry also takes
// an inode: at most `free_inodes` (the file system's free inodes, less a reserve) may be made, so
// a layer of millions of empty files cannot leave the node's file system without inodes. Past
// any bound the call that counted fails with ResourceExhausted, and the import leaves nothing
// behind (ImageStore's work directory goes).
//
// Copyable: a copy counts on its own, so a dry run (hashing a layer before unpacking it) can
// prove a layer fits without spending the real budget.
class ByteBudget {
 public:
  ByteBudget(uint64_t max_unpacked, uint64_t free_bytes, std::string dir, uint64_t free_inodes = UINT64_MAX);
  // No bound (tests, and reading what is already stored).
  static ByteBudget Unlimited();

  // Counts one more layer entry: an inode and kEntryBytes of unpacked content.
  Status Entry();
  // Counts `n` more bytes of unpacked layer content.
  Status Unpacked(uint64_t n);
  // Counts `n` more bytes copied out of an archive.
  Status Staged(uint64_t n);

  uint64_t unpacked() const { return unpacked_; }

 private:
  Status Check() const;

  uint64_t max_unpacked_;
  uint64_t free_bytes_;
  std::string dir_;
  uint64_t free_inodes_;
  uint64_t unpacked_ = 0;
  uint64_t staged_ = 0;
  uint64_t entries_ = 0;
};

// "20 GiB", "8 MiB", "512 bytes": a byte count as the messages above give it.
std::string HumanBytes(uint64_t bytes);

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

  // REQUIRES: stage_dir exists and is empty. Every byte written counts as Staged in `budget`.
  static StatusOr<StagedArchive> Stage(const std::string& archive, const std::string& stage_dir, ByteBudget& budget);

  // The file at `name` inside the archive, following the archive's own symlinks and hard links.
  // NotFound when the archive has no such file.
  StatusOr<const File*> Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name).ok(); }

 private:
  std::map<std::string, File> files_;
  std::map<std::string, std::string> links_;  // entry -> the entry it points at
};

// SHA-256 and size of the uncompressed bytes of a possibly compressed stream (a layer's diffID),
// optionally also writing those bytes to `out_path`. Every uncompressed byte counts in `budget`:
// as Staged when written to `out_path`, else as Unpacked (pass a copy for a dry run). Null: no
// bound (a stored blob being checked).
StatusOr<FileDigest> UncompressedDigest(const std::string& path, const std::string& out_path = {},
                                        ByteBudget* budget = nullptr);

// Whether the file starts with the gzip magic number.
StatusOr<bool> IsGzip(const std::string& path);

// Unpacks the layer tar (optionally compressed) at `layer` into the existing empty directory
// `dir`, preserving ownership, modes, times, xattrs, hard links, symlinks and devices. OCI
// whiteouts become overlayfs whiteouts: ".wh.NAME" a 0:0 character device NAME, ".wh..wh..opq"
// the xattr trusted.overlay.opaque=y on its directory. Entries' own trusted.overlay.* xattrs are
// dropped. Each entry counts 512 bytes plus its data in `budget` (Unpacked) as it is written; past
// the bound the unpack stops (the caller removes `dir`). REQUIRES: `dir` is a canonical path (no
// symlinks in it). Needs root (mknod, chown).
Status UnpackLayer(const std::string& layer, const std::string& dir, ByteBudget& budget);

// Writes an uncompressed tar of the tree under `dir` to `out_path`, deterministically: entries in
// byte order of their paths, numeric uid/gid and mode as on disk, mtime in whole seconds, no
// user or group names, atime or ctime; hard links kept. The root itself is not an entry. Sockets
// are skipped; extended attributes are not copied. The directory `skip` (the image store itself,
// when the tree contains it) is left out, with everything under it.
Status WriteTreeTar(const std::string& dir, const std::string& out_path, const std::string& skip = {});

}  // namespace paddock::agent::images::internal
