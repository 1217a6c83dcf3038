#include "agent/images/digest.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/encoding.h"

namespace paddock::agent::images {

bool IsSha256Hex(std::string_view hex) {
  if (hex.size() != 64) return false;
  for (char c : hex)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

StatusOr<Digest> Digest::Parse(std::string_view text) {
  constexpr std::string_view kPrefix = "sha256:";
  if (text.substr(0, kPrefix.size()) != kPrefix || !IsSha256Hex(text.substr(kPrefix.size())))
    return InvalidArgument(fmt::format("invalid digest '{}': expected sha256:<64 lowercase hex digits>", text));
  return FromHex(text.substr(kPrefix.size()));
}

Digest Digest::FromHex(std::string_view hex) {
  if (!IsSha256Hex(hex)) std::abort();  // a caller's bug, never input: input goes through Parse
  Digest d;
  d.text_ = "sha256:" + std::string(hex);
  return d;
}

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

// OpenSSL failures here mean a broken installation, not bad input: crash loudly.
Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1) std::abort();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::Update(const void* data, size_t n) {
  if (n > 0 && EVP_DigestUpdate(ctx_->md, data, n) != 1) std::abort();
}

Digest Sha256::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, out, &len) != 1) std::abort();
  return Digest::FromHex(HexEncode(std::string_view(reinterpret_cast<const char*>(out), len)));
}

Digest Sha256Of(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.Finish();
}

StatusOr<FileDigest> Sha256OfFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  Sha256 h;
  FileDigest out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    h.Update(buf, n);
    out.size += n;
  }
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Internal(fmt::format("cannot read {}", path));
  out.digest = h.Finish();
  return out;
}

}  // namespace paddock::agent::images
