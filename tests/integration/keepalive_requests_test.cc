// [limits] keepalive_requests (nginx's, client side) with real clients:
// HTTP/1.1 answers the Nth request with Connection: close and closes; HTTP/2
// sends GOAWAY after the Nth stream, and a client that had more requests in
// flight gets them all answered (on a new connection) — as the access log's
// connection ids show.
#include <set>
#include <string>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {
namespace {

class KeepaliveRequests : public ProxyTest {
 protected:
  bool start(int n) {
    ProxyOptions o;
    o.extra = "[limits]\nkeepalive_requests = " + std::to_string(n) + "\n";
    return start_proxy(o);
  }
};

TEST_F(KeepaliveRequests, Http1ClosesAfterTheNthRequest) {
  ASSERT_TRUE(start(2));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /1 HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  auto first = c.read_response();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_FALSE(first->header("Connection").has_value()) << first->head;
  ASSERT_TRUE(c.write("GET /2 HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  auto second = c.read_response();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(second->header("Connection"), "close") << second->head;
  c.read_all(milliseconds(5'000));
  EXPECT_TRUE(c.closed());
}

TEST_F(KeepaliveRequests, Http2SendsGoawayAfterTheNthStreamAndNoRequestIsLost) {
  ASSERT_TRUE(start(2));
  std::vector<HttpRequest> reqs;
  for (int i = 0; i < 5; ++i) {
    HttpRequest r;
    r.http2 = true;
    r.path = "/h2-" + std::to_string(i);
    reqs.push_back(r);
  }
  for (const auto& r : http2_parallel(port(), reqs)) EXPECT_EQ(r.status, 200) << r.error;
  const auto lines = proxy_.wait_log_lines(5);
  ASSERT_EQ(lines.size(), 5u) << [&] { std::string s; for (auto& l : lines) s += l + "\n"; return s; }();
  std::multiset<std::string> per_connection;
  for (const auto& l : lines) {
    per_connection.insert(*json_raw(l, "connection_id"));
    EXPECT_LE(std::stoi(*json_raw(l, "connection_requests")), 2) << l;
  }
  for (const auto& id : per_connection) EXPECT_LE(per_connection.count(id), 2u) << id;
  EXPECT_GE(std::set<std::string>(per_connection.begin(), per_connection.end()).size(), 3u);
}

}  // namespace
}  // namespace tlsfront::itest
