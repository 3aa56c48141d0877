// Cleartext listeners (tls, redirect_https, https_port, acme_upstream) and
// the fixed answers of [[route]] (return, redirect): values and errors with
// their positions.
#include "config/loader_test_support.h"

namespace tlsfront::config {
namespace {

// kMinimal with a second, cleartext [[listen]] (lines 14-16) plus `extra`.
std::string cleartext(std::string_view extra) {
  return with("[[listen]]\naddress = \"127.0.0.1:8080\"\ntls = false\n" + std::string(extra));
}

TEST(LoaderCleartext, Defaults) {
  Config c = load_ok(cleartext(""));
  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_TRUE(c.listeners[0].tls);
  EXPECT_FALSE(c.listeners[1].tls);
  EXPECT_TRUE(c.listeners[1].redirect_https);
  EXPECT_EQ(c.listeners[1].https_port, 443);
  EXPECT_EQ(c.listeners[1].acme_upstream, "");
}

TEST(LoaderCleartext, Keys) {
  Config c = load_ok(cleartext("redirect_https = false\nhttps_port = 8443\nacme_upstream = \"demo\"\n"));
  EXPECT_FALSE(c.listeners[1].redirect_https);
  EXPECT_EQ(c.listeners[1].https_port, 8443);
  EXPECT_EQ(c.listeners[1].acme_upstream, "demo");
}

TEST(LoaderCleartext, Errors) {
  EXPECT_EQ(load_error(cleartext("acme_upstream = \"certbot\"\n")),
            R"(t.toml:17:1: listen[1].acme_upstream: unknown upstream "certbot" (no [[upstream]] has this name))");
  EXPECT_EQ(load_error(cleartext("acme_upstream = \"\"\n")),
            "t.toml:17:1: listen[1].acme_upstream: must not be empty (omit it for none)");
  EXPECT_EQ(
      load_error(cleartext("alpn = [\"h2\"]\n")),
      "t.toml:17:1: listen[1].alpn: a cleartext listener (tls = false) speaks HTTP/1.1 only (no h2c): remove alpn");
  EXPECT_EQ(load_error(cleartext("https_port = 0\n")),
            "t.toml:17:1: listen[1].https_port: must be between 1 and 65535, got 0");
  EXPECT_EQ(load_error(with("[[listen]]\naddress = \"127.0.0.1:8080\"\ntls = \"no\"\n")),
            "t.toml:16:1: listen[1].tls: expected a boolean, got string");
  EXPECT_EQ(load_error(with("[[listen]]\naddress = \"127.0.0.1:8080\"\nredirect_https = false\n")),
            "t.toml:16:1: listen[1].redirect_https: only for a cleartext listener (tls = false)");
}

TEST(LoaderFixedAnswer, ReturnAndRedirect) {
  Config c = load_ok(with(R"(path_exact = "/health"
[[route]]
path_prefix = "/old/"
redirect = { status = 301, location = "https://$host:8443${request_uri}" }
[[route]]
return = { status = 200, body = "ok", content_type = "application/json" }
[[route]]
return = { status = 204 }
)"));
  ASSERT_EQ(c.routes.size(), 4u);
  EXPECT_EQ(c.routes[0].action, RouteAction::Proxy);
  EXPECT_EQ(c.routes[0].upstream, "demo");
  EXPECT_EQ(c.routes[1].action, RouteAction::Redirect);
  EXPECT_EQ(c.routes[1].upstream, "");
  EXPECT_EQ(c.routes[1].answer.status, 301);
  const std::vector<HeaderValuePart> location{{"https://", -1}, {"", 0}, {":8443", -1}, {"", kLocationVariableCount - 1}};  // $request_uri
  EXPECT_EQ(c.routes[1].answer.location, location);
  EXPECT_EQ(c.routes[2].action, RouteAction::Return);
  EXPECT_EQ(c.routes[2].answer.status, 200);
  EXPECT_EQ(c.routes[2].answer.body, "ok");
  EXPECT_EQ(c.routes[2].answer.content_type, "application/json");
  EXPECT_EQ(c.routes[3].answer.status, 204);
  EXPECT_EQ(c.routes[3].answer.content_type, "text/plain");
}

TEST(LoaderFixedAnswer, ExactlyOneAction) {
  EXPECT_EQ(load_error(with("return = { status = 200 }\n")),
            "t.toml:14:1: route[0].return: only one of upstream, return, redirect, root and alias per route (upstream is set too)");
  EXPECT_EQ(load_error(with("[[route]]\nreturn = { status = 200 }\nredirect = { status = 301, location = \"/\" }\n")),
            "t.toml:16:1: route[1].redirect: only one of upstream, return, redirect, root and alias per route (return is set too)");
  EXPECT_EQ(load_error(with("[[route]]\npath_prefix = \"/x\"\n")),
            "t.toml:14:1: route[1].upstream: missing required key (a route has one of upstream, return, redirect, root and alias)");
  EXPECT_EQ(load_error(with("[[route]]\nreturn = { status = 200 }\npass_normalized = true\n")),
            "t.toml:16:1: route[1].pass_normalized: does nothing in a route with return (nothing goes upstream)");
  EXPECT_EQ(load_error(with("[[route]]\nredirect = { status = 301, location = \"/\" }\n"
                            "request_headers = { set = { A = \"b\" } }\n")),
            "t.toml:16:1: route[1].request_headers: does nothing in a route with redirect (nothing goes upstream)");
}

TEST(LoaderFixedAnswer, StatusRangesAndValues) {
  auto route = [](std::string_view line) { return with("[[route]]\n" + std::string(line) + "\n"); };
  EXPECT_EQ(load_error(route("return = { status = 101 }")),
            "t.toml:15:12: route[1].return.status: must be 200..599 (a final status, RFC 9110 §15), got 101");
  EXPECT_EQ(load_error(route("return = { status = 600 }")),
            "t.toml:15:12: route[1].return.status: must be 200..599 (a final status, RFC 9110 §15), got 600");
  EXPECT_EQ(load_error(route("return = { body = \"x\" }")),
            "t.toml:15:10: route[1].return.status: missing required key");
  EXPECT_EQ(load_error(route("return = { status = 204, body = \"x\" }")),
            "t.toml:15:26: route[1].return.body: a 204 response has no body (RFC 9110 §15)");
  EXPECT_EQ(load_error(route("return = { status = 200, type = \"x\" }")),
            R"(t.toml:15:26: route[1].return.type: unknown key "type")");
  EXPECT_EQ(load_error(route("return = { status = 200, content_type = \"a\\nb\" }")),
            "t.toml:15:26: route[1].return.content_type: contains a control character");
  for (int status : {300, 304, 200, 399}) {
    SCOPED_TRACE(status);
    EXPECT_EQ(
        load_error(route("redirect = { status = " + std::to_string(status) + ", location = \"/\" }")),
        "t.toml:15:14: route[1].redirect.status: must be 301, 302, 303, 307 or 308, got " + std::to_string(status));
  }
  EXPECT_EQ(load_error(route("redirect = { status = 302 }")),
            "t.toml:15:12: route[1].redirect.location: missing required key");
  EXPECT_EQ(load_error(route("redirect = { status = 302, location = \"\" }")),
            "t.toml:15:28: route[1].redirect.location: must not be empty");
  EXPECT_EQ(load_error(route("redirect = { status = 302, location = \"/a b\" }")),
            "t.toml:15:28: route[1].redirect.location: a URI has no spaces (RFC 3986 §2): percent-encode them as %20");
  EXPECT_EQ(load_error(route("redirect = { status = 302, location = \"/\\r\\nX: y\" }")),
            "t.toml:15:39: route[1].redirect.location: value \"/\\x0d\\x0aX: y\" contains a control character (CR, LF, "
            "NUL, ...): a header value is one line");
  // $request_uri is a location's variable, not a header value's.
  EXPECT_NE(
      load_error(route("redirect = { status = 302, location = \"$nope\" }"))
          .find(
              "unknown variable \"$nope\" at offset 0 of \"$nope\" (known: $host, $remote_addr, $scheme, $request_id, "
              "$ssl_protocol, $ssl_cipher, $ssl_session_reused, $server_port, $ssl_client_verify, $ssl_client_s_dn, "
                "$ssl_client_i_dn, $ssl_client_serial, $ssl_client_fingerprint, $ssl_client_cert, $proxy_protocol_tlv_alpn, "
                "$proxy_protocol_tlv_authority, $proxy_protocol_tlv_unique_id, $request_uri)"),
      std::string::npos);
  EXPECT_NE(load_error(with("response_headers = { set = { X = \"$request_uri\" } }\n"))
                .find("unknown variable \"$request_uri\""),
            std::string::npos);
}

}  // namespace
}  // namespace tlsfront::config
