// The real API front over the real EC2 adapter, security groups and a temporary SQLite store,
// driven with a fake clock and emulator-mode SigV4 (any key of account 123456789012): what the
// EC2 adapter's tests send their form-encoded requests to.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "aws/front.h"
#include "aws/sigv4.h"
#include "common/testing/fake_clock.h"
#include "ec2/api/ec2_service.h"
#include "ecs/testing/temp_store.h"
#include "vpc/security_groups.h"

namespace paddock::ec2::api::testing {

class Ec2FrontTest : public ::testing::Test {
 protected:
  Ec2FrontTest() {
    aws::FrontOptions options;
    options.auth.accept_any_credentials = true;
    options.auth.default_account = AccountId("123456789012");
    front_ = std::make_unique<aws::ApiFront>(options, clock_, resolver_);
    front_->AddQueryService(&ec2_);
  }

  // POSTs `body` (form-encoded, as sent) signed for ec2 in us-east-1.
  http::Response Post(std::string body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"}, {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
    req.body = std::move(body);
    aws::SignRequest(req, {"123456789012", "x"}, "us-east-1", "ec2", clock_.Now());
    return front_->Handle(req);
  }

  // The text of the first <tag> in `body`, or "".
  static std::string Between(const std::string& body, const std::string& tag) {
    size_t a = body.find("<" + tag + ">");
    if (a == std::string::npos) return "";
    a += tag.size() + 2;
    return body.substr(a, body.find("</" + tag + ">", a) - a);
  }
  static std::string ErrorCode(const http::Response& r) { return Between(r.body, "Code"); }

  struct NoKeys : aws::CredentialResolver {
    StatusOr<std::optional<aws::Credential>> Lookup(const AccessKeyId&) override { return std::optional<aws::Credential>(); }
  } resolver_;
  paddock::testing::FakeClock clock_;
  paddock::testing::TempStore store_;
  vpc::SecurityGroups groups_{*store_};
  Ec2Service ec2_{*store_, groups_, aws::TokenCodec("test-key")};
  std::unique_ptr<aws::ApiFront> front_;
};

}  // namespace paddock::ec2::api::testing
