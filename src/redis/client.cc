#include "redis/client.h"

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace tlsfront::redis {
namespace {

using std::chrono::milliseconds;

struct ContextFree {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};
struct ReplyFree {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};

// The error of a non-blocking connect on `fd` that failed (SO_ERROR:
// ECONNREFUSED, EHOSTUNREACH, ...), 0 while it is in progress or done.
int connect_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return 0;
  return err;
}

// A command's id travels in hiredis' privdata (no allocation); 0 is the
// client's own AUTH.
void* pack(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }
uint64_t unpack(void* privdata) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(privdata)); }

// The argv of one command as hiredis wants it (borrowing the strings).
struct Argv {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  template <typename Range>
  explicit Argv(const Range& args) {
    ptrs.reserve(args.size());
    lens.reserve(args.size());
    for (const auto& a : args) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(ptrs.size()); }
};

timeval to_timeval(milliseconds d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

}  // namespace

// ---- Reply ------------------------------------------------------------------------

Reply::Type Reply::type() const {
  switch (r_->type) {
    case REDIS_REPLY_STRING: return Type::String;
    case REDIS_REPLY_ARRAY: return Type::Array;
    case REDIS_REPLY_INTEGER: return Type::Integer;
    case REDIS_REPLY_STATUS: return Type::Status;
    case REDIS_REPLY_ERROR: return Type::Error;
    default: return Type::Nil;
  }
}

std::string_view Reply::str() const {
  const int t = r_->type;
  if ((t == REDIS_REPLY_STRING || t == REDIS_REPLY_STATUS || t == REDIS_REPLY_ERROR) && r_->str != nullptr) {
    return {r_->str, r_->len};
  }
  return {};
}

long long Reply::integer() const { return r_->type == REDIS_REPLY_INTEGER ? r_->integer : 0; }

size_t Reply::size() const { return r_->type == REDIS_REPLY_ARRAY ? r_->elements : 0; }

Reply Reply::operator[](size_t i) const { return Reply(r_->element[i]); }

// ---- Client: life cycle --------------------------------------------------------------

Client::Client(Options options) : opt_(std::move(options)) {}

Client::~Client() { close(); }

void Client::start(uv_loop_t* loop) {
  if (closed_ || loop_ != nullptr) return;
  loop_ = loop;
  timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
  uv_unref(timer_.handle());  // a pending deadline alone does not keep the loop alive
}

void Client::close() {
  if (closed_) return;
  closed_ = true;
  timer_.close();
  timer_armed_ = false;
  drop_connection();
  pending_.clear();
}

std::string Client::where() const {
  return opt_.unix_socket.empty() ? opt_.address.to_string() : "unix:" + opt_.unix_socket;
}

std::string Client::cannot_connect(std::string_view why) const {
  return "cannot connect to " + where() + ": " + std::string(why);
}

milliseconds Client::retry_in() const {
  const auto left = std::chrono::ceil<milliseconds>(retry_at_ - std::chrono::steady_clock::now());
  return std::max(left, milliseconds(0));
}

// ---- commands ---------------------------------------------------------------------

bool Client::command(std::initializer_list<std::string_view> argv, Callback done) {
  Argv a(argv);
  return send(a.argc(), a.ptrs.data(), a.lens.data(), std::move(done));
}

bool Client::command(std::span<const std::string> argv, Callback done) {
  Argv a(argv);
  return send(a.argc(), a.ptrs.data(), a.lens.data(), std::move(done));
}

bool Client::send(int argc, const char** argv, const size_t* lens, Callback done) {
  if (closed_ || loop_ == nullptr || broken_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < retry_at_) return false;  // backing off: refused at once
  if (ac_ == nullptr && !connect()) return false;
  const uint64_t id = next_id_++;
  if (redisAsyncCommandArgv(ac_, reply_cb, pack(id), argc, argv, lens) != REDIS_OK) {
    trouble("cannot send a command (connection closing)", Errc::Closed);
    return false;
  }
  const SteadyTime deadline = now + opt_.timeout + (connected_ ? milliseconds(0) : opt_.connect_timeout);
  pending_.emplace(id, Pending{deadline, std::move(done)});
  arm_timer(deadline);
  return true;
}

