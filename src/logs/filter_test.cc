// logs::Filter: AWS's documented filter-pattern examples, pattern by pattern and message by message,
// then the patterns AWS refuses (with its texts) and the bounds that keep hostile input linear.
//
// Examples come from the CloudWatch Logs user guide, "Filter pattern syntax"
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html; the text
// read is the archived source, awsdocs/amazon-cloudwatch-logs-user-guide doc_source/FilterAndPatternSyntax.md),
// its newer pages on unstructured and JSON log events
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/matching-terms-json-log-events.html), the
// API reference's FilterLogEvents examples as repeated by the SDKs
// (https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/lightsail/aws.sdk.kotlin.services.lightsail.model/-get-container-log-request/filter-pattern.html)
// and the patterns AWS's CDK writes (aws-cdk-lib/aws-logs/lib/pattern.ts: anyTermGroup, quoteTerm).
#include "logs/filter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>
#include <ostream>
#include <string>
#include <vector>

namespace paddock::logs {
namespace {

struct MatchCase {
  std::string name;
  std::string pattern;
  std::string message;
  bool matches;
};

void PrintTo(const MatchCase& c, std::ostream* os) { *os << c.name; }

// Test names are the cases' names: Terms/FilterMatchTest.MatchesAsAwsDocuments/SingleTerm.
template <typename Case>
std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

class FilterMatchTest : public ::testing::TestWithParam<MatchCase> {};

TEST_P(FilterMatchTest, MatchesAsAwsDocuments) {
  const MatchCase& c = GetParam();
  StatusOr<Filter> f = Filter::Compile(c.pattern);
  ASSERT_TRUE(f.ok()) << c.pattern << ": " << f.status().ToString();
  EXPECT_EQ(f->Matches(c.message), c.matches) << "pattern: " << c.pattern << "\nmessage: " << c.message;
  EXPECT_EQ(f->pattern(), c.pattern);
}

// FilterAndPatternSyntax "Matching Terms in Log Events" and "OR Pattern Matching".
const char kOr1[] = "ERROR WARN message";
const char kOr2[] = "ERROR message";
const char kOr3[] = "WARN message";

INSTANTIATE_TEST_SUITE_P(
    Terms, FilterMatchTest,
    ::testing::Values(
        // "Example 1: Match everything": the filter pattern "" matches all log events.
        MatchCase{"EmptyMatchesEverything", "", "anything at all", true},
        MatchCase{"EmptyMatchesTheEmptyMessage", "", "", true},
        MatchCase{"BlankIsEmpty", "   ", "anything", true},
        // "Example 2: Single term": ERROR matches these two.
        MatchCase{"SingleTerm", "ERROR", "[ERROR] A fatal exception has occurred", true},
        MatchCase{"SingleTermIsASubstring", "ERROR", "Exiting with ERRORCODE: -1", true},
        MatchCase{"TermsAreCaseSensitive", "ERROR", "[error] lower case", false},
        // "Example 3: Include a term and exclude a term": ERROR -Exiting drops the second event.
        MatchCase{"ExcludeDrops", "ERROR -Exiting", "Exiting with ERRORCODE: -1", false},
        MatchCase{"ExcludeKeeps", "ERROR -Exiting", "[ERROR] A fatal exception has occurred", true},
        MatchCase{"ExcludeQuotedAsTheOldGuideWritesIt", R"("ERROR" - "Exiting")", "Exiting with ERRORCODE: -1", false},
        // The API reference: "-ERROR" returns all other events.
        MatchCase{"OnlyAnExclusionKeepsOthers", "-ERROR", "INFO all good", true},
        MatchCase{"OnlyAnExclusionDrops", "-ERROR", "ERROR bad", false},
        // "Example 4: Multiple terms": every term must appear, in any order.
        MatchCase{"AllTerms1", "ERROR Exception", "[ERROR] Caught IllegalArgumentException", true},
        MatchCase{"AllTerms2", "ERROR Exception", "[ERROR] Unhandled Exception", true},
        MatchCase{"AllTermsMissingOne", "ERROR Exception", "[ERROR] Unhandled failure", false},
        MatchCase{"AllTermsAnyOrder", "Failed to process the request", "[WARN] Failed to process the request", true},
        MatchCase{"AllTermsAnyOrder2", "Failed to process the request",
                  "[ERROR] Unable to continue: Failed to process the request", true},
        MatchCase{"WordsAreNotAPhrase", "Failed to process the request", "the request to process Failed", true},
        // "OR Pattern Matching", events 1-3.
        MatchCase{"OrExample_ERROR_1", "ERROR", kOr1, true},
        MatchCase{"OrExample_ERROR_2", "ERROR", kOr2, true},
        MatchCase{"OrExample_ERROR_3", "ERROR", kOr3, false},
        MatchCase{"OrExample_Any_1", "?ERROR ?WARN", kOr1, true},
        MatchCase{"OrExample_Any_2", "?ERROR ?WARN", kOr2, true},
        MatchCase{"OrExample_Any_3", "?ERROR ?WARN", kOr3, true},
        MatchCase{"OrExample_Any_None", "?ERROR ?WARN", "INFO message", false},
        MatchCase{"OrExample_Both_1", "ERROR WARN", kOr1, true},
        MatchCase{"OrExample_Both_2", "ERROR WARN", kOr2, false},
        MatchCase{"OrExample_Both_3", "ERROR WARN", kOr3, false},
        MatchCase{"OrExample_ErrorNotWarn_1", "ERROR -WARN", kOr1, false},
        MatchCase{"OrExample_ErrorNotWarn_2", "ERROR -WARN", kOr2, true},
        MatchCase{"OrExample_ErrorNotWarn_3", "ERROR -WARN", kOr3, false},
        // Quoted phrases: "Enclose exact phrases and terms that include non-alphanumeric characters in
        // double quotation marks".
        MatchCase{"PhraseMatchesInOrder", R"("INTERNAL SERVER ERROR")", "[ERROR 500] INTERNAL SERVER ERROR", true},
        MatchCase{"PhraseNeedsTheExactSequence", R"("INTERNAL SERVER ERROR")", "SERVER INTERNAL ERROR", false},
        MatchCase{"QuotedNonAlphanumerics", R"("email@domain.com")", "login email@domain.com ok", true},
        MatchCase{"QuotedEscapes", R"("say \"hi\" to C:\\temp")", R"(say "hi" to C:\temp)", true},
        MatchCase{"OtherBackslashesAreLiteral", R"("a\nb")", R"(x a\nb y)", true},
        MatchCase{"QuotedExclusion", R"(GET -"/health")", "GET /health 200", false},
        MatchCase{"QuotedExclusionKeeps", R"(GET -"/health")", "GET /api 200", true},
        MatchCase{"QuotedMultibyte", "\"d\xc3\xa9j\xc3\xa0\"", "d\xc3\xa9j\xc3\xa0 vu", true},
        // AWS's CDK: anyTermGroup(['ERROR','MainThread'], ['WARN','Deadlock']) renders
        // ?"ERROR" "MainThread" ?"WARN" "Deadlock": (ERROR and MainThread) or (WARN and Deadlock).
        MatchCase{"TermGroupsFirst", R"(?"ERROR" "MainThread" ?"WARN" "Deadlock")", "ERROR in MainThread", true},
        MatchCase{"TermGroupsSecond", R"(?"ERROR" "MainThread" ?"WARN" "Deadlock")", "WARN Deadlock found", true},
        MatchCase{"TermGroupsNeitherWhole", R"(?"ERROR" "MainThread" ?"WARN" "Deadlock")", "ERROR Deadlock", false},
        MatchCase{"TermGroupWithExclusion", "?ERROR -retry ?FATAL", "ERROR will retry", false},
        MatchCase{"TermGroupWithExclusionOther", "?ERROR -retry ?FATAL", "FATAL will retry", true},
        // Paddock's reading of terms before the first '?': a group of their own.
        MatchCase{"LeadingTermsAreAGroup", "disk full ?panic", "disk is full", true},
        MatchCase{"LeadingTermsAreAGroup2", "disk full ?panic", "kernel panic", true},
        MatchCase{"LeadingTermsAreAGroup3", "disk full ?panic", "disk ok", false},
        MatchCase{"Numbers", "error 404", "error 404 not found", true},
        MatchCase{"TermsMatchAcrossLines", "first second", "first\nsecond", true}),
    CaseName<MatchCase>);

// The JSON examples of FilterAndPatternSyntax ("JSON Metric Filter Examples").
const char kDocEvent[] = R"({
  "eventType": "UpdateTrail",
  "sourceIPAddress": "111.111.111.111",
  "arrayKey": ["value", "another value"],
  "objectList": [{"name": "a", "id": 1}, {"name": "b", "id": 2}],
  "SomeObject": null,
  "ThisFlag": true
})";

