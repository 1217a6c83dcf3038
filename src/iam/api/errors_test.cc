// IAM's error table (iam/api/errors.h) against the embedded model's error shapes.
#include "iam/api/errors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "aws/query_model.h"
#include "iam/api/models/iam_model.h"

namespace paddock::iam::api {
namespace {

TEST(IamErrorsTest, EveryErrorHasItsOwnCodeWithTheModelsStatus) {
  auto model = aws::QueryModel::Parse(IamModelJson());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::set<std::string> codes;
  for (int i = 1; i <= static_cast<int>(Error::kValidation); ++i) {
    std::optional<aws::AwsError> e = IamErrorFor(InvalidArgument("x", static_cast<Error>(i)));
    ASSERT_TRUE(e.has_value()) << i;
    EXPECT_TRUE(codes.insert(e->type).second) << e->type;
    // ValidationError is the Query protocol's, not a shape of IAM's model.
    if (e->type != "ValidationError") {
      EXPECT_EQ((*model)->ErrorStatus(e->type), e->http_status) << e->type;
    }
  }
  EXPECT_EQ(IamErrorFor(NotFound("x", Error::kNoSuchEntity))->http_status, 404);
  EXPECT_EQ(IamErrorFor(AlreadyExists("x", Error::kEntityAlreadyExists))->http_status, 409);
  EXPECT_EQ(IamErrorFor(ResourceExhausted("x", Error::kLimitExceeded))->type, "LimitExceeded");
  EXPECT_EQ(IamErrorFor(InvalidArgument("x", Error::kValidation))->http_status, 400);
}

// What has no IAM detail is answered in IAM's generic words, by status code.
TEST(IamErrorsTest, OtherFailuresGetIamsGenericCodes) {
  auto answer = [](const Status& s) { return IamErrorFor(s).value_or(aws::AwsError{"(front)", 0}); };
  EXPECT_EQ(answer(PermissionDenied("x")).type, "AccessDenied");
  EXPECT_EQ(answer(PermissionDenied("x")).http_status, 403);
  EXPECT_EQ(answer(Unauthenticated("x", aws::Error::kUnrecognizedClient)).type, "InvalidClientTokenId");
  EXPECT_EQ(answer(Unauthenticated("x", aws::Error::kUnrecognizedClient)).http_status, 403);
  EXPECT_EQ(answer(Unauthenticated("x")).type, "InvalidClientTokenId");
  EXPECT_EQ(answer(InvalidArgument("x")).type, "InvalidInput");
  EXPECT_EQ(answer(NotFound("x")).type, "InvalidInput");
  EXPECT_EQ(answer(FailedPrecondition("x")).http_status, 400);
  EXPECT_EQ(answer(Internal("x")).type, "ServiceFailure");
  EXPECT_EQ(answer(Unavailable("x")).http_status, 500);
  // The front's own failures keep the shared words (aws::AwsErrorFor).
  EXPECT_EQ(answer(InvalidArgument("x", aws::Error::kInvalidAction)).type, "(front)");
  EXPECT_EQ(answer(Unauthenticated("x", aws::Error::kExpiredToken)).type, "(front)");
  EXPECT_EQ(answer(ResourceExhausted("x")).type, "(front)");
}

}  // namespace
}  // namespace paddock::iam::api
