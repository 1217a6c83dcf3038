#include "agent/images/internal/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

namespace paddock::agent::images::internal {
namespace {

constexpr size_t kBlockSize = 1 << 16;
constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";

struct ReadDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteDeleter {
  void operator()(archive* a) const { archive_write_free(a); }
};
using ReadArchive = std::unique_ptr<archive, ReadDeleter>;
using WriteArchive = std::unique_ptr<archive, WriteDeleter>;

struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string ArchiveError(archive* a) {
  const char* s = archive_error_string(a);
  return s != nullptr ? s : "unknown libarchive error";
}

std::string Errno() { return std::strerror(errno); }

// Opens `path` for reading with every compression filter and the given format support.
StatusOr<ReadArchive> OpenRead(const std::string& path, bool raw) {
  ReadArchive a(archive_read_new());
  if (!a) return Internal("libarchive: out of memory");
  archive_read_support_filter_all(a.get());
  if (raw) {
    archive_read_support_format_raw(a.get());
  } else {
    archive_read_support_format_tar(a.get());
  }
  if (archive_read_open_filename(a.get(), path.c_str(), kBlockSize) != ARCHIVE_OK)
    return InvalidArgument(fmt::format("{} is not a tar archive ({})", path, ArchiveError(a.get())));
  return a;
}

// The next header, or nullptr at the end. InvalidArgument for a corrupt or truncated stream.
StatusOr<archive_entry*> NextHeader(archive* a, std::string_view what) {
  archive_entry* entry = nullptr;
  int r = archive_read_next_header(a, &entry);
  if (r == ARCHIVE_EOF) return static_cast<archive_entry*>(nullptr);
  if (r < ARCHIVE_WARN) return InvalidArgument(fmt::format("{} is not a valid tar archive: {}", what, ArchiveError(a)));
  return entry;
}

// Resolves `target` (a link's target, relative to the directory holding `from`) inside the
// archive root, or fails if it would leave it.
StatusOr<std::string> ResolveLink(std::string_view from, std::string_view target) {
  if (!target.empty() && target.front() == '/')
    return InvalidArgument(fmt::format("archive entry '{}' is a link to an absolute path", from));
  std::vector<std::string> parts;
  std::string_view dir = from.substr(0, from.rfind('/') == std::string_view::npos ? 0 : from.rfind('/'));
  std::string joined = dir.empty() ? std::string(target) : std::string(dir) + "/" + std::string(target);
  size_t start = 0;
  while (start <= joined.size()) {
    size_t slash = joined.find('/', start);
    std::string_view part(joined.data() + start, (slash == std::string::npos ? joined.size() : slash) - start);
    if (part == "..") {
      if (parts.empty()) return InvalidArgument(fmt::format("archive entry '{}' is a link leaving the archive", from));
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.emplace_back(part);
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

// Opens the directory `rel` under `root_fd` one component at a time without following symlinks,
// creating missing components when asked.
StatusOr<int> OpenDirBeneath(int root_fd, std::string_view rel, bool create) {
  int fd = ::dup(root_fd);
  if (fd < 0) return Internal(fmt::format("dup: {}", Errno()));
  size_t start = 0;
  while (start < rel.size()) {
    size_t slash = rel.find('/', start);
    std::string part(rel.substr(start, (slash == std::string_view::npos ? rel.size() : slash) - start));
    int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create) {
      if (::mkdirat(fd, part.c_str(), 0755) != 0 && errno != EEXIST) {
        ::close(fd);
        return Internal(fmt::format("mkdir {}: {}", rel, Errno()));
      }
      next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    int err = errno;
    ::close(fd);
    if (next < 0) {
      if (err == ELOOP || err == ENOTDIR)
        return InvalidArgument(fmt::format("layer path '{}' reaches through a symlink or a non-directory", rel));
      return Internal(fmt::format("open {}: {}", rel, std::strerror(err)));
    }
    fd = next;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return fd;
}

void SplitParent(std::string_view rel, std::string_view& parent, std::string_view& base) {
  size_t slash = rel.rfind('/');
  if (slash == std::string_view::npos) {
    parent = {};
    base = rel;
  } else {
    parent = rel.substr(0, slash);
    base = rel.substr(slash + 1);
  }
}

// Drops trusted.overlay.* xattrs: only the unpacker decides what overlayfs sees.
void StripOverlayXattrs(archive_entry* entry) {
  if (archive_entry_xattr_reset(entry) == 0) return;
  struct Xattr {
    std::string name;
    std::string value;
  };
  std::vector<Xattr> keep;
  bool dropped = false;
  const char* name;
  const void* value;
  size_t size;
  while (archive_entry_xattr_next(entry, &name, &value, &size) == ARCHIVE_OK) {
    if (std::string_view(name).starts_with("trusted.overlay.")) {
      dropped = true;
      continue;
    }
    keep.push_back({name, std::string(static_cast<const char*>(value), size)});
  }
  if (!dropped) return;
  archive_entry_xattr_clear(entry);
  for (const auto& x : keep) archive_entry_xattr_add_entry(entry, x.name.c_str(), x.value.data(), x.value.size());
}

// What every entry costs on disk at least, counted so that entries without data are not free: a
// directory takes a block, a file's last partial block a whole one (ext4's and XFS's 4 KiB).
// Counting the 512-byte tar header instead let a layer of 200,000 empty directories, counted as
// 98 MiB, take 789 MiB.
constexpr uint64_t kEntryBytes = 4096;

Status CopyData(archive* in, archive* out, std::string_view what, ByteBudget& budget) {
  const void* buf;
  size_t size;
  la_int64_t offset;
  while (true) {
    int r = archive_read_data_block(in, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) return OkStatus();
    if (r < ARCHIVE_WARN) return InvalidArgument(fmt::format("{}: {}", what, ArchiveError(in)));
    // Counted before the write: the bytes past the bound never reach the disk.
    RETURN_IF_ERROR(budget.Unpacked(size));
    if (archive_write_data_block(out, buf, size, offset) < ARCHIVE_WARN)
      return InvalidArgument(fmt::format("{}: {}", what, ArchiveError(out)));
  }
}

}  // namespace

ByteBudget::ByteBudget(uint64_t max_unpacked, uint64_t free_bytes, std::string dir, uint64_t free_inodes)
    : max_unpacked_(max_unpacked), free_bytes_(free_bytes), dir_(std::move(dir)), free_inodes_(free_inodes) {}

ByteBudget ByteBudget::Unlimited() { return ByteBudget(UINT64_MAX, UINT64_MAX, ""); }

Status ByteBudget::Entry() {
  ++entries_;
  unpacked_ += kEntryBytes;
  return Check();
}

Status ByteBudget::Unpacked(uint64_t n) {
  unpacked_ += n;
  return Check();
}

Status ByteBudget::Staged(uint64_t n) {
  staged_ += n;
  return Check();
}

Status ByteBudget::Check() const {
  if (unpacked_ > max_unpacked_)
    return ResourceExhausted(fmt::format("the image unpacks to more than {}, this node's limit (images.max_unpacked_bytes "
                                         "= {})",
                                         HumanBytes(max_unpacked_), max_unpacked_));
  if (staged_ > max_unpacked_)
    return ResourceExhausted(fmt::format("the image archive holds more than {}, this node's limit "
                                         "(images.max_unpacked_bytes = {})",
                                         HumanBytes(max_unpacked_), max_unpacked_));
  if (entries_ > free_inodes_)
    return ResourceExhausted(fmt::format("no inodes left on device: the image has more than the {} entries (files, "
                                         "directories, links) the file system of {} has room for",
                                         free_inodes_, dir_));
  if (unpacked_ + staged_ > free_bytes_)
    return ResourceExhausted(fmt::format("no space left on device: the image needs more than the {} free in {}",
                                         HumanBytes(free_bytes_), dir_));
  return OkStatus();
}

std::string HumanBytes(uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  for (v /= 1024; v >= 1024 && unit + 1 < std::size(kUnits); v /= 1024) ++unit;
  // Whole numbers print whole ("20 GiB"); others with one decimal ("1.5 MiB").
  if (v == static_cast<double>(static_cast<uint64_t>(v))) return fmt::format("{} {}", static_cast<uint64_t>(v), kUnits[unit]);
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

StatusOr<std::string> SafeRelative(std::string_view path) {
  if (!path.empty() && path.front() == '/')
    return InvalidArgument(fmt::format("archive entry '{}' has an absolute path", path));
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string_view part = path.substr(start, (slash == std::string_view::npos ? path.size() : slash) - start);
    if (part == "..") return InvalidArgument(fmt::format("archive entry '{}' climbs out with '..'", path));
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

StatusOr<StagedArchive> StagedArchive::Stage(const std::string& path, const std::string& stage_dir,
                                             ByteBudget& budget) {
  ASSIGN_OR_RETURN(ReadArchive a, OpenRead(path, /*raw=*/false));
  StagedArchive staged;
  size_t counter = 0;
  std::vector<char> buf(kBlockSize);
  while (true) {
    ASSIGN_OR_RETURN(archive_entry * entry, NextHeader(a.get(), path));
    if (entry == nullptr) break;
    const char* raw_name = archive_entry_pathname(entry);
    if (raw_name == nullptr) return InvalidArgument(fmt::format("{}: an entry has an unreadable name", path));
    ASSIGN_OR_RETURN(std::string name, SafeRelative(raw_name));
    if (name.empty()) continue;
    staged.files_.erase(name);
    staged.links_.erase(name);
    if (const char* hardlink = archive_entry_hardlink(entry); hardlink != nullptr) {
      ASSIGN_OR_RETURN(std::string target, SafeRelative(hardlink));
      staged.links_[name] = target;
      continue;
    }
    mode_t type = archive_entry_filetype(entry);
    if (type == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      ASSIGN_OR_RETURN(staged.links_[name], ResolveLink(name, target != nullptr ? target : ""));
      continue;
    }
    if (type != AE_IFREG) continue;
    File file;
    file.path = fmt::format("{}/{}", stage_dir, counter++);
    std::FILE* f = std::fopen(file.path.c_str(), "wb");
    if (f == nullptr) return Internal(fmt::format("cannot create {}: {}", file.path, Errno()));
    Sha256 hash;
    Status s;
    while (true) {
      la_ssize_t n = archive_read_data(a.get(), buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0) {
        s = InvalidArgument(fmt::format("{}: entry '{}': {}", path, name, ArchiveError(a.get())));
        break;
      }
      if (s = budget.Staged(static_cast<uint64_t>(n)); !s.ok()) break;
      hash.Update(buf.data(), static_cast<size_t>(n));
      file.size += static_cast<uint64_t>(n);
      if (std::fwrite(buf.data(), 1, static_cast<size_t>(n), f) != static_cast<size_t>(n)) {
        s = Internal(fmt::format("cannot write {}: {}", file.path, Errno()));
        break;
      }
    }
    if (std::fclose(f) != 0 && s.ok()) s = Internal(fmt::format("cannot write {}: {}", file.path, Errno()));
    RETURN_IF_ERROR(s);
    file.digest = hash.Finish();
    staged.files_[name] = std::move(file);
  }
  return staged;
}

StatusOr<const StagedArchive::File*> StagedArchive::Find(std::string_view name) const {
  auto clean = SafeRelative(name);
  if (!clean.ok()) return clean.status();
  std::string cur = *clean;
  for (int hops = 0; hops < 16; ++hops) {
    if (auto f = files_.find(cur); f != files_.end()) return &f->second;
    auto l = links_.find(cur);
    if (l == links_.end()) break;
    cur = l->second;
  }
  return NotFound(fmt::format("the archive has no file '{}'", name));
}

StatusOr<FileDigest> UncompressedDigest(const std::string& path, const std::string& out_path, ByteBudget* budget) {
  ASSIGN_OR_RETURN(ReadArchive a, OpenRead(path, /*raw=*/true));
  ASSIGN_OR_RETURN(archive_entry * entry, NextHeader(a.get(), path));
  if (entry == nullptr) return InvalidArgument(fmt::format("{} is empty", path));
  std::FILE* out = nullptr;
  if (!out_path.empty()) {
    out = std::fopen(out_path.c_str(), "wb");
    if (out == nullptr) return Internal(fmt::format("cannot create {}: {}", out_path, Errno()));
  }
  Sha256 hash;
  FileDigest result;
  std::vector<char> buf(kBlockSize);
  Status s;
  while (true) {
    la_ssize_t n = archive_read_data(a.get(), buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      s = InvalidArgument(fmt::format("{} is corrupt: {}", path, ArchiveError(a.get())));
      break;
    }
    if (budget != nullptr) {
      s = out != nullptr ? budget->Staged(static_cast<uint64_t>(n)) : budget->Unpacked(static_cast<uint64_t>(n));
      if (!s.ok()) break;
    }
    hash.Update(buf.data(), static_cast<size_t>(n));
    result.size += static_cast<uint64_t>(n);
    if (out != nullptr && std::fwrite(buf.data(), 1, static_cast<size_t>(n), out) != static_cast<size_t>(n)) {
      s = Internal(fmt::format("cannot write {}: {}", out_path, Errno()));
      break;
    }
  }
  if (out != nullptr && std::fclose(out) != 0 && s.ok()) s = Internal(fmt::format("cannot write {}", out_path));
  RETURN_IF_ERROR(s);
  result.digest = hash.Finish();
  return result;
}

StatusOr<bool> IsGzip(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound(fmt::format("cannot open {}: {}", path, Errno()));
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

Status UnpackLayer(const std::string& layer, const std::string& dir, ByteBudget& budget) {
  ASSIGN_OR_RETURN(ReadArchive in, OpenRead(layer, /*raw=*/false));
  WriteArchive out(archive_write_disk_new());
  if (!out) return Internal("libarchive: out of memory");
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                                ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  Fd root(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.fd < 0) return Internal(fmt::format("cannot open {}: {}", dir, Errno()));

  std::vector<std::string> whiteouts;  // paths to hide from lower layers
  std::vector<std::string> opaque;     // directories whose lower contents are hidden
  while (true) {
    ASSIGN_OR_RETURN(archive_entry * entry, NextHeader(in.get(), "layer"));
    if (entry == nullptr) break;
    const char* raw_name = archive_entry_pathname(entry);
    if (raw_name == nullptr) return InvalidArgument("layer: an entry has an unreadable name");
    ASSIGN_OR_RETURN(std::string rel, SafeRelative(raw_name));
    if (rel.empty()) continue;  // the root directory itself
    RETURN_IF_ERROR(budget.Entry());
    std::string_view parent, base;
    SplitParent(rel, parent, base);
    if (base == kOpaqueMarker) {
      opaque.emplace_back(parent);
      continue;
    }
    if (base.starts_with(kWhiteoutPrefix)) {
      std::string_view hidden = base.substr(kWhiteoutPrefix.size());
      if (hidden.empty() || hidden == "." || hidden == "..")
        return InvalidArgument(fmt::format("layer: invalid whiteout '{}'", raw_name));
      whiteouts.push_back(parent.empty() ? std::string(hidden) : fmt::format("{}/{}", parent, hidden));
      continue;
    }
    if (const char* hardlink = archive_entry_hardlink(entry); hardlink != nullptr) {
      ASSIGN_OR_RETURN(std::string target, SafeRelative(hardlink));
      if (target.empty()) return InvalidArgument(fmt::format("layer: '{}' is a hard link to the root", raw_name));
      archive_entry_copy_hardlink(entry, fmt::format("{}/{}", dir, target).c_str());
    }
    archive_entry_copy_pathname(entry, fmt::format("{}/{}", dir, rel).c_str());
    StripOverlayXattrs(entry);
    if (archive_write_header(out.get(), entry) < ARCHIVE_WARN)
      return InvalidArgument(fmt::format("layer: cannot unpack '{}': {}", rel, ArchiveError(out.get())));
    if (archive_entry_size(entry) > 0)
      RETURN_IF_ERROR(CopyData(in.get(), out.get(), fmt::format("layer: '{}'", rel), budget));
    if (archive_write_finish_entry(out.get()) < ARCHIVE_WARN)
      return InvalidArgument(fmt::format("layer: cannot unpack '{}': {}", rel, ArchiveError(out.get())));
  }
  if (archive_write_close(out.get()) < ARCHIVE_WARN)
    return InvalidArgument(fmt::format("layer: {}", ArchiveError(out.get())));

  for (const std::string& path : whiteouts) {
    std::string_view parent, base;
    SplitParent(path, parent, base);
    ASSIGN_OR_RETURN(int parent_fd, OpenDirBeneath(root.fd, parent, /*create=*/true));
    Fd p(parent_fd);
    std::string name(base);
    // An entry of this layer with the same name wins over its own whiteout.
    if (::mknodat(p.fd, name.c_str(), S_IFCHR | 0, makedev(0, 0)) != 0 && errno != EEXIST)
      return Internal(fmt::format("cannot create whiteout {}: {} (unpacking layers needs root)", path, Errno()));
  }
  for (const std::string& path : opaque) {
    ASSIGN_OR_RETURN(int fd, OpenDirBeneath(root.fd, path, /*create=*/true));
    Fd d(fd);
    if (::fsetxattr(d.fd, "trusted.overlay.opaque", "y", 1, 0) != 0)
      return Internal(fmt::format("cannot mark {} opaque: {} (unpacking layers needs root)", path, Errno()));
  }
  return OkStatus();
}

namespace {

struct TreeWriter {
  archive* out = nullptr;
  std::string root;
  dev_t skip_dev = 0;
  ino_t skip_ino = 0;
  bool has_skip = false;
  std::unordered_map<std::string, std::string> first_link;  // "dev:ino" -> first path
  std::vector<char> buf = std::vector<char>(kBlockSize);

  Status Walk(const std::string& rel) {
    std::string dir_path = rel.empty() ? root : root + "/" + rel;
    DIR* d = ::opendir(dir_path.c_str());
    if (d == nullptr) return InvalidArgument(fmt::format("cannot read directory {}: {}", dir_path, Errno()));
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      std::string child = rel.empty() ? n : rel + "/" + n;
      RETURN_IF_ERROR(Add(child));
    }
    return OkStatus();
  }

  Status Add(const std::string& rel) {
    std::string path = root + "/" + rel;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return InvalidArgument(fmt::format("cannot stat {}: {}", path, Errno()));
    if (S_ISSOCK(st.st_mode)) return OkStatus();
    if (has_skip && S_ISDIR(st.st_mode) && st.st_dev == skip_dev && st.st_ino == skip_ino) return OkStatus();
    std::unique_ptr<archive_entry, EntryDeleter> entry(archive_entry_new());
    archive_entry_copy_stat(entry.get(), &st);
    archive_entry_copy_pathname(entry.get(), rel.c_str());
    archive_entry_unset_atime(entry.get());
    archive_entry_unset_ctime(entry.get());
    archive_entry_unset_birthtime(entry.get());
    archive_entry_set_mtime(entry.get(), st.st_mtime, 0);
    archive_entry_set_dev(entry.get(), 0);
    archive_entry_set_ino(entry.get(), 0);
    archive_entry_set_nlink(entry.get(), 1);
    bool has_data = S_ISREG(st.st_mode);
    if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
      std::string key = fmt::format("{}:{}", st.st_dev, st.st_ino);
      auto [it, inserted] = first_link.emplace(key, rel);
      if (!inserted) {
        archive_entry_copy_hardlink(entry.get(), it->second.c_str());
        archive_entry_set_size(entry.get(), 0);
        has_data = false;
      }
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
      if (n < 0) return InvalidArgument(fmt::format("cannot read link {}: {}", path, Errno()));
      target.resize(static_cast<size_t>(n));
      archive_entry_copy_symlink(entry.get(), target.c_str());
    }
    if (archive_write_header(out, entry.get()) < ARCHIVE_WARN)
      return Internal(fmt::format("cannot write tar entry {}: {}", rel, ArchiveError(out)));
    if (has_data) {
      std::FILE* f = std::fopen(path.c_str(), "rb");
      if (f == nullptr) return InvalidArgument(fmt::format("cannot open {}: {}", path, Errno()));
      size_t n;
      Status s;
      while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
        if (archive_write_data(out, buf.data(), n) < 0) {
          s = Internal(fmt::format("cannot write tar data of {}: {}", rel, ArchiveError(out)));
          break;
        }
      }
      if (s.ok() && std::ferror(f)) s = InvalidArgument(fmt::format("cannot read {}", path));
      std::fclose(f);
      RETURN_IF_ERROR(s);
    }
    if (archive_write_finish_entry(out) < ARCHIVE_WARN)
      return Internal(fmt::format("cannot write tar entry {}: {}", rel, ArchiveError(out)));
    if (S_ISDIR(st.st_mode)) return Walk(rel);
    return OkStatus();
  }
};

}  // namespace

Status WriteTreeTar(const std::string& dir, const std::string& out_path, const std::string& skip) {
  WriteArchive out(archive_write_new());
  if (!out) return Internal("libarchive: out of memory");
  archive_write_set_format_pax_restricted(out.get());
  archive_write_add_filter_none(out.get());
  if (archive_write_open_filename(out.get(), out_path.c_str()) != ARCHIVE_OK)
    return Internal(fmt::format("cannot create {}: {}", out_path, ArchiveError(out.get())));
  TreeWriter writer;
  writer.out = out.get();
  writer.root = dir;
  struct stat skip_st;
  if (!skip.empty() && ::stat(skip.c_str(), &skip_st) == 0) {
    writer.skip_dev = skip_st.st_dev;
    writer.skip_ino = skip_st.st_ino;
    writer.has_skip = true;
  }
  RETURN_IF_ERROR(writer.Walk(""));
  if (archive_write_close(out.get()) != ARCHIVE_OK)
    return Internal(fmt::format("cannot finish {}: {}", out_path, ArchiveError(out.get())));
  return OkStatus();
}

}  // namespace paddock::agent::images::internal
