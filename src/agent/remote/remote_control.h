// agent/remote/remote_control: a Control for an agent in another process or on another host —
// `paddock agent` (docs/agent-protocol.md). It speaks the Paddock agent protocol
// (agent/remote/server/agent_service.h) over HTTP with SigV4, signed with the agent's own credentials.
//
//   JsonClient client({.host = "10.0.0.1", .port = 4566, .region = "us-east-1", .credentials = creds});
//   RemoteControl control(client_options, "prod", instance_arn);
//   RETURN_IF_ERROR(control.Start());         // the long-poll thread
//   Agent agent(control, images, runtime, {.agent_id = instance_arn, ...});
//   ...
//   control.Stop();                            // cancels the poll in flight
//
// One thread long-polls PollAssignments (waitSeconds = RemoteOptions::poll_wait) and keeps the
// latest answer; Assignments returns it without a round trip, and a changed answer wakes the
// watchers (Agent::Notify) at once. Every poll is also the instance's heartbeat. On a transport
// error or an AWS error the thread pauses `retry_pause` and asks again; a busy answer (the server
// had no free wait slot) pauses `busy_pause`. Reports go out on their own connection, retried on
// transport errors (never on an AWS error, which the caller sees).
//
// Revocation. The client signs with the instance's agent credential. When the control plane no
// longer accepts it (`revoked_after` polls in a row answered UnrecognizedClientException or
// AccessDeniedException: the instance was deregistered or its account deleted), nothing is
// assigned to this agent any more: Assignments answers an empty list (so the agent stops
// everything it runs, agent.h "Reconciling"), the watchers are woken, polling ends and Revoked()
// turns true.
//
// Fencing (docs/agent-protocol.md, "Fencing"). Every PollAssignments answer of a server that sweeps
// lost hosts carries fenceAfterMillis. Once that long has passed since this agent SENT its last
// poll that was answered, Assignments answers an empty list — the agent stops its tasks'
// containers, as for a revocation, and reports nothing (it cannot reach anyone) — and Fenced()
// turns true, until a poll is answered again: then the control plane's answer stands (tasks it has
// meanwhile recorded STOPPED are no longer assigned, and their leftovers are swept away).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "agent/control.h"
#include "agent/protocol/messages.h"
#include "aws/json_client.h"
#include "aws/sigv4.h"
#include "http/client.h"

namespace paddock::agent::remote {

using protocol::ImageAccess;
using protocol::kAgentTargetPrefix;

// The signed JSON client every Paddock client process shares (aws/json_client.h), under the names
// the agent's code uses.
using ClientOptions = aws::JsonClientOptions;
using aws::JsonClient;

// "http://HOST:PORT[/]" → host and port (no TLS: the endpoint is Paddock's own).
StatusOr<std::pair<std::string, uint16_t>> ParseEndpoint(std::string_view url);

struct RemoteOptions {
  std::chrono::seconds poll_wait{20};
  std::chrono::milliseconds busy_pause{1000};
  std::chrono::milliseconds retry_pause{1000};
  int report_attempts = 5;  // on transport errors, retry_pause apart
  int revoked_after = 3;    // refused polls in a row (retry_pause apart) that mean revocation
  // The monotonic time the fence is measured in (tests: a fake one). Null: steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> steady_now = nullptr;
};

class RemoteControl final : public Control {
 public:
  // `cluster` is the cluster's name; `instance_arn` the registered container instance's ARN
  // (which is also the agent id its tasks are assigned to).
  RemoteControl(ClientOptions client, std::string cluster, std::string instance_arn, RemoteOptions options = {});
  ~RemoteControl() override;

  // Starts the poll thread. REQUIRES: not started.
  Status Start();
  // Cancels the poll in flight and joins. Idempotent.
  void Stop();

