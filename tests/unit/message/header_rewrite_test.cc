#include "message/header_rewrite.h"

#include <gtest/gtest.h>

#include <cctype>

namespace tlsfront::http {
namespace {

Header h(std::string name, std::string value) {
  Header out{std::move(name), std::move(value), HeaderToken::Other};
  out.token = classify_header(out.name);
  return out;
}

RequestHead get(std::vector<Header> headers) {
  RequestHead r;
  r.method = "GET";
  r.target = "/a?b=c";
  r.headers = std::move(headers);
  return r;
}

std::string rewrite(const RequestHead& r, bool close = false) {
  std::string out;
  UpstreamRequestOptions opts;
  opts.client_addr = "192.0.2.7";
  opts.default_host = "api";
  opts.close = close;
  append_upstream_request_head(out, r, opts);
  return out;
}

TEST(HeaderRewrite, AddsForwardingHeadersAndKeepsHost) {
  auto out = rewrite(get({h("Host", "example.com"), h("Accept", "*/*")}));
  EXPECT_EQ(out,
            "GET /a?b=c HTTP/1.1\r\n"
            "Host: example.com\r\n"
            "Accept: */*\r\n"
            "X-Forwarded-For: 192.0.2.7\r\n"
            "X-Real-IP: 192.0.2.7\r\n"
            "X-Forwarded-Proto: https\r\n"
            "\r\n");
}

TEST(HeaderRewrite, RemovesHopByHopAndConnectionNamedHeaders) {
  auto out = rewrite(get({h("Host", "a"), h("Connection", "keep-alive, X-Secret"), h("Keep-Alive", "timeout=5"),
                          h("Proxy-Connection", "keep-alive"), h("TE", "trailers"), h("Trailer", "X-T"),
                          h("Upgrade", "websocket"), h("x-secret", "1"), h("X-Kept", "2")}));
  EXPECT_EQ(out.find("Connection"), std::string::npos);
  EXPECT_EQ(out.find("Keep-Alive"), std::string::npos);
  EXPECT_EQ(out.find("TE:"), std::string::npos);
  EXPECT_EQ(out.find("Trailer"), std::string::npos);
  EXPECT_EQ(out.find("Upgrade"), std::string::npos);
  EXPECT_EQ(out.find("x-secret"), std::string::npos);
  EXPECT_NE(out.find("X-Kept: 2\r\n"), std::string::npos);
}

TEST(HeaderRewrite, AppendsToClientForwardedForAndReplacesRealIpAndProto) {
  auto out = rewrite(get({h("Host", "a"), h("X-Forwarded-For", "10.0.0.1"), h("X-Forwarded-For", "10.0.0.2"),
                          h("X-Real-IP", "6.6.6.6"), h("X-Forwarded-Proto", "http")}));
  EXPECT_NE(out.find("X-Forwarded-For: 10.0.0.1, 10.0.0.2, 192.0.2.7\r\n"), std::string::npos);
  EXPECT_EQ(out.find("6.6.6.6"), std::string::npos);
  EXPECT_EQ(out.find("Proto: http\r\n"), std::string::npos);
  EXPECT_NE(out.find("X-Forwarded-Proto: https\r\n"), std::string::npos);
}

TEST(HeaderRewrite, FramingComesFromTheParsedRequestNotTheHeaders) {
  RequestHead r = get({h("Host", "a"), h("Transfer-Encoding", "chunked"), h("Expect", "100-continue")});
  r.method = "POST";
  r.chunked = true;
  auto out = rewrite(r);
  EXPECT_NE(out.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_EQ(out.find("Expect"), std::string::npos);
  EXPECT_EQ(out.find("Content-Length"), std::string::npos);

  RequestHead c = get({h("Host", "a"), h("Content-Length", "5")});
  c.content_length = 5;
  out = rewrite(c, /*close=*/true);
  EXPECT_NE(out.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos);
}

TEST(HeaderRewrite, AddsHostForHttp10ClientsWithoutOne) {
  RequestHead r = get({});
  r.version_minor = 0;
  EXPECT_NE(rewrite(r).find("Host: api\r\n"), std::string::npos);
}

TEST(HeaderRewrite, StripsResponseHopByHopAndFraming) {
  std::vector<Header> hs{h("Connection", "close, X-Internal"), h("X-Internal", "1"), h("Content-Length", "3"),
                         h("Transfer-Encoding", "chunked"), h("Keep-Alive", "timeout=5"), h("Server", "b")};
  strip_response_headers(hs);
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].name, "Server");
}

// The usual Connection values (keep-alive, close) name no field to strip but
// Keep-Alive; a field that happens to be named "Close" still goes with
// "Connection: close" (RFC 9110 §7.6.1), and request fields alike.
TEST(HeaderRewrite, ConnectionKeepAliveOrCloseStripsOnlyWhatTheyName) {
  std::vector<Header> hs{h("Connection", "keep-alive"), h("Keep-Alive", "timeout=5"), h("Server", "b"),
                         h("Content-Length", "3")};
  strip_response_headers(hs);
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].name, "Server");
  std::vector<Header> named{h("Connection", "close"), h("Close", "x"), h("Server", "b")};
  strip_response_headers(named);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].name, "Server");
  EXPECT_EQ(rewrite(get({h("Host", "a"), h("Connection", "Keep-Alive"), h("Close", "x"), h("Accept", "*/*")})),
            "GET /a?b=c HTTP/1.1\r\n"
            "Host: a\r\n"
            "Close: x\r\n"
            "Accept: */*\r\n"
            "X-Forwarded-For: 192.0.2.7\r\n"
            "X-Real-IP: 192.0.2.7\r\n"
            "X-Forwarded-Proto: https\r\n"
            "\r\n");
}

