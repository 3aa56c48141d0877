#include "tls/tls_stream.h"

#include <openssl/err.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "tls/handshake_facts.h"
#include "tls/openssl_error.h"

namespace tlsfront::tls {

namespace {

// SSL_get_error needs an empty error queue before each SSL call (a stale entry
// reads as SSL_ERROR_SSL), but ERR_clear_error() walks all 16 slots of the
// thread's queue every time; peeking first is cheaper when it is empty.
void clear_errors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

}  // namespace

int TlsStream::bio_read(BIO* bio, char* data, size_t len, size_t* read) {
  auto* io = static_cast<Io*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  const size_t avail = io->refuse ? 0 : io->in.size() - io->in_off;
  if (avail == 0) {
    BIO_set_retry_read(bio);  // "retry later", not end of file
    *read = 0;
    return 0;
  }
  const size_t n = std::min(len, avail);
  std::memcpy(data, io->in.data() + io->in_off, n);
  io->in_off += n;
  if (io->in_off == io->in.size()) {
    io->in.clear();
    io->in_off = 0;
  }
  *read = n;
  return 1;
}

int TlsStream::bio_write(BIO* bio, const char* data, size_t len, size_t* written) {
  auto* io = static_cast<Io*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  io->out.append(data, len);
  *written = len;
  return 1;
}

long TlsStream::bio_ctrl(BIO* bio, int cmd, long, void*) {
  auto* io = static_cast<Io*>(BIO_get_data(bio));
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
      return static_cast<long>(io->in.size() - io->in_off);
    case BIO_CTRL_WPENDING:
      return static_cast<long>(io->out.size());
    default:
      return 0;  // no KTLS, no dgram, no push/pop: OpenSSL treats 0 as "unsupported"
  }
}

const BIO_METHOD* TlsStream::bio_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tlsfront stream");
    if (m == nullptr || !BIO_meth_set_read_ex(m, bio_read) || !BIO_meth_set_write_ex(m, bio_write) ||
        !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, [](BIO* b) {
          BIO_set_init(b, 1);
          return 1;
        })) {
      BIO_meth_free(m);
      return static_cast<BIO_METHOD*>(nullptr);
    }
    return m;
  }();
  return method;
}

void TlsStream::on_message_cb(int write_p, int, int content_type, const void* buf, size_t len, SSL*, void* arg) {
  auto* io = static_cast<Io*>(arg);
  if (!io->post_handshake || io->flooded) return;
  // What a renegotiation attempt costs us is the no_renegotiation warning
  // OpenSSL sends back; a close_notify is no answer to anything.
  const auto* bytes = static_cast<const unsigned char*>(buf);
  const bool received = write_p == 0 && content_type == SSL3_RT_HANDSHAKE;
  const bool warned = write_p == 1 && content_type == SSL3_RT_ALERT && len == 2 && bytes[0] == SSL3_AL_WARNING &&
                      bytes[1] != SSL_AD_CLOSE_NOTIFY;
  if (!received && !warned) return;
  if (++io->run > kMaxPostHandshakeRun || !io->rate.take()) io->flooded = io->refuse = true;
}

void TlsStream::start_counting() {
  io_->post_handshake = true;
  SSL_set_msg_callback_arg(ssl_.get(), io_.get());
  SSL_set_msg_callback(ssl_.get(), on_message_cb);
}

