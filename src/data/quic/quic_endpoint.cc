#include "data/quic/quic_endpoint.h"

#include <gnutls/crypto.h>
#include <netinet/udp.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "data/quic/quic_connection.h"
#include "log/log.h"
#include "util/loop_context.h"

namespace tlsfront::quic {
namespace {

constexpr size_t kDatagramBuffer = 64 * 1024;
constexpr size_t kShortDcidLen = 18;  // the IDs we issue (QuicConnection's kCidLen)

std::string cid_key(const uint8_t* data, size_t len) { return std::string(reinterpret_cast<const char*>(data), len); }

}  // namespace

QuicEndpoint::QuicEndpoint(uv_loop_t* loop, int worker_index, int workers, config::Endpoint address, PolicyFn policy,
                           LeaseFn lease, metrics::WorkerCounters* counters)
    : loop_(loop),
      worker_index_(static_cast<uint8_t>(worker_index)),
      workers_(static_cast<uint8_t>(workers < 1 ? 1 : workers)),
      address_(std::move(address)),
      policy_(std::move(policy)),
      lease_(std::move(lease)),
      counters_(counters),
      anti_replay_([this](std::string_view binder) { return reading_ && reading_->claim_early_data(binder); }),
      buffer_(new uint8_t[kDatagramBuffer]),
      batch_(new uint8_t[kBatchBytes]) {}

QuicEndpoint::~QuicEndpoint() { close(); }

Status QuicEndpoint::open(UniqueFd fd) {
  fd_ = std::move(fd);
  socklen_t len = sizeof local_;
  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&local_), &len);
  local_len_ = len;
  // UDP GRO (Linux 5.0+): a read may carry several datagrams of one sender.
  const int on = 1;
  (void)::setsockopt(fd_.get(), SOL_UDP, UDP_GRO, &on, sizeof on);  // refused (older kernels): a datagram a read
  int rc = poll_.init([&](uv_poll_t* h) { return uv_poll_init(loop_, h, fd_.get()); }, this);
  if (rc == 0) {
    rc = uv_poll_start(poll_.get(), UV_READABLE, [](uv_poll_t* h, int status, int) {
      if (auto* self = static_cast<QuicEndpoint*>(h->data); self != nullptr && status == 0) self->on_readable();
    });
  }
  if (rc != 0) return make_error(Errc::Io, fmt::format("QUIC on {}: {}", address_.to_string(), uv_strerror(rc)));
  const uint64_t step_ms = std::chrono::milliseconds(AntiReplayWindows::kStep).count();
  if (anti_replay_timer_.init([&](uv_timer_t* t) { return uv_timer_init(loop_, t); }, this) == 0) {
    uv_timer_start(
        anti_replay_timer_.get(), [](uv_timer_t* t) { static_cast<QuicEndpoint*>(t->data)->anti_replay_.rotate(); },
        step_ms, step_ms);
    uv_unref(reinterpret_cast<uv_handle_t*>(anti_replay_timer_.get()));
  }
  return {};
}

void QuicEndpoint::read(QuicConnection* conn, const sockaddr* from, socklen_t fromlen, const uint8_t* data,
                        size_t len) {
  reading_ = conn;
  conn->on_datagram(from, fromlen, data, len);
  reading_ = nullptr;
}

void QuicEndpoint::on_readable() {
  sockaddr_storage from{};
  iovec iov{buffer_.get(), kDatagramBuffer};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  for (int reads = 0; reads < kReadsPerWake && !closed_; ++reads) {
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: all read (an ICMP error of an earlier send: nothing to do either)
    if (counters_) counters_->quic_receive_calls.add();
    if (n == 0 || (msg.msg_flags & MSG_TRUNC) != 0) continue;  // nothing, or cut: dropped
    size_t segment = static_cast<size_t>(n);
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
        int size = 0;
        std::memcpy(&size, CMSG_DATA(cm), sizeof size);
        if (size > 0) segment = static_cast<size_t>(size);
      }
    }
    const auto* sender = reinterpret_cast<const sockaddr*>(&from);
    for (size_t at = 0; at < static_cast<size_t>(n) && !closed_; at += segment) {
      if (counters_) counters_->quic_datagrams_received.add();
      on_datagram(sender, buffer_.get() + at, std::min(segment, static_cast<size_t>(n) - at));
    }
  }
}

void QuicEndpoint::on_datagram(const sockaddr* from, const uint8_t* data, size_t len) {
  ngtcp2_version_cid vc;
  const int rv = ngtcp2_pkt_decode_version_cid(&vc, data, len, kShortDcidLen);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    send_version_negotiation(from, vc);
    return;
  }
  if (rv != 0) return;  // not QUIC: dropped
  const socklen_t fromlen = from->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  auto it = by_cid_.find(cid_key(vc.dcid, vc.dcidlen));
  if (it != by_cid_.end()) {
    read(it->second, from, fromlen, data, len);
    return;
  }
  if ((data[0] & 0x80) == 0) {  // a short header: a connection we do not have
    send_stateless_reset(vc, from, len);
    return;
  }
  accept(from, data, len);
}

