// HTTP/2 abuse protections, each driven by the frame-level client
// (h2_frames.h) against the real proxy: rapid reset, CONTINUATION flood,
// HPACK bomb / header list limit, SETTINGS/PING/empty DATA floods,
// WINDOW_UPDATE overflow, SETTINGS advertised and enforced, idle GOAWAY,
// graceful GOAWAY on shutdown, a slow reader. After each attack a normal
// request on a new connection must still succeed.
#include <curl/curl.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "h2_frames.h"
#include "harness.h"

namespace tlsfront::itest {
namespace {

using H2Abuse = ProxyTest;

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (24 - 8 * i));
  return s;
}

// Resident memory of the proxy grew by less than `limit_kib` since `before_kib`
// (the attacks below send a few hundred kilobytes; unbounded buffering of
// what they ask for would show as tens of megabytes).
void expect_memory_bounded(pid_t pid, long before_kib, long limit_kib = 64 * 1024) {
  const long after = rss_kib(pid);
  ::testing::Test::RecordProperty("rss_growth_kib", std::to_string(after - before_kib));
  EXPECT_LT(after - before_kib, limit_kib) << "RSS grew from " << before_kib << " to " << after << " KiB";
}

// A fresh h2 connection still gets a normal answer.
void expect_still_serving(int port) {
  HttpRequest req;
  req.http2 = true;
  req.path = "/after";
  HttpResponse r = http(port, req);
  EXPECT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0);
}

// The GOAWAY the server sent (after reading everything up to the close).
std::optional<h2::Frame> goaway_then_close(h2::Client& c) {
  auto g = c.wait_for([](const h2::Frame& f) { return f.type == h2::kGoaway; });
  EXPECT_TRUE(c.wait_closed()) << "the connection stayed open after GOAWAY";
  return g;
}

TEST_F(H2Abuse, RapidResetGetsEnhanceYourCalm) {
  ASSERT_TRUE(start_proxy());
  const long rss_before = rss_kib(proxy_.process().pid());
  // A bystander with a request in flight on another connection.
  h2::Client bystander;
  ASSERT_TRUE(bystander.connect(port()));
  ASSERT_TRUE(bystander.send_headers(1, h2::get_request("/slow/300"), true));

  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  std::string burst;
  for (uint32_t i = 0; i < 1000; ++i) {
    const uint32_t id = 1 + 2 * i;
    burst += h2::frame(h2::kHeaders, h2::kEndHeaders | h2::kEndStream, id, h2::hpack(h2::get_request("/slow/1000")));
    burst += h2::frame(h2::kRstStream, 0, id, be32(h2::kCancel));
  }
  c.send(burst);  // may fail part-way: the server closes on us
  auto g = goaway_then_close(c);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->error_code(), h2::kEnhanceYourCalm);

  EXPECT_EQ(bystander.wait_status(1), 200);
  expect_still_serving(port());
  // Streams reset within the read that opened them never reach an upstream;
  // only those split across reads can (a handful).
  EXPECT_LE(backend_.count("req") + backend_.count("partial"), 30u);
  expect_memory_bounded(proxy_.process().pid(), rss_before);
}

TEST_F(H2Abuse, ContinuationFloodClosesConnection) {
  ASSERT_TRUE(start_proxy());
  const long rss_before = rss_kib(proxy_.process().pid());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  std::string flood = h2::frame(h2::kHeaders, 0, 1, h2::hpack(h2::get_request("/cont")));
  for (int i = 0; i < 200; ++i) {
    flood += h2::frame(h2::kContinuation, 0, 1, h2::hpack({{"x-pad" + std::to_string(i), std::string(100, 'p')}}));
  }
  c.send(flood);
  auto g = goaway_then_close(c);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->error_code(), h2::kEnhanceYourCalm);
  EXPECT_EQ(backend_.count("req") + backend_.count("partial"), 0u);
  expect_still_serving(port());
  expect_memory_bounded(proxy_.process().pid(), rss_before);
}

