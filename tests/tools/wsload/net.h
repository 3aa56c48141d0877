// Socket helpers of tlsfront_wsload: address parsing, a non-blocking
// listener and a non-blocking connect. Return -1 with errno set on failure.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace tlsfront::wsload {

// "IPV4:PORT" or "[IPV6]:PORT" -> ip, port (1..65535); false when malformed.
bool parse_address(const std::string& s, std::string& ip, uint16_t& port);
// A non-blocking listening socket bound to ip:port (SO_REUSEADDR).
int listen_on(const std::string& ip, uint16_t port, int backlog);
// A non-blocking socket with connect() to ip:port started (TCP_NODELAY).
int connect_nonblocking(const std::string& ip, uint16_t port);

}  // namespace tlsfront::wsload
