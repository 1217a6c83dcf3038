#include "kms/keyring.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "common/encoding.h"
#include "common/private_files.h"

namespace paddock::kms {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"kms", [](int code) -> std::string_view {
    switch (static_cast<Error>(code)) {
      case Error::kInvalidKeyId: return "InvalidKeyId";
      case Error::kInvalidCiphertext: return "InvalidCiphertext";
      case Error::kKeyFile: return "KeyFile";
    }
    return "Unknown";
  }};
  return kDomain;
}

namespace {

constexpr std::string_view kMagic = "PK1";
constexpr size_t kKeyBytes = 32;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kMaxKeyId = 256;

void AppendU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

void AppendLengthPrefixed(std::string& out, std::string_view s) {
  AppendU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// The context both HKDF's info and the AEAD's additional data start from: length-prefixed, so no
// choice of field contents can make two different bindings read the same.
std::string BindingBytes(std::string_view purpose, const Binding& at) {
  std::string out;
  AppendLengthPrefixed(out, purpose);
  AppendLengthPrefixed(out, at.account);
  AppendLengthPrefixed(out, at.region);
  return out;
}

Status CryptoFailure(std::string_view what) { return Internal(fmt::format("kms: OpenSSL {} failed", what)); }

Status BadBlob() {
  return DataLoss("The ciphertext is invalid or was not made for this resource.", Error::kInvalidCiphertext);
}

// HKDF-SHA256(master, info = "paddock-kms" | account | region | key id): the data key of a key id.
StatusOr<std::string> DeriveDataKey(const std::string& master, const Binding& at, std::string_view key_id) {
  std::string info = BindingBytes("paddock-kms data key", at);
  AppendLengthPrefixed(info, key_id);
  // Fetched once: OpenSSL 3's fetch is a provider lookup under a lock, dearer than the HKDF itself.
  static EVP_KDF* const kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  if (kdf == nullptr) return CryptoFailure("HKDF fetch");
  EVP_KDF_CTX* ctx = EVP_KDF_CTX_new(kdf);
  if (ctx == nullptr) return CryptoFailure("HKDF context");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(master.data()), master.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
      OSSL_PARAM_construct_end(),
  };
  std::string out(kKeyBytes, '\0');
  int rc = EVP_KDF_derive(ctx, reinterpret_cast<unsigned char*>(out.data()), out.size(), params);
  EVP_KDF_CTX_free(ctx);
  if (rc != 1) return CryptoFailure("HKDF derive");
  return out;
}

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
};

// AES-256-GCM, fetched once (as the HKDF above).
const EVP_CIPHER* Gcm() {
  static EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  return cipher;
}

const unsigned char* U(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }
unsigned char* U(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

// The additional data: the binding, the resource and the blob's header.
std::string AdditionalData(const Binding& at, std::string_view header) {
  std::string aad = BindingBytes("paddock-kms aad", at);
  AppendLengthPrefixed(aad, at.resource);
  AppendLengthPrefixed(aad, header);
  return aad;
}

std::string FormatKeyFile(const std::vector<std::pair<uint32_t, std::string>>& keys) {
  std::string out;
  for (const auto& [version, key] : keys) out += fmt::format("{} {}\n", version, HexEncode(key));
  return out;
}

enum class Replace { kNo, kYes };

// Writes `contents` to `path` through a 0600 temporary file, fsync'd, then renamed over it
// (Replace::kYes) or linked to it (kNo: AlreadyExists when another process made it first, so two
// processes starting on a fresh state directory never end up with different keys).
Status WriteKeyFile(const std::string& path, const std::string& contents, Replace replace) {
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), HexEncode(RandomBytes(8)));
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Unavailable(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return Unavailable(fmt::format("cannot fsync {}: {}", tmp, std::strerror(errno)));
  }
  ::close(fd);
  if (replace == Replace::kNo) {
    const int rc = ::link(tmp.c_str(), path.c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (rc != 0 && err == EEXIST) return AlreadyExists(fmt::format("{} exists", path));
    if (rc != 0) return Unavailable(fmt::format("cannot link {} to {}: {}", tmp, path, std::strerror(err)));
  } else if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Unavailable(fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(errno)));
  }
  // The rename is durable once the directory is.
  std::string dir = path.substr(0, path.rfind('/'));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return OkStatus();
}

StatusOr<std::vector<std::pair<uint32_t, std::string>>> ParseKeyFile(const std::string& path,
                                                                      const std::string& text) {
  auto malformed = [&](size_t line) {
    return DataLoss(fmt::format("kms: key file {} is malformed at line {}", path, line), Error::kKeyFile);
  };
  std::vector<std::pair<uint32_t, std::string>> keys;
  std::istringstream in(text);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos) return malformed(n);
    uint32_t version = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + space, version);
    if (ec != std::errc() || end != line.data() + space || version == 0) return malformed(n);
    auto key = HexDecode(std::string_view(line).substr(space + 1));
    if (!key.ok() || key->size() != kKeyBytes) return malformed(n);
    if (!keys.empty() && keys.back().first >= version) return malformed(n);
    keys.emplace_back(version, std::move(*key));
  }
  if (keys.empty()) return DataLoss(fmt::format("kms: key file {} holds no key", path), Error::kKeyFile);
  return keys;
}

}  // namespace

