// CloudWatch Logs' API (JSON 1.1, X-Amz-Target "Logs_20140328.<Action>", signing name "logs") over
// logs::LogGroups: decodes the front's validated input, calls the owner with typed values, encodes
// the answer, and names the owner's failures with CloudWatch Logs' error codes (ErrorFor). Every
// call is authorized by the front (AuthorizationFor; docs/contracts/logs.md "Authorization").
//
//   logs::api::LogsService logs(groups, aws::TokenCodec(token_key));
//   front.AddJsonService(&logs);
//
// LogsModule (below) is what the node builds: the logs store (<state-dir>/logs.db), the owner,
// this service and the owner's account reaper.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "aws/pagination.h"
#include "aws/service.h"
#include "iam/accounts.h"
#include "logs/live_tail.h"
#include "logs/log_groups.h"
#include "store/store.h"

namespace paddock::logs::api {

class LogsService final : public aws::JsonService {
 public:
  // AWS ends a Live Tail session after 3 hours (SessionTimeoutException).
  static constexpr Duration kLiveTailMaxDuration = std::chrono::hours(3);
  // How often a session's stream sends a sessionUpdate (empty or not), as AWS does.
  static constexpr Duration kLiveTailInterval = std::chrono::seconds(1);

  // `groups` must outlive the service. The service holds StartLiveTail's sessions (logs/live_tail.h)
  // and installs itself as `groups`' ingest listener.
  // REQUIRES: before the first LogGroups::Put.
  LogsService(LogGroups& groups, aws::TokenCodec tokens);

  std::string_view TargetPrefix() const override { return "Logs_20140328"; }
  std::string_view SigningName() const override { return "logs"; }
  // The embedded model, parsed once. Aborts if it does not parse: it is part of the binary.
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  // StartLiveTail: checks the request (groups of the caller's scope that exist, at most one group
  // with stream filters, a filter pattern that compiles), opens a session (LimitExceededException
  // past LiveTail::kMaxSessionsPerAccount), and returns its stream: sessionStart, then a
  // sessionUpdate every kLiveTailInterval until the client leaves or the session reaches its
  // maximum duration (then SessionTimeoutException).
  bool StreamsOutput(std::string_view action) const override { return action == "StartLiveTail"; }
  StatusOr<http::BodyProducer> CallStream(const aws::CallContext& ctx, boost::json::object& input) override;
  // Sessions started from now on last at most `d` (tests: shorter than kLiveTailMaxDuration).
  void SetLiveTailMaxDuration(Duration d) { live_tail_max_.store(d); }
  LiveTail& live_tail() { return live_tail_; }
  // logs:<Action> on the resource AWS names in its denials: a stream's actions on
  // arn:aws:logs:<r>:<a>:log-group:<g>:log-stream:<s>; a group's on …:log-group:<g>:log-stream:
  // (matched by "log-group:<g>:*"); DescribeLogGroups on …:log-group::log-stream:; the tag
  // actions on the ARN they name.
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;
  // logs::Error -> CloudWatch Logs' codes; the model's validation failures -> InvalidParameterException.
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

 private:
  LogGroups& groups_;
  aws::TokenCodec tokens_;
  LiveTail live_tail_;
  std::atomic<Duration> live_tail_max_{kLiveTailMaxDuration};
};

// The node's CloudWatch Logs: its own store (<state-dir>/logs.db: own writer thread and group
// commit, so ingest never queues behind ECS writes; or its own connections to a shared PostgreSQL
// database), owner, API and account reaper.
class LogsModule final : public iam::AccountReaper {
 public:
  // `token_key` seals nextTokens (the node's pagination key). The store is closed with the module.
  // `clock` (creation, ingestion and retention times) must outlive the module.
  static StatusOr<std::unique_ptr<LogsModule>> Open(const std::string& state_dir, const std::string& token_key,
                                                    const Clock& clock = SystemClock::Get());
  // The same on `store`, which holds the module's tables (kSchema): a PostgreSQL database that
  // several servers share, so a log written through one is read through any (docs/scaling.md).
  static StatusOr<std::unique_ptr<LogsModule>> OpenOn(std::unique_ptr<store::Store> store, const std::string& token_key,
                                                      const Clock& clock = SystemClock::Get());
  ~LogsModule() override;

  LogsService& service() { return *service_; }
  LogGroups& groups() { return *groups_; }

  // Prunes events past their group's retention when the last pass is at least kPruneEvery old
  // (the node calls this from its 30 s reaper loop). Failures are reported, not fatal.
  static constexpr Duration kPruneEvery = std::chrono::minutes(10);
  Status PruneIfDue(TimePoint now);

  std::string_view Name() const override { return "cloudwatch logs"; }
  Status ReapAccount(const AccountId& account) override { return groups_->ReapAccount(account); }

 private:
  LogsModule() = default;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<LogGroups> groups_;
  std::unique_ptr<LogsService> service_;
  std::optional<TimePoint> last_prune_;  // only the node's reaper thread calls PruneIfDue
};

}  // namespace paddock::logs::api
