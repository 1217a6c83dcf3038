#include "agent/images/skopeo_puller.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/encoding.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <optional>

namespace paddock::agent::images {
namespace {

// How often a running pull's disk use is checked against SkopeoOptions::max_bytes.
constexpr std::chrono::milliseconds kSizeCheckInterval{250};

// Bytes in the regular files under `dir` (skopeo's archive and staging area).
uint64_t BytesUnder(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += it->file_size(e2);
  }
  return total;
}

// What ECS (Fargate's containerd-based agent) puts before its reasons. Paddock tries once.
constexpr std::string_view kManifestPrefix = "pull image manifest has been retried 1 time(s): ";
constexpr std::string_view kCopyPrefix = "ref pull has been retried 1 time(s): failed to copy: ";
constexpr std::string_view kAccessDenied = "pull access denied, repository does not exist or may require authorization: ";
// skopeo's message is cut here in the node's log.
constexpr size_t kMaxDetail = 600;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool ContainsAny(std::string_view haystack, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles)
    if (haystack.find(n) != std::string_view::npos) return true;
  return false;
}

// The name skopeo is given: docker://repo:tag, or docker://repo@digest (skopeo takes one of them).
std::string SourceName(const Reference& ref) {
  return ref.digest ? ref.Repository() + "@" + ref.digest->str() : ref.Tagged();
}

std::string ResolvePrefix(const Reference& ref) {
  return fmt::format("{}failed to resolve ref {}: ", kManifestPrefix, ref.String());
}

// Unquotes the body of a Go-quoted string (logrus's msg="…"), up to its closing quote.
std::string GoUnquote(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') break;
    if (c == '\\' && i + 1 < s.size()) {
      char e = s[++i];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        default: out += '\\'; out += e; break;
      }
      continue;
    }
    out += c;
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string SkopeoOptions::HostArch() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__i386__)
  return "386";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#else
  return "amd64";
#endif
}

