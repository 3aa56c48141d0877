// QuicConnection's write path: its packets out, end to end in one UDP GSO
// batch per destination, once per loop pass (Flushable), and the timer at
// ngtcp2's next expiry that drives retransmission, ACKs and the idle close.
#include <algorithm>

#include "data/quic/http3_stream.h"
#include "data/quic/quic_connection.h"
#include "log/log.h"

namespace tlsfront::quic {
namespace {

constexpr size_t kMaxPacketsPerWrite = 64;

}  // namespace

void QuicConnection::write() {
  if (state_ == State::Closed || !conn_) return;
  // Packets are written end to end into the endpoint's batch buffer and
  // leave together (UDP GSO): one segment size, one destination, a shorter
  // packet ends a batch.
  uint8_t* batch = endpoint_.batch_buffer();
  size_t used = 0, segment = 0;
  sockaddr_storage to{};
  socklen_t tolen = 0;
  auto flush = [&] {
    if (used > 0) endpoint_.send_segments(reinterpret_cast<const sockaddr*>(&to), batch, used, segment);
    used = 0;
  };
  const uint64_t ts = now_ns();
  if (handshake_done_ && probe_hold_ == ProbeHold::Holding && (streams_.empty() || ts >= hold_until_ns_)) {
    transition(probe_hold_, ProbeHold::Over);
  }
  size_t packets = 0;
  while (packets < kMaxPacketsPerWrite) {
    if (used + NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE > QuicEndpoint::kBatchBytes) flush();
    int64_t stream_id = -1;
    int fin = 0;
    nghttp3_vec vec[16];
    nghttp3_ssize veccnt = 0;
    if (h3_ && ngtcp2_conn_get_max_data_left(conn_) > 0) {
      veccnt = nghttp3_conn_writev_stream(h3_, &stream_id, &fin, vec, 16);
      if (veccnt < 0) {
        flush();
        fail(0, nghttp3_err_infer_quic_app_error_code(static_cast<int>(veccnt)), true);
        return;
      }
    }
    ngtcp2_ssize datalen = -1;
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
    if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi{};
    uint8_t* out = batch + used;
    // While the first answers are held ahead of it, no PMTUD probe fits:
    // every probe size is above the path's current maximum.
    const size_t room =
        probe_hold_ == ProbeHold::Over
            ? NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE
            : std::min<size_t>(NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE, ngtcp2_conn_get_path_max_tx_udp_payload_size(conn_));
    size_t total = 0;
    for (nghttp3_ssize i = 0; i < veccnt; ++i) total += vec[i].len;
    const ngtcp2_ssize n =
        ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, out, room, &datalen, flags, stream_id,
                                  reinterpret_cast<const ngtcp2_vec*>(vec), static_cast<size_t>(veccnt), ts);
    if (n < 0) {
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        nghttp3_conn_block_stream(h3_, stream_id);
        continue;
      }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
        nghttp3_conn_shutdown_stream_write(h3_, stream_id);
        continue;
      }
      if (n == NGTCP2_ERR_WRITE_MORE) {
        if (nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(datalen)) != 0) {
          flush();
          fail(NGTCP2_ERR_CALLBACK_FAILURE);
          return;
        }
        note_answer_written(stream_id, datalen, total, fin != 0);
        continue;
      }
      flush();
      fail(static_cast<int>(n));
      return;
    }
    if (datalen >= 0 && stream_id >= 0 &&
        nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(datalen)) != 0) {
      flush();
      fail(NGTCP2_ERR_CALLBACK_FAILURE);
      return;
    }
    if (datalen >= 0 && stream_id >= 0) note_answer_written(stream_id, datalen, total, fin != 0);
    if (n == 0) break;
    const size_t len = static_cast<size_t>(n);
    const sockaddr* remote = ps.path.remote.addr;
    const auto remotelen = static_cast<socklen_t>(ps.path.remote.addrlen);
    if (used > 0 && (len > segment || remotelen != tolen || std::memcmp(remote, &to, tolen) != 0)) {
      // It cannot join the batch: the batch leaves, the packet starts the next.
      endpoint_.send_segments(reinterpret_cast<const sockaddr*>(&to), batch, used, segment);
      std::memmove(batch, out, len);
      used = 0;
    }
    if (used == 0) {
      segment = len;
      std::memcpy(&to, remote, remotelen);
      tolen = remotelen;
    }
    used += len;
    if (len < segment) flush();  // a shorter packet is a batch's last
    ++packets;
  }
  flush();
  if (probe_hold_ == ProbeHold::Ending) {
    // This write ended an answer: its packets are out, the probe follows.
    transition(probe_hold_, ProbeHold::Over);
    write();
    return;
  }
  if (state_ == State::Draining && !streams_.empty()) {
    close_at_ns_ = 0;  // a stream below our GOAWAY's ID began after it: answered first
  } else if (state_ == State::Draining) {
    // RFC 9114 §5.2: every accepted request is answered; the connection
    // may now go idle or be closed. Closed at once, a client can lose
    // answers it has acknowledged but not yet handed to its application
    // (Chromium then retried the last request on a new connection, so the
    // backend got it twice): it gets kCloseAfterDrained to close it first.
    const uint64_t now = now_ns();
    if (close_at_ns_ == 0) close_at_ns_ = now + static_cast<uint64_t>(kCloseAfterDrained.count()) * 1'000'000;
    if (now >= close_at_ns_) {
      close_now();
      return;
    }
  }
  // A full write may have left packets unwritten: the rest goes on the next
  // loop iteration (the timer at 0 ms), after other connections' turns,
  // not only when the next datagram comes.
  arm_timer(packets == kMaxPacketsPerWrite);
}

void QuicConnection::note_answer_written(int64_t stream_id, ngtcp2_ssize written, size_t total, bool fin) {
  if (probe_hold_ != ProbeHold::Holding || !ngtcp2_is_bidi_stream(stream_id)) return;
  answer_bytes_ += static_cast<uint64_t>(written);
  if (fin && static_cast<size_t>(written) == total) ++answers_ended_;
  if ((answers_ended_ > 0 && answers_ended_ >= requests_begun_) || answer_bytes_ >= kProbeHoldBytes) {
    transition(probe_hold_, ProbeHold::Ending);
  }
}

void QuicConnection::arm_timer(bool more) {
  if (more) {
    timer_.arm(std::chrono::milliseconds(0));
    return;
  }
  uint64_t expiry = ngtcp2_conn_get_expiry(conn_);
  if (close_at_ns_ != 0) expiry = std::min(expiry, close_at_ns_);
  if (handshake_done_ && probe_hold_ != ProbeHold::Over) expiry = std::min(expiry, hold_until_ns_);
  if (expiry == UINT64_MAX) {
    timer_.stop();
    return;
  }
  const uint64_t now = now_ns();
  const uint64_t ms = expiry > now ? (expiry - now + 999'999) / 1'000'000 : 0;
  timer_.arm(std::chrono::milliseconds(ms));
}

void QuicConnection::on_timer() {
  if (state_ == State::Closed) return;
  const int rv = ngtcp2_conn_handle_expiry(conn_, now_ns());
  if (rv != 0) {
    // NGTCP2_ERR_IDLE_CLOSE: the idle timeout, silently (RFC 9000 §10.1).
    if (rv == NGTCP2_ERR_IDLE_CLOSE) {
      finish();
    } else {
      fail(rv);
    }
    return;
  }
  write();
}

}  // namespace tlsfront::quic
