// Go's text/template as Traefik's file provider uses it: each case is a template and what Go 1.22
// with sprig renders for it (worked out from Go's and sprig's documented behaviour), or the error.
#include "edge/go_template.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace paddock::edge {
namespace {

std::string Render(std::string_view text) {
  StatusOr<std::string> out = RenderGoTemplate(text, "dynamic.yml");
  return out.ok() ? *out : "ERROR " + std::string(out.status().message());
}

TEST(GoTemplateTest, TraefiksOwnFixtureRendersTwentyRouters) {
  // pkg/provider/file/fixtures/yaml/template_file.yml.
  const std::string out = Render("http:\n{{ range $i, $e := until 20 }}\n  routers:\n    router{{ $e }}:\n      "
                                 "service: application-1\n{{ end }}");
  EXPECT_NE(out.find("router0:"), std::string::npos) << out;
  EXPECT_NE(out.find("router19:"), std::string::npos);
  EXPECT_EQ(out.find("router20:"), std::string::npos);
}

TEST(GoTemplateTest, TextActionsTrimMarkersAndComments) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain text, no action", "plain text, no action"},
      {"a {{ \"b\" }} c", "a b c"},
      {"a  {{- \"b\" -}}  c", "abc"},
      {"a {{/* a comment */}}b", "a b"},
      {"a {{- /* trimmed */ -}} b", "ab"},
      {"{{ 3 }} {{ -3 }} {{ 0x1F }} {{ 1.5 }} {{ 1e6 }} {{ 'a' }}", "3 -3 31 1.5 1e+06 97"},
      {"{{ `raw\\n` }}|{{ \"esc\\t\\u00e9\" }}", "raw\\n|esc\t\xc3\xa9"},
      {"{{ true }} {{ false }} {{ print nil }}", "true false <nil>"},
      {"{{ $ }}", "<no value>"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Render(in), want) << in;
}

TEST(GoTemplateTest, VariablesPipelinesAndControl) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{{ $x := 2 }}{{ $x }}{{ $x = 5 }}{{ $x }}", "25"},
      {"{{ $x := 0 }}{{ range $x = until 3 }}{{ end }}{{ $x }}", "2"},
      {"{{ \"abc\" | upper | printf \"%s!\" }}", "ABC!"},
      {"{{ (add 1 2) | mul 10 }}", "30"},
      {"{{ if eq 1 2 }}a{{ else if eq 2 2 }}b{{ else }}c{{ end }}", "b"},
      {"{{ if \"\" }}yes{{ else }}no{{ end }}", "no"},
      {"{{ range $i, $e := list \"a\" \"b\" }}{{ $i }}={{ $e }};{{ end }}", "0=a;1=b;"},
      {"{{ range until 0 }}x{{ else }}none{{ end }}", "none"},
      {"{{ range 3 }}{{ . }}{{ end }}", "012"},
      {"{{ range $k, $v := dict \"b\" 2 \"a\" 1 }}{{ $k }}{{ $v }}{{ end }}", "a1b2"},
      {"{{ range until 10 }}{{ if eq . 3 }}{{ break }}{{ end }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ . }}{{ end }}",
       "02"},
      {"{{ with $d := dict \"k\" \"v\" }}{{ .k }}{{ $d.k }}{{ end }}", "vv"},
      {"{{ with \"\" }}x{{ else with \"y\" }}{{ . }}{{ end }}", "y"},
      {"{{ define \"r\" }}router-{{ . }}{{ end }}{{ template \"r\" \"a\" }} {{ template \"r\" 2 }}", "router-a router-2"},
      {"{{ and 1 0 \"x\" }} {{ or 0 \"\" \"z\" }} {{ not 0 }}", "0 z true"},
      {"{{ $d := dict \"a\" (dict \"b\" 7) }}{{ $d.a.b }} {{ index $d \"a\" \"b\" }} {{ $d.missing }}", "7 7 <no value>"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Render(in), want) << in;
}

