// HeaderEdit: a configured header rewrite (response_headers / request_headers,
// docs/configuration.md "[response_headers]") compiled once per configuration into the one shape that
// is cheap to apply per message: the lowercase names to delete from what was
// received (every name removed or set), then the fields to append, in order,
// each value a precomputed literal or a short list of literal and variable
// segments. Sequential rules (defaults' remove, set, add, then the route's)
// collapse exactly into this form: a later remove or set also drops the
// fields an earlier rule appended, which compile_edit() does at load time.
// Applying it costs one length check per received field per deleted name
// and one append per configured field: no map, no regex, no parsing.
// Thread affinity: immutable once built, readable from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "message/request.h"

namespace tlsfront::http {

// The variables a value can use; mirrors config::kHeaderVariables (RequestUri:
// a redirect's location only).
enum class HeaderVar : uint8_t {
  Host,
  RemoteAddr,
  Scheme,
  RequestId,
  SslProtocol,
  SslCipher,
  SslSessionReused,
  ServerPort,
  SslClientVerify,
  SslClientSDn,
  SslClientIDn,
  SslClientSerial,
  SslClientFingerprint,
  SslClientCert,
  ProxyProtocolTlvAlpn,
  ProxyProtocolTlvAuthority,
  ProxyProtocolTlvUniqueId,
  RequestUri
};
inline constexpr size_t kHeaderVarCount = 18;

// The values of the variables for one request, indexed by HeaderVar; borrowed.
using HeaderVars = std::array<std::string_view, kHeaderVarCount>;

struct ValueSegment {
  std::string literal;  // when !is_var
  HeaderVar var = HeaderVar::Host;
  bool is_var = false;
};

struct FieldTemplate {
  std::string name;                   // as configured (HTTP/2 lowercases it when sending)
  std::vector<ValueSegment> segments;  // empty for an empty value
  bool constant = true;               // no variable: segments hold at most one literal
  // The value for `vars`, appended to `out`.
  void append_value(std::string& out, const HeaderVars& vars) const;
};

struct HeaderEdit {
  std::vector<std::string> erase;     // lowercase names deleted from the received fields
  std::vector<FieldTemplate> append;  // then appended, in order

  bool empty() const { return erase.empty() && append.empty(); }
  // True when a received field called `name` is deleted (case-insensitive).
  bool erases(std::string_view name) const;
};

// One rule of a rewrite, in the order rules are applied.
struct EditRule {
  enum class Kind { Remove, Set, Add } kind;
  FieldTemplate field;  // Remove: only field.name
};

// Folds `rules` (applied in order on top of whatever `edit` already holds)
// into `edit`: Remove deletes received and already-appended fields of the
// name; Set does the same, then appends; Add appends.
void compile_edit(HeaderEdit& edit, const std::vector<EditRule>& rules);

// Response side: deletes the fields `edit` erases from `headers`, then
// appends its fields with their values for `vars`.
void apply_edit(std::vector<Header>& headers, const HeaderEdit& edit, const HeaderVars& vars);

}  // namespace tlsfront::http
