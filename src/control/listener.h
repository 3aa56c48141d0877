// Listening sockets. Each worker gets its own socket per [[listen]] address,
// bound with SO_REUSEPORT so the kernel spreads connections across workers
// without a shared accept lock. Sockets are bound by the control thread
// before workers start, so an address in use fails start-up with a clear error.
// Thread affinity: bind_listeners runs on the control thread; the fds then
// belong to one worker each.
#pragma once

#include <vector>

#include "config/config.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace tlsfront::control {

// Fails with "Address already in use" when anything listens on the address,
// another tlsfront included: a plain bind (no SO_REUSEPORT) conflicts with
// every existing listener, so a second instance cannot silently take a share
// of the traffic as it would with SO_REUSEPORT alone (nginx refuses too).
[[nodiscard]] Status check_address_free(const config::Listener& listener);

// A bound, listening, non-blocking socket for `listener` (SO_REUSEADDR,
// SO_REUSEPORT, IPV6_V6ONLY for IPv6, TCP_NODELAY, which accepted sockets
// inherit). Errors: Errc::Io naming the address.
[[nodiscard]] Result<UniqueFd> bind_listener(const config::Listener& listener);

// Socket activation (sd_listen_fds(3), a tlsfront.socket unit): the listening
// TCP sockets systemd passed, matched to `listeners` by local address and
// port. Result[i] is the socket for listeners[i], or invalid when systemd
// passed none for it (then it is bound as usual). Passed sockets matching no
// [[listen]] address are closed with a warning. Unsets $LISTEN_FDS/$LISTEN_PID
// so nothing inherits them. Every worker shares a passed socket (dup), so a
// restart never closes it: connections queue in its backlog meanwhile.
// Errors: Errc::Io for a passed fd that is not a listening TCP socket.
[[nodiscard]] Result<std::vector<UniqueFd>> adopt_activated_sockets(const std::vector<config::Listener>& listeners);

}  // namespace tlsfront::control
