// Secrets Manager's botocore model, the served slice (secretsmanager-2017-10-17.json, cut by
// tools/gen_model_slice.py), embedded by cmake/embed.cmake.
#pragma once

#include <string_view>

namespace paddock::secretsmanager::api {

std::string_view SecretsManagerModelJson();

}  // namespace paddock::secretsmanager::api
