// Feeds arbitrary bytes as the method, path, query, a header and the body of a signed REST-JSON
// request through ApiFront::Handle in emulator mode, against a small model with path labels, a
// greedy label, a literal query, query and header members of every kind and a payload member.
// Input: "<method byte><path>\n<query>\n<header value>\n<body>". Every answer must be a JSON
// object (the echo, or a restJson1 error) with a status the protocol gives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "aws/front.h"
#include "aws/rest_json.h"
#include "aws/sigv4.h"
#include "common/clock.h"

namespace {

using namespace paddock;

constexpr std::string_view kModel = R"({
  "metadata": {"protocol": "rest-json", "signingName": "fuzz"},
  "operations": {
    "Get": {"http": {"method": "GET", "requestUri": "/things/{Id}"}, "input": {"shape": "In"}},
    "List": {"http": {"method": "GET", "requestUri": "/things"}, "input": {"shape": "In"}},
    "Special": {"http": {"method": "GET", "requestUri": "/things/{Id}?special"}, "input": {"shape": "In"}},
    "Part": {"http": {"method": "PUT", "requestUri": "/things/{Id}/parts/{Rest+}", "responseCode": 201},
             "input": {"shape": "In"}},
    "Doc": {"http": {"method": "POST", "requestUri": "/docs/{Id}"}, "input": {"shape": "DocIn"}},
    "Delete": {"http": {"method": "DELETE", "requestUri": "/things/{Id}", "responseCode": 204}, "input": {"shape": "In"}}
  },
  "shapes": {
    "S": {"type": "string", "max": 64},
    "I": {"type": "integer", "min": 1, "max": 100},
    "B": {"type": "boolean"},
    "D": {"type": "double"},
    "T": {"type": "timestamp"},
    "IL": {"type": "list", "member": {"shape": "I"}},
    "SL": {"type": "list", "member": {"shape": "S"}},
    "M": {"type": "map", "key": {"shape": "S"}, "value": {"shape": "S"}},
    "Doc": {"type": "structure", "members": {"x": {"shape": "I"}, "y": {"shape": "SL"}}},
    "In": {"type": "structure", "required": ["Id"],
           "members": {"Id": {"shape": "S", "location": "uri", "locationName": "Id"},
                       "Rest": {"shape": "S", "location": "uri", "locationName": "Rest"},
                       "N": {"shape": "I", "location": "querystring", "locationName": "n"},
                       "Flag": {"shape": "B", "location": "querystring", "locationName": "flag"},
                       "Since": {"shape": "T", "location": "querystring", "locationName": "since"},
                       "Many": {"shape": "SL", "location": "querystring", "locationName": "many"},
                       "Others": {"shape": "M", "location": "querystring"},
                       "H": {"shape": "D", "location": "header", "locationName": "X-H"},
                       "Meta": {"shape": "M", "location": "headers", "locationName": "x-meta-"},
                       "Body": {"shape": "SL"}}},
    "DocIn": {"type": "structure", "payload": "Doc",
              "members": {"Id": {"shape": "S", "location": "uri", "locationName": "Id"}, "Doc": {"shape": "Doc"}}}
  }
})";

class NoKeys : public aws::CredentialResolver {
 public:
  StatusOr<std::optional<aws::Credential>> Lookup(const AccessKeyId&) override {
    return std::optional<aws::Credential>();
  }
};

class Echo : public aws::RestJsonService {
 public:
  Echo() : model_(aws::ServiceModel::Parse(kModel).value()) {}
  std::string_view SigningName() const override { return "fuzz"; }
  const aws::ServiceModel& Model() const override { return *model_; }
  bool Implements(std::string_view) const override { return true; }
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view) const override { return std::nullopt; }
  StatusOr<std::string> Call(const aws::CallContext&, boost::json::object& input) override {
    return boost::json::serialize(input);
  }

 private:
  std::unique_ptr<aws::ServiceModel> model_;
};

constexpr const char* kMethods[] = {"GET", "PUT", "POST", "DELETE", "PATCH"};

std::string_view Next(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view part = in.substr(0, nl);
  in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return part;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static NoKeys resolver;
  static Echo echo;
  static aws::ApiFront* front = [] {
    aws::FrontOptions options;
    options.auth.accept_any_credentials = true;
    options.auth.default_account = AccountId("000000000000");
    auto* f = new aws::ApiFront(options, SystemClock::Get(), resolver);
    f->AddRestJsonService(&echo);
    return f;
  }();
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string path(Next(in));
  std::string_view query = Next(in);
  std::string_view header = Next(in);
  // A GET with Action= in its query is a Query-protocol call, answered in XML: not this target's.
  if (query.starts_with("Action=") || query.find("&Action=") != std::string_view::npos) return 0;
  http::Request req;
  req.method = kMethods[data[0] % (sizeof(kMethods) / sizeof(kMethods[0]))];
  if (path.empty() || path.front() != '/') path.insert(0, "/");
  // Bytes the HTTP parser would never hand over (the target is one token) are out of scope.
  for (char& c : path)
    if (c == ' ' || c == '?' || c == '#' || static_cast<unsigned char>(c) < 0x21) c = '_';
  req.target = query.empty() ? path : path + "?" + std::string(query);
  req.headers = {{"Host", "localhost"}, {"X-H", std::string(header)}, {"x-meta-k", std::string(header)}};
  req.body.assign(in);
  aws::SignRequest(req, {"AKIDEXAMPLE", "secret"}, "us-east-1", "fuzz", SystemClock::Get().Now());
  http::Response resp = front->Handle(req);
  if (resp.status == 204) return 0;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(resp.body, ec);
  if (ec || !v.is_object()) std::abort();
  if (resp.status != 200 && resp.status != 201 && resp.status != 400 && resp.status != 404) std::abort();
  return 0;
}
