// Byte encodings and randomness used across modules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace paddock {

std::string HexEncode(std::string_view bytes);
StatusOr<std::string> HexDecode(std::string_view hex);
std::string Base64UrlEncode(std::string_view bytes);  // no padding
StatusOr<std::string> Base64UrlDecode(std::string_view text);

// RFC 3986 percent-encoding: every byte but the unreserved A-Z a-z 0-9 - . _ ~ becomes %XX
// (uppercase hex): a query value, a form field, a path segment.
std::string PercentEncode(std::string_view s);
// The reverse: each valid %XX is its byte; a '%' not followed by two hex digits stays as it is.
// `plus_is_space`: '+' is a space, as in an HTML form's (application/x-www-form-urlencoded) query.
std::string PercentDecode(std::string_view s, bool plus_is_space = false);

// Appends code point `cp` (at most 0x10FFFF, not a surrogate) as UTF-8.
void AppendUtf8(std::string& out, uint32_t cp);

// XML character data as text: &amp; &lt; &gt; &quot; &apos; and numeric references (&#39;, &#x27;,
// as UTF-8) are decoded; anything else — an unknown or unterminated reference — stays as it is.
std::string XmlUnescape(std::string_view s);

// Text from elsewhere made safe to print on a terminal: every C0 control but tab (ESC, CR, BEL,
// backspace, …), DEL and the C1 controls (U+0080..U+009F, as UTF-8) become "\xNN" (their code),
// so no escape sequence in a tenant's log line or event can move the cursor, rewrite what the
// screen showed or talk to the terminal, and an error message quoting a hostile value stays one
// line (ecs/taskdef's). Everything else is unchanged.
std::string TerminalSafe(std::string_view s);

// Cryptographically secure random bytes (OpenSSL RAND_bytes).
std::string RandomBytes(size_t n);
// A random RFC 4122 version-4 UUID, lowercase ("0f8fad5b-d9cb-469f-a165-70867728950e"). Its 122
// random bits are RAND_bytes output taken from a per-thread buffer (refilled after a fork, so a
// child never repeats its parent's); for ids, where it is called per request. Keys and secrets
// take RandomBytes.
std::string RandomUuid();
// `n` random characters from `alphabet`.
std::string RandomString(size_t n, std::string_view alphabet);

// FNV-1a, 64 bits: a stable, non-cryptographic name hash (the same in every build and release:
// names derived from it, e.g. network namespaces, survive upgrades).
uint64_t Fnv1a64(std::string_view s);

// Whether `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace paddock