// "JSON Compound Conditions".
const char kCompoundEvent[] = R"({
  "user": {"id": 1, "email": "John.Stiles@example.com"},
  "users": [{"id": 2, "email": "John.Doe@example.com"}, {"id": 3, "email": "Jane.Doe@example.com"}],
  "actions": ["GET", "PUT", "DELETE"],
  "coordinates": [[0, 1, 2], [4, 5, 6], [7, 8, 9]]
})";

// "Numeric Comparisons": an event the documented patterns are read against.
const char kNumericEvent[] = R"({"latency": 500, "numbers": [5],
  "processes": [{}, {}, {}, {}, {"averageRuntime": 55.5}], "errorCode": 400})";

INSTANTIATE_TEST_SUITE_P(
    Json, FilterMatchTest,
    ::testing::Values(
        MatchCase{"StringEquals", R"({ $.eventType = "UpdateTrail" })", kDocEvent, true},
        MatchCase{"StringEqualsIsWhole", R"({ $.eventType = "Update" })", kDocEvent, false},
        MatchCase{"StringNotEqualsWildcard", "{ $.sourceIPAddress != 123.123.* }", kDocEvent, true},
        MatchCase{"StringEqualsWildcard", "{ $.sourceIPAddress = 111.111.* }", kDocEvent, true},
        MatchCase{"LeadingWildcard", R"({ $.eventType = "*Trail" })", kDocEvent, true},
        MatchCase{"TrailingWildcard", "{ $.eventType = Update* }", kDocEvent, true},
        MatchCase{"BothWildcards", "{ $.eventType = *dateTr* }", kDocEvent, true},
        MatchCase{"BothWildcardsMiss", "{ $.eventType = *xyz* }", kDocEvent, false},
        // "Ev*ent will only match the actual string Ev*ent".
        MatchCase{"InnerStarIsLiteral", "{ $.eventType = Update*ail }", kDocEvent, false},
        MatchCase{"InnerStarIsLiteral2", "{ $.a = Ev*ent }", R"({"a": "Ev*ent"})", true},
        MatchCase{"StarAloneMatchesAnyValue", "{ $.eventType = * }", kDocEvent, true},
        MatchCase{"QuotedStarIsAWildcardToo", R"({ $.eventType = "*" })", kDocEvent, true},
        MatchCase{"ArrayIndex", R"({ $.arrayKey[0] = "value" })", kDocEvent, true},
        MatchCase{"ArrayIndexSecond", R"({ $.arrayKey[1] = "another value" })", kDocEvent, true},
        MatchCase{"ArrayIndexOutOfRange", R"({ $.arrayKey[2] = "value" })", kDocEvent, false},
        MatchCase{"IndexIntoANonArray", R"({ $.eventType[0] = "U" })", kDocEvent, false},
        MatchCase{"ObjectInArray", "{ $.objectList[1].id = 2 }", kDocEvent, true},
        MatchCase{"ObjectInArrayOther", "{ $.objectList[0].id = 2 }", kDocEvent, false},
        MatchCase{"IsNull", "{ $.SomeObject IS NULL }", kDocEvent, true},
        MatchCase{"IsNullOfAValue", "{ $.eventType IS NULL }", kDocEvent, false},
        MatchCase{"IsNullOfAMissingField", "{ $.SomeOtherObject IS NULL }", kDocEvent, false},
        MatchCase{"NotExists", "{ $.SomeOtherObject NOT EXISTS }", kDocEvent, true},
        MatchCase{"NotExistsOfNull", "{ $.SomeObject NOT EXISTS }", kDocEvent, false},
        MatchCase{"Exists", "{ $.SomeObject EXISTS }", kDocEvent, true},
        MatchCase{"ExistsMissing", "{ $.SomeOtherObject EXISTS }", kDocEvent, false},
        MatchCase{"IsTrue", "{ $.ThisFlag IS TRUE }", kDocEvent, true},
        MatchCase{"IsFalse", "{ $.ThisFlag IS FALSE }", kDocEvent, false},
        MatchCase{"IsTrueOfAString", "{ $.eventType IS TRUE }", kDocEvent, false},
        MatchCase{"NullIsNoValueForEquals", "{ $.SomeObject = * }", kDocEvent, false},
        MatchCase{"MissingFieldNeverEquals", "{ $.nothing = * }", kDocEvent, false},
        MatchCase{"MissingFieldNeverDiffers", "{ $.nothing != x }", kDocEvent, false},
        // "JSON Special Considerations": a selector on an array or object never matches, = or !=.
        MatchCase{"EqualsOnAnArray", "{$.users = 1}", R"({"users": [1, 2, 3]})", false},
        MatchCase{"NotEqualsOnAnArray", "{$.users != 1}", R"({"users": [1, 2, 3]})", false},
        MatchCase{"NotEqualsOnAnObject", "{ $.objectList[0] != x }", kDocEvent, false},
        // JSON OR example.
        MatchCase{"OrFooBar", "{$.foo = bar}", R"({"foo": "bar"})", true},
        MatchCase{"OrFooBarOnBaz", "{$.foo = bar}", R"({"foo": "baz"})", false},
        MatchCase{"OrFooBaz", "{$.foo = baz }", R"({"foo": "baz"})", true},
        MatchCase{"OrEither1", "{$.foo = bar || $.foo = baz }", R"({"foo": "bar"})", true},
        MatchCase{"OrEither2", "{$.foo = bar || $.foo = baz }", R"({"foo": "baz"})", true},
        MatchCase{"OrEitherNeither", "{$.foo = bar || $.foo = baz }", R"({"foo": "qux"})", false},
        // "JSON Compound Conditions": () > && > ||.
        MatchCase{"Compound1", R"({ ($.user.id = 1) && ($.users[0].email = "John.Doe@example.com") })", kCompoundEvent, true},
        MatchCase{"Compound2", R"({ ($.user.id = 2 && $.users[0].email = "nonmatch") || $.actions[2] = "GET" })",
                  kCompoundEvent, false},
        MatchCase{"Compound3",
                  R"({ $.user.email = "John.Stiles@example.com" || $.coordinates[0][1] = nonmatch && $.actions[2] = nomatch })",
                  kCompoundEvent, true},
        MatchCase{"Compound4",
                  R"({ ($.user.email = "John.Stiles@example.com" || $.coordinates[0][1] = nonmatch) && $.actions[2] = nomatch })",
                  kCompoundEvent, false},
        MatchCase{"NestedArrays", "{ $.coordinates[1][2] = 6 }", kCompoundEvent, true},
        MatchCase{"DeepParentheses", "{ ((($.user.id = 1))) && ((($.actions[0] = GET))) }", kCompoundEvent, true},
        // "Numeric Comparisons" examples.
        MatchCase{"GreaterOrEqual", "{ $.latency >= 500 }", kNumericEvent, true},
        MatchCase{"LessThanScientific", "{ $.numbers[0] < 10e3 }", kNumericEvent, true},
        MatchCase{"LessThanNegativeExponent", "{ $.numbers[0] < 10e-3 }", kNumericEvent, false},
        MatchCase{"DecimalLessOrEqual", "{ $.processes[4].averageRuntime <= 55.5 }", kNumericEvent, true},
        MatchCase{"NumberEquals", "{ $.errorCode = 400 }", kNumericEvent, true},
        MatchCase{"NumberNotEquals", "{ $.errorCode != 500 }", kNumericEvent, true},
        MatchCase{"PlusSign", "{ $.latency > +1000 }", kNumericEvent, false},
        MatchCase{"NumberEqualsDecimalForm", "{ $.errorCode = 400.0 }", kNumericEvent, true},
        MatchCase{"LessThan", "{ $.latency < 500 }", kNumericEvent, false},
        MatchCase{"Greater", "{ $.latency > -1 }", kNumericEvent, true},
        // Paddock's choices where the guide is silent (docs/contracts/logs.md).
        MatchCase{"NumberLiteralAgainstAStringField", "{ $.recipientAccountId = 123456789012 }",
                  R"({"recipientAccountId": "123456789012"})", true},
        MatchCase{"OrderingNeedsANumberField", "{ $.latency > 100 }", R"({"latency": "500"})", false},
        MatchCase{"QuotedNumberAgainstANumberField", R"({ $.id = "2" })", R"({"id": 2})", true},
        MatchCase{"BareTrueAgainstABoolean", "{ $.ok = true }", R"({"ok": true})", true},
        MatchCase{"KeysWithDashAndUnderscore", "{ $.a-b.c_d = 1 }", R"({"a-b": {"c_d": 1}})", true},
        MatchCase{"EscapedQuoteInValue", R"({ $.m = "say \"hi\"" })", R"({"m": "say \"hi\""})", true},
        MatchCase{"NoSpaces", R"({$.a=1&&$.b="x"})", R"({"a": 1, "b": "x"})", true},
        // A message that is not one JSON object never matches a JSON pattern, not even NOT EXISTS.
        MatchCase{"PlainTextNeverMatches", "{ $.eventType NOT EXISTS }", "ERROR not json", false},
        MatchCase{"PrefixedJsonNeverMatches", R"({ $.a = 1 })", R"(2024-01-01 INFO {"a": 1})", false},
        MatchCase{"TrailingTextNeverMatches", R"({ $.a = 1 })", R"({"a": 1} trailing)", false},
        MatchCase{"BrokenJsonNeverMatches", R"({ $.a = 1 })", R"({"a": 1)", false},
        MatchCase{"JsonArrayNeverMatches", "{ $.a NOT EXISTS }", "[1, 2]", false},
        MatchCase{"SurroundingWhitespaceIsFine", R"({ $.a = 1 })", " \n{\"a\": 1}\n", true}),
    CaseName<MatchCase>);

