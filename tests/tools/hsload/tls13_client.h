// One TLS 1.3 client connection of tlsfront_hsload (RFC 8446), as a state
// machine over bytes: no socket, no clock but the ticket's age. The loop
// (hsload.cc) moves the bytes and enforces the timeout.
//
// Cheap by design: the certificate chain and the CertificateVerify signature
// are only checked for shape, not verified (the benchmark checks the chain
// once with curl), and the X25519 key pair is the process's one
// (key_schedule.h); everything else is checked — record framing and sizes,
// every AEAD tag, the message order, the ServerHello's choices, and the
// server's Finished MAC, so a wrong key schedule is an error, never a
// silent success.
//
// States and their legal transitions (any state but the two terminal ones
// may go to kFailed):
//   kStart                   -> kWaitServerHello          start(): ClientHello out
//   kWaitServerHello         -> kWaitEncryptedExtensions  ServerHello (HRR: kFailed)
//   kWaitEncryptedExtensions -> kWaitCertificate          full handshake
//                            -> kWaitFinished             PSK accepted
//   kWaitCertificate         -> kWaitCertificateVerify
//   kWaitCertificateVerify   -> kWaitFinished
//   kWaitFinished            -> kWaitResponse             Finished verified; client
//                                                         Finished + request out
//   kWaitResponse            -> kDone                     a complete 200 response
// ChangeCipherSpec records (§D.4) are skipped before the server's Finished;
// NewSessionTicket messages are read in kWaitResponse (the first is kept
// when asked for, §4.6.1).
//
// Errors: error() names the first failure (error_reason() for the
// histogram). Thread affinity: one thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "hsload/bytes.h"
#include "hsload/http_response.h"
#include "hsload/key_schedule.h"
#include "hsload/messages.h"
#include "hsload/record_layer.h"

namespace tlsfront::hsload {

using SteadyClock = std::chrono::steady_clock;

enum class Error : uint8_t {
  kNone,
  // transport (set by the loop)
  kConnectFailed,
  kConnectionReset,
  kIo,
  kTimeout,
  // TLS
  kEofInHandshake,
  kNotTls,
  kRecordOverflow,
  kBadRecordMac,
  kUnexpectedMessage,
  kHelloRetryRequest,
  kBadServerHello,
  kDecodeError,
  kHandshakeTooLarge,
  kBadFinished,
  kPskIdentity,
  kCertificateRequest,
  kKeyUpdate,
  kCrypto,
  kAlert,
  // HTTP
  kHttpMalformed,
  kHttpTooLarge,
  kHttpStatus,
};

// A resumption ticket and its PSK (§4.6.1).
struct Ticket {
  Bytes identity;
  Secret psk{};
  uint32_t age_add = 0;
  uint32_t lifetime_s = 0;
  SteadyClock::time_point received;
};

struct ClientConfig {
  std::string sni;  // "" = no server_name
  Bytes request;    // the HTTP/1.1 request, sent with the client Finished
  size_t max_handshake_message = 64 * 1024;
  bool keep_ticket = false;  // derive and keep the first ticket's PSK
};

class Tls13Client {
 public:
  enum class State {
    kStart,
    kWaitServerHello,
    kWaitEncryptedExtensions,
    kWaitCertificate,
    kWaitCertificateVerify,
    kWaitFinished,
    kWaitResponse,
    kDone,
    kFailed,
  };

  explicit Tls13Client(const ClientConfig& config) : config_(config) {}

  // Appends the ClientHello to `out`; with `ticket` (unexpired), offers its
  // PSK (psk_dhe_ke) with the binder.
  void start(const Ticket* ticket, Bytes& out);
  // Bytes received; whatever must be sent in reply is appended to `out`.
  State on_data(ByteView in, Bytes& out);
  // The transport reached EOF.
  State on_eof();
  // A transport failure.
  void fail(Error e);
  // After kDone: a protected close_notify alert appended to `out`.
  void close_notify(Bytes& out);

  State state() const { return state_; }
  Error error() const { return error_; }
  std::string error_reason() const;
  bool psk_offered() const { return psk_offered_; }
  bool resumed() const { return resumed_; }  // the server accepted the PSK
  std::optional<Ticket>& ticket() { return ticket_; }

 private:
  void on_record(const Record& r, Bytes& out);
  void on_handshake_bytes(ByteView plaintext, Bytes& out);
  void on_message(uint8_t type, ByteView message, Bytes& out);
  void on_server_hello(ByteView message);
  void on_finished(ByteView message, Bytes& out);
  void on_new_session_ticket(ByteView body);
  void on_alert(ByteView alert);
  void on_close();
  void on_response(HttpResponse::Status s);
  bool terminal() const { return state_ == State::kDone || state_ == State::kFailed; }

  const ClientConfig& config_;
  State state_ = State::kStart;
  Error error_ = Error::kNone;
  uint8_t alert_ = 0;  // the description of a received fatal alert
  bool psk_offered_ = false;
  bool resumed_ = false;

  Transcript transcript_;
  Secret psk_early_secret_{};
  Secret client_hs_{}, server_hs_{}, master_{};
  RecordBuffer records_;
  HandshakeReader handshake_{config_.max_handshake_message};
  Aead read_, write_;
  Bytes plaintext_;
  HttpResponse http_;
  std::optional<Ticket> ticket_;
};

const char* error_name(Error e);

}  // namespace tlsfront::hsload
