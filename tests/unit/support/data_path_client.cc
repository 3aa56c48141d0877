#include "data_path_client.h"

#include <llhttp.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace tlsfront::harness {
namespace {

struct ResponseParse {
  std::vector<ParsedResponse> out;
  const std::set<size_t>* head_responses;
  HeaderCollector collector;
  size_t consumed = 0;  // bytes up to the end of the last complete response
  const char* base = nullptr;
};

#define TLSFRONT_PARSE static_cast<ResponseParse*>(p->data)
llhttp_settings_t response_settings() {
  llhttp_settings_t s;
  llhttp_settings_init(&s);
  s.on_message_begin = [](llhttp_t* p) {
    TLSFRONT_PARSE->out.emplace_back();
    TLSFRONT_PARSE->collector.reset();
    return 0;
  };
  s.on_header_field = [](llhttp_t* p, const char* at, size_t n) {
    TLSFRONT_PARSE->collector.on_field(at, n);
    return 0;
  };
  s.on_header_value = [](llhttp_t* p, const char* at, size_t n) {
    TLSFRONT_PARSE->collector.on_value(TLSFRONT_PARSE->out.back().headers, at, n);
    return 0;
  };
  s.on_headers_complete = [](llhttp_t* p) {
    ResponseParse* r = TLSFRONT_PARSE;
    r->out.back().status = llhttp_get_status_code(p);
    return r->head_responses->count(r->out.size() - 1) ? 1 : 0;
  };
  s.on_body = [](llhttp_t* p, const char* at, size_t n) {
    TLSFRONT_PARSE->out.back().body.append(at, n);
    return 0;
  };
  s.on_message_complete = [](llhttp_t* p) {
    TLSFRONT_PARSE->out.back().complete = true;
    return static_cast<int>(HPE_PAUSED);  // record where it ended
  };
  return s;
}
#undef TLSFRONT_PARSE

}  // namespace

std::vector<ParsedResponse> parse_responses(std::string_view bytes, const std::set<size_t>& head_responses,
                                            std::string* rest) {
  static const llhttp_settings_t settings = response_settings();
  ResponseParse r;
  r.head_responses = &head_responses;
  llhttp_t parser;
  llhttp_init(&parser, HTTP_RESPONSE, &settings);
  parser.data = &r;
  std::string_view left = bytes;
  while (!left.empty()) {
    llhttp_errno_t err = llhttp_execute(&parser, left.data(), left.size());
    if (err != HPE_PAUSED) break;
    size_t used = static_cast<size_t>(llhttp_get_error_pos(&parser) - left.data());
    r.consumed += used;
    left.remove_prefix(used);
    llhttp_resume(&parser);
  }
  if (rest) rest->assign(bytes.substr(r.consumed));
  return std::move(r.out);
}

H2Client::H2Client() {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
  nghttp2_session_client_new(&session_, cb, this);
  nghttp2_session_callbacks_del(cb);
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
}

H2Client::~H2Client() { nghttp2_session_del(session_); }

int32_t H2Client::submit(std::string_view method, std::string_view path, const HeaderPairs& headers,
                         std::optional<std::string> body) {
  HeaderPairs all{{":method", std::string(method)}, {":scheme", "https"}, {":path", std::string(path)}};
  if (!has_header(headers, ":authority")) all.emplace_back(":authority", "example.test");
  all.insert(all.end(), headers.begin(), headers.end());
  std::vector<nghttp2_nv> nva;
  for (auto& [n, v] : all) {
    nva.push_back(nghttp2_nv{reinterpret_cast<uint8_t*>(n.data()), reinterpret_cast<uint8_t*>(v.data()), n.size(),
                             v.size(), NGHTTP2_NV_FLAG_NONE});
  }
  std::unique_ptr<std::string> owned = body ? std::make_unique<std::string>(std::move(*body)) : nullptr;
  nghttp2_data_provider provider{};
  provider.source.ptr = owned.get();
  provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                              nghttp2_data_source* source, void*) -> ssize_t {
    auto* left = static_cast<std::string*>(source->ptr);
    size_t n = std::min(length, left->size());
    std::memcpy(buf, left->data(), n);
    left->erase(0, n);
    if (left->empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  };
  int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), owned ? &provider : nullptr, nullptr);
  if (owned) bodies_[id] = std::move(owned);
  streams_[id];
  return id;
}

void H2Client::reset(int32_t stream_id, uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, error_code);
}

void H2Client::pump(FakeTransport& transport, http::ClientSession& session) {
  std::string in = transport.take_output();
  if (!in.empty() && !failed_) {
    ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(in.data()), in.size());
    if (rv < 0) failed_ = true;
  }
  const uint8_t* data = nullptr;
  for (ssize_t n; !failed_ && (n = nghttp2_session_mem_send(session_, &data)) > 0;) {
    transport.feed(std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(n)));
  }
}

int H2Client::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                        const uint8_t* value, size_t valuelen, uint8_t, void* self) {
  Stream& s = static_cast<H2Client*>(self)->streams_[frame->hd.stream_id];
  std::string n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") {
    s.status = std::stoi(v);
  } else {
    s.headers.emplace_back(std::move(n), std::move(v));
  }
  return 0;
}

int H2Client::on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len, void* self) {
  static_cast<H2Client*>(self)->streams_[id].body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int H2Client::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  if (frame->hd.type == NGHTTP2_GOAWAY) static_cast<H2Client*>(self)->goaway_ = true;
  return 0;
}

int H2Client::on_close(nghttp2_session*, int32_t id, uint32_t error_code, void* self) {
  auto* c = static_cast<H2Client*>(self);
  c->streams_[id].closed = true;
  c->streams_[id].error_code = error_code;
  c->bodies_.erase(id);
  return 0;
}

}  // namespace tlsfront::harness