// "Using Metric Filters to Extract Values from Space-Delimited Log Events" (FilterAndPatternSyntax).
const char kApache1[] = R"(127.0.0.1 - frank [10/Oct/2000:13:25:15 -0700] "GET /apache_pb.gif HTTP/1.0" 200 1534)";
const char kApache2[] = R"(127.0.0.1 - frank [10/Oct/2000:13:35:22 -0700] "GET /apache_pb.gif HTTP/1.0" 500 5324)";
const char kApache404[] = R"(127.0.0.1 - frank [10/Oct/2000:13:25:15 -0700] "GET /index.html HTTP/1.0" 404 1534)";
const char kApache403[] = R"(127.0.0.1 - frank [10/Oct/2000:13:25:15 -0700] "GET /index.html HTTP/1.0" 403 1534)";
const char kAll7[] = "[ip, user, username, timestamp, request, status_code, bytes]";

INSTANTIATE_TEST_SUITE_P(
    Delimited, FilterMatchTest,
    ::testing::Values(
        MatchCase{"SevenNamedFields", kAll7, kApache1, true},
        MatchCase{"FieldCountMustBeEqual", "[ip, user, username, timestamp, request, status_code]", kApache1, false},
        MatchCase{"FieldCountMustBeEqualMore", "[ip, user, username, timestamp, request, status_code, bytes, more]",
                  kApache1, false},
        MatchCase{"EllipsisFirst", "[..., status_code, bytes]", kApache1, true},
        MatchCase{"EllipsisMiddle", "[ip, user, ..., status_code, bytes]", kApache1, true},
        MatchCase{"EllipsisLast", "[ip, user, ...]", kApache1, true},
        MatchCase{"EllipsisMayBeEmpty", "[ip, user, username, timestamp, request, ..., status_code, bytes]", kApache1, true},
        MatchCase{"EllipsisNeedsTheNamedFields", "[a, b, c, d, e, f, ..., g, h]", kApache1, false},
        MatchCase{"NumberGreater", "[ip, user, username, timestamp, request, status_code, bytes > 1000]", kApache1, true},
        MatchCase{"NumberGreaterMiss", "[..., bytes > 5000]", kApache1, false},
        MatchCase{"NumberGreaterHit", "[..., bytes > 5000]", kApache2, true},
        MatchCase{"StatusEquals", "[ip, user, username, timestamp, request, status_code = 200, bytes]", kApache1, true},
        MatchCase{"StatusEqualsMiss", "[ip, user, username, timestamp, request, status_code = 200, bytes]", kApache2, false},
        MatchCase{"StatusWildcard", "[ip, user, username, timestamp, request, status_code = 4*, bytes]", kApache404, true},
        MatchCase{"StatusWildcardMiss", "[ip, user, username, timestamp, request, status_code = 4*, bytes]", kApache1, false},
        // Quoted and bracketed fields are one field each, without their delimiters.
        MatchCase{"RequestContains", "[ip, user, username, timestamp, request = *html*, status_code = 4*, bytes]",
                  kApache404, true},
        MatchCase{"RequestContainsMiss", "[ip, user, username, timestamp, request = *html*, status_code = 4*, bytes]",
                  kApache1, false},
        MatchCase{"QuotedFieldWhole", R"([..., request = "GET /index.html HTTP/1.0", status_code, bytes])", kApache404, true},
        MatchCase{"BracketedFieldWhole", R"([ip, user, username, timestamp = "10/Oct/2000:13:25:15 -0700", ...])", kApache1, true},
        MatchCase{"AndOnOneField", "[ip, user, username, timestamp, request, status_code = 4* && status_code != 403, bytes]",
                  kApache404, true},
        MatchCase{"AndOnOneFieldMiss", "[ip, user, username, timestamp, request, status_code = 4* && status_code != 403, bytes]",
                  kApache403, false},
        MatchCase{"OrOnOneField", "[ip, user, username, timestamp, request, status_code = 403 || status_code = 404, bytes]",
                  kApache403, true},
        MatchCase{"OrOnOneFieldMiss", "[ip, user, username, timestamp, request, status_code = 403 || status_code = 404, bytes]",
                  kApache1, false},
        // The example whose extracted fields the guide lists: `...`, then three fields, the last unnamed.
        MatchCase{"TrailingCommaIsAnUnnamedField", "[..., request=*.html*, status_code=4*,]", kApache404, true},
        // "OR Pattern Matching" in space-delimited filters: w1 is the first word.
        MatchCase{"FirstWord_1", "[w1=ERROR, w2]", kOr1, false},
        MatchCase{"FirstWord_2", "[w1=ERROR, w2]", kOr2, true},
        MatchCase{"FirstWord_3", "[w1=ERROR, w2]", kOr3, false},
        MatchCase{"FirstWordEither_2", "[w1=ERROR || w1=WARN, w2]", kOr2, true},
        MatchCase{"FirstWordEither_3", "[w1=ERROR || w1=WARN, w2]", kOr3, true},
        MatchCase{"FirstWordEither_1", "[w1=ERROR || w1=WARN, w2]", kOr1, false},
        // && before ||, as in JSON patterns.
        MatchCase{"AndBeforeOr", "[a = 1 || a > 5 && a < 10]", "7", true},
        MatchCase{"AndBeforeOr2", "[a = 1 || a > 5 && a < 10]", "1", true},
        MatchCase{"AndBeforeOr3", "[a = 1 || a > 5 && a < 10]", "12", false},
        MatchCase{"NumberFieldNotANumber", "[a > 5]", "abc", false},
        MatchCase{"NumberEqualsAsText", "[a = 200]", "200.0", true},
        MatchCase{"DigitsAndLettersAreAString", "[a = 007x]", "007x", true},
        MatchCase{"NotEquals", "[a != GET]", "POST", true},
        MatchCase{"BlankRunsSeparate", "[a, b]", "  one \t two  ", true},
        MatchCase{"UnclosedQuoteRunsToTheEnd", "[a, b = \"x y\"]", "one \"x y", true},
        MatchCase{"EmptyMessageHasNoFields", "[a]", "", false},
        MatchCase{"EllipsisAloneMatchesEverything", "[...]", "", true}),
    CaseName<MatchCase>);

