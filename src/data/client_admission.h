// The node-wide checks of a client address before anything is spent on it
// (Connection::admit_client, data/connection.h): its [[listen]] access rules
// and [limits] max_connections_per_client, at accept, or on a
// proxy_protocol listener once its PROXY header named the client; and the
// TLS handshake budget ([limits] max_full_handshakes_per_client,
// tls/handshake_budget.h) attached to its SSL.
// ClientConnections: every worker's client connections by address (the
// octets of IpAddress, 4 or 16 bytes), a ConcurrencyTable
// (util/concurrency_table.h) that lives as long as the process, so its
// counts cross reloads.
// Thread affinity: any thread.
#pragma once

#include <memory>

#include "util/concurrency_table.h"

namespace tlsfront::data {

// 64 MiB: ~400 000 addresses with connections open at once (each entry is
// there only while one is); beyond, a new address is refused as at its limit.
inline constexpr uint64_t kClientConnectionsBytes = uint64_t{64} << 20;
const std::shared_ptr<ConcurrencyTable>& client_connections();

}  // namespace tlsfront::data
