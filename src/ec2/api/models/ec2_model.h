// EC2's API model embedded in the binary: the slice of botocore's ec2/2016-11-15/service-2.json
// that Paddock serves (ec2-subset.json, cut and checked by tools/gen_ec2_model.py), embedded by
// ec2/api/CMakeLists.txt (paddock_embed).
#pragma once

#include <string_view>

namespace paddock::ec2::api {

std::string_view Ec2ModelJson();

}  // namespace paddock::ec2::api
