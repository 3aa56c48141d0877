// Listening sockets. Each worker gets its own socket per [[listen]] address,
// bound with SO_REUSEPORT so the kernel spreads connections across workers
// without a shared accept lock. Sockets are bound by the control thread
// before workers start, so an address in use fails start-up with a clear error.
// Thread affinity: bind_listeners runs on the control thread; the fds then
// belong to one worker each.
#pragma once

#include <sys/socket.h>

#include <vector>

#include "config/config.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace tlsfront::control {

// The sockaddr of `ep` (an IP literal); 0 length when it is not one.
socklen_t to_sockaddr(const config::Endpoint& ep, sockaddr_storage& ss);

// Fails with "Address already in use" when anything listens on the address,
// another tlsfront included: a plain bind (no SO_REUSEPORT) conflicts with
// every existing listener, so a second instance cannot silently take a share
// of the traffic as it would with SO_REUSEPORT alone (nginx refuses too).
[[nodiscard]] Status check_address_free(const config::Listener& listener);

// A bound, listening, non-blocking socket for `listener` (SO_REUSEADDR,
// SO_REUSEPORT, IPV6_V6ONLY for IPv6, TCP_NODELAY, which accepted sockets
// inherit, TCP_FASTOPEN per effective_tcp_fastopen). Errors: Errc::Io naming the address.
[[nodiscard]] Result<UniqueFd> bind_listener(const config::Listener& listener);

// The TCP Fast Open queue length bind_listener sets (RFC 7413 §4.2; 0 = the
// option is not set): listener.tcp_fastopen, or for "auto" 256 when this
// network namespace's net.ipv4.tcp_fastopen has the server bit 0x2, else 0
// with one warning per process naming the sysctl. Control thread.
int effective_tcp_fastopen(const config::Listener& listener);

// `count` (>= 1) sockets for `listener`, one per worker, all on one port
// (bind_listener each). A fixed port is first checked with
// check_address_free. Port 0 binds a free port once: the first socket gets it
// from the kernel (which never hands out a port another socket holds, with
// SO_REUSEPORT or not), the others bind that same port, so the workers share
// it as they share a fixed one. Errors: as check_address_free and
// bind_listener.
[[nodiscard]] Result<std::vector<UniqueFd>> bind_listeners(const config::Listener& listener, size_t count);

// `configured` with the port `fd` is bound to: the real port of a port-0
// address, for the log. `configured` as it is when getsockname fails.
config::Endpoint bound_address(const config::Endpoint& configured, const UniqueFd& fd);

// Socket activation (sd_listen_fds(3), a tlsfront.socket unit): the listening
// TCP sockets systemd passed, matched to `listeners` by local address and
// port. Result[i] is the socket for listeners[i], or invalid when systemd
// passed none for it (then it is bound as usual). Each adopted socket gets
// TCP_FASTOPEN = effective_tcp_fastopen of its [[listen]] (0 turns it off).
// Passed sockets matching no [[listen]] address are closed with a warning.
// Unsets $LISTEN_FDS/$LISTEN_PID so nothing inherits them. Every worker
// shares a passed socket (dup), so a restart never closes it: connections
// queue in its backlog meanwhile.
// Errors: Errc::Io for a passed fd that is not a listening TCP socket, or
// when TCP_FASTOPEN cannot be set on it.
[[nodiscard]] Result<std::vector<UniqueFd>> adopt_activated_sockets(const std::vector<config::Listener>& listeners);

}  // namespace tlsfront::control
