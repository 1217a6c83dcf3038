// dns/responder: what the DNS server says to one query — a pure function of the query's bytes, its
// source and an Authority, with no I/O (the server, dns/server.h, is the thin driver around it).
//
// The Authority is the seam to whoever knows the names (Cloud Map's private namespaces, later).
// It is asked (source, name, type) and says: these records, NXDOMAIN, NODATA, SERVFAIL (the name is
// its own but it cannot answer now: its source failed), or "not mine", in which case the server
// forwards the query's bytes to the upstream resolvers. The source is how it
// tells tenants apart: the listener the query arrived on (one per VPC namespace) and the source
// address within it map to one (account, VPC), so two accounts asking the same name from the same
// 172.31.x.y get each their own answer.
//
//   class Names : public dns::Authority {
//     dns::Answer Lookup(const dns::QuerySource& src, std::string_view name, uint16_t type) override {
//       if (name == "web.internal" && type == 1) return dns::Answer::Records(10, {dns::ARecord("172.31.0.7")});
//       return dns::Answer::Forward();
//     }
//   };
//   dns::Responder responder(names, {});
//   dns::Decision d = responder.Respond(packet, {.listener = "", .address = "172.31.0.9", .tcp = false});
//
// Rules: a message shorter than a header, or a response, is dropped; an opcode other than QUERY
// gets NOTIMP, and a query with answer or authority records or more than one additional record
// FORMERR, both from the header alone (nothing else is parsed); one that does not parse gets
// FORMERR; a count of questions other than one, FORMERR; EDNS
// version above 0, BADVERS. Class IN questions go to the Authority with the name lowercased and
// without its trailing dot; other classes are forwarded. Answers are authoritative (AA), echo the
// question as sent (its case too) and, when the query had an OPT record, carry one. At most
// max_answers records are answered, shuffled (Route 53's multivalue routing). Over UDP the reply
// fits 512 octets, or the query's EDNS0 size (at most max_udp_payload): what does not fit is
// dropped with TC set, so the client asks again over TCP.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dns/message.h"

namespace paddock::dns {

struct QuerySource {
  std::string_view listener;  // ServerOptions::listener of the listener it arrived on
  std::string_view address;   // the client's address, "172.31.0.9" or "fd00::9"
  uint16_t port = 0;
  bool tcp = false;
};

class Answer {
 public:
  enum class Kind { kRecords, kNxDomain, kNoData, kServFail, kForward };
  Kind kind = Kind::kForward;
  uint32_t ttl = 0;             // given to every record below
  std::vector<Record> records;  // the answer section; an empty name means the question's name
  std::vector<Record> additional;  // e.g. the A records of SRV targets
  std::optional<Record> soa;    // NXDOMAIN/NODATA: the zone's SOA, for negative caching (RFC 2308)

  static Answer Records(uint32_t ttl, std::vector<Record> records) {
    Answer a;
    a.kind = Kind::kRecords;
    a.ttl = ttl;
    a.records = std::move(records);
    return a;
  }
  static Answer NxDomain() { return Of(Kind::kNxDomain); }
  static Answer NoData() { return Of(Kind::kNoData); }
  // The name is the Authority's but it cannot say now (its store failed): SERVFAIL, so that the
  // client tries again, and no upstream is asked about a private name.
  static Answer ServFail() { return Of(Kind::kServFail); }
  static Answer Forward() { return Of(Kind::kForward); }

 private:
  static Answer Of(Kind kind) {
    Answer a;
    a.kind = kind;
    return a;
  }
};

// Record helpers for authorities and tests: the owner name is left empty (the question's).
// REQUIRES: `address` is a valid IPv4 / IPv6 literal (checked: an invalid one gives 0.0.0.0 / ::).
Record ARecord(std::string_view address);
Record AaaaRecord(std::string_view address);
Record SrvRecord(uint16_t priority, uint16_t weight, uint16_t port, std::string target);

class Authority {
 public:
  virtual ~Authority() = default;
  // `name` is lowercase, without a trailing dot; `type` is the question's (1 A, 28 AAAA, 33 SRV…).
  // Called on the server's I/O thread for every query: it must answer from memory, without
  // blocking, and be safe to call from that thread while others change what it knows.
  virtual Answer Lookup(const QuerySource& source, std::string_view name, uint16_t type) = 0;
};

struct ResponderOptions {
  size_t max_answers = 8;            // Route 53 multivalue answers at most 8 records
  uint16_t max_udp_payload = 1232;   // the most a UDP reply may be, whatever EDNS0 asks (DNS flag day 2020)
};

struct Decision {
  enum class Action { kReply, kForward, kDrop };
  Action action = Action::kDrop;
  std::string reply;  // kReply: the wire bytes to send back
  // kForward: the most a UDP reply to this query may be (512, or its EDNS0 size up to
  // max_udp_payload), so a forwarded answer is cut to it without parsing the query again.
  size_t udp_limit = 512;
};

// Not thread-safe (it owns the shuffling's random state): one per I/O thread.
class Responder {
 public:
  Responder(Authority& authority, ResponderOptions options);

  Decision Respond(std::string_view query, const QuerySource& source);

 private:
  Authority& authority_;
  const ResponderOptions options_;
  std::minstd_rand rng_;
};

// The reply a client gets when forwarding `query` failed: SERVFAIL with its id and question, or
// empty when the query cannot be answered at all (it was not a query).
std::string ServFailFor(std::string_view query);

// The nameservers of a resolv.conf that are not loopback addresses (127.0.0.0/8, ::1): a
// loopback resolver of the host (systemd-resolved's 127.0.0.53) cannot be reached from a task's
// namespace, nor by a server listening inside one.
std::vector<std::string> UpstreamsFromResolvConf(std::string_view resolv_conf);

}  // namespace paddock::dns
