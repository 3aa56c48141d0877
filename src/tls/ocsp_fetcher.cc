#include "tls/ocsp_fetcher.h"

#include <curl/curl.h>

#include <mutex>
#include <string>

#include <fmt/core.h>

namespace tlsfront::tls {

struct OcspFetcher::Transfer {
  uint64_t id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  Callback done;
  std::vector<uint8_t> post_body;
  std::vector<uint8_t> body;
  size_t max_bytes = 0;
  size_t header_bytes = 0;
  bool too_large = false;
  std::chrono::milliseconds timeout{0};
  char errbuf[CURL_ERROR_SIZE] = "";
};

struct OcspFetcher::Socket {
  UvHandle<uv_poll_t> poll;
  int fd = -1;
  OcspFetcher* owner = nullptr;
};

OcspFetcher::OcspFetcher(uv_loop_t* loop) : loop_(loop) {}

Result<std::unique_ptr<OcspFetcher>> OcspFetcher::create(uv_loop_t* loop) {
  static std::once_flag once;
  static CURLcode init_rc = CURLE_OK;
  std::call_once(once, [] { init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init_rc != CURLE_OK) return make_error(Errc::Internal, std::string("curl_global_init: ") + curl_easy_strerror(init_rc));
  std::unique_ptr<OcspFetcher> f(new OcspFetcher(loop));
  CURLM* multi = curl_multi_init();
  if (!multi) return make_error(Errc::Internal, "curl_multi_init failed");
  f->multi_ = multi;
  if (f->timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, f.get()) != 0) {
    return make_error(Errc::Internal, "uv_timer_init failed");
  }
  curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &OcspFetcher::socket_cb);
  curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, f.get());
  curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &OcspFetcher::timer_cb);
  curl_multi_setopt(multi, CURLMOPT_TIMERDATA, f.get());
  return f;
}

OcspFetcher::~OcspFetcher() { stop(); }

void OcspFetcher::stop() {
  auto* multi = static_cast<CURLM*>(multi_);
  while (!transfers_.empty()) {
    auto node = transfers_.extract(transfers_.begin());
    release(*node.mapped());
  }
  if (multi) {
    curl_multi_cleanup(multi);  // may still report sockets removed
    multi_ = nullptr;
  }
  sockets_.clear();
  timer_.close();
}

void OcspFetcher::release(Transfer& t) {
  if (t.easy) {
    if (multi_) curl_multi_remove_handle(static_cast<CURLM*>(multi_), t.easy);
    curl_easy_cleanup(t.easy);
    t.easy = nullptr;
  }
  curl_slist_free_all(t.headers);
  t.headers = nullptr;
}

Result<uint64_t> OcspFetcher::fetch(const OcspHttpRequest& request, std::chrono::milliseconds timeout, size_t max_bytes,
                            Callback done) {
  auto t = std::make_unique<Transfer>();
  t->id = next_id_++;
  t->done = std::move(done);
  t->max_bytes = max_bytes;
  t->timeout = timeout;
  t->easy = curl_easy_init();
  const uint64_t id = t->id;
  Transfer* raw = t.get();
  transfers_.emplace(id, std::move(t));
  auto fail = [this, id](std::string why) -> Result<uint64_t> {
    auto node = transfers_.extract(id);
    if (node) release(*node.mapped());
    return make_error(Errc::Internal, std::move(why));
  };
  CURL* e = raw->easy;
  if (!e) return fail("curl_easy_init failed");
  curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, raw);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, raw->errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROXY, "");  // ignore http_proxy & co. in the environment
  curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
  curl_easy_setopt(e, CURLOPT_USERAGENT, "tlsfront/" TLSFRONT_VERSION);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, raw);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t n, void* user) noexcept -> size_t {
    auto* t = static_cast<Transfer*>(user);
    const size_t len = size * n;
    if (t->body.size() + len > t->max_bytes) {
      t->too_large = true;
      return 0;  // CURLE_WRITE_ERROR: abort the transfer
    }
    t->body.insert(t->body.end(), data, data + len);
    return len;
  });
  curl_easy_setopt(e, CURLOPT_HEADERDATA, raw);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, +[](char*, size_t size, size_t n, void* user) noexcept -> size_t {
    auto* t = static_cast<Transfer*>(user);
    t->header_bytes += size * n;
    if (t->header_bytes > kMaxHeaderBytes) {
      t->too_large = true;
      return 0;
    }
    return size * n;
  });
  raw->headers = curl_slist_append(raw->headers, "Accept: application/ocsp-response");
  if (request.post) {
    raw->post_body = request.body;
    raw->headers = curl_slist_append(raw->headers, "Content-Type: application/ocsp-request");
    raw->headers = curl_slist_append(raw->headers, "Expect:");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, raw->post_body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(raw->post_body.size()));
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, raw->headers);
  if (CURLMcode rc = curl_multi_add_handle(static_cast<CURLM*>(multi_), e); rc != CURLM_OK) {
    return fail(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc));
  }
  return id;
}

