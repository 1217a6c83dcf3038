// ECS's cluster query language, for container instances: ListContainerInstances' `filter` today,
// placement constraints (memberOf) later.
//
//   ASSIGN_OR_RETURN(Query q, Query::Parse("attribute:ecs.instance-type =~ t2.* and runningTasksCount < 3"));
//   if (q.Matches(facts)) ...
//
// Grammar (docs/contracts/container-instance.md):
//   expr    := and ( ("or" | "||") and )*
//   and     := unary ( ("and" | "&&") unary )*
//   unary   := ("not" | "!") unary | "(" expr ")" | subject op [argument]
//   subject := attribute:<name> | ec2InstanceId | runningTasksCount | registeredAt | agentConnected | agentVersion
//   op      := == != > >= < <= =~ !~ exists !exists in !in
//   argument:= a word, a 'quoted' or "quoted" string, or a list [a, b, ...] / (a, b, ...)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace paddock::ecs::instance {

// What a query can ask about one container instance.
struct Facts {
  std::map<std::string, std::string, std::less<>> attributes;  // name -> value ("" when it has none)
  std::string ec2_instance_id;
  int64_t running_tasks = 0;
  double registered_at = 0;  // epoch seconds
  bool agent_connected = false;
  std::string agent_version;
};

class Query {
 public:
  struct Node;

  // Fails with InvalidParameterException naming what is wrong.
  static StatusOr<Query> Parse(std::string_view text);

  bool Matches(const Facts& facts) const;

  Query(Query&&) noexcept;
  Query& operator=(Query&&) noexcept;
  ~Query();

 private:
  explicit Query(std::unique_ptr<Node> root);
  std::unique_ptr<Node> root_;
};

// "2018-06-18T22:28:28+00:00", "2018-06-18T22:28:28Z", "2018-06-18T22:28:28" or "2018-06-18" as
// epoch seconds (UTC), as registeredAt comparisons take them.
StatusOr<double> ParseQueryDate(std::string_view text);

}  // namespace paddock::ecs::instance
