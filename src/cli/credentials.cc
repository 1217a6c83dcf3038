#include "cli/credentials.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace paddock::cli {
namespace {

namespace fs = std::filesystem;

// The [profile] section's aws_access_key_id and aws_secret_access_key of an INI credentials file.
StatusOr<aws::SigningCredentials> ReadCredentials(const std::string& path, const std::string& profile) {
  std::ifstream in(path);
  if (!in) return NotFound(fmt::format("cannot read credentials file {}", path));
  aws::SigningCredentials c;
  std::string line;
  bool in_section = false;
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
    return s;
  };
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      in_section = line == "[" + profile + "]";
      continue;
    }
    if (!in_section) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty())
    return NotFound(fmt::format("profile '{}' in {} has no aws_access_key_id and aws_secret_access_key", profile, path));
  return c;
}

}  // namespace

StatusOr<aws::SigningCredentials> ResolveCredentials(const std::string& credentials_file, const std::string& profile) {
  if (!credentials_file.empty()) return ReadCredentials(credentials_file, profile);
  const char* id = std::getenv("AWS_ACCESS_KEY_ID");
  const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (id != nullptr && secret != nullptr && *id && *secret) return aws::SigningCredentials{id, secret};
  if (const char* file = std::getenv("AWS_SHARED_CREDENTIALS_FILE")) return ReadCredentials(file, profile);
  if (const char* home = std::getenv("HOME")) return ReadCredentials(fs::path(home) / ".aws" / "credentials", profile);
  return NotFound("no credentials: give --credentials or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
}


}  // namespace paddock::cli
