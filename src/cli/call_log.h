// cli/call_log: `paddock controller --call-log FILE`, one JSON line per AWS call the controller
// makes (deploy::HttpAws's observer), so two runs of the same sequence — against Paddock and
// against another ECS-compatible endpoint — can be compared call for call:
//
//   {"service":"ecs","action":"CreateService","ok":true,"key":{"cluster":"default",
//    "serviceName":"paddock_shop_default_20261201-120000-abcd_web","desiredCount":1,"taskDefinition":"paddock_shop_default_web"}}
//   {"service":"ssm","action":"PutParameter","ok":true,"key":{"Name":"/paddock/default/shop/default/20261201-120000-abcd/DB_PASSWORD"}}
//
// (one line each in the file).
//
// "key" holds only the call's identifying, deterministic parameters — the same on any endpoint for
// the same sequence: names (cluster, service, family, parameter names and paths, log group),
// desiredCount and desiredStatus. A task definition is its family (no revision, no ARN); a resource
// ARN is its last path segment (the account and ARN format differ between endpoints). Everything
// else is left out, and never a value: PutParameter's Value (a secret) is not in any line.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "common/status.h"
#include "deploy/aws.h"

namespace paddock::cli {

// The identifying parameters of a call's `body` (the same allow-list for every action). Pure.
boost::json::object CallLogKey(const boost::json::object& body);

// The line for one call, without a newline. Pure.
std::string FormatCallLogLine(deploy::AwsService service, std::string_view action, const boost::json::object& body,
                              bool ok);

using CallObserver = std::function<void(deploy::AwsService, std::string_view, const boost::json::object&, bool)>;

// An observer for deploy::HttpAws::set_observer that appends each call's line to `path` (created
// 0600 if missing, never truncated). Safe to call from several threads: each line is one write(2)
// to a file opened O_APPEND. A line that cannot be written is dropped (the call is not failed).
StatusOr<CallObserver> OpenCallLog(const std::string& path);

}  // namespace paddock::cli