TEST(HeaderRewrite, NoBodyResponses) {
  EXPECT_TRUE(response_has_no_body("HEAD", 200));
  EXPECT_TRUE(response_has_no_body("GET", 204));
  EXPECT_TRUE(response_has_no_body("GET", 304));
  EXPECT_TRUE(response_has_no_body("GET", 103));
  EXPECT_FALSE(response_has_no_body("GET", 200));
  EXPECT_FALSE(response_has_no_body("POST", 404));
}

TEST(HeaderToken, ClassifiesCaseInsensitively) {
  EXPECT_EQ(classify_header("content-LENGTH"), HeaderToken::ContentLength);
  EXPECT_EQ(classify_header("Te"), HeaderToken::Te);
  EXPECT_EQ(classify_header("X-Other"), HeaderToken::Other);
  EXPECT_TRUE(is_hop_by_hop(classify_header("Proxy-Connection")));
  EXPECT_FALSE(is_hop_by_hop(classify_header("Host")));
  EXPECT_TRUE(list_contains(" close , foo", "CLOSE"));
  EXPECT_FALSE(list_contains("closer", "close"));
}

// The same request as HTTP/2 fields for an h2c upstream (`tls`: an h2 one).
std::vector<std::pair<std::string, std::string>> h2_fields(const RequestHead& r, bool tls = false) {
  UpstreamRequestOptions opts;
  opts.upstream_tls = tls;
  opts.client_addr = "192.0.2.7";
  opts.default_host = "api";
  std::vector<std::pair<std::string, std::string>> out;
  const H2RequestFields fields(r, opts);
  for (const auto& f : fields.fields()) out.emplace_back(f.name, f.value);
  return out;
}

// Every octet against RFC 9110's grammar: a name is 1*tchar (§5.6.2), a
// value VCHAR / obs-text / SP / HTAB (§5.5).
TEST(HeaderToken, FieldNameAndValueOctets) {
  const std::string_view tchar_marks = "!#$%&'*+-.^_`|~";
  for (int i = 0; i < 256; ++i) {
    const auto c = static_cast<unsigned char>(i);
    const bool tchar =
        (c < 0x80 && std::isalnum(c) != 0) || tchar_marks.find(static_cast<char>(c)) != std::string_view::npos;
    const bool value_octet = c == '\t' || (c >= 0x20 && c != 0x7f);
    const std::string one(1, static_cast<char>(c));
    EXPECT_EQ(valid_field_name(one), tchar) << i;
    EXPECT_EQ(valid_field_name("x-" + one + "-y"), tchar) << i;
    EXPECT_EQ(valid_field_value(one), value_octet) << i;
    EXPECT_EQ(valid_field_value("a " + one + " b"), value_octet) << i;
  }
  EXPECT_FALSE(valid_field_name(""));
  EXPECT_TRUE(valid_field_value(""));
}

