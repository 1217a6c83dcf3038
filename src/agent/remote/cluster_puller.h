// agent/remote/cluster_puller: the Puller of a `paddock agent` — one image store per cluster, as
// users see it (docs/contracts/image.md, "Cluster registry").
//
// An image the agent's own store lacks is looked up in the cluster's image store first: the
// server's, served by its registry (registry/cluster_registry.h). The agent asks the control plane
// (GetImageAccess, signed with its instance's credential) and, when the server has the image, pulls
// exactly that manifest by digest with the pull token it got. Only when the server has no image by
// that name does it pull from the image's own registry, as the server's agents do. The server's copy
// is never replaced by another registry's image of the same name: when the server has it but it
// cannot be fetched (registry down), the pull fails and says so.
//
//   SkopeoPuller skopeo(options);
//   ClusterPuller puller([&](const std::string& r) { return control.GetImageAccess(r); }, skopeo);
//   images.SetPuller(&puller);
#pragma once

#include <functional>
#include <string>

#include "agent/images/puller.h"
#include "agent/images/skopeo_puller.h"
#include "agent/protocol/messages.h"

namespace paddock::agent::remote {

using protocol::ImageAccess;
using ImageAccessLookup = std::function<StatusOr<ImageAccess>(const std::string& reference)>;

class ClusterPuller final : public images::Puller {
 public:
  // `lookup` asks the control plane (RemoteControl::GetImageAccess); `skopeo` fetches.
  ClusterPuller(ImageAccessLookup lookup, images::SkopeoPuller& skopeo);

  // The cluster's copy when there is one (by digest, with its token), else `ref`'s own registry.
  // A miss lists "the cluster's image store" and then the registry in `context.looked_in`, and the
  // server's near names in `context.near_names`. Asking the control plane failed: Unavailable, no
  // fallback (which image the server has is unknown).
  Status Pull(const images::Reference& ref, const std::string& archive_path, images::PullContext& context) override;

 private:
  ImageAccessLookup lookup_;
  images::SkopeoPuller& skopeo_;
};

}  // namespace paddock::agent::remote
