// Connection: owns one accepted client TCP connection for its whole life:
// the socket, its byte layer (ClientStream: TLS, or cleartext on a
// `tls = false` listener), the HTTP session, one timer, and the Generation
// it was accepted under. Lifecycle: Handshake -> Open -> Closing ->
// [Lingering ->] Closed; a cleartext connection starts in Open (State
// below; data/CONNECTION.md has the picture). Only its own libuv callbacks
// decide when it ends; close() is idempotent and the object is freed by the
// worker's deferred delete after the current callback returns. With
// [tls] early_data, a handshake whose 0-RTT data is accepted passes through
// Early: the session starts on the early data before the client's Finished.
// On a [[listen]] with proxy_protocol it starts in ProxyHeader: a peer
// outside proxy_protocol_from is closed in accept(); the PROXY protocol
// header (message/proxy_protocol.h) is read before any TLS or HTTP byte,
// within timeouts.handshake (the same deadline then covers the handshake),
// and its source address and port become remote_addr/remote_port (the TCP
// peer's address goes to ConnectionInfo::peer_addr). A connection whose
// first bytes are not a valid header is closed, never read as TLS, and
// reported to the worker (Worker::report_proxy_refusal: counted, logged).
// Once the client address is known (at accept, or after the PROXY header)
// and before any TLS byte is read, admit_client() applies the listener's
// access rules and [limits] max_connections_per_client
// (data/client_admission.h): a refused connection is closed at once
// (Worker::report_connection_refusal), never entering Handshake.
// Thread affinity: owning worker only.
#pragma once

#include <uv.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "data/client_stream.h"
#include "data/generation.h"
#include "data/http/client_session.h"
#include "data/http/client_transport.h"
#include "metrics/counters.h"
#include "tls/early_data_gate.h"
#include "tls/handshake_budget.h"
#include "util/concurrency_table.h"
#include "tls/session_lookup.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"
#include "util/state.h"
#include "util/stream_writer.h"
#include "util/unique_fd.h"
#include "util/uv_handle.h"

namespace tlsfront::http {
class ProxyHeaderReader;
}

namespace tlsfront::data {

class Worker;
struct WorkerGeneration;

class Connection final : public Deletable, public Flushable, public http::ClientTransport {
 public:
  Connection(Worker& worker, std::shared_ptr<const WorkerGeneration> generation, uint64_t id);
  ~Connection() override;

  // Takes the accepted socket `fd` (non-blocking) and starts the handshake,
  // or on a cleartext listener the HTTP/1.1 session at once. `address` names
  // the [[listen]] entry it came from, whose settings (in this connection's
  // generation: tls, alpn, trust_request_id, ...) apply; null or unknown: a
  // TLS listener's defaults. Errors: Errc::Io, Errc::Tls.
  [[nodiscard]] Status accept(UniqueFd fd, const config::Endpoint* address);

  // Worker shutdown: close when idle, else after the response in flight.
  void shutdown();
  // Closes at once without close_notify (drain deadline passed).
  void abort();
  // At a resource limit: closes if idle between requests
  // (ClientSession::close_if_idle); true if it did.
  bool close_if_idle();
  // The first state: ProxyHeader on a proxy_protocol listener; else
  // Handshake on a TLS listener; Open on a cleartext one, which has no
  // handshake (the session starts in accept()).
  // ProxyHeader -> Handshake (header read, TLS listener) | Open (header
  //              read, cleartext listener: the session starts) | Closed
  //              (no valid header, timeout, reset: nothing is sent).
  // Handshake -> Open (handshake done) | Early (the client's early data
  //              accepted) | Closing (TLS error: the alert is flushed) |
  //              Closed (timeout, reset)
  // Early     -> Open (handshake done) | Closing | Closed (as Handshake).
  //              The session runs on the early data (ConnectionInfo::
  //              early_data) and its output goes out as 0.5-RTT data; the
  //              handshake deadline (timeouts.handshake) still holds, on the
  //              one timer beside the session's.
  // Open      -> Closing (close()) | Closed (write error, abort)
  // Closing   -> Lingering (output written: FIN sent, input read and dropped
  //              until the client closes, at most kLingerTimeout and
  //              kLingerMaxBytes) | Closed
  //              (nothing more can come from the client, or timeouts.send)
  // Lingering -> Closed
  enum class State : uint8_t { ProxyHeader, Handshake, Early, Open, Closing, Lingering, Closed };

  bool closed() const { return state_ == State::Closed; }

  // ClientTransport
  void send(std::string_view plaintext) override;
  size_t buffered_output() const override;
  void close(bool notify) override;
  void arm_timer(std::chrono::milliseconds ms) override;
  void stop_timer() override;
  void resume_input() override;
  void release_buffers() override;
  void client_done() override { client_done_ = true; }
  void replace_session(std::unique_ptr<http::ClientSession> next) override;
  http::ConnectionInfo connection_facts() const override;

  // Flushable: encrypts queued plaintext (TLS) and writes the result.
  void flush() override;

