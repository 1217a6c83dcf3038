#include "edge/ecs_provider.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include "common/status.h"
#include "edge/dynamic.h"
#include "edge/merge.h"
#include "edge/rule.h"

namespace paddock::edge {
namespace {

namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// Normalize: Go's strings.FieldsFunc over runes that are not unicode.IsLetter / unicode.IsNumber.

struct CodePointRange {
  char32_t first;
  char32_t last;
};

constexpr CodePointRange kLetterNumberRanges[] = {
#include "edge/internal/letter_number_ranges.inc"
};

bool IsLetterOrNumber(char32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
  const CodePointRange* end = std::end(kLetterNumberRanges);
  const CodePointRange* it = std::upper_bound(std::begin(kLetterNumberRanges), end, c,
                                              [](char32_t v, const CodePointRange& r) { return v < r.first; });
  if (it == std::begin(kLetterNumberRanges)) return false;
  --it;
  return c <= it->last;
}

// One rune of `s` at `i`, as Go's utf8.DecodeRuneInString reads it: a malformed sequence (overlong,
// surrogate, past U+10FFFF, truncated) is U+FFFD of width 1.
std::pair<char32_t, size_t> DecodeRune(std::string_view s, size_t i) {
  constexpr char32_t kRuneError = 0xFFFD;
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return {b0, 1};
  size_t need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  char32_t c = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    c = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    c = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    c = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {kRuneError, 1};
  }
  if (i + need >= s.size()) return {kRuneError, 1};
  unsigned char b1 = byte(i + 1);
  if (b1 < lo || b1 > hi) return {kRuneError, 1};
  c = (c << 6) | (b1 & 0x3F);
  for (size_t k = 2; k <= need; ++k) {
    unsigned char b = byte(i + k);
    if (b < 0x80 || b > 0xBF) return {kRuneError, 1};
    c = (c << 6) | (b & 0x3F);
  }
  return {c, need + 1};
}

// ---------------------------------------------------------------------------------------------
// Errors, bounded.

// Errors quote names and labels a tenant wrote: each is kept to kMaxErrorBytes, with control
// characters escaped, so that logging one can neither flood nor forge lines.
constexpr size_t kMaxErrorBytes = 1024;

class ErrorLog {
 public:
  explicit ErrorLog(std::vector<std::string>* out) : out_(out) {}
  void Add(std::string_view error) {
    if (out_->size() + 1 >= kMaxEcsErrors) {
      ++left_out_;
      return;
    }
    std::string safe;
    for (char c : error) {
      if (safe.size() >= kMaxErrorBytes) {
        safe += "...";
        break;
      }
      auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7F) {
        safe += fmt::format("\\x{:02x}", byte);
      } else {
        safe += c;
      }
    }
    out_->push_back(std::move(safe));
  }
  void Finish() {
    if (left_out_ > 0) out_->push_back(fmt::format("{} more errors not shown", left_out_));
  }

