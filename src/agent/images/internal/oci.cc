#include "agent/images/internal/oci.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>

namespace paddock::agent::images::oci {
namespace json = boost::json;

static StatusOr<json::value> Parse(std::string_view text, std::string_view what) {
  if (text.size() > kMaxDocumentBytes)
    return InvalidArgument(fmt::format("{} is larger than {} bytes", what, kMaxDocumentBytes));
  boost::system::error_code ec;
  json::parse_options options;
  options.max_depth = 64;
  json::value v = json::parse(json::string_view(text.data(), text.size()), ec, {}, options);
  if (ec) return InvalidArgument(fmt::format("{} is not valid JSON: {}", what, ec.message()));
  return v;
}

static std::string_view Str(const json::string& s) { return {s.data(), s.size()}; }

namespace {

// The string member `key` of `o`: "" when absent, an error when not a string.
StatusOr<std::string> OptString(const json::object& o, std::string_view key, std::string_view what) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) return std::string();
  if (!it->value().is_string()) return InvalidArgument(fmt::format("{}: '{}' must be a string", what, key));
  return std::string(Str(it->value().get_string()));
}

StatusOr<std::vector<std::string>> OptStrings(const json::object& o, std::string_view key, std::string_view what) {
  std::vector<std::string> out;
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) return out;
  if (!it->value().is_array()) return InvalidArgument(fmt::format("{}: '{}' must be an array of strings", what, key));
  for (const auto& e : it->value().get_array()) {
    if (!e.is_string()) return InvalidArgument(fmt::format("{}: '{}' must be an array of strings", what, key));
    out.emplace_back(Str(e.get_string()));
  }
  return out;
}

StatusOr<const json::object*> Object(const json::value& v, std::string_view what) {
  if (!v.is_object()) return InvalidArgument(fmt::format("{} must be a JSON object", what));
  return &v.get_object();
}

StatusOr<Descriptor> ParseDescriptor(const json::value& v, std::string_view what) {
  ASSIGN_OR_RETURN(const json::object* o, Object(v, what));
  Descriptor d;
  ASSIGN_OR_RETURN(d.media_type, OptString(*o, "mediaType", what));
  ASSIGN_OR_RETURN(std::string digest, OptString(*o, "digest", what));
  auto parsed = Digest::Parse(digest);
  if (!parsed.ok()) return InvalidArgument(fmt::format("{}: {}", what, parsed.status().message()));
  d.digest = *parsed;
  auto size = o->find("size");
  if (size == o->end() || !size->value().is_number()) return InvalidArgument(fmt::format("{}: 'size' is required", what));
  boost::system::error_code ec;
  auto n = size->value().to_number<int64_t>(ec);
  if (ec || n < 0) return InvalidArgument(fmt::format("{}: 'size' must be a non-negative integer", what));
  d.size = static_cast<uint64_t>(n);
  if (auto a = o->find("annotations"); a != o->end() && a->value().is_object()) {
    for (const auto& [k, val] : a->value().get_object())
      if (val.is_string()) d.annotations.emplace(std::string(k), std::string(Str(val.get_string())));
  }
  if (auto p = o->find("platform"); p != o->end() && p->value().is_object()) {
    ASSIGN_OR_RETURN(d.platform_os, OptString(p->value().get_object(), "os", what));
    ASSIGN_OR_RETURN(d.platform_architecture, OptString(p->value().get_object(), "architecture", what));
  }
  return d;
}

json::object DescriptorJson(const Descriptor& d) {
  json::object o;
  o["mediaType"] = d.media_type;
  o["digest"] = d.digest.str();
  o["size"] = d.size;
  return o;
}

json::array StringArray(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

}  // namespace

bool IsIndexMediaType(std::string_view t) { return t == kMediaTypeIndex || t == kDockerManifestList; }
bool IsManifestMediaType(std::string_view t) { return t == kMediaTypeManifest || t == kDockerManifest; }

StatusOr<Index> ParseIndex(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text, "index.json"));
  ASSIGN_OR_RETURN(const json::object* o, Object(v, "index.json"));
  auto m = o->find("manifests");
  if (m == o->end() || !m->value().is_array()) return InvalidArgument("index.json: 'manifests' must be an array");
  Index index;
  for (const auto& e : m->value().get_array()) {
    ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor(e, "index.json manifest"));
    index.manifests.push_back(std::move(d));
  }
  return index;
}

