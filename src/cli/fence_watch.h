// cli/fence_watch: the fence of a server's or an agent's containers that outlives it (issue 16
// §3, docs/contracts/task.md "Losing a host").
//
// On a store several servers share, a server that offers its host's Fargate capacity can be found
// lost by the others once its offer has lapsed for host_lost_seconds, and its tasks are then
// recorded STOPPED and their addresses handed out again. A server that is alive fences its own
// agent before that (Node's fence loop); a killed one cannot, and its containers outlive it. So it
// starts a watchdog: a process of its own (`paddock fence-watch`, not for users) whose standard
// input is a socket only the server writes to. The server writes one byte when it stops cleanly
// (its offer is withdrawn: it is not lost, and its tasks wait for it); if the socket ends without
// that byte the server died, and unless another process holds the state directory's lock (a
// restarted server, which re-adopts the tasks) within `after` — the fence time, well before any
// server can find the host lost —, the watchdog kills every container of the directory's runtime.
// What else the tasks left (networks, files) the server removes when it comes back, as for any
// task no longer assigned to it.
//
// `paddock agent` starts one too, with the control plane's fence time: its host is found lost
// once its agent has been gone long enough, whether it was killed or stopped, so it never says
// "clean" — it abandons the watchdog at a stop (a restarted agent within the fence time takes the
// directory over and re-adopts its tasks; otherwise the containers go before the host is lost).
//
//   ASSIGN_OR_RETURN(FenceWatch watch, FenceWatch::Start(state_dir, fence_after));
//   ...                      // serving
//   watch.StopCleanly();     // at a clean stop: the watchdog exits, fencing nothing
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "common/subprocess.h"

namespace paddock::cli {

class FenceWatch {
 public:
  // Spawns the watchdog of `state_dir` (this binary, `fence-watch`), its stderr this process's.
  static StatusOr<FenceWatch> Start(const std::string& state_dir, std::chrono::milliseconds after);

  FenceWatch(FenceWatch&&) = default;
  FenceWatch& operator=(FenceWatch&&) = default;
  ~FenceWatch();

  // Tells the watchdog the server stops cleanly, and reaps it.
  void StopCleanly();
  // Lets go of the watchdog without a word: it fences unless another process takes the state
  // directory over within its time. It is not waited for (it outlives this process).
  void Abandon();

 private:
  FenceWatch() = default;
  subprocess::UniqueFd pipe_;  // the server's end; closed without a byte, it means "gone"
  subprocess::Child child_;
};

// `paddock fence-watch`: the watchdog's body (see above), reading the server's socket on stdin.
// Returns the process's exit code.
int RunFenceWatch(const std::string& state_dir, std::chrono::milliseconds after);

}  // namespace paddock::cli
