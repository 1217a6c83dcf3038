#include "registry/cluster_registry.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/encoding.h"
#include "common/private_files.h"

namespace paddock::registry {
namespace fs = std::filesystem;
using agent::images::ImageStore;

namespace {

// "[::1]" for IPv6 literals, as URLs and Distribution's addr want them.
std::string HostForUrl(const std::string& host) {
  return host.find(':') != std::string::npos && !host.starts_with('[') ? "[" + host + "]" : host;
}

// Where this process reaches a registry listening on `host` (a wildcard: over loopback).
std::string LocalHost(const std::string& host) {
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1";
  if (host == "::" || host == "[::]") return "[::1]";
  return HostForUrl(host);
}

// A port nothing listens on at `host` now (bound once to port 0, then released).
StatusOr<uint16_t> FreePort(const std::string& host) {
  const bool v6 = host.find(':') != std::string::npos;
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(fmt::format("socket: {}", std::strerror(errno)));
  subprocess::UniqueFd sock(fd);
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string bare = host.starts_with('[') ? host.substr(1, host.size() - 2) : host;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    if (::inet_pton(AF_INET6, bare.c_str(), &a->sin6_addr) != 1) return InvalidArgument(fmt::format("bad address {}", host));
    len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    if (bare.empty()) bare = "0.0.0.0";
    if (::inet_pton(AF_INET, bare.c_str(), &a->sin_addr) != 1) return InvalidArgument(fmt::format("bad address {}", host));
    len = sizeof(sockaddr_in);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return Unavailable(fmt::format("cannot bind {}: {}", host, std::strerror(errno)));
  return ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

// Whether a Distribution registry answers at local `host`:`port`: its /v2/ replies with the
// Docker-Distribution-Api-Version header. A bare connect is not enough: another process may hold
// the port the registry failed to bind, and a connect to a port nobody listens on can land on
// itself (TCP simultaneous open, when the kernel picks that very port as the ephemeral one).
bool ServesRegistry(const std::string& host, uint16_t port) {
  // Within 2 s in all: a wedged registry (a full backlog) must not hold a grant for minutes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::string bare = host.starts_with('[') ? host.substr(1, host.size() - 2) : host;
  const bool v6 = bare.find(':') != std::string::npos;
  subprocess::UniqueFd sock(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock.valid()) return false;
  auto ready = [&](short events) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{.fd = sock.get(), .events = events, .revents = 0};
      const int n = ::poll(&p, 1, static_cast<int>(left.count()));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
  };
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    ::inet_pton(AF_INET6, bare.c_str(), &a->sin6_addr);
    len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    ::inet_pton(AF_INET, bare.c_str(), &a->sin_addr);
    len = sizeof(sockaddr_in);
  }
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS || !ready(POLLOUT)) return false;
    int error = 0;
    socklen_t error_len = sizeof error;
    if (::getsockopt(sock.get(), SOL_SOCKET, SO_ERROR, &error, &error_len) != 0 || error != 0) return false;
  }
  const std::string request = fmt::format("GET /v2/ HTTP/1.0\r\nHost: {}:{}\r\n\r\n", HostForUrl(bare), port);
  if (::send(sock.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return false;
  std::string reply;
  char buf[2048];
  while (reply.find("\r\n\r\n") == std::string::npos && ready(POLLIN)) {
    const ssize_t n = ::recv(sock.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  for (char& c : reply) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return reply.starts_with("http/") && reply.find("\r\ndocker-distribution-api-version:") != std::string::npos;
}

// The last `n` bytes of what `path` holds past `from` (what the latest run wrote to an appended log).
std::string Tail(const std::string& path, size_t n, std::streamoff from = 0) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in.tellg();
  in.seekg(std::max(from, size - static_cast<std::streamoff>(n)));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > n) text = text.substr(text.size() - n);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

ClusterRegistry::ClusterRegistry(RegistryOptions options, Clock& clock) : options_(std::move(options)), clock_(clock) {}

ClusterRegistry::~ClusterRegistry() { Stop(); }

std::string ClusterRegistry::Address() {
  std::lock_guard lock(mu_);
  return address_;
}

void ClusterRegistry::Stop() {
  std::lock_guard lock(mu_);
  StopLocked();
}

void ClusterRegistry::StopLocked() {
  if (!child_) return;
  if (child_->pid > 0) {
    ::kill(child_->pid, SIGTERM);
    auto exited = subprocess::WaitChild(*child_, std::chrono::seconds(5));
    if (!exited.ok() || !*exited) subprocess::KillAndReap(*child_);
  }
  child_.reset();
  address_.clear();
  ::unlink((options_.dir + "/registry.pid").c_str());
}

Status ClusterRegistry::EnsureRunningLocked() {
  if (child_) {
    // Alive is not enough: a registry killed behind our back may not be reapable yet (a Go
    // process's other threads still exiting), and a hung one answers nothing.
    auto exited = subprocess::WaitChild(*child_, std::chrono::milliseconds(0));
    if (exited.ok() && !*exited && ServesRegistry(LocalHost(options_.listen_host), last_port_)) return OkStatus();
    fmt::print(stderr, "paddock: the cluster's registry ({}) has exited or stopped answering; starting it again: {}\n",
               address_, Tail(options_.dir + "/registry.log", 300));
    StopLocked();
    pushed_.clear();  // its storage is kept, but what it holds is checked again by the next pushes
  }
  return StartLocked();
}

Status ClusterRegistry::StartLocked() {
  RETURN_IF_ERROR(MakePrivateDir(options_.dir));
  if (!signer_) {
    ASSIGN_OR_RETURN(TokenSigner signer, TokenSigner::LoadOrCreate(options_.dir));
    signer_.emplace(std::move(signer));
  }
  const std::string config_path = options_.dir + "/config.yml";
  // A registry a killed server left running on this directory: stop it (by its pid, when that
  // process still serves this very configuration).
  {
    std::ifstream pid_in(options_.dir + "/registry.pid");
    pid_t old = 0;
    if (pid_in >> old && old > 1) {
      std::ifstream cmdline(fmt::format("/proc/{}/cmdline", old), std::ios::binary);
      std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
      if (args.find(config_path) != std::string::npos) ::kill(old, SIGKILL);
    }
  }
  // A port picked here may be taken by another process before the registry binds it: then it
  // exits saying so, and a fresh port is tried (twice more).
  // A restart keeps the port it had when it can, so that grants given out stay good.
  for (int attempt = 1;; ++attempt) {
    uint16_t port = options_.port;
    if (port == 0 && attempt == 1) port = last_port_;
    if (port == 0) {
      ASSIGN_OR_RETURN(port, FreePort(options_.listen_host));
    }
    Status served = ServeOnLocked(config_path, port);
    if (served.ok()) break;
    const bool port_taken = served.message().find("address already in use") != std::string::npos;
    if (!port_taken || options_.port != 0 || attempt == 3) return served;
    last_port_ = 0;
  }
  fmt::print(stderr, "paddock: the cluster's registry (docker-registry) serves the node's images to remote agents on {}\n",
             address_);
  return OkStatus();
}

Status ClusterRegistry::ServeOnLocked(const std::string& config_path, uint16_t port) {
  const std::string listen = fmt::format("{}:{}", HostForUrl(options_.listen_host), port);
  // Token auth only: every token is Paddock's (registry/token.h). The realm is never asked (tokens
  // come through the agent protocol); clients that try get this path's 404.
  const std::string config = fmt::format(
      "version: 0.1\n"
      "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
      "storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: false\n"
      "http:\n  addr: {listen}\n  secret: {secret}\n"
      "auth:\n  token:\n    realm: http://{listen}/tokens-come-from-the-paddock-agent-protocol\n"
      "    service: {service}\n    issuer: {issuer}\n    rootcertbundle: {cert}\n",
      fmt::arg("storage", options_.dir + "/storage"), fmt::arg("listen", listen),
      fmt::arg("secret", HexEncode(RandomBytes(16))), fmt::arg("service", kTokenService),
      fmt::arg("issuer", kTokenIssuer), fmt::arg("cert", signer_->certificate_path()));
  {
    // Private from its first byte: it holds the registry's HTTP secret.
    subprocess::UniqueFd out(::open(config_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!out.valid() || ::fchmod(out.get(), 0600) != 0 ||
        ::write(out.get(), config.data(), config.size()) != static_cast<ssize_t>(config.size()))
      return Unavailable(fmt::format("the cluster's registry: cannot write {}", config_path));
  }
  const std::string log_path = options_.dir + "/registry.log";
  subprocess::UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log.valid()) return Unavailable(fmt::format("the cluster's registry: cannot open {}", log_path));
  const off_t log_start = ::lseek(log.get(), 0, SEEK_END);
  auto child = subprocess::Spawn({options_.binary, "serve", config_path}, subprocess::Stdio{-1, log.get(), log.get()});
  if (!child.ok())
    return Unavailable(fmt::format("the cluster's registry cannot start: {} ({} is Debian's docker-registry package: "
                                   "apt-get install docker-registry)",
                                   child.status().message(), options_.binary));
  child_.emplace(std::move(*child));
  std::ofstream(options_.dir + "/registry.pid", std::ios::trunc) << child_->pid << "\n";
  const std::string local = LocalHost(options_.listen_host);
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  while (!ServesRegistry(local, port)) {
    auto exited = subprocess::WaitChild(*child_, std::chrono::milliseconds(20));
    if (!exited.ok() || *exited || std::chrono::steady_clock::now() > deadline) {
      StopLocked();
      return Unavailable(fmt::format("the cluster's registry did not start on {}: {}", listen,
                                     Tail(log_path, 600, std::max<off_t>(log_start, 0))));
    }
  }
  address_ = listen;
  last_port_ = port;
  return OkStatus();
}

Status ClusterRegistry::PushLocked(const ImageStore::Layout& layout, const std::string& repository) {
  const std::string digest = layout.image.manifest_digest.str();
  if (pushed_.contains(digest)) return OkStatus();
  ASSIGN_OR_RETURN(std::string token, signer_->Mint(TokenRequest{.subject = std::string(kTokenIssuer),
                                                                  .repository = repository,
                                                                  .actions = {"pull", "push"},
                                                                  .ttl = options_.push_timeout + std::chrono::minutes(1)},
                                                     clock_.Now()));
  const std::string target = fmt::format("{}:{}", LocalHost(options_.listen_host), last_port_);
  // By digest, unchanged: the registry then serves exactly the manifest (and blobs) of the store.
  ASSIGN_OR_RETURN(subprocess::RunResult r,
                   subprocess::RunCaptured({options_.skopeo, "copy", "--quiet", "--preserve-digests",
                                            "--dest-tls-verify=false", "--dest-registry-token", token,
                                            "--src-shared-blob-dir", layout.blob_dir, "oci:" + layout.layout_dir,
                                            fmt::format("docker://{}/{}@{}", target, repository, digest)},
                                           options_.push_timeout));
  if (r.exit_code != 0)
    return Unavailable(fmt::format("copying {} into the cluster's registry failed: {}", layout.image.reference,
                                   r.output.substr(0, 600)));
  pushed_.insert(digest);
  return OkStatus();
}

StatusOr<ImageGrant> ClusterRegistry::Grant(ImageStore& images, std::string_view reference, std::string_view subject) {
  std::lock_guard lock(mu_);
  ImageGrant grant;
  // Looked up first: a name the store lacks never starts the registry.
  RETURN_IF_ERROR(images.WithLayout(reference, [&](const ImageStore::Layout& layout) -> Status {
    RETURN_IF_ERROR(EnsureRunningLocked());
    grant.digest = layout.image.manifest_digest.str();
    grant.repository = fmt::format("images/{}", layout.image.manifest_digest.hex());
    return PushLocked(layout, grant.repository);
  }));
  const TimePoint now = clock_.Now();
  ASSIGN_OR_RETURN(grant.token, signer_->Mint(TokenRequest{.subject = std::string(subject),
                                                           .repository = grant.repository,
                                                           .actions = {"pull"},
                                                           .ttl = options_.pull_token_ttl},
                                              now));
  grant.registry = address_;
  grant.expires_at = now + options_.pull_token_ttl;
  return grant;
}

agent::remote::ImageAccessProvider AccessProvider(ClusterRegistry& registry, ImageStore& images) {
  return [&registry, &images](const std::string& reference, const std::string& subject)
             -> StatusOr<agent::remote::ImageAccess> {
    agent::remote::ImageAccess access;
    auto grant = registry.Grant(images, reference, subject);
    if (grant.status().code() == StatusCode::kNotFound) {
      if (auto near = images.NearNames(reference); near.ok()) access.near_images = std::move(*near);
      return access;
    }
    if (!grant.ok()) return Unavailable(std::string(grant.status().message()));
    access.found = true;
    access.registry = grant->registry;
    access.repository = grant->repository;
    access.digest = grant->digest;
    access.token = grant->token;
    access.expires_at = grant->expires_at;
    return access;
  };
}

}  // namespace paddock::registry
