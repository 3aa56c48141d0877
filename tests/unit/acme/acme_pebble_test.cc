// The ACME client (control/acme) against a real CA: Debian's pebble, which
// validates each challenge for real — HTTP-01 by fetching
// /.well-known/acme-challenge/<token> and TLS-ALPN-01 by a handshake with
// ALPN acme-tls/1 — from this test's own responders on the ports pebble is
// told to use, names resolved to 127.0.0.1 by pebble-challtestsrv's DNS.
// Issued chains are checked with OpenSSL: the names, the key, the issuer.
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "control/acme/acme_client.h"
#include "shared/pebble.h"
#include "shared/temp_dir.h"

namespace tlsfront::itest {
namespace {

using acme::ChallengeType;

std::string pki(const std::string& file) { return std::string(TLSFRONT_TEST_PKI_DIR) + "/" + file; }

int listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The challenge answers pebble fetches: HTTP-01 on one port, TLS-ALPN-01 on
// another, each served by a thread until the object goes.
class Responders : public acme::ChallengeResponder {
 public:
  Responders(int http_port, int tls_port) {
    ::signal(SIGPIPE, SIG_IGN);  // OpenSSL's socket BIO writes without MSG_NOSIGNAL; pebble may close first
    http_fd_ = listen_on(http_port);
    tls_fd_ = listen_on(tls_port);
    threads_.emplace_back([this] { serve(http_fd_, [this](int c) { answer_http(c); }); });
    threads_.emplace_back([this] { serve(tls_fd_, [this](int c) { answer_tls(c); }); });
  }
  ~Responders() override {
    stop_ = true;
    for (auto& t : threads_) t.join();
    ::close(http_fd_);
    ::close(tls_fd_);
  }
  bool listening() const { return http_fd_ >= 0 && tls_fd_ >= 0; }

  Status publish(ChallengeType type, const std::string& name, const std::string& token,
                 const std::string& key_authorization) override {
    std::lock_guard lock(mu_);
    ++published_[type];
    if (type == ChallengeType::Http01) {
      tokens_[token] = key_authorization;
      return {};
    }
    auto made = acme::tls_alpn01_certificate(name, key_authorization);
    if (!made) return made.take_error();
    alpn_[name] = *made;
    return {};
  }
  void withdraw(ChallengeType type, const std::string& name, const std::string& token) override {
    std::lock_guard lock(mu_);
    tokens_.erase(token);
    alpn_.erase(name);
  }
  int published(ChallengeType t) {
    std::lock_guard lock(mu_);
    return published_[t];
  }
  int served() const { return served_; }

 private:
  void serve(int fd, const std::function<void(int)>& answer) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{5, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      answer(c);
      ::close(c);
    }
  }
  void answer_http(int c) {
    std::string req;
    char buf[2048];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 16384) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      req.append(buf, static_cast<size_t>(n));
    }
    const std::string prefix = "GET /.well-known/acme-challenge/";
    std::string body;
    if (req.starts_with(prefix)) {
      const std::string token = req.substr(prefix.size(), req.find(' ', prefix.size()) - prefix.size());
      std::lock_guard lock(mu_);
      if (auto it = tokens_.find(token); it != tokens_.end()) body = it->second;
    }
    const std::string resp = (body.empty() ? "HTTP/1.1 404 Not Found\r\n" : "HTTP/1.1 200 OK\r\n") +
                             std::string("Content-Type: text/plain\r\nConnection: close\r\nContent-Length: ") +
                             std::to_string(body.size()) + "\r\n\r\n" + body;
    ::send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
    ++served_;
  }
  // RFC 8737 §3: ALPN acme-tls/1, SNI the name, the challenge certificate.
  void answer_tls(int c) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_alpn_select_cb(
        ctx,
        [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen, void*) {
          static const unsigned char proto[] = "\x0a" "acme-tls/1";
          return SSL_select_next_proto(const_cast<unsigned char**>(out), outlen, proto, sizeof proto - 1, in,
                                       inlen) == OPENSSL_NPN_NEGOTIATED
                     ? SSL_TLSEXT_ERR_OK
                     : SSL_TLSEXT_ERR_ALERT_FATAL;
        },
        nullptr);
    SSL_CTX_set_client_hello_cb(
        ctx,
        [](SSL* ssl, int*, void* arg) {
          auto* self = static_cast<Responders*>(arg);
          const unsigned char* ext = nullptr;
          size_t len = 0;
          // server_name: list length (2), type (1), name length (2), name.
          if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext, &len) || len < 5) return 0;
          const std::string name(reinterpret_cast<const char*>(ext + 5), len - 5);
          std::lock_guard lock(self->mu_);
          auto it = self->alpn_.find(name);
          if (it == self->alpn_.end()) return 0;
          BIO* cb = BIO_new_mem_buf(it->second.first.data(), -1);
          BIO* kb = BIO_new_mem_buf(it->second.second.data(), -1);
          X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
          EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
          const bool ok = SSL_use_certificate(ssl, cert) == 1 && SSL_use_PrivateKey(ssl, key) == 1;
          X509_free(cert);
          EVP_PKEY_free(key);
          BIO_free(cb);
          BIO_free(kb);
          return ok ? 1 : 0;
        },
        this);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, c);
    if (SSL_accept(ssl) == 1) {
      ++served_;
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }

  int http_fd_ = -1, tls_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::map<std::string, std::string> tokens_;
  std::map<std::string, std::pair<std::string, std::string>> alpn_;
  std::map<ChallengeType, int> published_;
};

