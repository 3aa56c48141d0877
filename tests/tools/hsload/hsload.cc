// tlsfront_hsload: a TLS 1.3 handshake load generator that costs the client
// a small fraction of what the server pays per handshake (issue #18), so one
// load core can saturate any proxy in scripts/bench.sh's full_hs and
// resumed_hs tests.
//
//   tlsfront_hsload --connect IP:PORT [--mode full|resumed] [--concurrency N]
//       [--duration S | --count N] [--path /] [--sni localhost]
//       [--timeout-ms 5000] [--max-handshake-message 65536]
//
// Each of N connection slots runs connections one after another from one
// epoll loop: connect (non-blocking) -> ClientHello -> the server's flight
// -> client Finished + `GET PATH HTTP/1.1` (Host: SNI, Connection: close)
// -> the response, which must be a complete 200 -> close_notify, close.
// --mode resumed: each slot offers the newest ticket it holds (PSK with
// (EC)DHE, psk_dhe_ke): the first one its previous connection received, or,
// when that connection brought none, the one it offered (a server may issue
// tickets on full handshakes only, as tlsfront does; OpenSSL clients reuse
// the session then too). So all but a slot's first connection resume when the
// server accepts; one the server answers with a full handshake counts as
// full, and its slot drops the ticket it offered. --duration stops starting connections after
// S seconds (connections still open then are abandoned, not counted);
// --count stops after N connections finished. Default: --duration 5.
//
// What makes it cheap, and why that is fair to every server alike (see
// tls13_client.h for the protocol): ONE X25519 key pair for the whole run,
// reused in every ClientHello — the client pays one X25519 derive per
// handshake while the server still generates its own ephemeral key, derives
// and signs; the certificate chain and CertificateVerify signature are not
// verified (the bench verifies the chain once with curl); the record layer,
// every AEAD tag, the key schedule (through the server's Finished MAC), the
// ServerHello's choices and the HTTP status are checked, so a server that
// gets any of it wrong shows up as errors, not as speed. Every server sees
// the same ClientHello, the same one suite and group, and the same request.
//
// Bounded: per connection a timeout (--timeout-ms), records of at most
// 2^14+256 octets, handshake messages of at most --max-handshake-message
// octets, a response head of at most 16 KiB; a slot whose connection failed
// waits 10 ms before its next one (a refused port does not spin).
//
// Output, one line on stdout at the end:
//   handshakes=H resumed=R full=F errors=E abandoned=A seconds=S rate=H/S
//   cpu_seconds=C handshakes_per_cpu_second=H/C
// then, when E > 0, a line `error_reason:<name>=<count> ...` (sorted).
// Exit status: 0 when at least one connection succeeded, 1 when none did,
// 2 on a usage error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hsload/tls13_client.h"

namespace tlsfront::hsload {
namespace {

using std::chrono::milliseconds;

struct Options {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  bool resumed = false;
  int concurrency = 32;
  double duration_s = 0;
  long count = 0;
  std::string path = "/";
  std::string sni = "localhost";
  int timeout_ms = 5000;
  long max_handshake_message = 64 * 1024;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "tlsfront_hsload: %s\n"
               "usage: tlsfront_hsload --connect IP:PORT [--mode full|resumed] [--concurrency N]\n"
               "       [--duration S | --count N] [--path /] [--sni localhost] [--timeout-ms 5000]\n"
               "       [--max-handshake-message 65536]\n",
               why);
  std::exit(2);
}

bool parse_address(const std::string& s, Options& o) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = s.substr(0, colon);
  char* end = nullptr;
  long port = std::strtol(s.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535 || colon + 1 == s.size()) return false;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto* a = reinterpret_cast<sockaddr_in6*>(&o.addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    o.addr_len = sizeof *a;
    return inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a->sin6_addr) == 1;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&o.addr);
  a->sin_family = AF_INET;
  a->sin_port = htons(static_cast<uint16_t>(port));
  o.addr_len = sizeof *a;
  return inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1;
}

