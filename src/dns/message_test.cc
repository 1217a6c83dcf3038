#include "dns/message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace paddock::dns {
namespace {

using ::testing::ElementsAre;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// example.com A? id 0x1234, RD — as `dig example.com +noedns` sends it.
const std::string kQuery = Bytes({0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
                                  7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1});

TEST(DnsMessage, ParsesAQuery) {
  StatusOr<Message> m = Parse(kQuery);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->header.id, 0x1234);
  EXPECT_FALSE(m->header.qr);
  EXPECT_TRUE(m->header.rd);
  ASSERT_EQ(m->questions.size(), 1u);
  EXPECT_EQ(m->questions[0].name, "example.com");
  EXPECT_EQ(m->questions[0].type, 1);
  EXPECT_EQ(m->questions[0].klass, 1);
  EXPECT_FALSE(m->edns);
}

TEST(DnsMessage, EncodesAnAnswerWithACompressedOwnerName) {
  Message m = ReplyTo(*Parse(kQuery));
  m.header.aa = true;
  m.answers.push_back(Record{.name = "example.com", .type = 1, .ttl = 10, .data = A{{172, 31, 0, 7}}});
  StatusOr<std::string> wire = Encode(m, 512);
  ASSERT_TRUE(wire.ok());
  // QR AA RD RA, one question, one answer whose name points at the question's (0xC00C).
  EXPECT_EQ(*wire, Bytes({0x12, 0x34, 0x85, 0x80, 0, 1, 0, 1, 0, 0, 0, 0,
                          7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1,
                          0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 10, 0, 4, 172, 31, 0, 7}));
}

TEST(DnsMessage, CompressesSuffixesAndReadsThemBack) {
  Message m;
  m.header.qr = true;
  m.questions.push_back({"_web._tcp.svc.internal", 33, 1});
  m.answers.push_back(Record{.name = "_web._tcp.svc.internal", .type = 33, .ttl = 5,
                             .data = Srv{1, 1, 8080, "i-1.svc.internal"}});
  m.additional.push_back(Record{.name = "i-1.svc.internal", .type = 1, .ttl = 5, .data = A{{10, 0, 0, 1}}});
  m.authority.push_back(Record{.name = "svc.internal", .type = 6, .ttl = 60,
                               .data = Soa{"ns1.svc.internal", "hostmaster.svc.internal", 1, 7200, 900, 1209600, 86400}});
  m.answers.push_back(Record{.name = "x.svc.internal", .type = 5, .ttl = 1, .data = NameData{"svc.internal"}});
  m.answers.push_back(Record{.name = "svc.internal", .type = 28, .ttl = 1,
                             .data = Aaaa{{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}});
  StatusOr<std::string> wire = Encode(m);
  ASSERT_TRUE(wire.ok());
  StatusOr<Message> back = Parse(*wire);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->answers.size(), 3u);
  const auto& srv = std::get<Srv>(back->answers[0].data);
  EXPECT_EQ(srv.port, 8080);
  EXPECT_EQ(srv.target, "i-1.svc.internal");
  EXPECT_EQ(std::get<NameData>(back->answers[1].data).name, "svc.internal");
  EXPECT_EQ(std::get<Aaaa>(back->answers[2].data).address[0], 0xfd);
  const auto& soa = std::get<Soa>(back->authority.at(0).data);
  EXPECT_EQ(soa.rname, "hostmaster.svc.internal");
  EXPECT_EQ(soa.minimum, 86400u);
  EXPECT_EQ(back->additional.at(0).name, "i-1.svc.internal");
  // Compression made it smaller than the names written out (each "svc.internal" is 14 octets).
  EXPECT_LT(wire->size(), 200u);
}