INSTANTIATE_TEST_SUITE_P(
    Regex, FilterMatchTest,
    ::testing::Values(
        // The guide's examples (regex-expressions.html and FilterAndPatternSyntax).
        MatchCase{"Keyword", "%AUTHORIZED%", "[ERROR 401] UNAUTHORIZED REQUEST", true},
        MatchCase{"Keyword2", "%AUTHORIZED%", "[SUCCESS 200] AUTHORIZED REQUEST", true},
        MatchCase{"KeywordMiss", "%AUTHORIZED%", "[SUCCESS 200] OK", false},
        MatchCase{"AnchoredStart", "%^[hc]at%", "hat trick", true},
        MatchCase{"AnchoredStartMiss", "%^[hc]at%", "that", false},
        MatchCase{"AnchoredEnd", "%[hc]at$%", "that", true},
        MatchCase{"AnchoredEndMiss", "%[hc]at$%", "cats", false},
        MatchCase{"Optional", "%colou?r%", "color", true},
        MatchCase{"Optional2", "%colou?r%", "colour", true},
        MatchCase{"Class", "%[abc]%", "xxbxx", true},
        MatchCase{"ClassMiss", "%[abc]%", "xyz", false},
        MatchCase{"Range", "%[a-z]%", "ABC1d", true},
        MatchCase{"RangeMiss", "%[a-z]%", "ABC1", false},
        MatchCase{"ClassAndRange", "%[abcx-z]%", "QyQ", true},
        MatchCase{"NegatedClass", "%^[^0-9]%", "a12", true},
        MatchCase{"NegatedClassMiss", "%^[^0-9]%", "1ab", false},
        MatchCase{"Repeat", "%a{3,5}%", "xaaax", true},
        MatchCase{"RepeatTooFew", "%a{3,5}%", "xaax", false},
        MatchCase{"RepeatBounded", "%^a{3,5}$%", "aaaaaa", false},
        MatchCase{"RepeatBoundedOk", "%^a{3,5}$%", "aaaaa", true},
        MatchCase{"RepeatExact", "%^a{2}$%", "aa", true},
        MatchCase{"RepeatAtLeast", "%^a{2,}$%", "aaaaaaa", true},
        MatchCase{"RepeatAtLeastMiss", "%^a{2,}$%", "a", false},
        MatchCase{"Alternatives", "%gray|grey%", "a grey cat", true},
        MatchCase{"AlternativesWithClasses", "%[Ee]rror|[Ff]ail%", "request failed: Fail", true},
        MatchCase{"AlternativesWithClasses2", "%[Ee]rror|[Ff]ail%", "an error", true},
        MatchCase{"AlternativesWithClassesMiss", "%[Ee]rror|[Ff]ail%", "ERROR FAIL", false},
        MatchCase{"EscapedDots", "%10\\.10\\.0\\.1%", "from 10.10.0.1", true},
        MatchCase{"EscapedDotsMiss", "%10\\.10\\.0\\.1%", "from 10a10b0c1", false},
        MatchCase{"IpAddress", "%\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}%", "connect from 192.168.0.1:443", true},
        MatchCase{"IpAddressMiss", "%\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}%", "connect from localhost", false},
        MatchCase{"StarAndPlus", "%ab*c%", "ac", true},
        MatchCase{"Plus", "%ab+c%", "ac", false},
        MatchCase{"Plus2", "%ab+c%", "abbbc", true},
        MatchCase{"Dot", "%a.c%", "abc", true},
        MatchCase{"DotIsNotALineFeed", "%a.c%", "a\nc", false},
        MatchCase{"WhitespaceEscape", "%ERROR\\s500%", "ERROR 500", true},
        MatchCase{"WordEscape", "%^\\w+=\\d+$%", "retries=3", true},
        MatchCase{"AllowedSymbols", "%user@host:/var/log;x,y-z#1%", "user@host:/var/log;x,y-z#1", true},
        MatchCase{"EmptyMessage", "%^$%", "", true},
        MatchCase{"CaseSensitive", "%error%", "ERROR", false},
        // As the value of a JSON or space-delimited condition.
        MatchCase{"JsonValue", "{ $.eventType = %Update.*% }", kDocEvent, true},
        MatchCase{"JsonValueNotEquals", "{ $.eventType != %^Get% }", kDocEvent, true},
        MatchCase{"JsonValueMiss", "{ $.eventType = %^Get% }", kDocEvent, false},
        MatchCase{"JsonValueOnANumber", "{ $.objectList[1].id = %^[0-9]$% }", kDocEvent, true},
        MatchCase{"JsonTwoRegexes", "{ $.eventType = %Trail$% && $.sourceIPAddress = %^111\\.% }", kDocEvent, true},
        MatchCase{"DelimitedValue", "[w1 = %^ERR%, w2]", "ERROR message", true},
        MatchCase{"DelimitedValueMiss", "[w1 = %^ERR%, w2]", "WARN message", false}),
    CaseName<MatchCase>);

