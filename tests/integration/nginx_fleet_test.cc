// [tls] session_id_context = "nginx" against Debian's nginx sharing one
// ssl_session_ticket_key file: a session made by either resumes on the other,
// TLS 1.2 and TLS 1.3, both directions, also with an ECDSA + RSA pair; with
// tlsfront's own derivation (the default) neither resumes the other's.
#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "harness.h"
#include "nginx_peer.h"

namespace tlsfront::itest {
namespace {

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;

const std::string kTicketKey = pki("ticket-key-80.key");  // nginx's 80-byte format

class NginxFleet : public ProxyTest {
 protected:
  // tlsfront with the shared key file and `extra_tls` lines in [tls].
  bool start_tlsfront(const std::string& extra_tls, const std::string& certificates = "") {
    ProxyOptions o;
    o.tls_extra = extra_tls;
    o.certificates = certificates;
    o.extra = "[tls.ticket_keys]\nsource = \"files\"\nfiles = [\"" + kTicketKey + "\"]\n";
    return start_proxy(o);
  }
  bool start_nginx(const std::string& server_extra = "") {
    return nginx_.start(pki("localhost.chain.pem"), pki("localhost.key"),
                        "    ssl_session_cache shared:SSL:1m;\n    ssl_session_ticket_key " + kTicketKey + ";\n" +
                            server_extra);
  }
  // One GET on a new connection to `port` offering `offer`; whether it
  // resumed, and the session it ends with (read to the close, so a TLS 1.3
  // ticket has arrived).
  SessionPtr get(int port, int version, SSL_SESSION* offer, bool& reused) {
    TlsOptions o;
    o.min_version = o.max_version = version;
    o.session = offer;
    TlsClient c;
    reused = false;
    EXPECT_TRUE(c.connect(port, o)) << c.error();
    if (!c.ssl()) return nullptr;
    reused = c.session_reused();
    EXPECT_TRUE(c.write("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    auto r = c.read_response();
    EXPECT_TRUE(r && r->status == 200);
    c.read_all(milliseconds(5'000));
    return SessionPtr(c.take_session());
  }
  // Whether a session made by `from` resumes on `to`.
  bool resumes(int from, int to, int version) {
    bool reused = false;
    SessionPtr s = get(from, version, nullptr, reused);
    if (!s) return false;
    get(to, version, s.get(), reused);
    return reused;
  }
  Nginx nginx_{dir_};
};

TEST_F(NginxFleet, SessionsResumeAcrossTlsfrontAndNginxBothWays) {
  ASSERT_TRUE(start_nginx());
  ASSERT_TRUE(start_tlsfront("session_id_context = \"nginx\"\n"));
  for (int v : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(v == TLS1_2_VERSION ? "TLS 1.2" : "TLS 1.3");
    EXPECT_TRUE(resumes(nginx_.port(), port(), v)) << "nginx session on tlsfront";
    EXPECT_TRUE(resumes(port(), nginx_.port(), v)) << "tlsfront session on nginx";
  }
}

TEST_F(NginxFleet, EcdsaAndRsaPairInTheSameOrderResumesBothWays) {
  ASSERT_TRUE(start_nginx("    ssl_certificate " + pki("rsa.chain.pem") + ";\n    ssl_certificate_key " +
                          pki("rsa.key") + ";\n"));
  const auto entry = [](const std::string& name) {
    return "[[certificate]]\ncert = \"" + pki(name + ".chain.pem") + "\"\nkey = \"" + pki(name + ".key") + "\"\n";
  };
  ASSERT_TRUE(start_tlsfront("session_id_context = \"nginx\"\n", entry("localhost") + entry("rsa")));
  for (int v : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(v == TLS1_2_VERSION ? "TLS 1.2" : "TLS 1.3");
    EXPECT_TRUE(resumes(nginx_.port(), port(), v));
    EXPECT_TRUE(resumes(port(), nginx_.port(), v));
  }
}

// The default derivation is tlsfront's own: the same key file is not enough.
TEST_F(NginxFleet, TlsfrontsOwnContextDoesNotResumeNginxSessions) {
  ASSERT_TRUE(start_nginx());
  ASSERT_TRUE(start_tlsfront(""));
  for (int v : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    EXPECT_FALSE(resumes(nginx_.port(), port(), v));
    EXPECT_FALSE(resumes(port(), nginx_.port(), v));
    EXPECT_TRUE(resumes(port(), port(), v));  // while tlsfront's own resume
  }
}

}  // namespace
}  // namespace tlsfront::itest
