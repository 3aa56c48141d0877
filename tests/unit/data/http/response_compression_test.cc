// Which responses are compressed (RFC 9110 §8.4, §12.5.3, §8.8.3) and the
// head of a compressed one: Vary merged, ETag weakened, Content-Length and
// Accept-Ranges gone.
#include "data/http/response_compression.h"

#include <gtest/gtest.h>

namespace tlsfront::http {
namespace {

config::Compression on() {
  config::Compression c;
  c.encodings = {"br", "gzip"};
  return c;
}

ResponseHead json_head(uint64_t length = 5000) {
  ResponseHead h;
  h.status = 200;
  h.content_length = length;
  h.headers = {{"Content-Type", "application/json; charset=utf-8"}};
  return h;
}

std::string field(const ResponseHead& h, std::string_view name) {
  std::string out;
  for (const auto& f : h.headers) {
    if (iequals(f.name, name)) out += (out.empty() ? "" : "|") + f.value;
  }
  return out;
}

TEST(ResponseCompression, AcceptedCoding) {
  RequestHead req;
  req.headers = {{"Accept-Encoding", "gzip, deflate, br"}};
  EXPECT_EQ(accepted_coding(on(), req), ContentCoding::Brotli);
  config::Compression gzip_only = on();
  gzip_only.encodings = {"gzip"};
  EXPECT_EQ(accepted_coding(gzip_only, req), ContentCoding::Gzip);
  req.headers = {{"accept-encoding", "br;q=0"}};
  EXPECT_FALSE(accepted_coding(on(), req));
  EXPECT_FALSE(accepted_coding(config::Compression{}, req));  // off
}

TEST(ResponseCompression, Verdicts) {
  const config::Compression c = on();
  EXPECT_EQ(judge_response(c, "GET", json_head(), true), CompressionVerdict::Compress);
  EXPECT_EQ(judge_response(c, "GET", json_head(), false), CompressionVerdict::VaryOnly);
  EXPECT_EQ(judge_response(c, "HEAD", json_head(), true), CompressionVerdict::VaryOnly);
  EXPECT_EQ(judge_response(config::Compression{}, "GET", json_head(), true), CompressionVerdict::Untouched);
  EXPECT_EQ(judge_response(c, "GET", json_head(1023), true), CompressionVerdict::Untouched);  // below 1k
  EXPECT_EQ(judge_response(c, "GET", json_head(1024), true), CompressionVerdict::Compress);
  ResponseHead chunked = json_head();
  chunked.content_length.reset();  // unknown length: compressed
  EXPECT_EQ(judge_response(c, "GET", chunked, true), CompressionVerdict::Compress);
  config::Compression zero = c;
  zero.min_bytes = 0;
  EXPECT_EQ(judge_response(zero, "GET", json_head(0), true), CompressionVerdict::Untouched);  // no body to shrink
  for (int status : {201, 202, 203, 207}) {
    ResponseHead h = json_head();
    h.status = status;
    EXPECT_EQ(judge_response(c, "GET", h, true), CompressionVerdict::Compress) << status;
  }
  for (int status : {100, 204, 205, 206, 301, 304, 404, 500}) {
    ResponseHead h = json_head();
    h.status = status;
    EXPECT_EQ(judge_response(c, "GET", h, true), CompressionVerdict::Untouched) << status;
  }
  struct Case {
    Header extra;
    CompressionVerdict verdict;
  };
  for (const Case& k : {Case{{"Content-Encoding", "gzip"}, CompressionVerdict::Untouched},
                        Case{{"content-encoding", "identity"}, CompressionVerdict::Untouched},
                        Case{{"Content-Range", "bytes 0-9/100"}, CompressionVerdict::Untouched},
                        Case{{"Cache-Control", "public, No-Transform"}, CompressionVerdict::Untouched},
                        Case{{"Cache-Control", "no-cache"}, CompressionVerdict::Compress}}) {
    ResponseHead h = json_head();
    h.headers.push_back(k.extra);
    EXPECT_EQ(judge_response(c, "GET", h, true), k.verdict) << k.extra.name << ": " << k.extra.value;
  }
}

TEST(ResponseCompression, MediaTypes) {
  const config::Compression c = on();
  auto verdict = [&c](std::string type) {
    ResponseHead h = json_head();
    h.headers = {{"content-type", type}};
    return judge_response(c, "GET", h, true);
  };
  EXPECT_EQ(verdict("application/json"), CompressionVerdict::Compress);
  EXPECT_EQ(verdict("Application/JSON ;charset=utf-8"), CompressionVerdict::Compress);
  EXPECT_EQ(verdict("text/html"), CompressionVerdict::Compress);
  EXPECT_EQ(verdict("TEXT/plain"), CompressionVerdict::Compress);
  EXPECT_EQ(verdict("image/svg+xml"), CompressionVerdict::Compress);
  EXPECT_EQ(verdict("application/javascript"), CompressionVerdict::Compress);
  EXPECT_EQ(verdict("text/"), CompressionVerdict::Untouched);
  EXPECT_EQ(verdict("textual/x"), CompressionVerdict::Untouched);
  EXPECT_EQ(verdict("image/png"), CompressionVerdict::Untouched);
  EXPECT_EQ(verdict("application/json-seq"), CompressionVerdict::Untouched);
  EXPECT_EQ(verdict(""), CompressionVerdict::Untouched);
  ResponseHead none = json_head();
  none.headers.clear();
  EXPECT_EQ(judge_response(c, "GET", none, true), CompressionVerdict::Untouched);
}

TEST(ResponseCompression, CompressedHead) {
  ResponseHead h = json_head();
  h.headers.push_back({"ETag", "\"abc\""});
  h.headers.push_back({"Accept-Ranges", "bytes"});
  h.headers.push_back({"Vary", "Origin"});
  mark_compressed(h, ContentCoding::Gzip);
  EXPECT_FALSE(h.content_length);
  EXPECT_EQ(field(h, "content-encoding"), "gzip");
  EXPECT_EQ(field(h, "etag"), "W/\"abc\"");
  EXPECT_EQ(field(h, "accept-ranges"), "");
  EXPECT_EQ(field(h, "vary"), "Origin, Accept-Encoding");

  ResponseHead weak = json_head();
  weak.headers.push_back({"etag", "W/\"x\""});
  mark_compressed(weak, ContentCoding::Brotli);
  EXPECT_EQ(field(weak, "etag"), "W/\"x\"");
  EXPECT_EQ(field(weak, "content-encoding"), "br");
  EXPECT_EQ(field(weak, "vary"), "Accept-Encoding");
}

TEST(ResponseCompression, VaryMerge) {
  auto vary = [](std::vector<Header> headers) {
    add_vary_accept_encoding(headers);
    std::string out;
    for (const auto& h : headers) out += h.name + ": " + h.value + "\n";
    return out;
  };
  EXPECT_EQ(vary({}), "Vary: Accept-Encoding\n");
  EXPECT_EQ(vary({{"Vary", "accept-encoding"}}), "Vary: accept-encoding\n");
  EXPECT_EQ(vary({{"Vary", "Origin, Accept-Encoding"}}), "Vary: Origin, Accept-Encoding\n");
  EXPECT_EQ(vary({{"Vary", "*"}}), "Vary: *\n");
  EXPECT_EQ(vary({{"Vary", "Origin"}, {"vary", "Cookie"}}), "Vary: Origin\nvary: Cookie, Accept-Encoding\n");
  EXPECT_EQ(vary({{"Vary", ""}}), "Vary: Accept-Encoding\n");
}

}  // namespace
}  // namespace tlsfront::http
