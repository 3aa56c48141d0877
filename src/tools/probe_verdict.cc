// evaluate(): the alarms of a TargetReport (tools/probe_report.h).
#include <openssl/x509_vfy.h>

#include <algorithm>

#include <fmt/format.h>

#include "tools/probe_report.h"

namespace tlsfront::tools {
namespace {

void alarm(TargetReport& r, Severity s, std::string reason) { r.alarms.push_back({s, std::move(reason)}); }

void judge_certificate(TargetReport& r, const TlsFacts& f, const VerdictOptions& o) {
  const bool expired = f.leaf_days_left && *f.leaf_days_left < 0;
  const std::string not_after = wall_time_string(f.leaf_not_after);
  if (expired) {
    alarm(r, Severity::Critical, fmt::format("the certificate expired on {} ({} days ago)", not_after, -*f.leaf_days_left));
  } else if (f.leaf_days_left && *f.leaf_days_left <= o.warn_days) {
    alarm(r, Severity::Warning,
          fmt::format("the certificate expires in {} days ({}; --warn-days {})", *f.leaf_days_left, not_after, o.warn_days));
  }
  if (f.verify_code != X509_V_OK && !(expired && f.verify_code == X509_V_ERR_CERT_HAS_EXPIRED)) {
    std::string why = fmt::format("certificate verification failed: {}", f.verify_error);
    if (f.chain.size() == 1 && f.verify_code == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY) {
      why += " (the server sends the leaf only, without its intermediate)";
    }
    alarm(r, Severity::Critical, why);
  }
  if (!f.leaf_covers_host) {
    alarm(r, Severity::Critical, fmt::format("the certificate does not cover \"{}\"{}", r.target.host,
                                             r.target.host_is_ip ? " (no such IP address in its SAN)" : " (SNI mismatch)"));
  }
  // A leaf-only chain that verifies only because the local trust store holds
  // the intermediate: clients that do not hold it fail.
  if (f.chain.size() == 1 && !f.chain[0].self_signed && f.verified_path > 2) {
    alarm(r, Severity::Warning,
          fmt::format("the server sends the leaf only: its issuer \"{}\" came from the local trust store, so "
                      "clients without it cannot verify the chain",
                      f.chain[0].issuer));
  }
  if (f.root_sent) r.notes.push_back("the root is sent: clients already hold it, its bytes are wasted on every full handshake");
  if (f.chain.size() >= 4) r.notes.push_back(fmt::format("{} certificates sent: 2-3 is right, 4+ has extras", f.chain.size()));
}

void judge_staple(TargetReport& r, const TlsFacts& f, const VerdictOptions& o) {
  const StapleFacts& s = f.staple;
  if (!s.present) {
    if (o.staple_required) alarm(r, Severity::Warning, "no OCSP staple");
    return;
  }
  if (!s.verified) {
    alarm(r, Severity::Warning, "the OCSP staple does not verify: " + s.error);
  } else if (s.status == "revoked") {
    alarm(r, Severity::Critical, "the OCSP staple says the certificate is REVOKED");
  } else if (s.status != "good") {
    alarm(r, Severity::Warning, "the OCSP staple's status is " + s.status);
  }
}

void judge_resumption(TargetReport& r, const TlsFacts& f) {
  if (r.resumed_tried == 0) {
    alarm(r, Severity::Warning,
          fmt::format("no resumption: {}", r.resumption_note.empty() ? "the server issued no session" : r.resumption_note));
  } else if (r.resumed_ok < r.rounds_done) {
    alarm(r, Severity::Warning, fmt::format("{} resumption: {} of {} rounds resumed{}", f.version, r.resumed_ok,
                                            r.rounds_done, r.resumption_note.empty() ? "" : " (" + r.resumption_note + ")"));
  }
  if (r.tls12_served.value_or(false) && !r.tls12_ticket.resumed && !r.tls12_id.resumed && f.version != "TLSv1.2") {
    alarm(r, Severity::Warning, "no TLS 1.2 resumption: neither by session ticket nor by session ID");
  }
}

}  // namespace

const char* to_string(Severity s) {
  switch (s) {
    case Severity::Ok: return "ok";
    case Severity::Warning: return "warning";
    case Severity::Critical: return "critical";
  }
  return "critical";
}

PhaseStat summarize(std::vector<Micros> v) {
  PhaseStat s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v[(v.size() - 1) / 2];
  return s;
}

void PhaseSamples::add(const PhaseTimes& t) {
  if (t.dns) dns.push_back(*t.dns);
  if (t.connect) connect.push_back(*t.connect);
  if (t.tls) tls.push_back(*t.tls);
  if (t.request) request.push_back(*t.request);
  if (t.first_byte) first_byte.push_back(*t.first_byte);
  if (t.total) total.push_back(*t.total);
}

void evaluate(TargetReport& r, const VerdictOptions& o) {
  r.alarms.clear();
  r.notes.clear();
  if (!r.failure.empty()) {
    // The failure's own text names a failed handshake ("TLS handshake failed: ...").
    const bool unreachable = r.failed_at == ProbeStage::Dns || r.failed_at == ProbeStage::Connect;
    if (r.failed_at == ProbeStage::Tls) alarm(r, Severity::Critical, r.failure);
    else alarm(r, Severity::Critical, fmt::format("{}: {}", unreachable ? "unreachable" : "no HTTP response", r.failure));
  }
  if (r.facts) {
    const TlsFacts& f = *r.facts;
    judge_certificate(r, f, o);
    judge_staple(r, f, o);
    if (r.failure.empty()) judge_resumption(r, f);
    if (f.version == "TLSv1.2") alarm(r, Severity::Warning, "TLS 1.2 only: the server did not negotiate TLS 1.3");
  }
  r.status = Severity::Ok;
  for (const Alarm& a : r.alarms) r.status = std::max(r.status, a.severity);
}

}  // namespace tlsfront::tools
