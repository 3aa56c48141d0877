// What `tlsfront probe` found for one URL: the facts of its first full
// handshake, the timings of every round (a full handshake, then a
// resumption with that connection's session), the TLS 1.2 resumption
// checks, 0-RTT and TCP Fast Open, and the verdict: alarms of two severities
// that make the exit status (0 ok, 1 warning, 2 critical; the Nagios
// convention, 3 being a usage error).
// Thread affinity: none (values).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/probe_connection.h"
#include "tools/probe_facts.h"
#include "tools/probe_target.h"

namespace tlsfront::tools {

enum class Severity { Ok = 0, Warning = 1, Critical = 2 };
const char* to_string(Severity s);

struct Alarm {
  Severity severity = Severity::Warning;
  std::string reason;
};

// min / median / max of one phase over the rounds (the median of an even
// count is the lower middle value: always a measured sample).
struct PhaseStat {
  size_t count = 0;
  Micros min{}, median{}, max{};
};
PhaseStat summarize(std::vector<Micros> samples);

struct PhaseSamples {
  std::vector<Micros> dns, connect, tls, request, first_byte, total;
  void add(const PhaseTimes& t);
};

// One resumption check: a connection, then another offering its session.
struct ResumptionCheck {
  bool attempted = false;  // the first connection completed and left a session to offer
  bool resumed = false;
  std::string note;        // why it was not attempted, or how it failed
};

struct TargetReport {
  ProbeTarget target;
  std::string peer;  // address of the first connection that worked
  int rounds = 0;    // requested (--count)
  int rounds_done = 0;
  std::optional<TlsFacts> facts;  // of the first full handshake
  int http_status = 0;
  std::string http_version;
  uint64_t body_bytes = 0;
  PhaseSamples full, resumed;
  int resumed_ok = 0;    // rounds whose second connection resumed
  int resumed_tried = 0; // rounds with a session to offer
  std::string resumption_note;  // e.g. "the server issued no session"
  std::optional<bool> tls12_served;  // nullopt: not checked (the probe failed before)
  ResumptionCheck tls12_ticket, tls12_id;
  int early_sent = 0, early_accepted = 0;
  int connections = 0, tfo_requested = 0, tfo_used = 0;
  std::string failure;  // set when the probe could not finish (unreachable, handshake failed, ...)
  ProbeStage failed_at = ProbeStage::None;
  std::vector<std::string> notes;  // facts worth a line that are not alarms
  std::vector<Alarm> alarms;
  Severity status = Severity::Ok;
};

struct VerdictOptions {
  int warn_days = 21;
  bool staple_required = true;  // false: a missing staple is no warning (--no-staple-ok)
};

// Fills r.alarms, r.notes and r.status from the rest of `r`.
void evaluate(TargetReport& r, const VerdictOptions& o);

}  // namespace tlsfront::tools
