// The fixture the toy services' end-to-end tests share (testing/toy_*/api/*_test.cc): a real
// SQLite store in a fresh temporary directory holding the node's tables (and a toy's own), an
// account with a stored access key, a real API front that checks SigV4 against that key, and a
// real HTTP server on an ephemeral port. A toy's test keeps only what is its own — its owner,
// its service, its registration line and its cases:
//
//   class ToyServiceTest : public paddock::testing::ToyFrontTest {
//    protected:
//     void SetUp() override {
//       ASSERT_NO_FATAL_FAILURE(OpenStore("toy", {kSchema}));
//       toy_ = std::make_unique<api::ToyService>(...);
//       CreateFront({});
//       front_->AddJsonService(toy_.get());  // the registration: one line
//       ASSERT_NO_FATAL_FAILURE(StartServer());
//     }
//   };
//
// Header-only: it is test infrastructure, never linked into the node.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/json.hpp>

#include <fmt/format.h>

#include "aws/front.h"
#include "aws/service.h"
#include "aws/sigv4.h"
#include "cli/schemas.h"
#include "common/clock.h"
#include "http/client.h"
#include "http/server.h"
#include "iam/accounts.h"
#include "iam/api/account_credentials.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::testing {

// An authorizer for a service's end-to-end test: records every question the front asks, and
// refuses those whose resource `Deny`'s predicate picks (none by default) with IAM's wording.
class RecordingAuthorizer final : public aws::Authorizer {
 public:
  Status Authorize(const aws::CallContext& call, const aws::AuthRequest& request) override {
    std::lock_guard lock(mu_);
    asked_.push_back(request);
    if (denies_ && denies_(request.resource))
      return PermissionDenied(fmt::format("User: {} is not authorized to perform: {} on resource: {} because no "
                                          "identity-based policy allows the {} action",
                                          call.principal.arn, request.action, request.resource, request.action));
    return OkStatus();
  }
  // From now on refuses the questions on a resource `denies` picks; an empty function refuses none.
  void Deny(std::function<bool(std::string_view resource)> denies) {
    std::lock_guard lock(mu_);
    denies_ = std::move(denies);
  }
  // The questions asked since the last Take or TakeRequests, oldest first.
  std::vector<aws::AuthRequest> TakeRequests() {
    std::lock_guard lock(mu_);
    return std::exchange(asked_, {});
  }
  // The same, each as "action resource".
  std::vector<std::string> Take() {
    std::vector<std::string> out;
    for (const aws::AuthRequest& r : TakeRequests()) out.push_back(r.action + " " + r.resource);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<aws::AuthRequest> asked_;           // GUARDED_BY(mu_)
  std::function<bool(std::string_view)> denies_;  // GUARDED_BY(mu_)
};

class ToyFrontTest : public ::testing::Test {
 protected:
  // Opens the store in a new directory "paddock-<name>-XXXXXX" with the node's schemas and
  // `extra` (a toy's own tables), and creates account `name` with an access key (key_).
  // Fails the test on any error: call it under ASSERT_NO_FATAL_FAILURE.
  void OpenStore(std::string_view name, std::vector<store::ModuleSchema> extra = {}) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / ("paddock-" + std::string(name) + "-XXXXXX")).string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store::SqliteOptions options;
    options.path = dir_ + "/state.db";
    options.durable = false;
    options.schemas = cli::NodeSchemas();
    options.schemas.insert(options.schemas.end(), extra.begin(), extra.end());
    auto opened = store::SqliteStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);

    accounts_ = std::make_unique<iam::Accounts>(*store_, SystemClock::Get());
    auto account = accounts_->CreateAccount(std::nullopt, std::string(name));
    ASSERT_TRUE(account.ok()) << account.status().ToString();
    auto key = accounts_->CreateAccessKey(account->id);
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    key_ = *key;
    credentials_ = std::make_unique<iam::api::AccountCredentials>(*accounts_);
  }

  // Makes front_, resolving keys from the store's accounts; the test registers its service on it
  // next. REQUIRES: OpenStore succeeded; what `options` points at outlives the front (TearDown
  // destroys it).
  void CreateFront(aws::FrontOptions options) {
    front_ = std::make_unique<aws::ApiFront>(std::move(options), SystemClock::Get(), *credentials_);
  }

  // Serves front_ on 127.0.0.1, an ephemeral port (port_), and connects client_ to it.
  // REQUIRES: CreateFront, and the service registered. Call it under ASSERT_NO_FATAL_FAILURE.
  void StartServer() {
    server_ = std::make_unique<http::Server>(http::ServerOptions{},
                                             [this](const http::Request& r) { return front_->Handle(r); });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    client_ = std::make_unique<http::Client>("127.0.0.1", *port);
  }

  // Stops serving, then destroys the front before the derived test's service and authorizer,
  // which it points at, are destroyed.
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    server_.reset();
    front_.reset();
    if (store_) store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Signs `req` for `service` in eu-west-1 with key_ (or key_'s id with `secret`, when not
  // empty) and sends it; a transport failure fails the test and answers an empty response.
  http::Response SignAndSend(http::Request req, std::string_view service, const std::string& secret = "") {
    aws::SignRequest(req, {key_.id.str(), secret.empty() ? key_.secret : secret}, "eu-west-1", service,
                     SystemClock::Get().Now());
    auto r = client_->Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  }

  // Sends `body` as the JSON 1.1 call `target` ("AmazonSSM.GetParameter"), signed for `service`.
  http::Response SendJson(const std::string& target, std::string_view service, std::string body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"}, {"Content-Type", "application/x-amz-json-1.1"}, {"X-Amz-Target", target}};
    req.body = std::move(body);
    return SignAndSend(std::move(req), service);
  }

  static boost::json::object Body(const http::Response& r) { return boost::json::parse(r.body).as_object(); }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<iam::Accounts> accounts_;
  std::unique_ptr<iam::api::AccountCredentials> credentials_;
  iam::AccessKey key_;
  std::unique_ptr<aws::ApiFront> front_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Client> client_;
  int port_ = 0;
};

}  // namespace paddock::testing
