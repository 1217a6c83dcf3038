// The REST-JSON toy end to end, as a client sees it: a real API front with the toy added by one
// line, a real HTTP server on an ephemeral port, SigV4-signed requests checked against an
// account's stored key (SQLite), and a fake authorizer that denies one bucket. It pins the
// protocol (aws/rest_json.h): routing by method and path template, labels (greedy included),
// query members, headers, prefixed headers, body members, response codes, restJson1 errors,
// unknown routes, validation, and a denial.
#include "testing/toy_rest/api/toy_files_service.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "testing/toy_front_fixture.h"
#include "testing/toy_rest/files.h"

namespace paddock::toyrest {
namespace {

namespace json = boost::json;

// Denies every action on bucket "locked", as IAM words a denial; allows the rest.
class DenyLockedBucket final : public aws::Authorizer {
 public:
  Status Authorize(const aws::CallContext& call, const aws::AuthRequest& request) override {
    const Principal& principal = call.principal;
    if (!request.resource.ends_with(":bucket/locked")) return OkStatus();
    return PermissionDenied("User: " + principal.arn + " is not authorized to perform: " + request.action +
                            " on resource: " + request.resource + " with an explicit deny");
  }
};

class ToyFilesServiceTest : public testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("toyrest"));
    service_ = std::make_unique<api::ToyFilesService>(files_);
    aws::FrontOptions front_options;
    front_options.authorizer = &authorizer_;
    front_options.observer = [this](const aws::RequestRecord& r) {
      std::lock_guard lock(records_mu_);
      records_.push_back(r);
    };
    CreateFront(std::move(front_options));
    front_->AddRestJsonService(service_.get());  // the registration: one line
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  // Sends `method` `target` (path and query, already percent-encoded as an SDK sends them) with
  // `headers` and `body`, signed for "toyfiles" with the account's key (or `secret`).
  http::Response Send(std::string method, std::string target, std::string body = "",
                      std::vector<http::Header> headers = {}, std::string secret = "") {
    http::Request req;
    req.method = std::move(method);
    req.target = std::move(target);
    req.headers = {{"Host", "localhost"}};
    if (!body.empty()) req.headers.push_back({"Content-Type", "application/json"});
    for (http::Header& h : headers) req.headers.push_back(std::move(h));
    req.body = std::move(body);
    return SignAndSend(std::move(req), "toyfiles", secret);
  }

  // Expects a restJson1 error: `status`, X-Amzn-ErrorType `type`, the message under `member`.
  static void ExpectError(const http::Response& r, int status, std::string_view type,
                          std::string_view member = "message") {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.GetHeader("X-Amzn-ErrorType"), type) << r.body;
    EXPECT_EQ(r.GetHeader("Content-Type"), "application/json");
    json::object body = Body(r);
    EXPECT_TRUE(body.contains(member)) << r.body;
  }

  Scope scope() const { return Scope{key_.account, Region("eu-west-1")}; }

  Files files_;
  DenyLockedBucket authorizer_;
  std::unique_ptr<api::ToyFilesService> service_;
  std::mutex records_mu_;
  std::vector<aws::RequestRecord> records_;  // GUARDED_BY(records_mu_): the access log's view
};

TEST_F(ToyFilesServiceTest, EveryBindingReachesTheServiceByMemberName) {
  // Labels (the greedy Key keeps its slashes and decodes %20), a header, prefixed headers, a
  // query boolean and body members; 201 is the model's responseCode.
  http::Response put = Send("PUT", "/buckets/docs/files/notes/2026/plan%20b.txt?overwrite=false",
                            R"({"Content":"water the plants","Tags":["home","weekly"]})",
                            {{"X-Toy-Owner", "alice"}, {"x-toy-meta-color", "blue"}, {"X-Toy-Meta-Size", "small"}});
  ASSERT_EQ(put.status, 201) << put.body;
  EXPECT_EQ(put.GetHeader("Content-Type"), "application/json");
  EXPECT_EQ(Body(put), (json::object{{"Version", 1}}));

  auto stored = files_.Get(scope(), "docs", "notes/2026/plan b.txt", std::nullopt);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->data.owner, "alice");
  EXPECT_EQ(stored->data.tags, (std::vector<std::string>{"home", "weekly"}));
  EXPECT_EQ(stored->data.metadata, (std::map<std::string, std::string>{{"Size", "small"}, {"color", "blue"}}));

  http::Response got = Send("GET", "/buckets/docs/files/notes/2026/plan%20b.txt");
  ASSERT_EQ(got.status, 200) << got.body;
  json::object body = Body(got);
  EXPECT_EQ(body.at("Key").as_string(), "notes/2026/plan b.txt");
  EXPECT_EQ(body.at("Content").as_string(), "water the plants");
  EXPECT_EQ(body.at("Owner").as_string(), "alice");
}

