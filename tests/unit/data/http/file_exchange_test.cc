// FileExchange on a real loop against a sink that reports congestion: no
// octet is read while the sink is congested (one chunk at most in hand),
// each drain lets exactly the next chunk through, the body arrives whole
// and in order; a file truncated meanwhile fails the response; a cancelled
// exchange makes no further sink call; HEAD and a 304 send no body.
#include "data/http/file_exchange.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "../../support/data_path_env.h"
#include "../../support/loop_test.h"
#include "data/files/file_resolver.h"

namespace tlsfront::http {
namespace {

namespace fs = std::filesystem;

class CongestingSink final : public ExchangeSink {
 public:
  void send_informational(const ResponseHead&) override {}
  void open_tunnel(const ResponseHead&, std::string_view) override {}
  void send_response_head(ResponseHead&& h, bool has_body) override {
    head = h;
    body_expected = has_body;
    ++heads;
  }
  void send_response_body(std::string_view data) override {
    body.append(data);
    ++chunks;
    if (congest) congested = true;
  }
  void end_response() override { ended = true; }
  void fail_response(int s, std::string_view) override { failed = s; }
  bool output_congested() const override { return congested; }
  void on_request_body_writable() override {}
  const ConnectionInfo& connection_info() const override { return info; }

  ConnectionInfo info = harness::test_connection_info();
  bool congest = true;     // every chunk fills the client side
  bool congested = false;
  ResponseHead head;
  bool body_expected = false;
  int heads = 0;
  std::string body;
  int chunks = 0;
  bool ended = false;
  int failed = 0;
};

class FileExchangeTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    char tmpl[] = "/tmp/tlsfront-fx-XXXXXX";
    dir_ = mkdtemp(tmpl);
    content_.resize(5 * files::FileReader::kChunk + 123);
    for (size_t i = 0; i < content_.size(); ++i) content_[i] = static_cast<char>('a' + i % 23);
    std::ofstream(dir_ / "big.bin", std::ios::binary) << content_;
    route_.path = "/";
    route_.files = std::make_shared<config::FileRoute>();
    route_.files->dir = dir_.string();
  }
  void release_objects() override { exchange_.reset(); }
  void TearDown() override {
    LoopTest::TearDown();
    fs::remove_all(dir_);
  }
  void make(const std::string& method, std::vector<Header> headers = {}) {
    record_.head.method = method;
    record_.head.headers = std::move(headers);
    files::Resolution r = files::resolve(route_, "/big.bin", "", "");
    ASSERT_EQ(r.kind, files::Resolution::Kind::File);
    exchange_ = std::make_unique<FileExchange>(&loop_, &sink_, *route_.files, std::move(r), record_, nullptr);
    exchange_->start();
    exchange_->on_request_complete();
  }

  fs::path dir_;
  std::string content_;
  config::Route route_;
  RequestRecord record_;
  CongestingSink sink_;
  std::unique_ptr<FileExchange> exchange_;
};

TEST_F(FileExchangeTest, ReadsOneChunkPerDrainAndNothingWhileCongested) {
  make("GET");
  ASSERT_TRUE(run_until([&] { return sink_.chunks == 1; }));
  EXPECT_EQ(sink_.head.status, 200);
  EXPECT_TRUE(sink_.body_expected);
  EXPECT_EQ(sink_.head.content_length, content_.size());
  settle();
  EXPECT_EQ(sink_.chunks, 1);  // congested: nothing more is read
  EXPECT_EQ(sink_.body.size(), files::FileReader::kChunk);
  for (int expected = 2; !sink_.ended; ++expected) {
    sink_.congested = false;
    exchange_->on_output_drained();
    ASSERT_TRUE(run_until([&] { return sink_.chunks == expected; })) << expected;
    settle(5);
    ASSERT_EQ(sink_.chunks, expected);
    ASSERT_LE(expected, 6);
  }
  EXPECT_EQ(sink_.body, content_);
  EXPECT_EQ(sink_.failed, 0);
}

// Truncated in place while sent: the response is failed after its head
// (the session then cuts the stream or connection), never left hanging.
TEST_F(FileExchangeTest, FileTruncatedMidResponseFailsIt) {
  make("GET");
  ASSERT_TRUE(run_until([&] { return sink_.chunks == 1; }));
  fs::resize_file(dir_ / "big.bin", 10);
  sink_.congested = false;
  exchange_->on_output_drained();
  ASSERT_TRUE(run_until([&] { return sink_.failed != 0; }));
  EXPECT_FALSE(sink_.ended);
  EXPECT_EQ(sink_.chunks, 1);
}

TEST_F(FileExchangeTest, UncongestedSinkGetsTheWholeFile) {
  sink_.congest = false;
  make("GET", {Header{"Range", "bytes=100-199999"}});
  ASSERT_TRUE(run_until([&] { return sink_.ended; }));
  EXPECT_EQ(sink_.head.status, 206);
  EXPECT_EQ(sink_.body, content_.substr(100, 199900));
}

TEST_F(FileExchangeTest, CancelledMakesNoFurtherSinkCall) {
  make("GET");
  ASSERT_TRUE(run_until([&] { return sink_.chunks == 1; }));
  exchange_->cancel();
  sink_.congested = false;
  exchange_->on_output_drained();
  settle();
  EXPECT_EQ(sink_.chunks, 1);
  EXPECT_FALSE(sink_.ended);
}

TEST_F(FileExchangeTest, HeadAndNotModifiedSendNoBody) {
  make("HEAD");
  ASSERT_TRUE(run_until([&] { return sink_.ended; }));
  EXPECT_FALSE(sink_.body_expected);
  EXPECT_EQ(sink_.head.content_length, content_.size());
  EXPECT_EQ(sink_.chunks, 0);
  std::string etag;
  for (const Header& h : sink_.head.headers) {
    if (h.name == "ETag") etag = h.value;
  }
  sink_ = CongestingSink{};
  make("GET", {Header{"If-None-Match", etag}});
  ASSERT_TRUE(run_until([&] { return sink_.ended; }));
  EXPECT_EQ(sink_.head.status, 304);
  EXPECT_EQ(sink_.chunks, 0);
}

}  // namespace
}  // namespace tlsfront::http
