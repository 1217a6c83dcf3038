// edge/go_template: Go's text/template, as Traefik's file provider renders every dynamic
// configuration file before decoding it (pkg/provider/file: template.New(filename) with sprig's
// text functions, Traefik's `normalize` and `split`, executed with no data — dot is nil).
//
//   StatusOr<std::string> yaml = RenderGoTemplate(text, "dynamic.yml");
//
// The language: text and actions `{{ … }}` with the trim markers `{{- ` and ` -}}` and comments
// `{{/* … */}}`; pipelines of commands joined by `|` (each result the next command's last
// argument), parenthesized pipelines, literals (Go's interpreted and raw strings, runes, integers,
// floats, true, false, nil), variables (`$`, `$x := …`, `$x = …`, `range $i, $e := …`), field
// chains on maps (`.a.b`, `$x.a`), `if`/`else if`/`else`, `range` (lists, maps in key order,
// integers) with `else`, `break` and `continue`, `with`/`else with`/`else`, and `define`,
// `template` and `block`. Go's built-in functions (and, or, not, len, index, slice, print, printf,
// println, eq, ne, lt, le, gt, ge, urlquery) and the sprig functions Traefik users reach for
// (strings, lists, dicts, integer arithmetic, defaults, env, encoding: the full list is
// kFunctions in go_template.cc). Errors read as Go's: "template: <name>:<line>: …".
//
// Bounds (the file is the operator's, but a loop is cheap to write): at most kMaxOutputBytes of
// output and kMaxSteps evaluation steps; past either, InvalidArgument.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace paddock::edge {

inline constexpr size_t kMaxTemplateOutputBytes = 16 << 20;
inline constexpr size_t kMaxTemplateSteps = 10'000'000;

struct TemplateLimits {
  size_t max_output_bytes = kMaxTemplateOutputBytes;
  size_t max_steps = kMaxTemplateSteps;
};

// `text` rendered; `name` is the template's name in errors (Traefik's: the file's path).
// InvalidArgument with Go's wording when it does not parse or fails to execute.
StatusOr<std::string> RenderGoTemplate(std::string_view text, std::string_view name, TemplateLimits limits = {});

}  // namespace paddock::edge
