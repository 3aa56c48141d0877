#include "wsload/ws_frame.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <strings.h>

namespace tlsfront::wsload {

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string accept_key(std::string_view key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string input(key);
  input.append(kGuid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return base64(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string header_value(std::string_view head, std::string_view name) {
  size_t at = head.find("\r\n");
  while (at != std::string_view::npos && at + 2 < head.size()) {
    const size_t start = at + 2;
    const size_t end = head.find("\r\n", start);
    std::string_view line = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    const size_t colon = line.find(':');
    if (colon == name.size() && strncasecmp(line.data(), name.data(), name.size()) == 0) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return std::string(v);
    }
    at = end;
  }
  return "";
}

namespace {
bool known_opcode(uint8_t op) { return op <= 0x2 || (op >= 0x8 && op <= 0xA); }
}  // namespace

ParseStatus parse_frame(std::string_view buf, size_t max_payload, Frame& out, size_t& consumed) {
  if (buf.size() < 2) return ParseStatus::kIncomplete;
  const auto* p = reinterpret_cast<const uint8_t*>(buf.data());
  if ((p[0] & 0x70) != 0 || !known_opcode(p[0] & 0x0F)) return ParseStatus::kError;
  const bool fin = (p[0] & 0x80) != 0;
  const auto opcode = static_cast<Opcode>(p[0] & 0x0F);
  const bool masked = (p[1] & 0x80) != 0;
  uint64_t len = p[1] & 0x7F;
  size_t head = 2;
  if (len == 126) {
    if (buf.size() < 4) return ParseStatus::kIncomplete;
    len = (uint64_t{p[2]} << 8) | p[3];
    head = 4;
  } else if (len == 127) {
    if (buf.size() < 10) return ParseStatus::kIncomplete;
    len = 0;
    for (int i = 0; i < 8; ++i) len = (len << 8) | p[2 + i];
    if (len >> 63) return ParseStatus::kError;
    head = 10;
  }
  if ((static_cast<uint8_t>(opcode) & 0x8) && (len > 125 || !fin)) return ParseStatus::kError;
  if (len > max_payload) return ParseStatus::kError;
  const size_t mask_at = head;
  if (masked) head += 4;
  if (buf.size() < head + len) return ParseStatus::kIncomplete;
  out.fin = fin;
  out.opcode = opcode;
  out.masked = masked;
  out.payload.assign(buf.substr(head, len));
  if (masked) {
    const uint8_t* key = p + mask_at;
    for (size_t i = 0; i < out.payload.size(); ++i) out.payload[i] = static_cast<char>(out.payload[i] ^ key[i & 3]);
  }
  consumed = head + len;
  return ParseStatus::kFrame;
}

void append_frame(std::string& out, Opcode opcode, std::string_view payload, const uint8_t* mask_key) {
  const uint8_t mask_bit = mask_key ? 0x80 : 0x00;
  out.push_back(static_cast<char>(0x80 | static_cast<uint8_t>(opcode)));
  const size_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(mask_bit | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((uint64_t{n} >> shift) & 0xFF));
  }
  if (!mask_key) {
    out.append(payload);
    return;
  }
  out.append(reinterpret_cast<const char*>(mask_key), 4);
  const size_t at = out.size();
  out.append(payload);
  for (size_t i = 0; i < n; ++i) out[at + i] = static_cast<char>(out[at + i] ^ mask_key[i & 3]);
}

}  // namespace tlsfront::wsload
