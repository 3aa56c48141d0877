// Builds a data::Generation on the control thread: loads certificates and
// keys, builds the TLS contexts and the router, and attaches the OCSP
// staplers. The TLS contexts use the process-wide `session_cache` and
// `tickets` (borrowed, outlive every generation; null in --test) and get their
// staplers from `ocsp` (borrowed, outlives every generation; null: no
// stapling). Its request counter table has a block for each of `workers`
// (0 in --test) and continues `previous`'s (null: the first generation).
// `store`: the certificate store's entries it serves (control/cert_store.h);
// `acme`: the ACME challenges this node answers (null: no [acme]).
// Errors: Errc::Config, Errc::Tls (with the file named).
// Thread affinity: control thread (file I/O, blocking).
#pragma once

#include <memory>

#include "data/generation.h"
#include "tls/session_cache.h"
#include "tls/store_entry.h"
#include "tls/ticket_key_ring.h"
#include "util/result.h"

namespace tlsfront::control {

class OcspManager;

[[nodiscard]] Result<std::shared_ptr<const data::Generation>> build_generation(config::Config cfg,
                                                                             tls::SessionCache* session_cache,
                                                                             tls::TicketKeyStore* tickets,
                                                                             OcspManager* ocsp, size_t workers,
                                                                             const data::Generation* previous,
                                                                             tls::StoreSnapshot store = {},
                                                                             std::shared_ptr<const tls::AcmeChallenges> acme = {});

}  // namespace tlsfront::control
