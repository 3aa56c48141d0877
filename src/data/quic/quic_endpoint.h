// QuicEndpoint: one worker's UDP socket of a [[listen]] entry with quic =
// true, and the QUIC connections (QuicConnection) that arrived on it. Each
// worker has its own socket on the same address and port (SO_REUSEPORT);
// the group's classic BPF program (control/quic_socket.h) sends a datagram
// to the worker its Destination Connection ID names: the connection IDs a
// worker issues carry its index in their first octet (modulo the worker
// count), so the packets of a connection reach its owner also after the
// client's address changed (RFC 9000 §9, migration); a new client's
// Initial, whose DCID the client chose at random, lands on the worker its
// first octet names, and so do its retransmissions.
//
// At most kMaxHandshakes connections of an endpoint are in their handshake
// at a time: a flood of Initials (spoofed sources cost the sender nothing)
// is dropped beyond it instead of holding a TLS session each for
// timeouts.handshake (under load, Retry makes new clients prove their
// address first: below).
// Datagrams: read with recvmsg into one 64 KiB buffer per endpoint, at most
// kReadsPerWake reads each time the socket is readable (then the loop's
// other work goes first); with UDP GRO (Linux 5.0+) one read may carry
// several datagrams of one sender, split at the segment size the kernel
// reports (UDP_GRO control message): a burst of a client's packets costs one
// system call. A DCID no connection owns is a new connection when it is an
// acceptable Initial (ngtcp2_accept); a Version Negotiation (RFC 9000 §6)
// answers a version other than QUIC v1; a short-header packet gets a
// stateless reset (RFC 9000 §10.3, at most kMaxResetsPerSecond); anything
// else is dropped.
// Address validation (RFC 9000 §8.1, AddressTokens): a client whose Initial
// carries no valid token gets a Retry when the listener says quic_retry or
// more than kRetryAbove handshakes are in progress; every completed
// handshake gets a NEW_TOKEN token for the client's next connection.
// 0-RTT: GnuTLS asks its anti-replay hook while ngtcp2 reads a ClientHello;
// the endpoint hands the claim to the connection being read
// (QuicConnection::claim_early_data).
// Writes are batched per connection, once per loop iteration after the
// datagrams it read (QuicConnection::schedule_write), and sent with UDP GSO
// (send_segments), or with sendto one datagram each; one the
// kernel cannot take now (EAGAIN) is dropped: QUIC's loss recovery sends
// its frames again.
// Thread affinity: the worker's loop.
#pragma once

#include <netinet/in.h>
#include <ngtcp2/ngtcp2.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "config/config.h"
#include "data/http/session_env.h"
#include "data/quic/address_tokens.h"
#include "data/quic/quic_tls.h"
#include "metrics/counters.h"
#include "tls/remote_session_store.h"
#include "util/result.h"
#include "util/unique_fd.h"
#include "util/uv_handle.h"

namespace tlsfront::quic {

class QuicConnection;

class QuicEndpoint {
 public:
  // What a new connection borrows from its worker: the generation's
  // SessionEnv and credentials, held alive by `hold` for the connection's life.
  struct Lease {
    const http::SessionEnv* env = nullptr;
    std::shared_ptr<const void> hold;
    const ServerCredentials* credentials = nullptr;
    const config::Listener* listener = nullptr;  // this endpoint's [[listen]] in that generation
    uint64_t connection_id = 0;                  // the access log's connection ID
    // What the worker's admission holds for the connection's life (its
    // max_connections_per_client slot); may be null.
    std::shared_ptr<void> admission;
    std::string client_addr;  // the client's address as text, and its port
    uint16_t client_port = 0;
    // The worker's shared session store ([tls.session_cache] store =
    // "redis"): 0-RTT ClientHellos are claimed there too; null when none.
    tls::RemoteSessionStore* session_store = nullptr;
  };
  // Asked at each new connection from `client` (its address as text and
  // port); nullopt refuses it (the worker is stopping, the listener's access
  // rules or the worker's limits say no, or the generation has no QUIC
  // credentials): its Initial is dropped.
  using LeaseFn = std::function<std::optional<Lease>(const std::string& client, uint16_t port)>;
  // Asked before a new client's Initial costs any state: the credentials
  // of the current generation (their ticket keys seal the address tokens)
  // and whether this listener demands a Retry (quic_retry); nullopt when
  // the generation has no QUIC credentials.
  struct Policy {
    std::shared_ptr<const ServerCredentials> credentials;
    bool retry = false;
  };
  using PolicyFn = std::function<std::optional<Policy>()>;

  // `worker_index` of `workers`: the first octet of every connection ID this
  // endpoint issues is congruent to it modulo `workers`.
  static constexpr size_t kMaxHandshakes = 1024;
  // Beyond this many handshakes in progress, a new client without a valid
  // token gets a Retry (its address proven before it costs a TLS session).
  static constexpr size_t kRetryAbove = 256;
  // Stateless resets sent per second at most (each answers a datagram for
  // a connection ID no connection owns; smaller than it, RFC 9000 §10.3.3).
  static constexpr uint32_t kMaxResetsPerSecond = 1000;

