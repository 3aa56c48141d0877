// ExchangeSink: the one interface through which an Exchange talks back to
// the client side: a RequestStream (data/http/request_stream.h), the same for
// every client codec, so upstream code is written once for all. ConnectionInfo: what a session knows about its client
// connection, for the access log.
// Thread affinity: owning worker only.
#pragma once

#include <charconv>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "message/proxy_protocol.h"
#include "message/request.h"
#include "tls/client_certificate.h"

namespace tlsfront::http {

// The scheme of the listener a connection came in on ($scheme).
enum class Scheme : uint8_t { Https, Http };
constexpr std::string_view scheme_name(Scheme s) { return s == Scheme::Https ? "https" : "http"; }

// A connection's facts, for its sessions' access-log lines, header variables
// and admission. Its fields are ordered so the small ones share one word
// (240 octets): every open session and tunnel holds one.
struct ConnectionInfo {
  uint64_t id = 0;
  // The [[listen]] entry it came from (in the connection's generation, which
  // outlives the session); null in unit tests: a TLS listener's defaults.
  const config::Listener* listener = nullptr;
  // The client's address: the PROXY protocol header's source on a
  // proxy_protocol listener, else the TCP peer's (a request's own may differ:
  // RequestRecord::client_addr).
  std::string remote_addr;
  // The TCP peer's address when a PROXY protocol header named another
  // client; "" otherwise (then it is remote_addr).
  std::string peer_addr;
  // The TLS facts; "" (false) on a cleartext connection. The views are of
  // static strings (literals, OpenSSL's version and cipher tables), so a
  // session that lives for hours keeps no copy of them.
  std::string sni;
  std::string_view alpn;          // "h2" | "http/1.1" | "" (the only ones a listener offers)
  std::string_view ssl_protocol;  // SSL_get_version: "TLSv1.3"
  std::string_view ssl_cipher;    // SSL_CIPHER_get_name: "TLS_AES_128_GCM_SHA256"
  const char* ssl_resumption = "none";  // "none" | "cache" | "ticket"; "" on cleartext
  // The client certificate's facts ($ssl_client_*, tls/client_certificate.h)
  // when the connection's certificate name asks for one (verify_client);
  // null otherwise. Shared by the connection's sessions.
  std::shared_ptr<const tls::ClientIdentity> client_cert;
  // The PROXY protocol v2 header's ALPN, authority and unique ID TLVs
  // ($proxy_protocol_tlv_*); null when it sent none. Shared likewise.
  std::shared_ptr<const ProxyTlvs> proxy_tlvs;
  // The SSL_CTX the handshake was made under (the SNI's); null on cleartext.
  const SSL_CTX* tls_context = nullptr;
  double tls_handshake_ms = 0;
  // Smoothed RTT of the client connection when its session began (TCP:
  // TCP_INFO; QUIC: ngtcp2's estimate), ms; < 0: unknown.
  double rtt_ms = -1;
  bool migrated = false;  // QUIC: the client's address changed (RFC 9000 §9)
  uint64_t requests = 0;  // requests started on this connection so far
  uint16_t remote_port = 0;
  // The local port in decimal, NUL-terminated ($server_port): set_server_port().
  char server_port[6] = {};
  Scheme scheme = Scheme::Https;
  bool trust_request_id = false;  // the listener's trust_request_id
  bool ssl_session_reused = false;
  // The connection is in TLS early data (0-RTT, RFC 8446 §2.3): the client's
  // early data was accepted and its Finished has not arrived, so what it sent
  // so far may be a replay (RFC 8470). Cleared by
  // ClientSession::on_handshake_done().
  bool early_data = false;

  void set_server_port(uint16_t port) {
    const auto end = std::to_chars(server_port, server_port + sizeof server_port - 1, port).ptr;
    *end = '\0';
  }
};

class ExchangeSink {
 public:
  virtual ~ExchangeSink() = default;
  // A 1xx interim response other than 101 (RFC 9110 §15.2); hop-by-hop
  // headers already removed.
  virtual void send_informational(const ResponseHead& head) = 0;
  // The final response head; hop-by-hop headers are already removed, framing
  // is the sink's to choose from head.content_length / `has_body` (and
  // head.trailers_may_follow: an HTTP/1.1 client asking for trailers then
  // needs a chunked body). The sink takes the head: it may keep its
  // fields until they are sent.
  virtual void send_response_head(ResponseHead&& head, bool has_body) = 0;
  // The upstream's 101 (RFC 9110 §15.2.2) to a request that asked to
  // upgrade to `protocol` (lowercase; RequestHead::upgrade), hop-by-hop
  // fields removed. From here on send_response_body() carries the
  // tunnel's bytes from the upstream, end_response() is the upstream's
  // close, fail_response(0) its reset; the client's bytes go up through
  // ProxyExchange::on_tunnel_data().
  virtual void open_tunnel(const ResponseHead& head, std::string_view protocol) = 0;
  // Response body bytes (decoded from upstream framing); valid during the call.
  virtual void send_response_body(std::string_view data) = 0;
  // The response's trailer fields (RFC 9110 §6.5), valid names and values,
  // hop-by-hop and framing fields removed; just before end_response(). The
  // default drops them; an HTTP/1.1 session sends them in the last chunk
  // when the request's TE asked for trailers.
  virtual void send_trailers(const std::vector<Header>& trailers) {}
  virtual void end_response() = 0;
  // The exchange failed. Before the head was sent the sink answers `status`
  // (502 or 504); after it, the sink must abort the client stream.
  virtual void fail_response(int status, std::string_view reason) = 0;
  // True while the client side holds more than its high watermark; the
  // exchange stops reading the upstream until on_output_drained().
  virtual bool output_congested() const = 0;
  // The upstream write queue drained: the sink may read request body again.
  virtual void on_request_body_writable() = 0;
  virtual const ConnectionInfo& connection_info() const = 0;
};

}  // namespace tlsfront::http
