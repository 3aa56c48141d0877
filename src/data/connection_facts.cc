// Connection: what it knows about its client (data/connection.h): the
// PROXY protocol header that names it on a proxy_protocol listener
// (ProxyHeader state), and the ConnectionInfo its sessions get (address,
// listener, TLS facts).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>

#include <array>

#include "data/connection.h"
#include "data/client_admission.h"
#include "data/worker.h"
#include "log/log.h"
#include "message/proxy_protocol.h"
#include "tls/ticket_key_ring.h"
#include "tls/tls_context.h"

namespace tlsfront::data {
namespace {

// The kernel's smoothed RTT of the connection (TCP_INFO tcpi_rtt, in µs)
// in ms; -1 when it cannot be read (the handle closed, as for local_port).
double kernel_rtt_ms(uv_tcp_t* tcp) {
  uv_os_fd_t fd = -1;
  if (tcp == nullptr || uv_fileno(reinterpret_cast<uv_handle_t*>(tcp), &fd) != 0) return -1;
  tcp_info ti{};
  socklen_t len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return -1;
  return ti.tcpi_rtt / 1000.0;
}

// The local port the client connected to ($server_port); 0 once the handle
// is closed (a TunnelSession's line written as its connection goes).
uint16_t local_port(uv_tcp_t* tcp) {
  if (tcp == nullptr) return 0;
  sockaddr_storage ss{};
  int len = sizeof(ss);
  if (uv_tcp_getsockname(tcp, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

}  // namespace

bool Connection::read_proxy_header(std::string_view& in) {
  in.remove_prefix(proxy_->feed(in));
  if (proxy_->failed()) {
    using F = http::ProxyHeaderReader::Failure;
    const F f = proxy_->failure();
    refuse_proxy(f == F::NotProxy  ? metrics::ProxyRefusal::NotProxy
                 : f == F::TooLong ? metrics::ProxyRefusal::TooLong
                                   : metrics::ProxyRefusal::Malformed,
                 proxy_->reason());
    return false;
  }
  if (!proxy_->done()) return false;
  const http::ProxyHeader& h = proxy_->header();
  const auto kind = h.version == 1 ? metrics::ProxyHeaderKind::V1
                    : h.local      ? metrics::ProxyHeaderKind::V2Local
                                   : metrics::ProxyHeaderKind::V2;
  worker_.counters().proxy_headers[static_cast<size_t>(kind)].add();
  if (h.source) {
    std::array<char, 46> buf;
    const std::string_view source = h.source->format(buf);
    if (source != remote_addr_) peer_addr_ = std::move(remote_addr_);
    remote_addr_.assign(source);
    remote_port_ = h.source_port;
  }
  log::debug("conn={} PROXY v{} {}: client {}:{} via {}{}{}{}{}", id_, h.version, h.local ? "LOCAL" : "PROXY",
             remote_addr_, remote_port_, peer_addr_.empty() ? remote_addr_ : peer_addr_,
             h.tlvs.alpn.empty() ? "" : " alpn=", h.tlvs.alpn, h.tlvs.authority.empty() ? "" : " authority=",
             h.tlvs.authority);
  if (!h.tlvs.empty()) proxy_tlvs_ = std::make_shared<const http::ProxyTlvs>(h.tlvs);
  proxy_.reset();
  if (!admit_client()) return false;
  if (listener_->tls) {
    if (!attach_handshake_budget()) return false;
    transition(state_, State::Handshake);
    return true;
  }
  transition(state_, State::Open);
  stop_timer();
  open_session(connection_facts(), false);
  return true;
}

bool Connection::admit_client() {
  const uint64_t per_client = generation_->gen->config.limits.max_connections_per_client;
  const bool rules = listener_ != nullptr && !listener_->access.empty();
  if (!rules && per_client == 0) return true;
  const auto ip = IpAddress::parse(remote_addr_);
  auto refuse = [&](metrics::ConnectionRefusal reason) {
    worker_.report_connection_refusal(reason, remote_addr_, remote_port_);
    finish_close();
    return false;
  };
  if (rules && (!ip || !config::access_allows(listener_->access, *ip))) {
    return refuse(metrics::ConnectionRefusal::Access);
  }
  if (per_client == 0 || !ip) return true;
  std::string key(reinterpret_cast<const char*>(ip->octets.data()), ip->size());
  if (client_connections()->acquire(key, per_client) != ConcurrencyTable::Acquire::Ok) {
    return refuse(metrics::ConnectionRefusal::PerClient);
  }
  client_slot_ = std::make_unique<ConcurrencySlot>(client_connections(), std::move(key));
  return true;
}

bool Connection::attach_handshake_budget() {
  const uint64_t n = generation_->gen->config.limits.max_full_handshakes_per_client;
  if (n == 0) return true;
  const auto ip = IpAddress::parse(remote_addr_);
  if (!ip) return true;
  budget_ = std::make_unique<tls::HandshakeBudget>(
      std::string(reinterpret_cast<const char*>(ip->octets.data()), ip->size()), n);
  if (budget_->exhausted()) {
    // Its ClientHello would be refused: nothing of it is read.
    worker_.report_connection_refusal(metrics::ConnectionRefusal::HandshakeRate, remote_addr_, remote_port_);
    finish_close();
    return false;
  }
  if (!budget_->attach(stream_->tls_stream().ssl())) budget_.reset();
  return true;
}

void Connection::refuse_proxy(metrics::ProxyRefusal reason, std::string_view why) {
  worker_.report_proxy_refusal(reason, remote_addr_, remote_port_, why);
  finish_close();
}

http::ConnectionInfo Connection::base_info() const {
  http::ConnectionInfo info;
  info.id = id_;
  info.listener = listener_;
  info.remote_addr = remote_addr_;
  info.peer_addr = peer_addr_;
  info.proxy_tlvs = proxy_tlvs_;
  info.remote_port = remote_port_;
  info.set_server_port(local_port(tcp_.get()));
  info.rtt_ms = kernel_rtt_ms(tcp_.get());
  info.trust_request_id = listener_ != nullptr && listener_->trust_request_id;
  return info;
}

http::ConnectionInfo Connection::connection_facts() const {
  if (stream_ && stream_->is_tls()) return tls_info();
  http::ConnectionInfo info = base_info();
  info.scheme = http::Scheme::Http;
  info.ssl_resumption = "";
  return info;
}

http::ConnectionInfo Connection::tls_info() const {
  SSL* ssl = stream_->tls_stream().ssl();
  http::ConnectionInfo info = base_info();
  if (const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)) info.sni = sni;
  const unsigned char* alpn = nullptr;
  unsigned int alpn_len = 0;
  SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
  // A listener offers only these two (config::parse_alpn).
  const std::string_view selected(reinterpret_cast<const char*>(alpn), alpn ? alpn_len : 0);
  info.alpn = selected == "h2" ? "h2" : selected == "http/1.1" ? "http/1.1" : "";
  info.ssl_protocol = SSL_get_version(ssl);
  info.ssl_cipher = SSL_get_cipher_name(ssl);
  info.ssl_session_reused = SSL_session_reused(ssl) == 1;
  const bool ticket = info.ssl_session_reused && tls::resumed_with_ticket(ssl);
  info.ssl_resumption = !info.ssl_session_reused ? "none" : ticket ? "ticket" : "cache";
  info.client_cert = tls::ClientIdentity::of(ssl);
  info.tls_context = SSL_get_SSL_CTX(ssl);
  return info;
}

}  // namespace tlsfront::data
