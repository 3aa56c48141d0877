#include "tools/probe_output.h"

#include <iterator>

#include <fmt/format.h>

#include "log/access_log.h"

namespace tlsfront::tools {
namespace {

using Out = std::back_insert_iterator<std::string>;

double ms(Micros us) { return static_cast<double>(us.count()) / 1000.0; }
double secs(Micros us) { return static_cast<double>(us.count()) / 1e6; }

struct Phase {
  const char* name;   // JSON and Prometheus
  const char* label;  // table
  std::vector<Micros> PhaseSamples::*samples;
};
constexpr Phase kPhases[] = {
    {"dns", "DNS", &PhaseSamples::dns},
    {"connect", "TCP connect", &PhaseSamples::connect},
    {"tls", "TLS handshake", &PhaseSamples::tls},
    {"request", "request sent", &PhaseSamples::request},
    {"first_byte", "first byte", &PhaseSamples::first_byte},
    {"total", "total", &PhaseSamples::total},
};

std::string resumption_line(const ResumptionCheck& c) {
  if (c.attempted) return c.resumed ? "resumed" : "not resumed (" + c.note + ")";
  return "not checked (" + c.note + ")";
}

std::string stat_cells(const PhaseStat& s) {
  if (s.count == 0) return fmt::format("{:>8} {:>8} {:>8}", "-", "-", "-");
  return fmt::format("{:>8.3f} {:>8.3f} {:>8.3f}", ms(s.min), ms(s.median), ms(s.max));
}

void text_one(std::string& out, const TargetReport& r) {
  Out o(out);
  fmt::format_to(o, "{}  {}  {}\n", r.target.url, r.peer.empty() ? "(not connected)" : "→ " + r.peer,
                 to_string(r.status));
  auto row = [&](std::string_view k, const std::string& v) { fmt::format_to(o, "  {:<16}{}\n", k, v); };
  if (!r.failure.empty()) row("failed", fmt::format("at {}: {}", to_string(r.failed_at), r.failure));
  if (r.http_status) {
    row("HTTP", fmt::format("{} {}, {} bytes of body (ALPN offered: http/1.1 only)", r.http_version, r.http_status,
                            r.body_bytes));
  }
  if (r.facts) {
    const TlsFacts& f = *r.facts;
    row("TLS", fmt::format("{}, {}, group {}, ALPN {}", f.version, f.cipher, f.group.empty() ? "-" : f.group,
                           f.alpn.empty() ? "none" : f.alpn));
    const std::string days = f.leaf_days_left ? fmt::format("{} days", *f.leaf_days_left) : "?";
    row("certificate",
        fmt::format("{}, notAfter {} ({}), covers \"{}\": {}, verified: {}", f.chain.empty() ? "?" : f.chain[0].subject,
                    wall_time_string(f.leaf_not_after), days, r.target.host, f.leaf_covers_host ? "yes" : "NO",
                    f.verify_code == 0 ? "yes" : "NO (" + f.verify_error + ")"));
    row("chain as sent", fmt::format("{} certificate{}, {} bytes (DER), root {}", f.chain.size(),
                                     f.chain.size() == 1 ? "" : "s", f.chain_bytes, f.root_sent ? "sent" : "not sent"));
    for (size_t i = 0; i < f.chain.size(); ++i) {
      const SentCertificate& c = f.chain[i];
      row("", fmt::format("#{} {} (issuer {}), {} bytes{}", i, c.subject, c.issuer, c.der_bytes,
                          c.self_signed ? ", self-signed" : ""));
    }
    const StapleFacts& s = f.staple;
    if (!s.present) row("OCSP staple", "none");
    else if (!s.verified) row("OCSP staple", fmt::format("{} bytes, does not verify: {}", s.der_bytes, s.error));
    else {
      row("OCSP staple", fmt::format("{}, {} bytes, thisUpdate {} (age {} s), nextUpdate {} (in {} s)", s.status,
                                     s.der_bytes, wall_time_string(s.this_update), s.age.count(),
                                     wall_time_string(s.next_update), s.left.count()));
    }
    std::string res = fmt::format("{}: {} of {} rounds resumed", f.version, r.resumed_ok, r.rounds_done);
    if (r.resumed_tried == 0 && !r.resumption_note.empty()) res += " (" + r.resumption_note + ")";
    if (r.tls12_served) {
      if (*r.tls12_served) {
        res += "; TLSv1.2 ticket: " + resumption_line(r.tls12_ticket) + "; TLSv1.2 session ID: " + resumption_line(r.tls12_id);
      } else {
        res += "; TLSv1.2 not served";
      }
    }
    row("resumption", res);
    if (f.max_early_data == 0) row("0-RTT", "not offered (the server's session allows no early data)");
    else {
      row("0-RTT", fmt::format("offered (max_early_data {} bytes); sent on {} resumption{}, accepted on {}", f.max_early_data,
                               r.early_sent, r.early_sent == 1 ? "" : "s", r.early_accepted));
    }
  }
  if (r.connections) {
    row("TCP Fast Open", fmt::format("SYN data on {} of {} connections", r.tfo_used, r.connections));
  }
  if (!r.full.total.empty() || !r.resumed.total.empty()) {
    fmt::format_to(o, "\n  {:<16}{:<27}  {}\n", "ms", fmt::format("full handshake ({})", r.full.total.size()),
                   fmt::format("resumed ({})", r.resumed.total.size()));
    fmt::format_to(o, "  {:<16}{:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}\n", "", "min", "median", "max", "min", "median", "max");
    for (const Phase& p : kPhases) {
      fmt::format_to(o, "  {:<16}{}   {}\n", p.label, stat_cells(summarize(r.full.*p.samples)),
                     stat_cells(summarize(r.resumed.*p.samples)));
    }
  }
  if (!r.alarms.empty() || !r.notes.empty()) out += '\n';
  for (const Alarm& a : r.alarms) fmt::format_to(o, "  {}: {}\n", to_string(a.severity), a.reason);
  for (const std::string& n : r.notes) fmt::format_to(o, "  note: {}\n", n);
}

// ---- JSON --------------------------------------------------------------------

void jstr(std::string& out, std::string_view s) { log::append_json_string(out, s); }
void jopt_str(std::string& out, std::string_view s) {
  if (s.empty()) out += "null";
  else jstr(out, s);
}

void json_stat(std::string& out, const std::vector<Micros>& v) {
  const PhaseStat s = summarize(v);
  if (s.count == 0) {
    out += "null";
    return;
  }
  fmt::format_to(Out(out), "{{\"count\":{},\"min\":{:.3f},\"median\":{:.3f},\"max\":{:.3f}}}", s.count, ms(s.min),
                 ms(s.median), ms(s.max));
}

void json_samples(std::string& out, const PhaseSamples& p) {
  out += '{';
  bool first = true;
  for (const Phase& ph : kPhases) {
    fmt::format_to(Out(out), "{}\"{}\":", first ? "" : ",", ph.name);
    json_stat(out, p.*ph.samples);
    first = false;
  }
  out += '}';
}

void json_check(std::string& out, const ResumptionCheck& c) {
  fmt::format_to(Out(out), "{{\"attempted\":{},\"resumed\":{},\"note\":", c.attempted, c.resumed);
  jopt_str(out, c.note);
  out += '}';
}

void json_one(std::string& out, const TargetReport& r) {
  Out o(out);
  out += "{\"url\":";
  jstr(out, r.target.url);
  out += ",\"host\":";
  jstr(out, r.target.host);
  fmt::format_to(o, ",\"port\":{},\"peer\":", r.target.port);
  jopt_str(out, r.peer);
  fmt::format_to(o, ",\"status\":\"{}\",\"alarms\":[", to_string(r.status));
  for (size_t i = 0; i < r.alarms.size(); ++i) {
    fmt::format_to(o, "{}{{\"severity\":\"{}\",\"reason\":", i ? "," : "", to_string(r.alarms[i].severity));
    jstr(out, r.alarms[i].reason);
    out += '}';
  }
  out += "],\"notes\":[";
  for (size_t i = 0; i < r.notes.size(); ++i) {
    if (i) out += ',';
    jstr(out, r.notes[i]);
  }
  fmt::format_to(o, "],\"rounds\":{},\"rounds_done\":{},\"failure\":", r.rounds, r.rounds_done);
  if (r.failure.empty()) out += "null";
  else {
    fmt::format_to(o, "{{\"stage\":\"{}\",\"error\":", to_string(r.failed_at));
    jstr(out, r.failure);
    out += '}';
  }
  out += ",\"http\":";
  if (!r.http_status) out += "null";
  else {
    out += "{\"version\":";
    jstr(out, r.http_version);
    fmt::format_to(o, ",\"status\":{},\"body_bytes\":{}}}", r.http_status, r.body_bytes);
  }
  out += ",\"tls\":";
  if (!r.facts) {
    out += "null";
  } else {
    const TlsFacts& f = *r.facts;
    out += "{\"version\":";
    jstr(out, f.version);
    out += ",\"cipher\":";
    jstr(out, f.cipher);
    out += ",\"group\":";
    jopt_str(out, f.group);
    out += ",\"alpn\":";
    jopt_str(out, f.alpn);
    out += ",\"alpn_offered\":[\"http/1.1\"]},\"certificate\":{\"subject\":";
    jstr(out, f.chain.empty() ? "" : f.chain[0].subject);
    out += ",\"not_after\":";
    jstr(out, wall_time_string(f.leaf_not_after));
    out += ",\"days_left\":";
    out += f.leaf_days_left ? std::to_string(*f.leaf_days_left) : "null";
    fmt::format_to(o, ",\"covers_host\":{},\"verified\":{},\"verify_error\":", f.leaf_covers_host, f.verify_code == 0);
    jopt_str(out, f.verify_error);
    fmt::format_to(o, "}},\"chain\":{{\"count\":{},\"bytes\":{},\"root_sent\":{},\"certificates\":[", f.chain.size(),
                   f.chain_bytes, f.root_sent);
    for (size_t i = 0; i < f.chain.size(); ++i) {
      const SentCertificate& c = f.chain[i];
      out += i ? ",{\"subject\":" : "{\"subject\":";
      jstr(out, c.subject);
      out += ",\"issuer\":";
      jstr(out, c.issuer);
      fmt::format_to(o, ",\"bytes\":{},\"self_signed\":{},\"not_after\":\"{}\"}}", c.der_bytes, c.self_signed,
                     wall_time_string(c.not_after));
    }
    const StapleFacts& s = f.staple;
    fmt::format_to(o, "]}},\"ocsp_staple\":{{\"present\":{},\"verified\":{},\"status\":", s.present, s.verified);
    jopt_str(out, s.status);
    out += ",\"error\":";
    jopt_str(out, s.error);
    if (s.verified) {
      fmt::format_to(o, ",\"bytes\":{},\"this_update\":\"{}\",\"next_update\":\"{}\",\"age_seconds\":{},\"next_update_in_seconds\":{}}}",
                     s.der_bytes, wall_time_string(s.this_update), wall_time_string(s.next_update), s.age.count(),
                     s.left.count());
    } else {
      fmt::format_to(o, ",\"bytes\":{},\"this_update\":null,\"next_update\":null,\"age_seconds\":null,\"next_update_in_seconds\":null}}",
                     s.der_bytes);
    }
    out += ",\"resumption\":{\"version\":";
    jstr(out, f.version);
    fmt::format_to(o, ",\"rounds_tried\":{},\"rounds_resumed\":{},\"note\":", r.resumed_tried, r.resumed_ok);
    jopt_str(out, r.resumption_note);
    out += ",\"tls12_served\":";
    out += r.tls12_served ? (*r.tls12_served ? "true" : "false") : "null";
    out += ",\"tls12_ticket\":";
    json_check(out, r.tls12_ticket);
    out += ",\"tls12_session_id\":";
    json_check(out, r.tls12_id);
    fmt::format_to(o, "}},\"early_data\":{{\"offered\":{},\"max_early_data\":{},\"sent\":{},\"accepted\":{}}}",
                   f.max_early_data > 0, f.max_early_data, r.early_sent, r.early_accepted);
  }
  fmt::format_to(o, ",\"tcp_fastopen\":{{\"connections\":{},\"requested\":{},\"used\":{}}},\"times_ms\":{{\"full\":",
                 r.connections, r.tfo_requested, r.tfo_used);
  json_samples(out, r.full);
  out += ",\"resumed\":";
  json_samples(out, r.resumed);
  out += "}}";
}

// ---- Prometheus ----------------------------------------------------------------

// Metric families in first-use order, each with its HELP and TYPE once.
class PromWriter {
 public:
  void add(std::string_view name, std::string_view help, std::string labels, double value) {
    Family* f = nullptr;
    for (auto& x : families_) {
      if (x.name == name) f = &x;
    }
    if (!f) {
      families_.push_back({std::string(name), std::string(help), {}});
      f = &families_.back();
    }
    f->lines.push_back(fmt::format("{}{{{}}} {}", name, labels, value));
  }
  std::string text() const {
    std::string out;
    for (const auto& f : families_) {
      fmt::format_to(Out(out), "# HELP {} {}\n# TYPE {} gauge\n", f.name, f.help, f.name);
      for (const auto& l : f.lines) out += l + "\n";
    }
    return out;
  }

