#include "dns/responder.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

namespace paddock::dns {
namespace {

constexpr uint8_t kBadVers = 1;  // extended RCODE 16 = (1 << 4) | 0

std::string EncodeOrEmpty(const Message& m, size_t limit) {
  StatusOr<std::string> wire = Encode(m, limit);
  return wire.ok() ? std::move(*wire) : std::string();
}

// A reply that carries only a header (and the question, when there is one), for errors.
Decision ErrorReply(const Message* query, const Header& header, Rcode rcode) {
  Message m;
  if (query != nullptr) {
    m = ReplyTo(*query);
  } else {
    m.header.id = header.id;
    m.header.opcode = header.opcode;
    m.header.rd = header.rd;
    m.header.qr = true;
    m.header.ra = true;
  }
  m.header.rcode = rcode;
  std::string wire = EncodeOrEmpty(m, kClassicUdpSize);
  if (wire.empty() && query != nullptr) {  // a question too long to echo: answer without it
    m.questions.clear();
    wire = EncodeOrEmpty(m, kClassicUdpSize);
  }
  return Decision{Decision::Action::kReply, std::move(wire)};
}

}  // namespace

Record ARecord(std::string_view address) {
  A a;
  in_addr v4{};
  if (inet_pton(AF_INET, std::string(address).c_str(), &v4) == 1) std::memcpy(a.address.data(), &v4, 4);
  return Record{std::string(), static_cast<uint16_t>(RrType::kA), kClassIn, 0, a};
}

Record AaaaRecord(std::string_view address) {
  Aaaa a;
  in6_addr v6{};
  if (inet_pton(AF_INET6, std::string(address).c_str(), &v6) == 1) std::memcpy(a.address.data(), &v6, 16);
  return Record{std::string(), static_cast<uint16_t>(RrType::kAaaa), kClassIn, 0, a};
}

Record SrvRecord(uint16_t priority, uint16_t weight, uint16_t port, std::string target) {
  return Record{std::string(), static_cast<uint16_t>(RrType::kSrv), kClassIn, 0, Srv{priority, weight, port, std::move(target)}};
}

Responder::Responder(Authority& authority, ResponderOptions options)
    : authority_(authority), options_(options), rng_(std::random_device{}()) {}

Decision Responder::Respond(std::string_view query, const QuerySource& source) {
  StatusOr<Header> header = ParseHeader(query);
  if (!header.ok() || query.size() < kHeaderSize || header->qr) return Decision{};
  // Decided on the header alone, before anything is parsed (a 64 KiB message of compressed names
  // would expand to megabytes): another opcode is not implemented, and a query carries its
  // question and at most an OPT record.
  if (header->opcode != 0) return ErrorReply(nullptr, *header, Rcode::kNotImp);
  const auto count = [&](size_t at) {
    return static_cast<size_t>(static_cast<uint8_t>(query[at]) << 8 | static_cast<uint8_t>(query[at + 1]));
  };
  if (count(6) != 0 || count(8) != 0 || count(10) > 1) return ErrorReply(nullptr, *header, Rcode::kFormErr);
  StatusOr<Message> parsed = Parse(query);
  if (!parsed.ok()) return ErrorReply(nullptr, *header, Rcode::kFormErr);
  const Message& q = *parsed;
  if (q.questions.size() != 1) return ErrorReply(nullptr, q.header, Rcode::kFormErr);
  if (q.edns && q.edns->version != 0) {
    Message m = ReplyTo(q, options_.max_udp_payload);
    m.edns->extended_rcode = kBadVers;
    return Decision{Decision::Action::kReply, EncodeOrEmpty(m, kClassicUdpSize)};
  }
  const Question& question = q.questions[0];
  // What a UDP reply to it may be, ours or an upstream's: 512, or its EDNS0 size up to the cap.
  const size_t udp_limit =
      q.edns ? std::clamp<size_t>(q.edns->udp_size, kClassicUdpSize, options_.max_udp_payload) : kClassicUdpSize;
  const Decision forward{Decision::Action::kForward, {}, udp_limit};
  if (question.klass != kClassIn) return forward;

  Answer answer = authority_.Lookup(source, NormalizeName(question.name), question.type);
  if (answer.kind == Answer::Kind::kForward) return forward;
  if (answer.kind == Answer::Kind::kServFail) return ErrorReply(&q, q.header, Rcode::kServFail);

  Message m = ReplyTo(q, options_.max_udp_payload);
  m.header.aa = true;
  switch (answer.kind) {
    case Answer::Kind::kNxDomain:
      m.header.rcode = Rcode::kNxDomain;
      [[fallthrough]];
    case Answer::Kind::kNoData:
      if (answer.soa) m.authority.push_back(std::move(*answer.soa));
      break;
    case Answer::Kind::kRecords: {
      std::vector<Record>& records = answer.records;
      if (records.size() > 1) std::shuffle(records.begin(), records.end(), rng_);
      if (records.size() > options_.max_answers) records.resize(options_.max_answers);
      for (Record& r : records) {
        if (r.name.empty()) r.name = question.name;
        r.ttl = answer.ttl;
      }
      for (Record& r : answer.additional) r.ttl = answer.ttl;
      m.answers = std::move(records);
      m.additional = std::move(answer.additional);
      break;
    }
    case Answer::Kind::kServFail:
    case Answer::Kind::kForward:
      break;  // returned above
  }
  StatusOr<std::string> wire = Encode(m, source.tcp ? 65535 : udp_limit);
  if (!wire.ok()) return ErrorReply(&q, q.header, Rcode::kServFail);  // the Authority gave a bad name
  return Decision{Decision::Action::kReply, std::move(*wire)};
}

std::string ServFailFor(std::string_view query) {
  StatusOr<Message> q = Parse(query);
  if (!q.ok() || q->header.qr) return {};
  Decision d = ErrorReply(&*q, q->header, Rcode::kServFail);
  return std::move(d.reply);
}

std::vector<std::string> UpstreamsFromResolvConf(std::string_view resolv_conf) {
  std::vector<std::string> out;
  std::istringstream lines{std::string(resolv_conf)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string key, address;
    if (!(words >> key >> address) || key != "nameserver") continue;
    in_addr v4{};
    in6_addr v6{};
    if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
      if ((ntohl(v4.s_addr) >> 24) == 127) continue;
    } else if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) {
      if (IN6_IS_ADDR_LOOPBACK(&v6)) continue;
    } else {
      continue;  // "fe80::1%eth0" and other forms a socket address cannot take as is
    }
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
  }
  return out;
}

}  // namespace paddock::dns