bool IsValidKeyId(std::string_view key_id) {
  if (key_id.empty() || key_id.size() > kMaxKeyId) return false;
  return std::all_of(key_id.begin(), key_id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
           c == '/' || c == '_' || c == '-';
  });
}

StatusOr<std::unique_ptr<KeyRing>> KeyRing::Open(const std::string& state_dir) {
  const std::string dir = state_dir + "/keys";
  RETURN_IF_ERROR(MakePrivateDir(dir));
  const std::string path = dir + "/master.key";
  RETURN_IF_ERROR(TightenPrivateFile(path));
  std::vector<std::pair<uint32_t, std::string>> keys;
  struct stat st;
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (!exists) {
    if (errno != ENOENT)
      return Unavailable(fmt::format("kms: cannot stat {}: {}", path, std::strerror(errno)), Error::kKeyFile);
    keys.emplace_back(1, RandomBytes(kKeyBytes));
    Status made = WriteKeyFile(path, FormatKeyFile(keys), Replace::kNo);
    if (made.code() == StatusCode::kAlreadyExists) {
      keys.clear();  // another process made it first: read theirs
      exists = ::lstat(path.c_str(), &st) == 0;
    } else if (!made.ok()) {
      return made;
    }
  }
  if (exists) {
    // Never follow a link planted in place of the key file.
    if (!S_ISREG(st.st_mode))
      return DataLoss(fmt::format("kms: {} is not a regular file", path), Error::kKeyFile);
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return Unavailable(fmt::format("kms: cannot read {}", path), Error::kKeyFile);
    ASSIGN_OR_RETURN(keys, ParseKeyFile(path, text.str()));
  }
  std::vector<Version> versions;
  for (auto& [v, k] : keys) versions.push_back(Version{v, std::move(k)});
  return std::unique_ptr<KeyRing>(new KeyRing(path, std::move(versions)));
}

std::unique_ptr<KeyRing> KeyRing::InMemory(std::vector<std::pair<uint32_t, std::string>> keys) {
  std::vector<Version> versions;
  for (auto& [v, k] : keys) versions.push_back(Version{v, std::move(k)});
  return std::unique_ptr<KeyRing>(new KeyRing("", std::move(versions)));
}

uint32_t KeyRing::newest_version() const {
  std::lock_guard lock(mutex_);
  return keys_.back().version;
}

StatusOr<std::string> KeyRing::Encrypt(const Binding& at, std::string_view key_id,
                                       std::string_view plaintext) const {
  if (!IsValidKeyId(key_id))
    return InvalidArgument(fmt::format("Invalid key id: {}", key_id), Error::kInvalidKeyId);
  uint32_t version;
  std::string master;
  {
    std::lock_guard lock(mutex_);
    version = keys_.back().version;
    master = keys_.back().key;
  }
  ASSIGN_OR_RETURN(std::string key, DeriveDataKey(master, at, key_id));

  std::string blob(kMagic);
  AppendU32(blob, version);
  blob.push_back(static_cast<char>((key_id.size() >> 8) & 0xFF));
  blob.push_back(static_cast<char>(key_id.size() & 0xFF));
  blob.append(key_id);
  const std::string aad = AdditionalData(at, blob);
  const std::string nonce = RandomBytes(kNonceBytes);
  blob.append(nonce);

  CipherCtx c;
  if (c.ctx == nullptr) return CryptoFailure("cipher context");
  if (Gcm() == nullptr || EVP_EncryptInit_ex(c.ctx, Gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1 ||
      EVP_EncryptInit_ex(c.ctx, nullptr, nullptr, U(key), U(nonce)) != 1)
    return CryptoFailure("AES-GCM init");
  int len = 0;
  if (EVP_EncryptUpdate(c.ctx, nullptr, &len, U(aad), static_cast<int>(aad.size())) != 1)
    return CryptoFailure("AES-GCM aad");
  const size_t header = blob.size();
  blob.resize(header + plaintext.size() + kTagBytes);
  unsigned char* out = reinterpret_cast<unsigned char*>(blob.data()) + header;
  if (!plaintext.empty() &&
      EVP_EncryptUpdate(c.ctx, out, &len, U(plaintext), static_cast<int>(plaintext.size())) != 1)
    return CryptoFailure("AES-GCM encrypt");
  int tail = 0;
  if (EVP_EncryptFinal_ex(c.ctx, out + plaintext.size(), &tail) != 1) return CryptoFailure("AES-GCM final");
  if (EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, out + plaintext.size()) != 1)
    return CryptoFailure("AES-GCM tag");
  return blob;
}

