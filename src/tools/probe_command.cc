#include "tools/probe_command.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <charconv>

#include "tools/probe_output.h"

namespace tlsfront::tools {
namespace {

constexpr const char* kUsage =
    "Usage: tlsfront probe [OPTIONS] URL...\n"
    "  An outside-in check of HTTPS endpoints (https://HOST[:PORT][/PATH]): DNS, TCP, TLS,\n"
    "  request and first-byte times; TLS version, cipher, group, ALPN; the certificate chain\n"
    "  as sent, expiry, OCSP staple, host-name match; session resumption (TLS 1.3 ticket,\n"
    "  TLS 1.2 ticket and session ID), 0-RTT and TCP Fast Open.\n"
    "  --count N             rounds of a full handshake + a resumption (default 5, 1-100)\n"
    "  --ca FILE             trust these CAs (PEM) instead of the system store\n"
    "  --resolve H:P:ADDR    connect to ADDR for host H port P (like curl; repeatable)\n"
    "  --timeout DURATION    per connection, from DNS to the end of the response (default 10s)\n"
    "  --warn-days N         warn when the certificate expires within N days (default 21)\n"
    "  --no-staple-ok        a missing OCSP staple is no warning\n"
    "  --no-early-data       never send the request as TLS 1.3 early data (0-RTT)\n"
    "  --no-tfo              no TCP Fast Open (TCP_FASTOPEN_CONNECT)\n"
    "  --json                one JSON object instead of the table\n"
    "  --prom                Prometheus text format (node_exporter textfile collector)\n"
    "  Exit status: 0 ok, 1 warning, 2 critical (reasons on stderr), 3 usage error.\n";

struct ProbeOptions {
  int count = 5;
  std::string ca;
  std::vector<ResolveOverride> resolve;
  std::chrono::milliseconds timeout{10'000};
  VerdictOptions verdict;
  bool early_data = true;
  bool tfo = true;
  enum class Format { Text, Json, Prom } format = Format::Text;
};

struct Contexts {
  SslCtxPtr main, tls12, tls12_no_ticket;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tlsfront probe: %s\n%s", message.c_str(), kUsage);
  return 3;
}

bool parse_int(std::string_view s, int lo, int hi, int& out) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return false;
  out = v;
  return true;
}

// The kernel's TCP Fast Open switch (bit 0: client side), or -1 when unreadable.
int kernel_tfo_setting() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_fastopen");
  int v = -1;
  if (!(f >> v)) return -1;
  return v;
}

ExchangeSpec base_spec(const ProbeTarget& t, const ProbeOptions& o) {
  ExchangeSpec s;
  s.host = t.host;
  s.authority = t.authority();
  s.path = t.path;
  s.port = t.port;
  s.sni = !t.host_is_ip;
  if (t.host_is_ip) s.address = t.host;
  for (const auto& r : o.resolve) {
    if (r.host == t.host && r.port == t.port) s.address = r.address;
  }
  s.timeout = o.timeout;
  s.early_data = o.early_data;
  s.tcp_fastopen = o.tfo;
  return s;
}

void count_connection(TargetReport& r, const ExchangeResult& x) {
  if (x.failed_at == ProbeStage::Dns || x.peer.empty()) return;
  ++r.connections;
  r.tfo_requested += x.tfo_requested;
  r.tfo_used += x.tfo_used;
}

// A TLS 1.2 connection with `ctx`, then one offering its session.
ResumptionCheck tls12_check(TargetReport& r, ExchangeSpec spec, SSL_CTX* ctx, bool want_ticket) {
  ResumptionCheck c;
  spec.ctx = ctx;
  spec.session = nullptr;
  ExchangeResult first = run_exchange(spec);
  count_connection(r, first);
  if (!first.ssl) {
    if (first.failed_at == ProbeStage::Tls) r.tls12_served = r.tls12_served.value_or(false);
    c.note = "TLS 1.2 connection failed: " + first.error;
    return c;
  }
  r.tls12_served = true;
  if (!first.session || (want_ticket && !SSL_SESSION_has_ticket(first.session.get()))) {
    c.note = want_ticket ? "the server issued no TLS 1.2 session ticket" : "the server issued no session ID";
    return c;
  }
  c.attempted = true;
  spec.session = first.session.get();
  ExchangeResult second = run_exchange(spec);
  count_connection(r, second);
  c.resumed = second.ssl && SSL_session_reused(second.ssl.get()) == 1;
  if (!second.ssl) c.note = "the second connection failed: " + second.error;
  else if (!c.resumed) c.note = "the server made a full handshake";
  return c;
}

TargetReport probe_one(const ProbeTarget& t, const ProbeOptions& o, const Contexts& ctx) {
  TargetReport r;
  r.target = t;
  r.rounds = o.count;
  ExchangeSpec spec = base_spec(t, o);
  spec.ctx = ctx.main.get();
  for (int i = 0; i < o.count; ++i) {
    spec.session = nullptr;
    ExchangeResult full = run_exchange(spec);
    count_connection(r, full);
    if (r.peer.empty()) r.peer = full.peer;
    if (!r.facts && full.ssl) {
      r.facts = gather_facts(full.ssl.get(), full.session.get(), t.host, t.host_is_ip, std::chrono::system_clock::now());
      r.http_status = full.http_status;
      r.http_version = full.http_version;
      r.body_bytes = full.body_bytes;
    }
    if (full.failed_at != ProbeStage::None) {
      r.failure = (i > 0 ? "round " + std::to_string(i + 1) + ": " : "") + full.error;
      r.failed_at = full.failed_at;
      break;
    }
    ++r.rounds_done;
    r.full.add(full.times);
    if (!full.session) {
      r.resumption_note = "the server issued no session (no ticket, no session ID)";
      continue;
    }
    ++r.resumed_tried;
    spec.session = full.session.get();
    ExchangeResult again = run_exchange(spec);
    count_connection(r, again);
    r.early_sent += again.early_data_sent;
    r.early_accepted += again.early_data_accepted;
    if (again.failed_at != ProbeStage::None) {
      r.failure = "round " + std::to_string(i + 1) + ", resumption: " + again.error;
      r.failed_at = again.failed_at;
      break;
    }
    if (SSL_session_reused(again.ssl.get()) == 1) {
      ++r.resumed_ok;
      r.resumed.add(again.times);
    } else {
      r.resumption_note = "the server answered the offered session with a full handshake";
    }
  }
  if (r.failure.empty()) {
    spec.session = nullptr;
    r.tls12_ticket = tls12_check(r, spec, ctx.tls12.get(), true);
    r.tls12_id = tls12_check(r, spec, ctx.tls12_no_ticket.get(), false);
  }
  evaluate(r, o.verdict);
  if (r.tfo_used == 0 && r.connections > 0) {
    const int k = kernel_tfo_setting();
    if (!o.tfo) r.notes.push_back("TCP Fast Open not tried (--no-tfo)");
    else if (k >= 0 && !(k & 1)) r.notes.push_back("TCP Fast Open: the kernel's client side is off (net.ipv4.tcp_fastopen = " + std::to_string(k) + ")");
    else r.notes.push_back("TCP Fast Open: the server took no SYN data (it gave no TFO cookie)");
  }
  return r;
}

}  // namespace

