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
// Answers to real work are not a flood:
//  - Flow control feedback. A WINDOW_UPDATE that returns window for DATA
//    octets we sent (RFC 9113 §6.9) is free, however finely the peer cuts
//    it: a gRPC peer returns each message's octets as its application
//    reads the message, so one DATA frame of ours carrying 200 small
//    messages gets 200 WINDOW_UPDATEs back, some after the stream closed
//    (§6.9 lets them arrive then). The octets sent and not yet returned
//    are counted for streams and for the connection (sent_data()). While
//    its kind has some, a WINDOW_UPDATE is free and takes one octet off at
//    once (admit(): nghttp2 drops one naming a closed stream unseen), the
//    rest of its increment when it is received (received()). So a peer
//    gets at most one free WINDOW_UPDATE of each kind per octet we sent
//    it; the streams' count is one for all of them.
//  - Other answers: a peer may answer a DATA frame with a PING (gRPC's BDP
//    probe) and widen a new stream's window at once (a gRPC client sends a
//    WINDOW_UPDATE with every call). So each DATA frame sent and each stream
//    opened (earn()) gives the peer kCreditPerEarn frames that charge()
//    takes before the bucket; credit is capped at kBurst (as Envoy bounds
//    WINDOW_UPDATE per DATA frame sent and PRIORITY per stream opened).
// A peer thus makes us handle a bounded number of control frames per unit
// of real work, plus the bucket.
// Thread affinity: one owner (the session's worker).
#pragma once

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "util/token_bucket.h"

namespace tlsfront {

class H2ControlBudget {
 public:
  static constexpr double kBurst = 1000;
  static constexpr double kPerSecond = 100;

  // True for a frame that moves nothing forward (see above), from its
  // header. `window_needed(stream_id)`: whether a WINDOW_UPDATE on
  // `stream_id` (0: the connection's) opens a send window that is at or
  // below zero now; called for WINDOW_UPDATE frames only. (Flow control
  // feedback is admit()'s.)
  template <typename WindowNeeded>
  static bool unproductive(const nghttp2_frame_hd& hd, WindowNeeded&& window_needed) {
    switch (hd.type) {
      case NGHTTP2_DATA:
        return hd.length == 0 && (hd.flags & NGHTTP2_FLAG_END_STREAM) == 0;
      case NGHTTP2_PRIORITY:
      case NGHTTP2_SETTINGS:
      case NGHTTP2_PING:
      case NGHTTP2_GOAWAY:
        return true;
      case NGHTTP2_WINDOW_UPDATE:
        return !window_needed(hd.stream_id);
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

  // A stream opened.
  void earn() { credit_ = std::min<uint32_t>(credit_ + kCreditPerEarn, static_cast<uint32_t>(kBurst)); }

  // A DATA frame carrying `octets` (> 0) went to the peer.
  void sent_data(size_t octets) {
    earn();
    unreturned_[0] += octets;
    unreturned_[1] += octets;
  }

  // A frame begins (nghttp2's on_begin_frame, which sees every frame): free
  // if productive or flow control feedback, else charged (credit, then the
  // bucket). False once over the budget: the caller sends GOAWAY
  // ENHANCE_YOUR_CALM.
  template <typename WindowNeeded>
  bool admit(const nghttp2_frame_hd& hd, WindowNeeded&& window_needed,
             TokenBucket::Clock::time_point now = TokenBucket::Clock::now()) {
    returning_ = false;
    if (!unproductive(hd, window_needed)) return true;
    if (hd.type == NGHTTP2_WINDOW_UPDATE) {
      uint64_t& unreturned = unreturned_[hd.stream_id == 0 ? 0 : 1];
      if (unreturned > 0) {
        --unreturned;  // the least increment; received() takes the rest
        returning_ = true;
        return true;
      }
    }
    return charge(now);
  }
  // As above, the windows `session`'s.
  bool admit(nghttp2_session* session, const nghttp2_frame_hd& hd) {
    return admit(hd, [session](int32_t id) {
      if (id == 0) return nghttp2_session_get_remote_window_size(session) <= 0;
      // (Its window size is an error code for a stream nghttp2 does not know.)
      return nghttp2_session_find_stream(session, id) != nullptr &&
             nghttp2_session_get_stream_remote_window_size(session, id) <= 0;
    });
  }

  // A frame was received whole (nghttp2's on_frame_recv): a free
  // WINDOW_UPDATE's increment past its first octet comes off the octets
  // still to return.
  void received(const nghttp2_frame& frame) {
    if (frame.hd.type != NGHTTP2_WINDOW_UPDATE || !std::exchange(returning_, false)) return;
    uint64_t& unreturned = unreturned_[frame.hd.stream_id == 0 ? 0 : 1];
    const auto increment = static_cast<uint32_t>(frame.window_update.window_size_increment);
    unreturned -= std::min<uint64_t>(unreturned, increment > 0 ? increment - 1 : 0);
  }

  // Spends credit or a token for an unproductive frame; false once over
  // the budget.
  bool charge(TokenBucket::Clock::time_point now = TokenBucket::Clock::now()) {
    if (credit_ > 0) {
      --credit_;
      return true;
    }
    return bucket_.take(now);
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
  // DATA octets sent the peer has not returned by WINDOW_UPDATE: [0] the
  // connection's, [1] all streams' together.
  uint64_t unreturned_[2] = {0, 0};
  bool returning_ = false;  // the frame admit() saw last is a free WINDOW_UPDATE
};

}  // namespace tlsfront