TEST_F(H2Abuse, HpackBombAndOversizedHeaderListGet431) {
  ASSERT_TRUE(start_proxy());
  const long rss_before = rss_kib(proxy_.process().pid());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  // One 4000-byte field added to the dynamic table (RFC 7541 §6.2.1), then
  // referenced 300 times by its 1-byte index 62: 1.2 MB decoded from ~4 KB.
  std::string block = h2::hpack(h2::get_request("/bomb"));
  block += '\x40';
  block += static_cast<char>(6);
  block += "x-bomb";
  block += '\x7f';  // 4000 = 127 + 3873: 7-bit prefix continuation
  block += static_cast<char>(0x80 | (3873 & 0x7f));
  block += static_cast<char>(3873 >> 7);
  block += std::string(4000, 'b');
  for (int i = 0; i < 300; ++i) block += '\xbe';
  ASSERT_TRUE(c.send_frame(h2::kHeaders, h2::kEndHeaders | h2::kEndStream, 1, block));
  EXPECT_EQ(c.wait_status(1), 431);
  // Plain fields over max_header_list_size (16k): 20 × 1000 bytes.
  h2::Fields big = h2::get_request("/big");
  for (int i = 0; i < 20; ++i) big.push_back({"x-big-" + std::to_string(i), std::string(1000, 'x')});
  std::string big_block = h2::hpack(big);
  ASSERT_TRUE(c.send_frame(h2::kHeaders, h2::kEndStream, 3, big_block.substr(0, 12000)));
  ASSERT_TRUE(c.send_frame(h2::kContinuation, h2::kEndHeaders, 3, big_block.substr(12000)));
  EXPECT_EQ(c.wait_status(3), 431);
  // The same connection still serves a normal request; nothing else reached the backend.
  ASSERT_TRUE(c.send_headers(5, h2::get_request("/fine"), true));
  EXPECT_EQ(c.wait_status(5), 200);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].rfind("GET /fine ", 0), 0u) << reqs[0];
  expect_memory_bounded(proxy_.process().pid(), rss_before);
}

