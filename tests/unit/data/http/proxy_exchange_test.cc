// ProxyExchange against ScriptedUpstreams on the test's loop: retry once on a
// pooled connection the backend closed (idempotent requests only, or
// requests none of whose bytes were written), the next server after a
// refused connect, 502 when none is left, 504 on an upstream timeout, and
// cancel(). Through an Http1Session, and directly with a RecordingSink.
#include "data/http/proxy_exchange.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "../../support/data_path_client.h"
#include "../../support/data_path_test.h"

namespace tlsfront::http {
namespace {

using harness::Reply;

constexpr std::string_view kGet = "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n";

// An ExchangeSink that records what the exchange reports.
class RecordingSink final : public ExchangeSink {
 public:
  void send_informational(const ResponseHead&) override { ++calls; }
  void open_tunnel(const ResponseHead&, std::string_view) override { ++calls; }
  void send_response_head(ResponseHead&& head, bool) override {
    ++calls;
    status = head.status;
  }
  void send_response_body(std::string_view data) override {
    ++calls;
    body.append(data);
  }
  void end_response() override {
    ++calls;
    ended = true;
  }
  void fail_response(int s, std::string_view) override {
    ++calls;
    failed_status = s;
  }
  bool output_congested() const override { return false; }
  void on_request_body_writable() override {}
  const ConnectionInfo& connection_info() const override { return info; }

  ConnectionInfo info = harness::test_connection_info();
  int calls = 0;
  int status = 0;
  std::string body;
  bool ended = false;
  int failed_status = -1;
};

class ProxyExchangeTest : public harness::DataPathTest {
 protected:
  // One GET answered 200, so the upstream connection is pooled.
  void warm_pool() {
    feed(kGet);
    ASSERT_TRUE(until_responses(1));
    ASSERT_EQ(upstream().accepted(), 1);
  }
  RequestHead get_head() {
    RequestHead head;
    head.method = "GET";
    head.target = "/";
    head.host = "example.test";
    head.headers.push_back(Header{"Host", "example.test", HeaderToken::Host});
    return head;
  }
  void release_objects() override {
    exchange_.reset();
    DataPathTest::release_objects();
  }
  std::unique_ptr<ProxyExchange> exchange_;
};

TEST_F(ProxyExchangeTest, IdempotentRequestIsRetriedOnceWhenThePooledConnectionWasClosed) {
  warm_pool();
  upstream().script(Reply::close_before_answering());  // the pooled connection dies under the request
  upstream().script(Reply::ok("retried"));
  feed(kGet);
  ASSERT_TRUE(until_responses(2));
  auto rs = responses();
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_EQ(rs[1].body, "retried");
  EXPECT_EQ(upstream().accepted(), 2);  // the retry went on a new connection
  EXPECT_EQ(upstream().requests().size(), 3u);
  EXPECT_FALSE(transport().closed());
}

TEST_F(ProxyExchangeTest, RetryHappensOnlyOnce) {
  warm_pool();
  upstream().script(Reply::close_before_answering());
  upstream().script(Reply::close_before_answering());
  feed(kGet);
  ASSERT_TRUE(until_responses(2));
  EXPECT_EQ(responses()[1].status, 502);
  EXPECT_EQ(upstream().requests().size(), 3u);
}

TEST_F(ProxyExchangeTest, PostWhoseBytesWereWrittenIsNotRetried) {
  warm_pool();
  upstream().script(Reply::close_before_answering());
  feed("POST /form HTTP/1.1\r\nHost: example.test\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_TRUE(until_responses(2));
  EXPECT_EQ(responses()[1].status, 502);
  EXPECT_EQ(upstream().accepted(), 1);  // no second connection: the POST may have been processed
  EXPECT_EQ(upstream().requests().size(), 2u);
}

TEST_F(ProxyExchangeTest, RefusedConnectGoesToTheNextServerWhateverTheMethod) {
  cfg_ = harness::data_path_config({harness::refused_port(&loop_), upstream().port()});
  feed("POST /form HTTP/1.1\r\nHost: example.test\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].status, 200);
  EXPECT_EQ(responses()[0].body, "ok");
  ASSERT_EQ(upstream().requests().size(), 1u);
  EXPECT_EQ(upstream().requests()[0].body, "abc");  // replayed whole on the second server
}

TEST_F(ProxyExchangeTest, RefusedConnectEverywhereIs502) {
  cfg_ = harness::data_path_config({harness::refused_port(&loop_), harness::refused_port(&loop_)});
  feed(kGet);
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].status, 502);
  EXPECT_FALSE(transport().closed());  // a local answer on a keepalive connection
}

TEST_F(ProxyExchangeTest, UpstreamTimeoutIs504) {
  cfg_.upstreams[0].read_timeout = std::chrono::milliseconds(20);
  upstream().script(Reply::hold());
  feed(kGet);
  ASSERT_TRUE(until_responses(1));
  EXPECT_EQ(responses()[0].status, 504);
  // A timeout may mean the request is being processed: not retried.
  EXPECT_EQ(upstream().requests().size(), 1u);
}

TEST_F(ProxyExchangeTest, FailureAfterTheHeadCutsTheResponseShort) {
  upstream().script(Reply::hold());
  feed(kGet);
  ASSERT_TRUE(until_upstream_requests(1));
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  upstream().close(0);
  ASSERT_TRUE(until_closed());
  EXPECT_EQ(transport().close_notify(), false);  // the client sees the truncation
  auto rs = responses();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_FALSE(rs[0].complete);
}

TEST_F(ProxyExchangeTest, DirectExchangeStreamsTheResponseToItsSink) {
  upstream().script(Reply::raw("HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\nmade"));
  RecordingSink sink;
  exchange_ = std::make_unique<ProxyExchange>(&loop_, &sink, &env().group(0), get_head());
  exchange_->start();
  exchange_->on_request_complete();
  ASSERT_TRUE(run_until([&] { return sink.ended || sink.failed_status >= 0; }));
  EXPECT_EQ(sink.status, 201);
  EXPECT_EQ(sink.body, "made");
  EXPECT_EQ(exchange_->phase(), ProxyExchange::Phase::Done);
  EXPECT_EQ(exchange_->stats().status, 201);
  EXPECT_EQ(exchange_->stats().connection_reused, false);
}

TEST_F(ProxyExchangeTest, CancelClosesTheUpstreamConnectionAndSilencesTheSink) {
  upstream().script(Reply::hold());
  RecordingSink sink;
  exchange_ = std::make_unique<ProxyExchange>(&loop_, &sink, &env().group(0), get_head());
  exchange_->start();
  exchange_->on_request_complete();
  ASSERT_TRUE(until_upstream_requests(1));
  exchange_->cancel();
  upstream().write(0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  ASSERT_TRUE(run_until([&] { return upstream().connection_closed(0); }));
  settle();
  EXPECT_EQ(sink.calls, 0);
}

}  // namespace
}  // namespace tlsfront::http
