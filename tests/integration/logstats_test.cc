// `tlsfront logstats` on the access log of a real tlsfront: a full TLS 1.3
// handshake with two requests, a ticket resumption, a TLS 1.2 connection,
// and a 502 from a down upstream route; the numbers must be those.
#include <openssl/ssl.h>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};

class Logstats : public ProxyTest {};

TEST_F(Logstats, CountsTheHandshakesAndRequestsOfARealLog) {
  ASSERT_TRUE(start_proxy());
  std::unique_ptr<SSL_SESSION, SessionFree> ticket;
  {
    TlsClient c;  // full handshake, two requests on it
    ASSERT_TRUE(c.connect(port())) << c.error();
    ASSERT_TRUE(c.write("GET /one HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    ASSERT_TRUE(c.read_response().has_value());
    ASSERT_TRUE(c.write("GET /two HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    ASSERT_TRUE(c.read_response().has_value());
    c.read_all(milliseconds(2'000));
    ticket.reset(c.take_session());
  }
  {
    TlsClient c;  // resumed with the ticket
    TlsOptions o;
    o.session = ticket.get();
    ASSERT_TRUE(c.connect(port(), o)) << c.error();
    ASSERT_TRUE(c.session_reused());
    ASSERT_TRUE(c.write("GET /three HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    ASSERT_TRUE(c.read_response().has_value());
  }
  {
    TlsClient c;  // TLS 1.2, full
    TlsOptions o;
    o.max_version = TLS1_2_VERSION;
    ASSERT_TRUE(c.connect(port(), o)) << c.error();
    ASSERT_TRUE(c.write("GET /four HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    ASSERT_TRUE(c.read_response().has_value());
  }
  ASSERT_EQ(proxy_.wait_log_lines(4).size(), 4u);
  std::string log = read_file(proxy_.access_log());
  log += "not a log line\n";
  write_file(dir_.file("with-garbage.log"), log);

  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "logstats", "--json", "--by", "sni", dir_.file("with-garbage.log")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  const std::string& j = r.out;
  EXPECT_NE(j.find(R"({"files":1,"lines":5,"malformed":1,"by":"sni","overall":{"requests":4,"handshakes":3,)"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("resumption":{"none":2,"ticket":1},"versions":{"TLSv1.2":1,"TLSv1.3":2})"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("tls_handshake_ms":{"full":{"count":2,)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("resumed":{"count":1,)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("upstream_requests":4,"upstream_reused":)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("groups":[{"key":"localhost","stats":{"requests":4,)"), std::string::npos) << j;

  // The table, from standard input; a missing file is reported, the rest still counted.
  r = run_command(dir_, {"/bin/sh", "-c",
                         std::string(TLSFRONT_BINARY) + " logstats - " + dir_.file("missing.log") + " < " +
                             proxy_.access_log()});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("missing.log\": No such file or directory"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("2 files, 4 lines (0 malformed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resumed               33.3%  (none 66.7%, ticket 33.3%)"), std::string::npos) << r.out;

  r = run_command(dir_, {TLSFRONT_BINARY, "logstats", "--by", "host"});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.err.find("expected sni, alpn, upstream or hour"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
