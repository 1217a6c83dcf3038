#include "testing/toy_service/api/toy_service.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <boost/json.hpp>

#include "aws/model.h"
#include "common/json_fields.h"
#include "testing/toy_service/api/models/toy_model.h"

namespace paddock::toy::api {
namespace {

namespace json = boost::json;

constexpr std::string_view kActions[] = {"PutNote", "GetNote"};

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

// The toy's error table: how its owner's failures are named on the wire. Any other failure keeps
// the front's default (aws::AwsErrorFor).
std::optional<aws::AwsError> ToyService::ErrorFor(const Status& status) const {
  std::optional<Error> e = status.detail().As<Error>();
  if (!e) return std::nullopt;
  switch (*e) {
    case Error::kNoteNotFound: return aws::AwsError{"NoteNotFoundException", 400};
    case Error::kNoteLimitExceeded: return aws::AwsError{"NoteLimitExceededException", 400};
  }
  return std::nullopt;
}

StatusOr<std::string> ToyService::Call(const aws::CallContext& ctx, json::object& input) {
  // The model made "name" and "text" present strings of the right lengths.
  const std::string name = json_fields::Str(input, "name");
  if (ctx.action == "PutNote") {
    ASSIGN_OR_RETURN(int64_t version, notes_.Put(ctx.scope, name, json_fields::Str(input, "text")));
    return json::serialize(json::object{{"version", version}});
  }
  ASSIGN_OR_RETURN(Note note, notes_.Get(ctx.scope, name));
  return json::serialize(json::object{{"name", note.name}, {"text", note.text}, {"version", note.version}});
}

}  // namespace paddock::toy::api
