#include "tls/cipher_list.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string_view>

#include "tls/openssl_error.h"
#include "util/openssl_ptr.h"

namespace tlsfront::tls {
namespace {

struct Entry {
  std::string text;
  size_t position = 0;  // 1-based
};

// `list` split at any of `separators`, empty entries dropped, blanks trimmed.
std::vector<Entry> split(std::string_view list, std::string_view separators) {
  std::vector<Entry> out;
  size_t position = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find_first_of(separators, start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view e = list.substr(start, end - start);
    while (!e.empty() && (e.front() == ' ' || e.front() == '\t')) e.remove_prefix(1);
    while (!e.empty() && (e.back() == ' ' || e.back() == '\t')) e.remove_suffix(1);
    if (!e.empty()) out.push_back(Entry{std::string(e), ++position});
    start = end + 1;
  }
  return out;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

bool is_command(std::string_view bare) {
  if (bare == "@STRENGTH") return true;
  constexpr std::string_view kSecLevel = "@SECLEVEL=";
  if (!bare.starts_with(kSecLevel) || bare.size() == kSecLevel.size()) return false;
  for (char c : bare.substr(kSecLevel.size())) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "unknown cipher "X" (entry 2), unknown cipher "Y" (entry 5)".
std::string list_unknown(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Status check_cipher_lists(const config::Tls& tls, std::vector<std::string>& warnings) {
  ERR_clear_error();
  SslCtxPtr scratch(SSL_CTX_new(TLS_server_method()));
  if (!scratch) return openssl_error(Errc::Tls, "SSL_CTX_new");

  std::vector<std::string> unknown;
  for (const Entry& e : split(tls.ciphers, ":,; ")) {
    const bool excludes = e.text[0] == '!' || e.text[0] == '-';
    const std::string bare = excludes || e.text[0] == '+' ? e.text.substr(1) : e.text;
    if (is_command(bare)) continue;
    const bool selects = !bare.empty() && bare[0] != '@' && SSL_CTX_set_cipher_list(scratch.get(), bare.c_str()) == 1;
    ERR_clear_error();
    if (selects) continue;
    const std::string where = quoted(e.text) + " (entry " + std::to_string(e.position) + ")";
    if (excludes) {
      warnings.push_back(config_error(tls.ciphers_origin, "tls.ciphers",
                                      where + " excludes nothing: no cipher of this OpenSSL matches " + quoted(bare))
                             .detail);
      continue;
    }
    std::string item = "unknown cipher " + where;
    if (bare.starts_with("TLS_")) item += ", a TLS 1.3 suite name: those go in tls.ciphersuites";
    unknown.push_back(std::move(item));
  }
  if (!unknown.empty()) {
    return config_error(tls.ciphers_origin, "tls.ciphers",
                        list_unknown(unknown) +
                            "; OpenSSL would skip unknown entries silently (`openssl ciphers -v ALL` lists this "
                            "OpenSSL's ciphers)");
  }

  for (const Entry& e : split(tls.ciphersuites, ":")) {
    const bool known = SSL_CTX_set_ciphersuites(scratch.get(), e.text.c_str()) == 1;
    ERR_clear_error();
    if (known) continue;
    std::string item = "unknown TLS 1.3 ciphersuite " + quoted(e.text) + " (entry " + std::to_string(e.position) + ")";
    if (SSL_CTX_set_cipher_list(scratch.get(), e.text.c_str()) == 1) {
      item += ", a TLS 1.2 cipher: those go in tls.ciphers";
    }
    ERR_clear_error();
    unknown.push_back(std::move(item));
  }
  if (!unknown.empty()) {
    return config_error(tls.ciphersuites_origin, "tls.ciphersuites",
                        list_unknown(unknown) +
                            "; OpenSSL would skip unknown entries silently (names are case-sensitive, e.g. "
                            "\"TLS_AES_128_GCM_SHA256\")");
  }
  return {};
}

}  // namespace tlsfront::tls
