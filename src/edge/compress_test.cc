// Traefik's compress middleware's rules (edge/compress.h) — Go's media types and sniffing, the
// Accept-Encoding negotiation, the two response writers' decisions — and the encoders, each
// decoded back with its own library. End to end through the proxy: proxy/proxy_test.cc.
#include "edge/compress.h"

#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>

#include <gtest/gtest.h>

#include <string>

#include <boost/json/parse.hpp>

namespace paddock::edge {
namespace {

CompressConfig Config(std::string_view json = "{}") {
  auto c = ParseCompressConfig(boost::json::parse(json));
  EXPECT_TRUE(c.ok()) << json << ": " << c.status().message();
  return c.ok() ? *std::move(c) : CompressConfig{};
}

std::string Gunzip(std::string_view in) {
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[4096];
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_SYNC_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
  } while (rc == Z_OK && (z.avail_in > 0 || z.avail_out == 0));
  inflateEnd(&z);
  return out;
}

std::string Unbrotli(std::string_view in) {
  BrotliDecoderState* s = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  size_t avail_in = in.size();
  const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
  std::string out;
  BrotliDecoderResult r;
  do {
    uint8_t buf[4096];
    size_t avail_out = sizeof(buf);
    uint8_t* next_out = buf;
    r = BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    out.append(reinterpret_cast<char*>(buf), sizeof(buf) - avail_out);
  } while (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT);
  BrotliDecoderDestroyInstance(s);
  return out;
}

std::string Unzstd(std::string_view in) {
  ZSTD_DStream* d = ZSTD_createDStream();
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::string out;
  char buf[4096];
  while (input.pos < input.size) {
    ZSTD_outBuffer output{buf, sizeof(buf), 0};
    if (ZSTD_isError(ZSTD_decompressStream(d, &output, &input))) break;
    out.append(buf, output.pos);
  }
  for (;;) {  // what is left in the decoder
    ZSTD_outBuffer output{buf, sizeof(buf), 0};
    ZSTD_decompressStream(d, &output, &input);
    if (output.pos == 0) break;
    out.append(buf, output.pos);
  }
  ZSTD_freeDStream(d);
  return out;
}

std::string Decode(Encoding e, std::string_view in) {
  switch (e) {
    case Encoding::kGzip: return Gunzip(in);
    case Encoding::kBrotli: return Unbrotli(in);
    case Encoding::kZstd: return Unzstd(in);
    case Encoding::kIdentity: break;
  }
  return std::string(in);
}

TEST(MediaTypeTest, ReadsAsGosMimeParseMediaType) {
  auto m = ParseMediaType("Text/HTML; Charset=UTF-8; q=\"a\\\"b\"");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->type, "text/html");
  EXPECT_EQ(m->params, (std::vector<std::pair<std::string, std::string>>{{"charset", "UTF-8"}, {"q", "a\"b"}}));
  EXPECT_TRUE(ParseMediaType("text/plain;").ok());  // a trailing semicolon is ignored
  EXPECT_EQ(ParseMediaType("text")->type, "text");  // a type alone parses
  EXPECT_EQ(ParseMediaType("").status().message(), "mime: no media type");
  EXPECT_EQ(ParseMediaType("text/").status().message(), "mime: expected token after slash");
  EXPECT_EQ(ParseMediaType("text html").status().message(), "mime: expected slash after first token");
  EXPECT_EQ(ParseMediaType("text/html x").status().message(), "mime: unexpected content after media subtype");
  EXPECT_EQ(ParseMediaType("text/html; =x").status().message(), "mime: invalid media parameter");
  // gzhttp's equals: a configured type without parameters matches any.
  EXPECT_TRUE(MediaTypeMatches({"text/html", {}}, *ParseMediaType("text/html; charset=utf-8")));
  EXPECT_FALSE(MediaTypeMatches({"text/html", {{"charset", "utf-8"}}}, *ParseMediaType("text/html")));
}

TEST(DetectContentTypeTest, SniffsAsGosHttpDetectContentType) {
  EXPECT_EQ(DetectContentType("  <HTML><body>hi"), "text/html; charset=utf-8");
  EXPECT_EQ(DetectContentType("<!-- x -->"), "text/html; charset=utf-8");
  EXPECT_EQ(DetectContentType("\n<?xml version=\"1.0\"?>"), "text/xml; charset=utf-8");
  EXPECT_EQ(DetectContentType("%PDF-1.7"), "application/pdf");
  EXPECT_EQ(DetectContentType(std::string_view("\x89PNG\x0D\x0A\x1A\x0A....", 12)), "image/png");
  EXPECT_EQ(DetectContentType(std::string_view("\x1F\x8B\x08\x00", 4)), "application/x-gzip");
  EXPECT_EQ(DetectContentType("{\"plain\": \"json text\"}"), "text/plain; charset=utf-8");
  EXPECT_EQ(DetectContentType(std::string_view("ab\x00" "cd", 5)), "application/octet-stream");
  EXPECT_EQ(DetectContentType(std::string_view("\xEF\xBB\xBFtext", 7)), "text/plain; charset=utf-8");
}

