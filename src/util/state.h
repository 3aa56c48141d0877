// Checked state transitions for the enum state machines (data/http,
// data/upstream, tls). Each machine is an enum class whose legal moves are
// written down next to it as
//   constexpr bool legal(Phase from, Phase to);   // the transition table
//   constexpr const char* name(Phase p);          // for the abort message
// (found by argument-dependent lookup), and its state changes only through
// transition(state, to). With TLSFRONT_CHECK_TRANSITIONS (set by the
// sanitizer build, and by any build without NDEBUG) an illegal move aborts,
// naming the call site and both states; otherwise it is a plain store.
// Staying in the same state is legal only where the table says so.
// The call site comes from __builtin_FILE()/__builtin_LINE() (GCC and Clang),
// not std::source_location, which Clang 14 with libstdc++ 12 lacks (no
// __builtin_source_location): the fuzz build uses Clang 14.
// Thread affinity: none (a function on the caller's state).
#pragma once

#include <cstdio>
#include <cstdlib>

#if !defined(TLSFRONT_CHECK_TRANSITIONS)
#if defined(NDEBUG)
#define TLSFRONT_CHECK_TRANSITIONS 0
#else
#define TLSFRONT_CHECK_TRANSITIONS 1
#endif
#endif

namespace tlsfront {

template <typename E>
inline void transition(E& state, E to, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
#if TLSFRONT_CHECK_TRANSITIONS
  if (!legal(state, to)) {
    std::fprintf(stderr, "%s:%u: illegal state transition %s -> %s\n", file, line, name(state), name(to));
    std::abort();
  }
#else
  (void)file;
  (void)line;
#endif
  state = to;
}

}  // namespace tlsfront
