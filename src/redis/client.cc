#include "redis/client.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

namespace tlsfront::redis {
namespace {

using std::chrono::milliseconds;

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

// RESP bytes of one command (redisFormatCommandArgv); "" when out of memory.
std::string format_command(int argc, const char** argv, const size_t* lens) {
  char* cmd = nullptr;
  const int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
  if (len < 0 || cmd == nullptr) return {};
  std::string out(cmd, static_cast<size_t>(len));
  redisFreeCommand(cmd);
  return out;
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
  if (conn_ != nullptr && conn_->closed()) drop_connection();  // lost while idle: forgotten
  if (conn_ == nullptr && !connect()) return false;
  std::string bytes = format_command(argc, argv, lens);
  if (bytes.empty()) {
    trouble("cannot format a command (out of memory)", Errc::Closed);
    return false;
  }
  const uint64_t id = next_id_++;
  conn_->send(bytes);
  in_flight_.push_back(id);
  const SteadyTime deadline = now + opt_.timeout + (connected_ ? milliseconds(0) : opt_.connect_timeout);
  pending_.emplace(id, Pending{deadline, std::move(done)});
  arm_timer(deadline);
  return true;
}

bool Client::connect() {
  ++connects_;
  auto conn = std::make_unique<Connection>(static_cast<Connection::Listener*>(this), opt_.tls);
  if (std::string why = conn->open(loop_, opt_.address, opt_.unix_socket); !why.empty()) {
    trouble(cannot_connect(why), Errc::Closed);
    return false;
  }
  conn_ = std::move(conn);
  in_flight_.clear();
  auth_pending_ = false;
  set_connected(false);
  if (opt_.password.empty()) return true;
  Argv a(auth_argv());
  const Secret bytes(format_command(a.argc(), a.ptrs.data(), a.lens.data()));  // wiped when done
  if (bytes.empty()) {
    trouble("cannot send AUTH (out of memory)", Errc::Closed);
    return false;
  }
  conn_->send(bytes.str());
  auth_pending_ = true;
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
  in_flight_.clear();
  auth_pending_ = false;
  conn_.reset();  // closes the socket; it calls nothing back
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
  arm_timer(now);  // the drop: from the timer, never inside a user's callback
}

void Client::fail(std::string problem) { trouble(std::move(problem), Errc::Upstream); }

void Client::answered(std::string problem) {
  backoff_ = milliseconds(0);
  note(std::move(problem));
}

void Client::note(std::string problem) {
  if (problem == problem_) return;
  if (quiet_) {
    problem_ = std::move(problem);
    return;
  }
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
    if (expired) trouble("no answer within " + std::to_string(opt_.timeout.count()) + " ms", Errc::Timeout);
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

// ---- the connection's events -------------------------------------------------------------

void Client::connected() { set_connected(true); }

void Client::reply(redisReply* r) {
  if (broken_) return;  // everything pending fails on the coming drop
  if (auth_pending_) {  // our AUTH
    auth_pending_ = false;
    if (r->type == REDIS_REPLY_ERROR) trouble("AUTH refused: " + std::string(Reply(r).str()), Errc::Upstream);
    return;
  }
  if (in_flight_.empty()) {
    trouble("a reply nobody asked for", Errc::Closed);
    return;
  }
  const uint64_t id = in_flight_.front();
  in_flight_.pop_front();
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Callback done = std::move(it->second.done);
  pending_.erase(it);
  done(Reply(r));
}

// Cannot connect (or the TLS handshake was refused) is trouble; lost while
// commands wait is trouble; lost while idle harms nobody: the closed
// connection is forgotten by the next command, which reconnects.
void Client::failed(bool connecting, std::string why) {
  set_connected(false);
  if (connecting) {
    trouble(cannot_connect(why), Errc::Closed);
  } else if (!pending_.empty() || auth_pending_) {
    trouble("connection lost: " + why, Errc::Closed);
  }
}

void Client::set_connected(bool connected) {
  if (connected_ == connected) return;
  connected_ = connected;
  if (opt_.on_connected) opt_.on_connected(connected);
}

// ---- blocking, for start-up -------------------------------------------------------------

Status Client::call_blocking(std::span<const std::vector<std::string>> commands,
                             const std::function<Status(size_t index, Reply reply)>& on_reply) const {
  Options o;
  o.address = opt_.address;
  o.unix_socket = opt_.unix_socket;
  o.tls = opt_.tls;
  o.user = opt_.user;
  o.password = Secret(opt_.password.str());
  o.timeout = opt_.timeout;
  o.connect_timeout = opt_.timeout;
  o.consequence = nullptr;
  uv_loop_t loop;
  if (int rc = uv_loop_init(&loop); rc != 0) return make_error(Errc::Io, std::string("uv_loop_init: ") + uv_strerror(rc));
  std::optional<Error> error;
  size_t answered = 0;
  {
    Client c(std::move(o));
    c.quiet_ = true;
    c.start(&loop);
    uv_ref(c.timer_.handle());  // here the deadlines are what keeps the loop going
    for (size_t i = 0; i < commands.size() && !error; ++i) {
      const bool sent = c.command(commands[i], [&, i](Result<Reply> r) {
        if (error) return;
        if (!r) {
          error = r.error();
        } else if (Status st = on_reply(i, *r); !st) {
          error = st.error();
        } else {
          ++answered;
        }
      });
      if (!sent) error = make_error(Errc::Closed, c.problem_.empty() ? cannot_connect("refused") : c.problem_);
    }
    while (!error && answered < commands.size()) {
      // Something (a deadline, the socket) is always alive while commands
      // wait; a loop with nothing left would be a bug, not a wait.
      if (uv_run(&loop, UV_RUN_ONCE) == 0 && !error && answered < commands.size() && !uv_loop_alive(&loop)) {
        error = make_error(Errc::Closed, "no answer (nothing left to wait for)");
      }
    }
    c.close();
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the closes
  uv_loop_close(&loop);
  if (error) return *error;
  return {};
}

}  // namespace tlsfront::redis
