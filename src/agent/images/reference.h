// Image references, normalized as Docker normalizes them.
//
//   busybox                        -> docker.io/library/busybox:latest
//   me/app:1                       -> docker.io/me/app:1
//   localhost:5000/x:tag           -> localhost:5000/x:tag
//   quay.io/a/b@sha256:<hex>       -> quay.io/a/b@sha256:<hex>      (no implied :latest)
//
//   ASSIGN_OR_RETURN(Reference r, ParseReference("busybox"));
//   r.String();  // "docker.io/library/busybox:latest"
//
// The grammar is Docker's (distribution/reference): the first component is a registry domain
// when it contains '.' or ':' or is "localhost"; path components are lowercase alphanumerics
// joined by '.', '_', "__" or runs of '-'; a tag is [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; the whole
// name is at most 255 characters. IPv6 registry addresses are not accepted.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/images/digest.h"
#include "common/status.h"

namespace paddock::agent::images {

struct Reference {
  std::string domain;             // "docker.io", "localhost:5000", ...
  std::string path;               // "library/busybox"
  std::string tag;                // empty only when a digest is given without a tag
  std::optional<Digest> digest;

  // domain/path: what an image's tags and digests hang off.
  std::string Repository() const { return domain + "/" + path; }
  // The canonical text: domain/path[:tag][@digest].
  std::string String() const;
  // domain/path:tag. REQUIRES: !tag.empty().
  std::string Tagged() const { return Repository() + ":" + tag; }
  // As Docker shows it: String() without "docker.io/library/" or "docker.io/" ("busybox:demo").
  std::string Familiar() const;
};

// Parses and normalizes `text`. InvalidArgument with the reason for anything else.
StatusOr<Reference> ParseReference(std::string_view text);

// Whether `text` is a valid tag on its own ("latest", "1.2-alpine").
bool IsValidTag(std::string_view text);

}  // namespace paddock::agent::images