void OcspFetcher::cancel(uint64_t id) {
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return;
  auto node = transfers_.extract(it);
  release(*node.mapped());
}

int OcspFetcher::socket_cb(void*, int fd, int what, void* userp, void*) noexcept {
  auto* self = static_cast<OcspFetcher*>(userp);
  if (what == CURL_POLL_REMOVE) {
    self->sockets_.erase(fd);  // UvHandle closes the poll handle
    return 0;
  }
  auto& slot = self->sockets_[fd];
  if (!slot) {
    auto s = std::make_unique<Socket>();
    s->fd = fd;
    s->owner = self;
    uv_loop_t* loop = self->loop_;
    if (s->poll.init([loop, fd](uv_poll_t* h) { return uv_poll_init_socket(loop, h, fd); }, s.get()) != 0) {
      self->sockets_.erase(fd);
      return -1;  // libcurl fails the transfer
    }
    slot = std::move(s);
  }
  int events = 0;
  if (what & CURL_POLL_IN) events |= UV_READABLE;
  if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
  uv_poll_start(slot->poll.get(), events, [](uv_poll_t* h, int status, int ev) {
    if (!h->data) return;
    auto* s = static_cast<Socket*>(h->data);
    s->owner->on_socket_event(s->fd, status, ev);
  });
  return 0;
}

int OcspFetcher::timer_cb(void*, long timeout_ms, void* userp) noexcept {
  auto* self = static_cast<OcspFetcher*>(userp);
  if (!self->timer_.active()) return 0;
  if (timeout_ms < 0) {
    uv_timer_stop(self->timer_.get());
    return 0;
  }
  uv_timer_start(
      self->timer_.get(),
      [](uv_timer_t* h) {
        if (h->data) static_cast<OcspFetcher*>(h->data)->on_timeout();
      },
      static_cast<uint64_t>(timeout_ms), 0);
  return 0;
}

void OcspFetcher::on_socket_event(int fd, int status, int events) {
  if (!multi_) return;
  int flags = 0;
  if (status < 0) flags |= CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  int running = 0;
  curl_multi_socket_action(static_cast<CURLM*>(multi_), fd, flags, &running);
  drain_finished();
}

void OcspFetcher::on_timeout() {
  if (!multi_) return;
  int running = 0;
  curl_multi_socket_action(static_cast<CURLM*>(multi_), CURL_SOCKET_TIMEOUT, 0, &running);
  drain_finished();
}

void OcspFetcher::drain_finished() {
  // Collect first, call back after: a callback may start or cancel fetches.
  std::vector<std::pair<Callback, Result<std::vector<uint8_t>>>> finished;
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(static_cast<CURLM*>(multi_), &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* raw = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &raw);
    const CURLcode rc = msg->data.result;
    if (!raw) continue;
    auto it = transfers_.find(raw->id);
    if (it == transfers_.end()) continue;
    auto node = transfers_.extract(it);
    Transfer& t = *node.mapped();
    long http_status = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &http_status);
    Result<std::vector<uint8_t>> outcome = make_error(Errc::Internal, "");
    if (rc == CURLE_OK && http_status == 200 && !t.body.empty()) {
      outcome = std::move(t.body);
    } else if (rc == CURLE_OK) {
      outcome = make_error(Errc::Upstream, http_status == 200 ? std::string("empty response body")
                                                               : fmt::format("HTTP status {}", http_status));
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
      outcome = make_error(Errc::Timeout, fmt::format("no complete response within {} ms", t.timeout.count()));
    } else if (t.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
      outcome = make_error(Errc::ResourceExhausted,
                           fmt::format("response over the limit ({} body bytes, {} header bytes)", t.max_bytes,
                                       kMaxHeaderBytes));
    } else {
      outcome = make_error(Errc::Upstream, t.errbuf[0] ? std::string(t.errbuf) : curl_easy_strerror(rc));
    }
    release(t);
    finished.emplace_back(std::move(t.done), std::move(outcome));
  }
  for (auto& [cb, outcome] : finished) {
    if (cb) cb(std::move(outcome));
  }
}

}  // namespace tlsfront::tls
