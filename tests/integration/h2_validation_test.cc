// RFC 9113 §8.1-8.3 request validation end to end: malformed requests end in
// a stream error (RST_STREAM PROTOCOL_ERROR) and never reach the backend;
// §5.1 frames on closed streams and §5.3.1 self-dependent PRIORITY.
// nghttp2 does most of these checks; these tests hold it to them through
// tlsfront, and each case also shows the connection stays usable.
#include <string>

#include "h2_frames.h"
#include "harness.h"

namespace tlsfront::itest {
namespace {

using H2Validation = ProxyTest;

struct Case {
  const char* name;
  h2::Fields fields;
};

h2::Fields base(const std::string& path = "/v") { return h2::get_request(path); }

h2::Fields with(h2::Fields f, const std::string& name, const std::string& value) {
  f.push_back({name, value});
  return f;
}

TEST_F(H2Validation, MalformedHeadersResetAndNotForwarded) {
  ASSERT_TRUE(start_proxy());
  std::vector<Case> cases = {
      {"uppercase name", with(base(), "X-Upper", "1")},
      {"connection", with(base(), "connection", "close")},
      {"keep-alive", with(base(), "keep-alive", "5")},
      {"proxy-connection", with(base(), "proxy-connection", "keep-alive")},
      {"transfer-encoding", with(base(), "transfer-encoding", "chunked")},
      {"upgrade", with(base(), "upgrade", "websocket")},
      {"te gzip", with(base(), "te", "gzip")},
      {"missing :path", {{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}}},
      {"missing :method", {{":scheme", "https"}, {":authority", "localhost"}, {":path", "/v"}}},
      {"missing :scheme", {{":method", "GET"}, {":authority", "localhost"}, {":path", "/v"}}},
      {"duplicate :method", with(base(), ":method", "GET")},
      {"duplicate :path", {{":method", "GET"}, {":path", "/a"}, {":scheme", "https"}, {":path", "/b"}}},
      {"pseudo after regular", {{":method", "GET"}, {":scheme", "https"}, {"x-a", "1"}, {":path", "/v"}}},
      {"unknown pseudo", with(base(), ":foo", "bar")},
      {"response pseudo", with(base(), ":status", "200")},
      {"empty :path", {{":method", "GET"}, {":scheme", "https"}, {":path", ""}}},
      {"host differs from :authority", with(base(), "host", "evil.example")},
      {"CR in value", with(base(), "x-a", "a\rb")},
      {"NUL in name", with(base(), std::string("x\0a", 3), "1")},
  };
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  uint32_t id = 1;
  for (const auto& k : cases) {
    ASSERT_TRUE(c.send_headers(id, k.fields, true)) << k.name;
    auto f = c.wait_for([id](const h2::Frame& x) {
      return (x.stream == id && (x.type == h2::kRstStream || x.type == h2::kHeaders)) || x.type == h2::kGoaway;
    });
    ASSERT_TRUE(f.has_value()) << k.name << ": no answer";
    ASSERT_EQ(f->type, h2::kRstStream) << k.name << ": not reset (type " << int(f->type) << ")";
    EXPECT_EQ(f->error_code(), h2::kProtocolError) << k.name;
    id += 2;
  }
  // The connection still works, and only this request reached the backend.
  ASSERT_TRUE(c.send_headers(id, base("/ok"), true));
  EXPECT_EQ(c.wait_status(id), 200);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].rfind("GET /ok HTTP/1.1\r\n", 0), 0u) << reqs[0];
  EXPECT_EQ(backend_.count("partial"), 0u);
}

TEST_F(H2Validation, ContentLengthMismatchIsNotForwarded) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  h2::Fields post = {{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/echo"},
                     {"content-length", "10"}};
  // Fewer bytes than announced.
  ASSERT_TRUE(c.send_headers(1, post, false));
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, "12345"));
  auto f = c.wait_for([](const h2::Frame& x) { return x.stream == 1 && x.type == h2::kRstStream; });
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->error_code(), h2::kProtocolError);
  // More bytes than announced.
  ASSERT_TRUE(c.send_headers(3, post, false));
  ASSERT_TRUE(c.send_frame(h2::kData, 0, 3, "123456789012"));
  f = c.wait_for([](const h2::Frame& x) { return x.stream == 3 && x.type == h2::kRstStream; });
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->error_code(), h2::kProtocolError);
  // An exact one goes through.
  ASSERT_TRUE(c.send_headers(5, post, false));
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 5, "1234567890"));
  EXPECT_EQ(c.wait_status(5), 200);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u) << "a request with a wrong Content-Length reached the backend complete";
  EXPECT_EQ(split_head(reqs[0]).second, "1234567890");
}

TEST_F(H2Validation, StreamIdsMustIncrease) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(5, base(), true));
  EXPECT_EQ(c.wait_status(5), 200);
  ASSERT_TRUE(c.send_headers(3, base(), true));  // decreasing: connection error
  auto f = c.wait_for([](const h2::Frame& x) { return x.type == h2::kGoaway; });
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->error_code(), h2::kProtocolError);
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(backend_.wait_requests(1).size(), 1u);
}

