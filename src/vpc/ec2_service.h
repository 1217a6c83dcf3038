// The slice of EC2 that deployers read before they run a task: DescribeVpcs, DescribeSubnets and
// DescribeSecurityGroups of the built-in default VPC, in EC2's Query protocol and XML shapes
// (read-only; filters by id, vpc-id and the common attributes).
//
//   vpc::Ec2Service ec2(store);
//   front.AddQueryService(&ec2);
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "aws/service.h"
#include "store/store.h"

namespace paddock::vpc {

class Ec2Service final : public aws::QueryService {
 public:
  explicit Ec2Service(store::Store& store) : store_(store) {}

  std::string_view SigningName() const override { return "ec2"; }
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, const aws::QueryParams& params) override;
  // EC2's dialect: <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>.
  std::string ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const override;

 private:
  StatusOr<std::string> DescribeVpcs(const aws::CallContext& ctx, const aws::QueryParams& params);
  StatusOr<std::string> DescribeSubnets(const aws::CallContext& ctx, const aws::QueryParams& params);
  StatusOr<std::string> DescribeSecurityGroups(const aws::CallContext& ctx, const aws::QueryParams& params);

  store::Store& store_;
};

}  // namespace paddock::vpc