StatusOr<Manifest> ParseManifest(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text, "image manifest"));
  ASSIGN_OR_RETURN(const json::object* o, Object(v, "image manifest"));
  Manifest m;
  ASSIGN_OR_RETURN(m.media_type, OptString(*o, "mediaType", "image manifest"));
  auto config = o->find("config");
  if (config == o->end()) return InvalidArgument("image manifest: 'config' is required");
  ASSIGN_OR_RETURN(m.config, ParseDescriptor(config->value(), "image manifest config"));
  auto layers = o->find("layers");
  if (layers == o->end() || !layers->value().is_array())
    return InvalidArgument("image manifest: 'layers' must be an array");
  for (const auto& e : layers->value().get_array()) {
    ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor(e, "image manifest layer"));
    m.layers.push_back(std::move(d));
  }
  return m;
}

StatusOr<ParsedConfig> ParseConfig(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text, "image config"));
  ASSIGN_OR_RETURN(const json::object* o, Object(v, "image config"));
  ParsedConfig out;
  ASSIGN_OR_RETURN(out.config.architecture, OptString(*o, "architecture", "image config"));
  ASSIGN_OR_RETURN(out.config.os, OptString(*o, "os", "image config"));
  if (auto c = o->find("config"); c != o->end() && c->value().is_object()) {
    const json::object& cfg = c->value().get_object();
    ASSIGN_OR_RETURN(out.config.entrypoint, OptStrings(cfg, "Entrypoint", "image config"));
    ASSIGN_OR_RETURN(out.config.cmd, OptStrings(cfg, "Cmd", "image config"));
    ASSIGN_OR_RETURN(out.config.env, OptStrings(cfg, "Env", "image config"));
    ASSIGN_OR_RETURN(out.config.working_dir, OptString(cfg, "WorkingDir", "image config"));
    ASSIGN_OR_RETURN(out.config.user, OptString(cfg, "User", "image config"));
  }
  auto rootfs = o->find("rootfs");
  if (rootfs == o->end() || !rootfs->value().is_object())
    return InvalidArgument("image config: 'rootfs' is required");
  ASSIGN_OR_RETURN(std::vector<std::string> ids, OptStrings(rootfs->value().get_object(), "diff_ids", "image config"));
  for (const auto& id : ids) {
    auto d = Digest::Parse(id);
    if (!d.ok()) return InvalidArgument(fmt::format("image config: rootfs.diff_ids: {}", d.status().message()));
    out.diff_ids.push_back(*d);
  }
  return out;
}

StatusOr<std::vector<DockerSaveImage>> ParseDockerSaveManifest(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text, "manifest.json"));
  if (!v.is_array()) return InvalidArgument("manifest.json must be a JSON array");
  std::vector<DockerSaveImage> out;
  for (const auto& e : v.get_array()) {
    ASSIGN_OR_RETURN(const json::object* o, Object(e, "manifest.json entry"));
    DockerSaveImage image;
    ASSIGN_OR_RETURN(image.config, OptString(*o, "Config", "manifest.json"));
    if (image.config.empty()) return InvalidArgument("manifest.json: an entry has no 'Config'");
    ASSIGN_OR_RETURN(image.repo_tags, OptStrings(*o, "RepoTags", "manifest.json"));
    ASSIGN_OR_RETURN(image.layers, OptStrings(*o, "Layers", "manifest.json"));
    out.push_back(std::move(image));
  }
  return out;
}

std::string EncodeManifest(const Descriptor& config, const std::vector<Descriptor>& layers) {
  json::object o;
  o["schemaVersion"] = 2;
  o["mediaType"] = kMediaTypeManifest;
  o["config"] = DescriptorJson(config);
  json::array a;
  for (const auto& l : layers) a.emplace_back(DescriptorJson(l));
  o["layers"] = std::move(a);
  return json::serialize(o);
}

std::string EncodeIndex(const Descriptor& manifest) {
  json::object o;
  o["schemaVersion"] = 2;
  o["manifests"] = json::array{DescriptorJson(manifest)};
  return json::serialize(o);
}