class AcmePebble : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Pebble::installed()) GTEST_SKIP() << "pebble / pebble-challtestsrv not installed";
    ASSERT_TRUE(pebble_.start());
  }
  acme::AcmeClient client(std::vector<ChallengeType> challenges) {
    acme::AcmeClient::Options o;
    o.directory_url = pebble_.directory_url();
    o.ca_file = pki("root.pem");
    o.contact = {"mailto:ops@example.com"};
    o.challenges = std::move(challenges);
    o.poll_interval = std::chrono::milliseconds(200);
    o.max_polls = 100;
    auto key = acme::AccountKey::generate();
    EXPECT_TRUE(key);
    return acme::AcmeClient(std::move(o), std::move(*key));
  }

  TempDir dir_;
  Pebble pebble_{dir_, pki("localhost.chain.pem"), pki("localhost.key")};
};

// The leaf of `chain` names exactly `names` and holds the key of `key_pem`.
void expect_issued(const acme::IssuedCertificate& c, const std::vector<std::string>& names) {
  BIO* cb = BIO_new_mem_buf(c.chain_pem.data(), static_cast<int>(c.chain_pem.size()));
  X509* leaf = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  X509* issuer = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(c.key_pem.data(), static_cast<int>(c.key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  ASSERT_NE(leaf, nullptr);
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(X509_check_private_key(leaf, key), 1);
  for (const auto& n : names) EXPECT_EQ(X509_check_host(leaf, n.c_str(), 0, 0, nullptr), 1) << n;
  EXPECT_NE(issuer, nullptr) << "the chain has no intermediate";
  if (issuer) EXPECT_EQ(X509_check_issued(issuer, leaf), X509_V_OK);
  X509_free(leaf);
  X509_free(issuer);
  EVP_PKEY_free(key);
}

TEST_F(AcmePebble, Http01IssuesForTwoNames) {
  Responders responders(pebble_.http_port(), pebble_.tls_port());
  ASSERT_TRUE(responders.listening());
  auto c = client({ChallengeType::Http01});
  auto issued = c.issue({"api.example.com", "www.example.com"}, acme::KeyType::EcdsaP256, responders);
  ASSERT_TRUE(issued) << issued.error().message() << "\n" << pebble_.log();
  expect_issued(*issued, {"api.example.com", "www.example.com"});
  EXPECT_EQ(responders.published(ChallengeType::Http01), 2);
  EXPECT_GE(responders.served(), 2);
  // The same account orders again (its kid kept): an RSA key this time.
  auto rsa = c.issue({"api.example.com"}, acme::KeyType::Rsa2048, responders);
  ASSERT_TRUE(rsa) << rsa.error().message();
  expect_issued(*rsa, {"api.example.com"});
}

TEST_F(AcmePebble, TlsAlpn01Issues) {
  Responders responders(pebble_.http_port(), pebble_.tls_port());
  ASSERT_TRUE(responders.listening());
  auto c = client({ChallengeType::TlsAlpn01});
  auto issued = c.issue({"alpn.example.com"}, acme::KeyType::EcdsaP256, responders);
  ASSERT_TRUE(issued) << issued.error().message() << "\n" << pebble_.log();
  expect_issued(*issued, {"alpn.example.com"});
  EXPECT_EQ(responders.published(ChallengeType::TlsAlpn01), 1);
  EXPECT_EQ(responders.published(ChallengeType::Http01), 0);
}

// A challenge nobody answers: the CA's problem document is the error, and
// no certificate comes back.
TEST_F(AcmePebble, AFailedChallengeReportsTheCasProblem) {
  struct Silent : acme::ChallengeResponder {
    Status publish(ChallengeType, const std::string&, const std::string&, const std::string&) override { return {}; }
    void withdraw(ChallengeType, const std::string&, const std::string&) override {}
  } silent;  // nothing listens on the validation port
  auto c = client({ChallengeType::Http01});
  auto issued = c.issue({"nobody.example.com"}, acme::KeyType::EcdsaP256, silent);
  ASSERT_FALSE(issued);
  EXPECT_EQ(issued.error().code, Errc::Upstream);
  EXPECT_NE(issued.error().message().find("nobody.example.com: http-01 failed: urn:ietf:params:acme:error:"),
            std::string::npos)
      << issued.error().message();
}

TEST_F(AcmePebble, AnUntrustedCaIsRefused) {
  acme::AcmeClient::Options o;
  o.directory_url = pebble_.directory_url();
  o.ca_file = pki("other-root.pem");
  auto key = acme::AccountKey::generate();
  ASSERT_TRUE(key);
  acme::AcmeClient c(std::move(o), std::move(*key));
  auto kid = c.account();
  ASSERT_FALSE(kid);
  EXPECT_EQ(kid.error().code, Errc::Io);
}

// A CA that requires External Account Binding (RFC 8555 §7.3.4): an account
// made with the CA's key id and MAC key is accepted; without, or with
// another MAC key, the CA's problem document is the error.
TEST(AcmePebbleEab, AccountNeedsTheCasBinding) {
  if (!Pebble::installed()) GTEST_SKIP() << "pebble / pebble-challtestsrv not installed";
  TempDir dir;
  Pebble pebble{dir, pki("localhost.chain.pem"), pki("localhost.key")};
  const std::string mac_b64 = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";
  pebble.require_eab("kid-1", mac_b64);
  ASSERT_TRUE(pebble.start());
  auto account = [&](std::string kid, std::string mac) {
    acme::AcmeClient::Options o;
    o.directory_url = pebble.directory_url();
    o.ca_file = pki("root.pem");
    o.eab_kid = std::move(kid);
    o.eab_hmac_key = std::move(mac);
    auto key = acme::AccountKey::generate();
    EXPECT_TRUE(key);
    acme::AcmeClient c(std::move(o), std::move(*key));
    return c.account();
  };
  // The MAC key as raw bytes: base64url-decoded, as the manager reads the file.
  std::string raw(mac_b64.size() * 3 / 4, '\0');
  std::string std_b64 = mac_b64;
  for (char& ch : std_b64) ch = ch == '-' ? '+' : ch == '_' ? '/' : ch;
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                                reinterpret_cast<const unsigned char*>(std_b64.data()), static_cast<int>(std_b64.size()));
  ASSERT_EQ(n, 48);
  raw.resize(48);
  auto ok = account("kid-1", raw);
  EXPECT_TRUE(ok) << (ok ? "" : ok.error().message()) << "\n" << pebble.log();
  auto none = account("", "");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("externalAccountRequired"), std::string::npos) << none.error().message();
  auto wrong = account("kid-1", std::string(48, 'x'));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("urn:ietf:params:acme:error:"), std::string::npos) << wrong.error().message();
}

}  // namespace
}  // namespace tlsfront::itest
