// tlsfront_delay_line: a user-space emulated link between two TUN devices,
// for kernels without the netem qdisc (scripts/bench-wan.sh).
//
//   tlsfront_delay_line --dev-a NAME --dev-b NAME --lifetime SECONDS
//       [--delay-ab-ms MS] [--delay-ba-ms MS] [--rate-kbit N] [--queue PACKETS]
//       [--loss PERCENT] [--seed N] [--ready-file FILE] [--stats-file FILE]
//
// Creates the two TUN devices (IFF_TUN | IFF_NO_PI: raw IP packets, no GSO,
// so at most one MTU each) in the caller's network namespace; the caller
// moves them where it wants (`ip link set dev NAME netns NS`: the file
// descriptors stay attached), gives them addresses and brings them up. Every
// IP packet read from A is written to B after the A->B model of
// link_direction.h, and B->A alike: the same rate, queue, loss rate in both
// directions (each with its own random stream: seed and seed + 1), a delay
// per direction. Units: milliseconds (decimals allowed), kbit/s (1000 bit/s),
// percent.
//
// --ready-file: written (empty) once both devices exist. --stats-file: one
// JSON object written at exit, per direction
//   {"ab":{"received":N,"delivered":N,"lost":N,"queue_full":N,"overflow":N,"write_errors":N},"ba":{...}}
// (also printed on stderr). Exits 0 after --lifetime seconds (required:
// the process never outlives its benchmark) or at SIGTERM/SIGINT, 2 on a bad
// argument, 1 when a device cannot be created or fails.
//
// Single-threaded: one ppoll() loop with nanosecond timeouts.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "wan/link_direction.h"

namespace tlsfront::wan {
namespace {

constexpr std::size_t kMaxPacket = 65536;
constexpr int kMaxReadsPerWakeup = 256;  // per device: the other side and the deliveries get their turn

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
  std::string dev_a, dev_b, ready_file, stats_file;
  double delay_ab_ms = 0, delay_ba_ms = 0, loss_percent = 0, lifetime_s = 0;
  std::uint64_t rate_kbit = 0, seed = 1;
  std::size_t queue = 1000;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "tlsfront_delay_line: %s\nusage: tlsfront_delay_line --dev-a NAME --dev-b NAME --lifetime SECONDS "
               "[--delay-ab-ms MS] [--delay-ba-ms MS] [--rate-kbit N] [--queue PACKETS] [--loss PERCENT] "
               "[--seed N] [--ready-file FILE] [--stats-file FILE]\n",
               why);
  std::exit(2);
}

double parse_double(const char* name, const char* s, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
    usage((std::string(name) + ": not a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]: " + s)
              .c_str());
  }
  return v;
}

