// [[route]]: the matching keys (path_prefix, path_exact, path_regex,
// methods, host wildcards, pass_normalized), their errors, and the names
// that label the metrics.
#include <re2/re2.h>

#include "config/loader_test_support.h"

namespace tlsfront::config {
namespace {

TEST(LoaderRoute, MatchingKeys) {
  Config c = load_ok(with(R"(host = "*.Example.com"
path_regex = '/api/v[0-9]+/.*'
methods = ["GET", "HEAD"]
pass_normalized = true

[[route]]
path_exact = "/health"
upstream = "demo"
)"));
  ASSERT_EQ(c.routes.size(), 2u);
  EXPECT_EQ(c.routes[0].host, "*.example.com");
  EXPECT_EQ(c.routes[0].path_match, PathMatch::Regex);
  EXPECT_EQ(c.routes[0].path, "/api/v[0-9]+/.*");
  ASSERT_NE(c.routes[0].regex, nullptr);
  EXPECT_TRUE(RE2::FullMatch("/api/v2/x", *c.routes[0].regex));
  EXPECT_EQ(c.routes[0].methods, (std::vector<std::string>{"GET", "HEAD"}));
  EXPECT_TRUE(c.routes[0].pass_normalized);
  EXPECT_EQ(c.routes[0].position, "/etc/tlsfront/t.toml:12:1");
  EXPECT_EQ(c.routes[1].path_match, PathMatch::Exact);
  EXPECT_EQ(c.routes[1].path, "/health");
  EXPECT_FALSE(c.routes[1].pass_normalized);
}

TEST(LoaderRoute, BadPatternIsRefusedWithItsPosition) {
  EXPECT_EQ(load_error(with("path_regex = \"/api/(v1\"\n")),
            R"(t.toml:14:1: route[0].path_regex: invalid regular expression "/api/(v1": missing ): /api/(v1 (RE2 syntax))");
  EXPECT_EQ(load_error(with("path_regex = '/a/[z-a]'\n")),
            R"(t.toml:14:1: route[0].path_regex: invalid regular expression "/a/[z-a]" at character 5 of the pattern: invalid character class range: z-a (RE2 syntax))");
  // Backreferences would need backtracking: RE2 has none.
  EXPECT_EQ(load_error(with("path_regex = '/(a)\\1'\n")),
            R"(t.toml:14:1: route[0].path_regex: invalid regular expression "/(a)\\1" at character 5 of the pattern: invalid escape sequence: \1 (RE2 syntax))");
  EXPECT_EQ(load_error(with("path_regex = ''\n")), R"(t.toml:14:1: route[0].path_regex: must not be empty)");
}

TEST(LoaderRoute, Upgrade) {
  Config c = load_ok(
      with("upgrade = [\"WebSocket\", \"x-custom\"]\n\n[[route]]\npath_exact = \"/b\"\nupstream = \"demo\"\n"
           "upgrade = []\n\n[[route]]\npath_exact = \"/c\"\nupstream = \"demo\"\n\n[timeouts]\ntunnel = \"5m\"\n"));
  ASSERT_EQ(c.routes.size(), 3u);
  EXPECT_EQ(c.routes[0].upgrade, (std::vector<std::string>{"websocket", "x-custom"}));
  EXPECT_TRUE(c.routes[1].upgrade.empty());
  EXPECT_EQ(c.routes[2].upgrade, (std::vector<std::string>{"websocket"}));  // the default
  EXPECT_EQ(c.timeouts.tunnel, std::chrono::minutes(5));
  EXPECT_EQ(load_ok(with("")).timeouts.tunnel, std::chrono::hours(1));
  EXPECT_EQ(
      load_error(with("upgrade = [\"websocket/13\"]\n")),
      R"(t.toml:14:12: route[0].upgrade[0]: "websocket/13" is not an Upgrade protocol name (RFC 9110 token, no version))");
  EXPECT_EQ(load_error(with("upgrade = [\"h2c\"]\n")),
            R"(t.toml:14:12: route[0].upgrade[0]: "h2c" cannot be tunnelled (HTTP/2 to clients is TLS ALPN h2))");
  EXPECT_EQ(load_error(with("upgrade = [\"websocket\", \"WebSocket\"]\n")),
            R"(t.toml:14:25: route[0].upgrade[1]: "websocket" is listed twice)");
  EXPECT_EQ(load_error(with("upgrade = \"websocket\"\n")),
            R"(t.toml:14:1: route[0].upgrade: expected an array, got string)");
  EXPECT_EQ(load_error(with("\n[timeouts]\ntunnel = \"0s\"\n")).substr(0, 28), "t.toml:16:1: timeouts.tunnel");
}

TEST(LoaderRoute, Errors) {
  EXPECT_EQ(load_error(with("path_prefix = \"/a/\"\npath_exact = \"/a\"\n")),
            R"(t.toml:15:1: route[0].path_exact: only one of path_prefix, path_exact and path_regex per route (path_prefix is set too))");
  EXPECT_EQ(load_error(with("path_exact = \"a\"\n")),
            R"(t.toml:14:1: route[0].path_exact: must start with "/", got "a")");
  EXPECT_EQ(load_error(with("methods = []\n")),
            R"(t.toml:14:1: route[0].methods: must not be empty (omit it to match every method))");
  EXPECT_EQ(load_error(with("methods = [\"GET\", \"get\"]\n")),
            R"(t.toml:14:19: route[0].methods[1]: "get": methods are case-sensitive (RFC 9110 §9.1); clients send "GET")");
  EXPECT_EQ(load_error(with("methods = [\"GET\", \"GET\"]\n")),
            R"(t.toml:14:19: route[0].methods[1]: duplicate method "GET")");
  EXPECT_EQ(load_error(with("methods = [\"GE T\"]\n")),
            R"(t.toml:14:12: route[0].methods[0]: "GE T" is not a method name (RFC 9110 token))");
  EXPECT_EQ(load_error(with("methods = [1]\n")),
            R"(t.toml:14:12: route[0].methods[0]: expected a string, got integer)");
  EXPECT_EQ(load_error(with("host = \"api.*.com\"\n")),
            R"(t.toml:14:1: route[0].host: invalid host "api.*.com" (a wildcard is "*." followed by a name, as in "*.example.com": one label))");
  EXPECT_EQ(load_error(with("host = \"*\"\n")),
            R"(t.toml:14:1: route[0].host: invalid host "*" (a wildcard is "*." followed by a name, as in "*.example.com": one label))");
  EXPECT_EQ(load_error(with("pass_normalized = \"yes\"\n")),
            R"(t.toml:14:1: route[0].pass_normalized: expected a boolean, got string)");
}

// name: the metrics label of a route (default: its match as written) and of
// a listener (default: its address as written).
TEST(LoaderRoute, NamesLabelTheMetrics) {
  Config c = load_ok(with(R"(name = "api"
path_prefix = "/api/"

[[route]]
host = "Shop.example.com"
path_exact = "/x"
methods = ["GET", "HEAD"]
upstream = "demo"

[[route]]
path_regex = '/img/.*'
upstream = "demo"

[[route]]
upstream = "demo"

[[route]]
upstream = "demo"

[[listen]]
address = "[::1]:8443"
name = "v6-public"
)"));
  std::vector<std::string> names;
  for (const Route& r : c.routes) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"api", "shop.example.com=/x GET,HEAD", "*~/img/.*", "*/", "*/ #4"}));
  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_EQ(c.listeners[0].label(), "127.0.0.1:8443");
  EXPECT_EQ(c.listeners[1].label(), "v6-public");

  EXPECT_EQ(load_error(with("name = \"a\"\n\n[[route]]\nname = \"a\"\nupstream = \"demo\"\n")),
            R"(t.toml:17:1: route[1].name: duplicate route name "a" (first at t.toml:12:1))");
  EXPECT_EQ(load_error(with("name = \"a b\"\n")),
            R"(t.toml:14:1: route[0].name: invalid name "a b" (1 to 64 of letters, digits and "-_.:/"))");
  EXPECT_EQ(load_error(with("name = \"\"\n")),
            R"(t.toml:14:1: route[0].name: invalid name "" (1 to 64 of letters, digits and "-_.:/"))");
  EXPECT_EQ(load_error(with("name = \"" + std::string(65, 'a') + "\"\n")).substr(0, 40),
            "t.toml:14:1: route[0].name: invalid name");
  EXPECT_EQ(load_error(with("\n[[listen]]\naddress = \"127.0.0.1:8444\"\nname = \"127.0.0.1:8443\"\n")),
            R"(t.toml:17:1: listen[1].name: the metrics label "127.0.0.1:8443" is taken by the listener at t.toml:2:1 (names must differ from each other and from the addresses))");
}

}  // namespace
}  // namespace tlsfront::config
