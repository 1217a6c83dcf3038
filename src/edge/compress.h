// edge/compress: Traefik v3.7's compress middleware — its choice of encoding for a request, the
// choice whether to compress a response (Traefik's own handler for br and zstd, klauspost's gzhttp
// for gzip, which differ), and the encoders (zlib, brotli, zstd). The proxy carries it out: it
// plans at the middleware's step (PlanCompression), then reads the response's first body bytes
// until DecideCompression answers, and encodes the body as it relays it.
//
//   ASSIGN_OR_RETURN(CompressConfig c, ParseCompressConfig(json::parse(R"({"encodings":["gzip"]})")));
//   CompressPlan plan = PlanCompression(c, "GET", request_headers);       // Accept-Encoding: gzip
//   switch (DecideCompression(plan, facts, first_bytes, /*done=*/false, &content_type)) { ... }
//   std::unique_ptr<Compressor> z = MakeCompressor(plan.encoding);
//   z->Write(piece, out); ... z->Finish(out);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "common/status.h"
#include "edge/middleware.h"

namespace paddock::edge {

// A media type as Go's mime.ParseMediaType reads it: type/subtype and parameter names lower-cased.
struct MediaType {
  std::string type;
  std::vector<std::pair<std::string, std::string>> params;
};
// Go's errors: "mime: no media type", "mime: expected slash after first token", "mime: expected
// token after slash", "mime: unexpected content after media subtype", "mime: invalid media parameter".
StatusOr<MediaType> ParseMediaType(std::string_view value);
// gzhttp's parsedContentType.equals: the same type, and when `configured` has parameters, the same
// ones.
bool MediaTypeMatches(const MediaType& configured, const MediaType& actual);
// Go's http.DetectContentType of a body's first (up to 512) bytes.
std::string_view DetectContentType(std::string_view data);

enum class Encoding { kIdentity, kGzip, kBrotli, kZstd };
std::string_view EncodingName(Encoding e);  // "gzip", "br", "zstd", "identity"

struct CompressConfig {
  std::vector<MediaType> excluded;  // application/grpc, then excludedContentTypes (types only)
  std::vector<MediaType> included;  // includedContentTypes (types only)
  size_t min_size = 1024;           // minResponseBodyBytes; only a positive one replaces 1024
  std::vector<Encoding> encodings = {Encoding::kGzip, Encoding::kBrotli, Encoding::kZstd};
  Encoding default_encoding = Encoding::kIdentity;  // none
};
// A compress middleware's options, Traefik's errors for what it refuses.
StatusOr<CompressConfig> ParseCompressConfig(const boost::json::value& config);

// What a compress step chose for a request: the encoding whose handler Traefik runs (kIdentity:
// none, the request goes on as without the middleware — no Vary either); for gzip, whether
// gzhttp's own reading of Accept-Encoding takes gzip (it does not compress otherwise).
struct CompressPlan {
  const CompressConfig* config = nullptr;
  Encoding encoding = Encoding::kIdentity;
  bool gzip_accepted = false;
};
CompressPlan PlanCompression(const CompressConfig& config, std::string_view method, const HeaderList& request_headers);

// The response's headers a decision reads (empty: absent).
struct ResponseFacts {
  std::string_view content_encoding{};
  std::string_view content_type{};
  bool has_content_type = false;  // the header is there (even empty)
  std::string_view content_range{};
  std::string_view content_length{};
  bool no_gzip_compression = false;  // gzhttp's No-Gzip-Compression header is there
};
enum class CompressVerdict { kCompress, kPlain, kNeedMore };
// Whether to compress a response whose body begins with `bytes` (`done`: that is all of it; a
// response without body bytes is never compressed). kNeedMore: read more first. `flushed`: the
// bytes were flushed as they came — Go's ReverseProxy flushes every write of a response without a
// length or of text/event-stream — which makes both writers decide on what they have (Traefik's
// compresses it whatever its size; gzhttp takes a missing length as minResponseBodyBytes). For
// gzip a response without Content-Type gets the sniffed one (`*set_content_type`, else left empty).
CompressVerdict DecideCompression(const CompressPlan& plan, const ResponseFacts& facts, std::string_view bytes,
                                  bool done, std::string* set_content_type, bool flushed = false);

// A streaming encoder: Write appends what it has to `out`; Flush makes everything written so far
// decodable (a sync flush); Finish ends the stream. After an error of the library failed() holds
// and the output is not to be sent.
class Compressor {
 public:
  virtual ~Compressor() = default;
  virtual void Write(std::string_view in, std::string& out) = 0;
  virtual void Flush(std::string& out) = 0;
  virtual void Finish(std::string& out) = 0;
  bool failed() const { return failed_; }

 protected:
  bool failed_ = false;
};
// Null when the library cannot make one (out of memory).
std::unique_ptr<Compressor> MakeCompressor(Encoding encoding);
// About the most memory an encoder of `encoding` holds (what the proxy takes from its body budget
// while one runs): 256 KiB for zlib, 2 MiB for a zstd level-3 stream, 8 MiB for brotli's quality 6
// (a 4 MiB window and its tables).
size_t CompressorMemory(Encoding encoding);

}  // namespace paddock::edge
