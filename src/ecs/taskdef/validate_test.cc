#include "ecs/taskdef/validate.h"
#include "ecs/api/errors.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace paddock::ecs::taskdef {
namespace {
namespace json = boost::json;

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }

std::string ErrorOf(std::string_view text) {
  auto r = ValidateRegister(Parse(text));
  return r.ok() ? "OK" : api::AnswerFor(r.status()).type + ": " + r.status().message();
}

TEST(NormalizeTest, CpuForms) {
  EXPECT_EQ(*NormalizeCpu("1024"), "1024");
  EXPECT_EQ(*NormalizeCpu("1 vCPU"), "1024");
  EXPECT_EQ(*NormalizeCpu("0.25 vcpu"), "256");
  EXPECT_EQ(*NormalizeCpu("2vCPU"), "2048");
  EXPECT_FALSE(NormalizeCpu("lots").ok());
  EXPECT_FALSE(NormalizeCpu("1 GHz").ok());
}

TEST(NormalizeTest, MemoryForms) {
  EXPECT_EQ(*NormalizeMemory("512"), "512");
  EXPECT_EQ(*NormalizeMemory("2 GB"), "2048");
  EXPECT_EQ(*NormalizeMemory("1.5GB"), "1536");
  EXPECT_EQ(*NormalizeMemory("512 MiB"), "512");
  EXPECT_FALSE(NormalizeMemory("2 TB").ok());
}

TEST(NormalizeTest, RefusesSizesThatWouldOverflow) {
  EXPECT_FALSE(NormalizeCpu("4294967552").ok());
  EXPECT_FALSE(NormalizeCpu("1e22").ok());
  EXPECT_FALSE(NormalizeMemory("4294967808").ok());
  EXPECT_FALSE(NormalizeMemory("99999999 GB").ok());
  EXPECT_EQ(*NormalizeMemory("60 GB"), "61440");
  // A huge value can no longer pass as a small Fargate size.
  auto r = ValidateRegister(json::parse(R"({"family":"f","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],
      "cpu":"4294967552","memory":"4294967808","containerDefinitions":[{"name":"a","image":"x"}]})").as_object());
  EXPECT_FALSE(r.ok());
}

TEST(FargateSizeTest, MatchesAwsTable) {
  EXPECT_TRUE(IsFargateSize(256, 512));
  EXPECT_TRUE(IsFargateSize(256, 2048));
  EXPECT_FALSE(IsFargateSize(256, 3072));
  EXPECT_TRUE(IsFargateSize(512, 4096));
  EXPECT_FALSE(IsFargateSize(512, 512));
  EXPECT_TRUE(IsFargateSize(4096, 30720));
  EXPECT_FALSE(IsFargateSize(4096, 31744));
  EXPECT_TRUE(IsFargateSize(8192, 20480));
  EXPECT_FALSE(IsFargateSize(8192, 18432));  // 4 GiB steps
  EXPECT_TRUE(IsFargateSize(16384, 40960));
  EXPECT_FALSE(IsFargateSize(16384, 36864));  // 8 GiB steps
  EXPECT_FALSE(IsFargateSize(3000, 4096));
}

constexpr std::string_view kNginx = R"({"family":"web","containerDefinitions":[{"name":"app","image":"nginx","memory":128}]})";

TEST(ValidateRegisterTest, FillsAwsDefaults) {
  auto r = ValidateRegister(Parse(kNginx));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& cd = r->definition.at("containerDefinitions").as_array()[0].as_object();
  EXPECT_EQ(cd.at("cpu"), 0);
  EXPECT_EQ(cd.at("essential"), true);
  EXPECT_TRUE(cd.at("portMappings").as_array().empty());
  EXPECT_TRUE(cd.at("environment").as_array().empty());
  EXPECT_TRUE(r->definition.at("volumes").as_array().empty());
  EXPECT_EQ(r->compatibilities, (std::vector<std::string>{"EXTERNAL", "EC2"}));
}

TEST(ValidateRegisterTest, FargateNormalizesAndComputesCompatibilities) {
  auto r = ValidateRegister(Parse(R"({"family":"f","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],
      "cpu":"0.5 vCPU","memory":"1 GB",
      "containerDefinitions":[{"name":"app","image":"nginx","portMappings":[{"containerPort":80}]}]})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->definition.at("cpu"), "512");
  EXPECT_EQ(r->definition.at("memory"), "1024");
  const auto& pm = r->definition.at("containerDefinitions").as_array()[0].at("portMappings").as_array()[0];
  EXPECT_EQ(pm.at("hostPort"), 80);
  EXPECT_EQ(pm.at("protocol"), "tcp");
  EXPECT_EQ(r->compatibilities, (std::vector<std::string>{"EC2", "FARGATE"}));
  bool eni = false;
  for (const auto& a : r->requires_attributes) eni = eni || a.at("name") == "ecs.capability.task-eni";
  EXPECT_TRUE(eni);
}

