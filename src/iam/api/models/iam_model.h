// botocore's iam/2010-05-08/service-2.json without documentation (tools/trim_botocore_model.py),
// embedded by cmake/embed.cmake.
#pragma once

#include <string_view>

namespace paddock::iam::api {

std::string_view IamModelJson();

}  // namespace paddock::iam::api