TEST(DnsMessage, NamesThatDifferInCaseKeepTheirOwnCase) {
  Message m;
  m.questions.push_back({"X", 1, 1});
  m.questions.push_back({"x", 1, 1});
  StatusOr<Message> back = Parse(*Encode(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->questions[0].name, "X");
  EXPECT_EQ(back->questions[1].name, "x");  // found by dns_message_fuzz: was compressed onto "X"
}

TEST(DnsMessage, NamesKeepTheirEscapes) {
  Message m;
  m.questions.push_back({"a\\.b.\\000x\\\\.Example", 1, 1});
  StatusOr<std::string> wire = Encode(m);
  ASSERT_TRUE(wire.ok());
  EXPECT_EQ(wire->substr(12, 5), Bytes({3, 'a', '.', 'b', 3}));
  StatusOr<Message> back = Parse(*wire);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->questions[0].name, "a\\.b.\\000x\\\\.Example");
  EXPECT_TRUE(EqualNames("Web.Internal.", "web.internal"));
  EXPECT_EQ(NormalizeName("WEB.internal."), "web.internal");
  EXPECT_EQ(NormalizeName("."), "");
  EXPECT_EQ(NormalizeName("a\\."), "a\\.");          // an escaped dot stays
  EXPECT_EQ(NormalizeName("a\\\\."), "a\\\\");      // an escaped backslash, then the trailing dot
  Message trailing;
  trailing.questions.push_back({"a\\\\.", 1, 1});
  StatusOr<std::string> wire2 = Encode(trailing);
  ASSERT_TRUE(wire2.ok());
  EXPECT_EQ(Parse(*wire2)->questions[0].name, "a\\\\");
}

TEST(DnsMessage, RefusesNamesThatAreNotNames) {
  for (std::string bad : {std::string(64, 'a') + ".x", std::string("a..b"), std::string("a\\"), std::string("a\\25"),
                          std::string("a\\300")}) {
    Message m;
    m.questions.push_back({bad, 1, 1});
    EXPECT_FALSE(Encode(m).ok()) << bad;
  }
  std::string long_name;
  for (int i = 0; i < 5; ++i) long_name += std::string(60, 'a') + ".";
  Message m;
  m.questions.push_back({long_name, 1, 1});
  EXPECT_FALSE(Encode(m).ok());
}

TEST(DnsMessage, ReadsAndEchoesEdns0) {
  // example.com A? with OPT: UDP size 4096, DO set, version 0.
  std::string q = kQuery;
  q[11] = 1;
  q += Bytes({0, 0, 41, 0x10, 0x00, 0, 0, 0x80, 0, 0, 0});
  StatusOr<Message> m = Parse(q);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m->edns);
  EXPECT_EQ(m->edns->udp_size, 4096);
  EXPECT_TRUE(m->edns->dnssec_ok);
  EXPECT_TRUE(m->additional.empty());
  Message reply = ReplyTo(*m, 1232);
  StatusOr<std::string> wire = Encode(reply);
  ASSERT_TRUE(wire.ok());
  EXPECT_EQ(wire->substr(wire->size() - 11), Bytes({0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ((*wire)[11], 1);  // ARCOUNT counts the OPT record
}

TEST(DnsMessage, OptionsInsideOptAreSkippedButBounded) {
  std::string q = kQuery;
  q[11] = 1;
  q += Bytes({0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 8, 0, 10, 0, 4, 1, 2, 3, 4});  // a COOKIE-like option
  EXPECT_TRUE(Parse(q).ok());
  q.back() = 0;
  q.pop_back();  // RDLENGTH 8 but only 7 octets
  EXPECT_FALSE(Parse(q).ok());
}

TEST(DnsMessage, RefusesTwoOptRecordsOrOneOutsideAdditional) {
  std::string opt = Bytes({0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0});
  std::string two = kQuery + opt + opt;
  two[11] = 2;
  EXPECT_FALSE(Parse(two).ok());
  std::string answer = kQuery + opt;
  answer[7] = 1;
  EXPECT_FALSE(Parse(answer).ok());
}

TEST(DnsMessage, TruncatesToTheLimitAndSetsTc) {
  Message m = ReplyTo(*Parse(kQuery));
  for (int i = 0; i < 40; ++i) {
    m.answers.push_back(Record{.name = "example.com", .type = 16, .ttl = 1, .data = Raw{std::string(20, 'x')}});
  }
  m.edns = Edns{.udp_size = 1232};
  StatusOr<std::string> wire = Encode(m, 512);
  ASSERT_TRUE(wire.ok());
  EXPECT_LE(wire->size(), 512u);
  StatusOr<Message> back = Parse(*wire);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->header.tc);
  EXPECT_GT(back->answers.size(), 0u);
  EXPECT_LT(back->answers.size(), 40u);
  EXPECT_TRUE(back->edns);  // the OPT record always stays
  StatusOr<std::string> whole = Encode(m);
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(Parse(*whole)->header.tc);
  EXPECT_EQ(Parse(*whole)->answers.size(), 40u);
}

TEST(DnsMessage, DroppingOnlyAdditionalRecordsIsNotTruncation) {
  Message m = ReplyTo(*Parse(kQuery));
  m.answers.push_back(Record{.name = "example.com", .type = 1, .ttl = 1, .data = A{}});
  for (int i = 0; i < 40; ++i) {
    m.additional.push_back(Record{.name = "example.com", .type = 16, .ttl = 1, .data = Raw{std::string(20, 'x')}});
  }
  StatusOr<Message> back = Parse(*Encode(m, 512));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->header.tc);
  EXPECT_EQ(back->answers.size(), 1u);
  EXPECT_LT(back->additional.size(), 40u);
}