TEST(HeaderRewrite, Http2FieldsCarryTheAuthorityAndNoConnectionSpecificField) {
  RequestHead r = get({h("Host", "Example.com:8443"), h("Connection", "keep-alive, X-Hop"), h("X-Hop", "1"),
                       h("Keep-Alive", "timeout=5"), h("TE", "trailers, deflate"), h("Upgrade", "h2c"),
                       h("Content-Type", "application/grpc"), h("Transfer-Encoding", "chunked")});
  r.method = "POST";
  r.chunked = true;
  using F = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(h2_fields(r), (F{{":method", "POST"},
                             {":scheme", "http"},
                             {":authority", "Example.com:8443"},
                             {":path", "/a?b=c"},
                             {"content-type", "application/grpc"},
                             {"x-forwarded-for", "192.0.2.7"},
                             {"x-real-ip", "192.0.2.7"},
                             {"x-forwarded-proto", "https"},
                             {"te", "trailers"}}));
  // Without TE: trailers no te goes up; a known length does; no Host: the default.
  RequestHead put = get({h("TE", "gzip")});
  put.method = "PUT";
  put.content_length = 3;
  EXPECT_EQ(h2_fields(put), (F{{":method", "PUT"},
                               {":scheme", "http"},
                               {":authority", "api"},
                               {":path", "/a?b=c"},
                               {"x-forwarded-for", "192.0.2.7"},
                               {"x-real-ip", "192.0.2.7"},
                               {"x-forwarded-proto", "https"},
                               {"content-length", "3"}}));
}

TEST(HeaderRewrite, Http2FieldsOverTlsSayHttps) {
  // RFC 9113 §8.3.1: :scheme is the target URI's, https for a connection
  // over TLS (protocol = "h2"), whatever the client's listener was.
  const auto fields = h2_fields(get({h("Host", "api")}), /*tls=*/true);
  ASSERT_GE(fields.size(), 2u);
  EXPECT_EQ(fields[1], (std::pair<std::string, std::string>{":scheme", "https"}));
}

// RFC 7541 §6.2.3: a value new in every request (the request ID, a
// configured field with a variable) goes never indexed, so it does not fill
// both peers' HPACK dynamic tables with entries that are never used again
// (each one also lengthens nghttp2's search of its table for that name).
TEST(HeaderRewrite, Http2FieldsNewInEveryRequestAreNeverIndexed) {
  HeaderEdit edit;
  FieldTemplate fixed;
  fixed.name = "X-Env";
  fixed.segments = {ValueSegment{"prod"}};
  FieldTemplate per_request;
  per_request.name = "X-Trace";
  per_request.segments = {ValueSegment{"", HeaderVar::RequestId, true}};
  per_request.constant = false;
  edit.append = {fixed, per_request};
  HeaderVars vars{};
  vars[static_cast<size_t>(HeaderVar::RequestId)] = "abc";
  UpstreamRequestOptions opts;
  opts.client_addr = "192.0.2.7";
  opts.request_id_header = "X-Request-ID";
  opts.request_id = "abc";
  opts.edit = &edit;
  opts.vars = &vars;
  std::vector<std::string> never_indexed;
  const RequestHead r = get({h("Host", "api"), h("X-Client", "1")});
  const H2RequestFields fields(r, opts);
  for (const auto& f : fields.fields()) {
    if (f.no_index) never_indexed.push_back(std::string(f.name) + ": " + std::string(f.value));
  }
  EXPECT_EQ(never_indexed, (std::vector<std::string>{"x-request-id: abc", "x-trace: abc"}));
}

