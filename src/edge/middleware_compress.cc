// Traefik's compress middleware (edge/compress.h): Go's mime.ParseMediaType and
// http.DetectContentType, Traefik's Accept-Encoding negotiation, the two response writers' rules
// (Traefik's for br and zstd, gzhttp's for gzip), and the encoders.
#include "edge/compress.h"

#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "edge/internal/middleware_util.h"

namespace paddock::edge {
namespace {

using mw::GetHeader;
using mw::HeaderNameEquals;

// Go's mime isTokenChar.
bool IsTokenChar(char c) {
  if (c <= ' ' || c >= 0x7f) return false;
  return std::string_view(R"(()<>@,;:\"/[]?=)").find(c) == std::string_view::npos;
}

std::string_view TrimLeftSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r' ||
                        s.front() == '\v' || s.front() == '\f'))
    s.remove_prefix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::pair<std::string_view, std::string_view> ConsumeToken(std::string_view v) {
  size_t n = 0;
  while (n < v.size() && IsTokenChar(v[n])) ++n;
  return {v.substr(0, n), v.substr(n)};
}

// Go's consumeValue: a token, or a quoted string (a backslash escapes a tspecial only; before
// anything else it is itself, as MSIE writes paths).
std::pair<std::string, std::string_view> ConsumeValue(std::string_view v) {
  if (v.empty()) return {"", v};
  if (v.front() != '"') {
    auto [token, rest] = ConsumeToken(v);
    return {std::string(token), rest};
  }
  constexpr std::string_view kTSpecials = R"(()<>@,;:\"/[]?=)";
  std::string out;
  for (size_t i = 1; i < v.size(); ++i) {
    const char c = v[i];
    if (c == '"') return {out, v.substr(i + 1)};
    if (c == '\\' && i + 1 < v.size() && kTSpecials.find(v[i + 1]) != std::string_view::npos) {
      out += v[++i];
      continue;
    }
    if (c == '\r' || c == '\n') return {"", v};
    out += c;
  }
  return {"", v};  // no closing quote
}

// Go's handleContentType (gzhttp): whether `ct` is one of `types`; all are when the list is empty.
bool ContentTypeListed(const std::vector<MediaType>& types, std::string_view ct, bool* parsed) {
  StatusOr<MediaType> m = ParseMediaType(ct);
  *parsed = m.ok();
  if (!m.ok()) return false;
  return std::any_of(types.begin(), types.end(), [&](const MediaType& t) { return MediaTypeMatches(t, *m); });
}