Error TlsStream::flood_error() {
  Io& io = *io_;
  io.in.clear();
  io.in_off = 0;
  clear_errors();
  if (SSL_version(ssl_.get()) >= TLS1_3_VERSION) {
    // OpenSSL 3.0 has no call that sends an alert of our choosing. A record
    // whose outer type is not application_data after the handshake is one
    // RFC 8446 §5 requires it to answer with a fatal unexpected_message
    // alert, so it is given one in place of the peer's remaining input,
    // and sends its alert.
    static constexpr char kUnexpectedRecord[] = {0x16, 0x03, 0x03, 0x00, 0x01, 0x00};
    io.in.assign(kUnexpectedRecord, sizeof(kUnexpectedRecord));
    io.refuse = false;
    char sink[64];
    size_t n = 0;
    (void)SSL_read_ex(ssl_.get(), sink, sizeof(sink), &n);
    io.refuse = true;
    io.in.clear();
  } else {
    // TLS 1.2 decrypts a record before it looks at its type: no record of
    // ours could make OpenSSL say unexpected_message. A close_notify where
    // OpenSSL still allows one (not while it answers a HelloRequest); the
    // connection's close says the rest.
    SSL_shutdown(ssl_.get());
  }
  clear_errors();
  if (phase_ != Phase::Failed) transition(phase_, Phase::Failed);
  return make_error(Errc::Protocol, "TLS post-handshake message flood (KeyUpdate, renegotiation): more than " +
                                        std::to_string(kMaxPostHandshakeRun) +
                                        " without application data, or faster than " +
                                        std::to_string(static_cast<int>(kPostHandshakePerSecond)) + "/s");
}

Result<TlsStream> TlsStream::create(SSL_CTX* ctx) {
  clear_errors();
  SslPtr ssl(SSL_new(ctx));
  if (!ssl) return openssl_error(Errc::Tls, "SSL_new");
  SSL_set_accept_state(ssl.get());
  return wrap(std::move(ssl));
}

Result<TlsStream> TlsStream::create_client(SslPtr ssl) {
  clear_errors();
  SSL_set_connect_state(ssl.get());
  return wrap(std::move(ssl));
}

Result<TlsStream> TlsStream::wrap(SslPtr ssl) {
  const BIO_METHOD* method = bio_method();
  BIO* bio = method ? BIO_new(method) : nullptr;
  if (!bio) return openssl_error(Errc::Tls, "BIO_new");
  auto io = std::make_unique<Io>();
  BIO_set_data(bio, io.get());
  // One BIO both ways: SSL_set_bio takes a single reference when rbio == wbio.
  SSL_set_bio(ssl.get(), bio, bio);
  return TlsStream(std::move(io), std::move(ssl));
}

