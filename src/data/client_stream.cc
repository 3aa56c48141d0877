#include "data/client_stream.h"

#include <algorithm>

namespace tlsfront::data {

Result<ClientStream> ClientStream::tls(SSL_CTX* ctx) {
  auto t = tls::TlsStream::create(ctx);
  if (!t) return t.take_error();
  return ClientStream(std::move(t).value());
}

Status ClientStream::write(std::string& data) {
  if (auto* t = std::get_if<tls::TlsStream>(&impl_)) {
    Status st = t->write(data);
    data.clear();
    return st;
  }
  std::string& out = cleartext_state().out;
  if (out.empty()) {
    out.swap(data);  // the caller keeps the old buffer's capacity
  } else {
    out.append(data);
  }
  data.clear();
  return {};
}

bool ClientStream::release_buffers() {
  if (auto* t = std::get_if<tls::TlsStream>(&impl_)) return t->release_buffers();
  if (pending_input() != 0 || pending_output() != 0) return false;
  Cleartext& c = cleartext_state();
  std::string().swap(c.in);
  std::string().swap(c.out);
  c.in_off = 0;
  return true;
}

void ClientStream::Cleartext::feed(std::string_view bytes) {
  if (in_off > 0 && in_off >= in.size() / 2) {  // keep the unread tail at the front
    in.erase(0, in_off);
    in_off = 0;
  }
  in.append(bytes);
}

size_t ClientStream::Cleartext::read(char* buf, size_t len) {
  const size_t n = std::min(len, in.size() - in_off);
  std::memcpy(buf, in.data() + in_off, n);
  in_off += n;
  if (in_off == in.size()) {
    in.clear();
    in_off = 0;
  }
  return n;
}

}  // namespace tlsfront::data
