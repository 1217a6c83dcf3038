// edge/ecs_source: what the ecs provider reads, through the ECS API, as Traefik's ECS provider reads
// it (../shared/research/edge-traefik.md §1.1): ListClusters when clusters are discovered, ListTasks
// with desiredStatus RUNNING page by page, DescribeTasks per page, for the EC2 tasks'
// container instances DescribeContainerInstances (their ec2InstanceId) and ec2:DescribeInstances
// (the instance's privateIpAddress and state: where bridge and host tasks are reached), and
// DescribeTaskDefinition once per task-definition ARN — a revision never changes, so it is cached
// by its ARN (Traefik caches by task ARN, one call per task: its issue #13884). Signed with SigV4
// by the edge's own credentials, so an edge sees what its principal may see: one account's tasks,
// never another's. The same code reads Paddock or real ECS and EC2 (one endpoint for both, as
// Paddock serves them).
//
//   edge::EcsApiSource source({.host = "127.0.0.1", .port = 4566, .credentials = {key, secret}});
//   ASSIGN_OR_RETURN(std::vector<edge::EcsTask> tasks, source.Read());
//   edge::EcsBuild build = edge::BuildEcsConfiguration(tasks, options);
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "aws/sigv4.h"
#include "common/status.h"
#include "edge/ecs_provider.h"

namespace paddock::edge {

struct EcsApiOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 4566;
  aws::SigningCredentials credentials;
  std::string region = "us-east-1";
  std::vector<std::string> clusters = {"default"};  // Traefik's default
  bool auto_discover_clusters = false;
  std::chrono::milliseconds timeout{10'000};
};

// What the ecs provider reads: the tasks, and the errors Traefik would log on the way.
struct TaskRead {
  std::vector<EcsTask> tasks;
  std::vector<std::string> errors;
};

// Where the ecs provider reads from: EcsApiSource, or a fake in tests.
class TaskSource {
 public:
  virtual ~TaskSource() = default;
  virtual StatusOr<TaskRead> Read() = 0;
};

class EcsApiSource final : public TaskSource {
 public:
  explicit EcsApiSource(EcsApiOptions options);
  ~EcsApiSource() override;

  // Every task of the clusters with desiredStatus RUNNING, with its definition's containers (a
  // container the definition does not name is left out, as Traefik skips it) and, for a task on
  // a container instance, that instance's EC2 privateIpAddress and state name (host_ip,
  // machine_state; both "" when ECS or EC2 does not describe it). A failed call fails the read
  // (the caller keeps its last configuration and tries again), except a DescribeTasks error,
  // which drops that page's tasks as Traefik does (the error is in `errors`).
  StatusOr<TaskRead> Read() override;

  // How many calls of `action` ("DescribeTaskDefinition", "DescribeInstances", ...) were made:
  // the caches' effect, for tests.
  size_t calls(std::string_view action) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::edge
