// agent/task_files: what a task has on the node besides its containers and its netns — the
// /etc files generated for each container, the task's volume directories and its cgroup.
//
//   <tasks_dir>/<task id>/etc/<container>/{hosts,resolv.conf,hostname}   bound over /etc/…
//   <tasks_dir>/<task id>/volumes/<volume name>/                          task volumes (binds)
//   <runtime cgroup parent>/<task id>                                     Runtime::CreateGroup
//
//   ASSIGN_OR_RETURN(TaskFiles files, PrepareTask(runtime, options, TaskFilesInput{...}));  // before any container
//   ApplyTaskFiles(files, task_context);          // for each BuildContainerSpec
//   CleanUpTask(runtime, options, task_id);       // after every container is deleted; by name
//
// Choices (docs/contracts/task.md, "Container options"):
// - hostname: the container definition's (refused under awsvpc at registration, as AWS does),
//   else, for an awsvpc task, the ENI's private DNS name ip-a-b-c-d.ec2.internal (us-east-1) or
//   ip-a-b-c-d.<region>.compute.internal, as Fargate gives its tasks; for bridge and none tasks
//   (DefaultHostname::kContainerId) the container's runtime id, as Docker names a container it is
//   given no hostname for (ECS on EC2 gives it none); host tasks: none (the host's).
// - /etc/hosts: localhost lines, "<task ip> <hostname> <first label>", then extraHosts in order.
// - /etc/resolv.conf: dnsServers, else the node's DNS server at 169.254.169.253 when it serves the
//   task's VPC (awsvpc; TaskFilesInput::nameserver), else the host's nameservers that are not
//   loopback (a loopback resolver of the host is unreachable from the task's netns; bridge and
//   host tasks, which have no VPC router to reach the server through), else 169.254.169.253 (the
//   Amazon VPC resolver's link-local address); search: dnsSearchDomains, else the region's domain.
// - Docker's way of binding them: one copy per container, read-write unless the container's root
//   filesystem is read-only. A container's edits stay its own.
// - Task volumes (no host.sourcePath, or dockerVolumeConfiguration scope "task" with the local
//   driver): an empty directory, root 0755, shared by the task's containers, removed with the task.
// - Private: <tasks_dir> and each <task id> directory are 0700 root, so no local user reaches a
//   task's files — above all a setuid file a container made in its volume (containers mount
//   their volumes nosuid,nodev besides; agent/container_spec.h). Containers are not affected:
//   their binds are resolved by the runtime, as root.
// - The task's cgroup is always made when there is a limit: cpu and memory from the task's size,
//   and TaskFilesOptions::pids_per_task.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "agent/container_spec.h"
#include "agent/runtime/runtime.h"
#include "common/status.h"

namespace paddock::agent {

struct TaskFilesOptions {
  // Where each task's directory goes. Empty: tasks get no generated /etc files, and a task with
  // volumes is refused (FailedPrecondition).
  std::string tasks_dir;
  // The host's resolver configuration, for nameservers when a container sets no dnsServers.
  std::string host_resolv_conf = "/etc/resolv.conf";
  // kAllowed (an instance whose operator allowed host access): volumes with host.sourcePath bind
  // that host path (created when missing, as the ECS agent does, and never removed); refused
  // otherwise.
  HostAccess host_access = HostAccess::kRefused;
  // The task's cgroup bounds its processes and threads to this many (GroupLimits::pids_max);
  // 0: no bound.
  uint64_t pids_per_task = 0;
};

struct TaskFilesInput {
  std::string task_id;   // [A-Za-z0-9_-]{1,64}
  std::string task_arn;  // its region names the private DNS domain
  const boost::json::object& definition;  // the pinned task definition
  const boost::json::object& overrides;   // the task's overrides, or {}
  std::string ip;        // the task's address (awsvpc, bridge); empty: none
  // The node's DNS server for the task (awsvpc, agent/dns_service.h): the nameserver of every
  // container without dnsServers. Empty: the host's nameservers.
  std::string nameserver{};
  uint64_t cpu_units = 0;   // the task's size; 0: not set
  uint64_t memory_mib = 0;
  // kTask: awsvpc's private DNS name of `ip` (none without an ip). kContainerId: each container's
  // id in `container_ids` (by container name).
  DefaultHostname default_hostname = DefaultHostname::kTask;
  std::map<std::string, std::string> container_ids{};
};

struct TaskFiles {
  std::string dir;            // <tasks_dir>/<task id>; empty when there is no tasks_dir
  std::string hostname;       // the task-wide one (awsvpc); empty: none
  DefaultHostname default_hostname = DefaultHostname::kTask;
  std::string cgroup_parent;  // from Runtime::CreateGroup
  std::map<std::string, std::string> volumes;  // name → host directory
  std::map<std::string, EtcFiles> etc_files;   // by container name
  boost::json::array container_definitions;    // for volumesFrom
  bool host_pid = false;                        // pidMode "host"
  bool host_ipc = false;                        // ipcMode "host"
};

// ip-a-b-c-d.ec2.internal in us-east-1, ip-a-b-c-d.<region>.compute.internal elsewhere.
std::string PrivateDnsName(std::string_view ip, std::string_view region);
// "us-east-1.compute.internal" style domain of a region ("ec2.internal" for us-east-1).
std::string RegionDomain(std::string_view region);

// The file texts (pure).
std::string HostsFile(std::string_view ip, std::string_view hostname, const boost::json::object& container_definition);
// `nameserver`: TaskFilesInput's (empty: the host's from `host_resolv_conf`).
std::string ResolvConf(const boost::json::object& container_definition, std::string_view host_resolv_conf,
                       std::string_view default_search, std::string_view nameserver = {});

// Checks the definition (CheckSupported), writes the files and volume directories and makes the
// task's cgroup with its cpu and memory. On failure nothing is left. The error's message follows
// "ResourceInitializationError: " in the task's stoppedReason.
StatusOr<TaskFiles> PrepareTask(runtime::Runtime& runtime, const TaskFilesOptions& options, const TaskFilesInput& in);

// The task volumes container `container_name` of `definition` (the pinned task definition) mounts,
// with the host directories PrepareTask gives them (also for a task an earlier agent prepared):
// BuildContainerSpec's volume binds. Empty without a tasks_dir.
std::vector<runtime::BindMount> ContainerVolumes(const TaskFilesOptions& options, const boost::json::object& definition,
                                                 std::string_view task_id, std::string_view container_name);

// Puts what the containers need from `files` into `task` (cgroup, hostname, volumes, /etc files).
void ApplyTaskFiles(const TaskFiles& files, TaskContext& task);

// Removes the task's directory and cgroup, found by task id (so also after a restart). Missing
// ones are fine. REQUIRES: every container of the task is deleted.
Status CleanUpTask(runtime::Runtime& runtime, const TaskFilesOptions& options, std::string_view task_id);

}  // namespace paddock::agent