std::string EncodeConfig(const ImageConfig& config, const std::vector<Digest>& diff_ids) {
  json::object o;
  o["architecture"] = config.architecture.empty() ? "amd64" : config.architecture;
  o["os"] = config.os.empty() ? "linux" : config.os;
  json::object c;
  if (!config.entrypoint.empty()) c["Entrypoint"] = StringArray(config.entrypoint);
  if (!config.cmd.empty()) c["Cmd"] = StringArray(config.cmd);
  if (!config.env.empty()) c["Env"] = StringArray(config.env);
  if (!config.working_dir.empty()) c["WorkingDir"] = config.working_dir;
  if (!config.user.empty()) c["User"] = config.user;
  o["config"] = std::move(c);
  json::object rootfs;
  rootfs["type"] = "layers";
  json::array ids;
  for (const auto& d : diff_ids) ids.emplace_back(d.str());
  rootfs["diff_ids"] = std::move(ids);
  o["rootfs"] = std::move(rootfs);
  return json::serialize(o);
}

std::string EncodeRecord(const ImageInfo& info) {
  json::object o;
  o["reference"] = info.reference;
  o["manifestDigest"] = info.manifest_digest.str();
  o["configDigest"] = info.config_digest.str();
  json::array layers;
  for (const auto& l : info.layers) {
    json::object lo;
    lo["digest"] = l.digest.str();
    lo["diffId"] = l.diff_id.str();
    lo["size"] = l.size;
    lo["mediaType"] = l.media_type;
    layers.emplace_back(std::move(lo));
  }
  o["layers"] = std::move(layers);
  o["size"] = info.size;
  o["createdAt"] = static_cast<double>(EpochMillis(info.created_at)) / 1000.0;
  if (info.pulled_with_credentials) o["pulledWithCredentials"] = true;
  if (info.registry_digest) o["registryDigest"] = info.registry_digest->str();
  return json::serialize(o);
}

StatusOr<ImageInfo> DecodeRecord(std::string_view text) {
  auto corrupt = [](std::string_view why) { return DataLoss(fmt::format("corrupt image record: {}", why)); };
  auto v = Parse(text, "image record");
  if (!v.ok() || !v->is_object()) return corrupt("not a JSON object");
  const json::object& o = v->get_object();
  ImageInfo info;
  auto str = [&](const json::object& obj, std::string_view key) -> std::string {
    auto it = obj.find(key);
    return it != obj.end() && it->value().is_string() ? std::string(Str(it->value().get_string())) : std::string();
  };
  auto num = [&](const json::object& obj, std::string_view key) -> double {
    auto it = obj.find(key);
    return it != obj.end() && it->value().is_number() ? it->value().to_number<double>() : 0.0;
  };
  info.reference = str(o, "reference");
  auto manifest = Digest::Parse(str(o, "manifestDigest"));
  auto config = Digest::Parse(str(o, "configDigest"));
  if (info.reference.empty() || !manifest.ok() || !config.ok()) return corrupt("missing reference or digests");
  info.manifest_digest = *manifest;
  info.config_digest = *config;
  auto layers = o.find("layers");
  if (layers == o.end() || !layers->value().is_array()) return corrupt("no layers");
  for (const auto& e : layers->value().get_array()) {
    if (!e.is_object()) return corrupt("a layer is not an object");
    const json::object& lo = e.get_object();
    auto digest = Digest::Parse(str(lo, "digest"));
    auto diff_id = Digest::Parse(str(lo, "diffId"));
    if (!digest.ok() || !diff_id.ok()) return corrupt("a layer's digests");
    info.layers.push_back(Layer{*digest, *diff_id, static_cast<uint64_t>(num(lo, "size")), str(lo, "mediaType")});
  }
  info.size = static_cast<uint64_t>(num(o, "size"));
  info.created_at = FromEpochMillis(static_cast<int64_t>(std::llround(num(o, "createdAt") * 1000.0)));
  if (auto p = o.find("pulledWithCredentials"); p != o.end() && p->value().is_bool())
    info.pulled_with_credentials = p->value().get_bool();
  if (auto d = Digest::Parse(str(o, "registryDigest")); d.ok()) info.registry_digest = *d;
  return info;
}

}  // namespace paddock::agent::images::oci

namespace paddock::agent::images {

StatusOr<std::vector<std::string>> ParseCommand(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\n");
  std::vector<std::string> out;
  if (first != std::string_view::npos && text[first] == '[') {
    auto v = oci::Parse(text, "the command");
    if (!v.ok() || !v->is_array())
      return InvalidArgument(fmt::format("'{}' is not a JSON array of strings", text));
    for (const auto& e : v->get_array()) {
      if (!e.is_string()) return InvalidArgument(fmt::format("'{}' is not a JSON array of strings", text));
      out.emplace_back(oci::Str(e.get_string()));
    }
    return out;
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of(" \t\n", start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace paddock::agent::images