TEST_F(ToyFilesServiceTest, QueryMembersAreTypedAndLiteralQueriesRoute) {
  ASSERT_EQ(Send("PUT", "/buckets/docs/files/a.txt", R"({"Content":"one"})").status, 201);
  // A modelled error: 409 from the error shape, its "message" member.
  ExpectError(Send("PUT", "/buckets/docs/files/a.txt", R"({"Content":"two"})"), 409, "FileExistsException");
  ASSERT_EQ(Send("PUT", "/buckets/docs/files/a.txt?overwrite=true", R"({"Content":"two"})").status, 201);

  // version=1 is a long; "?versions" (the template's literal query) picks ListFileVersions.
  http::Response v1 = Send("GET", "/buckets/docs/files/a.txt?version=1");
  ASSERT_EQ(v1.status, 200) << v1.body;
  EXPECT_EQ(Body(v1).at("Content").as_string(), "one");
  http::Response versions = Send("GET", "/buckets/docs/files/a.txt?versions");
  ASSERT_EQ(versions.status, 200) << versions.body;
  EXPECT_EQ(Body(versions), (json::object{{"Versions", json::array{1, 2}}}));

  ASSERT_EQ(Send("PUT", "/buckets/docs/files/b.txt", R"({"Content":"x"})", {{"X-Toy-Owner", "bob"}}).status, 201);
  ASSERT_EQ(Send("PUT", "/buckets/docs/files/c.txt", R"({"Content":"x"})", {{"X-Toy-Owner", "carol"}}).status, 201);
  // A repeated query key is a list; maxResults an integer.
  http::Response owned = Send("GET", "/buckets/docs/files?owner=bob&owner=carol&maxResults=10");
  ASSERT_EQ(owned.status, 200) << owned.body;
  EXPECT_EQ(Body(owned), (json::object{{"Keys", json::array{"b.txt", "c.txt"}}}));
  http::Response first = Send("GET", "/buckets/docs/files?maxResults=1&prefix=b");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(Body(first), (json::object{{"Keys", json::array{"b.txt"}}}));
}

TEST_F(ToyFilesServiceTest, DeleteAnswers204AndAMissingFileIsTheModelsError) {
  ASSERT_EQ(Send("PUT", "/buckets/docs/files/a.txt", R"({"Content":"one"})").status, 201);
  http::Response deleted = Send("DELETE", "/buckets/docs/files/a.txt");
  EXPECT_EQ(deleted.status, 204) << deleted.body;
  EXPECT_TRUE(deleted.body.empty());
  // FileNotFoundException's shape names its member "Message" (as Lambda's do): the body uses it.
  http::Response missing = Send("GET", "/buckets/docs/files/a.txt");
  ExpectError(missing, 404, "FileNotFoundException", "Message");
  EXPECT_EQ(Body(missing).at("Message").as_string(), "No file 'a.txt' in bucket 'docs'.");
}

TEST_F(ToyFilesServiceTest, UnknownRoutesAre404UnknownOperationException) {
  ExpectError(Send("GET", "/nothing/here"), 404, "UnknownOperationException");
  // The path matches PutFile's template, not the method; a label may not be empty.
  ExpectError(Send("POST", "/buckets/docs/files/a.txt", R"({"Content":"x"})"), 404, "UnknownOperationException");
  ExpectError(Send("GET", "/buckets//files/a.txt"), 404, "UnknownOperationException");
  // A greedy label needs at least one segment.
  ExpectError(Send("DELETE", "/buckets/docs/files/"), 404, "UnknownOperationException");
}

