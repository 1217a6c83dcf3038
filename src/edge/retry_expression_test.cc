// edge/retry_expression: oxy's retry predicates as Traefik's buffering middleware documents them.
#include "edge/retry_expression.h"

#include <gtest/gtest.h>

#include <string>

namespace paddock::edge {
namespace {

bool Holds(std::string_view text, RetryContext c) {
  auto e = RetryExpression::Parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().ToString();
  return e.ok() && e->Matches(c);
}

TEST(RetryExpressionTest, TraefiksAndOxysExamplesDecideAsOxyDoes) {
  // Traefik's documentation: "IsNetworkError() && Attempts() < 2".
  EXPECT_TRUE(Holds("IsNetworkError() && Attempts() < 2", {.method = "GET", .attempt = 1, .response_code = 502}));
  EXPECT_TRUE(Holds("IsNetworkError() && Attempts() < 2", {.method = "GET", .attempt = 1, .response_code = 504}));
  EXPECT_FALSE(Holds("IsNetworkError() && Attempts() < 2", {.method = "GET", .attempt = 2, .response_code = 502}));
  EXPECT_FALSE(Holds("IsNetworkError() && Attempts() < 2", {.method = "GET", .attempt = 1, .response_code = 503}));
  // oxy's: "Attempts() <= 2 && ResponseCode() == 502".
  EXPECT_TRUE(Holds("Attempts() <= 2 && ResponseCode() == 502", {.method = "GET", .attempt = 2, .response_code = 502}));
  EXPECT_FALSE(Holds("Attempts() <= 2 && ResponseCode() == 502", {.method = "GET", .attempt = 3, .response_code = 502}));
  // || binds looser than &&; parentheses group; every comparison.
  const char* either = "ResponseCode() == 503 || IsNetworkError() && Attempts() > 5";
  EXPECT_TRUE(Holds(either, {.method = "GET", .attempt = 1, .response_code = 503}));
  EXPECT_FALSE(Holds(either, {.method = "GET", .attempt = 1, .response_code = 502}));
  EXPECT_TRUE(Holds(either, {.method = "GET", .attempt = 6, .response_code = 502}));
  EXPECT_FALSE(Holds("(ResponseCode() == 503 || IsNetworkError()) && Attempts() > 5",
                     {.method = "GET", .attempt = 1, .response_code = 503}));
  EXPECT_TRUE(Holds("ResponseCode() != 200", {.method = "GET", .attempt = 1, .response_code = 500}));
  EXPECT_TRUE(Holds("ResponseCode() >= 500", {.method = "GET", .attempt = 1, .response_code = 500}));
  EXPECT_FALSE(Holds("ResponseCode() > 500", {.method = "GET", .attempt = 1, .response_code = 500}));
  EXPECT_TRUE(Holds("Attempts() == 0x1", {.method = "GET", .attempt = 1, .response_code = 0}));
  // RequestMethod() with Go string literals.
  EXPECT_TRUE(Holds(R"(RequestMethod() == "GET" && IsNetworkError())", {.method = "GET", .attempt = 1, .response_code = 502}));
  EXPECT_FALSE(Holds(R"(RequestMethod() == "GET")", {.method = "POST", .attempt = 1, .response_code = 502}));
  EXPECT_TRUE(Holds("RequestMethod() != `POST`", {.method = "PUT", .attempt = 1, .response_code = 502}));
}

TEST(RetryExpressionTest, WhatOxyRefusesIsRefusedSayingWhere) {
  for (const char* bad : {
           "",                                  // no predicate
           "Attempts()",                        // an int, not a predicate
           "Attempts() < \"2\"",                // int against string
           "RequestMethod() == 2",              // string against int
           "RequestMethod() < \"GET\"",         // strings are only equal or not
           "2 > Attempts()",                    // a literal on the left
           "!IsNetworkError()",                 // oxy defines no NOT
           "IsNetworkError",                    // not a call
           "IsNetworkError(1)",                 // no arguments
           "Retries() > 1",                     // no such function
           "IsNetworkError() &&",               // cut short
           "(IsNetworkError()",                 // unbalanced
           "IsNetworkError() IsNetworkError()",  // two expressions
           "Attempts() < 99999999999999999999",  // out of range
           "RequestMethod() == \"GET",          // unterminated
       }) {
    auto e = RetryExpression::Parse(bad);
    EXPECT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(e.status().message().find("retryExpression"), std::string::npos) << e.status().message();
  }
  EXPECT_NE(RetryExpression::Parse("Retries() > 1").status().message().find("unsupported function: Retries"),
            std::string::npos);
  // Bounded: deep nesting and long text are refused, never a stack overflow.
  EXPECT_FALSE(RetryExpression::Parse(std::string(1000, '(') + "IsNetworkError()" + std::string(1000, ')')).ok());
  EXPECT_TRUE(RetryExpression::Parse(std::string(30, '(') + "IsNetworkError()" + std::string(30, ')')).ok());
  EXPECT_FALSE(RetryExpression::Parse(std::string(5000, ' ') + "IsNetworkError()").ok());
}

}  // namespace
}  // namespace paddock::edge