TEST(PlanCompressionTest, NegotiatesAsTraefik) {
  const CompressConfig c = Config();  // gzip, br, zstd
  auto plan = [&](std::vector<std::string> accept, std::string method = "GET", std::string content_type = "") {
    HeaderList h;
    for (auto& a : accept) h.emplace_back("Accept-Encoding", a);
    if (!content_type.empty()) h.emplace_back("Content-Type", content_type);
    return PlanCompression(c, method, h).encoding;
  };
  EXPECT_EQ(plan({"gzip, br"}), Encoding::kGzip);  // the same weight: the configured order
  EXPECT_EQ(plan({"br, gzip"}), Encoding::kGzip);
  EXPECT_EQ(plan({"br;q=1, gzip;q=0.5"}), Encoding::kBrotli);
  EXPECT_EQ(plan({"deflate", "zstd"}), Encoding::kZstd);  // every value is read
  EXPECT_EQ(plan({"*"}), Encoding::kGzip);                  // the first configured
  EXPECT_EQ(plan({"gzip;q=0.5, identity"}), Encoding::kIdentity);
  EXPECT_EQ(plan({"gzip;q=0"}), Encoding::kIdentity);  // not acceptable
  EXPECT_EQ(plan({"deflate"}), Encoding::kIdentity);
  EXPECT_EQ(plan({""}), Encoding::kIdentity);      // an empty value: no coding wanted
  EXPECT_EQ(plan({"GZIP"}), Encoding::kIdentity);  // Traefik compares as written
  EXPECT_EQ(plan({}), Encoding::kIdentity);        // no header, no default: as it is
  EXPECT_EQ(plan({"gzip"}, "HEAD"), Encoding::kIdentity);
  EXPECT_EQ(plan({"gzip"}, "POST", "application/grpc"), Encoding::kIdentity);  // the request's type
  // defaultEncoding: without Accept-Encoding (any coding is acceptable), or for a wildcard.
  const CompressConfig with_default = Config(R"({"defaultEncoding":"br"})");
  EXPECT_EQ(PlanCompression(with_default, "GET", {}).encoding, Encoding::kBrotli);
  EXPECT_EQ(PlanCompression(with_default, "GET", {{"Accept-Encoding", "*"}}).encoding, Encoding::kBrotli);
  // gzip's handler checks the first value again, as gzhttp reads it (case-insensitively).
  const CompressConfig gzip_default = Config(R"({"defaultEncoding":"gzip"})");
  const CompressPlan no_header = PlanCompression(gzip_default, "GET", {});
  EXPECT_EQ(no_header.encoding, Encoding::kGzip);
  EXPECT_FALSE(no_header.gzip_accepted);
  EXPECT_TRUE(PlanCompression(c, "GET", {{"Accept-Encoding", "gzip;q=0.1"}}).gzip_accepted);
}

TEST(DecideCompressionTest, BrotliAndZstdAsTraefiksWriter) {
  const CompressConfig c = Config(R"({"excludedContentTypes":["image/png"]})");
  const CompressPlan br{.config = &c, .encoding = Encoding::kBrotli};
  const std::string kb2(2048, 'a');
  std::string set;
  auto decide = [&](ResponseFacts f, std::string_view bytes, bool done) { return DecideCompression(br, f, bytes, done, &set); };
  EXPECT_EQ(decide({.content_type = "text/html"}, kb2, false), CompressVerdict::kCompress);
  EXPECT_EQ(decide({.content_type = "text/html"}, "", false), CompressVerdict::kNeedMore);
  EXPECT_EQ(decide({.content_type = "text/html"}, kb2.substr(0, 100), false), CompressVerdict::kNeedMore);
  EXPECT_EQ(decide({.content_type = "text/html"}, kb2.substr(0, 100), true), CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "text/html", .content_length = "5000"}, kb2.substr(0, 100), false),
            CompressVerdict::kNeedMore);  // its length is not read: it waits for the bytes
  EXPECT_EQ(decide({.content_encoding = "gzip"}, kb2, false), CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "image/png"}, kb2, false), CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "application/grpc"}, kb2, false), CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "text/"}, kb2, false), CompressVerdict::kPlain);  // unparsable
  EXPECT_EQ(decide({}, kb2, false), CompressVerdict::kCompress);  // no type: no sniffing here
  // Flushed (no length, or an event stream): its Flush compresses what it holds, whatever its size.
  EXPECT_EQ(DecideCompression(br, {.content_type = "text/event-stream"}, "data: 1\n\n", false, &set, true),
            CompressVerdict::kCompress);
  EXPECT_EQ(DecideCompression(br, {.content_type = "image/png"}, "x", false, &set, true), CompressVerdict::kPlain);
  EXPECT_TRUE(set.empty());
  const CompressConfig only_html = Config(R"({"includedContentTypes":["text/html"]})");
  const CompressPlan zstd{.config = &only_html, .encoding = Encoding::kZstd};
  EXPECT_EQ(DecideCompression(zstd, {.content_type = "application/json"}, kb2, false, &set), CompressVerdict::kPlain);
  EXPECT_EQ(DecideCompression(zstd, {.content_type = "text/html; charset=utf-8"}, kb2, false, &set),
            CompressVerdict::kCompress);
}

