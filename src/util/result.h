// Result<T>: an expected-like return type (GCC 12 has no std::expected in C++20).
// Holds either a T or an Error{code, detail}. One project-wide Errc enum; our
// code throws nothing, every fallible function returns a [[nodiscard]] Result.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tlsfront {

enum class Errc {
  Ok = 0,
  InvalidArgument,   // a value is malformed or out of range
  Config,            // configuration file error (detail carries file:line:col)
  Io,                // file or socket I/O failed
  Tls,               // OpenSSL reported an error (detail drains the error queue)
  Protocol,          // peer violated a protocol (HTTP framing, TLS)
  Timeout,           // a deadline passed
  NotFound,          // a lookup missed
  Closed,            // the peer or the object is closed
  ResourceExhausted, // a configured limit was reached
  Upstream,          // the upstream failed (connect, reset, bad response)
  Internal,          // broken invariant surfaced as an error
};

constexpr std::string_view to_string(Errc code) {
  switch (code) {
    case Errc::Ok: return "ok";
    case Errc::InvalidArgument: return "invalid argument";
    case Errc::Config: return "config error";
    case Errc::Io: return "I/O error";
    case Errc::Tls: return "TLS error";
    case Errc::Protocol: return "protocol error";
    case Errc::Timeout: return "timeout";
    case Errc::NotFound: return "not found";
    case Errc::Closed: return "closed";
    case Errc::ResourceExhausted: return "resource exhausted";
    case Errc::Upstream: return "upstream error";
    case Errc::Internal: return "internal error";
  }
  return "unknown";
}

struct Error {
  Errc code = Errc::Internal;
  std::string detail;

  // "detail" alone when set, otherwise the code's name.
  std::string message() const { return detail.empty() ? std::string(to_string(code)) : detail; }
};

inline Error make_error(Errc code, std::string detail) { return Error{code, std::move(detail)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }
  Error&& take_error() { assert(!ok()); return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }
  Error&& take_error() { assert(!ok_); return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace tlsfront
