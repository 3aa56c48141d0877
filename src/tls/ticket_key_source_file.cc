#include "tls/ticket_key_source_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/unique_fd.h"

namespace tlsfront::tls {
namespace {

constexpr size_t kNginxAes128Bytes = 48;
constexpr size_t kNginxAes256Bytes = 80;

// Zeroes the read buffer on every return path.
struct CleansedBuffer {
  std::array<uint8_t, kNginxAes256Bytes + 1> bytes{};
  ~CleansedBuffer() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

std::string prefix(const config::TicketKeys& keys, size_t index) {
  std::string out = keys.files_origin.empty() ? std::string() : keys.files_origin + ": ";
  out += "tls.ticket_keys.files[" + std::to_string(index) + "]: \"" + keys.files[index] + "\"";
  return out;
}

Error file_error(const config::TicketKeys& keys, size_t index, const std::string& what) {
  return make_error(Errc::Config, prefix(keys, index) + " " + what);
}

Result<TicketKey> load_one(const config::TicketKeys& keys, size_t index, std::vector<std::string>& warnings) {
  const std::string& path = keys.files[index];
  // O_NONBLOCK: opening a FIFO must not hang the control loop; it then fails
  // the S_ISREG check below. Regular files ignore the flag.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return file_error(keys, index, std::string("cannot be opened: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return file_error(keys, index, std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return file_error(keys, index, "is not a regular file");
  if (st.st_size != static_cast<off_t>(kNginxAes128Bytes) && st.st_size != static_cast<off_t>(kNginxAes256Bytes)) {
    return file_error(keys, index,
                      "is " + std::to_string(st.st_size) +
                          " bytes; a ticket key file holds 48 or 80 bytes (scripts/gen-ticket-key.sh writes one)");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    warnings.push_back(prefix(keys, index) + " has mode " + mode +
                       ": a ticket key is a secret, make it readable by its owner only (chmod 600)");
  }
  CleansedBuffer buf;
  size_t got = 0;
  while (got < buf.bytes.size()) {
    ssize_t n = ::read(fd.get(), buf.bytes.data() + got, buf.bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return file_error(keys, index, std::string("read: ") + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != static_cast<size_t>(st.st_size)) {
    return file_error(keys, index, "changed size while being read (" + std::to_string(got) + " bytes)");
  }
  auto key = parse_nginx_ticket_key(std::span<const uint8_t>(buf.bytes.data(), got));
  if (!key.ok()) return file_error(keys, index, key.error().message());
  key->file_modified_at = TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  return key;
}

}  // namespace

Result<TicketKey> parse_nginx_ticket_key(std::span<const uint8_t> bytes) {
  TicketKey key;
  const uint8_t* p = bytes.data();
  if (bytes.size() == kNginxAes256Bytes) {
    key.cipher = TicketKey::Cipher::Aes256Cbc;
    std::memcpy(key.name.data(), p, 16);
    std::memcpy(key.hmac_secret.data(), p + 16, 32);
    std::memcpy(key.aes_key.data(), p + 48, 32);
  } else if (bytes.size() == kNginxAes128Bytes) {
    key.cipher = TicketKey::Cipher::Aes128Cbc;
    std::memcpy(key.name.data(), p, 16);
    std::memcpy(key.aes_key.data(), p + 16, 16);
    std::memcpy(key.hmac_secret.data(), p + 32, 16);
  } else {
    return make_error(Errc::InvalidArgument, "is " + std::to_string(bytes.size()) +
                                                 " bytes; a ticket key file holds 48 or 80 bytes");
  }
  key.activates_at = TimePoint::min();
  key.expires_at = TimePoint::max();
  return key;
}

Result<LoadedTicketKeys> load_ticket_key_files(const config::TicketKeys& keys) {
  if (keys.files.empty()) {
    std::string origin = keys.files_origin.empty() ? std::string() : keys.files_origin + ": ";
    return make_error(Errc::Config, origin + "tls.ticket_keys.files: at least one key file is needed");
  }
  LoadedTicketKeys out;
  std::vector<TicketKey> ring;
  for (size_t i = 0; i < keys.files.size(); ++i) {
    auto key = load_one(keys, i, out.warnings);
    if (!key.ok()) return key.take_error();
    ring.push_back(std::move(key).value());
  }
  out.ring = TicketKeyRing(std::move(ring));
  return out;
}

}  // namespace tlsfront::tls
