// HeaderEdit: sequential remove/set/add rules folded into one edit, applied
// to a response's fields and to the request head sent upstream.
#include "message/header_edit.h"

#include <gtest/gtest.h>

#include "message/header_rewrite.h"

namespace tlsfront::http {
namespace {

FieldTemplate literal(std::string name, std::string value) {
  FieldTemplate f;
  f.name = std::move(name);
  f.segments.push_back(ValueSegment{std::move(value)});
  return f;
}

EditRule rule(EditRule::Kind kind, std::string name, std::string value = "") {
  return EditRule{kind, literal(std::move(name), std::move(value))};
}

std::vector<std::pair<std::string, std::string>> fields(const std::vector<Header>& headers) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& h : headers) out.emplace_back(h.name, h.value);
  return out;
}

using K = EditRule::Kind;
using Fields = std::vector<std::pair<std::string, std::string>>;

TEST(HeaderEdit, LaterRulesSeeEarlierOnes) {
  HeaderEdit edit;
  // Defaults: add X-A, add X-B, set X-C; route: remove X-A, set X-C, add X-B.
  compile_edit(edit, {rule(K::Add, "X-A", "1"), rule(K::Add, "X-B", "1"), rule(K::Set, "X-C", "1"),
                      rule(K::Remove, "x-a"), rule(K::Set, "x-c", "2"), rule(K::Add, "X-B", "2")});
  EXPECT_EQ(edit.erase, (std::vector<std::string>{"x-c", "x-a"}));
  std::vector<Header> headers{{"X-A", "upstream", HeaderToken::Other},
                              {"X-C", "upstream-1", HeaderToken::Other},
                              {"x-c", "upstream-2", HeaderToken::Other},
                              {"X-B", "upstream", HeaderToken::Other},
                              {"X-D", "upstream", HeaderToken::Other}};
  apply_edit(headers, edit, HeaderVars{});
  EXPECT_EQ(fields(headers), (Fields{{"X-B", "upstream"}, {"X-D", "upstream"}, {"X-B", "1"}, {"x-c", "2"}, {"X-B", "2"}}));
}

TEST(HeaderEdit, VariablesExpandPerRequest) {
  FieldTemplate f;
  f.name = "X-Where";
  f.segments = {ValueSegment{"h="}, ValueSegment{"", HeaderVar::Host, true}, ValueSegment{";id="},
                ValueSegment{"", HeaderVar::RequestId, true}};
  f.constant = false;
  HeaderEdit edit;
  compile_edit(edit, {EditRule{K::Set, f}});
  HeaderVars vars{};
  vars[static_cast<size_t>(HeaderVar::Host)] = "example.com";
  vars[static_cast<size_t>(HeaderVar::RequestId)] = "abc";
  std::vector<Header> headers;
  apply_edit(headers, edit, vars);
  EXPECT_EQ(fields(headers), (Fields{{"X-Where", "h=example.com;id=abc"}}));
}

TEST(HeaderEdit, RequestHeadRulesApplyToTlsfrontsOwnFields) {
  HeaderEdit edit;
  compile_edit(edit, {rule(K::Remove, "X-Forwarded-For"), rule(K::Set, "X-Real-IP", "hidden"),
                      rule(K::Set, "Host", "internal"), rule(K::Remove, "accept")});
  RequestHead head;
  head.method = "GET";
  head.target = "/";
  head.headers = {{"Host", "example.com", HeaderToken::Host},
                  {"Accept", "*/*", HeaderToken::Other},
                  {"X-Request-ID", "client", HeaderToken::Other}};
  UpstreamRequestOptions opts;
  opts.client_addr = "192.0.2.7";
  opts.default_host = "api";
  opts.request_id_header = "X-Request-ID";
  opts.request_id = "0123";
  HeaderVars vars{};
  opts.edit = &edit;
  opts.vars = &vars;
  std::string out;
  append_upstream_request_head(out, head, opts);
  EXPECT_EQ(out,
            "GET / HTTP/1.1\r\n"
            "X-Forwarded-Proto: https\r\n"
            "X-Request-ID: 0123\r\n"
            "X-Real-IP: hidden\r\n"
            "Host: internal\r\n"
            "\r\n");
}

// A rewrite of 100k rules (an imported nginx server with that many
// add_header lines) folds to the same edit as a short one would: each later
// Set or Remove drops the fields of its name added before it, names enter
// `erase` once, in order. (Folding was quadratic in the rules.)
TEST(HeaderEdit, ManyRulesFoldInOrder) {
  constexpr int kRules = 100'000;
  std::vector<EditRule> rules;
  for (int i = 0; i < kRules; ++i) rules.push_back(rule(K::Add, "X-" + std::to_string(i % 50'000), std::to_string(i)));
  for (int i = 0; i < 50'000; i += 2) rules.push_back(rule(K::Set, "x-" + std::to_string(i), "set"));
  for (int i = 1; i < 50'000; i += 4) rules.push_back(rule(K::Remove, "X-" + std::to_string(i)));
  rules.push_back(rule(K::Remove, "x-0"));  // a second time: in `erase` once
  HeaderEdit edit;
  compile_edit(edit, rules);
  // Kept from the adds: the odd names not removed (i % 4 == 3), both of their values, in order.
  std::vector<std::string> expected;
  for (int i = 0; i < kRules; ++i) {
    if (i % 50'000 % 4 == 3) expected.push_back("X-" + std::to_string(i % 50'000) + "=" + std::to_string(i));
  }
  for (int i = 2; i < 50'000; i += 2) expected.push_back("x-" + std::to_string(i) + "=set");
  std::vector<std::string> got;
  for (const auto& f : edit.append) got.push_back(f.name + "=" + f.segments.at(0).literal);
  EXPECT_EQ(got, expected);
  ASSERT_EQ(edit.erase.size(), 25'000u + 12'500u);
  EXPECT_EQ(edit.erase.front(), "x-0");
  EXPECT_EQ(edit.erase[25'000], "x-1");
  EXPECT_EQ(edit.erase.back(), "x-49997");
}

}  // namespace
}  // namespace tlsfront::http
