// ecs/service/internal/resolved: what Create, Update and CreateTaskSet resolve before their
// transaction (Services::ClusterFor, Services::ResolveLaunch), shared by services.cc and
// task_sets.cc. Not an API: only ecs/service includes it.
#pragma once

#include <set>
#include <string>

#include <boost/json/array.hpp>

#include "ecs/service/services.h"
#include "ecs/service/state.h"

namespace paddock::ecs::service {

struct Services::Cluster {
  std::string name;
  std::string arn;
  std::set<std::string> providers;  // associated capacity providers
  boost::json::array default_strategy;  // defaultCapacityProviderStrategy, normalized
};

struct Services::Launch {
  LaunchConfig service;     // the service's members: launchType | capacityProviderStrategy, platformVersion, network
  LaunchConfig deployment;  // a deployment's: the same with the platform version resolved
  std::string type;         // FARGATE | EC2
};

}  // namespace paddock::ecs::service
