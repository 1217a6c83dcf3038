// common/netns: running a little code inside another network namespace, without touching the
// calling thread's.
//
//   Status s = InNetworkNamespace("/var/run/netns/pdv-1a2b3c4d5e6", [&] {
//     return WriteFile("/proc/sys/net/ipv4/ip_forward", "1");   // that namespace's sysctl
//   });
//
// `fn` runs on a short-lived thread that has joined the namespace (setns(CLONE_NEWNET)); the
// calling thread waits for it. What that thread does belongs to the namespace: sockets it creates
// (a listener keeps its namespace for life, whichever thread later uses it), /proc/sys/net files
// it opens, interfaces it names (if_nametoindex), and children it spawns (posix_spawn copies the
// spawning thread's namespaces: an `ip` or `nft` run from `fn` acts inside it, with none of
// `ip netns exec`'s remount of /sys).
//
// Thread safety: any thread may call it; calls are independent.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace paddock::netns {

// Runs `fn` inside the network namespace the file `path` is (a /var/run/netns/<name> bind
// mount, or /proc/<pid>/ns/net) and returns what it returns. kNotFound when there is no such
// file; kFailedPrecondition when it is not a network namespace or the process may not join it.
Status InNetworkNamespace(const std::string& path, const std::function<Status()>& fn);

// The namespace's inode number: equal for two paths of one namespace, different for a namespace
// made later under the same name. 0 when there is no such file.
uint64_t NamespaceId(const std::string& path);

}  // namespace paddock::netns