void QuicEndpoint::send_stateless_reset(const ngtcp2_version_cid& vc, const sockaddr* to, size_t received) {
  // RFC 9000 §10.3: smaller than the packet it answers (so that two
  // endpoints cannot loop), at least 21 octets (so that it looks like a
  // short-header packet); never for a packet too small to allow both.
  constexpr size_t kMinReset = 1 + NGTCP2_MIN_STATELESS_RESET_RANDLEN + NGTCP2_STATELESS_RESET_TOKENLEN;
  if (closed_ || received <= kMinReset + 1 || vc.dcidlen != kShortDcidLen) return;
  const uint64_t second = uv_now(loop_) / 1000;
  if (second != resets_second_) {
    resets_second_ = second;
    resets_sent_ = 0;
  }
  if (resets_sent_ >= kMaxResetsPerSecond) return;
  std::optional<Policy> policy = policy_();
  if (!policy || !policy->credentials) return;
  ngtcp2_cid cid;
  ngtcp2_cid_init(&cid, vc.dcid, vc.dcidlen);
  uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN];
  if (!tokens_.reset_token(policy->credentials->ticket_keys(), cid, token)) return;
  // As long as a short-header packet could be, up to one octet less than
  // what arrived (and no more than 43 random octets, as ngtcp2's examples).
  const size_t randlen = std::min<size_t>(received - 1 - NGTCP2_STATELESS_RESET_TOKENLEN - 1, 43);
  uint8_t rand[43];
  gnutls_rnd(GNUTLS_RND_NONCE, rand, randlen);
  uint8_t buf[64];
  const ngtcp2_ssize n = ngtcp2_pkt_write_stateless_reset(buf, sizeof buf, token, rand, randlen);
  if (n <= 0) return;
  ++resets_sent_;
  if (counters_) counters_->quic_stateless_resets.add();
  send(to, buf, static_cast<size_t>(n));
}

void QuicEndpoint::send_retry(const Policy& policy, const ngtcp2_pkt_hd& hd, const sockaddr* from, socklen_t fromlen) {
  ngtcp2_cid scid;  // the ID the client's next Initial names: steered to this worker
  new_cid(&scid, nullptr, kShortDcidLen, nullptr);
  uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  const ngtcp2_ssize n =
      tokens_.write_retry(policy.credentials->ticket_keys(), buf, sizeof buf, hd, scid, from, fromlen);
  if (n <= 0) return;
  if (counters_) counters_->quic_retries.add();
  send(from, buf, static_cast<size_t>(n));
}

void QuicEndpoint::accept(const sockaddr* from, const uint8_t* data, size_t len) {
  if (closed_ || shutting_down_) return;
  ngtcp2_pkt_hd hd;
  if (ngtcp2_accept(&hd, data, len) != 0) return;  // not a client's first Initial
  std::optional<Policy> policy = policy_();
  if (!policy || !policy->credentials) return;
  const socklen_t fromlen = from->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  const AddressTokens::Check token = tokens_.check(policy->credentials->ticket_keys(), hd, from, fromlen);
  if (token.token == AddressTokens::Token::Invalid) {
    // RFC 9000 §8.1.2: a Retry token that does not verify ends the attempt
    // (dropped: the sender may not own the address it claims).
    if (counters_) counters_->quic_invalid_tokens.add();
    return;
  }
  const bool validated = token.token != AddressTokens::Token::None;
  if (!validated && hd.type == NGTCP2_PKT_INITIAL && (policy->retry || handshaking_ >= kRetryAbove)) {
    send_retry(*policy, hd, from, fromlen);
    return;
  }
  if (handshaking_ >= kMaxHandshakes) {
    if (counters_) counters_->quic_initials_dropped.add();
    return;
  }
  char name[INET6_ADDRSTRLEN] = {0};
  uint16_t port = 0;
  if (from->sa_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(from);
    uv_ip6_name(a, name, sizeof name);
    port = ntohs(a->sin6_port);
  } else {
    const auto* a = reinterpret_cast<const sockaddr_in*>(from);
    uv_ip4_name(a, name, sizeof name);
    port = ntohs(a->sin_port);
  }
  std::optional<Lease> lease = lease_(name, port);
  if (!lease) return;
  lease->client_addr = name;
  lease->client_port = port;
  auto conn = std::make_unique<QuicConnection>(*this, std::move(*lease));
  if (auto st = conn->accept(hd, from, fromlen, validated,
                             token.token == AddressTokens::Token::Retry ? &token.odcid : nullptr);
      !st) {
    log::warn("QUIC on {}: {}", address_.to_string(), st.error().message());
    for (auto i = by_cid_.begin(); i != by_cid_.end();) i = i->second == conn.get() ? by_cid_.erase(i) : std::next(i);
    return;
  }
  QuicConnection* raw = conn.get();
  connections_.emplace(raw, std::move(conn));
  ++handshaking_;
  if (counters_) counters_->quic_opened.add();
  read(raw, from, fromlen, data, len);
}

