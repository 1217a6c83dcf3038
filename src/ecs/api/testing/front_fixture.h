// The real API front over the real ECS adapter, owners and a temporary SQLite store, driven with
// a fake clock and emulator-mode SigV4 — what the golden and throttling tests send requests to.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>

#include "aws/front.h"
#include "aws/sigv4.h"
#include "common/testing/fake_clock.h"
#include "ecs/api/ecs_service.h"
#include "ecs/api/models/models.h"
#include "ecs/task/tasks.h"
#include "ecs/testing/temp_store.h"
#include "iam/accounts.h"
#include "iam/api/account_credentials.h"

namespace paddock::ecs::api::testing {

class EcsFront {
 public:
  explicit EcsFront(bool rate_limits = false) {
    model_ = std::move(*aws::ServiceModel::Parse(EcsModelJson()));
    clusters_.AddUsage(instances_.cluster_usage());
    clusters_.SetAccountSettings(&settings_);
    clusters_.SetCapacityProviders(&providers_);
    clusters_.AddUsage(services_.cluster_usage());
    tds_.AddReferenceCheck(services_.reference_check());
    services_.SetIdGenerator([this](size_t n, std::string_view alphabet) {
      std::string id = fmt::format("{:0{}d}", ++next_service_id_, n);
      for (char& c : id) c = alphabet[static_cast<size_t>(c - '0') % alphabet.size()];
      return id;
    });
    ecs_ = std::make_unique<EcsService>(*model_, Owners{&clusters_, &tds_, &tasks_, &instances_, &services_, &settings_, &providers_},
                                        aws::TokenCodec("golden-key"));
    ecs_->SetEndpoint("http://127.0.0.1:4566");
    aws::FrontOptions options;
    options.auth.accept_any_credentials = true;
    options.auth.default_account = AccountId("123456789012");
    options.rate_limits = rate_limits;
    front_ = std::make_unique<aws::ApiFront>(options, clock_, credentials_);
    front_->AddJsonService(ecs_.get());
  }

  // Sends `action` with `body`, signed (emulator mode) with access key `key`, which is also the
  // caller's account when it is 12 digits.
  http::Response Send(std::string_view action, std::string body, std::string key = "123456789012") {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "ecs.us-east-1.amazonaws.com"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "AmazonEC2ContainerServiceV20141113." + std::string(action)}};
    req.body = std::move(body);
    aws::SignRequest(req, {std::move(key), "secret"}, "us-east-1", "ecs", clock_.Now());
    return front_->Handle(req);
  }

  paddock::testing::FakeClock& clock() { return clock_; }

 private:
  paddock::testing::FakeClock clock_{TimePoint(std::chrono::seconds(1'780'000'000))};
  paddock::testing::TempStore store_;
  iam::Accounts accounts_{*store_, clock_};
  iam::api::AccountCredentials credentials_{accounts_};
  setting::AccountSettings settings_{*store_};
  capacity::CapacityProviders providers_{*store_};
  cluster::Clusters clusters_{*store_};
  taskdef::TaskDefinitions tds_{*store_};
  // Deterministic ids, so golden answers can name them: 00..01, 00..02, ... (32 or 17 digits).
  uint64_t next_hex_ = 0;
  instance::ContainerInstances instances_{*store_, clusters_,
                                          [this](size_t n) { return fmt::format("{:0{}x}", ++next_hex_, n); }};
  // A small node: 2 vCPUs and 4 GiB for Fargate, 1 vCPU per account (RunTask's refusal cases).
  task::FargateCapacity fargate_{task::FargateLimits{.cpu = 2048, .memory = 4096, .vcpus_per_account = 1}};
  task::Tasks tasks_{*store_, tds_, clusters_, "fargate-local", &instances_, &fargate_};
  // Services' ids (deployments, service deployments, revisions) from one counter, too.
  uint64_t next_service_id_ = 0;
  service::Services services_{*store_, tds_, clusters_};
  std::unique_ptr<aws::ServiceModel> model_;
  std::unique_ptr<EcsService> ecs_;
  std::unique_ptr<aws::ApiFront> front_;
};

}  // namespace paddock::ecs::api::testing
