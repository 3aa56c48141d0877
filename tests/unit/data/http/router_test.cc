#include "data/http/router.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <memory>

namespace tlsfront::http {
namespace {

config::Route prefix(std::string host, std::string path, std::string upstream) {
  return config::Route{std::move(host), std::move(path), std::move(upstream)};
}

config::Route exact(std::string path, std::string upstream) {
  config::Route r{"", std::move(path), std::move(upstream)};
  r.path_match = config::PathMatch::Exact;
  return r;
}

config::Route regex(std::string pattern, std::string upstream) {
  config::Route r{"", pattern, std::move(upstream)};
  r.path_match = config::PathMatch::Regex;
  r.regex = std::make_shared<const re2::RE2>(pattern);
  return r;
}

config::Config with_upstreams(std::initializer_list<const char*> names) {
  config::Config cfg;
  for (const char* n : names) {
    cfg.upstreams.emplace_back();
    cfg.upstreams.back().name = n;
  }
  return cfg;
}

std::optional<size_t> upstream(const Router& r, std::string_view host, std::string_view method,
                               std::string_view path) {
  auto m = r.match(host, method, path);
  if (!m) return std::nullopt;
  return m->upstream;
}

TEST(Router, FirstMatchInFileOrder) {
  config::Config cfg = with_upstreams({"api", "static", "default"});
  cfg.routes = {prefix("api.example.com", "/v1/", "api"), prefix("", "/static/", "static"),
                prefix("", "/", "default")};
  Router r(cfg);
  EXPECT_EQ(upstream(r, "api.example.com", "GET", "/v1/users"), 0u);
  EXPECT_EQ(upstream(r, "other.example.com", "GET", "/v1/users"), 2u);
  EXPECT_EQ(upstream(r, "api.example.com", "GET", "/static/x.css"), 1u);
  EXPECT_EQ(upstream(r, "", "GET", "/"), 2u);
}

TEST(Router, NoMatchIsNullopt) {
  config::Config cfg = with_upstreams({"api"});
  cfg.routes = {prefix("", "/api/", "api")};
  Router r(cfg);
  EXPECT_FALSE(r.match("h", "GET", "/other").has_value());
  EXPECT_FALSE(r.match("h", "GET", "*").has_value());
}

TEST(Router, ExactRegexAndMethods) {
  config::Config cfg = with_upstreams({"exact", "regex", "writes", "rest"});
  config::Route writes = prefix("", "/api/", "writes");
  writes.methods = {"POST", "PUT"};
  cfg.routes = {exact("/health", "exact"), regex("/api/v[0-9]+/users/[0-9]+", "regex"), writes,
                prefix("", "/", "rest")};
  Router r(cfg);
  EXPECT_EQ(upstream(r, "h", "GET", "/health"), 0u);
  EXPECT_EQ(upstream(r, "h", "GET", "/health/"), 3u);
  EXPECT_EQ(upstream(r, "h", "GET", "/healthz"), 3u);
  EXPECT_EQ(upstream(r, "h", "GET", "/api/v2/users/17"), 1u);
  // Anchored at both ends.
  EXPECT_EQ(upstream(r, "h", "GET", "/api/v2/users/17/x"), 3u);
  EXPECT_EQ(upstream(r, "h", "GET", "/x/api/v2/users/17"), 3u);
  EXPECT_EQ(upstream(r, "h", "POST", "/api/v2/users/17"), 1u);
  EXPECT_EQ(upstream(r, "h", "POST", "/api/orders"), 2u);
  EXPECT_EQ(upstream(r, "h", "PUT", "/api/orders"), 2u);
  EXPECT_EQ(upstream(r, "h", "GET", "/api/orders"), 3u);
  EXPECT_EQ(upstream(r, "h", "post", "/api/orders"), 3u);  // case-sensitive
}

TEST(Router, HostWildcardIsOneLabel) {
  EXPECT_TRUE(host_matches("*.example.com", "api.example.com"));
  EXPECT_FALSE(host_matches("*.example.com", "example.com"));
  EXPECT_FALSE(host_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(host_matches("*.example.com", ".example.com"));
  EXPECT_FALSE(host_matches("*.example.com", "apiexample.com"));
  EXPECT_TRUE(host_matches("", "anything"));
  EXPECT_TRUE(host_matches("api.example.com", "api.example.com"));
  EXPECT_FALSE(host_matches("api.example.com", "x.api.example.com"));

  config::Config cfg = with_upstreams({"wild", "rest"});
  cfg.routes = {prefix("*.example.com", "/", "wild"), prefix("", "/", "rest")};
  Router r(cfg);
  EXPECT_EQ(upstream(r, "a.example.com", "GET", "/"), 0u);
  EXPECT_EQ(upstream(r, "a.b.example.com", "GET", "/"), 1u);
}

TEST(Router, PassNormalizedIsReported) {
  config::Config cfg = with_upstreams({"a"});
  cfg.routes = {prefix("", "/", "a")};
  cfg.routes[0].pass_normalized = true;
  Router r(cfg);
  ASSERT_TRUE(r.match("h", "GET", "/").has_value());
  EXPECT_TRUE(r.match("h", "GET", "/")->pass_normalized);
}

TEST(Router, WarnsAboutRoutesThatCanNeverMatch) {
  config::Config cfg = with_upstreams({"a", "b"});
  config::Route gets = prefix("", "/api/", "b");
  gets.methods = {"GET"};
  config::Route wild = prefix("*.example.com", "/x/", "b");
  cfg.routes = {
      prefix("", "/api/", "a"),                 // 0
      prefix("", "/api/v1/", "b"),              // 1: shadowed by 0
      exact("/api/health", "b"),                // 2: shadowed by 0
      gets,                                     // 3: shadowed by 0 (any method covers GET)
      prefix("api.example.com", "/api/", "b"),  // 4: shadowed by 0 (any host)
      regex("/api/.*", "b"),                    // 5: regexes are not judged
      exact("/a//b", "b"),                      // 6: not normal
      prefix("", "/s/%2e%2e/", "b"),            // 7: not normal
      prefix("", "/s/.well", "b"),              // 8: fine (a prefix of "/s/.well-known")
      wild,                                     // 9
      prefix("a.example.com", "/x/y", "b"),     // 10: shadowed by 9
      prefix("a.b.example.com", "/x/y", "b"),   // 11: fine (the wildcard is one label)
      exact("/q?x", "b"),                       // 12: the query is never matched
      prefix("", "/t/%7e", "b"),                // 13: "~" is matched decoded
      prefix("", "/t/%c3", "b"),                // 14: hex is matched uppercase
      prefix("", "/t/%C3", "b"),                // 15: fine
  };
  Router r(cfg);
  auto w = r.warnings();
  std::string all;
  for (const auto& line : w) all += line + "\n";
  auto warned = [&](int i) { return all.find("route[" + std::to_string(i) + "]") == 0 ||
                                    all.find("\nroute[" + std::to_string(i) + "]") != std::string::npos; };
  for (int i : {1, 2, 3, 4, 6, 7, 10, 12, 13, 14}) EXPECT_TRUE(warned(i)) << i << "\n" << all;
  for (int i : {0, 5, 8, 9, 11, 15}) EXPECT_FALSE(warned(i)) << i << "\n" << all;
  EXPECT_NE(all.find("route[1] can never match: route[0] (path_prefix \"/api/\") comes first"), std::string::npos)
      << all;
  EXPECT_NE(all.find("route[6]: path_exact \"/a//b\" can never match: paths are matched after normalization (it "
                     "normalizes to \"/a/b\")"),
            std::string::npos)
      << all;
  EXPECT_EQ(r.table().size(), cfg.routes.size());
  EXPECT_EQ(r.table()[3], "route[3]: host any, methods GET, path_prefix \"/api/\" -> upstream \"b\"; metrics route=\"\"");
}

}  // namespace
}  // namespace tlsfront::http

namespace tlsfront::http {
namespace {

// return and redirect routes match like any other (no upstream needed) and
// say what they answer in the --test table.
TEST(Router, FixedAnswerRoutes) {
  config::Config cfg = with_upstreams({"a"});
  config::Route health = exact("/health", "");
  health.action = config::RouteAction::Return;
  health.answer.status = 200;
  health.answer.body = "ok";
  config::Route moved = prefix("", "/old/", "");
  moved.action = config::RouteAction::Redirect;
  moved.answer.status = 301;
  moved.answer.location = {{"https://", -1}, {"", 0}, {"/$", -1}, {"", config::kLocationVariableCount - 1}};  // $request_uri
  cfg.routes = {health, moved, prefix("", "/", "a")};
  Router r(cfg);
  auto m = r.match("h", "GET", "/health");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->action, config::RouteAction::Return);
  ASSERT_NE(m->answer, nullptr);
  EXPECT_EQ(m->answer->body, "ok");
  m = r.match("h", "POST", "/old/x");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->route, 1u);
  EXPECT_EQ(m->action, config::RouteAction::Redirect);
  m = r.match("h", "GET", "/x");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->action, config::RouteAction::Proxy);
  EXPECT_EQ(m->answer, nullptr);
  ASSERT_EQ(r.table().size(), 3u);
  EXPECT_EQ(r.table()[0], "route[0]: host any, methods any, path_exact \"/health\" -> return 200, text/plain, 2 bytes; "
                            "metrics route=\"\"");
  EXPECT_EQ(
      r.table()[1],
      "route[1]: host any, methods any, path_prefix \"/old/\" -> redirect 301 \"https://${host}/$$${request_uri}\"; "
      "metrics route=\"\"");
}

}  // namespace
}  // namespace tlsfront::http
