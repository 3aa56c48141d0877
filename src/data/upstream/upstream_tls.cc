#include "data/upstream/upstream_tls.h"

#include <openssl/x509_vfy.h>

#include <cstring>

#include "log/log.h"
#include "tls/openssl_error.h"

namespace tlsfront::upstream {

Result<std::unique_ptr<UpstreamTls>> UpstreamTls::start(TlsTarget& target) {
  Result<SslPtr> ssl = target.ctx->new_ssl(target.server, &target.session);
  if (!ssl) return make_error(Errc::Upstream, "TLS to upstream: " + ssl.error().message());
  Result<tls::TlsStream> stream = tls::TlsStream::create_client(std::move(ssl).value());
  if (!stream) return make_error(Errc::Upstream, "TLS to upstream: " + stream.error().message());
  auto self =
      std::unique_ptr<UpstreamTls>(new UpstreamTls(std::move(stream).value(), target.ctx->http2(), target.counters));
  const std::string& name = target.ctx->config().server_name;
  self->name_ = name.empty() ? target.server.host : name;
  // The ClientHello: handshake() writes it and asks for input.
  if (Result<bool> r = self->stream_.handshake(); !r) return self->handshake_error(r.error());
  return self;
}

Result<bool> UpstreamTls::feed(std::string_view ciphertext) {
  stream_.feed(ciphertext);
  if (stream_.handshake_done()) return true;
  Result<bool> done = stream_.handshake();
  if (!done) return handshake_error(done.error());
  if (!*done) return false;
  if (counters_) {
    counters_->tls_handshakes.add();
    if (resumed()) counters_->tls_resumed.add();
  }
  if (http2_) {
    const unsigned char* alpn = nullptr;
    unsigned int len = 0;
    SSL_get0_alpn_selected(stream_.ssl(), &alpn, &len);
    if (len != 2 || std::memcmp(alpn, "h2", 2) != 0) {
      return make_error(Errc::Upstream,
                        "upstream TLS handshake: the server did not select HTTP/2 (ALPN \"h2\"); protocol = \"h2\" "
                        "needs a server that speaks it over TLS");
    }
  }
  return true;
}

Error UpstreamTls::handshake_error(const Error& failed) const {
  const long verify = SSL_get_verify_result(stream_.ssl());
  if (verify != X509_V_OK) {
    std::string message = "upstream TLS handshake: certificate verify failed: ";
    message += X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      message += " (checked for \"" + name_ + "\"; [upstream.tls] server_name sets the name)";
    }
    return make_error(Errc::Upstream, std::move(message));
  }
  // TlsStream's "TLS handshake failed: <OpenSSL's reasons>".
  std::string message = "upstream " + failed.message();
  if (http2_ && message.find("no application protocol") != std::string::npos) {
    message += " (protocol = \"h2\" offers ALPN \"h2\" only: the server does not speak HTTP/2 over TLS)";
  }
  return make_error(Errc::Upstream, std::move(message));
}

Error UpstreamTls::flood_error() {
  return make_error(Errc::Protocol,
                    "upstream sends TLS post-handshake messages (HelloRequest, KeyUpdate) without reading our answers");
}

Result<size_t> UpstreamTls::read(char* buf, size_t len) {
  Result<size_t> n = stream_.read(buf, len);
  if (n) return n;
  if (n.error().code == Errc::Tls) return make_error(Errc::Upstream, "upstream TLS: " + n.error().message());
  if (n.error().code == Errc::Protocol && flooded()) {
    if (counters_) counters_->floods.add();
    log::warn("upstream TLS peer {}: {}; connection closed with an unexpected_message alert", name_,
              n.error().message());
    return make_error(Errc::Protocol, "upstream " + n.error().message());
  }
  return n;
}

int UpstreamTls::send(StreamWriter& writer, std::string& plaintext) {
  if (!plaintext.empty() && stream_.handshake_done()) {
    if (!stream_.write(plaintext)) return UV_EPROTO;
    plaintext.clear();
  }
  return flush(writer);
}

}  // namespace tlsfront::upstream
