// OcspStapler + attach_ocsp without sockets: the staple a client gets over
// memory BIOs (SSL_get_tlsext_status_ocsp_resp), the policies, expiry seen by
// the worker side, response_file and cache loading, who gets a stapler.
#include "tls/ocsp_stapler.h"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>

#include "support/fake_clock.h"
#include "shared/temp_dir.h"
#include "support/thread_http_server.h"
#include "ocsp_test_support.h"
#include "tls/tls_context.h"

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;
using testing::kPki;
using testing::load_cert;
using testing::load_key;
using testing::make_response;
using testing::ResponseSpec;

// Answers every request with `body` as an OCSP response.
ThreadHttpServer::Answer ocsp_answer(const std::vector<uint8_t>& body) {
  return [body](const std::string&) -> std::optional<std::string> {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/ocsp-response\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + std::string(body.begin(), body.end());
  };
}

struct Outcome {
  bool handshake_ok = false;
  std::vector<uint8_t> staple;  // what the client received
};

class OcspStaplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ctx_.reset(SSL_CTX_new(TLS_client_method()));
    ASSERT_TRUE(client_ctx_);
    SSL_CTX_load_verify_locations(client_ctx_.get(), (kPki + "/root.pem").c_str(), nullptr);
    SSL_CTX_set_verify(client_ctx_.get(), SSL_VERIFY_PEER, nullptr);
    signer_ = load_cert("ocsp-signer.pem");
    signer_key_ = load_key("ocsp-signer.key");
    issuer_ = load_cert("intermediate.pem");
  }
  std::unique_ptr<TlsContext> server(const std::string& name) {
    config::Tls t;
    t.certificates.push_back({.cert = kPki + "/" + name + ".chain.pem", .key = kPki + "/" + name + ".key"});
    t.trusted_ca = kPki + "/root.pem";
    auto ctx = TlsContext::create(t);
    EXPECT_TRUE(ctx.ok()) << ctx.error().message();
    return ctx.ok() ? std::move(ctx).value() : nullptr;
  }

  // A good response for `leaf` valid from clock-`age` to clock+`left`.
  std::vector<uint8_t> response(X509* leaf, std::chrono::seconds left, std::chrono::seconds age = 1h) {
    ResponseSpec s;
    s.leaf = leaf;
    s.issuer = issuer_.get();
    s.signer = signer_.get();
    s.signer_key = signer_key_.get();
    s.this_update = clock_.now() - age;
    s.next_update = clock_.now() + left;
    return make_response(s);
  }

  std::string write(const std::string& name, const std::vector<uint8_t>& der) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(der.data()),
                                                static_cast<std::streamsize>(der.size()));
    return path;
  }

  // `anchor`: the trust anchor CertChain found (null: none passed).
  std::unique_ptr<OcspStapler> stapler(TlsContext& ctx, const config::Ocsp& ocsp, const std::string& cache_dir = "",
                                       X509* anchor = nullptr) {
    STACK_OF(X509)* chain = nullptr;
    SSL_CTX_get0_chain_certs(ctx.get(), &chain);
    auto s = OcspStapler::create(ctx.leaf(), chain, anchor, ocsp, cache_dir, &clock_);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  Outcome connect(SSL_CTX* server_ctx, bool request_status) {
    Outcome out;
    SslPtr client(SSL_new(client_ctx_.get()));
    SslPtr srv(SSL_new(server_ctx));
    BIO* cb = nullptr;
    BIO* sb = nullptr;
    if (!client || !srv || BIO_new_bio_pair(&cb, 0, &sb, 0) != 1) return out;
    SSL_set_bio(client.get(), cb, cb);
    SSL_set_bio(srv.get(), sb, sb);
    SSL_set_connect_state(client.get());
    SSL_set_accept_state(srv.get());
    SSL_set_tlsext_host_name(client.get(), "localhost");
    if (request_status) SSL_set_tlsext_status_type(client.get(), TLSEXT_STATUSTYPE_ocsp);
    auto blocked = [](SSL* s, int rc) {
      int e = SSL_get_error(s, rc);
      return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
    };
    bool client_done = false, server_done = false, failed = false;
    for (int i = 0; i < 50 && !(client_done && server_done) && !failed; ++i) {
      if (!client_done) {
        int rc = SSL_do_handshake(client.get());
        if (rc == 1) client_done = true;
        else if (!blocked(client.get(), rc)) failed = true;
      }
      if (!server_done && !failed) {
        int rc = SSL_do_handshake(srv.get());
        if (rc == 1) server_done = true;
        else if (!blocked(srv.get(), rc)) failed = true;
      }
    }
    ERR_clear_error();
    out.handshake_ok = client_done && server_done;
    const unsigned char* p = nullptr;
    long n = SSL_get_tlsext_status_ocsp_resp(client.get(), &p);
    if (n > 0 && p) out.staple.assign(p, p + n);
    return out;
  }

  FakeClock clock_{std::chrono::system_clock::now()};
  TempDir tmp_{"tlsfront-ocsp-unit"};
  const std::string dir_ = tmp_.path();
  SslCtxPtr client_ctx_;
  X509Ptr signer_, issuer_;
  EvpPkeyPtr signer_key_;
};