StatusOr<std::string> KeyRing::Decrypt(const Binding& at, std::string_view blob) const {
  const size_t fixed = kMagic.size() + 4 + 2;
  if (blob.size() < fixed || !blob.starts_with(kMagic)) return BadBlob();
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(blob[i])); };
  const uint32_t version = byte(3) << 24 | byte(4) << 16 | byte(5) << 8 | byte(6);
  const size_t key_id_len = byte(7) << 8 | byte(8);
  if (blob.size() < fixed + key_id_len + kNonceBytes + kTagBytes) return BadBlob();
  const std::string_view key_id = blob.substr(fixed, key_id_len);
  const std::string_view header = blob.substr(0, fixed + key_id_len);
  const std::string_view nonce = blob.substr(header.size(), kNonceBytes);
  const std::string_view ciphertext =
      blob.substr(header.size() + kNonceBytes, blob.size() - header.size() - kNonceBytes - kTagBytes);
  std::string tag(blob.substr(blob.size() - kTagBytes));

  std::string master;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(keys_.begin(), keys_.end(), [&](const Version& v) { return v.version == version; });
    if (it == keys_.end()) return BadBlob();
    master = it->key;
  }
  ASSIGN_OR_RETURN(std::string key, DeriveDataKey(master, at, key_id));
  const std::string aad = AdditionalData(at, header);

  CipherCtx c;
  if (c.ctx == nullptr) return CryptoFailure("cipher context");
  if (Gcm() == nullptr || EVP_DecryptInit_ex(c.ctx, Gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1 ||
      EVP_DecryptInit_ex(c.ctx, nullptr, nullptr, U(key), U(nonce)) != 1)
    return CryptoFailure("AES-GCM init");
  int len = 0;
  if (EVP_DecryptUpdate(c.ctx, nullptr, &len, U(aad), static_cast<int>(aad.size())) != 1)
    return CryptoFailure("AES-GCM aad");
  std::string plain(ciphertext.size(), '\0');
  if (!ciphertext.empty() &&
      EVP_DecryptUpdate(c.ctx, U(plain), &len, U(ciphertext), static_cast<int>(ciphertext.size())) != 1)
    return BadBlob();
  if (EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) != 1)
    return CryptoFailure("AES-GCM set tag");
  int tail = 0;
  if (EVP_DecryptFinal_ex(c.ctx, U(plain) + plain.size(), &tail) != 1) return BadBlob();
  return plain;
}

namespace {

// The MAC key's "key id" holds a space, which IsValidKeyId refuses: no data key is ever the MAC key.
constexpr std::string_view kMacKeyId = "paddock mac";

StatusOr<std::string> MacWith(const std::string& master, uint32_t version, const Binding& at, std::string_view data) {
  ASSIGN_OR_RETURN(std::string key, DeriveDataKey(master, at, kMacKeyId));
  std::string input;
  AppendLengthPrefixed(input, at.resource);
  input.append(data);
  unsigned char digest[32];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), U(input), input.size(), digest, &len) == nullptr ||
      len != sizeof(digest))
    return CryptoFailure("HMAC-SHA256");
  return fmt::format("{}:", version) + std::string(reinterpret_cast<const char*>(digest), len);
}

}  // namespace

StatusOr<std::string> KeyRing::Mac(const Binding& at, std::string_view data) const {
  uint32_t version;
  std::string master;
  {
    std::lock_guard lock(mutex_);
    version = keys_.back().version;
    master = keys_.back().key;
  }
  return MacWith(master, version, at, data);
}

bool KeyRing::MacMatches(const Binding& at, std::string_view data, std::string_view mac) const {
  size_t colon = mac.find(':');
  uint32_t version = 0;
  if (colon == std::string_view::npos) return false;
  auto [end, ec] = std::from_chars(mac.data(), mac.data() + colon, version);
  if (ec != std::errc() || end != mac.data() + colon) return false;
  std::string master;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(keys_.begin(), keys_.end(), [&](const Version& v) { return v.version == version; });
    if (it == keys_.end()) return false;
    master = it->key;
  }
  auto expected = MacWith(master, version, at, data);
  return expected.ok() && expected->size() == mac.size() &&
         CRYPTO_memcmp(expected->data(), mac.data(), mac.size()) == 0;
}

StatusOr<uint32_t> KeyRing::Rotate() {
  std::lock_guard lock(mutex_);
  Version next{keys_.back().version + 1, RandomBytes(kKeyBytes)};
  if (!path_.empty()) {
    std::vector<std::pair<uint32_t, std::string>> all;
    for (const Version& v : keys_) all.emplace_back(v.version, v.key);
    all.emplace_back(next.version, next.key);
    RETURN_IF_ERROR(WriteKeyFile(path_, FormatKeyFile(all), Replace::kYes));
  }
  keys_.push_back(std::move(next));
  return keys_.back().version;
}

}  // namespace paddock::kms
