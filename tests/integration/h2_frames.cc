// The frame-level HTTP/2 test client (see h2_frames.h).
#include "h2_frames.h"

#include <nghttp2/nghttp2.h>

#include <cstdio>
#include <cstdlib>

namespace tlsfront::itest::h2 {
namespace {

void put32(std::string& out, uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

uint32_t get32(std::string_view s, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

// RFC 7541 §5.1 integer with a 7-bit prefix (H bit 0: no Huffman).
void put_length(std::string& out, size_t n) {
  if (n < 127) {
    out += static_cast<char>(n);
    return;
  }
  out += static_cast<char>(127);
  n -= 127;
  while (n >= 128) {
    out += static_cast<char>(0x80 | (n & 0x7f));
    n >>= 7;
  }
  out += static_cast<char>(n);
}

}  // namespace

uint32_t Frame::error_code() const {
  if (type == kRstStream && payload.size() >= 4) return get32(payload, 0);
  if (type == kGoaway && payload.size() >= 8) return get32(payload, 4);
  return 0xffffffff;
}

uint32_t Frame::last_stream_id() const { return payload.size() >= 4 ? get32(payload, 0) & 0x7fffffff : 0; }

std::string frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  std::string out;
  const size_t n = payload.size();
  out += static_cast<char>(n >> 16);
  out += static_cast<char>(n >> 8);
  out += static_cast<char>(n);
  out += static_cast<char>(type);
  out += static_cast<char>(flags);
  put32(out, stream & 0x7fffffff);
  out.append(payload);
  return out;
}

std::string hpack(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    out += '\0';  // literal without indexing, new name
    put_length(out, name.size());
    out += name;
    put_length(out, value.size());
    out += value;
  }
  return out;
}

Fields get_request(const std::string& path, const std::string& authority) {
  return {{":method", "GET"}, {":scheme", "https"}, {":authority", authority}, {":path", path}};
}

Client::Client() {
  nghttp2_hd_inflater* inf = nullptr;
  nghttp2_hd_inflate_new(&inf);
  inflater_ = inf;
}

Client::~Client() { nghttp2_hd_inflate_del(static_cast<nghttp2_hd_inflater*>(inflater_)); }

bool Client::connect(int port, const std::vector<std::pair<uint16_t, uint32_t>>& settings) {
  TlsOptions o;
  o.alpn = {"h2"};
  if (!tls_.connect(port, o)) return false;
  if (tls_.alpn_selected() != "h2") return false;
  std::string payload;
  for (const auto& [id, value] : settings) {
    payload += static_cast<char>(id >> 8);
    payload += static_cast<char>(id);
    put32(payload, value);
  }
  return send(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")) && send_frame(kSettings, 0, 0, payload);
}

bool Client::send_headers(uint32_t stream, const Fields& fields, bool end_stream) {
  return send_frame(kHeaders, kEndHeaders | (end_stream ? kEndStream : 0), stream, hpack(fields));
}

std::optional<Frame> Client::next(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    if (buf_.size() >= 9) {
      size_t len = static_cast<size_t>(static_cast<unsigned char>(buf_[0])) << 16 |
                   static_cast<size_t>(static_cast<unsigned char>(buf_[1])) << 8 |
                   static_cast<unsigned char>(buf_[2]);
      if (buf_.size() >= 9 + len) {
        Frame f;
        f.type = static_cast<uint8_t>(buf_[3]);
        f.flags = static_cast<uint8_t>(buf_[4]);
        f.stream = get32(buf_, 5) & 0x7fffffff;
        f.payload = buf_.substr(9, len);
        buf_.erase(0, 9 + len);
        if (f.type == kSettings && !(f.flags & kAck)) send_frame(kSettings, kAck, 0, "");
        if (f.type == kHeaders) f.fields = decode(f);
        if (f.type == kData && auto_window_ && !f.payload.empty()) {
          std::string inc;
          put32(inc, static_cast<uint32_t>(f.payload.size()));
          send_frame(kWindowUpdate, 0, 0, inc);
          send_frame(kWindowUpdate, 0, f.stream, inc);
        }
        if (std::getenv("H2_TRACE")) {
          std::fprintf(stderr, "h2 frame type=%d flags=%d stream=%u len=%zu code=%u\n", f.type, f.flags, f.stream,
                       f.payload.size(), f.error_code());
          if (f.type == kGoaway) std::fprintf(stderr, "  debug: %s\n", f.payload.substr(8).c_str());
          for (const auto& [k, v] : f.fields) std::fprintf(stderr, "  %s: %s\n", k.c_str(), v.c_str());
        }
        seen_.push_back(f);
        return f;
      }
    }
    if (tls_.closed() || Clock::now() >= deadline) return std::nullopt;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    buf_ += tls_.read_available(left);
  }
}

std::optional<Frame> Client::wait_for(const std::function<bool(const Frame&)>& pred, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    auto f = next(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
    if (!f) return std::nullopt;
    if (pred(*f)) return f;
  }
  return std::nullopt;
}

bool Client::wait_closed(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (!next(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()))) return tls_.closed();
  }
  return false;
}

Fields Client::decode(Frame& f) {
  Fields out;
  std::string_view block = f.payload;
  size_t pad = 0;
  if (f.flags & 0x8) {  // PADDED
    pad = static_cast<unsigned char>(block[0]);
    block.remove_prefix(1);
  }
  if (f.flags & 0x20) block.remove_prefix(5);  // PRIORITY
  block.remove_suffix(pad);
  auto* inf = static_cast<nghttp2_hd_inflater*>(inflater_);
  const auto* in = reinterpret_cast<const uint8_t*>(block.data());
  size_t left = block.size();
  while (true) {
    nghttp2_nv nv;
    int flags = 0;
    ssize_t rv = nghttp2_hd_inflate_hd2(inf, &nv, &flags, in, left, 1);
    if (rv < 0) break;
    in += rv;
    left -= static_cast<size_t>(rv);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      if (nv.flags & NGHTTP2_NV_FLAG_NO_INDEX) f.never_indexed.emplace_back(reinterpret_cast<char*>(nv.name), nv.namelen);
      out.emplace_back(std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                       std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inf);
      break;
    }
    if (left == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) break;
  }
  return out;
}

int Client::wait_status(uint32_t stream, milliseconds timeout) {
  while (true) {
    auto f = wait_for([stream](const Frame& x) { return x.stream == stream && (x.type == kHeaders || x.type == kRstStream); },
                      timeout);
    if (!f || f->type == kRstStream) return 0;
    for (const auto& [k, v] : f->fields) {
      if (k == ":status" && v[0] != '1') return std::atoi(v.c_str());
    }
  }
}

}  // namespace tlsfront::itest::h2