TEST(ValidateRegisterTest, AwsMessages) {
  EXPECT_EQ(ErrorOf(R"({"family":"bad name","containerDefinitions":[{"name":"a","image":"x","memory":64}]})"),
            "ClientException: Family contains invalid characters.");
  EXPECT_EQ(ErrorOf(R"({"family":"","containerDefinitions":[{"name":"a","image":"x","memory":64}]})"),
            "ClientException: Family can not be blank.");
  EXPECT_EQ(ErrorOf(R"({"family":"f","containerDefinitions":[]})"), "ClientException: Container list cannot be empty.");
  EXPECT_EQ(ErrorOf(R"({"family":"f","containerDefinitions":[{"name":"a","memory":64}]})"),
            "ClientException: Container.image should not be null or empty.");
  EXPECT_EQ(ErrorOf(R"({"family":"f","containerDefinitions":[{"name":"a b","image":"x","memory":64}]})"),
            "ClientException: Container.name contains invalid characters.");
  EXPECT_EQ(ErrorOf(R"({"family":"f","containerDefinitions":[{"name":"a","image":"x"}]})"),
            "ClientException: Invalid setting for container 'a'. At least one of 'memory' or 'memoryReservation' must be specified.");
  EXPECT_EQ(ErrorOf(R"({"family":"f","requiresCompatibilities":["FARGATE"],"cpu":"256","memory":"512",
                       "containerDefinitions":[{"name":"a","image":"x"}]})"),
            "ClientException: Fargate only supports network mode \u2018awsvpc\u2019.");
  EXPECT_EQ(ErrorOf(R"({"family":"f","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256","memory":"4096",
                       "containerDefinitions":[{"name":"a","image":"x"}]})"),
            "ClientException: No Fargate configuration exists for given values: 256 CPU, 4096 memory. See the Amazon ECS "
            "documentation for the valid values.");
  EXPECT_EQ(ErrorOf(R"({"family":"f","networkMode":"awsvpc","containerDefinitions":[{"name":"a","image":"x","memory":64,
                       "portMappings":[{"containerPort":80,"hostPort":8080}]}]})"),
            "ClientException: When networkMode=awsvpc, the host ports and container ports in port mappings must match.");
}

TEST(ValidateRegisterTest, ContainerRules) {
  EXPECT_NE(ErrorOf(R"({"family":"f","containerDefinitions":[{"name":"a","image":"x","memory":64},{"name":"a","image":"y","memory":64}]})"), "OK");
  EXPECT_NE(ErrorOf(R"({"family":"f","containerDefinitions":[{"name":"a","image":"x","memory":64,"memoryReservation":128}]})"), "OK");
  EXPECT_EQ(ErrorOf(R"({"family":"f","containerDefinitions":[{"name":"a","image":"x","memory":64,"memoryReservation":64}]})"), "OK");
  EXPECT_NE(ErrorOf(R"({"family":"f","containerDefinitions":[{"name":"a","image":"x","memory":64,
                       "dependsOn":[{"containerName":"zz","condition":"START"}]}]})"), "OK");
  EXPECT_NE(ErrorOf(R"({"family":"f","containerDefinitions":[
      {"name":"a","image":"x","memory":64,"dependsOn":[{"containerName":"b","condition":"START"}]},
      {"name":"b","image":"x","memory":64,"dependsOn":[{"containerName":"a","condition":"START"}]}]})"), "OK");
  std::string many = R"({"family":"f","containerDefinitions":[)";
  for (int i = 0; i < 11; ++i) many += (i ? "," : "") + std::string(R"({"name":"c)") + std::to_string(i) + R"(","image":"x","memory":64})";
  many += "]}";
  EXPECT_NE(ErrorOf(many), "OK");
}

TEST(ValidateRegisterTest, SizeLimit) {
  std::string big(70 * 1024, 'x');
  std::string text = R"({"family":"f","containerDefinitions":[{"name":"a","image":"x","memory":64,"command":[")" + big + R"("]}]})";
  EXPECT_NE(ErrorOf(text), "OK");
}

TEST(ValidateRegisterTest, Tags) {
  EXPECT_NE(ErrorOf(R"({"family":"f","tags":[{"key":"aws:x","value":"1"}],"containerDefinitions":[{"name":"a","image":"x","memory":64}]})"), "OK");
  auto r = ValidateRegister(Parse(R"({"family":"f","tags":[{"key":"team","value":"a"}],"containerDefinitions":[{"name":"a","image":"x","memory":64}]})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tags.size(), 1u);
  EXPECT_FALSE(r->definition.contains("tags"));
}

}  // namespace
}  // namespace paddock::ecs::taskdef

namespace paddock::ecs::taskdef {
namespace {

// moto's test_register_task_definition__use_efs_root: AWS answers an EFS volume without
// rootDirectory with "/".
TEST(ValidateRegisterTest, EfsRootDirectoryDefaultsToTheRoot) {
  auto r = ValidateRegister(json::parse(R"({"family":"efs","containerDefinitions":[{"name":"a","image":"x","memory":64}],
      "volumes":[{"name":"v","efsVolumeConfiguration":{"fileSystemId":"fs-1"}},
                 {"name":"w","efsVolumeConfiguration":{"fileSystemId":"fs-2","rootDirectory":"/data"}}]})")
                                .as_object());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& volumes = r->definition.at("volumes").as_array();
  EXPECT_EQ(volumes[0].at("efsVolumeConfiguration").at("rootDirectory"), "/");
  EXPECT_EQ(volumes[1].at("efsVolumeConfiguration").at("rootDirectory"), "/data");
}

}  // namespace
}  // namespace paddock::ecs::taskdef