bool Client::connect() {
  ++connects_;
  redisAsyncContext* ac = opt_.unix_socket.empty() ? redisAsyncConnect(opt_.address.host.c_str(), opt_.address.port)
                                                   : redisAsyncConnectUnix(opt_.unix_socket.c_str());
  if (ac == nullptr) {
    trouble(cannot_connect("out of memory"), Errc::Closed);
    return false;
  }
  if (ac->err) {
    std::string problem = cannot_connect(ac->errstr);
    redisAsyncFree(ac);  // not attached yet: no callback can run
    trouble(std::move(problem), Errc::Closed);
    return false;
  }
  if (redisLibuvAttach(ac, loop_) != REDIS_OK) {
    redisAsyncFree(ac);
    trouble("cannot attach the connection to the loop", Errc::Closed);
    return false;
  }
  ac->data = this;
  redisAsyncSetConnectCallback(ac, connect_cb);
  redisAsyncSetDisconnectCallback(ac, disconnect_cb);
  ac_ = ac;
  set_connected(false);
  if (opt_.password.empty()) return true;
  Argv a(auth_argv());
  if (redisAsyncCommandArgv(ac_, reply_cb, pack(0), a.argc(), a.ptrs.data(), a.lens.data()) != REDIS_OK) {
    trouble("cannot send AUTH", Errc::Closed);
    return false;
  }
  return true;
}

std::vector<std::string_view> Client::auth_argv() const {
  std::vector<std::string_view> args{"AUTH"};
  if (!opt_.user.empty()) args.push_back(opt_.user);  // else AUTH <password>: the default user
  args.push_back(opt_.password.str());
  return args;
}

void Client::drop_connection() {
  set_connected(false);
  if (ac_ == nullptr) return;
  redisAsyncContext* ac = std::exchange(ac_, nullptr);
  ac->data = nullptr;  // pending callbacks (NULL replies) and disconnect_cb find no owner
  redisAsyncFree(ac);  // never called from inside a hiredis callback
}

// ---- trouble and health ---------------------------------------------------------------

void Client::trouble(std::string problem, Errc code) {
  if (broken_) return;  // the first problem wins until the drop
  broken_ = true;
  broken_problem_ = problem;
  broken_code_ = code;
  backoff_ = backoff_.count() == 0 ? opt_.first_backoff : std::min(2 * backoff_, opt_.max_backoff);
  const auto now = std::chrono::steady_clock::now();
  retry_at_ = now + backoff_;
  note(std::move(problem));
  arm_timer(now);  // the drop: from the timer, never inside a hiredis callback
}

void Client::fail(std::string problem) { trouble(std::move(problem), Errc::Upstream); }

void Client::answered(std::string problem) {
  backoff_ = milliseconds(0);
  note(std::move(problem));
}

void Client::note(std::string problem) {
  if (problem == problem_) return;
  if (problem.empty()) {
    log::info("{}: redis {} is in use again", opt_.log_name, where());
  } else if (log::enabled(opt_.trouble_level)) {
    log::write_line(opt_.trouble_level, fmt::format("{}: redis {}: {}; {}", opt_.log_name, where(), problem,
                                                    opt_.consequence ? opt_.consequence() : std::string("retrying")));
  }
  problem_ = std::move(problem);
}

// ---- the timer: deadlines and drops ------------------------------------------------------

void Client::arm_timer(SteadyTime at) {
  if (!timer_.active()) return;
  if (timer_armed_ && timer_at_ <= at) return;
  const auto wait = std::chrono::ceil<milliseconds>(at - std::chrono::steady_clock::now());
  timer_armed_ = true;
  timer_at_ = at;
  uv_timer_start(
      timer_.get(),
      [](uv_timer_t* t) {
        if (t->data) static_cast<Client*>(t->data)->on_timer();
      },
      static_cast<uint64_t>(std::max<int64_t>(0, wait.count())), 0);
}

void Client::on_timer() {
  timer_armed_ = false;
  const auto now = std::chrono::steady_clock::now();
  if (!broken_) {
    const bool expired = std::any_of(pending_.begin(), pending_.end(),
                                     [now](const auto& p) { return p.second.deadline <= now; });
    if (expired) {
      // hiredis 0.14's libuv adapter ignores poll errors: a refused (or
      // unreachable) connect is only seen here, in the socket's error.
      const int err = !connected_ && ac_ != nullptr ? connect_error(ac_->c.fd) : 0;
      if (err != 0) {
        trouble(cannot_connect(std::strerror(err)), Errc::Closed);
      } else {
        trouble("no answer within " + std::to_string(opt_.timeout.count()) + " ms", Errc::Timeout);
      }
    }
  }
  if (broken_) {
    broken_ = false;
    drop_connection();
    std::map<uint64_t, Pending> failed = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : failed) {
      p.done(make_error(broken_code_, broken_problem_));
      if (closed_) return;
    }
  }
  if (pending_.empty()) return;
  SteadyTime next = pending_.begin()->second.deadline;
  for (const auto& [id, p] : pending_) next = std::min(next, p.deadline);
  // Never a 0 ms re-arm for a deadline: libuv's clock may lag a little.
  arm_timer(std::max(next, now + milliseconds(1)));
}