TEST_F(H2Abuse, ControlFrameFloodsGetEnhanceYourCalm) {
  ASSERT_TRUE(start_proxy());
  const long rss_before = rss_kib(proxy_.process().pid());
  struct Flood {
    const char* name;
    std::string prelude;
    std::string frame;
    bool prelude_answered = false;  // wait for the prelude request's response first
  };
  h2::Fields post = {{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/echo"}};
  std::vector<Flood> floods = {
      {"PING", "", h2::frame(h2::kPing, 0, 0, std::string(8, 'p'))},
      {"SETTINGS", "", h2::frame(h2::kSettings, 0, 0, "")},
      {"empty DATA", h2::frame(h2::kHeaders, h2::kEndHeaders, 1, h2::hpack(post)), h2::frame(h2::kData, 0, 1, "")},
      {"PRIORITY", "", h2::frame(h2::kPriority, 0, 3, be32(0) + std::string(1, '\x10'))},
      // A WINDOW_UPDATE that opens a window nothing waits on, on the
      // connection and on a stream whose response is long gone.
      {"WINDOW_UPDATE", "", h2::frame(h2::kWindowUpdate, 0, 0, be32(1))},
      {"WINDOW_UPDATE on a closed stream",
       h2::frame(h2::kHeaders, h2::kEndHeaders | h2::kEndStream, 1, h2::hpack(h2::get_request("/fast"))),
       h2::frame(h2::kWindowUpdate, 0, 1, be32(1)), true},
      // RFC 9113 §5.5: a frame of an unknown type is ignored, so free to loop.
      {"unknown type", "", h2::frame(0x20, 0, 0, std::string(8, 'u'))},
  };
  for (const auto& f : floods) {
    SCOPED_TRACE(f.name);
    h2::Client c;
    ASSERT_TRUE(c.connect(port()));
    std::string bytes = f.prelude;
    if (f.prelude_answered) {
      ASSERT_TRUE(c.send(std::exchange(bytes, "")));
      ASSERT_TRUE(c.wait_for([](const h2::Frame& x) { return x.stream == 1 && (x.flags & h2::kEndStream); }));
    }
    for (int i = 0; i < 3000; ++i) bytes += f.frame;
    c.send(bytes);
    auto g = goaway_then_close(c);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->error_code(), h2::kEnhanceYourCalm);
    expect_still_serving(port());
  }
  // Only the /after requests (and the one /fast before its flood).
  EXPECT_EQ(backend_.count("req"), floods.size() + 1);
  expect_memory_bounded(proxy_.process().pid(), rss_before);
  auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(m["tlsfront_client_floods_total{kind=\"h2_control_frames\"}"], floods.size());
  // Each GOAWAY is logged once, with its reason.
  const std::string err = proxy_.process().err();
  size_t goaways = 0;
  for (size_t at = err.find("GOAWAY"); at != std::string::npos; at = err.find("GOAWAY", at + 1)) ++goaways;
  EXPECT_EQ(goaways, floods.size()) << err;
}

// RFC 9113 §6.9: a receiver returns window as its application reads, as
// finely as it likes (a gRPC peer returns each message's octets, so one
// DATA frame of many small messages gets a WINDOW_UPDATE per message).
// WINDOW_UPDATEs that return octets the proxy sent are flow control, not a
// flood, however many: here 2 per 8 octets, 50,000 in all, 25 times the
// control frame budget.
TEST_F(H2Abuse, WindowReturnedInSmallIncrementsIsNotAFlood) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  constexpr size_t kSize = 200'000;
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/bytes/" + std::to_string(kSize)), true));
  size_t received = 0;
  size_t updates = 0;
  bool ended = false;
  while (!ended) {
    auto f = c.next(milliseconds(10'000));
    ASSERT_TRUE(f.has_value()) << "stalled after " << received << " bytes";
    ASSERT_NE(f->type, h2::kGoaway) << "error code " << f->error_code();
    ASSERT_NE(f->type, h2::kRstStream) << "error code " << f->error_code();
    if (f->type != h2::kData || f->stream != 1) continue;
    received += f->payload.size();
    ended = (f->flags & h2::kEndStream) != 0;
    std::string returns;
    for (size_t left = f->payload.size(); left > 0;) {
      const auto inc = static_cast<uint32_t>(std::min<size_t>(left, 8));
      returns += h2::frame(h2::kWindowUpdate, 0, 1, be32(inc)) + h2::frame(h2::kWindowUpdate, 0, 0, be32(inc));
      left -= inc;
      updates += 2;
    }
    if (!returns.empty()) ASSERT_TRUE(c.send(returns));
  }
  EXPECT_EQ(received, kSize);
  EXPECT_GE(updates, kSize / 4);
  // The same connection serves the next request.
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/after"), true));
  EXPECT_EQ(c.wait_status(3), 200);
  auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(m["tlsfront_client_floods_total{kind=\"h2_control_frames\"}"], 0);
}

// A flooder told GOAWAY that keeps sending is not drained for the whole
// lingering close (2 s, at loopback speed gigabytes received and dropped,
// a third of a core): past 4 MiB discarded it gets RST. Bytes, not time:
// without the bound it can send 256 MiB before its connection ends.
TEST_F(H2Abuse, AFlooderThatKeepsSendingIsNotDrained) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  std::string chunk;
  while (chunk.size() < 64 * 1024) chunk += h2::frame(h2::kWindowUpdate, 0, 0, be32(1));
  size_t sent = 0;
  constexpr size_t kCap = 256u << 20;
  while (sent < kCap && c.send(chunk)) sent += chunk.size();
  EXPECT_LT(sent, kCap) << "the proxy read and dropped everything the flooder sent";
  RecordProperty("sent_kib", std::to_string(sent / 1024));
  expect_still_serving(port());
}

TEST_F(H2Abuse, WindowUpdateOverflowIsFlowControlError) {
  ASSERT_TRUE(start_proxy());
  {
    // Stream level: a stream error (RFC 9113 §6.9.1).
    h2::Client c;
    ASSERT_TRUE(c.connect(port()));
    ASSERT_TRUE(c.send_headers(1, h2::get_request("/slow/500"), true));
    ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 1, be32(0x7fffffff)));
    auto r = c.wait_for([](const h2::Frame& f) { return f.type == h2::kRstStream || f.type == h2::kGoaway; });
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->type, h2::kRstStream);
    EXPECT_EQ(r->error_code(), h2::kFlowControlError);
  }
  {
    // Connection level: a connection error.
    h2::Client c;
    ASSERT_TRUE(c.connect(port()));
    ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 0, be32(0x7fffffff)));
    auto g = goaway_then_close(c);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->error_code(), h2::kFlowControlError);
  }
  expect_still_serving(port());
}

