// gRPC over HTTP/2 (the gRPC project's "gRPC over HTTP2" protocol document):
// what the proxy reads of a call and the fields it answers a failed call
// with. A gRPC call is an HTTP/2 POST whose content-type begins with
// "application/grpc"; its outcome is the grpc-status field of the response's
// trailers (or, "trailers-only", of its only header section), with an
// optional percent-encoded grpc-message.
// Thread affinity: any thread (pure functions).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "message/request.h"

namespace tlsfront::http {

// gRPC's UNAVAILABLE status code: what a call gets when the proxy cannot
// serve it (no upstream reachable, upstream reset), as Envoy answers.
inline constexpr int kGrpcUnavailable = 14;

// True when the request's content-type begins with "application/grpc"
// (case-insensitive; "+proto" and the like follow).
bool is_grpc(const RequestHead& head);

// `text` as a grpc-message value: printable ASCII but '%' kept, every other
// octet percent-encoded ("%XX", uppercase hex).
std::string grpc_message(std::string_view text);

// The grpc-status of a header or trailer section: the first grpc-status
// field's value, or nullopt when there is none or it is not 1-4 decimal
// digits (gRPC's codes are 0-16; the bound keeps the int from overflowing).
std::optional<int> grpc_status_of(const std::vector<Header>& fields);

// grpc-status and grpc-message for a call that ends with `status`.
std::vector<Header> grpc_status_fields(int status, std::string_view message);

}  // namespace tlsfront::http
