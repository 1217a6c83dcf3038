// The EC2 instances EC2's DescribeInstances shows. Paddock has no EC2 of its own: its instances
// are the ECS container instances (an agent's host), which ecs/instance describes through this
// seam. It is header-only and sits below ecs/ (which implements it) and ec2/api/ (which reads
// it), so neither the instance owner nor the adapter includes the other.
//
//   ec2.SetInstanceSource(container_instances.ec2_instances());
//   // DescribeInstances(InstanceId.1=i-0123456789abcdef0) -> that container instance's host
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"

namespace paddock::ec2 {

// One instance, as much of EC2's Instance shape as Paddock knows.
struct Instance {
  std::string instance_id;        // i- and 8 or 17 hex digits
  bool running = true;            // running (16), else terminated (48): its container instance deregistered
  std::string private_ip;         // the host's address as its agent reported it; "" when unknown
  std::string availability_zone;  // ecs.availability-zone
  std::string instance_type;      // ecs.instance-type
  std::string image_id;           // ecs.ami-id; "" when unknown
  std::string architecture;       // x86_64 | arm64
  TimePoint launch_time{};        // when its container instance registered
};

class InstanceSource {
 public:
  virtual ~InstanceSource() = default;
  // The scope's instances among `ids` (unknown ids are left out), in the order of `ids`.
  virtual StatusOr<std::vector<Instance>> Find(const Scope& scope, const std::vector<std::string>& ids) = 0;
  // Up to `limit` of the scope's instances in instance-id order, after the id `after` ("" from the
  // start); `*more` says whether any is left after them.
  virtual StatusOr<std::vector<Instance>> List(const Scope& scope, const std::string& after, size_t limit,
                                                  bool* more) = 0;
};

}  // namespace paddock::ec2