// RFC 9113 §6.3: PRIORITY on stream 0 is a connection error; on a stream it
// is accepted (and ignored: SETTINGS_NO_RFC7540_PRIORITIES).
TEST_F(H2Abuse, PriorityOnStreamZeroIsProtocolError) {
  ASSERT_TRUE(start_proxy());
  const std::string priority_payload = be32(0) + std::string(1, '\x10');  // depends on 0, weight 17
  {
    h2::Client c;
    ASSERT_TRUE(c.connect(port()));
    ASSERT_TRUE(c.send_frame(h2::kPriority, 0, 3, priority_payload));
    ASSERT_TRUE(c.send_headers(1, h2::get_request("/after-priority"), true));
    EXPECT_EQ(c.wait_status(1), 200);
  }
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_frame(h2::kPriority, 0, 0, priority_payload));
  auto g = goaway_then_close(c);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->error_code(), h2::kProtocolError);
  expect_still_serving(port());
}

// RFC 9113 §6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE change that takes an open
// stream's window past 2^31-1 is a connection error, not a stream reset.
TEST_F(H2Abuse, InitialWindowSizeOverflowIsFlowControlError) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/slow/2000"), true));
  // The stream's send window: 65535 + (2^31-1 - 65535) = 2^31-1, the maximum.
  ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 1, be32(0x7fffffff - 65535)));
  // One more byte of initial window for every stream: stream 1 overflows.
  const std::string settings = std::string("\x00\x04", 2) + be32(65536);
  ASSERT_TRUE(c.send_frame(h2::kSettings, 0, 0, settings));
  auto r = c.wait_for([](const h2::Frame& f) { return f.type == h2::kRstStream || f.type == h2::kGoaway; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, h2::kGoaway);
  EXPECT_EQ(r->error_code(), h2::kFlowControlError);
  EXPECT_TRUE(c.wait_closed());
  expect_still_serving(port());
}

// A header block that never ends (HEADERS without END_HEADERS, or a
// CONTINUATION without it) is cut off after timeouts.header, as an HTTP/1.1
// head would be: GOAWAY and close, nothing forwarded.
TEST_F(H2Abuse, HeaderBlockThatNeverEndsIsCutOff) {
  ProxyOptions o;
  o.extra = "[timeouts]\nheader = \"1s\"\n";
  ASSERT_TRUE(start_proxy(o));
  for (bool with_continuation : {false, true}) {
    SCOPED_TRACE(with_continuation ? "HEADERS + CONTINUATION" : "HEADERS alone");
    h2::Client c;
    ASSERT_TRUE(c.connect(port()));
    // SETTINGS exchanged first: the client's automatic ACK must not land
    // inside the header block (any frame there is a PROTOCOL_ERROR, §6.10).
    ASSERT_TRUE(c.wait_for([](const h2::Frame& f) { return f.type == h2::kSettings && (f.flags & h2::kAck); }));
    ASSERT_TRUE(c.send_frame(h2::kHeaders, 0, 1, h2::hpack(h2::get_request("/never"))));
    if (with_continuation) ASSERT_TRUE(c.send_frame(h2::kContinuation, 0, 1, h2::hpack({{"x-more", "1"}})));
    auto g = goaway_then_close(c);
    ASSERT_TRUE(g.has_value()) << "no GOAWAY for an unfinished header block";
    EXPECT_EQ(g->error_code(), h2::kProtocolError);
  }
  EXPECT_EQ(backend_.count("req") + backend_.count("partial"), 0u);
  // A header block that does end in time is served.
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_frame(h2::kHeaders, h2::kEndStream, 1, h2::hpack(h2::get_request("/split"))));
  ASSERT_TRUE(c.send_frame(h2::kContinuation, h2::kEndHeaders, 1, h2::hpack({{"x-more", "1"}})));
  EXPECT_EQ(c.wait_status(1), 200);
}

