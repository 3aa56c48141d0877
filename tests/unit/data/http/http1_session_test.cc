// Http1Session driven with byte strings through a FakeTransport, proxying to
// a ScriptedUpstream on the same loop: keepalive, pipelining order,
// Expect: 100-continue, early responses, lingering-close signals, local
// error answers (400, 404, 408, 413), 499 and HEAD/304 framing.
#include "data/http/http1_session.h"

#include <gtest/gtest.h>

#include <string>

#include "../../support/data_path_client.h"
#include "../../support/data_path_test.h"

namespace tlsfront::http {
namespace {

using harness::Reply;

constexpr std::string_view kGet = "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n";

size_t count(std::string_view hay, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string_view::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

class Http1SessionTest : public harness::DataPathTest {
 protected:
  // Fires the session timer: the answer is a lone 408, and the connection closes.
  void fire_timer_expecting_408() {
    ASSERT_TRUE(transport().fire_timer());
    auto rs = responses();
    ASSERT_EQ(rs.size(), 1u);
    EXPECT_EQ(rs[0].status, 408);
    EXPECT_EQ(rs[0].header("Connection"), "close");
    EXPECT_TRUE(transport().closed());
  }
};

TEST_F(Http1SessionTest, KeepaliveServesRequestsOnOneConnection) {
  h1();
  feed(kGet);
  ASSERT_TRUE(until_responses(1));
  EXPECT_FALSE(transport().closed());
  EXPECT_TRUE(h1().wants_input());
  // Idle between requests: the keepalive timer runs and buffers may go.
  EXPECT_EQ(transport().timer(), cfg_.timeouts.keepalive);
  EXPECT_GE(transport().release_calls(), 1);
  feed(kGet);
  ASSERT_TRUE(until_responses(2));
  auto rs = responses();
  ASSERT_EQ(rs.size(), 2u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok");
    EXPECT_EQ(r.header("Connection"), "");
  }
  EXPECT_FALSE(transport().closed());
  EXPECT_EQ(upstream().requests().size(), 2u);
  EXPECT_EQ(upstream().accepted(), 1);  // the upstream connection was pooled and reused
}

// At a resource limit the worker closes idle connections: only one waiting
// between requests, never one before its first request or in the middle of one.
TEST_F(Http1SessionTest, CloseIfIdleClosesOnlyBetweenRequests) {
  h1();
  EXPECT_FALSE(h1().close_if_idle());  // no request yet: timeouts.header runs
  feed(kGet.substr(0, 16));
  EXPECT_FALSE(h1().close_if_idle());  // a head arriving
  feed(kGet.substr(16));
  EXPECT_FALSE(h1().close_if_idle());  // proxied, no response yet
  ASSERT_TRUE(until_responses(1));
  EXPECT_FALSE(transport().closed());
  EXPECT_TRUE(h1().close_if_idle());
  EXPECT_TRUE(transport().closed());
  EXPECT_EQ(transport().close_notify(), true);
  EXPECT_EQ(responses().size(), 1u);  // nothing more was sent
}

TEST_F(Http1SessionTest, PipelinedRequestsAreAnsweredStrictlyInOrder) {
  upstream().script(Reply::hold());
  feed("GET /a HTTP/1.1\r\nHost: example.test\r\n\r\nGET /b HTTP/1.1\r\nHost: example.test\r\n\r\n");
  ASSERT_TRUE(until_upstream_requests(1));
  settle();
  // The second request is not parsed (so not forwarded) while the first is unanswered.
  ASSERT_EQ(upstream().requests().size(), 1u);
  EXPECT_EQ(upstream().requests()[0].target, "/a");
  EXPECT_FALSE(h1().wants_input());
  std::string first_response_when_b_arrived;
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
  ASSERT_TRUE(run_until([&] { return upstream().requests().size() >= 2; }));
  // When /b reached the upstream, the response to /a had been sent whole.
  auto at_b = responses();
  ASSERT_GE(at_b.size(), 1u);
  EXPECT_TRUE(at_b[0].complete);
  EXPECT_EQ(upstream().requests()[1].target, "/b");
  ASSERT_TRUE(until_responses(2));
  auto rs = responses();
  EXPECT_EQ(rs[0].body, "A");
  EXPECT_EQ(rs[1].body, "ok");
  EXPECT_FALSE(transport().closed());
}

TEST_F(Http1SessionTest, ExpectContinueIsAnsweredByTheProxyOnce) {
  // The backend sends its own 100 too: the client must still see only one.
  upstream().script(Reply{"HTTP/1.1 100 Continue\r\n\r\n", false, std::string(Reply::ok("done").at_end), false});
  feed("POST /up HTTP/1.1\r\nHost: example.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].status, 100);
  ASSERT_TRUE(until_upstream_requests(1));
  EXPECT_FALSE(upstream().requests()[0].has_header("Expect"));
  settle();  // the backend's 100 arrives and is dropped
  feed("hello");
  ASSERT_TRUE(until_responses(2));
  EXPECT_EQ(count(transport().output(), "100 Continue"), 1u);
  auto rs = responses();
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_EQ(rs[1].body, "done");
  EXPECT_EQ(upstream().requests()[0].body, "hello");
}

TEST_F(Http1SessionTest, ExpectContinueIsNotSentWhenTheBodyIsRefused) {
  cfg_.limits.max_body_bytes = 10;
  feed("POST /up HTTP/1.1\r\nHost: example.test\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(until_responses(1));
  auto rs = responses();
  EXPECT_EQ(rs[0].status, 413);
  EXPECT_EQ(count(transport().output(), "100 Continue"), 0u);
  // The body may still be coming: the connection closes after the 413.
  EXPECT_EQ(rs[0].header("Connection"), "close");
  EXPECT_TRUE(transport().closed());
  settle();
  EXPECT_EQ(upstream().accepted(), 0);
}

// RFC 9110 §10.1.1: a server receiving 100-continue sends either 100 or a
// final status it can tell from the head alone. Without a route the answer
// is 404 at once (the client would otherwise hold its body back for a 100
// that never comes), and the connection closes after it.
TEST_F(Http1SessionTest, ExpectContinueWithoutRouteIsAnsweredBeforeTheBody) {
  cfg_.routes = {config::Route{"api.example.test", "/", "backend"}};
  feed("POST /up HTTP/1.1\r\nHost: other.example.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  settle();
  auto rs = responses();
  ASSERT_FALSE(rs.empty()) << "neither 100 Continue nor 404 sent before the body";
  EXPECT_EQ(rs[0].status, 404);
  EXPECT_EQ(count(transport().output(), "100 Continue"), 0u);
  EXPECT_EQ(rs[0].header("Connection"), "close");
  EXPECT_TRUE(transport().closed());
  EXPECT_FALSE(transport().client_done_called());  // the body may still come: linger
}

TEST_F(Http1SessionTest, ResponseBeforeTheBodyEndsClosesAndStopsForwarding) {
  upstream().script(Reply::early("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nearly"));
  feed("POST /up HTTP/1.1\r\nHost: example.test\r\nContent-Length: 10\r\n\r\nabcd");
  ASSERT_TRUE(until_responses(1));
  auto rs = responses();
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_EQ(rs[0].body, "early");
  EXPECT_EQ(rs[0].header("Connection"), "close");
  ASSERT_TRUE(transport().closed());
  // The request was not read whole: the transport must linger.
  EXPECT_FALSE(transport().client_done_called());
  // The rest of the body goes nowhere, even if the connection still delivered it.
  h1().on_data("efghij");
  run_until([&] { return upstream().open_connections() == 0; });
  EXPECT_EQ(upstream().open_connections(), 0);  // not pooled: its request was cut short
  EXPECT_EQ(upstream().requests()[0].body, "abcd");
  EXPECT_FALSE(upstream().requests()[0].complete);
}

TEST_F(Http1SessionTest, ConnectionCloseWithRequestReadWholeCallsClientDoneBeforeClose) {
  feed("GET / HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(until_closed());
  EXPECT_EQ(responses()[0].header("Connection"), "close");
  EXPECT_EQ(transport().close_notify(), true);
  const int done = transport().find_event("client_done");
  const int close = transport().find_event("close(true)");
  ASSERT_GE(done, 0);
  EXPECT_LT(done, close);
}

TEST_F(Http1SessionTest, BadRequestOnKeepaliveConnectionClosesWithoutClientDone) {
  feed("GET / HTTP/1.1\r\nHost: example.test\r\nBad Name: x\r\n\r\n");
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].status, 400);
  EXPECT_EQ(responses()[0].header("Connection"), "close");
  EXPECT_EQ(transport().close_notify(), true);
  // More input may follow a keepalive request: the transport lingers.
  EXPECT_FALSE(transport().client_done_called());
}

// Request smuggling shapes (RFC 9112 §6.1, §6.3): 400 and the connection
// closes before anything reaches the backend. Some llhttp rejects by itself
// (Content-Length with Transfer-Encoding), some only the session does.
class AmbiguousFramingTest : public harness::DataPathTest, public ::testing::WithParamInterface<std::string_view> {};

TEST_P(AmbiguousFramingTest, Is400AndNothingReachesTheUpstream) {
  feed(GetParam());
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].status, 400);
  EXPECT_TRUE(transport().closed());
  settle();
  EXPECT_EQ(upstream().accepted(), 0);
  EXPECT_TRUE(upstream().requests().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Http1Session, AmbiguousFramingTest,
    ::testing::Values(
        "POST / HTTP/1.1\r\nHost: example.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
        "0\r\n\r\n",
        "POST / HTTP/1.0\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: example.test\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"));

TEST_F(Http1SessionTest, NoRouteIs404AndTheConnectionStaysOpen) {
  cfg_.routes = {config::Route{"api.example.test", "/", "backend"}};
  feed("GET / HTTP/1.1\r\nHost: other.example.test\r\n\r\n");
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].status, 404);
  EXPECT_FALSE(transport().closed());
  feed("GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
  ASSERT_TRUE(until_responses(2));
  EXPECT_EQ(responses()[1].status, 200);
  EXPECT_EQ(upstream().requests().size(), 1u);
}

TEST_F(Http1SessionTest, HeaderTimeoutIs408) {
  h1();
  EXPECT_EQ(transport().timer(), cfg_.timeouts.header);  // armed from the start
  feed("GET / HTTP/1.1\r\nHost: exam");
  EXPECT_EQ(transport().timer(), cfg_.timeouts.header);
  fire_timer_expecting_408();
  EXPECT_FALSE(transport().client_done_called());
  settle();
  EXPECT_EQ(upstream().accepted(), 0);
}

TEST_F(Http1SessionTest, StalledRequestBodyIs408AndCancelsTheExchange) {
  upstream().script(Reply::hold());
  feed("POST /up HTTP/1.1\r\nHost: example.test\r\nContent-Length: 10\r\n\r\nabcd");
  ASSERT_TRUE(run_until([&] { return !upstream().requests().empty() && upstream().requests()[0].body == "abcd"; }));
  EXPECT_EQ(transport().timer(), cfg_.timeouts.body);
  fire_timer_expecting_408();
  ASSERT_TRUE(run_until([&] { return upstream().connection_closed(0); }));
}

TEST_F(Http1SessionTest, ChunkedRequestBodyIsForwardedChunked) {
  feed("POST /up HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  ASSERT_TRUE(until_upstream_requests(1));
  feed("2\r\nde\r\n0\r\n\r\n");
  ASSERT_TRUE(until_responses(1));
  const auto& r = upstream().requests()[0];
  EXPECT_TRUE(r.chunked);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.body, "abcde");
  EXPECT_EQ(responses()[0].status, 200);
}

// The client had the 200 head: the log says 200, cut short (not 499).
TEST_F(Http1SessionTest, ClientClosingMidResponseLogsTheSentStatusAsIncomplete) {
  access_log_ = true;
  upstream().script(Reply::hold());
  feed(kGet);
  ASSERT_TRUE(until_upstream_requests(1));
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart");
  ASSERT_TRUE(run_until([&] { return transport().output().find("part") != std::string::npos; }));
  transport().client_closes();
  EXPECT_EQ(transport().close_notify(), false);  // cut short: no close_notify
  ASSERT_TRUE(run_until([&] { return upstream().connection_closed(0); }));
  const std::string log = access_log_text();
  EXPECT_NE(log.find("\"status\":200,\"response_complete\":false,"), std::string::npos) << log;
}

TEST_F(Http1SessionTest, ClientClosingBeforeTheResponseIs499) {
  access_log_ = true;
  upstream().script(Reply::hold());
  feed(kGet);
  ASSERT_TRUE(until_upstream_requests(1));
  transport().client_closes();
  ASSERT_TRUE(run_until([&] { return upstream().connection_closed(0); }));
  const std::string log = access_log_text();
  EXPECT_NE(log.find("\"status\":499,\"response_complete\":false,"), std::string::npos) << log;
}

TEST_F(Http1SessionTest, CompleteResponseIsLoggedComplete) {
  access_log_ = true;
  feed(kGet);
  ASSERT_TRUE(until_responses(1));
  const std::string log = access_log_text();
  EXPECT_NE(log.find("\"status\":200,\"response_complete\":true,"), std::string::npos) << log;
}

TEST_F(Http1SessionTest, HeadResponseKeepsContentLengthAndHasNoBody) {
  upstream().script(Reply::raw("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"));
  feed("HEAD / HTTP/1.1\r\nHost: example.test\r\n\r\n");
  ASSERT_TRUE(until_responses(1, {0}));
  auto rs = responses({0});
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_EQ(rs[0].header("Content-Length"), "1234");
  EXPECT_EQ(rs[0].header("Transfer-Encoding"), "");
  // Nothing after the head: the next response starts right there.
  feed(kGet);
  ASSERT_TRUE(until_responses(2, {0}));
  rs = responses({0});
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_EQ(rs[1].body, "ok");
}

TEST_F(Http1SessionTest, NotModifiedKeepsContentLengthAndHasNoBody) {
  upstream().script(Reply::raw("HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\nETag: \"x\"\r\n\r\n"));
  upstream().script(Reply::raw("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"));
  feed("GET / HTTP/1.1\r\nHost: example.test\r\nIf-None-Match: \"x\"\r\n\r\n");
  ASSERT_TRUE(until_responses(1, {0}));
  feed(kGet);
  ASSERT_TRUE(until_responses(2, {0}));
  feed(kGet);
  ASSERT_TRUE(until_responses(3, {0}));
  auto rs = responses({0});
  EXPECT_EQ(rs[0].status, 304);
  EXPECT_EQ(rs[0].header("Content-Length"), "50");
  EXPECT_EQ(rs[0].header("Transfer-Encoding"), "");
  EXPECT_EQ(rs[1].status, 204);
  EXPECT_EQ(rs[1].header("Content-Length"), "");  // 204 never states one (RFC 9110 §8.6)
  EXPECT_EQ(rs[2].body, "ok");
}

TEST_F(Http1SessionTest, CongestedClientOutputPausesTheUpstreamUntilDrained) {
  upstream().script(Reply::hold());
  feed(kGet);
  ASSERT_TRUE(until_upstream_requests(1));
  transport().set_buffered_output(1 << 20);  // the client stopped reading
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfirst");
  ASSERT_TRUE(run_until([&] { return transport().output().find("first") != std::string::npos; }));
  EXPECT_EQ(transport().timer(), cfg_.timeouts.send);
  upstream().write(0, "later");
  settle();
  EXPECT_EQ(transport().output().find("later"), std::string::npos);  // the upstream is not read
  transport().set_buffered_output(0);
  h1().on_output_drained();
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].body, "firstlater");
  EXPECT_FALSE(transport().closed());
}

TEST_F(Http1SessionTest, ClientNotReadingForTheSendTimeoutIsCutOff) {
  upstream().script(Reply::hold());
  feed(kGet);
  ASSERT_TRUE(until_upstream_requests(1));
  transport().set_buffered_output(1 << 20);
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfirst");
  ASSERT_TRUE(run_until([&] { return transport().output().find("first") != std::string::npos; }));
  ASSERT_EQ(transport().timer(), cfg_.timeouts.send);
  ASSERT_TRUE(transport().fire_timer());
  EXPECT_EQ(transport().close_notify(), false);
  ASSERT_TRUE(run_until([&] { return upstream().connection_closed(0); }));
}

TEST_F(Http1SessionTest, ChunkedResponseIsReframedAndSlowBodyStreams) {
  upstream().script(Reply::hold());
  feed(kGet);
  ASSERT_TRUE(until_upstream_requests(1));
  upstream().write(0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  ASSERT_TRUE(run_until([&] { return transport().output().find("abc") != std::string::npos; }));
  EXPECT_FALSE(responses()[0].complete);
  upstream().write(0, "2\r\nde\r\n0\r\n\r\n");
  ASSERT_TRUE(until_responses(1));
  auto rs = responses();
  EXPECT_EQ(rs[0].header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(rs[0].body, "abcde");
  EXPECT_FALSE(transport().closed());
}

}  // namespace
}  // namespace tlsfront::http
