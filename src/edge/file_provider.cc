#include "edge/file_provider.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include "edge/dynamic.h"
#include "edge/merge.h"
#include "edge/go_template.h"

namespace paddock::edge {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxYamlNodes = 1'000'000;
constexpr int kMaxYamlDepth = 64;

struct YamlWalk {
  size_t nodes = 0;

  StatusOr<json::value> Convert(const YAML::Node& node, int depth) {
    if (++nodes > kMaxYamlNodes) return InvalidArgument(fmt::format("more than {} YAML nodes", kMaxYamlNodes));
    if (depth > kMaxYamlDepth) return InvalidArgument(fmt::format("YAML nested deeper than {}", kMaxYamlDepth));
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return json::value(nullptr);
      case YAML::NodeType::Scalar: {
        // A plain scalar's tag is "?"; quoted ones ("!") are always text.
        const std::string& s = node.Scalar();
        if (node.Tag() == "?" && (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"))
          return json::value(nullptr);
        return json::value(json::string(s));
      }
      case YAML::NodeType::Sequence: {
        json::array out;
        for (const YAML::Node& item : node) {
          ASSIGN_OR_RETURN(json::value v, Convert(item, depth + 1));
          out.push_back(std::move(v));
        }
        return json::value(std::move(out));
      }
      case YAML::NodeType::Map: {
        json::object out;
        for (const auto& kv : node) {
          if (!kv.first.IsScalar())
            return InvalidArgument(fmt::format("line {}: a mapping key must be a scalar", kv.first.Mark().line + 1));
          ASSIGN_OR_RETURN(json::value v, Convert(kv.second, depth + 1));
          const std::string& key = kv.first.Scalar();
          if (out.contains(key))
            return InvalidArgument(fmt::format("line {}: the key \"{}\" appears twice", kv.first.Mark().line + 1, key));
          out[key] = std::move(v);
        }
        return json::value(std::move(out));
      }
    }
    return json::value(nullptr);
  }
};

json::value TomlNodeToJson(const toml::node& node) {
  if (const toml::table* t = node.as_table()) {
    json::object out;
    for (const auto& [k, v] : *t) out[std::string(k.str())] = TomlNodeToJson(v);
    return out;
  }
  if (const toml::array* a = node.as_array()) {
    json::array out;
    for (const toml::node& v : *a) out.push_back(TomlNodeToJson(v));
    return out;
  }
  if (auto s = node.value_exact<std::string>()) return json::string(*s);
  if (auto i = node.value_exact<int64_t>()) return *i;
  if (auto d = node.value_exact<double>()) return *d;
  if (auto b = node.value_exact<bool>()) return *b;
  std::ostringstream text;  // dates and times
  node.visit([&](const auto& v) { text << v; });
  return json::string(text.str());
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsSupported(const fs::path& path) {
  const std::string ext = Lower(path.extension().string());
  return ext == ".toml" || ext == ".yaml" || ext == ".yml";
}

// Traefik's walk: each directory's entries by name; a subdirectory's files where it sorts; files
// of other extensions skipped. `prefix` names the files as Traefik's origins ("sub/a.yml").
Status Collect(const fs::path& dir, const std::string& prefix, std::vector<std::pair<std::string, fs::path>>& out,
               int depth) {
  if (depth > 32) return InvalidArgument(fmt::format("{}: directories nested deeper than 32", dir.string()));
  std::error_code ec;
  std::vector<fs::directory_entry> entries;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
  if (ec) return InvalidArgument(fmt::format("reading directory {}: {}", dir.string(), ec.message()));
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  for (const fs::directory_entry& e : entries) {
    const std::string name = prefix.empty() ? e.path().filename().string() : prefix + "/" + e.path().filename().string();
    if (e.is_directory(ec)) {
      RETURN_IF_ERROR(Collect(e.path(), name, out, depth + 1));
      continue;
    }
    if (IsSupported(e.path())) out.emplace_back(name, e.path());
  }
  return OkStatus();
}

}  // namespace

StatusOr<json::value> YamlToJson(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("YAML: line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (root.IsNull() || !root.IsDefined()) return json::value(json::object());
  YamlWalk walk;
  try {
    return walk.Convert(root, 0);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("YAML: {}", e.what()));
  }
}

StatusOr<json::value> TomlToJson(std::string_view text) {
  try {
    toml::table table = toml::parse(text);
    return TomlNodeToJson(table);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("TOML: line {}, column {}: {}", e.source().begin.line,
                                       e.source().begin.column, e.description()));
  }
}

StatusOr<json::object> ReadDynamicFile(const std::string& path) {
  const std::string ext = Lower(fs::path(path).extension().string());
  if (ext != ".toml" && ext != ".yaml" && ext != ".yml")
    return InvalidArgument(fmt::format("unsupported file extension for file {}", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("error reading configuration file: {}", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  // Traefik renders every file as a Go template first (pkg/provider/file), named by its path.
  StatusOr<std::string> text = RenderGoTemplate(buffer.str(), path);
  if (!text.ok()) return text.status();
  StatusOr<json::value> tree = ext == ".toml" ? TomlToJson(*text) : YamlToJson(*text);
  if (!tree.ok()) return InvalidArgument(fmt::format("{}: {}", path, tree.status().message()));
  if (!tree->is_object()) return InvalidArgument(fmt::format("{}: the document is not a mapping", path));
  StatusOr<json::object> checked = CheckDynamic(*tree);
  if (!checked.ok()) return InvalidArgument(fmt::format("{}: {}", path, checked.status().message()));
  return checked;
}

FileProvider::FileProvider(FileProviderOptions options) : options_(std::move(options)) {}
FileProvider::~FileProvider() { Stop(); }

StatusOr<json::object> FileProvider::Current() const {
  std::lock_guard lock(mu_);
  if (!have_) return Unavailable(fmt::format("no configuration read yet: {}", last_error_));
  return current_;
}

Status FileProvider::Start() {
  if (options_.filename.empty() == options_.directory.empty())
    return InvalidArgument("the file provider takes a filename or a directory (one of them)");
  if (!options_.filename.empty() && !IsSupported(options_.filename))
    return InvalidArgument(fmt::format("unsupported file extension for file {}", options_.filename));
  CheckForChanges();
  thread_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void FileProvider::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FileProvider::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (cv_.wait_for(lock, options_.watch_interval, [&] { return stop_; })) break;
    lock.unlock();
    CheckForChanges();
    lock.lock();
  }
}

std::string FileProvider::Fingerprint() const {
  std::vector<std::pair<std::string, fs::path>> files;
  std::string print;
  if (!options_.filename.empty()) {
    files.emplace_back(options_.filename, options_.filename);
  } else if (Status s = Collect(options_.directory, "", files, 0); !s.ok()) {
    return "error: " + std::string(s.message());
  }
  for (const auto& [name, path] : files) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      print += fmt::format("{}:missing\n", name);
      continue;
    }
    print += fmt::format("{}:{}:{}:{}.{}\n", name, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }
  return print;
}

bool FileProvider::CheckForChanges() {
  std::string print = Fingerprint();
  if (fingerprinted_ && print == fingerprint_) return false;
  fingerprint_ = std::move(print);
  fingerprinted_ = true;
  (void)Reload();
  return true;
}

Status FileProvider::Reload() {
  StatusOr<json::object> next = [&]() -> StatusOr<json::object> {
    if (!options_.filename.empty()) return ReadDynamicFile(options_.filename);
    std::vector<std::pair<std::string, fs::path>> files;
    RETURN_IF_ERROR(Collect(options_.directory, "", files, 0));
    std::vector<NamedConfiguration> parts;
    for (const auto& [name, path] : files) {
      ASSIGN_OR_RETURN(json::object c, ReadDynamicFile(path.string()));
      parts.push_back({name, std::move(c)});
    }
    MergedConfiguration merged = MergeConfigurations(std::move(parts), MergeStrategy::kSkipDuplicates);
    for (const std::string& e : merged.errors) fmt::print(stderr, "paddock: edge: file provider: {}\n", e);
    return std::move(merged.config);
  }();
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    if (!next.ok()) {
      const std::string error(next.status().message());
      if (error != last_error_)
        fmt::print(stderr, "paddock: edge: file provider: {} (keeping the last good configuration)\n", error);
      last_error_ = error;
      return next.status();
    }
    last_error_.clear();
    changed = !have_ || current_ != *next;
    current_ = std::move(*next);
    have_ = true;
  }
  if (changed && wake_) wake_();
  return OkStatus();
}

}  // namespace paddock::edge