TEST_F(OcspStaplerTest, StaplesTheResponseFileToClientsThatAsk) {
  auto ctx = server("localhost");
  ASSERT_TRUE(ctx);
  auto der = response(ctx->leaf(), 1h);
  config::Ocsp ocsp;
  ocsp.response_file = write("resp.der", der);
  auto s = stapler(*ctx, ocsp);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->load_initial().ok());
  OcspRegistry registry;
  registry.add(s.get());
  attach_ocsp(ctx->get(), &registry);

  Outcome asked = connect(ctx->get(), true);
  EXPECT_TRUE(asked.handshake_ok);
  EXPECT_EQ(asked.staple, der);
  Outcome not_asked = connect(ctx->get(), false);
  EXPECT_TRUE(not_asked.handshake_ok);
  EXPECT_TRUE(not_asked.staple.empty());
  EXPECT_EQ(s->status().counters.stapled, 1u);
  EXPECT_TRUE(s->status().stapling);

  // Past nextUpdate the worker side stops stapling even before the loop notices.
  clock_.advance(1h + 1s);
  Outcome late = connect(ctx->get(), true);
  EXPECT_TRUE(late.handshake_ok);  // lenient
  EXPECT_TRUE(late.staple.empty());
  EXPECT_EQ(s->status().counters.unstapled, 1u);
}

// A leaf issued directly by the root: no intermediate is sent, the response
// names the root as issuer and is signed by it; the anchor is what lets the
// stapler build the CertID and verify the response.
TEST_F(OcspStaplerTest, LeafIssuedByTheRootIsStapledWithTheTrustAnchorAsIssuer) {
  auto ctx = server("root-issued");
  ASSERT_TRUE(ctx);
  X509Ptr root = load_cert("root.pem");
  EvpPkeyPtr root_key = load_key("root.key");
  ResponseSpec spec;
  spec.leaf = ctx->leaf();
  spec.issuer = root.get();
  spec.signer = root.get();
  spec.signer_key = root_key.get();
  spec.this_update = clock_.now() - 1h;
  spec.next_update = clock_.now() + 1h;
  const auto der = make_response(spec);
  config::Ocsp ocsp;
  ocsp.response_file = write("root-issued.der", der);
  EXPECT_EQ(stapler(*ctx, ocsp), nullptr);  // without the anchor its issuer is unknown
  auto s = stapler(*ctx, ocsp, "", root.get());
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->load_initial().ok());
  ASSERT_NE(s->staple(), nullptr);
  OcspRegistry registry;
  registry.add(s.get());
  attach_ocsp(ctx->get(), &registry);
  Outcome asked = connect(ctx->get(), true);
  EXPECT_TRUE(asked.handshake_ok);
  EXPECT_EQ(asked.staple, der);
}

TEST_F(OcspStaplerTest, StrictRefusesClientsThatAskWhileThereIsNoStaple) {
  auto ctx = server("localhost");
  ASSERT_TRUE(ctx);
  config::Ocsp ocsp;
  ocsp.responder = "http://127.0.0.1:9/";  // never fetched here
  ocsp.staple_policy = config::StaplePolicy::Strict;
  auto s = stapler(*ctx, ocsp);
  ASSERT_TRUE(s);
  OcspRegistry registry;
  registry.add(s.get());
  attach_ocsp(ctx->get(), &registry);
  EXPECT_FALSE(connect(ctx->get(), true).handshake_ok);
  EXPECT_EQ(s->status().counters.refused, 1u);
  EXPECT_TRUE(connect(ctx->get(), false).handshake_ok);
}

TEST_F(OcspStaplerTest, ExpiredOrForeignResponseFileIsNotStapled) {
  auto ctx = server("localhost");
  ASSERT_TRUE(ctx);
  config::Ocsp ocsp;
  auto expired = response(ctx->leaf(), 1h);
  clock_.advance(2h);
  ocsp.response_file = write("expired.der", expired);
  auto s = stapler(*ctx, ocsp);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->load_initial().ok());  // logged, not fatal
  EXPECT_EQ(s->staple(), nullptr);

  auto other = load_cert("rsa.pem");
  ocsp.response_file = write("other.der", response(other.get(), 1h));
  auto s2 = stapler(*ctx, ocsp);
  ASSERT_TRUE(s2->load_initial().ok());
  EXPECT_EQ(s2->staple(), nullptr);

  ocsp.response_file = dir_ + "/missing.der";
  auto s3 = stapler(*ctx, ocsp);
  auto st = s3->load_initial();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::Config);
}

TEST_F(OcspStaplerTest, ReloadReplacesTheResponseFileAndKeepsItOnBadInput) {
  auto ctx = server("localhost");
  ASSERT_TRUE(ctx);
  config::Ocsp ocsp;
  auto first = response(ctx->leaf(), 1h);
  ocsp.response_file = write("resp.der", first);
  auto s = stapler(*ctx, ocsp);
  ASSERT_TRUE(s->load_initial().ok());
  write("resp.der", {0x30, 0x00});
  s->reload();
  ASSERT_NE(s->staple(), nullptr);
  EXPECT_EQ(s->staple()->der, first);
  clock_.advance(1s);
  auto second = response(ctx->leaf(), 2h);
  write("resp.der", second);
  s->reload();
  EXPECT_EQ(s->staple()->der, second);
}

