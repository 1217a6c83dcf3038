#include "testing/toy_rest/api/toy_files_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <boost/json.hpp>

#include "aws/model.h"
#include "testing/toy_rest/api/models/toy_files_model.h"

namespace paddock::toyrest::api {
namespace {

namespace json = boost::json;

constexpr std::string_view kActions[] = {"PutFile", "GetFile", "ListFileVersions", "ListFiles", "DeleteFile"};


std::string StringMember(const json::object& input, std::string_view name) {
  const json::value* v = input.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::vector<std::string> StringList(const json::object& input, std::string_view name) {
  std::vector<std::string> out;
  if (const json::value* v = input.if_contains(name); v != nullptr && v->is_array())
    for (const json::value& e : v->get_array())
      if (e.is_string()) out.emplace_back(e.get_string());
  return out;
}

json::array ToJson(const std::vector<std::string>& items) {
  json::array out;
  for (const std::string& s : items) out.emplace_back(json::string(s));
  return out;
}

}  // namespace

const aws::ServiceModel& ToyFilesService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(ToyFilesModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool ToyFilesService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> ToyFilesService::ThrottleGroupFor(std::string_view action) const {
  (void)action;
  return std::nullopt;
}

// The toy's error table, as its model's error shapes name them and their httpStatusCode: its
// owner's failures, and the model's validation failures (InvalidArgument without a detail).
// The front's own failures (signature, routing, decoding: aws::Error) keep their names.
std::optional<aws::AwsError> ToyFilesService::ErrorFor(const Status& status) const {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    switch (*e) {
      case Error::kFileNotFound: return aws::AwsError{"FileNotFoundException", 404};
      case Error::kFileExists: return aws::AwsError{"FileExistsException", 409};
    }
  }
  if (status.code() == StatusCode::kInvalidArgument && status.detail().domain() == nullptr)
    return aws::AwsError{"ValidationException", 400};
  return std::nullopt;
}

std::vector<aws::AuthRequest> ToyFilesService::AuthorizationFor(const aws::CallContext& ctx,
                                                                const json::object& input) const {
  return {aws::AuthRequest{fmt::format("toyfiles:{}", ctx.action),
                           fmt::format("arn:aws:toyfiles:{}:{}:bucket/{}", ctx.scope.region.str(),
                                       ctx.scope.account.str(), StringMember(input, "Bucket")),
                           {}}};
}

StatusOr<std::string> ToyFilesService::Call(const aws::CallContext& ctx, json::object& input) {
  // The model made Bucket and Key present strings of the right lengths, Version a long,
  // MaxResults an integer in [1, 100], Overwrite a boolean.
  const std::string bucket = StringMember(input, "Bucket");
  const std::string key = StringMember(input, "Key");
  if (ctx.action == "PutFile") {
    FileData data;
    data.content = StringMember(input, "Content");
    data.owner = StringMember(input, "Owner");
    data.tags = StringList(input, "Tags");
    if (const json::value* m = input.if_contains("Metadata"); m != nullptr && m->is_object())
      for (const auto& [k, v] : m->get_object())
        if (v.is_string()) data.metadata[std::string(k)] = std::string(v.get_string());
    const json::value* overwrite = input.if_contains("Overwrite");
    ASSIGN_OR_RETURN(int64_t version, files_.Put(ctx.scope, bucket, key, std::move(data),
                                                 Overwrite{overwrite != nullptr && overwrite->as_bool()}));
    return json::serialize(json::object{{"Version", version}});
  }
  if (ctx.action == "GetFile") {
    std::optional<int64_t> version;
    if (const json::value* v = input.if_contains("Version"); v != nullptr && v->is_int64()) version = v->get_int64();
    ASSIGN_OR_RETURN(File file, files_.Get(ctx.scope, bucket, key, version));
    json::object metadata;
    for (const auto& [k, v] : file.data.metadata) metadata[k] = v;
    json::object out{{"Bucket", file.bucket}, {"Key", file.key},           {"Content", file.data.content},
                     {"Version", file.version}, {"Tags", ToJson(file.data.tags)}, {"Metadata", std::move(metadata)}};
    if (!file.data.owner.empty()) out["Owner"] = file.data.owner;
    return json::serialize(out);
  }
  if (ctx.action == "ListFileVersions") {
    ASSIGN_OR_RETURN(std::vector<int64_t> versions, files_.Versions(ctx.scope, bucket, key));
    json::array out;
    for (int64_t v : versions) out.emplace_back(v);
    return json::serialize(json::object{{"Versions", std::move(out)}});
  }
  if (ctx.action == "ListFiles") {
    const json::value* max = input.if_contains("MaxResults");
    std::vector<std::string> keys = files_.List(ctx.scope, bucket, StringMember(input, "Prefix"),
                                                max != nullptr ? static_cast<size_t>(max->as_int64()) : 100,
                                                StringList(input, "Owners"));
    return json::serialize(json::object{{"Keys", ToJson(keys)}});
  }
  RETURN_IF_ERROR(files_.Delete(ctx.scope, bucket, key));
  return std::string();
}

}  // namespace paddock::toyrest::api
