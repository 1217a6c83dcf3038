#include "testing/toy_service/api/toy_service.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <boost/json.hpp>

#include "aws/model.h"
#include "testing/toy_service/api/models/toy_model.h"

namespace paddock::toy::api {
namespace {

namespace json = boost::json;

constexpr std::string_view kActions[] = {"PutNote", "GetNote"};

// The toy's error table: how its owner's failures are named on the wire. A code the table does
// not list keeps the front's default (aws::AwsErrorFor).
struct ErrorName {
  StatusCode code;
  std::string_view aws_type;
};
constexpr ErrorName kErrors[] = {
    {StatusCode::kNotFound, "NoteNotFoundException"},
    {StatusCode::kResourceExhausted, "NoteLimitExceededException"},
};

Status Named(const Status& s) {
  if (s.ok() || !s.aws_type().empty()) return s;
  for (const ErrorName& e : kErrors)
    if (e.code == s.code()) return Status(s.code(), s.message(), std::string(e.aws_type));
  return s;
}

std::string StringMember(const json::object& input, std::string_view name) {
  const json::value* v = input.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

const aws::ServiceModel& ToyService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(ToyModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool ToyService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> ToyService::ThrottleGroupFor(std::string_view action) const {
  (void)action;
  return std::nullopt;
}

StatusOr<std::string> ToyService::Call(const aws::CallContext& ctx, json::object& input) {
  // The model made "name" and "text" present strings of the right lengths.
  const std::string name = StringMember(input, "name");
  if (ctx.action == "PutNote") {
    auto version = notes_.Put(ctx.scope, name, StringMember(input, "text"));
    if (!version.ok()) return Named(version.status());
    return json::serialize(json::object{{"version", *version}});
  }
  auto note = notes_.Get(ctx.scope, name);
  if (!note.ok()) return Named(note.status());
  return json::serialize(json::object{{"name", note->name}, {"text", note->text}, {"version", note->version}});
}

}  // namespace paddock::toy::api
