// SHA-256 and HMAC-SHA256 through OpenSSL's EVP interfaces, with the algorithm objects fetched
// once and a context reused per thread, so a request costs no provider lookups.
#pragma once

#include <array>
#include <string_view>

namespace paddock::aws::internal {

using Sha256Digest = std::array<unsigned char, 32>;

Sha256Digest Sha256(std::string_view data);
Sha256Digest HmacSha256(std::string_view key, std::string_view data);

inline std::string_view AsView(const Sha256Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

// Constant-time equality (CRYPTO_memcmp); false when the sizes differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace paddock::aws::internal
