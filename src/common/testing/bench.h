// What the benchmark drivers (*_bench.cc) share: a duration in milliseconds, a percentile of
// samples, and stopping at a failed step (a benchmark has nobody to hand an error to).
//
//   const auto t0 = std::chrono::steady_clock::now();
//   bench::CheckOk(tasks.ReportState(agent, arn, change, now), "report");
//   samples.push_back(bench::Ms(std::chrono::steady_clock::now() - t0));
//   std::printf("p50 %.3f ms\n", bench::Percentile(samples, 50));
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/status.h"

namespace paddock::bench {

inline double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The p-th percentile (0..100) of `samples` (nearest rank). REQUIRES: !samples.empty().
inline double Percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  return samples[std::min(samples.size() - 1, static_cast<size_t>(p / 100 * static_cast<double>(samples.size())))];
}

// Prints `what` and the status and exits when `s` failed.
inline void CheckOk(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  exit(1);
}

}  // namespace paddock::bench