struct InvalidCase {
  std::string name;
  std::string pattern;
  std::string message;
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

class FilterInvalidTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(FilterInvalidTest, RefusedAsInvalidParameter) {
  const InvalidCase& c = GetParam();
  StatusOr<Filter> f = Filter::Compile(c.pattern);
  ASSERT_FALSE(f.ok()) << c.pattern;
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsError(f.status(), Error::kInvalidParameter)) << f.status().ToString();
  EXPECT_EQ(f.status().message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Patterns, FilterInvalidTest,
    ::testing::Values(
        // AWS's texts: https://github.com/Miserlou/Zappa/issues/651 (an unquoted e-mail address is
        // refused), https://github.com/DefangLabs/defang/issues/1008 ('""'), and
        // https://github.com/jorgebastida/awslogs/issues/210 (an unclosed '{').
        InvalidCase{"UnquotedNonAlphanumerics", "email@domain.com",
                    "Invalid filter pattern: Invalid character(s) in term 'email@domain.com'"},
        InvalidCase{"UnquotedSlash", "GET /health", "Invalid filter pattern: Invalid character(s) in term '/health'"},
        InvalidCase{"EmptyQuotedTerm", R"(ERROR "")", "Invalid filter pattern: Invalid character(s) in term '\"\"'"},
        InvalidCase{"TextAfterAQuote", R"("abc"def)", "Invalid filter pattern: Invalid character(s) in term '\"abc\"def'"},
        InvalidCase{"QuestionMarkInATerm", "wh?t", "Invalid filter pattern: Invalid character(s) in term 'wh?t'"},
        InvalidCase{"UnclosedBrace", R"({ $.a = "x")", "If a filter pattern starts with '{' it must end with '}'"},
        InvalidCase{"TextAfterTheBrace", R"({ $.a = "x" } ERROR)", "If a filter pattern starts with '{' it must end with '}'"},
        // Paddock's own wording where AWS's is not known (all InvalidParameterException).
        InvalidCase{"UnterminatedQuote", R"("abc)", "Invalid filter pattern: a quoted term has no closing '\"'"},
        InvalidCase{"DanglingMinus", "ERROR -", "Invalid filter pattern: '?' and '-' must be followed by a term"},
        InvalidCase{"DanglingQuestionMark", "?", "Invalid filter pattern: '?' and '-' must be followed by a term"},
        InvalidCase{"EmptyJson", "{ }", "Invalid filter pattern: a JSON filter pattern needs a condition between '{' and '}'"},
        InvalidCase{"NoSelector", "{ a = 1 }", "Invalid filter pattern: expected a selector starting with '$', found 'a'"},
        InvalidCase{"BareDollar", "{ $ = 1 }", "Invalid filter pattern: invalid selector '$'"},
        InvalidCase{"IndexOnTheRoot", "{ $[0] = 1 }", "Invalid filter pattern: invalid selector '$[0]'"},
        InvalidCase{"UnclosedIndex", "{ $.a[0 = 1 }", "Invalid filter pattern: invalid selector '$.a[0'"},
        InvalidCase{"EmptyKey", "{ $..a = 1 }", "Invalid filter pattern: invalid selector '$..a'"},
        InvalidCase{"NoOperator", "{ $.a }",
                    "Invalid filter pattern: expected =, !=, <, <=, >, >=, IS, EXISTS or NOT EXISTS after '$.a'"},
        InvalidCase{"NoValue", "{ $.a = }", "Invalid filter pattern: the JSON filter pattern ends too early"},
        InvalidCase{"OrderingAString", "{ $.a > abc }", "Invalid filter pattern: '>' compares numbers, and 'abc' is not one"},
        InvalidCase{"OrderingAQuotedNumber", R"({ $.a > "5" })", "Invalid filter pattern: '>' compares numbers, and '5' is not one"},
        InvalidCase{"IsWhat", "{ $.a IS MAYBE }", "Invalid filter pattern: expected NULL, TRUE or FALSE after IS"},
        InvalidCase{"NotWhat", "{ $.a NOT NULL }", "Invalid filter pattern: expected EXISTS after NOT"},
        InvalidCase{"SingleAmpersand", "{ $.a = 1 & $.b = 2 }", "Invalid filter pattern: '&' must be '&&'"},
        InvalidCase{"SinglePipe", "{ $.a = 1 | $.b = 2 }", "Invalid filter pattern: '|' must be '||'"},
        InvalidCase{"Bang", "{ !$.a = 1 }", "Invalid filter pattern: '!' must be '!='"},
        InvalidCase{"DanglingAnd", "{ $.a = 1 && }", "Invalid filter pattern: the JSON filter pattern ends too early"},
        InvalidCase{"UnclosedParenthesis", "{ ($.a = 1 }", "Invalid filter pattern: a '(' is not closed"},
        InvalidCase{"StrayParenthesis", "{ $.a = 1) }", "Invalid filter pattern: unexpected ')' in the JSON filter pattern"},
        InvalidCase{"TwoConditionsWithoutAnOperator", "{ $.a = 1 $.b = 2 }",
                    "Invalid filter pattern: unexpected '$.b' in the JSON filter pattern"},
        InvalidCase{"UnquotedSpecialValue", "{ $.a = x@y }", "Invalid filter pattern: Invalid character(s) in term '@y'"},
        InvalidCase{"UnterminatedQuotedValue", R"({ $.a = "x })", "Invalid filter pattern: a quoted term has no closing '\"'"},
        // Regular expressions: AWS's subset
        // (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/regex-expressions.html).
        InvalidCase{"RegexUnsupportedSymbol", "%something!%",
                    "Invalid filter pattern: the character '!' is not supported in regular expressions"},
        InvalidCase{"RegexBlank", "%ERROR [0-9]+%",
                    "Invalid filter pattern: the character ' ' is not supported in regular expressions"},
        InvalidCase{"RegexParentheses", "%(ab)+%", "Invalid filter pattern: '(' and ')' are not supported in regular expressions"},
        InvalidCase{"RegexMultibyte", "%d\xc3\xa9j\xc3\xa0%",
                    "Invalid filter pattern: multi-byte characters are not supported in regular expressions"},
        InvalidCase{"RegexEmpty", "%%", "Invalid filter pattern: a regular expression between '%' and '%' is empty"},
        InvalidCase{"RegexEmptyAlternative", "%a|%", "Invalid filter pattern: a regular expression has an empty alternative"},
        InvalidCase{"RegexUnclosed", "%abc", "Invalid filter pattern: a regular expression has no closing '%'"},
        InvalidCase{"RegexAmongTerms", "ERROR %abc%", "Invalid filter pattern: a regular expression (%...%) must be the whole filter pattern"},
        InvalidCase{"RegexDanglingQuantifier", "%*a%", "Invalid filter pattern: '*' follows nothing it could apply to in a regular expression"},
        InvalidCase{"RegexTwoQuantifiers", "%a**%", "Invalid filter pattern: a regular expression has two quantifiers in a row"},
        InvalidCase{"RegexBadRepeat", "%a{2,1}%", "Invalid filter pattern: a '{m,n}' in a regular expression has n < m"},
        InvalidCase{"RegexBadBrace", "%a{x}%", "Invalid filter pattern: a '{' in a regular expression needs '{m}', '{m,}' or '{m,n}'"},
        InvalidCase{"RegexTooLarge", "%a{200}b{57}%",
                    "Invalid filter pattern: a regular expression is larger than 256 positions once '{m,n}' is unrolled"},
        InvalidCase{"RegexUnsupportedEscape", "%\\bword%", "Invalid filter pattern: the escape '\\b' is not supported in regular expressions"},
        InvalidCase{"RegexInnerAnchor", "%a^b%",
                    "Invalid filter pattern: '^' is supported only at the start ('^') or end ('$') of a regular expression"},
        InvalidCase{"RegexUnclosedClass", "%[abc%", "Invalid filter pattern: a '[' is not closed in a regular expression"},
        InvalidCase{"RegexOrdering", "{ $.a > %1% }", "Invalid filter pattern: '>' compares numbers, and a regular expression is not one"},
        InvalidCase{"ThreeRegexesInJson", "{ $.a = %a% || $.b = %b% || $.c = %c% }",
                    "Invalid filter pattern: a filter pattern holds at most 2 regular expressions"},
        InvalidCase{"RegexUnclosedInJson", "{ $.a = %abc }", "Invalid filter pattern: a regular expression has no closing '%'"},
        // Space-delimited patterns.
        InvalidCase{"UnclosedBracket", "[a, b", "Invalid filter pattern: a space-delimited filter pattern must end with ']'"},
        InvalidCase{"NoFields", "[ ]", "Invalid filter pattern: a space-delimited filter pattern needs at least one field between '[' and ']'"},
        InvalidCase{"TwoEllipses", "[..., a, ...]", "Invalid filter pattern: a space-delimited filter pattern has at most one '...'"},
        InvalidCase{"EllipsisWithACondition", "[... = 1, a]", "Invalid filter pattern: '...' takes no condition"},
        InvalidCase{"BadFieldName", "[a.b, c]", "Invalid filter pattern: invalid field name 'a.b'"},
        InvalidCase{"FieldsWithoutComma", "[a b]", "Invalid filter pattern: unexpected 'b' in the space-delimited filter pattern"},
        // The guide's old example, which AWS itself refuses
        // (https://github.com/awsdocs/amazon-cloudwatch-logs-user-guide/issues/21).
        InvalidCase{"ConditionOnAnotherField", "[ip, user, username, timestamp, request, status_code = 4* && bytes > 1000]",
                    "Invalid filter pattern: a condition in field 'status_code' is on 'bytes'"},
        InvalidCase{"DelimitedOrderingAString", "[a > x]", "Invalid filter pattern: '>' compares numbers, and 'x' is not one"},
        InvalidCase{"DelimitedDanglingOr", "[a = 1 ||]", "Invalid filter pattern: the space-delimited filter pattern ends too early"},
        InvalidCase{"DelimitedUnquotedSpecial", "[a = x/y]", "Invalid filter pattern: Invalid character(s) in term '/y'"}),
    CaseName<InvalidCase>);

