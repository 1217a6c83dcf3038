#include "agent/remote/cluster_puller.h"

#include <fmt/format.h>

namespace paddock::agent::remote {

ClusterPuller::ClusterPuller(ImageAccessLookup lookup, images::SkopeoPuller& skopeo)
    : lookup_(std::move(lookup)), skopeo_(skopeo) {}

Status ClusterPuller::Pull(const images::Reference& ref, const std::string& archive_path,
                           images::PullContext& context) {
  auto access = lookup_(ref.String());
  if (!access.ok()) {
    return Unavailable(fmt::format("pull image manifest has been retried 1 time(s): failed to resolve ref {}: asking "
                                   "the cluster's image store for it failed: {}",
                                   ref.String(), access.status().message()));
  }
  if (!access->found) {
    context.looked_in.push_back("the cluster's image store");
    context.near_names = access->near_images;
    return skopeo_.Pull(ref, archive_path, context);
  }
  auto from = images::ParseReference(fmt::format("{}/{}@{}", access->registry, access->repository, access->digest));
  if (!from.ok())
    return Unavailable(fmt::format("pull image manifest has been retried 1 time(s): failed to resolve ref {}: the "
                                   "cluster's image store answered an unusable location: {}",
                                   ref.String(), from.status().message()));
  // The registry speaks plain HTTP: the token and the digest, not TLS, are what it relies on.
  images::PullSource source{*from, access->token, true, "the cluster's registry " + access->registry};
  return skopeo_.PullFrom(ref, source, archive_path, context);
}

}  // namespace paddock::agent::remote
