#include "util/nghttp2_fields.h"

namespace tlsfront {
namespace {

uint8_t flags(bool no_index) {
  return static_cast<uint8_t>(no_index ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE);
}

uint8_t* bytes(std::string_view s) { return reinterpret_cast<uint8_t*>(const_cast<char*>(s.data())); }

}  // namespace

FieldBlock& FieldBlock::start() {
  thread_local FieldBlock block;
  block.text_.clear();
  block.nv_.clear();
  block.copied_.clear();
  return block;
}

void FieldBlock::add(std::string_view name, std::string_view value, bool no_index) {
  // The name as it is: nghttp2 lowercases the copy it makes (nghttp2_nv_array_copy).
  copied_.push_back(Copied{nv_.size(), text_.size()});
  text_.append(value);
  nv_.push_back(nghttp2_nv{bytes(name), nullptr, name.size(), value.size(), flags(no_index)});
}

nghttp2_nv held_field(std::string_view name, std::string_view value, bool no_index) {
  return nghttp2_nv{
      bytes(name), bytes(value), name.size(), value.size(),
      static_cast<uint8_t>(flags(no_index) | NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE)};
}

nghttp2_nv* FieldBlock::reserve_nva(size_t n) {
  nv_.resize(n);
  return nv_.data();
}

void FieldBlock::add_view(std::string_view name, std::string_view value, bool no_index, bool held) {
  if (held) {
    nv_.push_back(held_field(name, value, no_index));
    return;
  }
  nv_.push_back(nghttp2_nv{bytes(name), bytes(value), name.size(), value.size(), flags(no_index)});
}

uint64_t FieldBlock::octets() const {
  uint64_t n = 0;
  for (const auto& nv : nv_) n += nv.namelen + nv.valuelen + 4;
  return n;
}

nghttp2_nv* FieldBlock::nva() {
  // The text may have moved while it grew: the copied values' pointers are
  // set only now.
  auto* base = reinterpret_cast<uint8_t*>(text_.data());
  for (const Copied& c : copied_) nv_[c.index].value = base + c.value_at;
  return nv_.data();
}

}  // namespace tlsfront
