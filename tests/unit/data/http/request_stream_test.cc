// RequestStream, the codec-independent part of a request, driven through a
// recording StreamCodec: the admission sequence's order, what a failure
// becomes before and after the head went out, the local answer to HEAD,
// 1xx to an HTTP/1.0 client, and the extended CONNECT rules (a 2xx to the
// Upgrade is a 502; a 101 without our Accept is a 502; one with it, a 200).
#include "data/http/request_stream.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../../support/data_path_env.h"
#include "../../support/data_path_upstream.h"
#include "../../support/loop_test.h"
#include "data/http/extended_connect.h"

namespace tlsfront::http {
namespace {

class RecordingCodec final : public StreamCodec {
 public:
  void encode_informational(const ResponseHead& head) override { events.push_back("1xx " + std::to_string(head.status)); }
  void encode_head(ResponseHead&& head, bool has_body) override {
    events.push_back("head " + std::to_string(head.status) + (has_body ? " +body" : ""));
    head_sent = true;
  }
  void encode_tunnel_open(const ResponseHead& head, std::string_view protocol) override {
    events.push_back("tunnel " + std::to_string(head.status) + " " + std::string(protocol));
    head_sent = true;
  }
  void encode_body(std::string_view data) override { events.push_back("body " + std::string(data)); }
  void encode_end() override { events.push_back("end"); }
  bool answerable() const override { return !head_sent; }
  void abort_response() override { events.push_back("abort"); }
  void on_local_answer() override { events.push_back("local"); }
  bool output_congested() const override { return false; }
  void on_request_body_writable() override {}
  const ConnectionInfo& connection_info() const override { return info; }

  ConnectionInfo info = harness::test_connection_info();
  std::vector<std::string> events;
  bool head_sent = false;
};

class RequestStreamTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    env_ = std::make_unique<harness::DataPathEnv>(&loop_, harness::data_path_config({harness::refused_port(&loop_)}));
    stream_ = std::make_unique<RequestStream>(env_->env(), &codec_);
    RequestHead& head = stream_->record().head;
    head.method = "GET";
    head.target = "/";
    head.host = "example.test";
    head.headers.push_back(Header{"host", "example.test", HeaderToken::Host});
  }
  void release_objects() override {
    stream_.reset();
    env_.reset();
  }
  // admit() with a validation that counts its calls and answers `status`.
  LocalAnswer admit(int status = 0) {
    return stream_->admit([&] {
      ++validations_;
      return status;
    });
  }

  RecordingCodec codec_;
  std::unique_ptr<harness::DataPathEnv> env_;
  std::unique_ptr<RequestStream> stream_;
  int validations_ = 0;
};

TEST_F(RequestStreamTest, ARefusedMethodIsAnsweredBeforeTheCodecsValidation) {
  stream_->record().head.method = "CONNECT";
  LocalAnswer answer = admit();
  EXPECT_EQ(answer.status, 405);
  EXPECT_TRUE(answer.head_refused);
  EXPECT_EQ(validations_, 0);
  EXPECT_FALSE(stream_->has_exchange());
}

TEST_F(RequestStreamTest, TheCodecsStatusOrItsOwnEndStopsAdmission) {
  LocalAnswer answer = admit(400);
  EXPECT_EQ(answer.status, 400);
  EXPECT_TRUE(answer.head_refused);
  EXPECT_FALSE(stream_->has_exchange());
  EXPECT_EQ(admit(-1).status, -1);  // the codec ended the stream itself
  EXPECT_FALSE(stream_->has_exchange());
}

TEST_F(RequestStreamTest, AnAdmittedRequestGetsAnExchangeNotYetStarted) {
  LocalAnswer answer = admit();
  EXPECT_EQ(answer.status, 0);
  EXPECT_EQ(validations_, 1);
  EXPECT_TRUE(stream_->has_exchange());
  EXPECT_TRUE(codec_.events.empty());
}

TEST_F(RequestStreamTest, AFailureBeforeTheHeadIsALocalAnswerAfterItAnAbort) {
  ASSERT_EQ(admit().status, 0);
  stream_->fail_response(504, "timeout");
  EXPECT_FALSE(stream_->has_exchange());  // retired into the record
  ASSERT_EQ(codec_.events.size(), 4u);
  EXPECT_EQ(codec_.events[0], "local");
  EXPECT_EQ(codec_.events[1], "head 504 +body");
  EXPECT_EQ(codec_.events[3], "end");
  EXPECT_EQ(stream_->record().status, 504);
  codec_.events.clear();
  stream_->fail_response(502, "again");
  EXPECT_EQ(codec_.events, std::vector<std::string>{"abort"});
  EXPECT_EQ(stream_->record().status, 504);
}

TEST_F(RequestStreamTest, AnUpstreamResetAlwaysCutsTheResponseShort) {
  stream_->fail_response(0, "reset");
  EXPECT_EQ(codec_.events, std::vector<std::string>{"abort"});
}

TEST_F(RequestStreamTest, ALocalAnswerToHeadHasNoBody) {
  stream_->record().head.method = "HEAD";
  stream_->respond_local(404);
  EXPECT_EQ(codec_.events, (std::vector<std::string>{"local", "head 404", "end"}));
}

TEST_F(RequestStreamTest, NoInformationalResponseForAnHttp10Client) {
  ResponseHead interim;
  interim.status = 103;
  stream_->record().head.version_minor = 0;
  stream_->send_informational(interim);
  EXPECT_TRUE(codec_.events.empty());
  stream_->record().head.version_minor = 1;
  stream_->send_informational(interim);
  EXPECT_EQ(codec_.events, std::vector<std::string>{"1xx 103"});
}

TEST_F(RequestStreamTest, A2xxToAnExtendedConnectIs502) {
  stream_->record().head.method = "CONNECT";
  stream_->map_extended_connect("websocket");
  ResponseHead ok;
  ok.status = 200;
  stream_->send_response_head(std::move(ok), true);
  ASSERT_FALSE(codec_.events.empty());
  EXPECT_EQ(codec_.events[1], "head 502 +body");
  EXPECT_EQ(stream_->record().status, 502);
}

TEST_F(RequestStreamTest, A101WithoutOurAcceptIs502AndWithItA200) {
  stream_->record().head.method = "CONNECT";
  stream_->map_extended_connect("websocket");
  ResponseHead switching;
  switching.status = 101;
  switching.headers.push_back(Header{"sec-websocket-accept", "not-ours", HeaderToken::Other});
  stream_->open_tunnel(switching, "websocket");
  ASSERT_FALSE(codec_.events.empty());
  EXPECT_EQ(codec_.events[1], "head 502 +body");
  EXPECT_FALSE(stream_->record().tunnel);

  RecordingCodec codec;
  RequestStream stream(env_->env(), &codec);
  stream.record().head.method = "CONNECT";
  stream.map_extended_connect("websocket");
  const Header* key = nullptr;
  for (const Header& h : stream.record().head.headers) {
    if (h.name == "sec-websocket-key") key = &h;
  }
  ASSERT_NE(key, nullptr);
  switching.headers[0].value = websocket_accept(key->value);
  stream.open_tunnel(switching, "websocket");
  EXPECT_EQ(codec.events, std::vector<std::string>{"tunnel 200 websocket"});
  EXPECT_TRUE(stream.record().tunnel);
  EXPECT_EQ(stream.record().status, 200);
}

}  // namespace
}  // namespace tlsfront::http
