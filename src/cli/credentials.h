// cli/credentials: the signing credentials a client command (`paddock agent`, `paddock edge`) uses:
// the profile of a credentials file when one is given, else AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, else the profile of $AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials.
//
//   ASSIGN_OR_RETURN(aws::SigningCredentials creds, ResolveCredentials(file, "paddock"));
#pragma once

#include <string>

#include "aws/sigv4.h"
#include "common/status.h"

namespace paddock::cli {

StatusOr<aws::SigningCredentials> ResolveCredentials(const std::string& credentials_file, const std::string& profile);

}  // namespace paddock::cli
