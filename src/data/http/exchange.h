// Exchange: what answers one admitted request (one HTTP/1.1 request or one
// HTTP/2 stream) and talks back to the client side only through its
// ExchangeSink. Two kinds: ProxyExchange (an upstream answers) and
// FileExchange (a route's root or alias answers: data/http/file_exchange.h). A session holds one
// std::unique_ptr<Exchange> and drives it through this interface; it never
// needs to know which kind it holds, except for the tunnel a ProxyExchange
// may become (ProxyExchange::take_tunnel).
// Thread affinity: owning worker only.
#pragma once

#include <uv.h>

#include <memory>
#include <string_view>
#include <vector>

#include "data/http/request_record.h"
#include "message/request.h"
#include "util/loop_context.h"

namespace tlsfront::http {

class ProxyExchange;

class Exchange : public Deletable {
 public:
  explicit Exchange(uv_loop_t* loop) : loop_(loop) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Begins the answer; failures are reported through the sink.
  virtual void start() = 0;
  // The client's TLS handshake completed (a request held in early data).
  virtual void on_handshake_done() {}
  // Request body bytes as the client's codec decoded them.
  virtual void on_request_body(std::string_view data) {}
  // The client's request trailers, before on_request_complete().
  virtual void on_request_trailers(std::vector<Header>&& trailers) {}
  virtual void on_request_complete() {}
  // True while the session should stop reading the client's body.
  virtual bool request_body_congested() const { return false; }
  // Tunnel bytes from the client, and its end (ProxyExchange only).
  virtual void on_tunnel_data(std::string_view data) {}
  virtual void on_tunnel_end() {}
  // The client side drained below its low watermark: produce more.
  virtual void on_output_drained() = 0;
  // The client went away or the session failed: no further sink call.
  // Idempotent.
  virtual void cancel() = 0;

  // Cancels `exchange` (when set) and hands it to the loop's deferred
  // delete: the one way a session lets go of its exchange, so none is ever
  // freed inside its own callback. With `record`, what the exchange knows
  // for the access log (record_into) goes there first.
  static void retire(std::unique_ptr<Exchange>& exchange, RequestRecord* record = nullptr) {
    if (!exchange) return;
    exchange->cancel();
    if (record) exchange->record_into(*record);
    uv_loop_t* loop = exchange->loop_;
    LoopContext::of(loop).defer_delete(std::move(exchange));
  }

  // This exchange as a ProxyExchange, or null.
  virtual ProxyExchange* as_proxy() { return nullptr; }

 protected:
  // After cancel(): what the access log reports of this exchange goes into
  // `record` (a ProxyExchange's upstream stats; nothing for a file).
  virtual void record_into(RequestRecord& record) {}

  uv_loop_t* const loop_;
};

}  // namespace tlsfront::http
