// edge/merge: how one provider folds the configurations of its origins (the ecs provider's
// containers, the file provider's files) into the one configuration it publishes — Traefik's
// provider.Merge (pkg/provider/merge.go). Across providers nothing is merged: the edge qualifies
// every name with `@provider` instead.
//
// Configurations are the JSON trees of edge/dynamic.h. Within each section ("http", "tcp", "udp",
// "tls") every object-valued field is a resource map ("routers", "services", "middlewares",
// "serversTransports", "stores", ...) and its entries are merged by name:
//   - a name seen once is kept as it is;
//   - kMerge: two services that both have a "loadBalancer" merge when their load balancers are
//     equal apart from "servers"; the servers of the later one are appended unless a server of the
//     same "url" ("address" for tcp/udp) is already there. Anything else (routers, middlewares,
//     other services) must be equal. A name whose definitions cannot merge is deleted once all
//     configurations have been seen, with an error naming every origin that defined it;
//   - kSkipDuplicates: the first definition wins and each later one is reported.
// "tls.certificates" is a list: a certificate (certFile, keyFile) seen again adds its stores.
//
//   std::vector<edge::NamedConfiguration> parts = {{"a", config_a}, {"b", config_b}};
//   edge::MergedConfiguration m = edge::MergeConfigurations(std::move(parts), edge::MergeStrategy::kMerge);
//   // m.config: {"http":{"services":{"web":{"loadBalancer":{"servers":[{"url":...a},{"url":...b}]}}}}}
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

namespace paddock::edge {

enum class MergeStrategy { kMerge, kSkipDuplicates };

struct NamedConfiguration {
  std::string name;  // the origin, as errors name it
  boost::json::object config;
};

struct MergedConfiguration {
  // Only non-empty sections and resource maps; each map's entries sorted by name.
  boost::json::object config;
  std::vector<std::string> errors;  // conflicts (kMerge), skipped duplicates (kSkipDuplicates)
};

// Merges in the order given (Traefik's providers sort by origin name first). A section or field
// of an unexpected JSON type is ignored and reported.
MergedConfiguration MergeConfigurations(std::vector<NamedConfiguration> configurations, MergeStrategy strategy);

}  // namespace paddock::edge
