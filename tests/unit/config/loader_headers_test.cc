// response_headers / request_headers (defaults and per route), tls.hsts,
// request_id_header and [[listen]] trust_request_id: what loads, and every
// refusal with its file:line:column and key.
#include "config/loader.h"
#include "loader_test_support.h"

#include <gtest/gtest.h>

namespace tlsfront::config {
namespace {

TEST(LoaderHeaders, DefaultsAreNone) {
  Config c = load_ok(with(""));
  EXPECT_EQ(c.response_headers, HeaderRules{});
  EXPECT_EQ(c.request_headers, HeaderRules{});
  EXPECT_EQ(c.routes[0].response_headers, HeaderRules{});
  EXPECT_TRUE(c.routes[0].response_headers.inherit);
  EXPECT_EQ(c.tls.hsts, "");
  EXPECT_EQ(c.request_id_header, "X-Request-ID");
  EXPECT_FALSE(c.listeners[0].trust_request_id);
}

TEST(LoaderHeaders, RulesAndVariablesParsed) {
  Config c = load_ok(with(R"(response_headers = { set = { "X-Frame-Options" = "DENY", "X-Host" = "h=$host:${server_port}$$" }, add = { Link = ["<a>", "<b>"] }, remove = ["Server"], always = true, inherit = false }
request_headers.set = { "X-Id" = "$request_id" }

[response_headers]
add = { "X-Scheme" = "$scheme" }
[request_headers]
remove = ["User-Agent"]
)"));
  const HeaderRules& r = c.routes[0].response_headers;
  ASSERT_EQ(r.set.size(), 2u);
  EXPECT_EQ(r.set[0].name, "X-Frame-Options");
  EXPECT_EQ(r.set[0].value, (std::vector<HeaderValuePart>{{"DENY", -1}}));
  EXPECT_EQ(r.set[1].name, "X-Host");
  // host = 0, server_port = 7 (kHeaderVariables' order)
  EXPECT_EQ(r.set[1].value, (std::vector<HeaderValuePart>{{"h=", -1}, {"", 0}, {":", -1}, {"", 7}, {"$", -1}}));
  ASSERT_EQ(r.add.size(), 2u);
  EXPECT_EQ(r.add[1].value, (std::vector<HeaderValuePart>{{"<b>", -1}}));
  EXPECT_EQ(r.remove, std::vector<std::string>{"server"});
  EXPECT_TRUE(r.always);
  EXPECT_FALSE(r.inherit);
  EXPECT_EQ(c.routes[0].request_headers.set.at(0).value, (std::vector<HeaderValuePart>{{"", 3}}));
  EXPECT_EQ(c.response_headers.add.at(0).value, (std::vector<HeaderValuePart>{{"", 2}}));
  EXPECT_EQ(c.request_headers.remove, std::vector<std::string>{"user-agent"});
}

TEST(LoaderHeaders, UnknownVariableIsAnErrorWithItsPosition) {
  EXPECT_EQ(load_error(with("response_headers.set = { \"X-A\" = \"$ssl_early_data\" }\n")),
            R"(t.toml:14:34: route[0].response_headers.set.X-A: unknown variable "$ssl_early_data" at offset 0 of "$ssl_early_data" (known: $host, $remote_addr, $scheme, $request_id, $ssl_protocol, $ssl_cipher, $ssl_session_reused, $server_port, $ssl_client_verify, $ssl_client_s_dn, $ssl_client_i_dn, $ssl_client_serial, $ssl_client_fingerprint, $ssl_client_cert, $proxy_protocol_tlv_alpn, $proxy_protocol_tlv_authority, $proxy_protocol_tlv_unique_id))");
  EXPECT_EQ(load_error(with("[response_headers]\nadd = { X-A = \"a $ b\" }\n")),
            R"(t.toml:15:15: response_headers.add.X-A: value "a $ b": expected a variable name after "$" at offset 2 ("$name" or "${name}"; "$$" is a literal "$"))");
  EXPECT_EQ(load_error(with("[request_headers]\nset = { X-A = \"${host\" }\n")),
            R"(t.toml:15:15: request_headers.set.X-A: value "${host": expected a variable name after "$" at offset 0 ("$name" or "${name}"; "$$" is a literal "$"))");
}

TEST(LoaderHeaders, InvalidNamesAndValuesRefused) {
  EXPECT_EQ(load_error(with("response_headers.set = { \"X A\" = \"1\" }\n")),
            R"(t.toml:14:26: route[0].response_headers.set."X A": invalid header name "X A" (a token: letters, digits and !#$%&'*+-.^_`|~ only, RFC 9110 §5.6.2))");
  EXPECT_EQ(load_error(with("response_headers.set = { \"X-A\\r\\nX-Injected\" = \"1\" }\n")),
            R"(t.toml:14:26: route[0].response_headers.set."X-A\x0d\x0aX-Injected": invalid header name "X-A\x0d\x0aX-Injected" (a token: letters, digits and !#$%&'*+-.^_`|~ only, RFC 9110 §5.6.2))");
  EXPECT_EQ(load_error(with("response_headers.add = { X-A = \"1\\r\\nSet-Cookie: a=b\" }\n")),
            R"(t.toml:14:32: route[0].response_headers.add.X-A: value "1\x0d\x0aSet-Cookie: a=b" contains a control character (CR, LF, NUL, ...): a header value is one line)");
  EXPECT_EQ(load_error(with("request_headers.set = { X-A = \"a\\u0000\" }\n")),
            R"(t.toml:14:31: route[0].request_headers.set.X-A: value "a\x00" contains a control character (CR, LF, NUL, ...): a header value is one line)");
  EXPECT_EQ(load_error(with("request_headers.set = { X-A = \" a\" }\n")),
            R"(t.toml:14:31: route[0].request_headers.set.X-A: value " a" has leading or trailing whitespace)");
  EXPECT_EQ(load_error(with("request_headers.remove = [\"X-A\", 7]\n")),
            "t.toml:14:34: route[0].request_headers.remove[1]: expected a header name string, got integer");
  EXPECT_EQ(load_error(with("response_headers.set = { X-A = \"1\", x-a = \"2\" }\n")),
            R"(t.toml:14:37: route[0].response_headers.set.x-a: header "x-a" appears twice (names are case-insensitive))");
  EXPECT_EQ(load_error(with("response_headers = { set = { X-A = \"1\" }, remove = [\"x-a\"] }\n")),
            R"(t.toml:14:43: route[0].response_headers.remove: header "X-A" is both set and removed in the same table)");
  EXPECT_EQ(load_error(with("response_headers = { sett = {} }\n")),
            R"(t.toml:14:22: route[0].response_headers.sett: unknown key "sett")");
  EXPECT_EQ(load_error(with("[response_headers]\ninherit = false\n")),
            R"(t.toml:15:1: response_headers.inherit: unknown key "inherit")");
  EXPECT_EQ(load_error(with("request_headers = { always = true }\n")),
            R"(t.toml:14:21: route[0].request_headers.always: unknown key "always")");
}

TEST(LoaderHeaders, HopByHopAndFramingHeadersRefusedWithTheReason) {
  EXPECT_EQ(load_error(with("response_headers.set = { Connection = \"close\" }\n")),
            R"(t.toml:14:26: route[0].response_headers.set.Connection: header "Connection" cannot be set, added or removed: a hop-by-hop header: it describes one connection and is never forwarded (RFC 9110 §7.6.1))");
  for (const char* name : {"Transfer-Encoding", "content-length"}) {
    EXPECT_EQ(load_error(with(std::string("response_headers.add = { ") + name + " = \"1\" }\n")),
              std::string("t.toml:14:26: route[0].response_headers.add.") + name + ": header \"" + name +
                  "\" cannot be set, added or removed: a framing header: tlsfront frames every message itself (RFC 9112 §6)");
  }
  for (const char* name : {"Upgrade", "Keep-Alive", "TE", "Trailer", "Proxy-Connection"}) {
    std::string error = load_error(with(std::string("request_headers.remove = [\"") + name + "\"]\n"));
    EXPECT_NE(error.find("t.toml:14:27: route[0].request_headers.remove[0]: header \"" + std::string(name) +
                         "\" cannot be set, added or removed: a hop-by-hop header"),
              std::string::npos)
        << error;
  }
  EXPECT_EQ(load_error(with("response_headers.set = { Host = \"a\" }\n")),
            R"(t.toml:14:26: route[0].response_headers.set.Host: header "Host" cannot be set, added or removed: a request header: a response has no Host)");
  EXPECT_EQ(load_error(with("response_headers.set = { \":status\" = \"200\" }\n")),
            R"(t.toml:14:26: route[0].response_headers.set.":status": header ":status" cannot be set, added or removed: an HTTP/2 pseudo-header: tlsfront writes those itself (RFC 9113 §8.3))");
  EXPECT_EQ(load_error(with("request_headers.remove = [\"host\"]\n")),
            R"(t.toml:14:27: route[0].request_headers.remove[0]: Host cannot be removed: an HTTP/1.1 request needs one (set it instead))");
  // Host may be set on the request (nginx's proxy_set_header Host).
  Config c = load_ok(with("request_headers.set = { Host = \"internal.example\" }\n"));
  EXPECT_EQ(c.routes[0].request_headers.set.at(0).name, "Host");
}

TEST(LoaderHeaders, HstsRequestIdHeaderAndTrust) {
  std::string toml(kMinimal);
  toml.insert(toml.find("[tls]\n") + 6, "hsts = \"max-age=300; includeSubDomains\"\n");
  toml.insert(toml.find("address = \"127.0.0.1:8443\"\n") + 27, "trust_request_id = true\n");
  toml.insert(0, "request_id_header = \"X-Trace\"\n");
  Config c = load_ok(toml);
  EXPECT_EQ(c.tls.hsts, "max-age=300; includeSubDomains");
  EXPECT_EQ(c.request_id_header, "X-Trace");
  EXPECT_TRUE(c.listeners[0].trust_request_id);

  std::string bad(kMinimal);
  bad.insert(bad.find("[tls]\n") + 6, "hsts = \"includeSubDomains\"\n");
  EXPECT_EQ(load_error(bad), R"(t.toml:5:1: tls.hsts: must contain max-age=<seconds> (RFC 6797 §6.1.1), got "includeSubDomains")");
  EXPECT_EQ(load_error("request_id_header = \"X Trace\"\n" + std::string(kMinimal)),
            R"(t.toml:1:1: request_id_header: invalid header name "X Trace" (a token: letters, digits and !#$%&'*+-.^_`|~ only))");
  Config none = load_ok("request_id_header = \"\"\n" + std::string(kMinimal));
  EXPECT_EQ(none.request_id_header, "");
}

// A route with 100k fields in each of remove, set and add (an imported
// nginx server with that many add_header lines) loads, and a repeated name
// is still found at the end of such a table. (The checks for repeats were
// quadratic in the fields.)
TEST(LoaderHeaders, ManyFieldsLoadAndRepeatsAreFound) {
  constexpr int kFields = 100'000;
  std::string remove = "response_headers.remove = [", set = "response_headers.set = { ",
              add = "response_headers.add = { ";
  for (int i = 0; i < kFields; ++i) {
    const std::string n = std::to_string(i);
    remove += (i ? ", \"R-" : "\"R-") + n + "\"";
    set += (i ? ", S-" : "S-") + n + " = \"" + n + "\"";
    add += (i ? ", A-" : "A-") + n + " = [\"" + n + "\", \"$host\"]";
  }
  Config c = load_ok(with(remove + "]\n" + set + " }\n" + add + " }\n"));
  const HeaderRules& r = c.routes[0].response_headers;
  ASSERT_EQ(r.remove.size(), size_t{kFields});
  EXPECT_EQ(r.remove.back(), "r-99999");
  ASSERT_EQ(r.set.size(), size_t{kFields});
  ASSERT_EQ(r.add.size(), size_t{2 * kFields});
  EXPECT_EQ(r.add[1].value, (std::vector<HeaderValuePart>{{"", 0}}));

  EXPECT_EQ(load_error(with(remove + ", \"r-7\"]\n")),
            "t.toml:14:" + std::to_string(remove.size() + 3) +
                R"(: route[0].response_headers.remove[100000]: header "r-7" listed twice)");
  EXPECT_NE(load_error(with(set + ", s-99999 = \"x\" }\n")).find(R"(header "s-99999" appears twice)"),
            std::string::npos);
  EXPECT_NE(load_error(with(remove + ", \"S-5\"]\n" + set + " }\n")).find(R"(header "S-5" is both set and removed)"),
            std::string::npos);
}

}  // namespace
}  // namespace tlsfront::config