TEST_F(OcspStaplerTest, LoadsAVerifiedResponseFromTheCacheDir) {
  auto ctx = server("localhost");
  ASSERT_TRUE(ctx);
  config::Ocsp ocsp;
  ocsp.responder = "http://127.0.0.1:9/";
  const std::string cache = dir_ + "/cache";
  auto s = stapler(*ctx, ocsp, cache);
  ASSERT_TRUE(s->load_initial().ok());  // creates nothing: the first write makes the directory
  EXPECT_EQ(s->staple(), nullptr);
  EXPECT_FALSE(std::filesystem::exists(cache));
  std::filesystem::create_directories(cache);

  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  ASSERT_TRUE(X509_digest(ctx->leaf(), EVP_sha256(), md, &len));
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    char b[3];
    std::snprintf(b, sizeof(b), "%02x", md[i]);
    hex += b;
  }
  auto der = response(ctx->leaf(), 1h);
  write("cache/" + hex + ".der", der);
  auto again = stapler(*ctx, ocsp, cache);
  ASSERT_TRUE(again->load_initial().ok());
  ASSERT_NE(again->staple(), nullptr);
  EXPECT_EQ(again->staple()->der, der);

  write("cache/" + hex + ".der", std::vector<uint8_t>(100, 0x41));  // corrupt: ignored
  auto corrupt = stapler(*ctx, ocsp, cache);
  ASSERT_TRUE(corrupt->load_initial().ok());
  EXPECT_EQ(corrupt->staple(), nullptr);
}

TEST_F(OcspStaplerTest, FetchesOnTheLoopAndRefreshesAResponseMadeAheadOfTimeLater) {
  auto ctx = server("localhost");
  ASSERT_TRUE(ctx);
  // Produced 50 min ago, 10 min left: 50% of its window is already past.
  ThreadHttpServer responder(ocsp_answer(response(ctx->leaf(), 600s, 3000s)));
  config::Ocsp ocsp;
  ocsp.responder = responder.url("/");
  ocsp.refresh_jitter_percent = 0;
  auto s = stapler(*ctx, ocsp);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->load_initial().ok());
  uv_loop_t loop{};
  ASSERT_EQ(uv_loop_init(&loop), 0);
  auto fetcher = OcspFetcher::create(&loop);
  ASSERT_TRUE(fetcher.ok());
  s->start(&loop, fetcher->get());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!s->staple() && std::chrono::steady_clock::now() < deadline) {
    uv_run(&loop, UV_RUN_NOWAIT);
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_NE(s->staple(), nullptr);
  EXPECT_EQ(s->status().counters.fetch_ok, 1u);
  // Half of the 10 min left, not "at once".
  EXPECT_GE(s->next_fetch_for_test(), clock_.now() + 290s);
  EXPECT_LT(s->next_fetch_for_test(), clock_.now() + 600s);
  s->stop();
  (*fetcher)->stop();
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
  EXPECT_EQ(responder.answered(), 1);
}

TEST_F(OcspStaplerTest, WhoGetsAStapler) {
  auto plain = server("localhost");
  auto aia = server("aia");
  auto must = server("must-staple");
  ASSERT_TRUE(plain && aia && must);
  config::Ocsp ocsp;
  EXPECT_EQ(stapler(*plain, ocsp), nullptr);  // no URL: silently not stapled
  auto a = stapler(*aia, ocsp);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->responder(), "http://ocsp.tlsfront.invalid/");
  EXPECT_EQ(a->policy(), config::StaplePolicy::Lenient);
  ocsp.responder = "http://127.0.0.1:9/ocsp";
  auto m = stapler(*must, ocsp);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->responder(), "http://127.0.0.1:9/ocsp");
  EXPECT_EQ(m->policy(), config::StaplePolicy::MustStaple);  // from the TLS Feature extension
  ocsp.stapling = false;
  EXPECT_EQ(stapler(*aia, ocsp), nullptr);
}

TEST_F(OcspStaplerTest, RegistryFindsTheStaplerByTheCertificate) {
  auto a = server("localhost");
  auto b = server("rsa");
  ASSERT_TRUE(a && b);
  config::Ocsp ocsp;
  ocsp.responder = "http://127.0.0.1:9/";
  auto sa = stapler(*a, ocsp);
  auto sb = stapler(*b, ocsp);
  OcspRegistry registry;
  registry.add(sa.get());
  registry.add(sb.get());
  EXPECT_EQ(registry.find(a->leaf()), sa.get());
  EXPECT_EQ(registry.find(b->leaf()), sb.get());
  auto copy = load_cert("rsa.pem");  // another X509 object, same certificate
  EXPECT_EQ(registry.find(copy.get()), sb.get());
  auto other = load_cert("other-name.pem");
  EXPECT_EQ(registry.find(other.get()), nullptr);
}

}  // namespace
}  // namespace tlsfront::tls