 private:
  void on_read(ssize_t nread, const uv_buf_t* buf);
  void on_write_done(int status);
  void on_timer();
  void on_handshake_done();
  // The client's early data was accepted: the session starts on it.
  void on_early_data();
  // ConnectionInfo with the TLS facts of the handshake so far.
  http::ConnectionInfo tls_info() const;
  // The handshake ended (done or failed): early-data counters.
  void count_early_data();
  // True while the client hello callback waits for the shared store.
  bool client_hello_paused() const;
  // The facts every session gets, TLS or not.
  http::ConnectionInfo base_info() const;
  // Open: the session starts (HTTP/2 after ALPN h2, else HTTP/1.1).
  void open_session(http::ConnectionInfo info, bool h2);
  // Advances the TLS handshake; true once it is done and the session open.
  // Closes the connection on a handshake error.
  bool advance_handshake();
  // The shared-store session lookup or replay check ended: go on with the
  // paused handshake.
  void on_client_hello_resumed();
  void pump();
  // Moves queued plaintext into the stream's output (encrypted over TLS);
  // false if the connection died.
  bool encrypt_pending();
  void update_reading();
  void start_linger();
  void finish_close();
  bool closing() const { return state_ == State::Closing || state_ == State::Lingering || state_ == State::Closed; }
  void count_handshake_failure(metrics::HandshakeFailure reason);
  void count_client_hello();
  // ProxyHeader: feeds `in` to the reader; on Done applies the header,
  // moves on (Handshake or Open) and leaves in `in` what follows the header;
  // false while more is needed or when the connection was closed.
  bool read_proxy_header(std::string_view& in);
  // Closes a connection on a proxy_protocol listener that sent no valid header.
  void refuse_proxy(metrics::ProxyRefusal reason, std::string_view why);
  // The checks of the client address (see the class comment); false when
  // the connection was refused (and closed).
  bool admit_client();
  // [limits] max_full_handshakes_per_client: the client's budget on the SSL
  // (tls/handshake_budget.h); an address whose budget is spent already is
  // refused at once, before its ClientHello is read (false: closed).
  bool attach_handshake_budget();

  Worker& worker_;
  // Before session_: the upstream groups the session's exchanges use outlive it.
  std::shared_ptr<const WorkerGeneration> generation_;
  uint64_t id_;
  UvHandle<uv_tcp_t> tcp_;
  LazyTimer timer_;
  StreamWriter writer_;
  // Before stream_: the SSL borrows it through ex_data, so it must die after the SSL.
  std::shared_ptr<tls::SessionLookup> lookup_;
  std::shared_ptr<tls::EarlyDataGate> gate_;  // with [tls] early_data only
  std::unique_ptr<tls::HandshakeBudget> budget_;  // with [limits] max_full_handshakes_per_client only
  std::unique_ptr<ConcurrencySlot> client_slot_;  // with [limits] max_connections_per_client only
  std::optional<ClientStream> stream_;  // set by accept()
  std::unique_ptr<http::ProxyHeaderReader> proxy_;  // in ProxyHeader only
  std::unique_ptr<http::ClientSession> session_;
  std::string plaintext_out_;
  bool reading_ = false;
  bool release_pending_ = false;  // release_buffers() once the output is written
  bool write_failed_ = false;     // send() could not encrypt: flush() closes
  bool client_done_ = false;  // EOF, close_notify, or the session said no more input comes
  bool notify_on_close_ = false;
  bool handshake_failure_counted_ = false;  // count_handshake_failure() once per connection
  State state_ = State::Handshake;
  uint16_t remote_port_ = 0;
  uint32_t lingered_bytes_ = 0;  // input discarded while Lingering (bounded in the .cc)
  // (The small fields above fill two words: the object stays within 512
  // octets, an allocator size class it would otherwise exceed.)
  uv_shutdown_t* shutdown_req_ = nullptr;
  std::string remote_addr_;
  std::string peer_addr_;  // the TCP peer, when a PROXY protocol header named another address
  std::shared_ptr<const http::ProxyTlvs> proxy_tlvs_;  // the PROXY v2 header's TLVs, when it had any
  const config::Listener* listener_ = nullptr;  // its [[listen]] entry (in generation_); null: TLS defaults
  std::chrono::steady_clock::time_point accepted_at_;
  // In the loop's clock (ms): when the handshake must be done (accept +
  // timeouts.handshake), and in Early when the session's own timer is due
  // (UINT64_MAX: not armed).
  uint64_t handshake_due_ = 0;
  uint64_t session_due_ = UINT64_MAX;
};
// Every idle keepalive connection holds one: 512 octets is an allocator
// size class (mimalloc's), one more octet costs 128.
static_assert(sizeof(Connection) <= 512, "Connection outgrew 512 octets: see the note on the small fields");

// The transition table (util/state.h).
constexpr bool legal(Connection::State from, Connection::State to) {
  using S = Connection::State;
  switch (from) {
    case S::ProxyHeader: return to == S::Handshake || to == S::Open || to == S::Closed;
    case S::Handshake: return to == S::Early || to == S::Open || to == S::Closing || to == S::Closed;
    case S::Early: return to == S::Open || to == S::Closing || to == S::Closed;
    case S::Open: return to == S::Closing || to == S::Closed;
    case S::Closing: return to == S::Lingering || to == S::Closed;
    case S::Lingering: return to == S::Closed;
    case S::Closed: return false;
  }
  return false;
}
constexpr const char* name(Connection::State s) {
  constexpr const char* names[] = {"ProxyHeader", "Handshake", "Early", "Open", "Closing", "Lingering", "Closed"};
  return names[static_cast<int>(s)];
}

}  // namespace tlsfront::data
