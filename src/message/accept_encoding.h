// Accept-Encoding negotiation (RFC 9110 §12.5.3): which of the content
// codings a server offers the client accepts, and which one to send.
//
//   Accept-Encoding = #( codings [ weight ] )
//   codings = content-coding / "identity" / "*"
//   weight  = OWS ";" OWS "q=" qvalue       qvalue = 0[.ddd] / 1[.000]
//
// Codings compare case-insensitively; "x-gzip" is "gzip" (§8.4.1.3). A
// coding's weight is that of its own element, else that of "*", else it is
// not acceptable; q=0 means "not acceptable". The one sent is the offered
// coding with the highest weight, ties going to the server's order. An
// explicit "identity" weighted above that coding keeps the body unencoded.
// An element whose weight is malformed ("q=2", "q=0.5.1", "q=") counts as
// q=0: a garbled preference never turns compression on. No Accept-Encoding
// field at all: nothing is compressed (nginx's reading; §12.5.3 would allow
// any coding, but clients that decode send the field). Parameters other
// than q are ignored.
// Thread affinity: any thread (pure functions, no allocation).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "message/request.h"

namespace tlsfront::http {

// The weight (0..1000, thousandths) `accept` (one field value, or several
// joined with ",") gives `coding` (lowercase token), following the rules
// above; -1 when neither the coding nor "*" is listed.
int accept_weight(std::string_view accept, std::string_view coding);

// Index into `offered` (lowercase tokens, server preference first) of the
// coding to send for the Accept-Encoding fields among `headers`; nullopt
// for none (identity).
std::optional<size_t> negotiate_encoding(const std::vector<Header>& headers, std::span<const std::string_view> offered);

// The same for one field value (fuzzing, tests).
std::optional<size_t> negotiate_encoding(std::string_view accept, std::span<const std::string_view> offered);

}  // namespace tlsfront::http
