// H2FrameScanner: reads the frame headers of a client's HTTP/2 input ahead
// of nghttp2, for the two RFC 9113 rules about frames nghttp2 drops unread:
//  - §5.3.1 "A stream cannot depend on itself. An endpoint MUST treat this
//    as a stream error of type PROTOCOL_ERROR." With
//    SETTINGS_NO_RFC7540_PRIORITIES nghttp2 drops PRIORITY frames unread,
//    so their payload is looked at here;
//  - §5.1 "closed": nghttp2 drops DATA for a closed stream without a
//    callback, so the streams DATA frames name are listed (once per run of
//    consecutive frames of one stream) for the session to judge.
//
// Shape: walks frame headers only (9 octets each, kept across reads, after
// the 24-octet connection preface); a payload is skipped in one step, so a
// read costs a few instructions per frame it holds. A PRIORITY frame whose
// length is not 5 is nghttp2's to refuse (FRAME_SIZE_ERROR), not reported.
// Thread affinity: one owner (the session's worker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tlsfront::http {

class H2FrameScanner {
 public:
  // Feeds the connection's next input bytes; appends to `self_dependent`
  // the stream id of each PRIORITY frame completed in them that depends on
  // its own stream, and to `data_streams` the stream of each DATA frame
  // whose header completes in them (not repeating the last one appended).
  void scan(std::string_view data, std::vector<int32_t>& self_dependent, std::vector<int32_t>& data_streams);
  // True when the bytes scanned so far end with a whole frame (after the
  // client preface): no frame is partly received.
  bool between_frames() const { return preface_left_ == 0 && head_len_ == 0 && payload_left_ == 0; }

 private:
  static constexpr size_t kPrefaceSize = 24;  // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
  static constexpr size_t kHeadSize = 9;
  static constexpr size_t kDependencySize = 4;

  size_t preface_left_ = kPrefaceSize;
  uint8_t head_[kHeadSize] = {};
  size_t head_len_ = 0;      // of the frame header being read
  size_t payload_left_ = 0;  // of the current frame's payload
  // The current frame is a PRIORITY frame of `stream_`; its dependency's
  // octets so far.
  bool priority_ = false;
  int32_t stream_ = 0;
  uint8_t dependency_[kDependencySize] = {};
  size_t dependency_len_ = 0;
};

}  // namespace tlsfront::http
