// STS's API model embedded in the binary: botocore's sts/2011-06-15/service-2.json without
// documentation (tools/trim_botocore_model.py sts -o src/sts/api/models/sts-2011-06-15.json).
#pragma once

#include <string_view>

namespace paddock::sts {

std::string_view StsModelJson();

}  // namespace paddock::sts
