#include "agent/sweep.h"

namespace paddock::agent {

SweepPlan PlanSweep(const std::vector<runtime::ContainerState>& containers, std::string_view owner,
                    const std::set<std::string>& keep) {
  SweepPlan out;
  if (owner.empty()) return out;  // an agent without an owner label recognises nothing as its own
  for (const auto& c : containers) {
    auto o = c.annotations.find(std::string(kOwnerAnnotation));
    auto t = c.annotations.find(std::string(kTaskAnnotation));
    if (o == c.annotations.end() || o->second != owner) continue;
    if (t == c.annotations.end() || t->second.empty() || keep.count(t->second)) continue;
    out[t->second].push_back(c.id);
  }
  return out;
}

}  // namespace paddock::agent