 private:
  struct Family {
    std::string name, help;
    std::vector<std::string> lines;
  };
  std::vector<Family> families_;
};

// A label value escaped for the text format: backslash, quote, newline.
std::string label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  out += '"';
  return out;
}

void prom_one(PromWriter& w, const TargetReport& r, WallTime now) {
  const std::string u = label("url", r.target.url);
  const double ts = static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
  w.add("tlsfront_probe_status", "Verdict: 0 ok, 1 warning, 2 critical (the exit status)", u, static_cast<int>(r.status));
  w.add("tlsfront_probe_success", "1 when every exchange completed", u, r.failure.empty() ? 1 : 0);
  w.add("tlsfront_probe_timestamp_seconds", "When the probe ran (Unix time)", u, ts);
  w.add("tlsfront_probe_rounds", "Rounds completed (a full handshake each)", u, r.rounds_done);
  for (const auto& [kind, samples] : {std::pair{"full", &r.full}, std::pair{"resumed", &r.resumed}}) {
    for (const Phase& p : kPhases) {
      const PhaseStat s = summarize(samples->*p.samples);
      if (s.count == 0) continue;
      for (const auto& [stat, v] : {std::pair{"min", s.min}, std::pair{"median", s.median}, std::pair{"max", s.max}}) {
        w.add("tlsfront_probe_phase_seconds", "Duration of one phase of an exchange over the rounds",
              fmt::format("{},{},{},{}", u, label("handshake", kind), label("phase", p.name), label("stat", stat)), secs(v));
      }
    }
  }
  if (r.http_status) w.add("tlsfront_probe_http_status", "HTTP status of the first response", u, r.http_status);
  if (!r.facts) return;
  const TlsFacts& f = *r.facts;
  w.add("tlsfront_probe_tls_info", "Negotiated TLS parameters of the first full handshake",
        fmt::format("{},{},{},{},{}", u, label("version", f.version), label("cipher", f.cipher), label("group", f.group),
                    label("alpn", f.alpn)),
        1);
  w.add("tlsfront_probe_cert_verified", "1 when the chain verified against the trust store", u, f.verify_code == 0);
  w.add("tlsfront_probe_cert_covers_host", "1 when the leaf covers the host name (SNI match)", u, f.leaf_covers_host);
  w.add("tlsfront_probe_cert_not_after_timestamp_seconds", "The leaf's notAfter (Unix time)", u,
        static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(f.leaf_not_after.time_since_epoch()).count()));
  if (f.leaf_days_left) w.add("tlsfront_probe_cert_days_left", "Whole days until the leaf expires", u, *f.leaf_days_left);
  w.add("tlsfront_probe_chain_certificates", "Certificates the server sent, leaf included", u, static_cast<double>(f.chain.size()));
  w.add("tlsfront_probe_chain_bytes", "DER bytes of the certificates sent", u, static_cast<double>(f.chain_bytes));
  w.add("tlsfront_probe_chain_root_sent", "1 when the server sends a self-signed root", u, f.root_sent);
  w.add("tlsfront_probe_ocsp_staple_present", "1 when an OCSP response was stapled", u, f.staple.present);
  w.add("tlsfront_probe_ocsp_staple_good", "1 when the staple verified and says good", u,
        f.staple.verified && f.staple.status == "good");
  if (f.staple.verified) {
    w.add("tlsfront_probe_ocsp_staple_age_seconds", "Seconds since the staple's thisUpdate", u,
          static_cast<double>(f.staple.age.count()));
    w.add("tlsfront_probe_ocsp_next_update_seconds", "Seconds until the staple's nextUpdate", u,
          static_cast<double>(f.staple.left.count()));
  }
  w.add("tlsfront_probe_resumed_rounds", "Rounds whose second connection resumed the first's session", u, r.resumed_ok);
  if (r.tls12_served.value_or(false)) {
    w.add("tlsfront_probe_tls12_resumed", "1 when a TLS 1.2 session resumed, by mechanism",
          u + "," + label("mechanism", "ticket"), r.tls12_ticket.resumed);
    w.add("tlsfront_probe_tls12_resumed", "", u + "," + label("mechanism", "session_id"), r.tls12_id.resumed);
  }
  w.add("tlsfront_probe_early_data_offered", "1 when the server's session allows TLS 1.3 early data", u, f.max_early_data > 0);
  w.add("tlsfront_probe_early_data_accepted", "Resumptions whose early data the server accepted", u, r.early_accepted);
  w.add("tlsfront_probe_connections", "TCP connections the probe made", u, r.connections);
  w.add("tlsfront_probe_tcp_fastopen_connections", "Connections whose SYN carried data the server took (TFO)", u, r.tfo_used);
}

}  // namespace

std::string render_probe_text(const std::vector<TargetReport>& reports) {
  std::string out;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (i) out += '\n';
    text_one(out, reports[i]);
  }
  return out;
}

std::string render_probe_json(const std::vector<TargetReport>& reports) {
  Severity worst = Severity::Ok;
  for (const auto& r : reports) worst = std::max(worst, r.status);
  std::string out = fmt::format("{{\"status\":\"{}\",\"exit_status\":{},\"probes\":[", to_string(worst), static_cast<int>(worst));
  for (size_t i = 0; i < reports.size(); ++i) {
    if (i) out += ',';
    json_one(out, reports[i]);
  }
  out += "]}\n";
  return out;
}

std::string render_probe_prom(const std::vector<TargetReport>& reports, WallTime now) {
  PromWriter w;
  for (const auto& r : reports) prom_one(w, r, now);
  return w.text();
}

}  // namespace tlsfront::tools
