// cli/aws_profile: the name of the AWS profile `paddock up` writes, so two Paddocks on one host
// never clobber each other's profile (finding 14 of the 2026-12 security review).
//
// The profile is "paddock" unless the user's AWS files already hold a "paddock" profile of
// another Paddock (another access key, or another endpoint with no key of ours); then it is named
// after the state directory, "paddock-<dir>" (the directory's name, or its parent's when it is the
// default ".paddock"), and when that is taken too, "paddock-<dir>-<8 hex digits of the path>".
// A profile holding this server's own key is reused whatever its endpoint (the same server on a
// new port), before any other name: a restart keeps the name it had.
//
//   ProfileFiles home = HomeProfileFiles();                    // AWS_SHARED_CREDENTIALS_FILE, ...
//   std::string name = ChooseProfileName(home, state_dir, endpoint, key_id);
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace paddock::cli {

struct ProfileFiles {
  std::string credentials;  // INI: [name] aws_access_key_id, aws_secret_access_key
  std::string config;       // INI: [profile name] region, output, endpoint_url
};

// The user's AWS files: $AWS_SHARED_CREDENTIALS_FILE and $AWS_CONFIG_FILE, else ~/.aws/credentials
// and ~/.aws/config. nullopt when neither the variables nor HOME say where they are.
std::optional<ProfileFiles> HomeProfileFiles();

// The value of `key` in section `[section]` of INI file `path`; nullopt when the file, the section
// or the key is missing. Keys and section names compare exactly; surrounding blanks are trimmed.
std::optional<std::string> IniValue(const std::string& path, std::string_view section, std::string_view key);
// Whether INI file `path` has the section `[section]`.
bool IniHasSection(const std::string& path, std::string_view section);

// "paddock-<dir>" for `state_dir`, made of [a-z0-9-] only (safe in an INI section name and on a
// command line), at most 48 characters.
std::string StateDirProfileName(const std::string& state_dir);

// The body of the profile's section in the AWS config file: region, output, the endpoint, and
// `disable_host_prefix_injection = true` — botocore (boto3, the AWS CLI v1) otherwise prefixes the
// endpoint's host for some operations (StartLiveTail's "stream-", Cloud Map DiscoverInstances'
// "data-"), and "stream-127.0.0.1" resolves nowhere (tests/test_aws_profile.py). Debian 12's AWS CLI
// v2 (2.9) predates the key and ignores it (README).
std::string ProfileConfigBody(std::string_view region, std::string_view endpoint);

// The profile name for a server with access key `key_id` at `endpoint` and state directory
// `state_dir`, given the user's files `home` (see the rule above).
std::string ChooseProfileName(const ProfileFiles& home, const std::string& state_dir, const std::string& endpoint,
                              const std::string& key_id);

}  // namespace paddock::cli
