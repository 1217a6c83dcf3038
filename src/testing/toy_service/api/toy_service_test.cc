// The toy service end to end, as a client sees it: a real API front with the toy added by one
// line, a real SQLite store holding the node's modules and the toy's, a real HTTP server on an
// ephemeral port, and SigV4-signed requests checked against an account's stored key. It proves
// a service needs nothing outside its folder but the registration (docs/architecture.md,
// "Adding a service").
#include "testing/toy_service/api/toy_service.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <boost/json.hpp>

#include "aws/front.h"
#include "aws/sigv4.h"
#include "cli/schemas.h"
#include "common/clock.h"
#include "http/client.h"
#include "http/server.h"
#include "iam/accounts.h"
#include "iam/api/account_credentials.h"
#include "store/sqlite/sqlite_store.h"
#include "testing/toy_service/notes.h"
#include "testing/toy_service/schema.h"

namespace paddock::toy {
namespace {

namespace json = boost::json;

class ToyServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-toy-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store::SqliteOptions options;
    options.path = dir_ + "/state.db";
    options.durable = false;
    options.schemas = cli::NodeSchemas();
    options.schemas.push_back(kSchema);  // the toy's own tables beside the node's
    auto opened = store::SqliteStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);

    accounts_ = std::make_unique<iam::Accounts>(*store_, SystemClock::Get());
    auto account = accounts_->CreateAccount(std::nullopt, "toy");
    ASSERT_TRUE(account.ok()) << account.status().ToString();
    auto key = accounts_->CreateAccessKey(account->id);
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    key_ = *key;

    notes_ = std::make_unique<Notes>(*store_);
    toy_ = std::make_unique<api::ToyService>(*notes_);
    credentials_ = std::make_unique<iam::api::AccountCredentials>(*accounts_);
    front_ = std::make_unique<aws::ApiFront>(aws::FrontOptions{}, SystemClock::Get(), *credentials_);
    front_->AddJsonService(toy_.get());  // the registration: one line

    server_ = std::make_unique<http::Server>(http::ServerOptions{},
                                             [this](const http::Request& r) { return front_->Handle(r); });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    client_ = std::make_unique<http::Client>("127.0.0.1", *port);
  }

  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    if (store_) store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
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
    aws::SignRequest(req, {key_.id.str(), secret.empty() ? key_.secret : secret}, "eu-west-1", "toy",
                     SystemClock::Get().Now());
    auto r = client_->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  }

  static json::object Body(const http::Response& r) { return json::parse(r.body).as_object(); }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<iam::Accounts> accounts_;
  std::unique_ptr<iam::api::AccountCredentials> credentials_;
  iam::AccessKey key_;
  std::unique_ptr<Notes> notes_;
  std::unique_ptr<api::ToyService> toy_;
  std::unique_ptr<aws::ApiFront> front_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Client> client_;
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
