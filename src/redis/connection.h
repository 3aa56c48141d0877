// redis::Connection: the bytes of one Redis connection (redis::Client's
// transport) over a libuv stream, a TCP socket or a Unix socket, through TLS
// (tls::TlsStream, the client side, as towards upstreams: its bound on
// post-handshake messages included) when given a TlsContext. hiredis is used only for
// what it does well: redisFormatCommandArgv writes the RESP commands (in
// client.cc) and a redisReader parses the replies here.
//
// Life: open() starts connecting; send() queues bytes at any time (they
// leave once the connection, and the TLS handshake, are done); the listener
// hears connected() once, then reply() for each reply in order, and at most
// one failed() (cannot connect, handshake refused, connection lost, a
// protocol error), after which the connection is closed and says nothing
// more. Destroying it closes the socket (through uv_close: the loop must run
// afterwards); no listener call follows, and destroying it from inside a
// listener call is safe.
//
// Shapes: failed(connecting, why): `connecting` true while the connection
// (TCP connect or TLS handshake) was not finished; `why` is what went wrong
// ("Connection refused", "certificate verify failed: ...", "the server
// closed the connection", "protocol error: ..."), never secret bytes.
// Thread affinity: the loop given to open(); the listener is called on it.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <string_view>

#include <optional>
#include "config/config.h"

#include "redis/tls_context.h"
#include "tls/tls_stream.h"
#include "util/uv_handle.h"

struct redisReader;
struct redisReply;

namespace tlsfront::redis {

class Connection {
 public:
  class Listener {
   public:
    virtual void connected() = 0;
    // `reply` is freed when this returns.
    virtual void reply(redisReply* reply) = 0;
    virtual void failed(bool connecting, std::string why) = 0;

   protected:
    ~Listener() = default;
  };

  // `tls` null: cleartext. `listener` borrowed (outlives the connection).
  Connection(Listener* listener, std::shared_ptr<const TlsContext> tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts connecting to `address`, or to `unix_socket` when non-empty.
  // Returns "" when under way, else why not (nothing is called back then).
  [[nodiscard]] std::string open(uv_loop_t* loop, const config::Endpoint& address, const std::string& unix_socket);
  // Queues RESP bytes (copied). Never calls the listener.
  void send(std::string_view bytes);
  // TCP connected (and TLS handshake done): bytes flow.
  bool ready() const { return ready_; }
  bool closed() const { return closed_; }

 private:
  void on_connect(int status);
  void on_read(ssize_t nread, const char* data);
  // Feeds decrypted bytes to the reader and hands out whole replies; false
  // when the connection died (or this object was destroyed) meanwhile.
  bool deliver(const char* data, size_t len);
  bool handshake();   // continues the TLS handshake; false when it failed
  bool read_tls();    // SSL_read until it wants more; false when the connection failed
  void flush();       // out_ (encrypted when TLS) onto the socket
  void write_raw(std::string bytes);
  void fail(bool connecting, std::string why);
  void close_stream();
  uv_stream_t* stream() const;

  Listener* listener_;
  std::shared_ptr<const TlsContext> tls_;
  UvHandle<uv_tcp_t> tcp_;
  UvHandle<uv_pipe_t> pipe_;
  bool unix_ = false;
  std::optional<tls::TlsStream> tls_stream_;  // with TLS
  redisReader* reader_ = nullptr;
  std::string out_;      // plaintext not yet handed to the socket (or to TLS)
  bool connected_ = false;  // the stream is connected
  bool ready_ = false;      // ... and the TLS handshake (if any) is done
  bool closed_ = false;
  bool* destroyed_ = nullptr;  // set by the destructor while a listener call runs
  char buf_[16 * 1024];
};

}  // namespace tlsfront::redis