  // The last answer of PollAssignments (Unavailable before the first one arrived).
  StatusOr<std::vector<protocol::LaunchSpec>> Assignments(std::string_view agent_id) override;
  Status Report(std::string_view agent_id, std::string_view task_arn, const protocol::TaskStateChange& change,
                TimePoint now) override;
  uint64_t Watch(std::string_view agent_id, std::function<void()> wake) override;
  void Unwatch(uint64_t handle) override;
  // ECS's DescribeTasks with the agent's credentials (one round trip per call, on a connection of
  // its own), for the task metadata endpoint.
  StatusOr<std::string> DescribeTask(const protocol::LaunchSpec& spec, bool with_tags) override;
  // GetNetworkPolicy (one round trip per call, on a connection of its own; `scope` must be the
  // agent's own account and region, the signing ones).
  StatusOr<vpc::VpcPolicy> NetworkPolicy(std::string_view agent_id, const Scope& scope) override;
  // From the last PollAssignments answer.
  std::string NetworkIdentity() override;
  // GetTaskCredentials (one round trip per call, on a connection of its own). A ClientException
  // (the role cannot be assumed) is InvalidArgument with the control plane's message.
  StatusOr<metadata::RoleCredentials> TaskRoleCredentials(std::string_view agent_id,
                                                          const protocol::LaunchSpec& spec) override;
  // GetExecutionResources (one round trip per call, on a connection of its own): the task's
  // secrets and registry credentials, fetched by the control plane as its execution role. A server
  // without the call answers FailedPrecondition (UnknownOperationException), as the default does.
  StatusOr<protocol::ExecutionResources> PrepareExecutionResources(std::string_view agent_id,
                                                                  const protocol::LaunchSpec& spec) override;
  // ShipLogs (one round trip per call, on a connection of its own that every shipper of this
  // agent shares, one call at a time). A server without the call: FailedPrecondition.
  StatusOr<protocol::LogsAnswer> ShipLogs(std::string_view agent_id, const protocol::LaunchSpec& spec,
                                          const protocol::LogsCall& call) override;
  // AwaitDrain: one long-poll of up to min(max_wait, kMaxDrainAsk), on a connection of its own (so
  // that the drains of several stopping tasks wait side by side), cancelled at once when `stop` is
  // requested (Aborted). A server without the call (UnknownOperationException) keeps no holds:
  // go at once (kNoHolds), as the default does.
  StatusOr<protocol::DrainAnswer> AwaitDrain(std::string_view agent_id, const protocol::LaunchSpec& spec,
                                             std::chrono::milliseconds max_wait, std::stop_token stop) override;
  // GetImageAccess (one round trip per call, on a connection of its own): where the cluster's image
  // store serves `reference`, with a wildcard registry host (0.0.0.0, ::) replaced by the host this
  // agent reaches the server at. A server without the call (UnknownOperationException): not found.
  StatusOr<ImageAccess> GetImageAccess(const std::string& reference);

  // Blocks until the first poll answered or `timeout` passed; returns whether it did.
  bool WaitForFirstPoll(std::chrono::milliseconds timeout);
  // The control plane no longer accepts this agent's credential (see above).
  bool Revoked();
  // Fenced off (see above): no poll answered for longer than the control plane's fence time.
  bool Fenced();
  // The control plane's fence time, from its last answer; zero before one, or from a control
  // plane that sends none.
  std::chrono::milliseconds FenceAfter();

 private:
  void PollLoop();
  void Pause(std::chrono::milliseconds d);
  // `action` about the task of `spec` on `client` (one call at a time under `mu`), as this
  // control's instance (InvalidArgument for another `agent_id`); `body` holds the call's own
  // members. The answer's object.
  StatusOr<boost::json::object> CallAboutTask(std::mutex& mu, JsonClient& client, std::string_view action,
                                              std::string_view agent_id, const protocol::LaunchSpec& spec,
                                              boost::json::object body = {});

  // For the connections made per call (AwaitDrain): the endpoint the poll last reached first, then
  // the others in turn (several servers: aws::JsonClientOptions::alternates).
  ClientOptions PerCallOptions();

  const ClientOptions client_options_;
  std::mutex endpoint_mu_;
  size_t endpoint_ = 0;  // GUARDED_BY(endpoint_mu_): index into host + alternates the poll last reached
  const std::string cluster_;
  const std::string instance_arn_;
  const RemoteOptions options_;
  JsonClient poll_client_;
  std::mutex report_mu_;
  JsonClient report_client_;  // GUARDED_BY(report_mu_)
  std::mutex describe_mu_;
  JsonClient describe_client_;  // GUARDED_BY(describe_mu_)
  std::mutex policy_mu_;
  JsonClient policy_client_;  // GUARDED_BY(policy_mu_)
  std::mutex image_mu_;
  JsonClient image_client_;  // GUARDED_BY(image_mu_)
  std::mutex credentials_mu_;
  JsonClient credentials_client_;  // GUARDED_BY(credentials_mu_)
  std::mutex resources_mu_;
  JsonClient resources_client_;  // GUARDED_BY(resources_mu_)
  std::mutex logs_mu_;
  JsonClient logs_client_;  // GUARDED_BY(logs_mu_)
  const std::string endpoint_host_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                                      // GUARDED_BY(mu_)
  std::optional<std::vector<protocol::LaunchSpec>> latest_;  // GUARDED_BY(mu_)
  std::string version_;                                    // GUARDED_BY(mu_)
  bool revoked_ = false;                                   // GUARDED_BY(mu_)
  std::string network_identity_;                           // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point answered_sent_{};  // GUARDED_BY(mu_): the last answered poll's send
  std::chrono::milliseconds fence_after_{0};               // GUARDED_BY(mu_): from that answer; zero: none
  bool fenced_ = false;                                    // GUARDED_BY(mu_)
  // Whether the fence time has passed (logs when it first does). REQUIRES: mu_ held.
  bool FenceDue();
  std::chrono::steady_clock::time_point SteadyNow() const {
    return options_.steady_now ? options_.steady_now() : std::chrono::steady_clock::now();
  }
  uint64_t next_watch_ = 1;                                // GUARDED_BY(mu_)
  std::map<uint64_t, std::function<void()>> watchers_;     // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace paddock::agent::remote
