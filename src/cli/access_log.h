// cli/access_log: `--access-log`, one line per API request on stdout:
//
//   2026-12-01T10:00:00.123Z 123456789012 ecs.RunTask 200 - 12.3ms
//   2026-12-01T10:00:00.456Z 123456789012 ecs.DescribeClusters 400 ClusterNotFoundException 0.8ms
//   2026-12-01T10:00:01.002Z - ecs.ListClusters 400 UnrecognizedClientException 0.2ms
//
// Fields, space-separated: time (UTC, milliseconds), the caller's account ("-" when it was not
// authenticated), service.action ("-" when the request named none), HTTP status, the AWS error code
// ("-" on success), latency (from the API front's start to its answer). Bytes a client chose
// (the action) are printed only when they are letters and digits, so a hostile request cannot
// forge a line.
#pragma once

#include <functional>
#include <string>

#include "aws/front.h"
#include "common/clock.h"

namespace paddock::cli {

// The line for `record`, answered at `when`, without a newline. Pure.
std::string FormatAccessLogLine(const aws::RequestRecord& record, TimePoint when);

// An observer for aws::FrontOptions that prints each line to stdout (whole lines, one at a time,
// flushed).
std::function<void(const aws::RequestRecord&)> StdoutAccessLog();

}  // namespace paddock::cli
