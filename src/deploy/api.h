// deploy/api: the deploy controller's JSON HTTP API, which `paddock deploy` and `paddock deployments`
// call (docs/deploy.md, "The controller's API"). Every request carries "Authorization: Bearer
// <token>"; errors are {"error": "<what to fix>"} with 400 (bad input), 401 (no or a wrong token),
// 404 (no such deployment or endpoint), 409 (a state that does not allow it: stopping a finished
// deployment, a host another project has) or 503 (the store or AWS could not answer).
//
//   POST /v1/deployments                      {"toml": "...", "file": "paddock.toml" (how errors name it),
//                                              "environment": "", "group": "default",
//                                              "images": ["web=img:2"], "from": "<id>", "expire_seconds": 0}
//   GET  /v1/deployments?project=&group=&next_token=&limit=
//   GET  /v1/deployments/<id>                 the deployment (secret values never)
//   GET  /v1/deployments/<id>/events?after=<seq>
//   POST /v1/deployments/<id>/stop
//   GET  /v1/deployments/<id>/logs?start_ms=&next_token=   its containers' lines (CloudWatch Logs'
//                                              FilterLogEvents on the install's group, by stream prefix)
//   GET  /v1/deployments/<id>/logs?follow=1&start_ms=      the same from start_ms (default: now), then
//                                              each new line as it comes: newline-delimited JSON,
//                                              chunked, until the client leaves (deploy/follow.h);
//                                              each holds one of the server's workers, so at most
//                                              ApiBackends::max_follows run at once: one more is
//                                              503 "too many log follows …" (the CLI says so)
//   POST /v1/diff                             the body of a POST /v1/deployments: what it would change
//                                              against the group's active deployment, per container
//   GET  /v1/verify                           the preflight (deploy/verify.h): {"checks": [{name, ok, detail}]}
//   GET  /v1/projects/<project>/env           PUT/DELETE /v1/projects/<project>/env/<NAME> {"value", "secret"}
//
// Workload identity (D8, deploy/identity.h), without the API token — these are the tasks':
//   POST /v1/identity/token                   Authorization: Bearer <the deployment's credential>,
//                                              {"audience": "...", "ttl_seconds": 3600 (optional)} ->
//                                              {"token", "expires_in", "token_type": "Bearer"}; 401 a
//                                              credential that matches nothing, 403 a finished
//                                              deployment's, 429 over ExchangeLimiter's budget
//   GET  /.well-known/jwks.json               the issuer's public key
//   GET  /.well-known/openid-configuration    its discovery document
//
//   deploy::Api api(deployments, settings, token, [&] { controller.Nudge(); });
//   http::Server server({.port = 0}, [&](const http::Request& r) { return api.Handle(r); });
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <boost/json/object.hpp>

#include "deploy/aws.h"
#include "deploy/deployments.h"
#include "deploy/identity.h"
#include "deploy/verify.h"
#include "deploy/render.h"
#include "http/message.h"

namespace paddock::deploy {

// A deployment as the API and the CLI show it: no secret values, the URL it answers at.
boost::json::object DeploymentJson(const Deployment& d, const ControllerSettings& settings);

// What the API reaches besides the store; each may be null (then its endpoints say so).
struct ApiBackends {
  Aws* aws = nullptr;          // logs; verify
  QueryAws* query = nullptr;   // verify
  EdgeView* edge = nullptr;    // verify
  VerifyOptions verify;
  std::string ssm_prefix = "paddock";  // diff: secrets' parameter names, as the controller writes them
  std::chrono::milliseconds follow_poll_interval{500};  // logs?follow=1 when StartLiveTail is refused
  // Follows streaming at once; keep it below the server's worker threads so that the other
  // endpoints always have workers left.
  int max_follows = 8;
  const Issuer* issuer = nullptr;  // workload identity (D8); null: its endpoints answer 404
  // The exchange's budgets: per deployment (a credential that matches), and per source address for
  // credentials that match nothing.
  ExchangeLimiter::Bucket exchange_per_deployment{200, 20};
  ExchangeLimiter::Bucket exchange_per_failing_source{20, 1};
};

class Api {
 public:
  Api(Deployments& deployments, ControllerSettings settings, std::string token, std::function<void()> changed,
      ApiBackends backends = {})
      : deployments_(deployments), settings_(std::move(settings)), token_(std::move(token)), changed_(std::move(changed)),
        backends_(backends) {}
  http::Response Handle(const http::Request& req);

 private:
  http::Response Logs(const Deployment& d, std::string_view query);
  // POST /v1/identity/token and /.well-known/*: nullopt when `req` is none of them.
  std::optional<http::Response> Identity(const http::Request& req);
  // The log group's ARN (StartLiveTail names groups by ARN): its account from STS
  // GetCallerIdentity, asked once; the bare name when that cannot be learned (Paddock's own
  // endpoint takes it; another refuses, and the follow polls).
  std::string LogGroupArn();
  StatusOr<NewDeployment> Requested(const boost::json::object& body);
  StatusOr<boost::json::object> Diff(const NewDeployment& nd);

  Deployments& deployments_;
  ControllerSettings settings_;
  std::string token_;
  std::function<void()> changed_;
  ApiBackends backends_;
  // The follows streaming now; each holds a share of it (released when its stream ends or its
  // response is dropped unsent).
  std::shared_ptr<std::atomic<int>> follows_ = std::make_shared<std::atomic<int>>(0);
  ExchangeLimiter exchange_limiter_{backends_.exchange_per_deployment, backends_.exchange_per_failing_source};
  std::mutex arn_mu_;
  std::string log_group_arn_;  // GUARDED_BY(arn_mu_); empty: not learned yet
};

}  // namespace paddock::deploy