TEST_F(ToyFilesServiceTest, BadInputNeverReachesTheOwner) {
  // The model's range, required members and lengths, as the toy's table names them.
  ExpectError(Send("GET", "/buckets/docs/files?maxResults=0"), 400, "ValidationException");
  ExpectError(Send("PUT", "/buckets/docs/files/a.txt", R"({"Tags":["x"]})"), 400, "ValidationException");
  ExpectError(Send("PUT", "/buckets/" + std::string(33, 'b') + "/files/a.txt", R"({"Content":"x"})"), 400,
              "ValidationException");
  // Text that is not of the member's type, and a body that is not JSON, do not decode.
  ExpectError(Send("GET", "/buckets/docs/files?maxResults=ten"), 400, "SerializationException");
  ExpectError(Send("PUT", "/buckets/docs/files/a.txt?overwrite=yes", R"({"Content":"x"})"), 400,
              "SerializationException");
  ExpectError(Send("PUT", "/buckets/docs/files/a.txt", R"({"Content":)"), 400, "SerializationException");
  EXPECT_FALSE(files_.Get(scope(), "docs", "a.txt", std::nullopt).ok());

  // A member bound to a header cannot be smuggled in through the body.
  ASSERT_EQ(Send("PUT", "/buckets/docs/files/b.txt", R"({"Content":"x","Owner":"mallory","Key":"other"})").status,
            201);
  auto stored = files_.Get(scope(), "docs", "b.txt", std::nullopt);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->data.owner, "");
  EXPECT_FALSE(files_.Get(scope(), "docs", "other", std::nullopt).ok());
}

TEST_F(ToyFilesServiceTest, TheFrontAuthenticatesAndAuthorizesForTheToy) {
  // Denied: 403 AccessDeniedException, and nothing is written.
  http::Response denied = Send("PUT", "/buckets/locked/files/a.txt", R"({"Content":"x"})");
  ExpectError(denied, 403, "AccessDeniedException");
  EXPECT_NE(Body(denied).at("message").as_string().find("toyfiles:PutFile on resource: arn:aws:toyfiles:eu-west-1:"),
            std::string::npos)
      << denied.body;
  EXPECT_FALSE(files_.Get(scope(), "locked", "a.txt", std::nullopt).ok());
  // A wrong signature is refused before routing or the toy sees anything.
  http::Response forged = Send("PUT", "/buckets/docs/files/a.txt", R"({"Content":"x"})", {}, "not-the-secret");
  EXPECT_EQ(forged.GetHeader("X-Amzn-ErrorType"), "InvalidSignatureException") << forged.body;
  EXPECT_FALSE(files_.Get(scope(), "docs", "a.txt", std::nullopt).ok());
  // A request signed for another service is not this toy's.
  http::Request other;
  other.method = "GET";
  other.target = "/buckets/docs/files";
  other.headers = {{"Host", "localhost"}};
  aws::SignRequest(other, {key_.id.str(), key_.secret}, "eu-west-1", "nosuchservice", SystemClock::Get().Now());
  auto r = client_->Send(other);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->GetHeader("X-Amzn-ErrorType"), "UnknownOperationException") << r->body;
}

TEST_F(ToyFilesServiceTest, TheAccessLogSeesTheRoutedOperation) {
  ASSERT_EQ(Send("PUT", "/buckets/docs/files/a.txt", R"({"Content":"x"})").status, 201);
  ASSERT_EQ(Send("GET", "/buckets/docs/files/missing.txt").status, 404);
  ASSERT_EQ(Send("GET", "/nothing").status, 404);
  std::lock_guard lock(records_mu_);
  ASSERT_EQ(records_.size(), 3u);
  EXPECT_EQ((std::tie(records_[0].service, records_[0].action, records_[0].http_status)),
            (std::make_tuple(std::string("toyfiles"), std::string("PutFile"), 201)));
  EXPECT_EQ(records_[0].account, key_.account.str());
  EXPECT_EQ((std::tie(records_[1].action, records_[1].error)),
            (std::make_tuple(std::string("GetFile"), std::string("FileNotFoundException"))));
  EXPECT_EQ((std::tie(records_[2].action, records_[2].error)),
            (std::make_tuple(std::string(""), std::string("UnknownOperationException"))));
}

// botocore, built from the toy's own model, serializes, signs and parses every call the way
// the AWS SDKs do: api/botocore_client_test.py, against this fixture's server and key.
TEST_F(ToyFilesServiceTest, BotocoreClientAgrees) {
  if (std::system("python3 -c 'import botocore' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with botocore is not installed";
  ASSERT_EQ(setenv("TOY_ENDPOINT", fmt::format("http://127.0.0.1:{}", port_).c_str(), 1), 0);
  ASSERT_EQ(setenv("TOY_KEY", key_.id.str().c_str(), 1), 0);
  ASSERT_EQ(setenv("TOY_SECRET", key_.secret.c_str(), 1), 0);
  ASSERT_EQ(setenv("TOY_MODEL", PADDOCK_TOY_FILES_MODEL_PATH, 1), 0);
  EXPECT_EQ(std::system("python3 " PADDOCK_TOY_FILES_BOTOCORE_TEST " -v"), 0);
}

}  // namespace
}  // namespace paddock::toyrest