// RFC 9113 §5.1: a second HEADERS on a stream the client already ended is
// an error (STREAM_CLOSED), whether the first request is still being
// answered or its stream has closed, and never a second request upstream.
TEST_F(H2Validation, SecondHeadersAfterEndStreamIsNotASecondRequest) {
  ASSERT_TRUE(start_proxy());
  for (const char* first : {"/slow/300", "/fast"}) {
    SCOPED_TRACE(first);
    h2::Client c;
    ASSERT_TRUE(c.connect(port()));
    std::string both = h2::frame(h2::kHeaders, h2::kEndHeaders | h2::kEndStream, 1, h2::hpack(h2::get_request(first)));
    if (std::string_view(first) == "/fast") {
      ASSERT_TRUE(c.send(both));
      EXPECT_EQ(c.wait_status(1), 200);  // the stream is closed when the second HEADERS comes
      both.clear();
    }
    both += h2::frame(h2::kHeaders, h2::kEndHeaders | h2::kEndStream, 1, h2::hpack(h2::get_request("/second")));
    ASSERT_TRUE(c.send(both));
    auto f = c.wait_for([](const h2::Frame& x) {
      return x.type == h2::kGoaway || (x.type == h2::kRstStream && x.stream == 1);
    });
    ASSERT_TRUE(f.has_value()) << "the second HEADERS was not refused";
    EXPECT_EQ(f->error_code(), h2::kStreamClosed);
    c.wait_closed(milliseconds(500));
  }
  // Two first requests; a third would be a "/second" (give it time to arrive).
  for (const auto& r : backend_.wait_requests(3, milliseconds(500))) {
    EXPECT_EQ(r.find("/second"), std::string::npos) << r;
  }
}

// RFC 9113 §5.1 "closed": after the client's own RST_STREAM, DATA or
// HEADERS on that stream is a stream error STREAM_CLOSED (ignoring them is
// only right after *our* RST_STREAM); the connection goes on.
TEST_F(H2Validation, FramesAfterTheClientsResetAreStreamClosed) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  const h2::Fields post = {{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/echo"}};
  ASSERT_TRUE(c.send_headers(1, post, false));
  ASSERT_TRUE(c.send_headers(3, post, false));
  ASSERT_TRUE(c.send_frame(h2::kRstStream, 0, 1, std::string("\0\0\0\x08", 4)));  // CANCEL
  ASSERT_TRUE(c.send_frame(h2::kRstStream, 0, 3, std::string("\0\0\0\x08", 4)));
  // A PING's answer: the resets were read before what follows.
  ASSERT_TRUE(c.send_frame(h2::kPing, 0, 0, std::string(8, 'p')));
  ASSERT_TRUE(c.wait_for([](const h2::Frame& x) { return x.type == h2::kPing && (x.flags & h2::kAck); }));
  ASSERT_TRUE(c.send_frame(h2::kData, 0, 1, "late body"));
  ASSERT_TRUE(c.send(h2::frame(h2::kHeaders, h2::kEndHeaders | h2::kEndStream, 3, h2::hpack({{"x-trailer", "1"}}))));
  for (uint32_t id : {1u, 3u}) {
    SCOPED_TRACE(id);
    auto f = c.wait_for([id](const h2::Frame& x) {
      return x.type == h2::kGoaway || (x.type == h2::kRstStream && x.stream == id);
    });
    ASSERT_TRUE(f.has_value()) << "the frame after the client's reset was ignored";
    EXPECT_EQ(f->type, h2::kRstStream);
    EXPECT_EQ(f->error_code(), h2::kStreamClosed);
  }
  ASSERT_TRUE(c.send_headers(5, base("/after"), true));
  EXPECT_EQ(c.wait_status(5), 200);
}

// §5.1: DATA on a stream both sides ended with END_STREAM is a connection
// error STREAM_CLOSED (as HEADERS already is).
TEST_F(H2Validation, DataOnAStreamEndedBothWaysIsAConnectionError) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, base("/fast"), true));
  ASSERT_TRUE(c.wait_for([](const h2::Frame& x) { return x.stream == 1 && (x.flags & h2::kEndStream); }));
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, "more"));
  auto g = c.wait_for([](const h2::Frame& x) { return x.type == h2::kGoaway; });
  ASSERT_TRUE(g.has_value()) << "DATA on a closed stream was ignored";
  EXPECT_EQ(g->error_code(), h2::kStreamClosed);
  EXPECT_TRUE(c.wait_closed());
}

// §5.3.1: a stream cannot depend on itself, though RFC 7540 priorities are
// off (SETTINGS_NO_RFC7540_PRIORITIES): on an open stream a stream error
// PROTOCOL_ERROR (its exchange ends; others go on), on an idle one (which
// cannot take a RST_STREAM, §6.4) a connection error.
TEST_F(H2Validation, PriorityOnItselfIsAnError) {
  ASSERT_TRUE(start_proxy());
  auto priority = [](uint32_t stream, uint32_t depends_on) {
    std::string p(4, '\0');
    for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(depends_on >> (24 - 8 * i));
    return h2::frame(h2::kPriority, 0, stream, p + std::string(1, '\x0f'));
  };
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, base("/slow/2000"), true));
  ASSERT_TRUE(c.send_headers(3, base("/slow/300"), true));
  ASSERT_TRUE(c.send(priority(3, 1) + priority(1, 1)));
  auto f = c.wait_for([](const h2::Frame& x) { return x.type == h2::kGoaway || x.type == h2::kRstStream; });
  ASSERT_TRUE(f.has_value()) << "the self-dependent PRIORITY was ignored";
  EXPECT_EQ(f->type, h2::kRstStream);
  EXPECT_EQ(f->stream, 1u);
  EXPECT_EQ(f->error_code(), h2::kProtocolError);
  EXPECT_EQ(c.wait_status(3), 200);  // stream 3 depends on 1: fine
  ASSERT_TRUE(c.send(priority(9, 9)));
  auto g = c.wait_for([](const h2::Frame& x) { return x.type == h2::kGoaway; });
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->error_code(), h2::kProtocolError);
  EXPECT_TRUE(c.wait_closed());
}

}  // namespace
}  // namespace tlsfront::itest
