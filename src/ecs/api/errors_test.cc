#include "ecs/api/errors.h"

#include <gtest/gtest.h>

#include "sched/lease.h"

namespace paddock::ecs::api {
namespace {

TEST(EcsErrorsTest, ADetailMapsToItsAwsCodeAndStatus) {
  const Status s = NotFound("Cluster not found.", Error::kClusterNotFound);
  std::optional<aws::AwsError> e = EcsErrorFor(s);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->type, "ClusterNotFoundException");
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(AnswerFor(FailedPrecondition("x", Error::kServiceNotActive)).type, "ServiceNotActiveException");
  EXPECT_EQ(AnswerFor(InvalidArgument("x", Error::kClient)).type, "ClientException");
  EXPECT_EQ(AnswerFor(NotFound("x", Error::kInvalidParameter)).type, "InvalidParameterException");
}

TEST(EcsErrorsTest, EveryCodeReadsBackAsItsDetail) {
  for (int code = static_cast<int>(Error::kInvalidParameter); code <= static_cast<int>(Error::kUnsupportedFeature);
       ++code) {
    const Error e = static_cast<Error>(code);
    std::optional<aws::AwsError> mapped = EcsErrorFor(InvalidArgument("x", e));
    ASSERT_TRUE(mapped.has_value()) << ErrorDetail(e).ToString() << " has no row in ECS's table";
    EXPECT_EQ(EcsErrorFromAwsCode(mapped->type), e) << mapped->type;
  }
  EXPECT_EQ(EcsErrorFromAwsCode("ThrottlingException"), std::nullopt);
}

TEST(EcsErrorsTest, AnUnknownDetailFallsBackToTheCodesDefault) {
  // Not ECS's vocabulary: the table answers nothing and the front's default applies.
  const Status lost = FailedPrecondition("scheduler lease: expired", sched::Error::kLeaseLost);
  EXPECT_EQ(EcsErrorFor(lost), std::nullopt);
  EXPECT_EQ(AnswerFor(lost).type, "ClientException");
  EXPECT_EQ(AnswerFor(lost).http_status, 400);
  EXPECT_EQ(EcsErrorFor(Internal("x")), std::nullopt);
  EXPECT_EQ(AnswerFor(Internal("x")).type, "ServerException");
  EXPECT_EQ(AnswerFor(Internal("x")).http_status, 500);
  // aws/'s own codes pass through ECS's table.
  EXPECT_EQ(AnswerFor(InvalidArgument("x", aws::Error::kSerialization)).type, "SerializationException");
}

TEST(EcsErrorsTest, ADetailNamesItselfInLogs) {
  EXPECT_EQ(NotFound("Cluster not found.", Error::kClusterNotFound).ToString(),
            "NOT_FOUND (ecs.ClusterNotFound): Cluster not found.");
  EXPECT_TRUE(IsError(NotFound("x", Error::kClusterNotFound), Error::kClusterNotFound));
  EXPECT_FALSE(IsError(NotFound("x", Error::kClusterNotFound), Error::kServiceNotFound));
  EXPECT_FALSE(IsError(NotFound("x"), Error::kClusterNotFound));
}

}  // namespace
}  // namespace paddock::ecs::api
