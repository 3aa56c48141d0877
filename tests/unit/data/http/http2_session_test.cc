// Http2Session (and its Http2Streams) driven by an nghttp2 client session
// (harness::H2Client) through a FakeTransport, proxying to a ScriptedUpstream
// on the same loop: one GET, two concurrent streams, a client reset
// cancelling its upstream exchange, a stream paused by congested output
// going on when it drains (and listed for that once), 431 for a too large
// header list.
#include "data/http/http2_session.h"

#include <gtest/gtest.h>

#include <string>

#include "../../support/data_path_client.h"
#include "../../support/data_path_test.h"

namespace tlsfront::http {
namespace {

using harness::Reply;

class Http2SessionTest : public harness::DataPathTest {
 protected:
  void SetUp() override {
    DataPathTest::SetUp();
    each_iteration([this] {
      if (started_) client_.pump(transport(), h2());
    });
  }
  // Makes the session; the client's preface and SETTINGS go in at the next pump.
  void start() {
    h2();
    started_ = true;
  }
  bool until_stream_closed(int32_t id) {
    return run_until([&] { return client_.stream(id).closed; });
  }

  harness::H2Client client_;
  bool started_ = false;
};

TEST_F(Http2SessionTest, GetIsAnswered) {
  start();
  int32_t id = client_.submit("GET", "/hello", {{"user-agent", "h2-test"}});
  ASSERT_TRUE(until_stream_closed(id));
  const auto& s = client_.stream(id);
  EXPECT_EQ(s.error_code, 0u);
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.body, "ok");
  EXPECT_EQ(s.header("content-length"), "2");
  ASSERT_EQ(upstream().requests().size(), 1u);
  const auto& r = upstream().requests()[0];
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/hello");
  EXPECT_EQ(r.header("Host"), "example.test");  // from :authority
  EXPECT_EQ(r.header("User-Agent"), "h2-test");
  EXPECT_FALSE(transport().closed());
  EXPECT_FALSE(client_.failed());
}

// At a resource limit the worker closes idle connections: an HTTP/2
// connection with a stream in progress is not one; without, GOAWAY NO_ERROR.
TEST_F(Http2SessionTest, CloseIfIdleWaitsForOpenStreams) {
  start();
  upstream().script(Reply::hold());
  int32_t id = client_.submit("GET", "/a");
  ASSERT_TRUE(until_upstream_requests(1));
  EXPECT_FALSE(h2().close_if_idle());
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
  ASSERT_TRUE(until_stream_closed(id));
  EXPECT_TRUE(h2().close_if_idle());
  ASSERT_TRUE(run_until([&] { return client_.goaway_received() && transport().closed(); }));
  EXPECT_EQ(client_.stream(id).status, 200);
  EXPECT_FALSE(client_.failed());
}

// nghttp2's frame buffer (a mapping of its own, Nghttp2Memory) keeps the
// pages a response touched while the session is busy and for the first
// kFrameBufferRelease of an idle wait; then the idle session gives them
// back and waits out the rest of the keepalive, and the next response,
// written into zero-filled pages, arrives whole.
TEST_F(Http2SessionTest, IdleSessionGivesBackTheFrameBufferPages) {
  using std::chrono::milliseconds;
  start();
  upstream().script(Reply::hold());
  int32_t id = client_.submit("GET", "/a");
  ASSERT_TRUE(until_upstream_requests(1));
  EXPECT_GT(h2().frame_buffer_pages(), 0u);  // SETTINGS and its ACK went through it
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
  ASSERT_TRUE(until_stream_closed(id));
  EXPECT_EQ(client_.stream(id).body, "A");
  // Idle: not at once, but when the first timer fires.
  ASSERT_EQ(transport().timer(), Http2Session::kFrameBufferRelease);
  EXPECT_GT(h2().frame_buffer_pages(), 0u);
  ASSERT_TRUE(transport().fire_timer());
  EXPECT_EQ(h2().frame_buffer_pages(), 0u);
  const milliseconds keepalive = h2().env().config->timeouts.keepalive;
  EXPECT_EQ(transport().timer(), keepalive - Http2Session::kFrameBufferRelease);
  EXPECT_FALSE(transport().closed());

  int32_t next = client_.submit("GET", "/b", {{"user-agent", "h2-test"}});
  ASSERT_TRUE(until_stream_closed(next));
  EXPECT_EQ(client_.stream(next).status, 200);
  EXPECT_EQ(client_.stream(next).body, "ok");
  EXPECT_EQ(client_.stream(next).header("content-length"), "2");
  ASSERT_TRUE(transport().fire_timer());
  EXPECT_EQ(h2().frame_buffer_pages(), 0u);
  // The rest of the keepalive ends the connection as before.
  ASSERT_TRUE(transport().fire_timer());
  ASSERT_TRUE(run_until([&] { return client_.goaway_received(); }));
  EXPECT_FALSE(client_.failed());
}

TEST_F(Http2SessionTest, TwoConcurrentStreamsAreAnsweredIndependently) {
  start();
  upstream().script(Reply::hold());
  upstream().script(Reply::hold());
  int32_t a = client_.submit("GET", "/a");
  int32_t b = client_.submit("POST", "/b", {}, std::string("payload"));
  // Both reach the upstream (two connections) before either is answered.
  ASSERT_TRUE(until_upstream_requests(2));
  ASSERT_TRUE(run_until([&] { return upstream().requests()[0].complete && upstream().requests()[1].complete; }));
  EXPECT_EQ(upstream().accepted(), 2);
  size_t ia = upstream().requests()[0].target == "/a" ? 0 : 1;
  size_t ib = 1 - ia;
  EXPECT_EQ(upstream().requests()[ib].body, "payload");
  // Answered in the other order.
  upstream().write(ib, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB");
  ASSERT_TRUE(until_stream_closed(b));
  EXPECT_FALSE(client_.stream(a).closed);
  upstream().write(ia, "HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nA");
  ASSERT_TRUE(until_stream_closed(a));
  EXPECT_EQ(client_.stream(a).status, 201);
  EXPECT_EQ(client_.stream(a).body, "A");
  EXPECT_EQ(client_.stream(b).status, 200);
  EXPECT_EQ(client_.stream(b).body, "B");
}

TEST_F(Http2SessionTest, StreamResetByTheClientCancelsItsUpstreamExchange) {
  access_log_ = true;
  start();
  upstream().script(Reply::hold());
  int32_t id = client_.submit("GET", "/slow");
  ASSERT_TRUE(until_upstream_requests(1));
  client_.reset(id, NGHTTP2_CANCEL);
  ASSERT_TRUE(run_until([&] { return upstream().connection_closed(0); }));
  EXPECT_TRUE(client_.stream(id).closed);
  // The connection goes on: another stream is served.
  int32_t next = client_.submit("GET", "/next");
  ASSERT_TRUE(until_stream_closed(next));
  EXPECT_EQ(client_.stream(next).status, 200);
  EXPECT_FALSE(transport().closed());
  EXPECT_NE(access_log_text().find("\"status\":499"), std::string::npos);
}

// The upstream's head is queued, then its body turns out malformed: the
// stream is reset before the head goes out, so the client never saw a
// status, and the log must not claim the upstream's 200 reached it.
TEST_F(Http2SessionTest, UpstreamFailingRightAfterItsHeadIsLogged502NotTheQueuedStatus) {
  access_log_ = true;
  start();
  upstream().script(Reply::raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"));
  int32_t id = client_.submit("GET", "/bad-chunk");
  ASSERT_TRUE(until_stream_closed(id));
  EXPECT_EQ(client_.stream(id).status, 0);
  EXPECT_EQ(client_.stream(id).error_code, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
  const std::string log = access_log_text();
  EXPECT_NE(log.find("\"status\":502,\"response_complete\":false,\"bytes_sent\":0,"), std::string::npos) << log;
  EXPECT_NE(log.find("\"upstream_error\":\"invalid_response\",\"upstream_status\":200,"), std::string::npos) << log;
}

// A stream whose exchange paused its upstream because the connection's
// output was congested (here at a 1xx: no DATA of its own is queued whose
// sending would wake it) reads on once that output drains.
TEST_F(Http2SessionTest, StreamPausedByCongestedOutputResumesWhenItDrains) {
  start();
  upstream().script(Reply::hold());
  int32_t id = client_.submit("GET", "/hints");
  ASSERT_TRUE(until_upstream_requests(1));
  settle();
  transport().set_buffered_output(1 << 20);  // the client stopped reading
  upstream().write(0, "HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n");
  settle();
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
  settle();
  EXPECT_FALSE(client_.stream(id).closed);
  transport().set_buffered_output(0);
  h2().on_output_drained();
  ASSERT_TRUE(until_stream_closed(id));
  EXPECT_EQ(client_.stream(id).status, 200);
  EXPECT_EQ(client_.stream(id).body, "A");
  EXPECT_FALSE(client_.failed());
}

// A stream congested again and again while the output never falls under its
// low watermark (so no drain notice comes) is listed for that notice once,
// not once per congestion: nghttp2 taking its chunks must not take it off.
TEST_F(Http2SessionTest, StreamWaitsForTheDrainNoticeOnceHoweverOftenCongested) {
  start();
  upstream().script(Reply::hold());
  int32_t id = client_.submit("GET", "/big");
  ASSERT_TRUE(until_upstream_requests(1));
  settle();
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
  settle();
  for (int i = 0; i < 20; ++i) {
    transport().set_buffered_output(100 * 1024);  // congested: the exchange enrols and pauses
    upstream().write(0, std::string(1000, 'x'));
    settle();
    transport().set_buffered_output(32 * 1024);  // below the high watermark, above the low one
    h2().flush();                                // as after a WINDOW_UPDATE: nghttp2 takes the chunk
    settle();
  }
  EXPECT_EQ(client_.stream(id).body.size(), 20u * 1000);
  EXPECT_EQ(h2().drain_waiting(), 1u);
}

TEST_F(Http2SessionTest, CompleteStreamIsLoggedComplete) {
  access_log_ = true;
  start();
  int32_t id = client_.submit("GET", "/hello");
  ASSERT_TRUE(until_stream_closed(id));
  EXPECT_EQ(client_.stream(id).status, 200);
  const std::string log = access_log_text();
  EXPECT_NE(log.find("\"status\":200,\"response_complete\":true,"), std::string::npos) << log;
}

TEST_F(Http2SessionTest, TooLargeHeaderListIs431) {
  cfg_.http2.max_header_list_size = 1024;
  start();
  int32_t id = client_.submit("GET", "/", {{"x-big", std::string(2000, 'a')}});
  ASSERT_TRUE(until_stream_closed(id));
  EXPECT_EQ(client_.stream(id).status, 431);
  settle();
  EXPECT_EQ(upstream().accepted(), 0);
  // Only that stream is refused.
  int32_t ok = client_.submit("GET", "/");
  ASSERT_TRUE(until_stream_closed(ok));
  EXPECT_EQ(client_.stream(ok).status, 200);
}

}  // namespace
}  // namespace tlsfront::http
