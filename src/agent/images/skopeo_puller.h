// agent/images: the Puller that fetches images from registries with skopeo (Debian's package):
//
//   env TMPDIR=<dir of PATH> skopeo --override-os linux --override-arch amd64 copy --quiet
//       [--src-tls-verify=false] (--src-no-creds | --src-authfile FILE) [--preserve-digests]
//       docker://REF oci-archive:PATH
//
// bounded by a timeout, killed on Shutdown. Failures come back in the words ECS (Fargate,
// containerd) uses after "CannotPullContainerError: ", with skopeo's own detail at the end:
//
//   pull image manifest has been retried 1 time(s): failed to resolve ref R: R: not found (…)
//   pull image manifest has been retried 1 time(s): failed to resolve ref R: pull access denied,
//       repository does not exist or may require authorization: …
//   pull image manifest has been retried 1 time(s): failed to resolve ref R: failed to do request: Get "…": dial tcp …
//   ref pull has been retried 1 time(s): failed to copy: …
//
//   SkopeoPuller puller(SkopeoOptions{.insecure_registries = {"registry.lan:5000"}});
//   images.SetPuller(&puller);
//   ASSIGN_OR_RETURN(ResolvedImage img, images.ResolveOrPull("registry.lan:5000/app:1"));
//   ...
//   puller.Shutdown();  // before joining threads that may be pulling
//
// Plain HTTP ("insecure") registries: those listed, and every loopback one (localhost,
// 127.0.0.0/8, [::1]) as Docker treats them. Everything else must speak TLS with a certificate
// the host trusts. Credentials: none (anonymous pulls) unless `auth_file` names a
// containers-auth.json (`skopeo login --authfile FILE …`); then every task on the node uses them.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "agent/images/puller.h"
#include "agent/images/reference.h"
#include "common/status.h"
#include "common/subprocess.h"

namespace paddock::agent::images {

struct SkopeoOptions {
  std::string skopeo = "skopeo";  // looked up in PATH unless it has a '/'
  // Registries (Reference::domain: "host" or "host:port", compared exactly) pulled over plain
  // HTTP or TLS without certificate checks.
  std::vector<std::string> insecure_registries;
  // Loopback registries (localhost, 127.0.0.0/8, [::1]) are insecure without being listed.
  bool insecure_loopback = true;
  // One pull, from start to the archive written.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // A containers-auth.json for --src-authfile; empty: anonymous (--src-no-creds).
  std::string auth_file;
  // Most bytes skopeo may write (the archive and its staging, in the archive's directory),
  // checked every 250 ms while it runs: past it skopeo is killed and the pull fails with
  // ResourceExhausted, so a registry serving endless blobs cannot fill the disk. 0: no bound.
  // The node sets its images.max_unpacked_bytes (compressed blobs are never larger than what
  // they unpack to, give or take a header).
  uint64_t max_bytes = 0;
  // The platform picked from multi-platform images: the host's.
  std::string os = "linux";
  std::string arch = HostArch();

  static std::string HostArch();
};

// Whether `domain` (a Reference::domain) is pulled without TLS verification.
bool IsInsecureRegistry(std::string_view domain, const SkopeoOptions& options);

// The skopeo command line that pulls `ref` into `archive_path`.
std::vector<std::string> SkopeoCopyArgs(const Reference& ref, const std::string& archive_path,
                                        const SkopeoOptions& options);

// skopeo's message out of its stderr: the msg="…" of its last `level=fatal` line, unquoted, or
// else the last non-empty line.
std::string SkopeoErrorDetail(std::string_view stderr_text);

// A failed pull of `ref` as ECS words it (the text after "CannotPullContainerError: "), from
// skopeo's stderr. The code says what kind: NotFound (no such tag or repository), PermissionDenied
// (authorization), Unavailable (the registry could not be reached, or anything else).
Status PullFailure(const Reference& ref, std::string_view skopeo_stderr, const SkopeoOptions& options);

class SkopeoPuller final : public Puller {
 public:
  explicit SkopeoPuller(SkopeoOptions options = {});
  ~SkopeoPuller() override;

  SkopeoPuller(const SkopeoPuller&) = delete;
  SkopeoPuller& operator=(const SkopeoPuller&) = delete;

  Status Pull(const Reference& ref, const std::string& archive_path) override;

  // Kills every skopeo in flight (their Pull returns Aborted at once) and makes later Pulls fail
  // the same way. Idempotent.
  void Shutdown();

  const SkopeoOptions& options() const { return options_; }

 private:
  const SkopeoOptions options_;
  // An eventfd that becomes readable (and stays so) when Shutdown runs; every Pull waits on it
  // and on its skopeo together.
  subprocess::UniqueFd shutdown_fd_;
};

}  // namespace paddock::agent::images