TEST_F(H2Abuse, SettingsAdvertisedAndConcurrencyEnforced) {
  ProxyOptions o;
  o.extra = "[http2]\nmax_concurrent_streams = 3\ninitial_window_size = 1000\nmax_frame_size = \"20k\"\n"
            "max_header_list_size = \"8k\"\n";
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  // Five slow requests before our SETTINGS ACK: the two over the limit are
  // refused (RFC 9113 §5.1.2), three answered.
  for (uint32_t id = 1; id <= 9; id += 2) ASSERT_TRUE(c.send_headers(id, h2::get_request("/slow/300"), true));
  std::optional<h2::Frame> s;
  int ok = 0, refused = 0;
  while (ok + refused < 5) {
    auto f = c.next();
    ASSERT_TRUE(f.has_value());
    ASSERT_NE(f->type, h2::kGoaway);
    if (f->type == h2::kSettings && !(f->flags & h2::kAck)) s = f;
    if (f->type == h2::kRstStream && f->error_code() == h2::kRefusedStream) ++refused;
    if (f->type == h2::kHeaders) ++ok;
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(refused, 2);
  ASSERT_TRUE(s.has_value());
  std::map<int, uint32_t> values;
  for (size_t i = 0; i + 6 <= s->payload.size(); i += 6) {
    int id = static_cast<unsigned char>(s->payload[i]) << 8 | static_cast<unsigned char>(s->payload[i + 1]);
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = v << 8 | static_cast<unsigned char>(s->payload[i + 2 + k]);
    values[id] = v;
  }
  EXPECT_EQ(values[3], 3u);        // MAX_CONCURRENT_STREAMS
  EXPECT_EQ(values[4], 1000u);     // INITIAL_WINDOW_SIZE
  EXPECT_EQ(values[5], 20480u);    // MAX_FRAME_SIZE
  EXPECT_EQ(values[6], 8192u);     // MAX_HEADER_LIST_SIZE

  // After the ACK, going over the limit is a connection error (nghttp2's choice
  // of the two RFC 9113 §5.1.2 allows).
  for (uint32_t id = 11; id <= 19; id += 2) c.send_headers(id, h2::get_request("/slow/300"), true);
  auto g = goaway_then_close(c);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->error_code(), h2::kProtocolError);

  // A client honouring the limit (libcurl) gets all of its ten requests answered.
  std::vector<HttpRequest> ten(10);
  for (auto& r : ten) {
    r.http2 = true;
    r.path = "/slow/50";
  }
  for (const auto& r : http2_parallel(port(), ten)) {
    EXPECT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.status, 200);
  }

  // A 5000-byte POST body against a 1000-byte stream window still arrives whole.
  HttpRequest req;
  req.http2 = true;
  req.method = "POST";
  req.path = "/echo";
  req.body = std::string(5000, 'w');
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.body, *req.body);
}

TEST_F(H2Abuse, ClientSettingsAreHonoured) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  // INITIAL_WINDOW_SIZE 1000, MAX_FRAME_SIZE stays 16384.
  ASSERT_TRUE(c.connect(port(), {{4, 1000}}));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/bytes/50000"), true));
  EXPECT_EQ(c.wait_status(1), 200);
  size_t received = 0;
  while (auto f = c.next(milliseconds(1'000))) {
    if (f->type == h2::kData && f->stream == 1) received += f->payload.size();
  }
  EXPECT_EQ(received, 1000u);  // exactly the window the client granted
  std::string inc = {0, 0, static_cast<char>(0x10), 0};  // 4096 more on the stream
  ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 1, inc));
  while (auto f = c.next(milliseconds(1'000))) {
    if (f->type == h2::kData && f->stream == 1) received += f->payload.size();
  }
  EXPECT_EQ(received, 1000u + 4096u);
}

TEST_F(H2Abuse, IdleConnectionGetsGoaway) {
  ProxyOptions o;
  o.extra = "[timeouts]\nkeepalive = \"300ms\"\n";
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/x"), true));
  EXPECT_EQ(c.wait_status(1), 200);
  auto g = goaway_then_close(c);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->error_code(), h2::kNoError);
  EXPECT_EQ(g->last_stream_id(), 1u);
}

