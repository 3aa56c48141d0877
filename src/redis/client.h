// redis::Client: one asynchronous Redis connection on one libuv loop, shared
// by the session store (data/redis_session_store.h, on each worker loop),
// the ticket-key poller (control/redis_ticket_keys.h, on the control loop),
// the certificate store (control/cert_store.h) and the rate limiter
// (data/redis_rate_limiter.h). It owns what they need and none cares about:
//
// - the connection (redis/connection.h: our own libuv socket, TCP or Unix,
//   through TLS when Options::tls is set; hiredis only formats commands and
//   parses replies): opened lazily by the first command, AUTH sent first on
//   every new connection when a password is set, never destroyed inside a
//   user's callback (trouble drops it from the client's own timer callback);
// - deadlines: a command without an answer within `timeout` (plus
//   `connect_timeout` when it was queued before the connection was up)
//   fails, with every other pending command, and the connection is dropped;
//   a connection that cannot be made says why at once ("cannot connect to
//   127.0.0.1:6379: Connection refused", "cannot connect to 127.0.0.1:6380:
//   certificate verify failed: unable to get local issuer certificate"),
//   and "no answer within N ms" is left for real timeouts (a server, or a
//   TLS handshake, that does not answer);
// - a connection lost while no command waits is only forgotten: nobody was
//   harmed, the next command reconnects;
// - trouble (cannot connect, TLS refused, connection lost, AUTH refused, a
//   timeout, or what the user reports with fail()): pending commands fail, the
//   connection is dropped, and new commands are refused at once for a
//   backoff (`first_backoff`, doubling up to `max_backoff`; reset by
//   answered()), after which the next command reconnects. Nothing retries
//   by itself: while nobody asks, nothing happens (no busy loop, no timer);
// - the log, one line per change of state: "<log_name>: redis <where>:
//   <problem>; <consequence>" at `trouble_level`, and "<log_name>: redis
//   <where> is in use again" (info) once answered() follows trouble.
//
// What a command means, and whether an answer counts as healthy, is the
// user's: it calls answered() when replies did what it wanted (optionally
// with a problem that needs no reconnect, e.g. a refused SET) and fail() when
// they show the connection is no use.
//
// Shapes: a command is its argv (binary-safe byte strings); a reply is a
// Reply view of hiredis' reply, valid only during the callback. Units:
// milliseconds. Errors passed to a Callback: Errc::Timeout ("no answer within
// N ms"), Errc::Closed ("cannot connect to HOST:PORT: ...", "connection
// lost[: ...]"),
// Errc::Upstream ("AUTH refused: ..." or what fail() was given). An error
// *reply* (Reply::is_error) is a reply, not an error: the user decides.
//
// Trust: replies are untrusted bytes (logged lines escape them). The
// password is held in a Secret and never logged. With TLS, the server is
// trusted only once its certificate verified (redis/tls_context.h). The
// process must ignore SIGPIPE (Server::run does): a write to a dead server
// fails, not kills.
// Thread affinity: one loop. Everything, callbacks included, runs on the
// thread running the loop given to start(); call_blocking() on that thread
// (or before start()).
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "log/log.h"
#include "util/result.h"
#include "util/secret.h"
#include "redis/connection.h"
#include "redis/tls_context.h"
#include "util/uv_handle.h"

struct redisReply;

namespace tlsfront::redis {

// A read-only view of one reply (or of one element of an array reply).
// Borrowed from hiredis: valid only until the callback that got it returns.
class Reply {
 public:
  enum class Type { String, Array, Integer, Nil, Status, Error };

  explicit Reply(const redisReply* r) : r_(r) {}
  Type type() const;
  bool is_error() const { return type() == Type::Error; }
  bool is_nil() const { return type() == Type::Nil; }
  bool is_string() const { return type() == Type::String; }
  // The bytes of a String, Status or Error reply ("" for the other types).
  std::string_view str() const;
  long long integer() const;  // an Integer reply's value (0 otherwise)
  size_t size() const;        // an Array reply's element count (0 otherwise)
  Reply operator[](size_t i) const;  // element i < size() of an Array reply

 private:
  const redisReply* r_;
};

struct Options {
  config::Endpoint address;           // TCP host:port ...
  std::string unix_socket;            // ... or this Unix socket when non-empty
  std::shared_ptr<const TlsContext> tls;  // TLS to address (null: cleartext); redis/tls_context.h
  std::string user;                   // ACL user for AUTH; "" = AUTH <password>
  Secret password;                    // empty = no AUTH
  std::chrono::milliseconds timeout{50};          // per command, from queueing to reply
  std::chrono::milliseconds connect_timeout{0};   // added while the connection is being set up
  std::chrono::milliseconds first_backoff{200};   // after the first trouble ...
  std::chrono::milliseconds max_backoff{5'000};   // ... doubling up to this
  std::string log_name = "redis";     // what the log lines start with
  log::Level trouble_level = log::Level::Warn;
  // What the trouble line says after the problem (evaluated when logging).
  std::function<std::string()> consequence = [] { return std::string("retrying"); };
  // Called with true when a connection is established and false when it is
  // dropped or lost (only on a change), on the loop's thread; may be empty.
  std::function<void(bool connected)> on_connected;
};

class Client final : private Connection::Listener {
 public:
  // Called exactly once per accepted command, on the loop's thread, with the
  // reply or with the error that ended the command. Never called from inside
  // command(), fail() or answered(); never after close().
  using Callback = std::function<void(Result<Reply> reply)>;