TEST(FilterBoundsTest, PatternsAreAtMost1024Characters) {
  EXPECT_TRUE(Filter::Compile(std::string(1024, 'a')).ok());
  StatusOr<Filter> f = Filter::Compile(std::string(1025, 'a'));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "Invalid filter pattern: a filter pattern has at most 1024 characters");
  // Characters, not bytes: 1,022 two-byte characters between quotes are 1,024 characters.
  std::string multibyte = "\"";
  for (int i = 0; i < 1022; ++i) multibyte += "\xc3\xa9";
  multibyte += "\"";
  EXPECT_TRUE(Filter::Compile(multibyte).ok());
}

TEST(FilterBoundsTest, ParenthesesNestAtMost32Deep) {
  auto nested = [](int depth) {
    return "{ " + std::string(depth, '(') + "$.a = 1" + std::string(depth, ')') + " }";
  };
  StatusOr<Filter> ok = Filter::Compile(nested(Filter::kMaxNesting));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->Matches(R"({"a": 1})"));
  StatusOr<Filter> deep = Filter::Compile(nested(Filter::kMaxNesting + 1));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().message(), "Invalid filter pattern: parentheses nest more than 32 deep");
  // The length bound comes first for deeper attempts.
  EXPECT_FALSE(Filter::Compile(nested(600)).ok());
}

