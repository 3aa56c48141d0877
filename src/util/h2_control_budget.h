// H2ControlBudget: the bound on HTTP/2 frames a peer sends that make us work
// without moving any request or response forward — the "control frame
// flood" class (CVE-2019-9512 ping flood, -9514 reset flood, -9515 settings
// flood, -9516 0-length headers/DATA, -9518 empty frames, and WINDOW_UPDATE
// or unknown extension frames in a loop). Each such frame spends a token of
// a bucket (kBurst, refilled at kPerSecond); a peer past it gets GOAWAY
// ENHANCE_YOUR_CALM and is closed (RFC 9113 §5.4.1, §7), as nghttpx, h2o
// and Envoy do. One per HTTP/2 connection, client side and upstream side.
//
// Which frames are charged (unproductive()), from the frame header alone
// (on_begin_frame sees every frame, also those nghttp2 then drops unseen):
//   DATA of length 0 without END_STREAM; PRIORITY (RFC 9218 peers have no
//   use for it); SETTINGS and PING, with or without ACK (a peer needs a
//   few per connection); GOAWAY; WINDOW_UPDATE unless the window it opens
//   is exhausted now (something may wait on it: a stream's body or
//   response, the connection's); frames of unknown or extension types
//   (§5.5: ignored, so free to loop). HEADERS, CONTINUATION (bounded by
//   nghttp2's own limits), RST_STREAM (the rapid-reset budget's) and
//   PUSH_PROMISE (refused) are not charged here.
//
// Answers to real work are not a flood: a peer may acknowledge each DATA
// frame we send with a few such frames (WINDOW_UPDATE for the stream and
// the connection, a BDP PING as gRPC does; a gRPC bidi stream of small
// messages answers each one), and widen each new stream's window at once
// (a gRPC client sends a WINDOW_UPDATE with every call). So each DATA frame
// sent and each stream opened (earn()) gives the peer kCreditPerEarn frames
// that charge() takes before the bucket; credit is capped at kBurst. A peer
// thus makes us handle a bounded number of control frames per unit of real
// work, plus the bucket (as Envoy bounds WINDOW_UPDATE per DATA frame sent
// and PRIORITY per stream opened).
// Thread affinity: one owner (the session's worker).
#pragma once

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdint>

#include "util/token_bucket.h"

namespace tlsfront {

class H2ControlBudget {
 public:
  static constexpr double kBurst = 1000;
  static constexpr double kPerSecond = 100;

  // True for a frame that moves nothing forward (see above).
  // `window_exhausted(stream_id)`: whether the send window a WINDOW_UPDATE
  // on `stream_id` opens (0: the connection's) is at or below zero now;
  // called for WINDOW_UPDATE frames only.
  template <typename WindowExhausted>
  static bool unproductive(const nghttp2_frame_hd& hd, WindowExhausted&& window_exhausted) {
    switch (hd.type) {
      case NGHTTP2_DATA:
        return hd.length == 0 && (hd.flags & NGHTTP2_FLAG_END_STREAM) == 0;
      case NGHTTP2_PRIORITY:
      case NGHTTP2_SETTINGS:
      case NGHTTP2_PING:
      case NGHTTP2_GOAWAY:
        return true;
      case NGHTTP2_WINDOW_UPDATE:
        return !window_exhausted(hd.stream_id);
      case NGHTTP2_HEADERS:
      case NGHTTP2_RST_STREAM:
      case NGHTTP2_PUSH_PROMISE:
      case NGHTTP2_CONTINUATION:
        return false;
      default:
        return true;  // unknown or extension frame types
    }
  }

  static constexpr uint32_t kCreditPerEarn = 3;

  // A DATA frame carrying octets went to the peer, or a stream opened.
  void earn() { credit_ = std::min<uint32_t>(credit_ + kCreditPerEarn, static_cast<uint32_t>(kBurst)); }

  // As above for a frame `session` received: a WINDOW_UPDATE is productive
  // when the window it opens (the connection's, or that of a stream
  // `session` has open) is at or below zero now.
  static bool unproductive(nghttp2_session* session, const nghttp2_frame_hd& hd) {
    return unproductive(hd, [session](int32_t id) {
      if (id == 0) return nghttp2_session_get_remote_window_size(session) <= 0;
      // (Its window size is an error code for a stream nghttp2 does not know.)
      return nghttp2_session_find_stream(session, id) != nullptr &&
             nghttp2_session_get_stream_remote_window_size(session, id) <= 0;
    });
  }

  // Spends credit or a token for an unproductive frame; false once over
  // the budget.
  bool charge() {
    if (credit_ > 0) {
      --credit_;
      return true;
    }
    return bucket_.take();
  }

  // nghttp2 skips frames of unknown types without a callback. So that
  // on_begin_frame can see (and charge) them, a session's option tells it
  // to receive every type past the RFC 9113 ones as an extension, and its
  // callbacks drop them unread (§5.5: ignored). Both, before the session
  // is made.
  static void see_unknown_frames(nghttp2_option* option) {
    for (int type = NGHTTP2_CONTINUATION + 1; type <= 0xff; ++type) {
      nghttp2_option_set_user_recv_extension_type(option, static_cast<uint8_t>(type));
    }
  }
  static void drop_unknown_frames(nghttp2_session_callbacks* callbacks) {
    nghttp2_session_callbacks_set_unpack_extension_callback(
        callbacks,
        [](nghttp2_session*, void**, const nghttp2_frame_hd*, void*) noexcept -> int { return NGHTTP2_ERR_CANCEL; });
  }

 private:
  TokenBucket bucket_{kBurst, kPerSecond, TokenBucket::Clock::time_point{}};
  uint32_t credit_ = 0;  // frames the peer may send free (earn())
};

}  // namespace tlsfront