  explicit Client(Options options);
  ~Client();  // close()
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Binds the client to `loop` (borrowed; must run until close()'s handle is
  // closed). Commands are refused before. No I/O yet.
  void start(uv_loop_t* loop);
  // Drops the connection and the timer (through uv_close: the loop must run
  // afterwards); pending callbacks are forgotten without being called. Later
  // commands are refused. Idempotent. Not from inside a Callback.
  void close();

  // Queues `argv` (formatted and copied before this returns), connecting first
  // if needed. False, and `done` is never called, when refused at once:
  // before start(), after close(), during the backoff after trouble, or when
  // no connection can be opened now (that is trouble too, and logged).
  // Refused while started and open means retry_in() > 0: a caller that
  // retries at retry_in() never spins.
  bool command(std::initializer_list<std::string_view> argv, Callback done);
  bool command(std::span<const std::string> argv, Callback done);

  // The user saw trouble in a reply (or could not build a request):
  // `problem` is logged if it is new, pending commands fail with it
  // (Errc::Upstream, later, from the loop), the connection is dropped and
  // the backoff starts or doubles.
  void fail(std::string problem);
  // Redis answered as the user wanted: the backoff is reset and the state
  // becomes `problem` ("" = healthy, logged "is in use again" after trouble;
  // otherwise logged if new, without dropping anything).
  void answered(std::string problem = {});

  // One blocking exchange, for start-up before the loop runs (and for the
  // `tlsfront cert` tool): a private loop and client with the same options
  // (TLS and AUTH included) connect (bounded by `timeout`), send every
  // command of `commands` pipelined, then hand each reply in order to
  // `on_reply` (all of it bounded by twice `timeout`). Stops at the first
  // error, returned: the client's ("cannot connect to HOST:PORT: ...",
  // "no answer within N ms", "connection lost: ...", "AUTH refused: ...")
  // or on_reply's. Logs nothing and changes no state: the caller reports
  // the outcome with answered(). Not from inside a Callback of this client.
  [[nodiscard]] Status call_blocking(std::span<const std::vector<std::string>> commands,
                                     const std::function<Status(size_t index, Reply reply)>& on_reply) const;

  // "host:port" or "unix:/path", for the caller's own log lines.
  std::string where() const;
  // True from trouble until answered() with no problem.
  bool failing() const { return !problem_.empty(); }
  // Time until commands are accepted again (0 outside the backoff).
  std::chrono::milliseconds retry_in() const;
  // Connections opened so far (for tests and statistics).
  uint64_t connects() const { return connects_; }

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Pending {
    SteadyTime deadline;
    Callback done;
  };

  bool send(int argc, const char** argv, const size_t* lens, Callback done);
  bool connect();
  std::vector<std::string_view> auth_argv() const;  // borrows opt_
  // Marks the connection broken, logs `problem` if new, starts the backoff,
  // and schedules the drop (from the timer: never inside a user's callback).
  void trouble(std::string problem, Errc code);
  void note(std::string problem);
  void drop_connection();
  void on_timer();
  void arm_timer(SteadyTime at);
  void set_connected(bool connected);  // connected_, reported to opt_.on_connected on a change
  // "cannot connect to <where>: <why>" (why: "Connection refused", ...).
  std::string cannot_connect(std::string_view why) const;

  // Connection::Listener
  void connected() override;
  void reply(redisReply* reply) override;
  void failed(bool connecting, std::string why) override;

  Options opt_;
  uv_loop_t* loop_ = nullptr;
  UvHandle<uv_timer_t> timer_;       // the earliest deadline, or a scheduled drop
  SteadyTime timer_at_{};            // when timer_ fires (while armed)
  bool timer_armed_ = false;
  std::unique_ptr<Connection> conn_;  // dropped from the timer, or when found closed by the next command
  bool auth_pending_ = false;        // our AUTH's reply comes first
  std::deque<uint64_t> in_flight_;   // ids of the commands sent on conn_, in order (replies come in order)
  bool connected_ = false;           // conn_ is connected (and its TLS handshake done)
  bool quiet_ = false;               // call_blocking's private client: logs nothing
  bool broken_ = false;              // trouble seen: drop and fail everything on the next timer
  bool closed_ = false;
  std::string broken_problem_;
  Errc broken_code_ = Errc::Closed;
  std::map<uint64_t, Pending> pending_;  // by id (privdata of the command)
  uint64_t next_id_ = 1;
  SteadyTime retry_at_{};
  std::chrono::milliseconds backoff_{0};
  std::string problem_;  // the state last logged ("" = healthy)
  uint64_t connects_ = 0;
};

}  // namespace tlsfront::redis
