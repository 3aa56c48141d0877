// The key a balance = "hash" group places a request by (nginx's `hash KEY
// consistent`), and the hash its ring is made of.
// Thread affinity: none (pure functions).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "config/config.h"
#include "message/request.h"

namespace tlsfront::upstream {

// A 64-bit hash of `bytes`, the same on every node and every run (so that
// nodes behind one load balancer send a key to the same server): FNV-1a,
// then splitmix64's finalizer to spread FNV's weak low bits.
uint64_t ring_hash(std::string_view bytes);

// The hash of the request's `key`: the client's address (`client_addr`,
// the real one when a trusted proxy named it), a field's value (the first
// field of that name), or a cookie's value (RFC 6265 §4.2.1: pairs split by
// "; ", in every Cookie field). nullopt when the request has no such field
// or cookie: the group then balances it as least_request.
std::optional<uint64_t> request_hash(const config::HashKey& key, const http::RequestHead& head,
                                     std::string_view client_addr);

}  // namespace tlsfront::upstream