void QuicEndpoint::send_version_negotiation(const sockaddr* to, const ngtcp2_version_cid& vc) {
  uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  uint8_t unused = 0;
  gnutls_rnd(GNUTLS_RND_NONCE, &unused, 1);
  const uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  const ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(buf, sizeof buf, unused, vc.scid, vc.scidlen, vc.dcid,
                                                              vc.dcidlen, versions, 1);
  if (n > 0) send(to, buf, static_cast<size_t>(n));
}

void QuicEndpoint::new_cid(ngtcp2_cid* cid, uint8_t* token, size_t len, const tls::TicketKeyStore* keys) {
  gnutls_rnd(GNUTLS_RND_NONCE, cid->data, len);
  cid->datalen = len;
  // The first octet names this worker modulo the worker count (the
  // reuseport program steers by it).
  // (256 / workers as an int: with one worker it is 256, which an octet
  // cannot hold.)
  const unsigned slots = 256u / workers_;
  cid->data[0] = static_cast<uint8_t>(worker_index_ + workers_ * (cid->data[0] % slots));
  if (token) tokens_.reset_token(keys, *cid, token);
}

void QuicEndpoint::add_cid(const ngtcp2_cid& cid, QuicConnection* conn) {
  by_cid_[cid_key(cid.data, cid.datalen)] = conn;
}

void QuicEndpoint::remove_cid(const ngtcp2_cid& cid) { by_cid_.erase(cid_key(cid.data, cid.datalen)); }

void QuicEndpoint::send(const sockaddr* to, const uint8_t* data, size_t len) {
  if (closed_) return;
  const socklen_t tolen = to->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  ssize_t rv;
  do {
    rv = ::sendto(fd_.get(), data, len, MSG_DONTWAIT, to, tolen);  // EAGAIN: dropped, QUIC resends (see the header)
  } while (rv < 0 && errno == EINTR);
  if (rv >= 0 && counters_) {
    counters_->quic_send_calls.add();
    counters_->quic_datagrams_sent.add();
  }
}

void QuicEndpoint::send_segments(const sockaddr* to, const uint8_t* data, size_t len, size_t segment) {
  if (closed_ || len == 0) return;
  if (gso_ && len > segment) {
    iovec iov{const_cast<uint8_t*>(data), len};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
    msghdr msg{};
    msg.msg_name = const_cast<sockaddr*>(to);
    msg.msg_namelen = to->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    const uint16_t size = static_cast<uint16_t>(segment);
    std::memcpy(CMSG_DATA(cm), &size, sizeof size);
    ssize_t rv;
    do {
      rv = ::sendmsg(fd_.get(), &msg, MSG_DONTWAIT);
    } while (rv < 0 && errno == EINTR);
    if (rv >= 0 || errno == EAGAIN || errno == EWOULDBLOCK) {  // EAGAIN: dropped, as send()
      if (rv >= 0 && counters_) {
        counters_->quic_send_calls.add();
        counters_->quic_datagrams_sent.add((len + segment - 1) / segment);
      }
      return;
    }
    if (errno != EIO && errno != EINVAL && errno != EOPNOTSUPP) return;
    gso_ = false;  // no GSO here (a kernel or device without it): one send per datagram from now on
    log::info("QUIC on {}: UDP GSO refused ({}), sending datagrams one by one", address_.to_string(),
              std::strerror(errno));
  }
  for (size_t at = 0; at < len; at += segment) send(to, data + at, std::min(segment, len - at));
}

void QuicEndpoint::retire(QuicConnection* conn) {
  for (auto i = by_cid_.begin(); i != by_cid_.end();) i = i->second == conn ? by_cid_.erase(i) : std::next(i);
  auto it = connections_.find(conn);
  if (it == connections_.end()) return;
  if (!conn->handshake_done()) on_handshake_done();
  if (counters_) counters_->quic_closed.add();
  LoopContext::of(loop_).defer_delete(std::move(it->second));
  connections_.erase(it);
  if (shutting_down_ && connections_.empty() && drained_) drained_();
}

void QuicEndpoint::shutdown(std::function<void()> drained) {
  shutting_down_ = true;
  drained_ = std::move(drained);
  if (connections_.empty() && drained_) {
    drained_();
    return;
  }
  std::vector<QuicConnection*> all;
  for (auto& [c, owned] : connections_) all.push_back(c);
  for (QuicConnection* c : all) c->shutdown();
}

void QuicEndpoint::close() {
  if (closed_) return;
  closed_ = true;
  std::vector<QuicConnection*> all;
  for (auto& [c, owned] : connections_) all.push_back(c);
  for (QuicConnection* c : all) c->close_now();
  poll_.close();  // stops polling at once: the descriptor may close now
  fd_.reset();
  anti_replay_timer_.close();
}

}  // namespace tlsfront::quic
