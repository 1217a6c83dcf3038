// Settings of `paddock server` and `paddock up`: defaults, then a TOML config file, then flags.
//
//   # paddock.toml
//   listen = "127.0.0.1:4566"
//   state_dir = "./.paddock"
//   accept_any_credentials = false
//   default_account = "000000000000"
//   api_rate_limits = "off"        # or "aws"
#pragma once

#include <string>

#include "common/status.h"

namespace paddock::cli {

struct ServerConfig {
  std::string listen = "127.0.0.1:4566";
  std::string state_dir = "./.paddock";
  bool accept_any_credentials = false;
  std::string default_account = "000000000000";
  std::string api_rate_limits = "off";  // "aws" | "off"
  std::string region = "us-east-1";     // the region written into the AWS profile
};

// Reads the keys above from a TOML file into `config`; unknown keys are an error.
Status LoadConfigFile(const std::string& path, ServerConfig& config);
// Checks values (listen is HOST:PORT, api_rate_limits is aws|off, default_account 12 digits).
Status ValidateConfig(const ServerConfig& config);
// Splits "HOST:PORT".
StatusOr<std::pair<std::string, uint16_t>> SplitListen(const std::string& listen);

}  // namespace paddock::cli
