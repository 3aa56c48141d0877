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
  block.text_at_.clear();
  return block;
}

void FieldBlock::add(std::string_view name, std::string_view value, bool no_index) {
  const size_t at = text_.size();
  text_.append(name);
  for (size_t i = at; i < text_.size(); ++i) {
    const char c = text_[i];
    if (c >= 'A' && c <= 'Z') text_[i] = static_cast<char>(c + 32);
  }
  text_.append(value);
  nv_.push_back(nghttp2_nv{nullptr, nullptr, name.size(), value.size(), flags(no_index)});
  text_at_.push_back(at);
}

void FieldBlock::add_view(std::string_view name, std::string_view value, bool no_index) {
  nv_.push_back(nghttp2_nv{bytes(name), bytes(value), name.size(), value.size(), flags(no_index)});
  text_at_.push_back(kView);
}

uint64_t FieldBlock::octets() const {
  uint64_t n = 0;
  for (const auto& nv : nv_) n += nv.namelen + nv.valuelen + 4;
  return n;
}

nghttp2_nv* FieldBlock::nva() {
  // The text may have moved while it grew: the copied fields' pointers are
  // set only now.
  auto* base = reinterpret_cast<uint8_t*>(text_.data());
  for (size_t i = 0; i < nv_.size(); ++i) {
    if (text_at_[i] == kView) continue;
    nv_[i].name = base + text_at_[i];
    nv_[i].value = nv_[i].name + nv_[i].namelen;
  }
  return nv_.data();
}

}  // namespace tlsfront
