// Builds tar archives in memory for tests: layers, `docker save` archives and OCI layouts,
// including hostile ones (absolute paths, "..", links through symlinks).
//
//   TarBuilder t;
//   t.Dir("etc").File("etc/hosts", "127.0.0.1 localhost\n").Symlink("bin/sh", "busybox");
//   std::string layer = t.Finish();            // or t.Finish(Gzip(true))
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace paddock::agent::images::testing {

struct Gzip {
  explicit Gzip(bool v) : value(v) {}
  bool value;
};

class TarBuilder {
 public:
  TarBuilder& File(std::string_view path, std::string_view content, int mode = 0644, int uid = 0, int gid = 0) {
    return Add(path, AE_IFREG, mode, content, {}, {}, uid, gid);
  }
  TarBuilder& Dir(std::string_view path, int mode = 0755) { return Add(path, AE_IFDIR, mode, {}, {}, {}); }
  TarBuilder& Symlink(std::string_view path, std::string_view target) {
    return Add(path, AE_IFLNK, 0777, {}, target, {});
  }
  TarBuilder& Hardlink(std::string_view path, std::string_view target) {
    return Add(path, AE_IFREG, 0644, {}, {}, target);
  }
  // An extended attribute on the entry added last.
  TarBuilder& Xattr(std::string_view name, std::string_view value) {
    entries_.back().xattrs.emplace_back(std::string(name), std::string(value));
    return *this;
  }
  // A file whose header claims `claimed` bytes but whose data stops early (a truncated archive).
  std::string FinishTruncated(size_t keep) {
    std::string all = Finish();
    return all.substr(0, keep);
  }

  std::string Finish(Gzip gzip = Gzip(false)) {
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (gzip.value) {
      archive_write_add_filter_gzip(a);
    } else {
      archive_write_add_filter_none(a);
    }
    std::string out;
    archive_write_open(a, &out, nullptr, &TarBuilder::WriteCb, nullptr);
    for (const auto& e : entries_) {
      archive_entry* entry = archive_entry_new();
      archive_entry_copy_pathname(entry, e.path.c_str());
      archive_entry_set_filetype(entry, e.type);
      archive_entry_set_perm(entry, static_cast<mode_t>(e.mode));
      archive_entry_set_uid(entry, e.uid);
      archive_entry_set_gid(entry, e.gid);
      archive_entry_set_mtime(entry, 1700000000, 0);
      if (!e.symlink.empty()) archive_entry_copy_symlink(entry, e.symlink.c_str());
      if (!e.hardlink.empty()) archive_entry_copy_hardlink(entry, e.hardlink.c_str());
      archive_entry_set_size(entry, static_cast<la_int64_t>(e.content.size()));
      for (const auto& [k, v] : e.xattrs) archive_entry_xattr_add_entry(entry, k.c_str(), v.data(), v.size());
      if (archive_write_header(a, entry) != ARCHIVE_OK) throw std::runtime_error(archive_error_string(a));
      if (!e.content.empty()) archive_write_data(a, e.content.data(), e.content.size());
      archive_entry_free(entry);
    }
    archive_write_close(a);
    archive_write_free(a);
    return out;
  }

 private:
  struct Entry {
    std::string path;
    unsigned type;
    int mode;
    std::string content, symlink, hardlink;
    int uid = 0, gid = 0;
    std::vector<std::pair<std::string, std::string>> xattrs = {};
  };
  TarBuilder& Add(std::string_view path, unsigned type, int mode, std::string_view content, std::string_view symlink,
                  std::string_view hardlink, int uid = 0, int gid = 0) {
    entries_.push_back(Entry{std::string(path), type, mode, std::string(content), std::string(symlink),
                             std::string(hardlink), uid, gid});
    return *this;
  }
  static la_ssize_t WriteCb(archive*, void* data, const void* buf, size_t n) {
    static_cast<std::string*>(data)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
  }
  std::vector<Entry> entries_;
};

// The uncompressed bytes of a gzip (or any libarchive-readable) stream.
inline std::string Gunzip(const std::string& compressed) {
  archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_raw(a);
  archive_read_open_memory(a, compressed.data(), compressed.size());
  archive_entry* entry;
  std::string out;
  if (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
    char buf[4096];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  archive_read_free(a);
  return out;
}

}  // namespace paddock::agent::images::testing
