#include "shared/pebble.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <unistd.h>

#include <cstdlib>

namespace tlsfront::itest {

bool Pebble::installed() { return ::access("/usr/bin/pebble", X_OK) == 0 && ::access("/usr/bin/pebble-challtestsrv", X_OK) == 0; }

bool Pebble::start() {
  const int dns_port = free_port();
  port_ = free_port();
  http_port_ = free_port();
  tls_port_ = free_port();
  const std::string loop = "127.0.0.1:";
  if (!dns_.start({"/usr/bin/pebble-challtestsrv", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01",
                   loop + std::to_string(dns_port), "-http01", "", "-https01", "", "-tlsalpn01", "", "-management",
                   loop + std::to_string(free_port())},
                  dir_.file("challtestsrv.out"), dir_.file("challtestsrv.err"))) {
    return false;
  }
  const std::string config = dir_.file("pebble.json");
  write_file(config, "{\"pebble\": {\"listenAddress\": \"127.0.0.1:" + std::to_string(port_) +
                         "\", \"managementListenAddress\": \"127.0.0.1:" + std::to_string(management_port_ = free_port()) +
                         "\", \"certificate\": \"" + chain_ + "\", \"privateKey\": \"" +
                         key_ + "\", \"httpPort\": " + std::to_string(http_port_) +
                         ", \"tlsPort\": " + std::to_string(tls_port_) +
                         ", \"ocspResponderURL\": \"\", \"externalAccountBindingRequired\": " +
                         (eab_kid_.empty() ? std::string("false")
                                           : "true, \"externalAccountMACKeys\": {\"" + eab_kid_ + "\": \"" + eab_key_ +
                                                 "\"}") +
                         (validity_ > 0 ? ", \"certificateValidityPeriod\": " + std::to_string(validity_) : "") +
                         "}}\n");
  // No random sleeps before validations; nonces still rejected at random
  // (PEBBLE_WFE_NONCEREJECT's default 5 %), which the client must retry.
  ::setenv("PEBBLE_VA_NOSLEEP", "1", 1);
  if (!pebble_.start({"/usr/bin/pebble", "-config", config, "-dnsserver", loop + std::to_string(dns_port)},
                     dir_.file("pebble.out"), dir_.file("pebble.err"))) {
    return false;
  }
  const bool up = wait_until([&] {
    if (!pebble_.running() || !dns_.running()) return true;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(static_cast<uint16_t>(port_));
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    ::close(fd);
    return up;
  });
  if (!up || !pebble_.running() || !dns_.running()) {
    ADD_FAILURE() << "pebble did not start: " << log() << "\nchalltestsrv: " << dns_.err();
    return false;
  }
  return true;
}

void Pebble::stop() {
  pebble_.stop();
  dns_.stop();
}

}  // namespace tlsfront::itest