  // `counters` (may be null) are the worker's.
  QuicEndpoint(uv_loop_t* loop, int worker_index, int workers, config::Endpoint address, PolicyFn policy, LeaseFn lease,
               metrics::WorkerCounters* counters);
  ~QuicEndpoint();
  QuicEndpoint(const QuicEndpoint&) = delete;
  QuicEndpoint& operator=(const QuicEndpoint&) = delete;

  // Adopts the bound UDP socket and starts reading. Errors: Errc::Io.
  [[nodiscard]] Status open(UniqueFd fd);
  const config::Endpoint& address() const { return address_; }
  // Stops reading and closes every connection now (CONNECTION_CLOSE
  // H3_NO_ERROR where the handshake is done). Idempotent.
  void close();
  // Every connection stops taking new requests (GOAWAY) and closes once its
  // requests are answered; new connections are refused. `drained` runs
  // when the last connection is gone (at once when there is none).
  void shutdown(std::function<void()> drained);
  size_t connections() const { return connections_.size(); }

  // For connections.
  uv_loop_t* loop() const { return loop_; }
  // A fresh connection ID of `len` octets naming this worker, and its
  // stateless reset token (NGTCP2_STATELESS_RESET_TOKENLEN octets, unless
  // `token` is null) from `keys` (AddressTokens).
  void new_cid(ngtcp2_cid* cid, uint8_t* token, size_t len, const tls::TicketKeyStore* keys);
  // A NEW_TOKEN token for `remote` (AddressTokens::new_token).
  ngtcp2_ssize new_token(const tls::TicketKeyStore* keys, uint8_t* out, const sockaddr* remote, socklen_t len) {
    return tokens_.new_token(keys, out, remote, len);
  }
  void add_cid(const ngtcp2_cid& cid, QuicConnection* conn);
  void remove_cid(const ngtcp2_cid& cid);
  void send(const sockaddr* to, const uint8_t* data, size_t len);
  // Datagrams of `segment` octets each (the last may be shorter), laid end
  // to end in `data` (`len` octets, at most kBatchBytes), to `to`: one
  // sendmsg with UDP_SEGMENT (UDP GSO, Linux 4.18+) when there are several,
  // else one send each; a kernel that refuses GSO turns it off for the
  // endpoint (logged once).
  void send_segments(const sockaddr* to, const uint8_t* data, size_t len, size_t segment);
  static constexpr size_t kBatchBytes = 60 * 1024;  // GSO: under 64 KiB of UDP payload, < 64 segments
  // The endpoint's buffer for one connection's batch of packets (kBatchBytes
  // octets), used within one QuicConnection::write.
  uint8_t* batch_buffer() { return batch_.get(); }
  // The connection is gone: its IDs leave the table, it is deleted at the
  // end of the loop iteration.
  void retire(QuicConnection* conn);
  // A connection's handshake completed (it no longer counts against kMaxHandshakes).
  void on_handshake_done() {
    if (handshaking_ > 0) --handshaking_;
  }
  const sockaddr* local_addr() const { return reinterpret_cast<const sockaddr*>(&local_); }
  // GnuTLS's anti-replay window for a session starting now (quic_tls.h);
  // its claims go to the connection whose datagram is being read.
  std::shared_ptr<gnutls_anti_replay_st> anti_replay() const { return anti_replay_.for_session(); }
  socklen_t local_addrlen() const { return local_len_; }

 private:
  static constexpr int kReadsPerWake = 32;
  void on_readable();
  void on_datagram(const sockaddr* from, const uint8_t* data, size_t len);
  void accept(const sockaddr* from, const uint8_t* data, size_t len);
  void send_version_negotiation(const sockaddr* to, const ngtcp2_version_cid& vc);
  void send_retry(const Policy& policy, const ngtcp2_pkt_hd& hd, const sockaddr* from, socklen_t fromlen);
  void send_stateless_reset(const ngtcp2_version_cid& vc, const sockaddr* to, size_t received);
  void read(QuicConnection* conn, const sockaddr* from, socklen_t fromlen, const uint8_t* data, size_t len);

  uv_loop_t* loop_;
  uint8_t worker_index_;
  uint8_t workers_;
  config::Endpoint address_;
  PolicyFn policy_;
  LeaseFn lease_;
  metrics::WorkerCounters* counters_;
  UniqueFd fd_;               // the UDP socket (open() on)
  UvHandle<uv_poll_t> poll_;  // readable: on_readable()
  sockaddr_storage local_{};
  socklen_t local_len_ = 0;
  bool closed_ = false;
  bool shutting_down_ = false;
  size_t handshaking_ = 0;
  std::function<void()> drained_;
  AddressTokens tokens_;
  uint64_t resets_second_ = 0;  // the second (uv_now / 1000) resets_sent_ counts in
  uint32_t resets_sent_ = 0;
  AntiReplayWindows anti_replay_;
  UvHandle<uv_timer_t> anti_replay_timer_;  // AntiReplayWindows::rotate every kStep
  QuicConnection* reading_ = nullptr;       // whose datagram ngtcp2 is reading now
  std::unordered_map<std::string, QuicConnection*> by_cid_;
  std::unordered_map<QuicConnection*, std::unique_ptr<QuicConnection>> connections_;
  std::unique_ptr<uint8_t[]> buffer_;
  std::unique_ptr<uint8_t[]> batch_;
  bool gso_ = true;  // until the kernel refuses it
};

}  // namespace tlsfront::quic