TEST(GoTemplateTest, BuiltinsAndSprigFunctions) {
  setenv("PADDOCK_TEMPLATE_TEST", "from-env", 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{{ env \"PADDOCK_TEMPLATE_TEST\" }} {{ env \"PADDOCK_TEMPLATE_UNSET_X\" | default \"dflt\" }}", "from-env dflt"},
      {"{{ expandenv \"x-${PADDOCK_TEMPLATE_TEST}-$PADDOCK_TEMPLATE_TEST\" }}", "x-from-env-from-env"},
      {"{{ printf \"%05d|%-4s|%q|%x|%.2f|%v|%t\" 42 \"ab\" \"q\" 255 3.14159 (list 1 2) true }}",
       "00042|ab  |\"q\"|ff|3.14|[1 2]|true"},
      {"{{ print \"a\" 1 2 \"b\" }}|{{ println 1 \"x\" }}", "a1 2b|1 x\n"},
      {"{{ len \"abc\" }} {{ len (list 1 2) }} {{ slice \"hello\" 1 3 }} {{ index (list 5 6) 1 }}", "3 2 el 6"},
      {"{{ lt 1 2 }} {{ ge 2.5 2 }} {{ ne \"a\" \"b\" }} {{ eq 2 1 2 }}", "true true true true"},
      {"{{ trim \"  x \" }}|{{ trimPrefix \"a-\" \"a-b\" }}|{{ trimSuffix \".yml\" \"f.yml\" }}|{{ replace \"-\" \"_\" \"a-b-c\" }}",
       "x|b|f|a_b_c"},
      {"{{ lower \"AbC\" }} {{ title \"hello world\" }} {{ repeat 3 \"ab\" }} {{ nospace \"a b c\" }}",
       "abc Hello World ababab abc"},
      {"{{ contains \"ll\" \"hello\" }} {{ hasPrefix \"he\" \"hello\" }} {{ hasSuffix \"lo\" \"hello\" }}", "true true true"},
      {"{{ quote \"a\" \"b\" }} {{ squote \"c\" }} {{ cat \"x\" nil \"y\" }}", "\"a\" \"b\" 'c' x y"},
      {"{{ join \",\" (split \"a.b.c\" \".\") }} {{ splitList \"-\" \"x-y\" | last }} {{ list 3 1 2 | first }}", "a,b,c y 3"},
      {"{{ indent 2 \"a\\nb\" }}|{{ nindent 1 \"c\" }}", "  a\n  b|\n c"},
      {"{{ sub 10 3 }} {{ div 7 2 }} {{ mod 7 2 }} {{ max 1 9 3 }} {{ min 4 2 }} {{ add1 9 }} {{ atoi \"12\" }}",
       "7 3 1 9 2 10 12"},
      {"{{ untilStep 0 10 4 }} {{ list 1 2 | toJson }} {{ dict \"k\" \"v\" | toJson }}", "[0 4 8] [1,2] {\"k\":\"v\"}"},
      {"{{ b64enc \"hello\" }} {{ b64dec \"aGVsbG8=\" }}", "aGVsbG8= hello"},
      {"{{ ternary \"y\" \"n\" true }} {{ empty \"\" }} {{ coalesce \"\" 0 \"c\" }} {{ default 5 0 }}", "y true c 5"},
      {"{{ $d := dict }}{{ $_ := set $d \"a\" 1 }}{{ hasKey $d \"a\" }} {{ get $d \"a\" }} {{ keys (dict \"b\" 1 \"a\" 2) }}",
       "true 1 [a b]"},
      {"{{ has 2 (list 1 2) }} {{ uniq (list 1 1 2) }} {{ sortAlpha (list \"b\" \"a\") }} {{ append (list 1) 2 }}",
       "true [1 2] [a b] [1 2]"},
      {"{{ normalize \"my_app.v1\" }} {{ trunc 3 \"abcdef\" }} {{ substr 1 3 \"abcdef\" }} {{ urlquery \"a b&c\" }}",
       "my-app-v1 abc bc a+b%26c"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Render(in), want) << in;
}

TEST(GoTemplateTest, ErrorsReadAsGosWithTheFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\n{{ nosuchfunc 1 }}", "template: dynamic.yml:2: function \"nosuchfunc\" not defined"},
      {"{{ if 1 }}x", "template: dynamic.yml:1: unexpected EOF"},
      {"{{ end }}", "template: dynamic.yml:1: unexpected {{end}}"},
      {"{{ $y }}", "template: dynamic.yml:1: undefined variable \"$y\""},
      {"{{ \"abc }}", "template: dynamic.yml:1: unterminated quoted string"},
      {"{{ break }}", "template: dynamic.yml:1: {{break}} outside {{range}}"},
      {"{{ div 1 0 }}", "template: dynamic.yml:1: error calling div: runtime error: integer divide by zero"},
      {"{{ .a }}", "template: dynamic.yml:1: nil pointer evaluating interface {}.a"},
      {"{{ range \"s\" }}{{ end }}", "template: dynamic.yml:1: range can't iterate over s"},
      {"{{ fail \"stop here\" }}", "template: dynamic.yml:1: error calling fail: stop here"},
      {"{{ template \"nope\" }}", "template: dynamic.yml:1: no such template \"nope\""},
      {"{{ nil }}", "template: dynamic.yml:1: nil is not a command"},
      {"{{ range $z = until 2 }}{{ end }}", "template: dynamic.yml:1: undefined variable \"$z\""},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Render(in), "ERROR " + want) << in;
}

TEST(GoTemplateTest, BoundsStopRunawayTemplates) {
  StatusOr<std::string> steps =
      RenderGoTemplate("{{ range until 1000 }}{{ range until 1000 }}x{{ end }}{{ end }}", "f.yml",
                       TemplateLimits{.max_output_bytes = 1 << 30, .max_steps = 10000});
  ASSERT_FALSE(steps.ok());
  // Each inner `until 1000` costs its thousand elements: the budget runs out within ten rounds.
  const std::string why(steps.status().message());
  EXPECT_TRUE(why.find("stopped after 10000 steps") != std::string::npos ||
              why.find("the result is too large for the template's bounds") != std::string::npos)
      << why;
  StatusOr<std::string> loop = RenderGoTemplate("{{ range 100000 }}{{ end }}", "f.yml",
                                                TemplateLimits{.max_output_bytes = 1 << 30, .max_steps = 10000});
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.status().message(), "template: f.yml:1: stopped after 10000 steps");
  StatusOr<std::string> cycle = RenderGoTemplate("{{ $d := dict }}{{ $_ := set $d \"me\" (list $d) }}", "f.yml");
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.status().message().find("a dict cannot hold itself"), std::string::npos);
  StatusOr<std::string> deep = RenderGoTemplate("{{ $l := list }}{{ range 200 }}{{ $l = list $l }}{{ end }}", "f.yml");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nest at most 100 deep"), std::string::npos);
  StatusOr<std::string> bytes = RenderGoTemplate("{{ range until 100 }}{{ repeat 1000 \"y\" }}{{ end }}", "f.yml",
                                                 TemplateLimits{.max_output_bytes = 5000, .max_steps = 1'000'000});
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("the output passed 5000 bytes"), std::string::npos);
  StatusOr<std::string> recursion =
      RenderGoTemplate("{{ define \"r\" }}{{ template \"r\" }}{{ end }}{{ template \"r\" }}", "f.yml");
  EXPECT_FALSE(recursion.ok());
}

}  // namespace
}  // namespace paddock::edge
