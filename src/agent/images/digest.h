// Content digests as OCI writes them ("sha256:<64 lowercase hex>"), and a streaming SHA-256.
//
//   Sha256 h;
//   h.Update(bytes);
//   Digest d = h.Finish();          // d.str() == "sha256:9f86d0..."
//   ASSIGN_OR_RETURN(Digest p, Digest::Parse(text));   // refuses other algorithms and bad hex
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace paddock::agent::images {

class Digest {
 public:
  Digest() = default;
  // Accepts only "sha256:" followed by 64 lowercase hex digits.
  static StatusOr<Digest> Parse(std::string_view text);
  // From 64 lowercase hex digits. REQUIRES: IsSha256Hex(hex).
  static Digest FromHex(std::string_view hex);

  const std::string& str() const { return text_; }
  // The 64 hex digits (what names the blob file).
  std::string_view hex() const { return std::string_view(text_).substr(7); }
  bool empty() const { return text_.empty(); }

  friend bool operator==(const Digest&, const Digest&) = default;
  friend auto operator<=>(const Digest&, const Digest&) = default;

 private:
  std::string text_;
};

bool IsSha256Hex(std::string_view hex);

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t n);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  // The digest of everything passed to Update. The object is spent afterwards.
  Digest Finish();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

Digest Sha256Of(std::string_view bytes);
// Digest and size of a file's contents.
struct FileDigest {
  Digest digest;
  uint64_t size = 0;
};
StatusOr<FileDigest> Sha256OfFile(const std::string& path);

}  // namespace paddock::agent::images
