#include "dns/responder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "dns/testing/fake_authority.h"
#include "dns/testing/loopback_client.h"

namespace paddock::dns {
namespace {

std::string Query(std::string name, uint16_t type, uint16_t id = 7, std::optional<Edns> edns = std::nullopt) {
  return testing::QueryWire(std::move(name), type, id, edns);
}

Message Reply(const Decision& d) {
  EXPECT_EQ(d.action, Decision::Action::kReply);
  StatusOr<Message> m = Parse(d.reply);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Message{};
}

class ResponderTest : public ::testing::Test {
 protected:
  testing::FakeAuthority authority_;
  Responder responder_{authority_, {}};
  QuerySource udp_{.listener = "vpc-1", .address = "172.31.0.9", .port = 5000, .tcp = false};
  QuerySource tcp_{.listener = "vpc-1", .address = "172.31.0.9", .port = 5000, .tcp = true};
};

TEST_F(ResponderTest, AnswersAuthoritativelyEchoingTheQuestionsCase) {
  authority_.Set("web.internal", 1, Answer::Records(10, {ARecord("172.31.0.7")}));
  Message m = Reply(responder_.Respond(Query("Web.Internal.", 1, 42), udp_));
  EXPECT_EQ(m.header.id, 42);
  EXPECT_TRUE(m.header.qr);
  EXPECT_TRUE(m.header.aa);
  EXPECT_TRUE(m.header.rd);
  EXPECT_EQ(m.header.rcode, Rcode::kNoError);
  ASSERT_EQ(m.answers.size(), 1u);
  EXPECT_EQ(m.answers[0].name, "Web.Internal");
  EXPECT_EQ(m.answers[0].ttl, 10u);
  EXPECT_EQ(std::get<A>(m.answers[0].data).address, (std::array<uint8_t, 4>{172, 31, 0, 7}));
  ASSERT_EQ(authority_.lookups().size(), 1u);
  EXPECT_EQ(authority_.lookups()[0].name, "web.internal");
  EXPECT_EQ(authority_.lookups()[0].listener, "vpc-1");
  EXPECT_EQ(authority_.lookups()[0].address, "172.31.0.9");
}

TEST_F(ResponderTest, AnswersAtMostEightShuffled) {
  std::vector<Record> records;
  for (int i = 1; i <= 20; ++i) records.push_back(ARecord("10.0.0." + std::to_string(i)));
  authority_.Set("many.internal", 1, Answer::Records(5, records));
  std::set<std::set<int>> seen;
  for (int round = 0; round < 20; ++round) {
    Message m = Reply(responder_.Respond(Query("many.internal", 1), udp_));
    ASSERT_EQ(m.answers.size(), 8u);
    std::set<int> last;
    for (const Record& r : m.answers) last.insert(std::get<A>(r.data).address[3]);
    EXPECT_EQ(last.size(), 8u);  // no address twice
    seen.insert(last);
  }
  EXPECT_GT(seen.size(), 1u);  // shuffled: not the same 8 every time
}

TEST_F(ResponderTest, NxDomainAndNoDataCarryTheZonesSoa) {
  Record soa{.name = "internal", .type = 6, .ttl = 60, .data = Soa{"ns.internal", "hostmaster.internal", 1, 2, 3, 4, 5}};
  Answer nx = Answer::NxDomain();
  nx.soa = soa;
  authority_.Set("nope.internal", 1, nx);
  Answer nodata = Answer::NoData();
  nodata.soa = soa;
  authority_.Set("web.internal", 28, nodata);
  Message m = Reply(responder_.Respond(Query("nope.internal", 1), udp_));
  EXPECT_EQ(m.header.rcode, Rcode::kNxDomain);
  EXPECT_TRUE(m.header.aa);
  EXPECT_TRUE(m.answers.empty());
  ASSERT_EQ(m.authority.size(), 1u);
  EXPECT_EQ(m.authority[0].type, 6);
  m = Reply(responder_.Respond(Query("web.internal", 28), udp_));
  EXPECT_EQ(m.header.rcode, Rcode::kNoError);
  EXPECT_TRUE(m.answers.empty());
  EXPECT_EQ(m.authority.size(), 1u);
}

TEST_F(ResponderTest, ForwardsWhatIsNotItsOwnAndOtherClasses) {
  EXPECT_EQ(responder_.Respond(Query("example.com", 1), udp_).action, Decision::Action::kForward);
  Message chaos;
  chaos.questions.push_back({"version.bind", 16, 3});
  authority_.Set("version.bind", 16, Answer::NxDomain());
  EXPECT_EQ(responder_.Respond(*Encode(chaos), udp_).action, Decision::Action::kForward);
}

TEST_F(ResponderTest, DropsRuntsAndResponsesAndAnswersGarbageWithFormErr) {
  EXPECT_EQ(responder_.Respond("short", udp_).action, Decision::Action::kDrop);
  std::string response = Query("web.internal", 1);
  response[2] = static_cast<char>(response[2] | 0x80);
  EXPECT_EQ(responder_.Respond(response, udp_).action, Decision::Action::kDrop);
  std::string garbage = Query("web.internal", 1, 99) + "trailing";
  Message m = Reply(responder_.Respond(garbage, udp_));
  EXPECT_EQ(m.header.id, 99);
  EXPECT_EQ(m.header.rcode, Rcode::kFormErr);
  Message two;
  two.questions = {{"a", 1, 1}, {"b", 1, 1}};
  EXPECT_EQ(Reply(responder_.Respond(*Encode(two), udp_)).header.rcode, Rcode::kFormErr);
  Message none;
  EXPECT_EQ(Reply(responder_.Respond(*Encode(none), udp_)).header.rcode, Rcode::kFormErr);
}

TEST_F(ResponderTest, AQueryWithRecordsBesidesItsQuestionIsRefusedUnparsed) {
  Message q;
  q.questions.push_back({"web.internal", 1, 1});
  for (int i = 0; i < 3; ++i) {
    Record a = ARecord("10.0.0.1");
    a.name = "web.internal";
    Message m = q;
    (i == 0 ? m.answers : i == 1 ? m.authority : m.additional).push_back(a);
    if (i == 2) m.additional.push_back(a);  // two additional records (an OPT is the one allowed)
    Message reply = Reply(responder_.Respond(*Encode(m), udp_));
    EXPECT_EQ(reply.header.rcode, Rcode::kFormErr) << i;
    EXPECT_TRUE(reply.answers.empty());
  }
  EXPECT_TRUE(authority_.lookups().empty());  // the Authority was never asked
}

TEST_F(ResponderTest, OtherOpcodesAreNotImplementedAndNewerEdnsIsBadvers) {
  Message notify;
  notify.header.opcode = 4;
  notify.questions.push_back({"internal", 6, 1});
  EXPECT_EQ(Reply(responder_.Respond(*Encode(notify), udp_)).header.rcode, Rcode::kNotImp);
  Message m = Reply(responder_.Respond(Query("web.internal", 1, 1, Edns{.udp_size = 1232, .version = 1}), udp_));
  ASSERT_TRUE(m.edns);
  EXPECT_EQ(m.edns->extended_rcode, 1);  // BADVERS = 16
  EXPECT_EQ(m.edns->version, 0);
  EXPECT_TRUE(authority_.lookups().empty());
}

TEST_F(ResponderTest, UdpAnswersFitTheirSizeAndTcpAnswersDoNot) {
  std::vector<Record> srv;
  for (int i = 0; i < 8; ++i) srv.push_back(SrvRecord(1, 1, 80, "instance-" + std::to_string(i) + "." + std::string(50, 'x') + ".internal"));
  authority_.Set("_web._tcp.internal", 33, Answer::Records(10, srv));
  std::string plain = responder_.Respond(Query("_web._tcp.internal", 33), udp_).reply;
  EXPECT_LE(plain.size(), 512u);
  Message m = *Parse(plain);
  EXPECT_TRUE(m.header.tc);
  EXPECT_LT(m.answers.size(), 8u);
  std::string edns = responder_.Respond(Query("_web._tcp.internal", 33, 1, Edns{.udp_size = 4096}), udp_).reply;
  EXPECT_GT(edns.size(), 512u);
  EXPECT_LE(edns.size(), 1232u);  // at most max_udp_payload, whatever the client offers
  m = *Parse(edns);
  EXPECT_FALSE(m.header.tc);
  EXPECT_EQ(m.answers.size(), 8u);
  EXPECT_EQ(m.edns->udp_size, 1232);
  m = Reply(responder_.Respond(Query("_web._tcp.internal", 33), tcp_));
  EXPECT_FALSE(m.header.tc);
  EXPECT_EQ(m.answers.size(), 8u);
}

TEST_F(ResponderTest, SrvAnswersCarryTheirTargetsAddressesAsAdditionalRecords) {
  Answer srv = Answer::Records(30, {SrvRecord(1, 1, 8080, "i-1.web.internal")});
  Record target = ARecord("172.31.0.7");
  target.name = "i-1.web.internal";
  srv.additional.push_back(target);
  authority_.Set("web.internal", 33, srv);
  Message m = Reply(responder_.Respond(Query("web.internal", 33), udp_));
  ASSERT_EQ(m.answers.size(), 1u);
  EXPECT_EQ(std::get<Srv>(m.answers[0].data).target, "i-1.web.internal");
  ASSERT_EQ(m.additional.size(), 1u);
  EXPECT_EQ(m.additional[0].name, "i-1.web.internal");
  EXPECT_EQ(m.additional[0].ttl, 30u);
}

TEST_F(ResponderTest, AnAuthorityGivingABadNameGetsServFail) {
  Answer bad = Answer::Records(1, {SrvRecord(1, 1, 1, std::string(70, 'x') + ".internal")});
  authority_.Set("bad.internal", 33, bad);
  EXPECT_EQ(Reply(responder_.Respond(Query("bad.internal", 33), udp_)).header.rcode, Rcode::kServFail);
}

TEST_F(ResponderTest, AnAuthorityThatCannotAnswerNowGetsServFailNotAForward) {
  authority_.Set("web.internal", 1, Answer::ServFail());
  Edns edns;
  edns.udp_size = 4096;
  Decision d = responder_.Respond(Query("Web.Internal", 1, 9, edns), udp_);
  Message m = Reply(d);
  EXPECT_EQ(m.header.id, 9);
  EXPECT_EQ(m.header.rcode, Rcode::kServFail);
  EXPECT_FALSE(m.header.aa);
  ASSERT_EQ(m.questions.size(), 1u);
  EXPECT_EQ(m.questions[0].name, "Web.Internal");  // as asked
  EXPECT_TRUE(m.answers.empty());
  EXPECT_TRUE(m.edns.has_value());  // the query's OPT record answered
}

TEST(DnsServFailFor, KeepsIdAndQuestion) {
  StatusOr<Message> m = Parse(ServFailFor(Query("example.com", 1, 77)));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.id, 77);
  EXPECT_EQ(m->header.rcode, Rcode::kServFail);
  EXPECT_EQ(m->questions.at(0).name, "example.com");
  EXPECT_EQ(ServFailFor("garbage"), "");
}

TEST(DnsUpstreams, NonLoopbackNameserversOfResolvConf) {
  EXPECT_THAT(UpstreamsFromResolvConf("# host\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nsearch x\n"
                                      "nameserver ::1\nnameserver 2001:db8::1\nnameserver 10.0.0.2\nnameserver bogus\n"),
              ::testing::ElementsAre("10.0.0.2", "2001:db8::1"));
}

}  // namespace
}  // namespace paddock::dns