// Traefik's parseAcceptableEncodings + getCompressionEncoding over every Accept-Encoding value.
Encoding Negotiate(const CompressConfig& c, const std::vector<std::string_view>& values) {
  if (values.size() == 1 && values[0].empty()) return Encoding::kIdentity;  // "no coding wanted"
  auto priority = [&](std::string_view type) -> int {
    if (type == "*") return -1;
    if (type == "identity") return static_cast<int>(c.encodings.size());
    for (size_t i = 0; i < c.encodings.size(); ++i)
      if (EncodingName(c.encodings[i]) == type) return static_cast<int>(i);
    return -2;  // not supported
  };
  std::string best_type;
  double best_weight = 0;
  int best_priority = 0;
  bool any = false;
  for (std::string_view line : values) {
    std::string compact;
    for (char ch : line)
      if (ch != ' ') compact += ch;
    std::string_view rest = compact;
    while (true) {
      const size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      const size_t semi = item.find(';');
      std::string_view type = item.substr(0, semi);
      const int p = priority(type);
      if (p != -2) {
        double weight = 1.0;
        bool acceptable = true;
        if (semi != std::string_view::npos && item.substr(semi + 1).starts_with("q=")) {
          std::string_view q = item.substr(semi + 3);
          double w = 0;
          auto [end, ec] = std::from_chars(q.data(), q.data() + q.size(), w);
          if (ec != std::errc() || end != q.data() + q.size()) w = 0;  // Go's ParseFloat error: 0
          if (w == 0) acceptable = false;
          weight = w;
        }
        if (acceptable && (!any || weight > best_weight || (weight == best_weight && p < best_priority))) {
          best_type = std::string(type);
          best_weight = weight;
          best_priority = p;
          any = true;
        }
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (!any) return Encoding::kIdentity;  // not acceptable: Traefik does not encode
  if (best_type == "*") return c.default_encoding != Encoding::kIdentity ? c.default_encoding : c.encodings.front();
  for (Encoding e : c.encodings)
    if (EncodingName(e) == best_type) return e;
  return Encoding::kIdentity;
}

// gzhttp's acceptsGzip: the first Accept-Encoding value's gzip coding has a q above 0.
bool GzhttpAcceptsGzip(std::string_view value) {
  double gzip_q = 0;
  std::string_view rest = value;
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view coding_text = rest.substr(0, comma);
    std::string coding;
    double q = 1.0;
    size_t n = 0;
    for (std::string_view left = coding_text;; ++n) {
      const size_t semi = left.find(';');
      std::string_view part = left.substr(0, semi);
      while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
      while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
      q = 1.0;  // gzhttp resets it for every part
      if (n == 0) {
        coding = Lower(part);
      } else if (part.starts_with("q=")) {
        std::string_view text = part.substr(2);
        double v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        q = (ec != std::errc() || end != text.data() + text.size()) ? 0 : std::clamp(v, 0.0, 1.0);
      }
      if (semi == std::string_view::npos) break;
      left.remove_prefix(semi + 1);
    }
    if (!coding.empty() && coding == "gzip") gzip_q = q;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return gzip_q > 0;
}

// ---- Go's http.DetectContentType (net/http/sniff.go) ----

bool IsWs(unsigned char b) { return b == '\t' || b == '\n' || b == '\x0c' || b == '\r' || b == ' '; }
bool IsTt(unsigned char b) { return b == ' ' || b == '>'; }

// An HTML signature: after leading whitespace, `sig` in any case, then a space or '>'.
bool HtmlSig(std::string_view data, std::string_view sig) {
  size_t i = 0;
  while (i < data.size() && IsWs(static_cast<unsigned char>(data[i]))) ++i;
  if (data.size() - i < sig.size() + 1) return false;
  for (size_t k = 0; k < sig.size(); ++k) {
    char d = data[i + k];
    if (sig[k] >= 'A' && sig[k] <= 'Z' && d >= 'a' && d <= 'z') d = static_cast<char>(d - 'a' + 'A');
    if (d != sig[k]) return false;
  }
  return IsTt(static_cast<unsigned char>(data[i + sig.size()]));
}

bool Masked(std::string_view data, std::string_view mask, std::string_view pattern, bool skip_ws) {
  size_t i = 0;
  if (skip_ws)
    while (i < data.size() && IsWs(static_cast<unsigned char>(data[i]))) ++i;
  if (data.size() - i < pattern.size()) return false;
  for (size_t k = 0; k < pattern.size(); ++k)
    if ((static_cast<unsigned char>(data[i + k]) & static_cast<unsigned char>(mask[k])) !=
        static_cast<unsigned char>(pattern[k]))
      return false;
  return true;
}

bool Mp4(std::string_view data) {
  if (data.size() < 12) return false;
  const uint32_t box = (static_cast<uint32_t>(static_cast<unsigned char>(data[0])) << 24) |
                       (static_cast<uint32_t>(static_cast<unsigned char>(data[1])) << 16) |
                       (static_cast<uint32_t>(static_cast<unsigned char>(data[2])) << 8) |
                       static_cast<uint32_t>(static_cast<unsigned char>(data[3]));
  if (data.size() < box || box % 4 != 0) return false;
  if (data.substr(4, 4) != "ftyp") return false;
  for (size_t st = 8; st < box; st += 4) {
    if (st == 12) continue;  // the version
    if (data.substr(st, 3) == "mp4") return true;
  }
  return false;
}

}  // namespace

StatusOr<MediaType> ParseMediaType(std::string_view v) {
  const std::string_view base = v.substr(0, v.find(';'));
  std::string type = Lower(base);
  {
    std::string_view t = type;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    type = std::string(t);
  }
  auto [first, rest] = ConsumeToken(type);
  if (first.empty()) return InvalidArgument("mime: no media type");
  if (!rest.empty()) {
    if (rest.front() != '/') return InvalidArgument("mime: expected slash after first token");
    auto [sub, after] = ConsumeToken(rest.substr(1));
    if (sub.empty()) return InvalidArgument("mime: expected token after slash");
    if (!after.empty()) return InvalidArgument("mime: unexpected content after media subtype");
  }
  MediaType out{type, {}};
  std::string_view params = v.substr(base.size());
  while (!params.empty()) {
    params = TrimLeftSpace(params);
    if (params.empty()) break;
    // consumeMediaParam
    std::string_view r = params;
    bool ok = false;
    if (r.front() == ';') {
      r = TrimLeftSpace(r.substr(1));
      auto [key, after_key] = ConsumeToken(r);
      if (!key.empty()) {
        r = TrimLeftSpace(after_key);
        if (!r.empty() && r.front() == '=') {
          r = TrimLeftSpace(r.substr(1));
          auto [value, after_value] = ConsumeValue(r);
          if (!(value.empty() && after_value == r)) {
            const std::string name = Lower(key);
            for (const auto& p : out.params)
              if (p.first == name) return InvalidArgument("mime: duplicate parameter name");
            out.params.emplace_back(name, value);
            params = after_value;
            ok = true;
          }
        }
      }
    }
    if (!ok) {
      std::string_view trimmed = params;
      while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.remove_suffix(1);
      if (trimmed == ";") break;  // a trailing semicolon is ignored
      return InvalidArgument("mime: invalid media parameter");
    }
  }
  return out;
}

bool MediaTypeMatches(const MediaType& configured, const MediaType& actual) {
  if (configured.type != actual.type) return false;
  if (configured.params.empty()) return true;
  if (configured.params.size() != actual.params.size()) return false;
  for (const auto& [k, v] : configured.params) {
    auto it = std::find_if(actual.params.begin(), actual.params.end(), [&](const auto& p) { return p.first == k; });
    if (it == actual.params.end() || it->second != v) return false;
  }
  return true;
}

std::string_view DetectContentType(std::string_view data) {
  if (data.size() > 512) data = data.substr(0, 512);
  static constexpr std::string_view kHtml[] = {"<!DOCTYPE HTML", "<HTML", "<HEAD", "<SCRIPT", "<IFRAME", "<H1",
                                               "<DIV", "<FONT", "<TABLE", "<A", "<STYLE", "<TITLE", "<B",
                                               "<BODY", "<BR", "<P", "<!--"};
  for (std::string_view sig : kHtml)
    if (HtmlSig(data, sig)) return "text/html; charset=utf-8";
  using namespace std::string_view_literals;
  if (Masked(data, "\xFF\xFF\xFF\xFF\xFF"sv, "<?xml"sv, true)) return "text/xml; charset=utf-8";
  if (data.starts_with("%PDF-")) return "application/pdf";
  if (data.starts_with("%!PS-Adobe-")) return "application/postscript";
  if (Masked(data, "\xFF\xFF\x00\x00"sv, "\xFE\xFF\x00\x00"sv, false)) return "text/plain; charset=utf-16be";
  if (Masked(data, "\xFF\xFF\x00\x00"sv, "\xFF\xFE\x00\x00"sv, false)) return "text/plain; charset=utf-16le";
  if (Masked(data, "\xFF\xFF\xFF\x00"sv, "\xEF\xBB\xBF\x00"sv, false)) return "text/plain; charset=utf-8";
  struct Exact {
    std::string_view sig, type;
  };
  static constexpr Exact kExact[] = {
      {"\x00\x00\x01\x00"sv, "image/x-icon"}, {"\x00\x00\x02\x00"sv, "image/x-icon"}, {"BM"sv, "image/bmp"},
      {"GIF87a"sv, "image/gif"},              {"GIF89a"sv, "image/gif"},
  };
  for (const Exact& e : kExact)
    if (data.starts_with(e.sig)) return e.type;
  if (Masked(data, "\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF\xFF\xFF"sv, "RIFF\x00\x00\x00\x00WEBPVP"sv, false))
    return "image/webp";
  if (data.starts_with("\x89PNG\x0D\x0A\x1A\x0A"sv)) return "image/png";
  if (data.starts_with("\xFF\xD8\xFF"sv)) return "image/jpeg";
  if (Masked(data, "\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF"sv, "FORM\x00\x00\x00\x00AIFF"sv, false))
    return "audio/aiff";
  if (Masked(data, "\xFF\xFF\xFF"sv, "ID3"sv, false)) return "audio/mpeg";
  if (Masked(data, "\xFF\xFF\xFF\xFF\xFF"sv, "OggS\x00"sv, false)) return "application/ogg";
  if (Masked(data, "\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"sv, "MThd\x00\x00\x00\x06"sv, false)) return "audio/midi";
  if (Masked(data, "\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF"sv, "RIFF\x00\x00\x00\x00AVI "sv, false))
    return "video/avi";
  if (Masked(data, "\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF"sv, "RIFF\x00\x00\x00\x00WAVE"sv, false))
    return "audio/wave";
  if (Mp4(data)) return "video/mp4";
  if (data.starts_with("\x1A\x45\xDF\xA3"sv)) return "video/webm";
  if (data.size() >= 36 && data.substr(34, 2) == "LP") return "application/vnd.ms-fontobject";
  static constexpr Exact kMore[] = {
      {"\x00\x01\x00\x00"sv, "font/ttf"},     {"OTTO"sv, "font/otf"},
      {"ttcf"sv, "font/collection"},          {"wOFF"sv, "font/woff"},
      {"wOF2"sv, "font/woff2"},               {"\x1F\x8B\x08"sv, "application/x-gzip"},
      {"PK\x03\x04"sv, "application/zip"},    {"Rar!\x1A\x07\x00"sv, "application/x-rar-compressed"},
      {"Rar!\x1A\x07\x01\x00"sv, "application/x-rar-compressed"}, {"\x00\x61\x73\x6D"sv, "application/wasm"},
  };
  for (const Exact& e : kMore)
    if (data.starts_with(e.sig)) return e.type;
  // textSig: no byte that is binary data.
  for (unsigned char b : data)
    if (b <= 0x08 || b == 0x0B || (b >= 0x0E && b <= 0x1A) || (b >= 0x1C && b <= 0x1F))
      return "application/octet-stream";
  return "text/plain; charset=utf-8";
}

std::string_view EncodingName(Encoding e) {
  switch (e) {
    case Encoding::kGzip: return "gzip";
    case Encoding::kBrotli: return "br";
    case Encoding::kZstd: return "zstd";
    case Encoding::kIdentity: break;
  }
  return "identity";
}

StatusOr<CompressConfig> ParseCompressConfig(const boost::json::value& config) {
  mw::Options o("compress", config,
                {"excludedContentTypes", "includedContentTypes", "minResponseBodyBytes", "encodings", "defaultEncoding"});
  const std::vector<std::string> excluded = o.Strings("excludedContentTypes");
  const std::vector<std::string> included = o.Strings("includedContentTypes");
  const int64_t min_size = o.Int("minResponseBodyBytes").value_or(0);
  const bool has_encodings = o.Has("encodings");
  const std::vector<std::string> encodings = o.Strings("encodings");
  const std::string default_encoding = o.String("defaultEncoding");
  RETURN_IF_ERROR(o.status());
  if (!excluded.empty() && !included.empty())
    return InvalidArgument("compress: excludedContentTypes and includedContentTypes options are mutually exclusive");
  CompressConfig c;
  c.excluded.push_back(MediaType{"application/grpc", {}});
  for (const std::string& t : excluded) {
    StatusOr<MediaType> m = ParseMediaType(t);
    if (!m.ok()) return InvalidArgument(fmt::format("compress: parsing excluded media type: {}", m.status().message()));
    c.excluded.push_back(MediaType{m->type, {}});  // Traefik keeps the type alone
  }
  for (const std::string& t : included) {
    StatusOr<MediaType> m = ParseMediaType(t);
    if (!m.ok()) return InvalidArgument(fmt::format("compress: parsing included media type: {}", m.status().message()));
    c.included.push_back(MediaType{m->type, {}});
  }
  if (min_size > 0) c.min_size = static_cast<size_t>(min_size);
  if (has_encodings) {
    if (encodings.empty()) return InvalidArgument("compress: at least one encoding must be specified");
    c.encodings.clear();
    for (const std::string& e : encodings) {
      if (e == "gzip") c.encodings.push_back(Encoding::kGzip);
      else if (e == "br") c.encodings.push_back(Encoding::kBrotli);
      else if (e == "zstd") c.encodings.push_back(Encoding::kZstd);
      else return InvalidArgument(fmt::format("compress: unsupported encoding: {}", e));
    }
  }
  if (!default_encoding.empty()) {
    auto it = std::find_if(c.encodings.begin(), c.encodings.end(),
                           [&](Encoding e) { return EncodingName(e) == default_encoding; });
    if (it == c.encodings.end())
      return InvalidArgument(fmt::format("compress: unsupported default encoding: {}", default_encoding));
    c.default_encoding = *it;
  }
  return c;
}

CompressPlan PlanCompression(const CompressConfig& config, std::string_view method, const HeaderList& headers) {
  CompressPlan plan{.config = &config};
  if (method == "HEAD") return plan;
  // A request of an excluded type (text/event-stream, application/grpc): its answer is not compressed.
  if (StatusOr<MediaType> m = ParseMediaType(GetHeader(headers, "content-type")); m.ok()) {
    if (std::any_of(config.excluded.begin(), config.excluded.end(),
                    [&](const MediaType& t) { return t.type == m->type; }))
      return plan;
  }
  std::vector<std::string_view> accept;
  for (const auto& [n, v] : headers)
    if (HeaderNameEquals(n, "accept-encoding")) accept.push_back(v);
  if (accept.empty()) {
    plan.encoding = config.default_encoding;  // any coding is acceptable; without a default, none
  } else {
    plan.encoding = Negotiate(config, accept);
  }
  if (plan.encoding == Encoding::kGzip) plan.gzip_accepted = !accept.empty() && GzhttpAcceptsGzip(accept.front());
  return plan;
}

CompressVerdict DecideCompression(const CompressPlan& plan, const ResponseFacts& facts, std::string_view bytes,
                                  bool done, std::string* set_content_type, bool flushed) {
  const CompressConfig& c = *plan.config;
  if (plan.encoding == Encoding::kIdentity) return CompressVerdict::kPlain;
  if (bytes.empty()) return done ? CompressVerdict::kPlain : CompressVerdict::kNeedMore;
  if (plan.encoding != Encoding::kGzip) {  // Traefik's responseWriter (br, zstd)
    if (!facts.content_encoding.empty()) return CompressVerdict::kPlain;
    if (!facts.content_type.empty()) {
      StatusOr<MediaType> m = ParseMediaType(facts.content_type);
      if (!m.ok()) return CompressVerdict::kPlain;
      if (!c.included.empty() && std::none_of(c.included.begin(), c.included.end(),
                                              [&](const MediaType& t) { return MediaTypeMatches(t, *m); }))
        return CompressVerdict::kPlain;
      if (std::any_of(c.excluded.begin(), c.excluded.end(), [&](const MediaType& t) { return MediaTypeMatches(t, *m); }))
        return CompressVerdict::kPlain;
    }
    // Its Flush starts compressing whatever it holds (Traefik's responseWriter.Flush).
    if (bytes.size() >= c.min_size || (flushed && !done)) return CompressVerdict::kCompress;
    return done ? CompressVerdict::kPlain : CompressVerdict::kNeedMore;
  }
  // gzhttp (gzip).
  if (!plan.gzip_accepted || facts.no_gzip_compression || !facts.content_encoding.empty() ||
      !facts.content_range.empty())
    return CompressVerdict::kPlain;
  int64_t cl = 0;  // gzhttp's atoi: 0 when absent or not a number
  {
    auto [end, ec] = std::from_chars(facts.content_length.data(), facts.content_length.data() + facts.content_length.size(), cl);
    if (ec != std::errc() || end != facts.content_length.data() + facts.content_length.size() || cl < 0) cl = 0;
  }
  auto accepted = [&](std::string_view ct) {
    bool parsed = false;
    if (!c.included.empty()) return ContentTypeListed(c.included, ct, &parsed);
    const bool listed = ContentTypeListed(c.excluded, ct, &parsed);
    return !listed;  // ExceptContentTypes: an unparsable type is not listed, so it is compressed
  };
  const int64_t min = static_cast<int64_t>(c.min_size);
  if (flushed && !done) {  // gzhttp's Flush: decides on what it holds, a missing length taken as the minimum
    std::string_view ct = facts.content_type;
    std::string sniffed;
    if (ct.empty()) {
      sniffed = std::string(DetectContentType(bytes));
      ct = sniffed;
      if (!facts.has_content_type && set_content_type) *set_content_type = sniffed;
    }
    return (cl == 0 ? min : cl) >= min && accepted(ct) ? CompressVerdict::kCompress : CompressVerdict::kPlain;
  }
  if (!(cl == 0 || (cl >= min && (facts.content_type.empty() || accepted(facts.content_type)))))
    return CompressVerdict::kPlain;
  if (static_cast<int64_t>(bytes.size()) < min && cl == 0) return done ? CompressVerdict::kPlain : CompressVerdict::kNeedMore;
  if (cl < min && static_cast<int64_t>(bytes.size()) < min) return CompressVerdict::kPlain;
  std::string_view ct = facts.content_type;
  std::string sniffed;
  if (ct.empty()) {
    sniffed = std::string(DetectContentType(bytes));
    ct = sniffed;
    if (!facts.has_content_type && set_content_type) *set_content_type = sniffed;
  }
  return accepted(ct) ? CompressVerdict::kCompress : CompressVerdict::kPlain;
}

namespace {

class GzipCompressor final : public Compressor {
 public:
  GzipCompressor() {
    ready_ = deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    failed_ = !ready_;
  }
  ~GzipCompressor() override {
    if (ready_) deflateEnd(&z_);
  }
  void Write(std::string_view in, std::string& out) override { Run(in, Z_NO_FLUSH, out); }
  void Flush(std::string& out) override { Run({}, Z_SYNC_FLUSH, out); }
  void Finish(std::string& out) override { Run({}, Z_FINISH, out); }

 private:
  void Run(std::string_view in, int flush, std::string& out) {
    if (failed_) return;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    std::array<char, 16384> buf;
    do {
      z_.next_out = reinterpret_cast<Bytef*>(buf.data());
      z_.avail_out = static_cast<uInt>(buf.size());
      if (deflate(&z_, flush) == Z_STREAM_ERROR) {
        failed_ = true;
        return;
      }
      out.append(buf.data(), buf.size() - z_.avail_out);
    } while (z_.avail_out == 0);
  }
  z_stream z_{};
  bool ready_ = false;
};

class BrotliCompressor final : public Compressor {
 public:
  BrotliCompressor() : s_(BrotliEncoderCreateInstance(nullptr, nullptr, nullptr)) {
    if (s_ == nullptr) {
      failed_ = true;
      return;
    }
    BrotliEncoderSetParameter(s_, BROTLI_PARAM_QUALITY, 6);  // andybalholm/brotli's DefaultCompression
  }
  ~BrotliCompressor() override {
    if (s_) BrotliEncoderDestroyInstance(s_);
  }
  void Write(std::string_view in, std::string& out) override { Run(in, BROTLI_OPERATION_PROCESS, out); }
  void Flush(std::string& out) override { Run({}, BROTLI_OPERATION_FLUSH, out); }
  void Finish(std::string& out) override { Run({}, BROTLI_OPERATION_FINISH, out); }

 private:
  void Run(std::string_view in, BrotliEncoderOperation op, std::string& out) {
    if (failed_) return;
    size_t avail_in = in.size();
    const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
    while (true) {
      size_t avail_out = 0;
      if (!BrotliEncoderCompressStream(s_, op, &avail_in, &next_in, &avail_out, nullptr, nullptr)) {
        failed_ = true;
        return;
      }
      size_t size = 0;
      const uint8_t* produced = BrotliEncoderTakeOutput(s_, &size);
      out.append(reinterpret_cast<const char*>(produced), size);
      if (avail_in == 0 && !BrotliEncoderHasMoreOutput(s_)) {
        if (op == BROTLI_OPERATION_FINISH && !BrotliEncoderIsFinished(s_)) continue;
        return;
      }
    }
  }
  BrotliEncoderState* s_;
};

class ZstdCompressor final : public Compressor {
 public:
  ZstdCompressor() : c_(ZSTD_createCCtx()) {
    if (c_ == nullptr || ZSTD_isError(ZSTD_CCtx_setParameter(c_, ZSTD_c_compressionLevel, 3))) failed_ = true;
  }
  ~ZstdCompressor() override { ZSTD_freeCCtx(c_); }
  void Write(std::string_view in, std::string& out) override { Run(in, ZSTD_e_continue, out); }
  void Flush(std::string& out) override { Run({}, ZSTD_e_flush, out); }
  void Finish(std::string& out) override { Run({}, ZSTD_e_end, out); }

 private:
  void Run(std::string_view in, ZSTD_EndDirective mode, std::string& out) {
    if (failed_) return;
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    std::array<char, 16384> buf;
    while (true) {
      ZSTD_outBuffer output{buf.data(), buf.size(), 0};
      const size_t left = ZSTD_compressStream2(c_, &output, &input, mode);
      if (ZSTD_isError(left)) {
        failed_ = true;
        return;
      }
      out.append(buf.data(), output.pos);
      const bool drained = mode == ZSTD_e_continue ? input.pos == input.size : left == 0;
      if (drained) return;
    }
  }
  ZSTD_CCtx* c_;
};

}  // namespace

std::unique_ptr<Compressor> MakeCompressor(Encoding encoding) {
  std::unique_ptr<Compressor> z;
  switch (encoding) {
    case Encoding::kGzip: z = std::make_unique<GzipCompressor>(); break;
    case Encoding::kBrotli: z = std::make_unique<BrotliCompressor>(); break;
    case Encoding::kZstd: z = std::make_unique<ZstdCompressor>(); break;
    case Encoding::kIdentity: break;
  }
  if (z && z->failed()) z.reset();
  return z;
}

size_t CompressorMemory(Encoding encoding) {
  switch (encoding) {
    case Encoding::kGzip: return size_t{256} << 10;
    case Encoding::kBrotli: return size_t{8} << 20;
    case Encoding::kZstd: return size_t{2} << 20;  // ZSTD_estimateCStreamSize(3) is about 1.3 MiB
    case Encoding::kIdentity: break;
  }
  return 0;
}

}  // namespace paddock::edge