// ---- hiredis callbacks ----------------------------------------------------------------

void Client::on_reply(redisReply* reply, uint64_t id, const char* error) {
  if (broken_) return;  // everything pending fails on the coming drop
  if (reply == nullptr) {  // hiredis is freeing a lost connection
    trouble(error != nullptr ? std::string("connection lost: ") + error : std::string("connection lost"), Errc::Closed);
    return;
  }
  if (id == 0) {  // our AUTH
    if (reply->type == REDIS_REPLY_ERROR) trouble("AUTH refused: " + std::string(Reply(reply).str()), Errc::Upstream);
    return;
  }
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Callback done = std::move(it->second.done);
  pending_.erase(it);
  done(Reply(reply));
}

void Client::on_connect(int status) {
  if (status == REDIS_OK) {
    set_connected(true);
    return;
  }
  // hiredis frees the context when connect_cb returns, answering the queued
  // commands with NULL replies first (no owner: they fail on the drop).
  const std::string err = ac_ != nullptr ? ac_->errstr : "";
  ac_ = nullptr;
  set_connected(false);
  trouble(cannot_connect(err), Errc::Closed);
}

// The connection closed (hiredis frees it when disconnect_cb returns). Lost
// while commands wait is trouble; lost while idle harms nobody: the next
// command reconnects.
void Client::on_disconnect() {
  ac_ = nullptr;
  set_connected(false);
  if (!pending_.empty()) trouble("connection lost", Errc::Closed);
}

void Client::set_connected(bool connected) {
  if (connected_ == connected) return;
  connected_ = connected;
  if (opt_.on_connected) opt_.on_connected(connected);
}

void Client::reply_cb(redisAsyncContext* ac, void* reply, void* privdata) noexcept {
  auto* self = static_cast<Client*>(ac->data);
  if (self == nullptr) return;
  self->on_reply(static_cast<redisReply*>(reply), unpack(privdata), ac->err ? ac->errstr : nullptr);
}

void Client::connect_cb(const redisAsyncContext* ac, int status) noexcept {
  auto* self = static_cast<Client*>(ac->data);
  if (self == nullptr) return;
  if (status != REDIS_OK) const_cast<redisAsyncContext*>(ac)->data = nullptr;  // about to be freed
  self->on_connect(status);
}

void Client::disconnect_cb(const redisAsyncContext* ac, int /*status*/) noexcept {
  auto* self = static_cast<Client*>(ac->data);
  if (self == nullptr) return;
  const_cast<redisAsyncContext*>(ac)->data = nullptr;
  self->on_disconnect();
}

// ---- blocking, for start-up -------------------------------------------------------------

Status Client::call_blocking(std::span<const std::vector<std::string>> commands,
                             const std::function<Status(size_t index, Reply reply)>& on_reply) const {
  const timeval tv = to_timeval(opt_.timeout);
  std::unique_ptr<redisContext, ContextFree> ctx(
      opt_.unix_socket.empty() ? redisConnectWithTimeout(opt_.address.host.c_str(), opt_.address.port, tv)
                               : redisConnectUnixWithTimeout(opt_.unix_socket.c_str(), tv));
  if (!ctx || ctx->err) {
    return make_error(Errc::Closed, cannot_connect(ctx ? ctx->errstr : "out of memory"));
  }
  if (redisSetTimeout(ctx.get(), tv) != REDIS_OK) {
    return make_error(Errc::Closed, std::string("cannot set the timeout: ") + ctx->errstr);
  }
  const bool auth = !opt_.password.empty();
  if (auth) {
    Argv a(auth_argv());
    redisAppendCommandArgv(ctx.get(), a.argc(), a.ptrs.data(), a.lens.data());
  }
  for (const auto& cmd : commands) {
    Argv a(cmd);
    redisAppendCommandArgv(ctx.get(), a.argc(), a.ptrs.data(), a.lens.data());
  }
  const size_t replies = commands.size() + (auth ? 1 : 0);
  for (size_t i = 0; i < replies; ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx.get(), &raw) != REDIS_OK) {
      return make_error(Errc::Closed, std::string("no reply: ") + ctx->errstr);
    }
    std::unique_ptr<redisReply, ReplyFree> reply(static_cast<redisReply*>(raw));
    if (auth && i == 0) {
      if (reply->type == REDIS_REPLY_ERROR) {
        return make_error(Errc::Upstream, "AUTH refused: " + std::string(Reply(reply.get()).str()));
      }
      continue;
    }
    if (Status st = on_reply(auth ? i - 1 : i, Reply(reply.get())); !st) return st;
  }
  return {};
}

}  // namespace tlsfront::redis
