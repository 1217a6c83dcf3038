// agent/images: the Puller that fetches images from registries with skopeo (Debian's package):
//
//   env TMPDIR=<dir of PATH> skopeo --override-os linux --override-arch amd64 copy
//       [--src-tls-verify=false] (--src-no-creds | --src-authfile FILE | --src-registry-token T)
//       [--preserve-digests] docker://REF oci-archive:PATH
//
// bounded by a timeout, killed on Shutdown. Progress: skopeo's stdout is a pseudo-terminal, so it
// draws its progress bars ("Copying blob 7ed53567ac7a [===>--] 1.2MiB / 3.4MiB"), which
// SkopeoProgress reads into PullProgress for the caller; without a pty (none to be had) it runs
// with --quiet and reports none. Failures of Pull come back in the words ECS (Fargate,
// containerd) uses after "CannotPullContainerError: ", ended by a fixed phrase: nothing a registry
// sends (an error body, a banner, a certificate's names) is ever copied into them, since the text
// reaches the tenant as its task's stoppedReason. skopeo's own message goes to the node's log.
//
//   pull image manifest has been retried 1 time(s): failed to resolve ref R: R: not found
//   pull image manifest has been retried 1 time(s): failed to resolve ref R: pull access denied,
//       repository does not exist or may require authorization: authentication required
//   pull image manifest has been retried 1 time(s): failed to resolve ref R: failed to do request:
//       Get "https://host/v2/": dial tcp: connect: connection refused
//   ref pull has been retried 1 time(s): failed to copy: a blob of the image was not found
//
//   SkopeoPuller puller(SkopeoOptions{.insecure_registries = {"registry.lan:5000"}});
//   images.SetPuller(&puller);
//   ASSIGN_OR_RETURN(ResolvedImage img, images.ResolveOrPull("registry.lan:5000/app:1"));
//   ...
//   puller.Shutdown();  // before joining threads that may be pulling
//
// Local registries. Before skopeo runs, the registry's host is resolved and each of its addresses
// classified (registry_address.h): one on the node itself (loopback, link-local, unspecified, the
// node's own addresses, routed to its tasks) refuses the pull unless the registry is listed in
// `local_registries` (or `local` is kAllowed: the operator's own `paddock image pull`).
// Plain HTTP ("insecure") registries: those listed, and every loopback one (localhost,
// 127.0.0.0/8, [::1]) as Docker treats them. Everything else must speak TLS with a certificate
// the host trusts. Credentials: none (anonymous pulls) unless `auth_file` names a
// containers-auth.json (`skopeo login --authfile FILE …`); then every task on the node uses them.
// PullFrom fetches an image from somewhere else than its own registry with a bearer token: the
// cluster's registry (agent/remote/cluster_puller.h), the node's own docker-registry, so neither
// the local-registry check nor the fixed phrases apply to it (its failures keep skopeo's message).
// A task's own credentials (PullContext::credentials, a container's repositoryCredentials) go to
// skopeo only in a containers-auth.json of their own — a 0600 file in a 0700 directory made for
// the one call (TaskAuthFile), removed when it ends — never on its command line or in its
// environment, where other local users could read them.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/images/puller.h"
#include "agent/images/reference.h"
#include "agent/images/registry_address.h"
#include "common/status.h"
#include "common/subprocess.h"

namespace paddock::agent::images {

// Whether registries on the node's own addresses may be pulled from.
enum class LocalRegistries {
  kRefusedUnlessListed,  // tasks' pulls: only those in SkopeoOptions::local_registries
  kAllowed,              // the operator's own pulls (`paddock image pull`)
};

struct SkopeoOptions {
  std::string skopeo = "skopeo";  // looked up in PATH unless it has a '/'
  // Registries (Reference::domain: "host" or "host:port", compared exactly) pulled over plain
  // HTTP or TLS without certificate checks.
  std::vector<std::string> insecure_registries;
  // Loopback registries (localhost, 127.0.0.0/8, [::1]) are insecure without being listed.
  bool insecure_loopback = true;
  // Registries on the node's own addresses (registry_address.h) that may be pulled from
  // (Reference::domain, "host" or "host:port", compared exactly); the others are refused.
  LocalRegistries local = LocalRegistries::kRefusedUnlessListed;
  std::vector<std::string> local_registries;
  // Interface name prefixes whose routes lead to tasks (the VPC transits, the bridge-mode bridge):
  // a registry routed through one is a task, not a registry.
  std::vector<std::string> task_interface_prefixes = {"pdv-", "paddock1"};
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

// Where PullFrom fetches an image from instead of its own registry.
struct PullSource {
  Reference from;              // what skopeo fetches, in that registry's names
  std::string registry_token;  // a bearer token for it (--src-registry-token); empty: anonymous
  bool plain_http = false;     // HTTP, or TLS without certificate checks
  // How the source is named in messages ("the cluster's registry 10.0.0.1:5000").
  std::string described_as;
};

// How a copy runs besides what SkopeoOptions say.
struct CopyFlags {
  bool quiet = true;  // --quiet: no progress output (none is read)
  const PullSource* source = nullptr;  // fetch from here, not from the reference's registry
  // A containers-auth.json to use instead of SkopeoOptions::auth_file (a task's own credentials).
  const std::string* auth_file = nullptr;
  // Copy this manifest of the reference's repository (what its tag named when inspected) instead
  // of the tag: skopeo checks that it got that manifest, and may still rewrite it into OCI form (a
  // Docker manifest) or choose the host's platform from it (a list), unlike a digest the task named.
  const Digest* pinned = nullptr;
  // Not a copy: `skopeo inspect --raw` of the reference, its output (the manifest as the registry
  // serves it, byte for byte) read into this string. Waited for as a copy is (timeout, shutdown).
  std::string* inspect_into = nullptr;
};

// A containers-auth.json holding one registry's credentials for one skopeo call: `auth.json` in a
// directory of its own that mkdtemp makes (0700) under `parent`, written 0600; the file and the
// directory are removed when this goes.
class TaskAuthFile {
 public:
  static StatusOr<std::unique_ptr<TaskAuthFile>> Write(const std::string& parent, std::string_view registry,
                                                       const RegistryCredentials& credentials);
  ~TaskAuthFile();
  TaskAuthFile(const TaskAuthFile&) = delete;
  TaskAuthFile& operator=(const TaskAuthFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit TaskAuthFile(std::string dir) : dir_(std::move(dir)), path_(dir_ + "/auth.json") {}
  std::string dir_;
  std::string path_;
};

// The skopeo command line that asks `ref`'s registry for its manifest (inspect --raw), with
// `auth_file` (null: SkopeoOptions::auth_file, or none).
std::vector<std::string> SkopeoInspectArgs(const Reference& ref, const SkopeoOptions& options,
                                           const std::string* auth_file);

// The skopeo command line that pulls `ref` (or `flags.source->from`) into `archive_path`.
std::vector<std::string> SkopeoCopyArgs(const Reference& ref, const std::string& archive_path,
                                        const SkopeoOptions& options, const CopyFlags& flags = {});

// Reads skopeo's progress bars as it draws them on a terminal (mpb: lines redrawn after cursor
// movements), into a PullProgress: a layer per "Copying blob ID" line, its bytes from "A / B", done
// at "done" or "skipped". The config blob is not a layer. Bytes may come in any chunks.
class SkopeoProgress {
 public:
  // Returns whether the progress changed.
  bool Feed(std::string_view bytes);
  PullProgress Current() const;

