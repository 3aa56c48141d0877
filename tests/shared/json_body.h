// A deterministic JSON body of a given size, shaped like an API answer (an
// array of user records with ids, names, e-mail addresses, timestamps and
// flags whose values vary pseudo-randomly), so that compressing it costs and
// saves what a real API answer would — unlike a repeated byte pattern.
// Used by the recording backend (/json/N), the compression tests and
// tlsfront_compress_bench. Pure function; any thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace tlsfront::testdata {

// Exactly `bytes` bytes (at least 2): "[{...},{...},...]", padded inside a
// last record's "note" so the length is exact. Valid JSON for bytes >= 64.
inline std::string json_body(size_t bytes) {
  static const char* const kNames[] = {"alice", "bob",  "carol",   "dave", "erin",   "frank", "grace",  "heidi",
                                       "ivan",  "judy", "mallory", "niaj", "olivia", "peggy", "rupert", "sybil"};
  static const char* const kRoles[] = {"admin", "editor", "viewer", "owner"};
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  auto next = [&x]() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::string out = "[";
  char rec[320];
  for (uint64_t id = 1;; ++id) {
    const uint64_t r = next();
    const char* name = kNames[r % 16];
    int n = std::snprintf(
        rec, sizeof rec,
        "%s{\"id\":%llu,\"name\":\"%s\",\"email\":\"%s.%llu@example.com\",\"role\":\"%s\","
        "\"score\":%llu.%02llu,\"active\":%s,\"created_at\":\"2026-%02llu-%02lluT%02llu:%02llu:%02lluZ\","
        "\"tags\":[\"t%llu\",\"t%llu\"]}",
        id == 1 ? "" : ",", static_cast<unsigned long long>(id), name, name,
        static_cast<unsigned long long>(r % 100000), kRoles[(r >> 8) % 4],
        static_cast<unsigned long long>((r >> 12) % 1000), static_cast<unsigned long long>((r >> 22) % 100),
        ((r >> 30) & 1) ? "true" : "false", static_cast<unsigned long long>(1 + (r >> 31) % 12),
        static_cast<unsigned long long>(1 + (r >> 35) % 28), static_cast<unsigned long long>((r >> 40) % 24),
        static_cast<unsigned long long>((r >> 45) % 60), static_cast<unsigned long long>((r >> 51) % 60),
        static_cast<unsigned long long>((r >> 57) % 20), static_cast<unsigned long long>((r >> 3) % 50));
    // Room for this record, the closing "]" and a padding record.
    if (out.size() + static_cast<size_t>(n) + 1 + 16 > bytes) break;
    out.append(rec, static_cast<size_t>(n));
  }
  // Pad to the exact size: ,{"note":"xxxx"} needs 12 bytes around the x's.
  const size_t left = bytes > out.size() + 1 ? bytes - out.size() - 1 : 0;
  if (left >= 12 + (out.size() > 1 ? 1 : 0)) {
    const bool comma = out.size() > 1;
    out += comma ? ",{\"note\":\"" : "{\"note\":\"";
    out.append(left - 11 - (comma ? 1 : 0), 'x');
    out += "\"}";
  } else {
    out.append(left, ' ');
  }
  out += "]";
  out.resize(bytes, ' ');
  return out;
}

}  // namespace tlsfront::testdata
