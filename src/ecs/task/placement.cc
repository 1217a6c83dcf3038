#include "ecs/task/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include <boost/json.hpp>

#include "ecs/common/records.h"

namespace paddock::ecs::task::placement {
namespace json = boost::json;

namespace {

constexpr size_t kMaxStrategies = 5;
constexpr size_t kMaxConstraints = 10;

std::string Member(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_string()) ? std::string(it->value().get_string()) : std::string();
}

// The value of a spread field on a candidate; "" when it lacks the attribute.
std::string SpreadValue(const Candidate& c, std::string_view field) {
  if (field == "instanceId" || field == "host") return c.id;
  auto it = c.facts.attributes.find(field.substr(std::string_view("attribute:").size()));
  return it == c.facts.attributes.end() ? std::string() : it->second;
}

bool HasPort(const std::set<int>& taken, const std::vector<int>& wanted) {
  return std::any_of(wanted.begin(), wanted.end(), [&](int p) { return taken.count(p) > 0; });
}

// Why `c` cannot take a task now, or nullopt. Resources first, then constraints, as ECS checks.
std::optional<std::string> Reject(const Candidate& c, const Demand& d, const std::vector<Constraint>& constraints) {
  if (!c.facts.agent_connected) return "AGENT";
  if (!HasRequiredAttributes(c.facts, d)) return "ATTRIBUTE";
  if (c.cpu < d.cpu) return "RESOURCE:CPU";
  if (c.memory < d.memory) return "RESOURCE:MEMORY";
  if (HasPort(c.tcp_ports, d.tcp_ports)) return "RESOURCE:PORTS";
  if (HasPort(c.udp_ports, d.udp_ports)) return "RESOURCE:PORTS_UDP";
  for (const auto& k : constraints) {
    if (k.type == Constraint::Type::kDistinctInstance && c.group_tasks > 0)
      return "DistinctInstance placement constraint unsatisfied.";
    if (k.type == Constraint::Type::kMemberOf && !k.member_of->Matches(c.facts)) return "MemberOf placement constraint unsatisfied.";
  }
  return std::nullopt;
}

}  // namespace

bool HasRequiredAttributes(const instance::Facts& facts, const Demand& demand) {
  for (const auto& [name, value] : demand.attributes) {
    auto it = facts.attributes.find(name);
    if (it == facts.attributes.end() || (value && it->second != *value)) return false;
  }
  return true;
}

StatusOr<std::vector<Strategy>> ParseStrategies(const json::array& strategies) {
  if (strategies.size() > kMaxStrategies)
    return ParamError(fmt::format("The number of placement strategies exceeds the limit of {}.", kMaxStrategies));
  std::vector<Strategy> out;
  for (const auto& v : strategies) {
    if (!v.is_object()) return ParamError("Invalid placement strategy.");
    const std::string type = Member(v.get_object(), "type");
    const std::string field = Member(v.get_object(), "field");
    Strategy s;
    s.field = field;
    if (type == "random") {
      s.type = Strategy::Type::kRandom;
      if (!field.empty()) return ParamError("A random placement strategy does not take a field.");
    } else if (type == "binpack") {
      s.type = Strategy::Type::kBinpack;
      // Case-insensitive on AWS ("CPU" and "MEMORY" are accepted); kept as given in the answer.
      std::string lower = field;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (lower != "cpu" && lower != "memory")
        return ParamError(fmt::format("Invalid placement strategy field '{}' for binpack: use cpu or memory.", field));
      s.field = lower;
    } else if (type == "spread") {
      s.type = Strategy::Type::kSpread;
      const bool attribute = field.rfind("attribute:", 0) == 0 && field.size() > std::string_view("attribute:").size();
      if (field != "instanceId" && field != "host" && !attribute)
        return ParamError(fmt::format(
            "Invalid placement strategy field '{}' for spread: use instanceId, host or attribute:<name>.", field));
    } else {
      return ParamError(fmt::format("Invalid placement strategy type '{}'.", type));
    }
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<std::vector<Constraint>> ParseConstraints(const json::array& constraints) {
  if (constraints.size() > kMaxConstraints)
    return ParamError(fmt::format("The number of placement constraints exceeds the limit of {}.", kMaxConstraints));
  std::vector<Constraint> out;
  for (const auto& v : constraints) {
    if (!v.is_object()) return ParamError("Invalid placement constraint.");
    const std::string type = Member(v.get_object(), "type");
    const std::string expression = Member(v.get_object(), "expression");
    Constraint k;
    k.expression = expression;
    if (type == "distinctInstance") {
      k.type = Constraint::Type::kDistinctInstance;
      if (!expression.empty()) return ParamError("A distinctInstance placement constraint does not take an expression.");
    } else if (type == "memberOf") {
      k.type = Constraint::Type::kMemberOf;
      if (expression.empty()) return ParamError("A memberOf placement constraint requires an expression.");
      ASSIGN_OR_RETURN(instance::Query query, instance::Query::Parse(expression));
      k.member_of = std::make_shared<const instance::Query>(std::move(query));
    } else {
      return ParamError(fmt::format("Invalid placement constraint type '{}'.", type));
    }
    out.push_back(std::move(k));
  }
  return out;
}

Outcome Place(std::vector<Candidate>& candidates, const Demand& demand, int count,
              const std::vector<Strategy>& strategies, const std::vector<Constraint>& constraints,
              std::mt19937_64& rng) {
  Outcome out;
  for (int task = 0; task < count; ++task) {
    std::vector<size_t> eligible;
    std::vector<Failure> rejected;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      if (!c.active) continue;
      if (auto why = Reject(c, demand, constraints)) {
        rejected.push_back({c.arn, *why});
        continue;
      }
      eligible.push_back(i);
    }
    if (eligible.empty()) {  // only an unplaced task's rejections are failures
      for (Failure& f : rejected)
        if (std::find(out.failures.begin(), out.failures.end(), f) == out.failures.end()) out.failures.push_back(std::move(f));
      out.placed.push_back(std::nullopt);
      continue;
    }
    // One key per strategy, lower is better, compared in strategy order; a random last key breaks ties.
    std::vector<std::vector<double>> keys(candidates.size());
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (const Strategy& s : strategies) {
      std::unordered_map<std::string, int64_t> per_value;  // spread: the group's tasks per value, over all instances
      if (s.type == Strategy::Type::kSpread)
        for (const Candidate& c : candidates) per_value[SpreadValue(c, s.field)] += c.group_tasks;
      for (size_t i : eligible) {
        const Candidate& c = candidates[i];
        double key = 0;
        switch (s.type) {
          case Strategy::Type::kBinpack:
            key = static_cast<double>(s.field == "cpu" ? c.cpu - demand.cpu : c.memory - demand.memory);
            break;
          case Strategy::Type::kSpread:
            key = static_cast<double>(per_value[SpreadValue(c, s.field)]);
            break;
          case Strategy::Type::kRandom:
            key = unit(rng);
            break;
        }
        keys[i].push_back(key);
      }
    }
    for (size_t i : eligible) keys[i].push_back(unit(rng));
    const size_t best = *std::min_element(eligible.begin(), eligible.end(),
                                          [&](size_t a, size_t b) { return keys[a] < keys[b]; });
    Candidate& c = candidates[best];
    c.cpu -= demand.cpu;
    c.memory -= demand.memory;
    c.tcp_ports.insert(demand.tcp_ports.begin(), demand.tcp_ports.end());
    c.udp_ports.insert(demand.udp_ports.begin(), demand.udp_ports.end());
    ++c.group_tasks;
    out.placed.push_back(best);
  }
  return out;
}

}  // namespace paddock::ecs::task::placement
