#include "cli/aws_profile.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace paddock::cli {
namespace fs = std::filesystem;

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Calls `line(section, key, value)` for each key line of `path` (section "" before any header)
// and `line(section, "", "")` for each header.
template <typename F>
void ForEachIniLine(const std::string& path, F line) {
  std::ifstream in(path);
  std::string text, section;
  while (std::getline(in, text)) {
    std::string_view t = Trim(text);
    if (t.empty() || t.front() == '#' || t.front() == ';') continue;
    if (t.front() == '[' && t.back() == ']') {
      section = std::string(Trim(t.substr(1, t.size() - 2)));
      line(section, std::string_view(), std::string_view());
      continue;
    }
    size_t eq = t.find('=');
    if (eq == std::string_view::npos) continue;
    line(std::string_view(section), Trim(t.substr(0, eq)), Trim(t.substr(eq + 1)));
  }
}

// The name is free, or already this server's.
bool Usable(const ProfileFiles& home, const std::string& name, const std::string& endpoint, const std::string& key_id) {
  const std::string config_section = "profile " + name;
  std::optional<std::string> key = IniValue(home.credentials, name, "aws_access_key_id");
  if (key) return *key == key_id;  // ours whatever its endpoint: the same server on a new port
  if (IniHasSection(home.credentials, name)) return false;  // someone's profile of another kind
  if (!IniHasSection(home.config, config_section)) return true;
  return IniValue(home.config, config_section, "endpoint_url") == endpoint;
}

uint32_t PathHash(const std::string& path) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : path) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

std::optional<ProfileFiles> HomeProfileFiles() {
  const char* home = std::getenv("HOME");
  const char* cred_env = std::getenv("AWS_SHARED_CREDENTIALS_FILE");
  const char* config_env = std::getenv("AWS_CONFIG_FILE");
  if ((cred_env == nullptr || config_env == nullptr) && (home == nullptr || *home == '\0')) return std::nullopt;
  ProfileFiles f;
  f.credentials = cred_env ? std::string(cred_env) : (fs::path(home) / ".aws" / "credentials").string();
  f.config = config_env ? std::string(config_env) : (fs::path(home) / ".aws" / "config").string();
  return f;
}

std::optional<std::string> IniValue(const std::string& path, std::string_view section, std::string_view key) {
  std::optional<std::string> out;
  ForEachIniLine(path, [&](std::string_view s, std::string_view k, std::string_view v) {
    if (!out && s == section && k == key) out = std::string(v);
  });
  return out;
}

bool IniHasSection(const std::string& path, std::string_view section) {
  bool found = false;
  ForEachIniLine(path, [&](std::string_view s, std::string_view k, std::string_view) {
    if (k.empty() && s == section) found = true;
  });
  return found;
}

std::string StateDirProfileName(const std::string& state_dir) {
  fs::path p = fs::absolute(state_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // a trailing slash
  std::string dir = p.filename().string();
  // The default ".paddock" says nothing: the project directory holding it does.
  if ((dir == ".paddock" || dir == "paddock") && p.has_parent_path() && !p.parent_path().filename().empty())
    dir = p.parent_path().filename().string();
  std::string safe;
  for (unsigned char c : dir) {
    char lower = static_cast<char>(std::tolower(c));
    bool ok = std::isalnum(c) != 0;
    if (ok) {
      safe += lower;
    } else if (!safe.empty() && safe.back() != '-') {
      safe += '-';
    }
  }
  while (!safe.empty() && safe.back() == '-') safe.pop_back();
  if (safe.empty()) safe = "state";
  std::string name = "paddock-" + safe;
  if (name.size() > 48) name.resize(48);
  while (name.back() == '-') name.pop_back();
  return name;
}

std::string ProfileConfigBody(std::string_view region, std::string_view endpoint) {
  return fmt::format("region = {}\noutput = json\nendpoint_url = {}\ndisable_host_prefix_injection = true\n", region,
                     endpoint);
}

std::string ChooseProfileName(const ProfileFiles& home, const std::string& state_dir, const std::string& endpoint,
                              const std::string& key_id) {
  const std::string named = StateDirProfileName(state_dir);
  const std::string candidates[] = {
      "paddock", named, fmt::format("{}-{:08x}", named, PathHash(fs::absolute(state_dir).lexically_normal().string()))};
  // The name that already holds this server's key first: a restart keeps its name even when an
  // earlier choice has become free since.
  for (const std::string& name : candidates)
    if (IniValue(home.credentials, name, "aws_access_key_id") == key_id) return name;
  for (const std::string& name : candidates)
    if (Usable(home, name, endpoint, key_id)) return name;
  return candidates[2];
}

}  // namespace paddock::cli
