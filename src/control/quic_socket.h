// The UDP sockets of the QUIC listeners ([[listen]] quic = true): one per
// worker on the listener's address and port, in one SO_REUSEPORT group
// whose classic BPF program (SO_ATTACH_REUSEPORT_CBPF) picks the socket by
// the first octet of the packet's Destination Connection ID modulo the
// worker count — the octet 6 of a long header (after flags, version and the
// DCID length), octet 1 of a short one (RFC 9000 §17). The connection IDs a
// worker issues carry its index there (data/quic/quic_endpoint.h), so every
// packet of a connection reaches the worker that owns it, also after the
// client's address changed; a client's first Initial (a DCID it chose) goes
// to the worker its first octet names, and so do its retransmissions. The
// sockets' order in the group is their bind order, which is the workers'.
// Why not a per-4-tuple hash (the kernel's default): a client that moves
// between Wi-Fi and cellular would land on another worker, which knows
// nothing of its connection. Why not eBPF: classic BPF needs no
// CAP_BPF or CAP_SYS_ADMIN.
// Thread affinity: the control thread.
#pragma once

#include <vector>

#include "config/config.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace tlsfront::control {

// `count` (1..255) bound, non-blocking UDP sockets for `listener`'s
// address (SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY for IPv6), the first
// with the steering program. Errors: Errc::Io naming the address and the call.
[[nodiscard]] Result<std::vector<UniqueFd>> bind_quic_sockets(const config::Listener& listener, size_t count);

}  // namespace tlsfront::control