 private:
  std::vector<std::string>* out_;
  size_t left_out_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Labels the provider itself reads.

bool HasPrefixFold(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i];
    char b = prefix[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = static_cast<char>(b - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

bool EqualFold(std::string_view a, std::string_view b) { return a.size() == b.size() && HasPrefixFold(a, b); }

// Go's strconv.ParseBool.
StatusOr<bool> ParseGoBool(std::string_view text) {
  if (text == "1" || text == "t" || text == "T" || text == "TRUE" || text == "true" || text == "True") return true;
  if (text == "0" || text == "f" || text == "F" || text == "FALSE" || text == "false" || text == "False") {
    return false;
  }
  return InvalidArgument(fmt::format("strconv.ParseBool: parsing \"{}\": invalid syntax", text));
}

// The provider's own configuration (pkg/provider/ecs/label.go): the labels under `traefik.ecs.`
// and `traefik.enable` (case-insensitive), decoded by Traefik's label parser into a struct whose
// only field is Enable. Any such label other than `traefik.enable` itself names no field: an error.
StatusOr<bool> ReadEnable(const std::map<std::string, std::string>& labels, bool exposed_by_default) {
  std::optional<std::string_view> value;
  // std::map iterates in byte order, as the parser's sort.Strings: the last spelling wins.
  for (const auto& [key, label_value] : labels) {
    if (!HasPrefixFold(key, "traefik.ecs.") && !HasPrefixFold(key, "traefik.enable")) continue;
    std::vector<std::string_view> parts;
    size_t start = 0;
    std::string_view k(key);
    while (true) {
      size_t dot = k.find('.', start);
      std::string_view part = k.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
      if (part.empty()) return InvalidArgument(fmt::format("invalid element: {}", key));
      if (part.front() == '[') {
        return InvalidArgument(fmt::format(
            "invalid leading character '[' in field name (bracket is a slice delimiter): {}", part));
      }
      if (part.back() == ']') {
        size_t open = part.find('[');
        // Traefik's parser indexes out of range here and panics; this is an error instead.
        if (open == std::string_view::npos) return InvalidArgument(fmt::format("invalid element: {}", key));
        parts.push_back(part.substr(0, open));
        parts.push_back(part.substr(open));
      } else {
        parts.push_back(part);
      }
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
    if (parts[0] != "traefik") return InvalidArgument(fmt::format("invalid label root {}", parts[0]));
    if (!EqualFold(parts[1], "enable")) return InvalidArgument(fmt::format("field not found, node: {}", parts[1]));
    if (parts.size() > 2) return InvalidArgument(fmt::format("invalid node {}: bool", parts[1]));
    value = label_value;
  }
  if (!value) return exposed_by_default;
  return ParseGoBool(*value);
}

// ---------------------------------------------------------------------------------------------
// The default rule: a Go text/template, the subset documented in the header.

struct TemplateModel {
  std::string_view name;
  const std::map<std::string, std::string>* labels;
};

// A value during evaluation: a string or the labels map.
using TemplateValue = std::variant<std::string, const std::map<std::string, std::string>*>;

struct TemplatePipeline;

struct TemplateOperand {
  enum class Kind { kField, kString, kFunction, kPipeline };
  Kind kind = Kind::kString;
  std::string text;                         // kString: the value; kFunction: its name
  std::vector<std::string> fields;          // kField: ".Labels.x" -> {"Labels", "x"}
  std::shared_ptr<TemplatePipeline> inner;  // kPipeline
};

struct TemplateCommand {
  std::vector<TemplateOperand> operands;
};

struct TemplatePipeline {
  std::vector<TemplateCommand> commands;
};

struct TemplatePiece {
  std::string text;  // literal text, when pipeline is empty
  std::shared_ptr<TemplatePipeline> pipeline;
};

class DefaultRuleTemplate {
 public:
  static StatusOr<DefaultRuleTemplate> Parse(std::string_view source);
  StatusOr<std::string> Execute(const TemplateModel& model) const;

 private:
  std::vector<TemplatePiece> pieces_;
};

bool IsTemplateSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Lexes and parses one action's pipeline from `s` at `pos`, up to its closing "}}" (or " -}}").
class ActionParser {
 public:
  ActionParser(std::string_view s, size_t pos) : s_(s), pos_(pos) {}

  // On success, pos() is just past the closing delimiter and trim_right() says whether it was
  // " -}}".
  StatusOr<std::shared_ptr<TemplatePipeline>> ParseAction() {
    ASSIGN_OR_RETURN(std::shared_ptr<TemplatePipeline> pipeline, ParsePipeline());
    SkipSpace();
    if (s_.compare(pos_, 3, "-}}") == 0 && pos_ > 0 && IsTemplateSpace(s_[pos_ - 1])) {
      trim_right_ = true;
      pos_ += 3;
    } else if (s_.compare(pos_, 2, "}}") == 0) {
      pos_ += 2;
    } else {
      return Unsupported();
    }
    return pipeline;
  }

  size_t pos() const { return pos_; }
  bool trim_right() const { return trim_right_; }

 private:
  Status Unsupported() const {
    return InvalidArgument(fmt::format("default rule template: unsupported or malformed action at offset {}", pos_));
  }

  void SkipSpace() {
    while (pos_ < s_.size() && IsTemplateSpace(s_[pos_])) ++pos_;
  }

  bool AtEnd() {
    SkipSpace();
    return pos_ >= s_.size() || s_.compare(pos_, 2, "}}") == 0 || s_.compare(pos_, 3, "-}}") == 0 ||
           s_[pos_] == ')' || s_[pos_] == '|';
  }

  StatusOr<std::shared_ptr<TemplatePipeline>> ParsePipeline() {
    if (++depth_ > 32) return Unsupported();
    auto pipeline = std::make_shared<TemplatePipeline>();
    while (true) {
      TemplateCommand command;
      while (!AtEnd()) {
        ASSIGN_OR_RETURN(TemplateOperand operand, ParseOperand());
        command.operands.push_back(std::move(operand));
      }
      if (command.operands.empty()) return Unsupported();
      pipeline->commands.push_back(std::move(command));
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    --depth_;
    return pipeline;
  }

  static bool IsIdentChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  StatusOr<TemplateOperand> ParseOperand() {
    TemplateOperand operand;
    char c = s_[pos_];
    if (c == '.') {
      operand.kind = TemplateOperand::Kind::kField;
      while (pos_ < s_.size() && s_[pos_] == '.') {
        size_t start = ++pos_;
        while (pos_ < s_.size() && IsIdentChar(s_[pos_])) ++pos_;
        if (pos_ == start) return Unsupported();  // "." alone, or "..": not in the subset
        operand.fields.emplace_back(s_.substr(start, pos_ - start));
      }
      return operand;
    }
    if (c == '"' || c == '`') {
      operand.kind = TemplateOperand::Kind::kString;
      ASSIGN_OR_RETURN(operand.text, ParseString());
      return operand;
    }
    if (c == '(') {
      ++pos_;
      operand.kind = TemplateOperand::Kind::kPipeline;
      ASSIGN_OR_RETURN(operand.inner, ParsePipeline());
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ')') return Unsupported();
      ++pos_;
      return operand;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() && IsIdentChar(s_[pos_])) ++pos_;
      operand.kind = TemplateOperand::Kind::kFunction;
      operand.text = std::string(s_.substr(start, pos_ - start));
      if (operand.text != "normalize" && operand.text != "index") {
        return InvalidArgument(
            fmt::format("default rule template: \"{}\" is not supported (normalize, index only)", operand.text));
      }
      return operand;
    }
    return Unsupported();
  }

  // A Go string literal: "..." with the simple escapes, or `...` raw.
  StatusOr<std::string> ParseString() {
    char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == quote) return out;
      if (quote == '"' && c == '\n') break;
      if (quote == '"' && c == '\\') {
        if (pos_ >= s_.size()) break;
        char e = s_[pos_++];
        switch (e) {
          case '\\': out += '\\'; break;
          case '"': out += '"'; break;
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'a': out += '\a'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'v': out += '\v'; break;
          default: return Unsupported();
        }
        continue;
      }
      out += c;
    }
    return Unsupported();
  }

  std::string_view s_;
  size_t pos_;
  int depth_ = 0;
  bool trim_right_ = false;
};

StatusOr<DefaultRuleTemplate> DefaultRuleTemplate::Parse(std::string_view source) {
  DefaultRuleTemplate t;
  size_t pos = 0;
  bool trim_next = false;
  while (pos <= source.size()) {
    size_t open = source.find("{{", pos);
    std::string text(source.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
    if (trim_next) {
      size_t first = 0;
      while (first < text.size() && IsTemplateSpace(text[first])) ++first;
      text.erase(0, first);
    }
    if (open == std::string_view::npos) {
      if (!text.empty()) t.pieces_.push_back({std::move(text), nullptr});
      break;
    }
    size_t action = open + 2;
    if (source.compare(action, 1, "-") == 0 && action + 1 < source.size() && IsTemplateSpace(source[action + 1])) {
      while (!text.empty() && IsTemplateSpace(text.back())) text.pop_back();
      action += 1;
    }
    if (source.compare(action, 2, "/*") == 0) {
      return InvalidArgument("default rule template: comments are not supported");
    }
    if (!text.empty()) t.pieces_.push_back({std::move(text), nullptr});
    ActionParser parser(source, action);
    ASSIGN_OR_RETURN(std::shared_ptr<TemplatePipeline> pipeline, parser.ParseAction());
    t.pieces_.push_back({std::string(), std::move(pipeline)});
    pos = parser.pos();
    trim_next = parser.trim_right();
  }
  return t;
}

StatusOr<TemplateValue> EvalPipeline(const TemplatePipeline& pipeline, const TemplateModel& model);

StatusOr<TemplateValue> EvalOperand(const TemplateOperand& operand, const TemplateModel& model) {
  switch (operand.kind) {
    case TemplateOperand::Kind::kString:
      return TemplateValue(operand.text);
    case TemplateOperand::Kind::kPipeline:
      return EvalPipeline(*operand.inner, model);
    case TemplateOperand::Kind::kFunction:
      return InvalidArgument(fmt::format("default rule template: {} needs arguments", operand.text));
    case TemplateOperand::Kind::kField:
      break;
  }
  const std::vector<std::string>& f = operand.fields;
  if (f[0] == "Name") {
    if (f.size() > 1) return InvalidArgument(fmt::format("template: can't evaluate field {} in type string", f[1]));
    return TemplateValue(std::string(model.name));
  }
  if (f[0] == "Labels") {
    if (f.size() == 1) return TemplateValue(model.labels);
    if (f.size() > 2) return InvalidArgument(fmt::format("template: can't evaluate field {} in type string", f[2]));
    // A map's missing key reads as Go's "<no value>" when printed this way.
    auto it = model.labels->find(f[1]);
    return TemplateValue(it == model.labels->end() ? std::string("<no value>") : it->second);
  }
  return InvalidArgument(fmt::format("template: can't evaluate field {}", f[0]));
}

StatusOr<TemplateValue> EvalCommand(const TemplateCommand& command, const TemplateModel& model,
                                    const std::optional<TemplateValue>& piped) {
  const TemplateOperand& head = command.operands[0];
  if (head.kind != TemplateOperand::Kind::kFunction) {
    if (command.operands.size() > 1 || piped) {
      return InvalidArgument("template: can't give argument to non-function");
    }
    return EvalOperand(head, model);
  }
  std::vector<TemplateValue> args;
  for (size_t i = 1; i < command.operands.size(); ++i) {
    ASSIGN_OR_RETURN(TemplateValue v, EvalOperand(command.operands[i], model));
    args.push_back(std::move(v));
  }
  if (piped) args.push_back(*piped);
  if (head.text == "normalize") {
    if (args.size() != 1) return InvalidArgument("template: wrong number of args for normalize: want 1");
    const std::string* s = std::get_if<std::string>(&args[0]);
    if (s == nullptr) return InvalidArgument("template: wrong type for value; expected string; got map");
    return TemplateValue(Normalize(*s));
  }
  // index: the labels map and one key; a missing key is the zero value.
  if (args.size() != 2 || !std::holds_alternative<const std::map<std::string, std::string>*>(args[0]) ||
      !std::holds_alternative<std::string>(args[1])) {
    return InvalidArgument("default rule template: index takes .Labels and one string key");
  }
  const auto* labels = std::get<const std::map<std::string, std::string>*>(args[0]);
  auto it = labels->find(std::get<std::string>(args[1]));
  return TemplateValue(it == labels->end() ? std::string() : it->second);
}

StatusOr<TemplateValue> EvalPipeline(const TemplatePipeline& pipeline, const TemplateModel& model) {
  std::optional<TemplateValue> value;
  for (const TemplateCommand& command : pipeline.commands) {
    ASSIGN_OR_RETURN(TemplateValue v, EvalCommand(command, model, value));
    value = std::move(v);
  }
  return *value;
}

StatusOr<std::string> DefaultRuleTemplate::Execute(const TemplateModel& model) const {
  std::string out;
  for (const TemplatePiece& piece : pieces_) {
    if (!piece.pipeline) {
      out += piece.text;
      continue;
    }
    ASSIGN_OR_RETURN(TemplateValue v, EvalPipeline(*piece.pipeline, model));
    const std::string* s = std::get_if<std::string>(&v);
    if (s == nullptr) return InvalidArgument("default rule template: printing a map is not supported");
    out += *s;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// One container's configuration.

// Marks, until the merge is done, a router whose rule is the default rule: Traefik's
// Router.DefaultRule takes part in its merge's equality, so this does too. Not a schema field.
constexpr std::string_view kDefaultRuleMarker = "paddock.defaultRule";

json::object& ObjectAt(json::object& parent, std::string_view key) {
  json::value& v = parent[key];
  if (!v.is_object()) v.emplace_object();
  return v.get_object();
}

std::string StringField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return {};
  return std::string(v->get_string());
}

// Go's net.JoinHostPort.
std::string JoinHostPort(std::string_view host, std::string_view port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

// Traefik's getPort: a label port equal to a mapping's containerPort is that mapping's hostPort,
// any other label port is used as written; without one, the lowest hostPort in 0..65535.
std::string ChoosePort(const std::vector<EcsPortMapping>& ports, std::string_view label_port) {
  if (!label_port.empty()) {
    for (const EcsPortMapping& p : ports) {
      if (label_port == std::to_string(p.container_port)) return std::to_string(p.host_port);
    }
    return std::string(label_port);
  }
  std::optional<int> lowest;
  for (const EcsPortMapping& p : ports) {
    if (p.host_port < 0 || p.host_port > 65535) continue;
    if (!lowest || p.host_port < *lowest) lowest = p.host_port;
  }
  return lowest ? std::to_string(*lowest) : std::string();
}

struct Instance {
  std::string service_name;   // Normalize(group' + "-" + container)
  std::string instance_name;  // service_name + "-" + the task id
  const EcsTask* task = nullptr;
  const EcsContainer* container = nullptr;
  std::string ip;
  const std::vector<EcsPortMapping>* ports = nullptr;
};

// Traefik's addServer: the container's server as servers[0] of `lb`.
Status AddServer(json::object& lb, const Instance& instance) {
  json::value& servers_value = lb["servers"];
  if (!servers_value.is_array() || servers_value.get_array().empty()) servers_value = json::array{json::object()};
  json::value& first = servers_value.get_array()[0];
  if (!first.is_object()) return InvalidArgument("the server is not an object");
  json::object& server = first.get_object();
  std::string url = StringField(server, "url");
  std::string scheme = StringField(server, "scheme");
  std::string port;
  if (const json::value* p = server.if_contains("port")) {
    if (p->is_string()) {
      port = std::string(p->get_string());
    } else if (p->is_int64()) {
      port = std::to_string(p->get_int64());
    } else if (p->is_uint64()) {
      port = std::to_string(p->get_uint64());
    } else {
      return InvalidArgument("the server's port is not a string");
    }
  }
  server.erase("port");
  server.erase("scheme");
  if (!url.empty()) {
    if (!scheme.empty() || !port.empty()) {
      return InvalidArgument("defining scheme or port is not allowed when URL is defined");
    }
    return OkStatus();
  }
  port = ChoosePort(*instance.ports, port);
  if (port.empty()) return InvalidArgument("port is missing");
  if (scheme.empty()) scheme = "http";
  server["url"] = fmt::format("{}://{}", scheme, JoinHostPort(instance.ip, port));
  return OkStatus();
}

// Traefik's buildServiceConfiguration: a default service named after the instance when the labels
// define none, and this container's server in every service.
Status BuildServices(json::object& http, const Instance& instance) {
  json::value& services_value = http["services"];
  if (!services_value.is_object() || services_value.get_object().empty()) {
    services_value = json::object{{instance.service_name, json::object{{"loadBalancer", json::object()}}}};
  }
  for (auto& [name, service_value] : services_value.get_object()) {
    json::object* service = service_value.if_object();
    json::value* lb = service != nullptr ? service->if_contains("loadBalancer") : nullptr;
    if (lb == nullptr || !lb->is_object()) {
      return InvalidArgument(fmt::format("service \"{}\" error: load-balancer is not defined", std::string_view(name)));
    }
    if (Status s = AddServer(lb->get_object(), instance); !s.ok()) {
      return InvalidArgument(fmt::format("service \"{}\" error: {}", std::string_view(name), s.message()));
    }
    ApplyServiceDefaults(*service);
  }
  return OkStatus();
}

// Traefik's BuildRouterConfiguration: a default router when the labels define none and there is
// one service; the default rule for routers without a rule; the only service for routers without one.
void BuildRouters(json::object& http, const Instance& instance, const StatusOr<DefaultRuleTemplate>& rule_template,
                  ErrorLog& log) {
  // "routers" first: inserting it may move http's other values.
  json::value& routers_value = http["routers"];
  const json::object& services = http.at("services").get_object();
  if (!routers_value.is_object() || routers_value.get_object().empty()) {
    if (services.size() > 1) {
      log.Add(fmt::format("{}: could not create a router for the container: too many services",
                          instance.instance_name));
      routers_value.emplace_object();
    } else {
      routers_value = json::object{{instance.service_name, json::object()}};
    }
  }
  json::object& routers = routers_value.get_object();
  std::vector<std::string> dropped;
  for (auto& [name_key, router_value] : routers) {
    std::string name(name_key);
    json::object* router = router_value.if_object();
    if (router == nullptr) {
      log.Add(fmt::format("{}: router \"{}\" is not an object", instance.instance_name, name));
      dropped.push_back(name);
      continue;
    }
    if (StringField(*router, "rule").empty()) {
      StatusOr<std::string> rule =
          rule_template.ok() ? rule_template->Execute(TemplateModel{instance.service_name, &instance.container->labels})
                             : StatusOr<std::string>(rule_template.status());
      if (!rule.ok()) {
        log.Add(fmt::format("{}: router \"{}\": error while parsing default rule: {}", instance.instance_name, name,
                            rule.status().message()));
        dropped.push_back(name);
        continue;
      }
      if (rule->empty()) {
        log.Add(fmt::format("{}: router \"{}\": undefined rule", instance.instance_name, name));
        dropped.push_back(name);
        continue;
      }
      (*router)["rule"] = *rule;
      (*router)[kDefaultRuleMarker] = true;
    }
    if (StringField(*router, "service").empty()) {
      if (services.size() > 1) {
        std::vector<std::string> names;
        for (const auto& s : services) names.emplace_back(s.key());
        log.Add(fmt::format("{}: router \"{}\" cannot be linked automatically with multiple services: [{}]",
                            instance.instance_name, name, fmt::join(names, " ")));
        dropped.push_back(name);
        continue;
      }
      for (const auto& s : services) (*router)["service"] = s.key();
    }
  }
  for (const std::string& name : dropped) routers.erase(name);
}

constexpr std::string_view kDrainTimeoutLabel = "paddock.edge.drain-timeout";

std::optional<int64_t> ReadDrainTimeout(const Instance& instance, ErrorLog& log) {
  auto it = instance.container->labels.find(std::string(kDrainTimeoutLabel));
  if (it == instance.container->labels.end()) return std::nullopt;
  StatusOr<std::chrono::nanoseconds> d = ParseGoDuration(it->second);
  if (!d.ok()) {
    log.Add(fmt::format("{}: label {}: {}", instance.instance_name, kDrainTimeoutLabel, d.status().message()));
    return std::nullopt;
  }
  int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
  return std::min(ms, kMaxDrainTimeoutMs);
}

struct ContainerConfig {
  const EcsTask* task = nullptr;
  const EcsContainer* container = nullptr;
  std::optional<int64_t> drain_timeout_ms;
  json::object config;
};

}  // namespace

std::string Normalize(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  size_t i = 0;
  bool in_field = false;
  while (i < name.size()) {
    auto [rune, width] = DecodeRune(name, i);
    if (IsLetterOrNumber(rune)) {
      if (!in_field && !out.empty()) out += '-';
      out.append(name.substr(i, width));
      in_field = true;
    } else {
      in_field = false;
    }
    i += width;
  }
  return out;
}

void ApplyServiceDefaults(json::object& service) {
  json::value* lb_value = service.if_contains("loadBalancer");
  if (lb_value == nullptr || !lb_value->is_object()) return;
  json::object& lb = lb_value->get_object();
  if (!lb.contains("passHostHeader")) lb["passHostHeader"] = true;
  if (!lb.contains("strategy")) lb["strategy"] = "wrr";
  json::value& forwarding = lb["responseForwarding"];
  if (forwarding.is_null()) forwarding.emplace_object();
  if (json::object* f = forwarding.if_object(); f != nullptr && !f->contains("flushInterval")) {
    (*f)["flushInterval"] = "100ms";
  }
  if (json::value* hc = lb.if_contains("healthCheck"); hc != nullptr && hc->is_object()) {
    json::object& h = hc->get_object();
    if (!h.contains("followRedirects")) h["followRedirects"] = true;
    if (!h.contains("mode")) h["mode"] = "http";
    if (!h.contains("interval")) h["interval"] = "30s";
    if (!h.contains("timeout")) h["timeout"] = "5s";
  }
  if (json::value* phc = lb.if_contains("passiveHealthCheck"); phc != nullptr && phc->is_object()) {
    json::object& p = phc->get_object();
    if (!p.contains("failureWindow")) p["failureWindow"] = "10s";
    if (!p.contains("maxFailedAttempts")) p["maxFailedAttempts"] = 1;
  }
  if (json::value* sticky = lb.if_contains("sticky"); sticky != nullptr && sticky->is_object()) {
    if (json::value* cookie = sticky->get_object().if_contains("cookie"); cookie != nullptr && cookie->is_object()) {
      if (!cookie->get_object().contains("path")) cookie->get_object()["path"] = "/";
    }
  }
}

EcsBuild BuildEcsConfiguration(const std::vector<EcsTask>& tasks, const EcsProviderOptions& options) {
  EcsBuild build;
  ErrorLog log(&build.errors);
  StatusOr<Constraint> constraint = Constraint::Parse(options.constraints);
  StatusOr<DefaultRuleTemplate> rule_template = DefaultRuleTemplate::Parse(options.default_rule);

  // The tasks as Traefik lists them: desiredStatus RUNNING (and HEALTHY with healthyTasksOnly),
  // one per ARN — a later copy replaces an earlier one, in its place.
  std::vector<const EcsTask*> listed;
  std::unordered_map<std::string_view, size_t> position;
  size_t over_bound = 0;
  for (const EcsTask& task : tasks) {
    if (task.desired_status != "RUNNING") continue;
    if (options.healthy_tasks_only && task.health_status != "HEALTHY") continue;
    auto [it, fresh] = position.try_emplace(task.task_arn, listed.size());
    if (!fresh) {
      listed[it->second] = &task;
      continue;
    }
    if (listed.size() >= kMaxEcsTasks) {
      position.erase(it);
      ++over_bound;
      continue;
    }
    listed.push_back(&task);
  }
  if (over_bound > 0) log.Add(fmt::format("{} tasks past the first {} ignored", over_bound, kMaxEcsTasks));

  std::map<std::string, ContainerConfig> configurations;  // by instance name, sorted as Traefik merges
  for (const EcsTask* task : listed) {
    if (task->task_arn.size() < 12) {
      log.Add(fmt::format("task \"{}\": the ARN is too short for a task id, skipped", task->task_arn));
      continue;
    }
    std::string task_id = task->task_arn.substr(task->task_arn.size() - 12);
    std::string group = task->group;
    if (size_t colon = group.find(':'); colon != std::string::npos) group[colon] = '-';
    bool awsvpc = task->network_mode == "awsvpc" && task->has_attachments;
    if (task->containers.size() > kMaxEcsContainersPerTask) {
      log.Add(fmt::format("task \"{}\": {} containers past the first {} ignored", task->task_arn,
                          task->containers.size() - kMaxEcsContainersPerTask, kMaxEcsContainersPerTask));
    }
    size_t count = std::min(task->containers.size(), kMaxEcsContainersPerTask);
    for (size_t c = 0; c < count; ++c) {
      const EcsContainer& container = task->containers[c];
      Instance instance;
      instance.service_name = Normalize(fmt::format("{}-{}", group, container.name));
      instance.instance_name = fmt::format("{}-{}", instance.service_name, task_id);
      instance.task = task;
      instance.container = &container;

      // The machine (Traefik's listInstances).
      std::string state;
      std::string health;
      if (awsvpc) {
        if (container.private_ip.empty()) {
          log.Add(fmt::format("{}: skip container {}: no network interfaces", instance.instance_name, container.name));
          continue;
        }
        instance.ip = container.private_ip;
        instance.ports = &container.port_mappings;
        state = task->last_status;
        std::transform(state.begin(), state.end(), state.begin(),
                       [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; });
        health = task->health_status;
      } else {
        if (task->machine_state.empty()) {
          log.Add(fmt::format("{}: unable to find container instance information for {}", instance.instance_name,
                              container.name));
          continue;
        }
        instance.ip = task->host_ip;
        instance.ports = &container.network_bindings;
        state = task->machine_state;
      }
      StatusOr<bool> enabled = ReadEnable(container.labels, options.exposed_by_default);
      if (!enabled.ok()) {
        log.Add(fmt::format("{}: skip container {}: {}", instance.instance_name, instance.service_name,
                            enabled.status().message()));
        continue;
      }

      // The filter (Traefik's filterInstance); what it filters is not an error.
      if (state != "running" || health == "UNHEALTHY" || instance.ip.empty() || !*enabled) continue;
      if (!constraint.ok()) {
        log.Add(fmt::format("{}: error matching constraint expression: {}", instance.instance_name,
                            constraint.status().message()));
        continue;
      }
      if (!constraint->Matches(container.labels)) continue;

      StatusOr<json::object> decoded = DecodeLabels(container.labels);
      if (!decoded.ok()) {
        log.Add(fmt::format("{}: {}", instance.instance_name, decoded.status().message()));
        continue;
      }
      json::object& http = ObjectAt(*decoded, "http");
      if (Status s = BuildServices(http, instance); !s.ok()) {
        log.Add(fmt::format("{}: {}", instance.instance_name, s.message()));
        continue;
      }
      BuildRouters(http, instance, rule_template, log);

      ContainerConfig config;
      config.task = task;
      config.container = &container;
      config.drain_timeout_ms = ReadDrainTimeout(instance, log);
      config.config = std::move(*decoded);
      auto [it, fresh] = configurations.try_emplace(instance.instance_name);
      if (!fresh) {
        log.Add(fmt::format("{}: defined again by container {}; the earlier one is replaced", instance.instance_name,
                            container.name));
      }
      it->second = std::move(config);
    }
  }

  // Which container each (service, server URL) is: the first in merge order, as the merge keeps it.
  std::map<std::pair<std::string, std::string>, const ContainerConfig*> origin;
  for (const auto& [name, config] : configurations) {
    const json::value* http = config.config.if_contains("http");
    const json::value* services = http != nullptr && http->is_object() ? http->get_object().if_contains("services")
                                                                      : nullptr;
    if (services == nullptr || !services->is_object()) continue;
    for (const auto& [service_name, service] : services->get_object()) {
      const json::value* lb = service.is_object() ? service.get_object().if_contains("loadBalancer") : nullptr;
      const json::value* servers = lb != nullptr && lb->is_object() ? lb->get_object().if_contains("servers") : nullptr;
      if (servers == nullptr || !servers->is_array()) continue;
      for (const json::value& server : servers->get_array()) {
        if (!server.is_object()) continue;
        origin.try_emplace({std::string(service_name), StringField(server.get_object(), "url")}, &config);
      }
    }
  }

  std::vector<NamedConfiguration> parts;
  parts.reserve(configurations.size());
  for (auto& [name, config] : configurations) parts.push_back({name, std::move(config.config)});
  MergedConfiguration merged = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  for (const std::string& error : merged.errors) log.Add(error);
  build.config = std::move(merged.config);

  if (json::value* http = build.config.if_contains("http"); http != nullptr && http->is_object()) {
    if (json::value* routers = http->get_object().if_contains("routers"); routers != nullptr && routers->is_object()) {
      for (auto& [name, router] : routers->get_object()) {
        if (json::object* r = router.if_object(); r != nullptr && r->erase(kDefaultRuleMarker) > 0) {
          build.default_rule_routers.emplace(name);
        }
      }
    }
    if (json::value* services = http->get_object().if_contains("services");
        services != nullptr && services->is_object()) {
      for (const auto& [service_name, service] : services->get_object()) {
        const json::value* lb = service.is_object() ? service.get_object().if_contains("loadBalancer") : nullptr;
        const json::value* servers =
            lb != nullptr && lb->is_object() ? lb->get_object().if_contains("servers") : nullptr;
        if (servers == nullptr || !servers->is_array()) continue;
        for (const json::value& server : servers->get_array()) {
          if (!server.is_object()) continue;
          std::string url = StringField(server.get_object(), "url");
          auto it = origin.find({std::string(service_name), url});
          if (it == origin.end()) continue;
          build.servers.push_back(EcsServer{std::string(service_name), url, it->second->task->task_arn,
                                            it->second->container->name, it->second->drain_timeout_ms});
        }
      }
    }
  }
  log.Finish();
  return build;
}

}  // namespace paddock::edge