TEST_F(H2Abuse, PingsDoNotKeepAnIdleConnectionOpen) {
  ProxyOptions o;
  o.extra = "[timeouts]\nkeepalive = \"500ms\"\n";
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  // A PING whenever the previous one is answered, until the GOAWAY comes.
  std::optional<h2::Frame> g;
  // (Paced by a 50 ms wait for a frame, so the PINGs stay under the flood limit.)
  for (int i = 0; i < 400 && !g; ++i) {
    if (!c.send_frame(h2::kPing, 0, 0, std::string(8, 'i'))) break;
    auto f = c.wait_for([](const h2::Frame& x) { return x.type == h2::kPing || x.type == h2::kGoaway; });
    if (!f) break;
    if (f->type == h2::kGoaway) g = f;
    if (!g && (g = c.wait_for([](const h2::Frame& x) { return x.type == h2::kGoaway; }, milliseconds(50)))) break;
  }
  ASSERT_TRUE(g.has_value()) << "no GOAWAY while pinging";
  EXPECT_EQ(g->error_code(), h2::kNoError);
}

TEST_F(H2Abuse, GracefulGoawayOnShutdownLetsStreamsFinish) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/slow/800"), true));
  ASSERT_EQ(backend_.wait_requests(1).size(), 1u);  // in flight at the backend
  proxy_.process().signal(SIGTERM);
  auto g = c.wait_for([](const h2::Frame& f) { return f.type == h2::kGoaway; });
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->error_code(), h2::kNoError);
  EXPECT_EQ(g->last_stream_id(), 1u);
  // A stream opened after the GOAWAY is not processed.
  c.send_headers(3, h2::get_request("/late"), true);
  EXPECT_EQ(c.wait_status(1), 200);
  auto end = c.wait_for([](const h2::Frame& f) { return f.stream == 1 && (f.flags & h2::kEndStream); });
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(c.wait_closed());
  auto exit = proxy_.process().wait_exit(milliseconds(10'000));
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited && exit->code == 0);
  EXPECT_EQ(backend_.count("req"), 1u);
}

TEST_F(H2Abuse, SlowReaderDoesNotMakeTheProxyBufferTheResponse) {
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start_proxy(o));
  const long before = rss_kib(proxy_.process().pid());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  // 300 MB asked for; the client never sends WINDOW_UPDATE, so only the
  // initial 64 KiB window may go out.
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/bytes/300000000"), true));
  EXPECT_EQ(c.wait_status(1), 200);
  size_t received = 0;
  while (auto f = c.next(milliseconds(1'500))) {
    if (f->type == h2::kData) received += f->payload.size();
  }
  EXPECT_LE(received, 65535u);
  const long after = rss_kib(proxy_.process().pid());
  RecordProperty("rss_growth_kib", std::to_string(after - before));
  EXPECT_LT(after - before, 32 * 1024) << "RSS grew from " << before << " to " << after << " KiB";
  expect_still_serving(port());
}

TEST_F(H2Abuse, StreamWithoutWindowIsResetAfterSendTimeout) {
  ProxyOptions o;
  o.extra = "[timeouts]\nsend = \"400ms\"\n";
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/bytes/10000000"), true));
  // Never a WINDOW_UPDATE: the response stalls after 64 KiB and the stream
  // is reset instead of holding its upstream connection for ever.
  auto r = c.wait_for([](const h2::Frame& f) { return f.type == h2::kRstStream || f.type == h2::kGoaway; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, h2::kRstStream);
  EXPECT_EQ(r->stream, 1u);
  EXPECT_EQ(r->error_code(), h2::kCancel);
  // The connection itself stays usable.
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/small"), true));
  EXPECT_EQ(c.wait_status(3), 200);
}

}  // namespace
}  // namespace tlsfront::itest
