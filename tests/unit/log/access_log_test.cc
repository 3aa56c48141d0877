// Tests for the JSON access-log line encoder (append_json_line) and the
// per-worker AccessLog batch (the string encoder: access_log_json_string_test.cc).
#include "log/access_log.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "json_reference.h"
#include "log/log_writer.h"
#include "shared/temp_dir.h"

namespace tlsfront::log {
namespace {

using namespace std::chrono;

using testing::JsonChecker;

const std::vector<std::string> kKeyOrder = {"time",
                                            "remote_addr",
                                            "remote_port",
                                            "sni",
                                            "alpn",
                                            "scheme",
                                            "protocol",
                                            "method",
                                            "path",
                                            "status",
                                            "response_complete",
                                            "bytes_sent",
                                            "bytes_received",
                                            "request_time_ms",
                                            "ssl_protocol",
                                            "ssl_cipher",
                                            "ssl_session_reused",
                                            "ssl_early_data",
                                            "ssl_resumption",
                                            "tls_handshake_ms",
                                            "rtt_ms",
                                            "migrated",
                                            "connection_id",
                                            "connection_requests",
                                            "stream_id",
                                            "route",
                                            "upstream_addr",
                                            "upstream_error",
                                            "upstream_status",
                                            "upstream_connect_ms",
                                            "upstream_response_ms",
                                            "upstream_connection_reused",
                                            "upstream_protocol",
                                            "grpc_status",
                                            "user_agent",
                                            "request_id",
                                            "content_encoding",
                                            "tunnel"};

std::string json_line(const AccessLogEntry& e) {
  std::string out;
  append_json_line(out, e);
  return out;
}

system_clock::time_point example_time() {
  return sys_days{year{2026} / 11 / 30} + hours{0} + minutes{38} + seconds{31} + milliseconds{123};
}

AccessLogEntry full_entry() {
  AccessLogEntry e;
  e.time = example_time();
  e.remote_addr = "192.0.2.10";
  e.remote_port = 54321;
  e.sni = "api.example.com";
  e.alpn = "h2";
  e.protocol = "HTTP/2.0";
  e.method = "GET";
  e.path = "/v1/items?id=7";
  e.status = 200;
  e.response_complete = true;
  e.bytes_sent = 1234;
  e.bytes_received = 321;
  e.request_time_ms = 12.3456;
  e.ssl_protocol = "TLSv1.3";
  e.ssl_cipher = "TLS_AES_128_GCM_SHA256";
  e.ssl_session_reused = true;
  e.ssl_resumption = "ticket";
  e.tls_handshake_ms = 3.5;
  e.rtt_ms = 48.25;
  e.migrated = true;
  e.connection_id = 42;
  e.connection_requests = 1;
  e.stream_id = 3;
  e.route = "api";
  e.upstream_addr = "10.0.0.5:8080, 10.0.0.6:8080";
  e.upstream_error = "refused";
  e.upstream_status = 502;
  e.upstream_connect_ms = 0.25;
  e.upstream_response_ms = 11.0;
  e.upstream_connection_reused = false;
  e.upstream_protocol = "h2c";
  e.grpc_status = 14;
  e.user_agent = "curl/8.0";
  e.request_id = "0123456789abcdef0123456789abcdef";
  e.content_encoding = "gzip";
  e.tunnel = true;
  return e;
}

void expect_valid_json_line(const std::string& line) {
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "raw newline inside the line";
  JsonChecker checker(std::string_view(line).substr(0, line.size() - 1));
  ASSERT_TRUE(checker.check()) << line;
  // peer_addr, when present, right after remote_port.
  std::vector<std::string> order = kKeyOrder;
  if (line.find("\"peer_addr\":") != std::string::npos) order.insert(order.begin() + 3, "peer_addr");
  EXPECT_EQ(checker.top_level_keys(), order);
}

// ---------------------------------------------------------------------------
// append_json_line

TEST(AccessLogJsonLine, AllFieldsSet) {
  EXPECT_EQ(
      json_line(full_entry()),
      R"({"time":"2026-11-30T00:38:31.123Z","remote_addr":"192.0.2.10","remote_port":54321,)"
      R"("sni":"api.example.com","alpn":"h2","scheme":"https","protocol":"HTTP/2.0","method":"GET",)"
      R"("path":"/v1/items?id=7","status":200,"response_complete":true,"bytes_sent":1234,"bytes_received":321,)"
      R"("request_time_ms":12.346,"ssl_protocol":"TLSv1.3","ssl_cipher":"TLS_AES_128_GCM_SHA256",)"
      R"("ssl_session_reused":true,"ssl_early_data":false,"ssl_resumption":"ticket","tls_handshake_ms":3.500,"rtt_ms":48.250,)"
      R"("migrated":true,"connection_id":42,)"
      R"("connection_requests":1,"stream_id":3,"route":"api","upstream_addr":"10.0.0.5:8080, 10.0.0.6:8080",)"
      R"("upstream_error":"refused","upstream_status":502,)"
      R"("upstream_connect_ms":0.250,"upstream_response_ms":11.000,)"
      R"("upstream_connection_reused":false,"upstream_protocol":"h2c","grpc_status":14,"user_agent":"curl/8.0",)"
      R"("request_id":"0123456789abcdef0123456789abcdef","content_encoding":"gzip","tunnel":true})"
      "\n");
  expect_valid_json_line(json_line(full_entry()));
}

TEST(AccessLogJsonLine, DefaultsGiveNulls) {
  AccessLogEntry e;  // time = epoch, every optional/empty field unset
  EXPECT_EQ(
      json_line(e),
      R"({"time":"1970-01-01T00:00:00.000Z","remote_addr":"","remote_port":0,)"
      R"("sni":null,"alpn":null,"scheme":"https","protocol":"","method":"","path":"","status":0,)"
      R"("response_complete":false,"bytes_sent":0,"bytes_received":0,"request_time_ms":0.000,"ssl_protocol":null,)"
      R"("ssl_cipher":null,"ssl_session_reused":false,"ssl_early_data":false,"ssl_resumption":"none","tls_handshake_ms":null,)"
      R"("rtt_ms":null,"migrated":false,"connection_id":0,"connection_requests":0,"stream_id":null,"route":null,"upstream_addr":null,"upstream_error":null,)"
      R"("upstream_status":null,"upstream_connect_ms":null,"upstream_response_ms":null,)"
      R"("upstream_connection_reused":null,"upstream_protocol":null,"grpc_status":null,"user_agent":null,"request_id":null,"content_encoding":null,"tunnel":false})"
      "\n");
  expect_valid_json_line(json_line(e));
}

TEST(AccessLogJsonLine, AppendsWithoutTouchingExistingContent) {
  std::string out = "previous line\n";
  append_json_line(out, full_entry());
  append_json_line(out, AccessLogEntry{});
  EXPECT_EQ(out, "previous line\n" + json_line(full_entry()) + json_line(AccessLogEntry{}));
}

TEST(AccessLogJsonLine, UpstreamReusedTrueAndLargeCounters) {
  AccessLogEntry e = full_entry();
  e.upstream_connection_reused = true;
  e.bytes_sent = std::numeric_limits<uint64_t>::max();
  e.connection_id = std::numeric_limits<uint64_t>::max();
  e.remote_port = 65535;
  const std::string line = json_line(e);
  EXPECT_NE(line.find(R"("upstream_connection_reused":true,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("bytes_sent":18446744073709551615,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("connection_id":18446744073709551615,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("remote_port":65535,)"), std::string::npos) << line;
  expect_valid_json_line(line);
}

TEST(AccessLogJsonLine, DurationsHaveThreeDecimals) {
  const auto field = [](double ms) {
    AccessLogEntry e;
    e.request_time_ms = ms;
    const std::string line = json_line(e);
    const auto start = line.find("\"request_time_ms\":") + 18;
    return line.substr(start, line.find(',', start) - start);
  };
  EXPECT_EQ(field(0), "0.000");
  EXPECT_EQ(field(1), "1.000");
  EXPECT_EQ(field(0.0004), "0.000");
  EXPECT_EQ(field(0.0006), "0.001");
  EXPECT_EQ(field(1.23456), "1.235");
  EXPECT_EQ(field(123456789.125), "123456789.125");
  // NaN and infinity are not JSON: written as null.
  EXPECT_EQ(field(std::nan("")), "null");
  EXPECT_EQ(field(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(field(-std::numeric_limits<double>::infinity()), "null");

  AccessLogEntry e;
  e.tls_handshake_ms = 0.0;
  e.upstream_connect_ms = 7.0019;
  e.upstream_response_ms = std::nan("");
  const std::string line = json_line(e);
  EXPECT_NE(line.find(R"("tls_handshake_ms":0.000,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("upstream_connect_ms":7.002,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("upstream_response_ms":null,)"), std::string::npos) << line;
  expect_valid_json_line(line);
}

// peer_addr (the TCP peer, when a PROXY protocol header or a trusted proxy's
// header named another client) follows remote_port, and only when set.
TEST(AccessLogJsonLine, PeerAddrOnlyWhenSet) {
  AccessLogEntry e;
  e.time = example_time();
  e.remote_addr = "203.0.113.7";
  e.remote_port = 40001;
  std::string line = json_line(e);
  EXPECT_EQ(line.find("peer_addr"), std::string::npos) << line;
  e.peer_addr = "10.0.0.5";
  line = json_line(e);
  EXPECT_NE(line.find(R"("remote_addr":"203.0.113.7","remote_port":40001,"peer_addr":"10.0.0.5","sni":)"),
            std::string::npos)
      << line;
}

// The encoder writes into room sized once by json_line_room(): the longest
// line any entry can make must fit, and the room must not be a gross overshoot.
TEST(AccessLogJsonLine, WorstCaseLineFitsItsRoom) {
  const std::string escapes(300, '\x01');  // each byte becomes \u0001
  const std::string invalid(300, '\xff');  // each byte becomes \ufffd
  AccessLogEntry e;
  e.time = example_time();
  e.remote_addr = e.peer_addr = e.sni = e.alpn = e.scheme = e.protocol = e.method = escapes;
  e.path = e.ssl_protocol = e.ssl_cipher = e.ssl_resumption = e.route = e.upstream_addr = invalid;
  e.upstream_error = e.upstream_protocol = e.user_agent = e.request_id = e.content_encoding = escapes;
  e.remote_port = 65535;
  e.status = std::numeric_limits<int>::min();
  e.bytes_sent = e.bytes_received = e.connection_id = e.connection_requests = std::numeric_limits<uint64_t>::max();
  e.stream_id = std::numeric_limits<uint32_t>::max();
  e.upstream_status = std::numeric_limits<int>::min();
  e.grpc_status = std::numeric_limits<int>::min();
  e.request_time_ms = -std::numeric_limits<double>::max();
  e.tls_handshake_ms = std::numeric_limits<double>::max();
  e.upstream_connect_ms = -999999999999.999;
  e.upstream_response_ms = 1e300;
  e.upstream_connection_reused = false;
  e.response_complete = e.ssl_session_reused = e.ssl_early_data = e.tunnel = false;
  const std::string line = json_line(e);
  EXPECT_LE(line.size(), json_line_room(e));
  expect_valid_json_line(line);
  EXPECT_NE(line.find("\"request_time_ms\":-1797693134862315"), std::string::npos);
  EXPECT_NE(line.find("\"upstream_connect_ms\":-999999999999.999,"), std::string::npos) << line;

  AccessLogEntry empty;  // every string empty but scheme ("https") and ssl_resumption ("none")
  EXPECT_LE(json_line(empty).size(), json_line_room(empty));
  EXPECT_EQ(json_line_room(empty), 1024u + 6 * (5 + 4));
}

TEST(AccessLogJsonLine, TimestampsWithinOneSecondAndBackwards) {
  const auto time_field = [](system_clock::time_point t) {
    AccessLogEntry e;
    e.time = t;
    return json_line(e).substr(9, 24);
  };
  const auto t = example_time();  // .123
  EXPECT_EQ(time_field(t), "2026-11-30T00:38:31.123Z");
  EXPECT_EQ(time_field(t + milliseconds{876}), "2026-11-30T00:38:31.999Z");
  EXPECT_EQ(time_field(t + milliseconds{877}), "2026-11-30T00:38:32.000Z");
  EXPECT_EQ(time_field(t - milliseconds{124}), "2026-11-30T00:38:30.999Z");
  EXPECT_EQ(time_field(t - hours{24 * 365}), "2025-11-30T00:38:31.123Z");
  EXPECT_EQ(time_field(t), "2026-11-30T00:38:31.123Z");
}

TEST(AccessLogJsonLine, TimeIsUtcWithTruncatedMilliseconds) {
  const auto time_field = [](system_clock::time_point t) {
    AccessLogEntry e;
    e.time = t;
    return json_line(e).substr(9, 24);
  };
  EXPECT_EQ(time_field(example_time()), "2026-11-30T00:38:31.123Z");
  EXPECT_EQ(time_field(sys_days{year{2024} / 2 / 29} + hours{23} + minutes{59} + seconds{59} +
                       microseconds{999'999}),
            "2024-02-29T23:59:59.999Z");
  EXPECT_EQ(time_field(sys_days{year{2000} / 1 / 1} + microseconds{1500}), "2000-01-01T00:00:00.001Z");
}

TEST(AccessLogJsonLine, HostileFieldsStayValidJson) {
  AccessLogEntry e = full_entry();
  e.method = "G\"ET";
  e.path = "/a\"b\\c\n\r\t\x01\x1f\x7f\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\x80\xff";
  e.sni = "\xc0\xaf.example";
  e.alpn = std::string_view("h2\0x", 4);
  e.user_agent = "Mozilla\"}\n{\"injected\":1";
  e.upstream_addr = "\xed\xa0\x80";
  const std::string line = json_line(e);
  expect_valid_json_line(line);
  EXPECT_NE(line.find(R"("method":"G\"ET",)"), std::string::npos) << line;
  EXPECT_NE(line.find("\"path\":\"/a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\xe2\x82\xac"
                      "\xf0\x9d\x84\x9e\\ufffd\\ufffd\","),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"("sni":"\ufffd\ufffd.example",)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("alpn":"h2\u0000x",)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("user_agent":"Mozilla\"}\n{\"injected\":1",)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("upstream_addr":"\ufffd\ufffd\ufffd",)"), std::string::npos) << line;
}

// ---------------------------------------------------------------------------
// append_json_string

// Cross-check with a real JSON parser (Python's json module) when available.
TEST(AccessLogJsonLine, PythonJsonParsesLines) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not found";
  const TempDir dir("tlsfront_access_log_test");
  const std::string data_path = dir.file("lines.jsonl");
  const std::string script_path = dir.file("check.py");

  std::string lines;
  append_json_line(lines, full_entry());
  append_json_line(lines, AccessLogEntry{});
  AccessLogEntry hostile = full_entry();
  hostile.path = "/a\"b\\c\n\x01\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\x80\xed\xa0\x80";
  hostile.user_agent = std::string_view("\0\x1f\x7f\xc0\xaf", 5);
  append_json_line(lines, hostile);
  std::ofstream(data_path, std::ios::binary) << lines;

  std::ostringstream keys;
  for (const auto& k : kKeyOrder) keys << "'" << k << "',";
  std::ofstream(script_path)
      << "import json, sys\n"
         "keys = ["
      << keys.str()
      << "]\n"
         "raw = open(sys.argv[1], 'rb').read()\n"
         "lines = raw.decode('utf-8').split('\\n')\n"  // strict UTF-8
         "assert lines[-1] == '' and len(lines) == 4, lines\n"
         "objs = [json.loads(l) for l in lines[:-1]]\n"
         "for o in objs: assert list(o.keys()) == keys, list(o.keys())\n"
         "a, d, h = objs\n"
         "assert a['time'] == '2026-11-30T00:38:31.123Z' and a['remote_port'] == 54321\n"
         "assert a['request_time_ms'] == 12.346 and a['tls_handshake_ms'] == 3.5\n"
         "assert a['ssl_session_reused'] is True and a['upstream_connection_reused'] is False\n"
         "assert a['response_complete'] is True and d['response_complete'] is False\n"
         "assert all(d[k] is None for k in ['sni','alpn','tls_handshake_ms','route','upstream_addr','upstream_error',"
         "'upstream_status','upstream_connect_ms','upstream_response_ms',"
         "'upstream_connection_reused','user_agent','request_id','content_encoding'])\n"
         "assert h['path'] == '/a\"b\\\\c\\n\\x01\\u00e9\\u20ac\\U0001d11e\\ufffd\\ufffd\\ufffd\\ufffd', "
         "repr(h['path'])\n"
         "assert h['user_agent'] == '\\x00\\x1f\\x7f\\ufffd\\ufffd', repr(h['user_agent'])\n";

  const std::string cmd = "python3 " + script_path + " " + data_path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << lines;
}

// ---------------------------------------------------------------------------
// AccessLog (the per-worker batch)

class AccessLogBatchTest : public ::testing::Test {
 protected:
  TempDir tmp_{"tlsfront_access_log_batch"};
  const std::string path_ = tmp_.file("access.log");
};

TEST_F(AccessLogBatchTest, NullWriterDisables) {
  AccessLog log(nullptr);
  EXPECT_FALSE(log.enabled());
  log.log(full_entry());
  EXPECT_EQ(log.buffered_bytes_for_test(), 0u);
  log.flush();  // no-op, no crash
}

TEST_F(AccessLogBatchTest, BuffersUntilFlush) {
  auto writer = LogWriter::open(path_);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  {
    AccessLog log(writer->get());
    EXPECT_TRUE(log.enabled());
    log.log(full_entry());
    log.log(AccessLogEntry{});
    EXPECT_EQ(log.buffered_bytes_for_test(), json_line(full_entry()).size() + json_line(AccessLogEntry{}).size());
    log.flush();
    EXPECT_EQ(log.buffered_bytes_for_test(), 0u);
    log.flush();  // empty: nothing handed over
    log.log(full_entry());
    // The destructor flushes the third line.
  }
  (*writer)->flush_and_stop();
  EXPECT_EQ(read_file(path_), json_line(full_entry()) + json_line(AccessLogEntry{}) + json_line(full_entry()));
  EXPECT_EQ((*writer)->dropped_batches(), 0u);
}

TEST_F(AccessLogBatchTest, AutoFlushesPast64KiB) {
  auto writer = LogWriter::open(path_);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  const size_t line_size = json_line(full_entry()).size();
  const size_t lines_to_threshold = (AccessLog::kFlushBytes + line_size - 1) / line_size;
  {
    AccessLog log(writer->get());
    for (size_t i = 1; i < lines_to_threshold; ++i) {
      log.log(full_entry());
      ASSERT_EQ(log.buffered_bytes_for_test(), i * line_size);
    }
    log.log(full_entry());  // crosses kFlushBytes
    EXPECT_EQ(log.buffered_bytes_for_test(), 0u);
    log.log(full_entry());
    EXPECT_EQ(log.buffered_bytes_for_test(), line_size);
  }
  (*writer)->flush_and_stop();
  const std::string content = read_file(path_);
  EXPECT_EQ(content.size(), (lines_to_threshold + 1) * line_size);
}

// A line logged when nothing else happens on the loop (here: from outside any
// callback; in a worker: from the check phase, after the last I/O of a
// cancelled stream) reaches the writer by the batch's own timer: one
// blocking loop iteration wakes for it.
TEST_F(AccessLogBatchTest, IdleLoopHandsLineOverByTimer) {
  auto writer = LogWriter::open(path_);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    AccessLog log(writer->get(), &loop);
    log.log(full_entry());
    EXPECT_EQ(log.buffered_bytes_for_test(), json_line(full_entry()).size());
    // The batch timer is unreferenced (it never keeps a worker's loop
    // alive); a later referenced timer plays the worker's listeners, so
    // UV_RUN_ONCE polls until the nearest timer is due and runs it.
    uv_timer_t alive;
    uv_timer_init(&loop, &alive);
    uv_timer_start(&alive, [](uv_timer_t*) {}, 1000, 0);  // later than kFlushDelayMs
    uv_run(&loop, UV_RUN_ONCE);
    EXPECT_EQ(log.buffered_bytes_for_test(), 0u);
    uv_close(reinterpret_cast<uv_handle_t*>(&alive), nullptr);
    log.close();
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the timer's close callback
  EXPECT_EQ(uv_loop_close(&loop), 0);
  (*writer)->flush_and_stop();
  EXPECT_EQ(read_file(path_), json_line(full_entry()));
}

}  // namespace
}  // namespace tlsfront::log