std::uint64_t parse_uint(const char* name, const char* s, std::uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || *s == '-' || v > hi) {
    usage((std::string(name) + ": not an integer in [0, " + std::to_string(hi) + "]: " + s).c_str());
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage((a + " needs a value").c_str());
    const char* v = argv[++i];
    if (a == "--dev-a")
      o.dev_a = v;
    else if (a == "--dev-b")
      o.dev_b = v;
    else if (a == "--ready-file")
      o.ready_file = v;
    else if (a == "--stats-file")
      o.stats_file = v;
    else if (a == "--delay-ab-ms")
      o.delay_ab_ms = parse_double("--delay-ab-ms", v, 0, 60'000);
    else if (a == "--delay-ba-ms")
      o.delay_ba_ms = parse_double("--delay-ba-ms", v, 0, 60'000);
    else if (a == "--loss")
      o.loss_percent = parse_double("--loss", v, 0, 100);
    else if (a == "--lifetime")
      o.lifetime_s = parse_double("--lifetime", v, 0.001, 86'400);
    else if (a == "--rate-kbit")
      o.rate_kbit = parse_uint("--rate-kbit", v, 100'000'000);
    else if (a == "--queue")
      o.queue = parse_uint("--queue", v, 1'000'000);
    else if (a == "--seed")
      o.seed = parse_uint("--seed", v, std::numeric_limits<std::uint64_t>::max() - 1);
    else
      usage(("unknown option " + a).c_str());
  }
  if (o.dev_a.empty() || o.dev_b.empty() || o.dev_a == o.dev_b) usage("--dev-a and --dev-b: two different names");
  if (o.dev_a.size() >= IFNAMSIZ || o.dev_b.size() >= IFNAMSIZ) usage("device names are at most 15 bytes");
  if (o.lifetime_s == 0) usage("--lifetime is required");
  return o;
}

int open_tun(const std::string& name) {
  const int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "tlsfront_delay_line: /dev/net/tun: %s\n", std::strerror(errno));
    std::exit(1);
  }
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, name.c_str(), name.size());
  if (::ioctl(fd, TUNSETIFF, &ifr) != 0) {
    std::fprintf(stderr, "tlsfront_delay_line: TUNSETIFF %s: %s\n", name.c_str(), std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

std::uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

LinkParams params(const Options& o, double delay_ms, std::uint64_t seed) {
  LinkParams p;
  p.delay_ns = static_cast<std::uint64_t>(std::llround(delay_ms * 1e6));
  p.rate_bps = o.rate_kbit * 1000u;
  p.queue_packets = o.queue;
  p.loss = o.loss_percent / 100.0;
  p.seed = seed;
  return p;
}

// One direction: packets read from `in` go through `link` and are written to `out`.
struct Pipe {
  int in;
  int out;
  LinkDirection link;
  std::uint64_t write_errors = 0;
};

// Reads what `pipe.in` holds (bounded); false on a device error.
bool read_all(Pipe& pipe) {
  for (int i = 0; i < kMaxReadsPerWakeup; ++i) {
    std::vector<std::uint8_t> packet(kMaxPacket);
    const ssize_t n = ::read(pipe.in, packet.data(), packet.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return true;
      std::fprintf(stderr, "tlsfront_delay_line: read: %s\n", std::strerror(errno));
      return false;
    }
    packet.resize(static_cast<std::size_t>(n));
    packet.shrink_to_fit();
    pipe.link.offer(std::move(packet), now_ns());
  }
  return true;
}

void deliver_due(Pipe& pipe) {
  pipe.link.deliver(now_ns(), [&](const std::vector<std::uint8_t>& packet) {
    // A full or down device drops the packet, as a real interface does.
    if (::write(pipe.out, packet.data(), packet.size()) != static_cast<ssize_t>(packet.size())) ++pipe.write_errors;
  });
}

std::string stats_json(const Pipe& p) {
  const LinkStats& s = p.link.stats();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"received\":%llu,\"delivered\":%llu,\"lost\":%llu,\"queue_full\":%llu,\"overflow\":%llu,"
                "\"write_errors\":%llu}",
                static_cast<unsigned long long>(s.received), static_cast<unsigned long long>(s.delivered),
                static_cast<unsigned long long>(s.lost), static_cast<unsigned long long>(s.queue_full),
                static_cast<unsigned long long>(s.overflow), static_cast<unsigned long long>(p.write_errors));
  return buf;
}

void write_file(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fputs(text.c_str(), f);
    if (std::fclose(f) == 0 && std::rename(tmp.c_str(), path.c_str()) == 0) return;
  }
  std::fprintf(stderr, "tlsfront_delay_line: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
}

int run(const Options& o) {
  const int a = open_tun(o.dev_a);
  const int b = open_tun(o.dev_b);
  Pipe ab{a, b, LinkDirection(params(o, o.delay_ab_ms, o.seed))};
  Pipe ba{b, a, LinkDirection(params(o, o.delay_ba_ms, o.seed + 1))};

  // SIGTERM/SIGINT are blocked except inside ppoll(): no lost wake-up.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  sigset_t block, wait_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  ::sigprocmask(SIG_BLOCK, &block, &wait_mask);
  sigdelset(&wait_mask, SIGTERM);
  sigdelset(&wait_mask, SIGINT);

  write_file(o.ready_file, "");
  const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(o.lifetime_s * 1e9);
  int status = 0;
  while (g_stop == 0) {
    const std::uint64_t now = now_ns();
    if (now >= end) break;
    const std::uint64_t wake = std::min({ab.link.next_due_ns(), ba.link.next_due_ns(), end});
    const std::uint64_t wait = wake > now ? wake - now : 0;
    const timespec ts{static_cast<time_t>(wait / 1'000'000'000u), static_cast<long>(wait % 1'000'000'000u)};
    pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    const int n = ::ppoll(fds, 2, &ts, &wait_mask);
    if (n < 0 && errno != EINTR) {
      std::fprintf(stderr, "tlsfront_delay_line: ppoll: %s\n", std::strerror(errno));
      status = 1;
      break;
    }
    if (n > 0) {
      if (((fds[0].revents & (POLLERR | POLLNVAL)) != 0 || (fds[1].revents & (POLLERR | POLLNVAL)) != 0) ||
          ((fds[0].revents & POLLIN) != 0 && !read_all(ab)) || ((fds[1].revents & POLLIN) != 0 && !read_all(ba))) {
        status = 1;
        break;
      }
    }
    deliver_due(ab);
    deliver_due(ba);
  }
  const std::string stats = "{\"ab\":" + stats_json(ab) + ",\"ba\":" + stats_json(ba) + "}\n";
  std::fputs(stats.c_str(), stderr);
  write_file(o.stats_file, stats);
  ::close(a);
  ::close(b);
  return status;
}

}  // namespace
}  // namespace tlsfront::wan

int main(int argc, char** argv) { return tlsfront::wan::run(tlsfront::wan::parse(argc, argv)); }