TEST(FilterBoundsTest, KindsAndCopiesShareTheCompiledForm) {
  EXPECT_EQ(Filter::Compile("")->kind(), Filter::Kind::kAll);
  EXPECT_EQ(Filter::Compile("a ?b")->kind(), Filter::Kind::kTerms);
  EXPECT_EQ(Filter::Compile(" { $.a = 1 } ")->kind(), Filter::Kind::kJson);
  EXPECT_EQ(Filter::Compile("[a, ...]")->kind(), Filter::Kind::kDelimited);
  EXPECT_EQ(Filter::Compile("%a|b%")->kind(), Filter::Kind::kRegex);
  StatusOr<Filter> f = Filter::Compile("ERROR");
  ASSERT_TRUE(f.ok());
  const Filter copy = *f;
  EXPECT_TRUE(copy.Matches("an ERROR"));
  EXPECT_EQ(copy.pattern(), "ERROR");
}

double MillisecondsFor(const Filter& f, const std::string& message, bool expected) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(f.Matches(message), expected);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The attack on a naive substring search: a needle of 1,000 'a' then 'b' against 1 MiB of 'a'
// compares ~1,000 bytes at each of a million offsets. KMP reads each byte at most twice.
TEST(FilterBoundsTest, HostileTermsCostLinearTime) {
  const std::string message(1 << 20, 'a');
  StatusOr<Filter> f = Filter::Compile("\"" + std::string(1000, 'a') + "b\"");
  ASSERT_TRUE(f.ok());
  const double ms = MillisecondsFor(*f, message, false);
  // Linear: a few milliseconds in release builds; the bound leaves room for debug and sanitizers.
  EXPECT_LT(ms, 1000.0);
  RecordProperty("hostile_term_ms", std::to_string(ms));
  // The most terms a 1,024-character pattern holds (512 one-letter terms), each found at the end.
  std::string many;
  for (int i = 0; i < 512; ++i) many += "b ";
  StatusOr<Filter> g = Filter::Compile(many);
  ASSERT_TRUE(g.ok());
  EXPECT_LT(MillisecondsFor(*g, message + "b", true), 1000.0);
}

