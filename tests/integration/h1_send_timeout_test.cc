// An HTTP/1.1 client that stops reading its response is cut off after
// timeouts.send, and its request still gets its one access-log line (and is
// counted), like every request that started.
#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

using H1SendTimeout = ProxyTest;

TEST_F(H1SendTimeout, ClientThatStopsReadingIsClosedAndLogged) {
  ProxyOptions o;
  o.extra = "[timeouts]\nsend = \"400ms\"\n";
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /bytes/50000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")) << c.error();
  // Never read: the socket buffers fill, the response stalls, the send
  // timeout closes the connection, and the line is written.
  auto lines = proxy_.wait_log_lines(1, milliseconds(15'000));
  ASSERT_EQ(lines.size(), 1u) << "no access-log line for a request cut off by timeouts.send";
  EXPECT_EQ(json_string(lines[0], "path"), std::string("/bytes/50000000")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("200")) << lines[0];  // what the client was sent
  const std::string sent = json_raw(lines[0], "bytes_sent").value_or("0");
  EXPECT_LT(std::stoull(sent), 50'000'000ull) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "upstream_status"), std::string("200")) << lines[0];
}

}  // namespace
}  // namespace tlsfront::itest