long parse_long(const char* v, long min, long max, const char* what) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < min || n > max) usage(what);
  return n;
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool have_addr = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + a).c_str());
    const char* v = argv[++i];
    if (a == "--connect") {
      if (!parse_address(v, o)) usage("--connect wants IPV4:PORT or [IPV6]:PORT");
      have_addr = true;
    } else if (a == "--mode") {
      std::string m = v;
      if (m != "full" && m != "resumed") usage("--mode is full or resumed");
      o.resumed = m == "resumed";
    } else if (a == "--concurrency") {
      o.concurrency = static_cast<int>(parse_long(v, 1, 10000, "--concurrency wants 1..10000"));
    } else if (a == "--duration") {
      char* end = nullptr;
      o.duration_s = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(o.duration_s > 0 && o.duration_s <= 86400))
        usage("--duration wants 0 < S <= 86400");
    } else if (a == "--count") {
      o.count = parse_long(v, 1, 1'000'000'000, "--count wants 1..1000000000");
    } else if (a == "--path") {
      o.path = v;
      if (o.path.empty() || o.path[0] != '/' || o.path.find_first_of(" \r\n") != std::string::npos)
        usage("--path wants an origin-form target (/...) without spaces");
    } else if (a == "--sni") {
      o.sni = v;
      if (o.sni.size() > 253 || o.sni.find_first_of(" \r\n:") != std::string::npos) usage("--sni wants a host name");
    } else if (a == "--timeout-ms") {
      o.timeout_ms = static_cast<int>(parse_long(v, 1, 600'000, "--timeout-ms wants 1..600000"));
    } else if (a == "--max-handshake-message") {
      o.max_handshake_message = parse_long(v, 1024, 1 << 24, "--max-handshake-message wants 1024..16777216");
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (!have_addr) usage("--connect is required");
  if (o.duration_s > 0 && o.count > 0) usage("--duration and --count exclude each other");
  if (o.duration_s == 0 && o.count == 0) o.duration_s = 5;
  return o;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// One connection slot: its current connection and the ticket it carries.
struct Slot {
  int fd = -1;
  bool connecting = false;
  std::unique_ptr<Tls13Client> client;
  std::optional<Ticket> ticket;
  Bytes out;
  size_t sent = 0;
  SteadyClock::time_point deadline;
  std::optional<SteadyClock::time_point> retry_at;  // after a failure
};

class Loop {
 public:
  explicit Loop(const Options& o) : o_(o), slots_(static_cast<size_t>(o.concurrency)) {
    std::string req = "GET " + o.path + " HTTP/1.1\r\nHost: " + o.sni + "\r\nConnection: close\r\n\r\n";
    config_.sni = o.sni;
    config_.request.assign(req.begin(), req.end());
    config_.max_handshake_message = static_cast<size_t>(o.max_handshake_message);
    config_.keep_ticket = o.resumed;
  }

  int run();

 private:
  bool may_start() const {
    if (o_.count > 0) return started_ < o_.count;
    return SteadyClock::now() < end_;
  }
  void start(Slot& s);
  void on_event(Slot& s, uint32_t events);
  void read_all(Slot& s);
  void flush(Slot& s);
  void finish(Slot& s);
  void close_fd(Slot& s);
  void scan_timers();

  const Options& o_;
  ClientConfig config_;
  std::vector<Slot> slots_;
  int ep_ = -1;
  long started_ = 0, active_ = 0, waiting_ = 0;  // connections started, open, slots waiting to retry
  long handshakes_ = 0, resumed_ = 0, errors_ = 0, abandoned_ = 0;
  std::map<std::string, long> reasons_;
  SteadyClock::time_point end_;
};

void Loop::close_fd(Slot& s) {
  if (s.fd >= 0) {
    close(s.fd);  // also leaves the epoll set
    s.fd = -1;
    --active_;
  }
}

void Loop::start(Slot& s) {
  if (s.retry_at) {
    s.retry_at.reset();
    --waiting_;
  }
  if (!may_start()) return;
  ++started_;
  s.client = std::make_unique<Tls13Client>(config_);
  s.out.clear();
  s.sent = 0;
  s.deadline = SteadyClock::now() + milliseconds(o_.timeout_ms);
  s.fd = socket(o_.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s.fd < 0) {
    s.client->fail(Error::kConnectFailed);
    return finish(s);
  }
  ++active_;  // until close_fd()
  int one = 1;
  setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = &s;
  if (epoll_ctl(ep_, EPOLL_CTL_ADD, s.fd, &ev) != 0) {
    s.client->fail(Error::kIo);
    return finish(s);
  }
  const Ticket* offer = nullptr;
  if (o_.resumed && s.ticket && SteadyClock::now() - s.ticket->received < std::chrono::seconds(s.ticket->lifetime_s))
    offer = &*s.ticket;
  s.client->start(offer, s.out);
  if (connect(s.fd, reinterpret_cast<const sockaddr*>(&o_.addr), o_.addr_len) != 0 && errno != EINPROGRESS) {
    s.client->fail(Error::kConnectFailed);
    return finish(s);
  }
  // On loopback the connection is usually up by now: the ClientHello goes at
  // once (a socket still connecting says EAGAIN, and EPOLLOUT resumes),
  // saving a wake-up and a getsockopt per connection.
  s.connecting = true;
  flush(s);
  if (s.client->state() == Tls13Client::State::kFailed) finish(s);
}

void Loop::flush(Slot& s) {
  while (s.sent < s.out.size()) {
    ssize_t n = send(s.fd, s.out.data() + s.sent, s.out.size() - s.sent, MSG_NOSIGNAL);
    if (n > 0) {
      s.sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // EPOLLOUT (edge) resumes
    if (s.connecting) {
      s.client->fail(Error::kConnectFailed);
    } else {
      s.client->fail(errno == EPIPE || errno == ECONNRESET ? Error::kConnectionReset : Error::kIo);
    }
    return;
  }
  s.connecting = false;  // all of it left: the connection is up
  s.out.clear();
  s.sent = 0;
}

void Loop::read_all(Slot& s) {
  static uint8_t buf[64 * 1024];
  for (;;) {
    ssize_t n = recv(s.fd, buf, sizeof buf, 0);
    if (n > 0) {
      s.client->on_data(ByteView(buf, static_cast<size_t>(n)), s.out);
      if (s.client->state() == Tls13Client::State::kDone || s.client->state() == Tls13Client::State::kFailed) return;
      continue;
    }
    if (n == 0) {
      s.client->on_eof();
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    s.client->fail(errno == ECONNRESET ? Error::kConnectionReset : Error::kIo);
    return;
  }
}

void Loop::on_event(Slot& s, uint32_t events) {
  if (s.connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      if (err == 0 && (events & (EPOLLERR | EPOLLHUP)) == 0) return;
      s.client->fail(Error::kConnectFailed);
      return finish(s);
    }
    if ((events & (EPOLLOUT | EPOLLIN)) == 0) return;
    s.connecting = false;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_all(s);
  if (!s.out.empty()) flush(s);
  Tls13Client::State st = s.client->state();
  if (st == Tls13Client::State::kDone || st == Tls13Client::State::kFailed) finish(s);
}

void Loop::finish(Slot& s) {
  Tls13Client& c = *s.client;
  if (c.state() == Tls13Client::State::kDone) {
    s.out.clear();
    s.sent = 0;
    c.close_notify(s.out);
    send(s.fd, s.out.data(), s.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);  // best effort
    ++handshakes_;
    if (c.resumed()) ++resumed_;
    if (c.ticket()) {
      s.ticket = std::move(c.ticket());
    } else if (c.psk_offered() && !c.resumed()) {
      s.ticket.reset();  // refused: the next connection starts afresh
    }
    close_fd(s);
    return start(s);
  }
  ++errors_;
  ++reasons_[c.error_reason()];
  s.ticket.reset();
  close_fd(s);
  s.retry_at = SteadyClock::now() + milliseconds(10);
  ++waiting_;
}

void Loop::scan_timers() {
  SteadyClock::time_point now = SteadyClock::now();
  for (Slot& s : slots_) {
    if (s.fd >= 0 && now >= s.deadline) {
      s.client->fail(Error::kTimeout);
      finish(s);
    } else if (s.fd < 0 && s.retry_at && now >= *s.retry_at) {
      start(s);
    }
  }
}

int Loop::run() {
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) {
    std::perror("tlsfront_hsload: epoll_create1");
    return 1;
  }
  SteadyClock::time_point begin = SteadyClock::now();
  end_ = begin + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(o_.duration_s));
  double cpu_begin = cpu_seconds();
  for (Slot& s : slots_) start(s);
  SteadyClock::time_point last_scan = begin;
  epoll_event events[256];
  for (;;) {
    if (active_ == 0 && (waiting_ == 0 || !may_start())) break;
    if (o_.count == 0 && SteadyClock::now() >= end_) break;
    int n = epoll_wait(ep_, events, 256, 10);
    if (n < 0 && errno != EINTR) {
      std::perror("tlsfront_hsload: epoll_wait");
      return 1;
    }
    for (int i = 0; i < n; ++i) {
      Slot& s = *static_cast<Slot*>(events[i].data.ptr);
      if (s.fd >= 0) on_event(s, events[i].events);
    }
    SteadyClock::time_point now = SteadyClock::now();
    if (now - last_scan >= milliseconds(10)) {
      last_scan = now;
      scan_timers();
    }
  }
  SteadyClock::time_point stop = SteadyClock::now();
  for (Slot& s : slots_) {
    if (s.fd >= 0) {
      ++abandoned_;
      close_fd(s);
    }
  }
  double cpu = cpu_seconds() - cpu_begin;
  double seconds = std::chrono::duration<double>(stop - begin).count();
  std::printf(
      "handshakes=%ld resumed=%ld full=%ld errors=%ld abandoned=%ld seconds=%.2f rate=%.0f "
      "cpu_seconds=%.3f handshakes_per_cpu_second=%.0f\n",
      handshakes_, resumed_, handshakes_ - resumed_, errors_, abandoned_, seconds,
      seconds > 0 ? static_cast<double>(handshakes_) / seconds : 0.0, cpu,
      cpu > 0 ? static_cast<double>(handshakes_) / cpu : 0.0);
  if (!reasons_.empty()) {
    const char* sep = "";
    for (const auto& [name, n] : reasons_) {
      std::printf("%serror_reason:%s=%ld", sep, name.c_str(), n);
      sep = " ";
    }
    std::printf("\n");
  }
  return handshakes_ > 0 ? 0 : 1;
}

}  // namespace
}  // namespace tlsfront::hsload

int main(int argc, char** argv) {
  using namespace tlsfront::hsload;
  Options o = parse_options(argc, argv);
  if (!Crypto::init()) {
    std::fprintf(stderr, "tlsfront_hsload: libcrypto lacks SHA-256, AES-128-GCM or X25519\n");
    return 1;
  }
  return Loop(o).run();
}
