// FieldBlock: a header block laid out as the nghttp2_nv array that
// nghttp2_submit_request/response/headers/trailer take. nghttp2 copies the
// array and every name and value before those calls return (its documented
// rule for nva), so the layout lives in per-thread scratch storage reused
// from one block to the next: after a thread's largest block, building one
// allocates nothing (it was 2 allocations per field, ~6 per response).
// Names are lowercased as they are added (RFC 9113 §8.2.1: uppercase is
// malformed in HTTP/2); values are copied as they are.
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

class FieldBlock {
 public:
  // This thread's block, emptied.
  static FieldBlock& start();

  // Appends one field; `no_index` sets NGHTTP2_NV_FLAG_NO_INDEX (RFC 7541
  // §6.2.3: never put in a dynamic table).
  void add(std::string_view name, std::string_view value, bool no_index = false);

  // Appends one field whose name is lowercase already, without copying:
  // `name` and `value` must stay valid until the array has been submitted.
  void add_view(std::string_view name, std::string_view value, bool no_index = false);

  // The array, valid until the next start() on this thread.
  nghttp2_nv* nva();
  size_t size() const { return nv_.size(); }
  // name + value + 4 octets per field: what the access log counts for a
  // head sent over HTTP/2 (bytes_sent), derived from the array.
  uint64_t octets() const;

 private:
  static constexpr size_t kView = SIZE_MAX;
  std::string text_;            // the copied fields' name, value, name, value, ... back to back
  std::vector<nghttp2_nv> nv_;  // a copied field's pointers are set by nva(), a view's by add_view()
  std::vector<size_t> text_at_;  // per field: where its name starts in text_, or kView
};

}  // namespace tlsfront
