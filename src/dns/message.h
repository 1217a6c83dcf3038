// dns/message: the RFC 1035 wire format — parsing and building DNS messages, no I/O.
//
// Parse reads a whole message (header, questions, the three record sections, an EDNS0 OPT
// pseudo-record) from bytes that may be hostile: every read is bounds-checked, compression
// pointers may only point backwards (so they cannot loop), a name is at most 255 octets, and
// anything malformed is an InvalidArgument, never a crash or an over-read (dns_message_fuzz).
// Encode builds one, compressing names, and truncates it to a size limit the way a UDP answer
// must be: whole records are dropped from the end, TC is set when an answer or authority record
// was dropped, and the OPT record is always kept.
//
//   ASSIGN_OR_RETURN(Message query, Parse(packet));
//   Message reply = ReplyTo(query);  // id, question, RD and OPT echoed; QR set
//   reply.answers.push_back(Record{.name = "web.internal", .type = RrType::kA, .ttl = 10,
//                                  .data = A{{172, 31, 0, 7}}});
//   ASSIGN_OR_RETURN(std::string wire, Encode(reply, 512));
//
// Names are in presentation form without the trailing dot ("web.internal"; the root is ""), with
// RFC 1035's escapes for octets that are not plain: "\." for a dot inside a label, "\\", and
// "\DDD" for other octets outside 0x21..0x7e. Parse keeps the case the sender used; compare with
// EqualNames or NormalizeName (ASCII case-insensitive, RFC 4343).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace paddock::dns {

// Record types Paddock reads or writes; any other 16-bit value is carried as is.
enum class RrType : uint16_t {
  kA = 1,
  kNs = 2,
  kCname = 5,
  kSoa = 6,
  kPtr = 12,
  kMx = 15,
  kTxt = 16,
  kAaaa = 28,
  kSrv = 33,
  kOpt = 41,
  kAny = 255,
};
constexpr uint16_t kClassIn = 1;

// The 4-bit header RCODE (extended RCODEs above 15 travel in the OPT record: Edns::extended_rcode).
enum class Rcode : uint8_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};

struct Header {
  uint16_t id = 0;
  bool qr = false;  // a response
  uint8_t opcode = 0;  // 0: QUERY
  bool aa = false, tc = false, rd = false, ra = false, ad = false, cd = false;
  Rcode rcode = Rcode::kNoError;
};

struct Question {
  std::string name{};
  uint16_t type = 0;
  uint16_t klass = kClassIn;
};

// RDATA of the types the codec understands (A, AAAA, CNAME/NS/PTR, SRV, SOA); a record of any
// other type keeps its bytes (Raw). Malformed RDATA of a known type is a parse error. Encode writes
// whichever alternative the record holds, whatever its `type` says.
struct A {
  std::array<uint8_t, 4> address{};
};
struct Aaaa {
  std::array<uint8_t, 16> address{};
};
struct NameData {  // CNAME, NS, PTR: one domain name
  std::string name;
};
struct Srv {
  uint16_t priority = 0, weight = 0, port = 0;
  std::string target;
};
struct Soa {
  std::string mname, rname;
  uint32_t serial = 0, refresh = 0, retry = 0, expire = 0, minimum = 0;
};
struct Raw {
  std::string bytes;
};
using Rdata = std::variant<A, Aaaa, NameData, Srv, Soa, Raw>;

struct Record {
  std::string name{};
  uint16_t type = 0;
  uint16_t klass = kClassIn;
  uint32_t ttl = 0;
  Rdata data{};
};

// The EDNS0 OPT pseudo-record (RFC 6891). Options are not interpreted (and not echoed).
struct Edns {
  uint16_t udp_size = 512;   // the requestor's UDP payload size (values below 512 mean 512)
  uint8_t extended_rcode = 0;  // the upper 8 bits of a 12-bit RCODE (1 with RCODE 0: BADVERS)
  uint8_t version = 0;
  bool dnssec_ok = false;
};

struct Message {
  Header header;
  std::vector<Question> questions;
  std::vector<Record> answers;
  std::vector<Record> authority;
  std::vector<Record> additional;  // without the OPT record, which is in `edns`
  std::optional<Edns> edns;
};

// Limits of the format (RFC 1035 §2.3.4).
constexpr size_t kHeaderSize = 12;
constexpr size_t kMaxNameOctets = 255;
constexpr size_t kMaxLabelOctets = 63;
constexpr size_t kClassicUdpSize = 512;

// The whole message, or InvalidArgument naming what is wrong. Trailing bytes after the last
// record are an error, as are two OPT records or one outside the additional section.
StatusOr<Message> Parse(std::string_view wire);

// Just the header (the first 12 octets), for messages not worth parsing whole (forwarded ones).
StatusOr<Header> ParseHeader(std::string_view wire);

// The message in wire form, at most max_size octets (at least kHeaderSize + the questions + the
// OPT record; RFC 1035's 512 for classic UDP). Records that do not fit are dropped from the end
// (additional, then authority, then answers); TC is set when an answer or authority record was
// dropped. InvalidArgument when a name is not a valid name (a label over 63 octets, a name over
// 255, a bad escape) or the header, questions and OPT alone do not fit.
StatusOr<std::string> Encode(const Message& message, size_t max_size = 65535);

// A response skeleton for `query`: its id, opcode, RD and questions, QR and RA set, and an OPT
// record (with `udp_size`) when the query had one.
Message ReplyTo(const Message& query, uint16_t udp_size = 1232);

// `name` lowercased (ASCII only) and without a trailing dot; presentation form otherwise kept.
std::string NormalizeName(std::string_view name);
bool EqualNames(std::string_view a, std::string_view b);

}  // namespace paddock::dns