// The fields are views: an HTTP/2 client's lowercase names and every value
// point into the client's head; what is made (a lowercased name, a joined
// X-Forwarded-For, a configured value, the length) is in text(), whose views
// stay right however often it grows while the head is built.
TEST(HeaderRewrite, Http2FieldsAreViewsIntoTheHeadOrTheirOwnText) {
  std::vector<Header> headers{h("host", "api"), h("accept", "*/*"), h("x-forwarded-for", "198.51.100.1")};
  for (int i = 0; i < 40; ++i) headers.push_back(h("X-Mixed-Case-Name-" + std::to_string(i), "v" + std::to_string(i)));
  RequestHead r = get(std::move(headers));
  r.method = "POST";
  r.content_length = 1234567;
  HeaderEdit edit;
  FieldTemplate configured;
  configured.name = "X-Configured";
  configured.segments = {ValueSegment{std::string(100, 'c')}};
  edit.append = {configured};
  const HeaderVars vars{};
  UpstreamRequestOptions opts;
  opts.client_addr = "192.0.2.7";
  opts.edit = &edit;
  opts.vars = &vars;
  const H2RequestFields fields(r, opts);
  const auto& f = fields.fields();
  auto within = [](std::string_view v, std::string_view s) {
    return v.data() >= s.data() && v.data() + v.size() <= s.data() + s.size();
  };
  ASSERT_EQ(f.size(), 4u + 1u + 40u + 5u);  // pseudo-fields, accept, the 40, XFF, X-Real-IP, proto, configured, length
  EXPECT_EQ(f[2].value, "api");
  EXPECT_EQ(f[2].value.data(), r.headers[0].value.data());  // a view into the head
  EXPECT_EQ(f[4].name, "accept");
  EXPECT_EQ(f[4].name.data(), r.headers[1].name.data());
  for (int i = 0; i < 40; ++i) {
    const FieldView& m = f[5 + static_cast<size_t>(i)];
    EXPECT_EQ(m.name, "x-mixed-case-name-" + std::to_string(i));
    EXPECT_TRUE(within(m.name, fields.text()));
    EXPECT_EQ(m.value.data(), r.headers[3 + static_cast<size_t>(i)].value.data());
  }
  EXPECT_EQ(f[45].name, "x-forwarded-for");
  EXPECT_EQ(f[45].value, "198.51.100.1, 192.0.2.7");
  EXPECT_TRUE(within(f[45].value, fields.text()));
  EXPECT_EQ(f[48].name, "x-configured");
  EXPECT_EQ(f[48].value, std::string(100, 'c'));
  EXPECT_TRUE(within(f[48].value, fields.text()));
  EXPECT_EQ(f[49].name, "content-length");
  EXPECT_EQ(f[49].value, "1234567");
}

// Names (and values) that are string literals say so, for an encoder that
// may keep pointing at them (nghttp2's NO_COPY flags); nothing else does:
// a view into the head or into text() dies with them.
// H2Session::submit hands every name to nghttp2 uncopied, which then does
// not lowercase it either (NGHTTP2_NV_FLAG_NO_COPY_NAME): each must be
// lowercase already, whatever case the client or a rule wrote it in.
TEST(HeaderRewrite, Http2FieldNamesAreAllLowercase) {
  RequestHead r =
      get({h("Host", "api"), h("Accept", "*/*"), h("X-Custom-Thing", "v"), h("x-lower", "w"), h("TE", "trailers")});
  r.content_length = 5;
  HeaderEdit edit;
  FieldTemplate added;
  added.name = "X-Added-By-Rule";
  added.segments = {ValueSegment{"1"}};
  edit.append = {added};
  HeaderVars vars{};
  UpstreamRequestOptions opts;
  opts.client_addr = "192.0.2.7";
  opts.request_id_header = "X-Trace-Id";
  opts.request_id = "abc";
  opts.edit = &edit;
  opts.vars = &vars;
  const H2RequestFields fields(r, opts);
  std::vector<std::string> names;
  for (const auto& f : fields.fields()) {
    names.emplace_back(f.name);
    EXPECT_EQ(f.name.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), std::string_view::npos) << f.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{":method", ":scheme", ":authority", ":path", "accept", "x-custom-thing",
                                             "x-lower", "x-forwarded-for", "x-real-ip", "x-forwarded-proto",
                                             "x-trace-id", "x-added-by-rule", "te", "content-length"}));
}

}  // namespace
}  // namespace tlsfront::http
