#include "deploy/plan.h"

#include <algorithm>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace paddock::deploy {
namespace json = boost::json;

std::string_view KindName(ServiceAction::Kind k) {
  switch (k) {
    case ServiceAction::Kind::kCreate: return "create";
    case ServiceAction::Kind::kRoll: return "roll";
    case ServiceAction::Kind::kScale: return "scale";
    case ServiceAction::Kind::kNetwork: return "network";
    case ServiceAction::Kind::kRetire: return "retire";
    case ServiceAction::Kind::kDelete: return "delete";
  }
  return "?";
}

namespace {

const ContainerSpec* ContainerOf(const AppSpec& app, std::string_view name) {
  for (const ContainerSpec& c : app.containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool Routed(const AppSpec& app, std::string_view container) {
  return std::any_of(app.routes.begin(), app.routes.end(), [&](const Route& r) { return r.container == container; });
}

// The service converged on the workload's revision. The durable marker decides when there is one:
// it is recorded after every create and roll, before the tag, so a tag can only be older than it —
// after a refused TagResource the tag still names the revision before, and trusting it would take
// a later return to that rendering for converged while the service runs another. The tag decides
// only for a service created but not yet marked (a crash between CreateService and the marker).
bool Converged(const Deployment& d, const Workload& w, const ServiceView& s) {
  auto it = d.applied_hashes.find(w.container);
  if (it != d.applied_hashes.end()) return it->second == w.hash;
  return s.owner.task_definition_hash == w.hash;
}

std::vector<std::string> Strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::value* v = o.if_contains(key); v && v->is_array()) {
    for (const json::value& s : v->as_array()) {
      if (s.is_string()) out.emplace_back(s.as_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The workload's awsvpc settings differ from what the service runs with (D2's network drift).
bool NetworkDrifted(const Workload& w, const ServiceView& s) {
  const json::value* nc = w.service.if_contains("networkConfiguration");
  if (!nc || !nc->is_object()) return false;
  const json::value* vpc = nc->as_object().if_contains("awsvpcConfiguration");
  if (!vpc || !vpc->is_object()) return false;
  const json::object& want = vpc->as_object();
  std::vector<std::string> subnets = Strings(want, "subnets"), groups = Strings(want, "securityGroups");
  std::vector<std::string> have_subnets = s.subnets, have_groups = s.security_groups;
  std::sort(have_subnets.begin(), have_subnets.end());
  std::sort(have_groups.begin(), have_groups.end());
  // Unset means "the cluster's default": anything the service runs with then is fine.
  if (!subnets.empty() && subnets != have_subnets) return true;
  if (!groups.empty() && groups != have_groups) return true;
  if (const json::value* ip = want.if_contains("assignPublicIp"); ip && ip->is_string() && !s.assign_public_ip.empty()) {
    return ip->as_string() != s.assign_public_ip;
  }
  return false;
}

int Replicas(const Deployment& d) { return IsTerminal(d.state) ? 0 : d.spec.deploy.replicas; }

std::vector<TaskObservation> Observe(const PlanInput& in, const DeploymentInput& d, const std::vector<Workload>& ws) {
  std::vector<TaskObservation> out;
  for (const Workload& w : ws) {
    auto tasks = d.tasks.find(w.service_name);
    if (tasks == d.tasks.end()) continue;
    const ContainerSpec* c = ContainerOf(d.record.spec, w.container);
    for (const TaskView& t : tasks->second) {
      TaskObservation o;
      o.task_arn = t.arn;
      o.container = w.container;
      o.last_status = t.last_status;
      o.stopped_reason = t.stopped_reason;
      o.exit_code = t.exit_code;
      if (c && c->port && !t.address.empty()) {
        o.address = fmt::format("{}:{}", t.address, *c->port);
        auto e = in.edge_servers.find("http://" + o.address);
        if (e != in.edge_servers.end()) o.health = e->second;
      }
      out.push_back(std::move(o));
    }
  }
  std::sort(out.begin(), out.end(), [](const TaskObservation& a, const TaskObservation& b) { return a.task_arn < b.task_arn; });
  return out;
}

bool SameObservations(const std::vector<TaskObservation>& a, const std::vector<TaskObservation>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const TaskObservation &x = a[i], &y = b[i];
    if (x.task_arn != y.task_arn || x.container != y.container || x.last_status != y.last_status ||
        x.health != y.health || x.address != y.address || x.stopped_reason != y.stopped_reason ||
        x.exit_code != y.exit_code) {
      return false;
    }
  }
  return true;
}

// The most telling reason a task of the workload stopped, for a failure message.
std::string LastStop(const DeploymentInput& d, const std::vector<Workload>& ws) {
  for (const Workload& w : ws) {
    auto tasks = d.tasks.find(w.service_name);
    if (tasks == d.tasks.end()) continue;
    for (const TaskView& t : tasks->second) {
      if (t.last_status == "STOPPED" && !t.stopped_reason.empty()) {
        std::string s = fmt::format("{}: a task stopped: {}", w.container, t.stopped_reason);
        if (t.exit_code) s += fmt::format(" (exit code {})", *t.exit_code);
        return s;
      }
    }
  }
  return "";
}

}  // namespace

std::string Unready(const PlanInput& in, const DeploymentInput& d, const std::vector<Workload>& workloads) {
  for (const Workload& w : workloads) {
    auto s = in.services.find(w.service_name);
    if (s == in.services.end()) return fmt::format("{}: the service is not created yet", w.container);
    if (!Converged(d.record, w, s->second)) return fmt::format("{}: the new revision is not rolled out yet", w.container);
    auto tasks = d.tasks.find(w.service_name);
    if (tasks == d.tasks.end()) return fmt::format("{}: its tasks could not be read", w.container);
    std::vector<const TaskView*> incoming;
    for (const TaskView& t : tasks->second) {
      if (t.task_definition == s->second.task_definition && t.last_status == "RUNNING") incoming.push_back(&t);
    }
    std::sort(incoming.begin(), incoming.end(), [](const TaskView* a, const TaskView* b) { return a->arn < b->arn; });
    const int want = Replicas(d.record);
    if (static_cast<int>(incoming.size()) < want) {
      return fmt::format("{}: {} of {} tasks running", w.container, incoming.size(), want);
    }
    const ContainerSpec* c = ContainerOf(d.record.spec, w.container);
    if (!in.edge_configured || !c || !c->port || !Routed(d.record.spec, w.container)) continue;
    if (!in.edge_read_ok) return fmt::format("{}: the edge could not be read", w.container);
    for (int i = 0; i < want; ++i) {
      const TaskView& t = *incoming[i];
      if (t.address.empty()) return fmt::format("{}: task {} has no address yet", w.container, t.arn);
      std::string server = fmt::format("{}:{}", t.address, *c->port);
      auto e = in.edge_servers.find("http://" + server);
      if (e == in.edge_servers.end()) return fmt::format("{}: waiting for the edge to see {}", w.container, server);
      if (e->second != "UP") return fmt::format("{}: {} is {} at the edge", w.container, server, e->second);
    }
  }
  return "";
}

Plan PlanTick(const PlanInput& in) {
  Plan plan;
  std::set<std::string> input_ids;
  for (const DeploymentInput& d : in.deployments) input_ids.insert(d.record.id);
  // Each deployment's services of the snapshot, found once (not a scan of the snapshot per deployment).
  std::map<std::string, std::vector<const ServiceView*>> by_deployment;
  for (const auto& [name, s] : in.services) {
    if (s.owner.owned) by_deployment[s.owner.deployment_id].push_back(&s);
  }
  static const std::vector<const ServiceView*> kNone;

  for (const DeploymentInput& d : in.deployments) {
    const Deployment& r = d.record;
    auto transition = [&](State to, std::string reason) {
      plan.transitions.push_back({r.id, to, std::move(reason)});
    };

    // Services of this deployment in the snapshot, by name.
    auto found = by_deployment.find(r.id);
    const std::vector<const ServiceView*>& mine = found == by_deployment.end() ? kNone : found->second;
    for (const ServiceView* s : mine) {
      for (const EcsEvent& e : s->events) {
        plan.events.push_back({r.id, NewEvent{"ecs", fmt::format("{}: {}", s->owner.container, e.message), e.id}});
      }
    }

    if (IsTerminal(r.state)) {
      // Drain-clean retirement: scale to 0, wait `drain` with nothing running, then delete.
      if (mine.empty()) {
        plan.mark_retired.push_back(r.id);
        continue;
      }
      bool all_down = true;
      for (const ServiceView* s : mine) {
        if (s->desired > 0) {
          plan.actions.push_back({ServiceAction::Kind::kRetire, r.id, s->name, s->arn, std::nullopt});
          all_down = false;
        } else if (s->running + s->pending > 0) {
          all_down = false;
        }
      }
      if (!r.retiring_since) {
        plan.mark_retiring.push_back(r.id);
        continue;
      }
      if (all_down && in.now - *r.retiring_since >= in.drain) {
        for (const ServiceView* s : mine) plan.actions.push_back({ServiceAction::Kind::kDelete, r.id, s->name, s->arn, std::nullopt});
      }
      continue;
    }

    if (r.expires_at && *r.expires_at <= in.now) {
      transition(State::kExpired, "its --expire time passed");
      continue;
    }
    if (!d.workloads.ok()) {
      if (r.state == State::kPending || r.state == State::kDeploying) transition(State::kFailed, d.workloads.status().message());
      continue;
    }
    const std::vector<Workload>& ws = *d.workloads;

    if (r.state == State::kPending) {
      transition(State::kDeploying, "");
      if (d.resize_note) plan.events.push_back({r.id, NewEvent{"resize", *d.resize_note, "resize"}});
    }

    // Desired services: create what is missing, roll what drifted, fix scale and network.
    std::set<std::string> rolling;  // services this tick rolls
    for (const Workload& w : ws) {
      auto s = in.services.find(w.service_name);
      if (s == in.services.end()) {
        plan.actions.push_back({ServiceAction::Kind::kCreate, r.id, w.service_name, "", w});
        continue;
      }
      const ServiceView& sv = s->second;
      if (!Converged(r, w, sv)) {
        plan.actions.push_back({ServiceAction::Kind::kRoll, r.id, w.service_name, sv.arn, w});
        rolling.insert(w.service_name);
      } else if (sv.desired != Replicas(r)) {
        plan.actions.push_back({ServiceAction::Kind::kScale, r.id, w.service_name, sv.arn, w});
      }
      if (NetworkDrifted(w, sv)) plan.actions.push_back({ServiceAction::Kind::kNetwork, r.id, w.service_name, sv.arn, w});
    }

    std::vector<TaskObservation> seen = Observe(in, d, ws);
    if (!SameObservations(seen, r.tasks)) plan.observations[r.id] = std::move(seen);

    // State: readiness decides; a read that failed decides nothing (B7).
    bool tasks_read = std::all_of(ws.begin(), ws.end(), [&](const Workload& w) {
      return !in.services.contains(w.service_name) || d.tasks.contains(w.service_name);
    });
    if (!tasks_read) continue;
    std::string unready = Unready(in, d, ws);
    const State state = r.state == State::kPending ? State::kDeploying : r.state;
    // The ECS circuit breaker gave up on a service of a deployment still deploying: fail fast.
    std::string broken;
    for (const ServiceView* s : mine) {
      if (s->rollout_state == "FAILED") broken = fmt::format("{}: ECS stopped the rollout: {}", s->owner.container, s->rollout_reason);
    }
    if (state == State::kDeploying) {
      // A deployment that gets healthy after a newer one of its group already has must not take
      // the group back to older code: it ends Stopped instead.
      const DeploymentInput* newer = nullptr;
      for (const DeploymentInput& o : in.deployments) {
        if (o.record.active && o.record.project == r.project && o.record.group == r.group &&
            o.record.created_at > r.created_at) {
          newer = &o;
        }
      }
      if (unready.empty() && newer) {
        transition(State::kStopped, fmt::format("deployment {}, which is newer, is already active", newer->record.id));
      } else if (unready.empty()) {
        transition(State::kHealthy, "");
      } else if (!broken.empty()) {
        transition(State::kFailed, broken);
      } else if (r.deploying_since && in.now - *r.deploying_since >= in.deploying_timeout) {
        std::string stop = LastStop(d, ws);
        transition(State::kFailed, fmt::format("not healthy within {}s: {}{}", in.deploying_timeout.count(), unready,
                                               stop.empty() ? "" : "; " + stop));
      }
    } else if (state == State::kHealthy) {
      if (!unready.empty()) {
        // Hold Healthy while ECS rolls a revision in the deployment's own service and the outgoing
        // revision still serves, for at most deploying_timeout from the roll's start (D17). The
        // tick that starts the roll holds too: ECS shows no second deployment until it is made.
        bool held = false;
        for (const ServiceView* s : mine) {
          if (rolling.contains(s->name) && s->running > 0) held = true;
          if (s->ecs_deployments > 1 && s->running > 0 && s->primary_created_at &&
              in.now - *s->primary_created_at < in.deploying_timeout) {
            held = true;
          }
        }
        if (!held) transition(State::kUnhealthy, unready);
      }
    } else if (state == State::kUnhealthy && unready.empty()) {
      transition(State::kHealthy, "");
    }
  }

  // The orphan sweep (D13a): owned services of no deployment the tick knows.
  for (const auto& [name, s] : in.services) {
    // Only a service with every identity tag, named as those tags name it, whose deployment is
    // known to be gone: anything less certain is left alone.
    if (!s.owner.owned || !s.owner.complete || !s.named_by_us) continue;
    if (input_ids.contains(s.owner.deployment_id)) continue;
    auto v = in.orphans.find(s.owner.deployment_id);
    if (v == in.orphans.end() || v->second != OrphanVerdict::kGone) continue;
    if (s.desired > 0) {
      plan.actions.push_back({ServiceAction::Kind::kRetire, "", s.name, s.arn, std::nullopt});
      plan.orphans_retiring.push_back(s.name);
      continue;
    }
    auto since = in.orphan_retiring_since.find(s.name);
    if (since == in.orphan_retiring_since.end()) {
      plan.orphans_retiring.push_back(s.name);
    } else if (s.running + s.pending == 0 && in.now - since->second >= in.drain) {
      plan.actions.push_back({ServiceAction::Kind::kDelete, "", s.name, s.arn, std::nullopt});
    }
  }
  return plan;
}

}  // namespace paddock::deploy