bool IsInsecureRegistry(std::string_view domain, const SkopeoOptions& options) {
  for (const std::string& r : options.insecure_registries)
    if (r == domain) return true;
  if (!options.insecure_loopback) return false;
  std::string_view host = domain;
  if (host.starts_with('[')) {
    host = host.substr(1, host.find(']') == std::string_view::npos ? host.size() - 1 : host.find(']') - 1);
    return host == "::1";
  }
  if (size_t colon = host.find(':'); colon != std::string_view::npos) host = host.substr(0, colon);
  if (host == "localhost") return true;
  in_addr a{};
  std::string h(host);
  return inet_pton(AF_INET, h.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::vector<std::string> SkopeoCopyArgs(const Reference& ref, const std::string& archive_path,
                                        const SkopeoOptions& options, const CopyFlags& flags) {
  // skopeo stages the image in TMPDIR (else /var/tmp) before writing the archive: keep that next
  // to the archive, in the store's tmp/, which garbage collection empties after a crash.
  std::string dir = archive_path.substr(0, archive_path.rfind('/') == std::string::npos ? 0 : archive_path.rfind('/'));
  std::vector<std::string> args = {"env", "TMPDIR=" + (dir.empty() ? std::string(".") : dir), options.skopeo,
                                   "--override-os", options.os, "--override-arch", options.arch, "copy"};
  if (flags.quiet) args.push_back("--quiet");
  const Reference& from = flags.source ? flags.source->from : ref;
  if (flags.source ? flags.source->plain_http : IsInsecureRegistry(ref.domain, options))
    args.push_back("--src-tls-verify=false");
  if (flags.source) {
    if (flags.source->registry_token.empty()) {
      args.push_back("--src-no-creds");
    } else {
      args.push_back("--src-registry-token");
      args.push_back(flags.source->registry_token);
    }
  } else if (flags.auth_file != nullptr) {
    args.push_back("--src-authfile");
    args.push_back(*flags.auth_file);
  } else if (options.auth_file.empty()) {
    args.push_back("--src-no-creds");
  } else {
    args.push_back("--src-authfile");
    args.push_back(options.auth_file);
  }
  if (flags.pinned != nullptr) {
    args.push_back("docker://" + from.Repository() + "@" + flags.pinned->str());
  } else {
    // A digest names the manifest as the registry serves it: skopeo must not rewrite it (into OCI
    // form), or the digest the task asked for would name nothing in the store.
    if (from.digest) args.push_back("--preserve-digests");
    args.push_back("docker://" + SourceName(from));
  }
  args.push_back("oci-archive:" + archive_path);
  return args;
}

std::vector<std::string> SkopeoInspectArgs(const Reference& ref, const SkopeoOptions& options,
                                           const std::string* auth_file) {
  std::vector<std::string> args = {options.skopeo, "inspect", "--raw"};
  if (IsInsecureRegistry(ref.domain, options)) args.push_back("--tls-verify=false");
  const std::string& file = auth_file != nullptr ? *auth_file : options.auth_file;
  if (file.empty()) {
    args.push_back("--no-creds");
  } else {
    args.push_back("--authfile");
    args.push_back(file);
  }
  args.push_back("docker://" + SourceName(ref));
  return args;
}

namespace {

// Standard base64 with padding (what containers-auth.json's "auth" holds).
std::string Base64(std::string_view bytes) {
  std::string out = Base64UrlEncode(bytes);
  for (char& ch : out) ch = ch == '-' ? '+' : ch == '_' ? '/' : ch;
  while (out.size() % 4 != 0) out += '=';
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<TaskAuthFile>> TaskAuthFile::Write(const std::string& parent, std::string_view registry,
                                                            const RegistryCredentials& credentials) {
  std::string templ = (parent.empty() ? std::string(".") : parent) + "/auth-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    return Internal(fmt::format("cannot make a directory for registry credentials under {}: {}", parent,
                                std::strerror(errno)));
  std::unique_ptr<TaskAuthFile> file(new TaskAuthFile(templ));
  const std::string text = fmt::format(R"({{"auths":{{"{}":{{"auth":"{}"}}}}}})", registry,
                                       Base64(credentials.username + ":" + credentials.password));
  subprocess::UniqueFd fd(::open(file->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Internal(fmt::format("cannot write {}: {}", file->path_, std::strerror(errno)));
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Internal(fmt::format("cannot write {}: {}", file->path_, std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return file;
}

TaskAuthFile::~TaskAuthFile() {
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

namespace {

// "1.9MiB", "186.0b", "12.3 KiB", "1.2MB" → bytes; nullopt for anything else.
std::optional<uint64_t> ParseSize(std::string_view text) {
  text = Trim(text);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  const double number = std::strtod(std::string(text.substr(0, i)).c_str(), nullptr);
  const std::string_view unit = Trim(text.substr(i));
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"b", 1},          {"B", 1},          {"KiB", 1024.0},   {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
  for (const auto& [name, factor] : kUnits)
    if (unit == name) return static_cast<uint64_t>(number * factor + 0.5);
  return std::nullopt;
}

}  // namespace

bool SkopeoProgress::Feed(std::string_view bytes) {
  changed_ = false;
  for (char c : bytes) {
    switch (escape_) {
      case Escape::kEsc:
        escape_ = c == '[' ? Escape::kCsi : Escape::kNone;
        continue;
      case Escape::kCsi:
        if (c >= 0x40 && c <= 0x7e) escape_ = Escape::kNone;  // the sequence's final byte
        continue;
      case Escape::kNone:
        break;
    }
    if (c == '\x1b') {
      escape_ = Escape::kEsc;
    } else if (c == '\r' || c == '\n') {
      Line(line_);
      line_.clear();
    } else if (line_.size() < 1024) {
      line_ += c;
    }
  }
  // A bar is redrawn in place: its latest state may not be followed by a line end yet.
  if (!line_.empty()) Line(line_);
  return changed_;
}

void SkopeoProgress::Line(std::string_view line) {
  line = Trim(line);
  constexpr std::string_view kBlob = "Copying blob ";
  if (!line.starts_with(kBlob)) return;  // the config blob, "Writing manifest", …
  line.remove_prefix(kBlob.size());
  // A line still being drawn may end inside the id: only a complete one (a space after it) counts.
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return;
  std::string_view id = line.substr(0, space);
  if (id.starts_with("sha256:")) id.remove_prefix(7);
  id = id.substr(0, 12);  // bars show 12 hex digits
  if (id.empty()) return;
  std::string_view rest = Trim(line.substr(space));
  auto [it, added] = layers_.try_emplace(std::string(id));
  if (added) changed_ = true;  // a layer started
  Blob next = it->second;
  if (rest.starts_with("done") || rest.starts_with("skipped")) {
    next.finished = true;
    next.done = next.total;
  } else if (size_t bar = rest.rfind(']'); bar != std::string_view::npos) {
    std::string_view counts = rest.substr(bar + 1);
    if (size_t slash = counts.find(" / "); slash != std::string_view::npos) {
      std::string_view second = counts.substr(slash + 3);
      second = second.substr(0, second.find(' ') == std::string_view::npos ? second.size() : second.find(' '));
      auto done = ParseSize(counts.substr(0, slash));
      auto total = ParseSize(second);
      if (done && total) {
        next.done = *done;
        next.total = *total;
      }
    }
  }
  Blob& blob = it->second;
  if (blob.done != next.done || blob.total != next.total || blob.finished != next.finished) changed_ = true;
  blob = next;
}

PullProgress SkopeoProgress::Current() const {
  PullProgress p;
  for (const auto& [id, blob] : layers_) {
    ++p.layers_total;
    if (blob.finished) ++p.layers_done;
    p.bytes_done += blob.done;
    p.bytes_total += blob.total;
  }
  return p;
}

std::string SkopeoErrorDetail(std::string_view text) {
  std::string_view last_fatal, last_line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = Trim(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    if (!line.empty()) {
      last_line = line;
      if (line.find("level=fatal") != std::string_view::npos || line.find("level=error") != std::string_view::npos)
        last_fatal = line;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  std::string_view line = last_fatal.empty() ? last_line : last_fatal;
  if (size_t m = line.find("msg=\""); m != std::string_view::npos) return GoUnquote(line.substr(m + 5));
  return std::string(line);
}

namespace {

// The host:port of the request skopeo says failed (`Get "https://host:port/v2/…"`), lower case;
// empty when it names none. A registry's redirect (blobs, manifests) or token realm sends skopeo to
// hosts of the registry's choosing — the node's loopback included — and how such a request failed
// must not reach the tenant (a port scanner), so only failures of requests to the registry itself
// keep their network cause.
std::string FailedRequestHost(std::string_view lower) {
  for (std::string_view verb : {"get \"", "head \"", "post \""}) {
    size_t at = lower.find(verb);
    if (at == std::string_view::npos) continue;
    std::string_view url = lower.substr(at + verb.size());
    size_t scheme = url.find("://");
    if (scheme == std::string_view::npos) return {};
    url.remove_prefix(scheme + 3);
    return std::string(url.substr(0, url.find_first_of("/\"")));
  }
  return {};
}

// Why a connection to the registry failed, in fixed words chosen by what skopeo says (Go's
// net/http and crypto/tls texts); never the registry's bytes (a banner, a certificate's names).
std::optional<std::string> NetworkCause(std::string_view lower, const std::string& host) {
  if (lower.find("connection refused") != std::string_view::npos) return "dial tcp: connect: connection refused";
  if (lower.find("no such host") != std::string_view::npos)
    return fmt::format("dial tcp: lookup {}: no such host", host);
  if (lower.find("network is unreachable") != std::string_view::npos)
    return "dial tcp: connect: network is unreachable";
  if (lower.find("no route to host") != std::string_view::npos) return "dial tcp: connect: no route to host";
  if (lower.find("i/o timeout") != std::string_view::npos || lower.find("deadline exceeded") != std::string_view::npos)
    return "dial tcp: i/o timeout";
  if (lower.find("connection reset") != std::string_view::npos) return "read: connection reset by peer";
  // A server that closes at once (a banner, then gone) may do so before the request is written.
  if (lower.find("broken pipe") != std::string_view::npos) return "write: broken pipe";
  if (lower.find("server gave http response to https client") != std::string_view::npos)
    return "http: server gave HTTP response to HTTPS client";
  if (lower.find("x509:") != std::string_view::npos || lower.find("certificate") != std::string_view::npos) {
    if (lower.find("unknown authority") != std::string_view::npos)
      return "tls: failed to verify certificate: x509: certificate signed by unknown authority";
    if (lower.find("expired") != std::string_view::npos)
      return "tls: failed to verify certificate: x509: certificate has expired or is not yet valid";
    if (lower.find("valid for") != std::string_view::npos)
      return fmt::format("tls: failed to verify certificate: x509: certificate is not valid for {}", host);
    return "tls: failed to verify certificate";
  }
  if (lower.find("tls:") != std::string_view::npos || lower.find("handshake") != std::string_view::npos)
    return "tls: handshake failure";
  if (lower.find("malformed http") != std::string_view::npos)
    return "net/http: HTTP/1.x transport connection broken: malformed HTTP response";
  if (lower.find("eof") != std::string_view::npos) return "EOF";
  if (lower.find("dial tcp") != std::string_view::npos) return "dial tcp: the connection failed";
  return std::nullopt;
}

// What the node's log gets: skopeo's message on one line, printable ASCII only, cut.
std::string ForLog(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, kMaxDetail)) out += (c >= ' ' && c < 127) ? c : '?';
  return out;
}

}  // namespace

Status PullFailure(const Reference& ref, std::string_view skopeo_stderr, const SkopeoOptions& options) {
  const std::string detail = SkopeoErrorDetail(skopeo_stderr);
  const std::string lower = Lower(detail);
  const std::string host = RegistryHostOf(ref.domain);
  // Where the registry is, as skopeo writes it in a URL (docker.io is registry-1.docker.io).
  const std::string registry = Lower(ref.domain == "docker.io" ? host : ref.domain);
  // A failure that is about the registry itself, not about a host it sent skopeo on to (a
  // redirect, its token realm): only those say more than that the answer could not be used.
  const bool at_registry =
      FailedRequestHost(lower) == registry && lower.find("bearer token") == std::string::npos;
  if (ContainsAny(lower, {"no image found in manifest list", "no image found in image index"})) {
    return NotFound(fmt::format("{}image Manifest does not contain descriptor matching platform '{}/{}'",
                                kManifestPrefix, options.os, options.arch));
  }
  // skopeo: "initializing source docker://REF: WHAT" when the manifest could not be had (skopeo
  // inspect: "Error parsing image name \"docker://REF\": WHAT"); anything later (blobs, writing
  // the archive) is the copy.
  constexpr std::string_view kInit = "initializing source ";
  constexpr std::string_view kInspectInit = "error parsing image name ";
  if (detail.empty() || (lower.find(kInit) == std::string::npos && lower.find(kInspectInit) == std::string::npos)) {
    std::string cause;
    if (detail.empty()) {
      cause = "skopeo failed without a message";
    } else if (auto net = NetworkCause(lower, host); net && at_registry) {
      cause = *net;
    } else if (ContainsAny(lower, {"no space left on device"})) {
      cause = "no space left on device";
    } else if (ContainsAny(lower, {"digest"}) && ContainsAny(lower, {"mismatch", "does not match", "invalid"})) {
      cause = "a blob of the image does not match its digest";
    } else if (ContainsAny(lower, {"blob unknown", "not found", "404"})) {
      cause = "a blob of the image was not found";
    } else {
      cause = "the registry's answer could not be used";
    }
    return Unavailable(fmt::format("{}{}", kCopyPrefix, cause));
  }
  const std::string resolve = ResolvePrefix(ref);
  if (!at_registry && NetworkCause(lower, host)) {
    return Unavailable(fmt::format("{}the registry's answer could not be used", resolve));
  }
  if (auto net = NetworkCause(lower, host)) {
    // containerd: failed to do request: Head "https://host/v2/…": dial tcp …: connect: connection refused
    const bool plain = lower.find("get \"http://") != std::string::npos;
    return Unavailable(fmt::format("{}failed to do request: Get \"{}://{}/v2/\": {}", resolve, plain ? "http" : "https",
                                   ref.domain == "docker.io" ? host : ref.domain, *net));
  }
  if (ContainsAny(lower, {"manifest unknown", "name unknown", "not found", "404"})) {
    return NotFound(fmt::format("{}{}: not found", resolve, ref.String()));
  }
  if (ContainsAny(lower, {"unauthorized", "authentication required", "401"})) {
    return PermissionDenied(fmt::format("{}{}authentication required", resolve, kAccessDenied));
  }
  if (ContainsAny(lower, {"denied", "insufficient_scope", "forbidden", "403"})) {
    return PermissionDenied(fmt::format("{}{}authorization failed", resolve, kAccessDenied));
  }
  return Unavailable(fmt::format("{}the registry's answer could not be used", resolve));
}

Status CheckRegistryAddress(const Reference& ref, const SkopeoOptions& options, const NodeAddresses& node) {
  if (options.local == LocalRegistries::kAllowed) return OkStatus();
  if (std::find(options.local_registries.begin(), options.local_registries.end(), ref.domain) !=
      options.local_registries.end())
    return OkStatus();
  const std::string host = RegistryHostOf(ref.domain);
  const std::string request = fmt::format("{}failed to do request: Get \"{}://{}/v2/\": ", ResolvePrefix(ref),
                                          IsInsecureRegistry(ref.domain, options) ? "http" : "https",
                                          ref.domain == "docker.io" ? host : ref.domain);
  // Checked before skopeo resolves it again; a name that does not resolve now is refused, so that
  // it cannot resolve to the node only by the time skopeo asks.
  auto addresses = ResolveRegistryHost(host);
  if (!addresses.ok()) return Unavailable(fmt::format("{}dial tcp: lookup {}: no such host", request, host));
  for (const IpAddress& a : *addresses) {
    AddressScope scope = Classify(a, node);
    if (scope == AddressScope::kRemote) continue;
    return PermissionDenied(fmt::format(
        "{}the registry {} is on this node ({}), and this node's operator does not list it in [images] "
        "local_registries",
        request, ref.domain, AddressScopeText(scope)));
  }
  return OkStatus();
}

SkopeoPuller::SkopeoPuller(SkopeoOptions options)
    : options_(std::move(options)), shutdown_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

SkopeoPuller::~SkopeoPuller() = default;

void SkopeoPuller::Shutdown() {
  if (!shutdown_fd_.valid()) return;
  uint64_t one = 1;
  // The counter only grows; a full counter (never, in practice) is still readable.
  [[maybe_unused]] ssize_t n = ::write(shutdown_fd_.get(), &one, sizeof one);
}

namespace {

// A pseudo-terminal for skopeo's stdout, wide enough that its bars keep their byte counts.
struct Pty {
  subprocess::UniqueFd master;
  subprocess::UniqueFd slave;
};

std::optional<Pty> OpenPty() {
  Pty pty{subprocess::UniqueFd(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)), {}};
  if (!pty.master.valid() || ::grantpt(pty.master.get()) != 0 || ::unlockpt(pty.master.get()) != 0)
    return std::nullopt;
  char name[128];
  if (::ptsname_r(pty.master.get(), name, sizeof name) != 0) return std::nullopt;
  pty.slave = subprocess::UniqueFd(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pty.slave.valid()) return std::nullopt;
  winsize size{};
  size.ws_row = 50;
  size.ws_col = 200;
  ::ioctl(pty.master.get(), TIOCSWINSZ, &size);
  return pty;
}

}  // namespace

Status SkopeoPuller::Copy(const Reference& ref, const std::string& archive_path, const PullContext& context,
                          CopyFlags flags, std::string* skopeo_stderr) {
  const std::string resolve = ResolvePrefix(ref);
  auto shut_down = [&] {
    return Aborted(fmt::format("{}pull abandoned: the node is shutting down", resolve));
  };
  if (!shutdown_fd_.valid()) return Internal(fmt::format("{}cannot create an eventfd", resolve));
  if (archive_path.find(':') != std::string::npos)
    return Internal(fmt::format("{}the work path {} contains ':', which skopeo cannot take", resolve, archive_path));
  pollfd sd{shutdown_fd_.get(), POLLIN, 0};
  if (::poll(&sd, 1, 0) > 0) return shut_down();

  ASSIGN_OR_RETURN(subprocess::UniqueFd err, subprocess::MakeMemfd("paddock-skopeo"));
  subprocess::UniqueFd out;  // an inspection's stdout: the manifest
  if (flags.inspect_into != nullptr) {
    ASSIGN_OR_RETURN(out, subprocess::MakeMemfd("paddock-skopeo-manifest"));
  }
  // Progress is read from skopeo's terminal output; without a caller for it, or a pty, it is quiet.
  std::optional<Pty> pty;
  if (context.progress && flags.inspect_into == nullptr) pty = OpenPty();
  flags.quiet = !pty.has_value();
  SkopeoProgress progress;
  // Where skopeo writes (SkopeoCopyArgs puts its TMPDIR there too).
  const std::string dir =
      archive_path.substr(0, archive_path.rfind('/') == std::string::npos ? 0 : archive_path.rfind('/'));
  // A task's own credentials, for this one call (never for another source than its registry).
  std::unique_ptr<TaskAuthFile> auth;
  if (context.credentials != nullptr && flags.source == nullptr) {
    ASSIGN_OR_RETURN(auth, TaskAuthFile::Write(dir, ref.domain, *context.credentials));
    flags.auth_file = &auth->path();
  }
  auto child = flags.inspect_into != nullptr
                   ? subprocess::Spawn(SkopeoInspectArgs(ref, options_, flags.auth_file),
                                       subprocess::Stdio{-1, out.get(), err.get()})
                   : subprocess::Spawn(SkopeoCopyArgs(ref, archive_path, options_, flags),
                                       subprocess::Stdio{-1, pty ? pty->slave.get() : -1, err.get()});
  if (!child.ok()) return Unavailable(fmt::format("{}cannot run skopeo: {}", resolve, child.status().message()));
  if (pty) pty->slave.Reset();  // the child holds it; the master reads EIO once the child is gone
  auto drain = [&] {
    if (!pty) return;
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(pty->master.get(), buf, sizeof buf);
      if (n <= 0) break;  // EAGAIN (nothing yet) or EIO (skopeo has closed it)
      if (progress.Feed(std::string_view(buf, static_cast<size_t>(n)))) context.progress(progress.Current());
    }
  };

  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      subprocess::KillAndReap(*child);
      return Unavailable(fmt::format("{}context deadline exceeded (skopeo did not finish within {:g} s)", kCopyPrefix,
                                     options_.timeout.count() / 1000.0));
    }
    pollfd fds[3] = {{child->pidfd.get(), POLLIN, 0}, {shutdown_fd_.get(), POLLIN, 0},
                     {pty ? pty->master.get() : -1, POLLIN, 0}};
    const int64_t slice = options_.max_bytes ? kSizeCheckInterval.count() : 60'000;
    int n = ::poll(fds, pty ? 3 : 2, static_cast<int>(std::min<int64_t>(left.count(), slice)));
    if (n < 0 && errno != EINTR) {
      int e = errno;
      subprocess::KillAndReap(*child);
      return Internal(fmt::format("{}poll: {}", resolve, std::strerror(e)));
    }
    if (n > 0 && (fds[1].revents & POLLIN)) {
      subprocess::KillAndReap(*child);
      return shut_down();
    }
    if (n > 0 && pty && fds[2].revents != 0) {
      drain();
      if ((fds[2].revents & (POLLHUP | POLLERR)) != 0 && (fds[0].revents == 0)) {
        // Nothing more will come from the terminal: stop watching it (the child still runs).
        pty.reset();
      }
    }
    if (n > 0 && fds[0].revents != 0) break;
    if (options_.max_bytes && BytesUnder(dir) > options_.max_bytes) {
      subprocess::KillAndReap(*child);
      return ResourceExhausted(fmt::format("{}the image's blobs take more than {} bytes, this node's limit "
                                           "(images.max_unpacked_bytes)",
                                           kCopyPrefix, options_.max_bytes));
    }
  }
  drain();  // what skopeo drew last
  auto exit = subprocess::WaitChild(*child, std::chrono::seconds(5));
  if (!exit.ok() || !*exit) {
    subprocess::KillAndReap(*child);
    return Internal(fmt::format("{}skopeo could not be waited for", resolve));
  }
  std::string stderr_text = subprocess::ReadMemfd(err.get(), 64 * 1024);
  if (**exit == 126 || **exit == 127)  // from env: no skopeo to run (env's own words, not a registry's)
    return Unavailable(fmt::format("{}cannot run skopeo: {}", resolve, ForLog(Trim(stderr_text))));
  if (**exit != 0) {
    // The whole story for the operator; the tenant gets PullFailure's fixed words.
    fmt::print(stderr, "paddock: pull of {} failed: skopeo exited with status {}: {}\n", ref.String(), **exit,
               ForLog(SkopeoErrorDetail(stderr_text)));
    if (Trim(stderr_text).empty()) stderr_text = fmt::format("skopeo exited with status {}", **exit);
    *skopeo_stderr = std::move(stderr_text);
    return FailedPrecondition("skopeo failed");
  }
  if (flags.inspect_into != nullptr) {
    // A manifest is at most 4 MiB (the distribution spec's advice, and Distribution's limit).
    constexpr size_t kMaxManifest = 4 << 20;
    *flags.inspect_into = subprocess::ReadMemfd(out.get(), kMaxManifest + 1);
    if (flags.inspect_into->empty() || flags.inspect_into->size() > kMaxManifest)
      return Unavailable(fmt::format("{}the registry's answer could not be used", resolve));
    return OkStatus();
  }
  struct stat st {};
  if (::stat(archive_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Internal(fmt::format("{}skopeo succeeded but wrote no {}", kCopyPrefix, archive_path));
  return OkStatus();
}

Status SkopeoPuller::Pull(const Reference& ref, const std::string& archive_path, PullContext& context) {
  return FromOwnRegistry(ref, context, [&](std::string* skopeo_stderr) -> Status {
    if (ref.digest) {
      RETURN_IF_ERROR(Copy(ref, archive_path, context, CopyFlags{}, skopeo_stderr));
      context.registry_digest = *ref.digest;
      return OkStatus();
    }
    // A tag: first the manifest it names now, whose digest is what ECS reports as imageDigest
    // (the registry's, not that of the OCI form skopeo may rewrite it into), then that manifest by
    // its digest, so a tag moved in between cannot make the image and the digest disagree.
    std::string manifest;
    CopyFlags inspect;
    inspect.inspect_into = &manifest;
    RETURN_IF_ERROR(Copy(ref, archive_path, context, inspect, skopeo_stderr));
    const Digest served = Sha256Of(manifest);
    CopyFlags copy;
    copy.pinned = &served;
    RETURN_IF_ERROR(Copy(ref, archive_path, context, copy, skopeo_stderr));
    context.registry_digest = served;
    return OkStatus();
  });
}

Status SkopeoPuller::CheckAccess(const Reference& ref, PullContext& context) {
  return FromOwnRegistry(ref, context, [&](std::string* skopeo_stderr) -> Status {
    const std::string resolve = ResolvePrefix(ref);
    std::unique_ptr<TaskAuthFile> auth;
    if (context.credentials != nullptr) {
      std::error_code ec;
      const std::string tmp = std::filesystem::temp_directory_path(ec).string();
      ASSIGN_OR_RETURN(auth, TaskAuthFile::Write(ec ? "/tmp" : tmp, ref.domain, *context.credentials));
    }
    auto r = subprocess::RunCaptured(SkopeoInspectArgs(ref, options_, auth ? &auth->path() : nullptr),
                                     std::min<std::chrono::milliseconds>(options_.timeout, std::chrono::minutes(1)));
    if (!r.ok()) return Unavailable(fmt::format("{}cannot run skopeo: {}", resolve, r.status().message()));
    if (r->exit_code == 0) return OkStatus();
    fmt::print(stderr, "paddock: access check of {} failed: skopeo exited with status {}: {}\n", ref.String(),
               r->exit_code, ForLog(SkopeoErrorDetail(r->output)));
    *skopeo_stderr = Trim(r->output).empty() ? fmt::format("skopeo exited with status {}", r->exit_code) : r->output;
    return FailedPrecondition("skopeo failed");
  });
}

Status SkopeoPuller::FromOwnRegistry(const Reference& ref, PullContext& context,
                                     const std::function<Status(std::string* skopeo_stderr)>& run) {
  // The reference's own registry is the tenant's choice: never the node itself, unless listed. A
  // refusal is no place the image was looked for (context.looked_in stays as it is); a host that
  // does not resolve is a registry that could not be reached, as skopeo would have found.
  if (Status s = CheckRegistryAddress(ref, options_, NodeAddresses::Read(options_.task_interface_prefixes)); !s.ok()) {
    if (s.code() == StatusCode::kPermissionDenied) {
      fmt::print(stderr, "paddock: pull of {} refused: {}\n", ref.String(), s.message());
    } else {
      context.looked_in.push_back(fmt::format("its registry {}", ref.domain));
    }
    return s;
  }
  std::string skopeo_stderr;
  Status s = run(&skopeo_stderr);
  if (s.code() == StatusCode::kFailedPrecondition) s = PullFailure(ref, skopeo_stderr, options_);
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kPermissionDenied ||
      s.code() == StatusCode::kUnavailable)
    context.looked_in.push_back(fmt::format("its registry {}", ref.domain));
  return s;
}

Status SkopeoPuller::PullFrom(const Reference& ref, const PullSource& source, const std::string& archive_path,
                              PullContext& context) {
  std::string skopeo_stderr;
  CopyFlags flags;
  flags.source = &source;
  Status s = Copy(ref, archive_path, context, flags, &skopeo_stderr);
  if (s.code() != StatusCode::kFailedPrecondition) return s;
  // Worded as a copy failure of `ref` (the source's own names mean nothing to the user).
  Status mapped = PullFailure(source.from, skopeo_stderr, options_);
  return Status(mapped.code() == StatusCode::kNotFound ? StatusCode::kNotFound : StatusCode::kUnavailable,
                fmt::format("{}pulling {} from {} failed: {}", kCopyPrefix, ref.String(), source.described_as,
                            ForLog(SkopeoErrorDetail(skopeo_stderr))));
}

}  // namespace paddock::agent::images