int probe_main(int argc, char** argv) {
  // A server that resets the connection must not kill the probe: a write to
  // it fails with EPIPE instead (OpenSSL's socket BIO uses write()).
  std::signal(SIGPIPE, SIG_IGN);
  ProbeOptions o;
  std::vector<ProbeTarget> targets;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view name, std::string_view& out) {
      if (a == name) {
        if (i + 1 >= argc) return false;
        out = argv[++i];
        return true;
      }
      out = a.substr(name.size() + 1);
      return true;
    };
    auto is = [&](std::string_view name) { return a == name || (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '='); };
    std::string_view v;
    if (is("--count")) {
      if (!value("--count", v) || !parse_int(v, 1, 100, o.count)) return usage_error("--count needs a number from 1 to 100");
    } else if (is("--ca")) {
      if (!value("--ca", v) || v.empty()) return usage_error("--ca needs a PEM file");
      o.ca = std::string(v);
    } else if (is("--resolve")) {
      if (!value("--resolve", v)) return usage_error("--resolve needs HOST:PORT:ADDRESS");
      auto r = parse_resolve(v);
      if (!r) return usage_error(r.error().message());
      o.resolve.push_back(*r);
    } else if (is("--timeout")) {
      if (!value("--timeout", v)) return usage_error("--timeout needs a duration");
      auto d = parse_probe_duration(v);
      if (!d) return usage_error("--timeout: " + d.error().message());
      o.timeout = *d;
    } else if (is("--warn-days")) {
      if (!value("--warn-days", v) || !parse_int(v, 0, 3650, o.verdict.warn_days)) {
        return usage_error("--warn-days needs a number of days from 0 to 3650");
      }
    } else if (a == "--no-staple-ok") {
      o.verdict.staple_required = false;
    } else if (a == "--no-early-data") {
      o.early_data = false;
    } else if (a == "--no-tfo") {
      o.tfo = false;
    } else if (a == "--json" || a == "--prom") {
      const auto f = a == "--json" ? ProbeOptions::Format::Json : ProbeOptions::Format::Prom;
      if (o.format != ProbeOptions::Format::Text && o.format != f) return usage_error("--json and --prom exclude each other");
      o.format = f;
    } else if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option \"" + std::string(a) + "\"");
    } else {
      auto t = parse_probe_url(a);
      if (!t) return usage_error(t.error().message());
      targets.push_back(std::move(t).value());
    }
  }
  if (targets.empty()) return usage_error("no URL given");

  Contexts ctx;
  for (auto [slot, max, no_ticket] : {std::tuple{&ctx.main, 0, false}, std::tuple{&ctx.tls12, TLS1_2_VERSION, false},
                                      std::tuple{&ctx.tls12_no_ticket, TLS1_2_VERSION, true}}) {
    auto c = make_client_context({o.ca, max, no_ticket});
    if (!c) {
      std::fprintf(stderr, "tlsfront probe: %s\n", c.error().message().c_str());
      return 3;
    }
    *slot = std::move(c).value();
  }

  std::vector<TargetReport> reports;
  Severity worst = Severity::Ok;
  for (const ProbeTarget& t : targets) {
    reports.push_back(probe_one(t, o, ctx));
    const TargetReport& r = reports.back();
    worst = std::max(worst, r.status);
    for (const Alarm& al : r.alarms) {
      std::fprintf(stderr, "tlsfront probe: %s: %s: %s\n", t.url.c_str(), to_string(al.severity), al.reason.c_str());
    }
  }
  std::string out;
  switch (o.format) {
    case ProbeOptions::Format::Text: out = render_probe_text(reports); break;
    case ProbeOptions::Format::Json: out = render_probe_json(reports); break;
    case ProbeOptions::Format::Prom: out = render_probe_prom(reports, std::chrono::system_clock::now()); break;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return static_cast<int>(worst);
}

}  // namespace tlsfront::tools
