// FieldBlock: a header block laid out as the nghttp2_nv array that
// nghttp2_submit_request/response/headers/trailer take. nghttp2 copies the
// array and every name and value before those calls return (its documented
// rule for nva), so the layout lives in per-thread scratch storage reused
// from one block to the next: after a thread's largest block, building one
// allocates nothing (it was 2 allocations per field, ~6 per response).
// Names are not copied: nghttp2 lowercases the copy it makes of each
// (nghttp2_nv_array_copy; RFC 9113 §8.2.1: uppercase is malformed in
// HTTP/2), so a name must stay valid until the array has been submitted.
// add() copies the value (it may be a caller's temporary: a status code's
// digits), add_view() does not.
// Thread affinity: the calling thread; one block at a time per thread —
// FieldBlock::start() empties it, so use the array before starting another.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tlsfront {

// One field nghttp2 points at instead of copying (NGHTTP2_NV_FLAG_NO_COPY_NAME
// | _VALUE; FieldBlock::add_view's `held` rule): `name` lowercase, both valid
// and unchanged until nghttp2 has sent or dropped the frame.
nghttp2_nv held_field(std::string_view name, std::string_view value, bool no_index);

class FieldBlock {
 public:
  // This thread's block, emptied.
  static FieldBlock& start();

  // Appends one field, its value copied; `no_index` sets
  // NGHTTP2_NV_FLAG_NO_INDEX (RFC 7541 §6.2.3: never put in a dynamic table).
  void add(std::string_view name, std::string_view value, bool no_index = false);

  // Appends one field without copying its value: `value` too must stay
  // valid until the array has been submitted. `held`: nghttp2 points at
  // name and value instead of copying them (NGHTTP2_NV_FLAG_NO_COPY_NAME |
  // _VALUE), so the name must be lowercase and both must stay valid and
  // unchanged until nghttp2 has sent the frame, or has dropped it unsent
  // (its stream closed, its request HEADERS cancelled by RST_STREAM, or the
  // session deleted: nghttp2 reads a held field only while encoding the
  // frame, nghttp2_submit_request's documented rule).
  void add_view(std::string_view name, std::string_view value, bool no_index = false, bool held = false);

  // An array of `n` fields for the caller to fill (a block just start()ed),
  // valid until the next start() on this thread.
  nghttp2_nv* reserve_nva(size_t n);

  // The array, valid until the next start() on this thread.
  nghttp2_nv* nva();
  size_t size() const { return nv_.size(); }
  // name + value + 4 octets per field: what the access log counts for a
  // head sent over HTTP/2 (bytes_sent), derived from the array.
  uint64_t octets() const;

 private:
  struct Copied {
    size_t index;     // in nv_
    size_t value_at;  // where its value starts in text_
  };
  std::string text_;            // the copied values, back to back
  std::vector<nghttp2_nv> nv_;  // a copied value's pointer is set by nva()
  std::vector<Copied> copied_;  // the fields whose value add() copied
};

}  // namespace tlsfront