TEST(FilterBoundsTest, DeepJsonMessagesAreNotRead) {
  StatusOr<Filter> f = Filter::Compile("{ $.a NOT EXISTS }");
  ASSERT_TRUE(f.ok());
  // 100,000 nested arrays: refused at depth kMaxJsonDepth, without recursion or a large DOM.
  const std::string deep = "{\"b\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_LT(MillisecondsFor(*f, deep, false), 1000.0);
  // Within the bound it is read.
  const std::string shallow = "{\"b\":" + std::string(60, '[') + std::string(60, ']') + "}";
  EXPECT_TRUE(f->Matches(shallow));
}

// A 1 MiB message of one-letter fields: the fields after '...' are kept in a ring of the pattern's
// size, not in a list of the message's half a million fields.
TEST(FilterBoundsTest, ManyDelimitedFieldsCostLinearTime) {
  std::string message;
  for (int i = 0; i < (1 << 19); ++i) message += "a ";
  message += "7";
  StatusOr<Filter> f = Filter::Compile("[first = a, ..., last > 5]");
  ASSERT_TRUE(f.ok());
  EXPECT_LT(MillisecondsFor(*f, message, true), 1000.0);
  StatusOr<Filter> g = Filter::Compile("[a, b]");
  ASSERT_TRUE(g.ok());
  EXPECT_LT(MillisecondsFor(*g, message, false), 1000.0);
}

// The expressions that make backtracking engines exponential cost an NFA (text × positions).
TEST(FilterBoundsTest, RegexesNeverBacktrack) {
  const std::string text(100000, 'a');
  StatusOr<Filter> f = Filter::Compile("%a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b%");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_LT(MillisecondsFor(*f, text, false), 1000.0);
  // The most positions a regular expression may have, against 100 KiB.
  StatusOr<Filter> g = Filter::Compile("%a{255}b%");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_LT(MillisecondsFor(*g, text, false), 1000.0);
}

// The NFA against std::regex (ECMAScript, which reads this subset as Java does for ASCII text: classes,
// escapes, quantifiers, ^ and $ without multiline, '.' not matching '\n' or '\r'): 5,000 random
// expressions and texts, the same answer every time. std::regex is fine here; no production code uses it.
TEST(FilterRegexTest, AgreesWithStdRegexOnRandomExpressions) {
  std::mt19937 rng(12);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> atoms = {"a", "b", "1", ".", "[ab]", "[^a]", "\\d", "\\s", "[a-c1]", "\\."};
  const std::vector<std::string> quantifiers = {"", "", "?", "*", "+", "{2}", "{1,2}", "{0,3}", "{2,}"};
  const std::string alphabet = "ab1. \n\rc";
  int compared = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string expression;
    const int alternatives = 1 + static_cast<int>(rng() % 2);
    for (int a = 0; a < alternatives; ++a) {
      if (a > 0) expression += "|";
      if (rng() % 4 == 0) expression += "^";
      const int length = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < length; ++k) expression += pick(atoms) + pick(quantifiers);
      if (rng() % 4 == 0) expression += "$";
    }
    std::string text;
    const int text_length = static_cast<int>(rng() % 10);
    for (int k = 0; k < text_length; ++k) text += alphabet[rng() % alphabet.size()];
    StatusOr<Filter> f = Filter::Compile("%" + expression + "%");
    ASSERT_TRUE(f.ok()) << expression << ": " << f.status().ToString();
    const bool expected = std::regex_search(text, std::regex(expression, std::regex::ECMAScript));
    ASSERT_EQ(f->Matches(text), expected) << "expression: " << expression << "\ntext: [" << text << "]";
    ++compared;
  }
  EXPECT_EQ(compared, 5000);
}

TEST(FilterBoundsTest, WildcardContainsIsLinear) {
  const std::string value(1 << 20, 'a');
  StatusOr<Filter> f = Filter::Compile("{ $.m = \"*" + std::string(1000, 'a') + "b*\" }");
  ASSERT_TRUE(f.ok());
  EXPECT_LT(MillisecondsFor(*f, "{\"m\":\"" + value + "\"}", false), 1000.0);
}

}  // namespace
}  // namespace paddock::logs