TEST(DnsMessage, CompressionPointersCannotLoopOrPointForward) {
  std::string header = Bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  EXPECT_FALSE(Parse(header + Bytes({0xC0, 0x0C, 0, 1, 0, 1})).ok());           // points at itself
  EXPECT_FALSE(Parse(header + Bytes({0xC0, 0x0E, 0, 0, 1, 0, 1})).ok());        // points forward
  EXPECT_FALSE(Parse(header + Bytes({0xC0, 0xFF, 0, 1, 0, 1})).ok());           // past the end
  EXPECT_FALSE(Parse(header + Bytes({0xC0})).ok());                             // cut in half
  // Two names: the second points into the first, whose tail points back into the second.
  std::string loop = Bytes({0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 'a', 0xC0, 0x13, 0, 1, 0, 1, 1, 'b', 0xC0, 0x0C, 0, 1, 0, 1});
  EXPECT_FALSE(Parse(loop).ok());
  std::string chain = Bytes({0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 1, 0, 1, 1, 'b', 0xC0, 0x0C, 0, 1, 0, 1});
  StatusOr<Message> ok = Parse(chain);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->questions[1].name, "b.a");
}

TEST(DnsMessage, RefusesLabelTypesCountsAndLengthsItCannotHold) {
  std::string header = Bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  EXPECT_FALSE(Parse(header + Bytes({0x41, 'a', 0, 0, 1, 0, 1})).ok());  // extended label type
  EXPECT_FALSE(Parse(Bytes({0, 1, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0})).ok());
  EXPECT_FALSE(Parse(kQuery + "x").ok());  // trailing bytes
  // A name of 5 labels of 63 octets, 321 octets: over 255.
  std::string name;
  for (int i = 0; i < 5; ++i) name += static_cast<char>(63) + std::string(63, 'a');
  EXPECT_FALSE(Parse(header + name + Bytes({0, 0, 1, 0, 1})).ok());
  // An A record with 3 octets of RDATA.
  std::string bad_a = kQuery + Bytes({0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 1, 0, 3, 1, 2, 3});
  bad_a[7] = 1;
  EXPECT_FALSE(Parse(bad_a).ok());
  EXPECT_FALSE(ParseHeader("short").ok());
}

TEST(DnsMessage, EveryPrefixOfAMessageFailsCleanly) {
  Message m = ReplyTo(*Parse(kQuery));
  m.answers.push_back(Record{.name = "example.com", .type = 33, .ttl = 1, .data = Srv{1, 2, 3, "t.example.com"}});
  m.authority.push_back(Record{.name = "example.com", .type = 6, .ttl = 1, .data = Soa{"a.example.com", "b.example.com"}});
  m.edns = Edns{};
  std::string wire = *Encode(m);
  ASSERT_TRUE(Parse(wire).ok());
  for (size_t n = 0; n < wire.size(); ++n) EXPECT_FALSE(Parse(wire.substr(0, n)).ok()) << n;
}

TEST(DnsMessage, HeaderFlagsRoundTrip) {
  Message m;
  m.header = Header{.id = 0xBEEF, .qr = true, .opcode = 2, .aa = true, .tc = true, .rd = true, .ra = true,
                    .ad = true, .cd = true, .rcode = Rcode::kNxDomain};
  StatusOr<Header> h = ParseHeader(*Encode(m));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->id, 0xBEEF);
  EXPECT_EQ(h->opcode, 2);
  EXPECT_THAT((std::vector<bool>{h->qr, h->aa, h->tc, h->rd, h->ra, h->ad, h->cd}),
              ElementsAre(true, true, true, true, true, true, true));
  EXPECT_EQ(h->rcode, Rcode::kNxDomain);
}

}  // namespace
}  // namespace paddock::dns