 private:
  void Line(std::string_view line);

  struct Blob {
    uint64_t done = 0;
    uint64_t total = 0;
    bool finished = false;
  };
  std::map<std::string, Blob> layers_;
  std::string line_;
  enum class Escape { kNone, kEsc, kCsi } escape_ = Escape::kNone;
  bool changed_ = false;
};

// skopeo's message out of its stderr: the msg="…" of its last `level=fatal` line, unquoted, or
// else the last non-empty line.
std::string SkopeoErrorDetail(std::string_view stderr_text);

// A failed pull of `ref` as ECS words it (the text after "CannotPullContainerError: "), from
// skopeo's stderr: ECS's phrase for the kind of failure and a fixed phrase for its cause, chosen
// by what skopeo says but never quoting it; a connection's cause only for requests to the
// registry itself (not to where it redirected skopeo). The code says what kind: NotFound (no such tag or
// repository), PermissionDenied (authorization), Unavailable (the registry could not be reached,
// or anything else).
Status PullFailure(const Reference& ref, std::string_view skopeo_stderr, const SkopeoOptions& options);

// OK when `ref`'s registry may be pulled from under `options` (see "Local registries" above):
// PermissionDenied naming the registry and why otherwise; Unavailable (ECS's "no such host") when
// its host does not resolve. `node` is what the node knows of its addresses.
Status CheckRegistryAddress(const Reference& ref, const SkopeoOptions& options, const NodeAddresses& node);

class SkopeoPuller final : public Puller {
 public:
  explicit SkopeoPuller(SkopeoOptions options = {});
  ~SkopeoPuller() override;

  SkopeoPuller(const SkopeoPuller&) = delete;
  SkopeoPuller& operator=(const SkopeoPuller&) = delete;

  // Pulls `ref` from its own registry. On a failure about where the image is (NotFound,
  // PermissionDenied, Unavailable) `context.looked_in` gets "its registry <domain>".
  Status Pull(const Reference& ref, const std::string& archive_path, PullContext& context) override;
  Status Pull(const Reference& ref, const std::string& archive_path) {
    PullContext context;
    return Pull(ref, archive_path, context);
  }
  // Pulls `ref`'s image from `source` instead (the archive is unnamed: the store names it `ref`).
  // Failures read "ref pull has been retried 1 time(s): failed to copy: pulling R from
  // <described_as> failed: <skopeo>" (not found there: NotFound "… R is not in <described_as>").
  Status PullFrom(const Reference& ref, const PullSource& source, const std::string& archive_path,
                  PullContext& context);

  // Asks `ref`'s own registry for its manifest with `context.credentials` (null: as Pull would
  // without them), after the same local-registry check: OK, or the failure Pull would have had.
  bool ChecksAccess() const override { return true; }
  Status CheckAccess(const Reference& ref, PullContext& context) override;

  // Kills every skopeo in flight (their Pull returns Aborted at once) and makes later Pulls fail
  // the same way. Idempotent.
  void Shutdown();

  const SkopeoOptions& options() const { return options_; }

 private:
  // Runs skopeo as `flags` say (a copy into `archive_path`, or an inspection); the failure is
  // skopeo's stderr (FailedPrecondition) or already worded (timeout, size bound, shutdown, no skopeo).
  Status Copy(const Reference& ref, const std::string& archive_path, const PullContext& context, CopyFlags flags,
              std::string* skopeo_stderr);
  // The steps Pull and CheckAccess share: the local-registry check, then `run` (which leaves
  // skopeo's stderr where it is told, with FailedPrecondition), worded by PullFailure; a failure
  // about where the image is adds "its registry <domain>" to context.looked_in.
  Status FromOwnRegistry(const Reference& ref, PullContext& context,
                         const std::function<Status(std::string* skopeo_stderr)>& run);

  const SkopeoOptions options_;
  // An eventfd that becomes readable (and stays so) when Shutdown runs; every Pull waits on it
  // and on its skopeo together.
  subprocess::UniqueFd shutdown_fd_;
};

}  // namespace paddock::agent::images