TEST(DecideCompressionTest, GzipAsGzhttp) {
  const CompressConfig c = Config(R"({"excludedContentTypes":["image/png"]})");
  const CompressPlan gz{.config = &c, .encoding = Encoding::kGzip, .gzip_accepted = true};
  const std::string text(2048, 'a');
  auto decide = [&](ResponseFacts f, std::string_view bytes, bool done, std::string* set = nullptr) {
    return DecideCompression(gz, f, bytes, done, set);
  };
  // A declared length decides at the first bytes: below minResponseBodyBytes plain at once.
  EXPECT_EQ(decide({.content_type = "text/plain", .content_length = "100"}, "x", false), CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "text/plain", .content_length = "4000"}, "x", false), CompressVerdict::kCompress);
  EXPECT_EQ(decide({.content_type = "text/plain"}, "x", false), CompressVerdict::kNeedMore);
  EXPECT_EQ(decide({.content_type = "text/plain"}, "x", true), CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "text/plain"}, text, false), CompressVerdict::kCompress);
  EXPECT_EQ(decide({.content_type = "image/png"}, text, false), CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "text/", .content_length = "4000"}, "x", false),
            CompressVerdict::kCompress);  // gzhttp's except-filter takes an unparsable type
  EXPECT_EQ(decide({.content_type = "text/plain", .content_range = "bytes 0-9/10"}, text, false),
            CompressVerdict::kPlain);
  EXPECT_EQ(decide({.content_type = "text/plain", .no_gzip_compression = true}, text, false), CompressVerdict::kPlain);
  // Flushed: gzhttp's Flush takes a missing length as the minimum; a declared one below it is plain.
  EXPECT_EQ(DecideCompression(gz, {.content_type = "text/plain"}, "x", false, nullptr, true), CompressVerdict::kCompress);
  EXPECT_EQ(DecideCompression(gz, {.content_type = "text/plain", .content_length = "100"}, "x", false, nullptr, true),
            CompressVerdict::kPlain);
  // Without a Content-Type: the sniffed one, set on the response when the header is absent.
  std::string set;
  EXPECT_EQ(decide({}, "<html>" + text, false, &set), CompressVerdict::kCompress);
  EXPECT_EQ(set, "text/html; charset=utf-8");
  set.clear();
  EXPECT_EQ(decide({.has_content_type = true}, "<html>" + text, false, &set), CompressVerdict::kCompress);
  EXPECT_EQ(set, "");
  // gzip chosen by defaultEncoding without Accept-Encoding: gzhttp does not compress.
  const CompressPlan unaccepted{.config = &c, .encoding = Encoding::kGzip, .gzip_accepted = false};
  EXPECT_EQ(DecideCompression(unaccepted, {.content_type = "text/plain"}, text, true, nullptr), CompressVerdict::kPlain);
}

TEST(CompressorTest, EachEncodingDecodesBackAndAFlushMakesWhatCameDecodable) {
  std::string body;
  for (int i = 0; i < 500; ++i) body += "line " + std::to_string(i) + " of a compressible body\n";
  for (Encoding e : {Encoding::kGzip, Encoding::kBrotli, Encoding::kZstd}) {
    SCOPED_TRACE(std::string(EncodingName(e)));
    auto z = MakeCompressor(e);
    ASSERT_NE(z, nullptr);
    std::string out;
    z->Write(std::string_view(body).substr(0, 1000), out);
    z->Flush(out);
    EXPECT_EQ(Decode(e, out), body.substr(0, 1000));  // flushed: the first part decodes already
    z->Write(std::string_view(body).substr(1000), out);
    z->Finish(out);
    EXPECT_EQ(Decode(e, out), body);
    EXPECT_LT(out.size(), body.size() / 4);
  }
  EXPECT_EQ(MakeCompressor(Encoding::kIdentity), nullptr);
}

}  // namespace
}  // namespace paddock::edge
