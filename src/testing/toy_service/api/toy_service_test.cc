// The toy service end to end, as a client sees it: a real API front with the toy added by one
// line, a real SQLite store holding the node's modules and the toy's, a real HTTP server on an
// ephemeral port, and SigV4-signed requests checked against an account's stored key. It proves
// a service needs nothing outside its folder but the registration (docs/architecture.md,
// "Adding a service").
#include "testing/toy_service/api/toy_service.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <boost/json.hpp>

#include "testing/toy_front_fixture.h"
#include "testing/toy_service/notes.h"
#include "testing/toy_service/schema.h"

namespace paddock::toy {
namespace {

namespace json = boost::json;

class ToyServiceTest : public testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("toy", {kSchema}));  // the toy's own tables beside the node's
    notes_ = std::make_unique<Notes>(*store_);
    toy_ = std::make_unique<api::ToyService>(*notes_);
    CreateFront(aws::FrontOptions{});
    front_->AddJsonService(toy_.get());  // the registration: one line
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  // POSTs `body` as the toy's `action`, signed with the account's key (or `secret`).
  http::Response Call(std::string_view action, const json::object& body, std::string secret = "") {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "ToyNotes_20261201." + std::string(action)}};
    req.body = json::serialize(body);
    return SignAndSend(std::move(req), "toy", secret);
  }

  std::unique_ptr<Notes> notes_;
  std::unique_ptr<api::ToyService> toy_;
};

TEST_F(ToyServiceTest, ANoteRoundTripsThroughTheStore) {
  http::Response put = Call("PutNote", {{"name", "todo"}, {"text", "water the plants"}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Body(put).at("version").as_int64(), 1);
  http::Response again = Call("PutNote", {{"name", "todo"}, {"text", "and the cat"}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(Body(again).at("version").as_int64(), 2);

  http::Response got = Call("GetNote", {{"name", "todo"}});
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Body(got), (json::object{{"name", "todo"}, {"text", "and the cat"}, {"version", 2}}));

  // The row is in the toy's own table, under the caller's account and the signed region.
  auto stored = notes_->Get(Scope{key_.account, Region("eu-west-1")}, "todo");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->text, "and the cat");
  EXPECT_FALSE(notes_->Get(Scope{key_.account, Region("us-east-1")}, "todo").ok());
}

TEST_F(ToyServiceTest, OwnerFailuresAreNamedByTheToysErrorTable) {
  http::Response missing = Call("GetNote", {{"name", "nothing"}});
  EXPECT_EQ(missing.status, 400) << missing.body;
  EXPECT_EQ(Body(missing).at("__type").as_string(), "NoteNotFoundException");
  EXPECT_EQ(Body(missing).at("message").as_string(), "No note named 'nothing' exists.");

  for (int i = 0; i < Notes::kMaxNotesPerScope; ++i)
    ASSERT_EQ(Call("PutNote", {{"name", "n" + std::to_string(i)}, {"text", "x"}}).status, 200);
  http::Response full = Call("PutNote", {{"name", "one-more"}, {"text", "x"}});
  EXPECT_EQ(Body(full).at("__type").as_string(), "NoteLimitExceededException") << full.body;
  EXPECT_FALSE(notes_->Get(Scope{key_.account, Region("eu-west-1")}, "one-more").ok());  // nothing written
}

TEST_F(ToyServiceTest, TheFrontValidatesAndAuthenticatesForTheToy) {
  // The toy's model drives input validation: a required member missing never reaches the owner.
  http::Response no_text = Call("PutNote", {{"name", "todo"}});
  EXPECT_EQ(no_text.status, 400) << no_text.body;
  EXPECT_FALSE(notes_->Get(Scope{key_.account, Region("eu-west-1")}, "todo").ok());
  // A wrong signature is refused before the toy sees anything.
  http::Response forged = Call("PutNote", {{"name", "todo"}, {"text", "x"}}, "not-the-secret");
  EXPECT_EQ(forged.status, 400) << forged.body;
  EXPECT_EQ(Body(forged).at("__type").as_string(), "InvalidSignatureException");
  EXPECT_FALSE(notes_->Get(Scope{key_.account, Region("eu-west-1")}, "todo").ok());
}

}  // namespace
}  // namespace paddock::toy
