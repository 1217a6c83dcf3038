// The slice of EC2 that deployers use around their tasks, in EC2's Query protocol and XML shapes:
// DescribeVpcs and DescribeSubnets of the built-in default VPC (read-only), and security groups —
// CreateSecurityGroup, DeleteSecurityGroup, Authorize/RevokeSecurityGroupIngress/Egress,
// DescribeSecurityGroups, DescribeSecurityGroupRules — through vpc::SecurityGroups, and
// DescribeInstances of the container instances' hosts (ec2/instances.h). This file and its three
// sources are the wire codec: parameters in (decoded and checked by the embedded subset of
// botocore's EC2 model, aws::QueryModel's ec2 flavour), XML out; the owners (vpc/) see typed values.
//
//   ec2::api::Ec2Service ec2(store, security_groups, aws::TokenCodec(key));
//   front.AddQueryService(&ec2);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/pagination.h"
#include "aws/query_model.h"
#include "aws/service.h"
#include "ec2/instances.h"
#include "store/store.h"
#include "vpc/security_groups.h"

namespace paddock::ec2::api {

namespace internal {
class Input;  // internal/ec2_query.h
}  // namespace internal

class Ec2Service final : public aws::QueryService {
 public:
  // `tokens` signs DescribeSecurityGroups/DescribeSecurityGroupRules' NextToken.
  Ec2Service(store::Store& store, vpc::SecurityGroups& groups, aws::TokenCodec tokens);

  std::string_view SigningName() const override { return "ec2"; }
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  // Decodes `params` by the embedded model (MissingParameter, InvalidParameterValue when they do
  // not fit it), then serves the action.
  StatusOr<std::string> Call(const aws::CallContext& ctx, const aws::QueryParams& params) override;
  // ec2:<Action> on "*", denied in EC2's words (aws::DenialForm::kUnauthorizedOperation).
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx, const aws::QueryParams& params) const override;
  // EC2's table (ec2/api/errors.h).
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;
  // EC2's dialect: <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>.
  std::string ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const override;
  // Where DescribeInstances finds its instances (the container instances' owner). REQUIRES: set
  // before serving; without one no instance exists.
  void SetInstanceSource(InstanceSource* instances) { instances_ = instances; }

 private:
  StatusOr<std::string> DescribeVpcs(const aws::CallContext& ctx, const internal::Input& in);
  StatusOr<std::string> DescribeSubnets(const aws::CallContext& ctx, const internal::Input& in);
  // ec2_security_groups.cc
  StatusOr<std::string> CreateSecurityGroup(const aws::CallContext& ctx, const internal::Input& in);
  StatusOr<std::string> DeleteSecurityGroup(const aws::CallContext& ctx, const internal::Input& in);
  StatusOr<std::string> AuthorizeRules(const aws::CallContext& ctx, const internal::Input& in, vpc::RuleDirection d);
  StatusOr<std::string> RevokeRules(const aws::CallContext& ctx, const internal::Input& in, vpc::RuleDirection d);
  StatusOr<std::string> DescribeSecurityGroups(const aws::CallContext& ctx, const internal::Input& in);
  StatusOr<std::string> DescribeSecurityGroupRules(const aws::CallContext& ctx, const internal::Input& in);
  // ec2_describe_instances.cc
  StatusOr<std::string> DescribeInstances(const aws::CallContext& ctx, const internal::Input& in);

  store::Store& store_;
  vpc::SecurityGroups& groups_;
  aws::TokenCodec tokens_;
  InstanceSource* instances_ = nullptr;
  std::unique_ptr<aws::QueryModel> model_;  // the embedded subset (models/ec2-subset.json)
};

}  // namespace paddock::ec2::api
