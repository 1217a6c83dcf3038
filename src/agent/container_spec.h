// agent/container_spec: turns one container of a pinned task definition (with its override and
// its resolved image) into the runtime's ContainerSpec. Pure: no files, no processes, so every
// ECS-to-OCI rule here is unit-tested without a runtime (container_spec_test.cc).
//
//   RETURN_IF_ERROR(CheckSupported(task_definition, overrides));  // once per task, before anything
//   runtime::ContainerSpec cs = BuildContainerSpec(ContainerInput{...}, task_context);
//
// What the whole task contributes (its cgroup, hostname, volumes' directories, the generated
// /etc files) comes in TaskContext; agent/task_files makes those and fills it (ApplyTaskFiles).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "agent/images/image.h"
#include "agent/runtime/runtime.h"
#include "common/status.h"

namespace paddock::agent {

// Host paths of the files generated for one container, bound over its /etc ones. Empty: not bound.
struct EtcFiles {
  std::string hosts;
  std::string resolv_conf;
  std::string hostname;
};

// What names a container whose definition sets no hostname.
enum class DefaultHostname {
  kTask,         // TaskContext::hostname (awsvpc: the ENI's private DNS name); empty: left unset (host
                 // mode: the host's name, as Docker's --network host)
  kContainerId,  // the container's runtime id, as Docker names bridge- and none-mode containers
};

// What the whole task contributes to each of its containers.
struct TaskContext {
  std::string task_arn;
  uint64_t cpu_units = 0;   // the task's cpu ("256" → 256); 0: not set
  uint64_t memory_mib = 0;  // the task's memory in MiB; 0: not set
  std::string netns_path;   // the task's network namespace; empty: a private one
  // The task's cgroup (Runtime::CreateGroup), which carries the task's cpu and memory for all its
  // containers together. Empty: none, and each container is capped at the task's size itself.
  std::string cgroup_parent{};
  // The uts name of containers whose definition sets no hostname (awsvpc: the ENI's private DNS
  // name). Empty: unset.
  std::string hostname{};
  DefaultHostname default_hostname = DefaultHostname::kTask;
  std::map<std::string, std::string> volumes{};  // task volume name → its host directory
  std::map<std::string, EtcFiles> etc_files{};   // by container name
  // The task's containerDefinitions, for volumesFrom. Null: volumesFrom is ignored.
  const boost::json::array* container_definitions = nullptr;
  // pidMode / ipcMode "host" (host-level grants: CheckSupported let them through).
  bool host_pid = false;
  bool host_ipc = false;
};

struct ContainerInput {
  runtime::ContainerId id;
  const boost::json::object& definition;  // the containerDefinitions entry
  const boost::json::object& overrides;   // its containerOverrides entry, or {}
  const images::ResolvedImage& image;
  std::string log_path;  // stdout and stderr; empty: /dev/null
};

// Whether the container instance this agent runs for lets tasks reach its host: host.sourcePath
// volumes, capabilities added beyond SYS_PTRACE, devices, privileged, pidMode/ipcMode/networkMode
// "host" (ecs/taskdef/host_grants.h). The instance's operator decides ([[ec2_instance]]
// host_access, `paddock agent --allow-host-access`); off by default, and never on Fargate.
enum class HostAccess : bool { kRefused = false, kAllowed = true };

// The task definition (and its overrides) asks for nothing this agent cannot provide:
// FailedPrecondition naming the container or volume and the option otherwise (a host-level grant
// where `host_access` is kRefused, S3 environment files, log drivers,
// EFS/FSx/shared Docker volumes, devices), InvalidArgument for a reference that does not resolve (a
// mountPoint's sourceVolume, a volumesFrom sourceContainer, a relative containerPath) or a value
// the registration checks refuse (ecs/taskdef/container_values.h: definitions stored before those
// checks). The message is what follows "ResourceInitializationError: " in the task's stoppedReason.
// Placement already keeps tasks with grants off instances without the host-access attribute; this
// is the agent's own check, by its instance's option, for what reaches it anyway (a definition
// registered before the attribute existed, an attribute a tenant put on its own instance).
Status CheckSupported(const boost::json::object& task_definition, const boost::json::object& overrides,
                      HostAccess host_access = HostAccess::kRefused);

// The hostname of container `container_id`: its definition's, else the task's default
// (task.hostname, or the container's id).
std::string HostnameOf(const boost::json::object& definition, const TaskContext& task, std::string_view container_id);

// The task volumes a container mounts (its mountPoints, then its volumesFrom sources', parents
// before children), as BuildContainerSpec binds them after the /etc files.
std::vector<runtime::BindMount> VolumeBinds(const boost::json::object& definition, const TaskContext& task);

// REQUIRES: CheckSupported passed for the task (references that do not resolve are skipped here).
runtime::ContainerSpec BuildContainerSpec(const ContainerInput& in, const TaskContext& task);

}  // namespace paddock::agent