TlsStream::~TlsStream() {
  if (ssl_ && handshake_done()) SSL_set_shutdown(ssl_.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
}

void TlsStream::feed(std::string_view ciphertext) {
  Io& io = *io_;
  if (io.in_off > 0 && io.in_off >= io.in.size() / 2) {  // keep the unread tail at the front
    io.in.erase(0, io.in_off);
    io.in_off = 0;
  }
  io.in.append(ciphertext);
}

Result<bool> TlsStream::handshake() {
  if (handshake_done()) return true;
  if (phase_ == Phase::Failed) return make_error(Errc::Tls, "TLS handshake failed earlier");
  clear_errors();
  if (phase_ == Phase::Paused) transition(phase_, Phase::Handshaking);
  if (!early_done_) {
    // SSL_read_early_data must come first whenever the context allows early
    // data (after FINISH it is an error to call it again); without it, a
    // client's early data is skipped by SSL_do_handshake.
    if (!SSL_is_server(ssl_.get()) || SSL_get_max_early_data(ssl_.get()) == 0) {
      early_done_ = true;
    } else {
      if (Status s = read_early_data(); !s) return s.take_error();
      if (!early_done_) return false;
    }
  }
  int rc = SSL_do_handshake(ssl_.get());
  if (rc == 1) {
    transition(phase_, Phase::Open);
    start_counting();
    return true;
  }
  int err = SSL_get_error(ssl_.get(), rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return false;
  if (err == SSL_ERROR_WANT_CLIENT_HELLO_CB) {
    transition(phase_, Phase::Paused);
    return false;
  }
  return handshake_failed();
}

Status TlsStream::read_early_data() {
  char buf[16 * 1024];  // one record's plaintext
  for (;;) {
    size_t n = 0;
    const int rc = SSL_read_early_data(ssl_.get(), buf, sizeof(buf), &n);
    if (rc == SSL_READ_EARLY_DATA_SUCCESS) {
      if (!early_) early_ = std::make_unique<EarlyInput>();
      early_->data.append(buf, n);
      if (phase_ == Phase::Handshaking) transition(phase_, Phase::Early);
      continue;
    }
    if (rc == SSL_READ_EARLY_DATA_FINISH) {
      early_done_ = true;
      return {};
    }
    const int err = SSL_get_error(ssl_.get(), rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      // Accepted, but its records are still to come: the session may start.
      if (phase_ == Phase::Handshaking && SSL_get_early_data_status(ssl_.get()) == SSL_EARLY_DATA_ACCEPTED) {
        transition(phase_, Phase::Early);
      }
      return {};
    }
    if (err == SSL_ERROR_WANT_CLIENT_HELLO_CB) {
      transition(phase_, Phase::Paused);
      return {};
    }
    return handshake_failed();
  }
}

Error TlsStream::handshake_failed() {
  transition(phase_, Phase::Failed);
  early_overflow_ = ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_TOO_MUCH_EARLY_DATA;
  refusal_ = classify_handshake_failure(ssl_.get());  // before the error queue is drained
  return openssl_error(Errc::Tls, "TLS handshake failed");
}

Result<size_t> TlsStream::read(char* buf, size_t len) {
  if (early_ && early_->off < early_->data.size()) {  // early data comes before anything read after the handshake
    const size_t n = std::min(len, early_->data.size() - early_->off);
    std::memcpy(buf, early_->data.data() + early_->off, n);
    early_->off += n;
    if (early_->off == early_->data.size()) early_.reset();
    return n;
  }
  if (phase_ == Phase::Early) return size_t{0};  // handshake() reads what comes next
  clear_errors();
  size_t n = 0;
  int rc = SSL_read_ex(ssl_.get(), buf, len, &n);
  if (rc == 1) {
    io_->run = 0;  // application data: the post-handshake messages before it made progress
    return n;
  }
  if (io_->flooded)
    return phase_ == Phase::Failed ? make_error(Errc::Protocol, "TLS post-handshake message flood") : flood_error();
  int err = SSL_get_error(ssl_.get(), rc);
  switch (err) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return size_t{0};
    case SSL_ERROR_ZERO_RETURN:
      return make_error(Errc::Closed, "close_notify received");
    default:
      if (phase_ != Phase::Failed) transition(phase_, Phase::Failed);
      return openssl_error(Errc::Tls, "TLS read failed");
  }
}

Status TlsStream::write(std::string_view plaintext) {
  const bool early = phase_ == Phase::Early;
  while (!plaintext.empty()) {
    clear_errors();
    size_t n = 0;
    const int rc = early ? SSL_write_early_data(ssl_.get(), plaintext.data(), plaintext.size(), &n)
                         : SSL_write_ex(ssl_.get(), plaintext.data(), plaintext.size(), &n);
    if (rc != 1) {
      if (phase_ != Phase::Failed) transition(phase_, Phase::Failed);
      return openssl_error(Errc::Tls, "TLS write failed");
    }
    plaintext.remove_prefix(n);
  }
  return {};
}

void TlsStream::shutdown() {
  if (phase_ != Phase::Open) return;
  transition(phase_, Phase::Closed);
  clear_errors();
  SSL_shutdown(ssl_.get());
  clear_errors();
}

size_t TlsStream::take_output(std::string& out) {
  const size_t n = io_->out.size();
  if (out.empty()) {
    out.swap(io_->out);
  } else {
    out.append(io_->out);
  }
  io_->out.clear();
  return n;
}

bool TlsStream::release_buffers() {
  if (pending_input() != 0 || pending_output() != 0) return false;
  early_.reset();
  std::string().swap(io_->in);
  std::string().swap(io_->out);
  io_->in_off = 0;
  return true;
}

}  // namespace tlsfront::tls
