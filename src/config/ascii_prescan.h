// A pre-scan of TOML text for bytes >= 0x80 outside strings and comments.
//
// TOML 1.0 allows non-ASCII text only inside strings (basic, literal and
// their multi-line forms, so also in quoted keys) and comments; bare keys,
// values and whitespace are ASCII. toml++ 3.3 (Debian's) reaches
// __builtin_unreachable — undefined behaviour — on a valid UTF-8 sequence in
// a bare-key or value position (its code-point classifier assumes callers
// filtered it), so the loader rejects such a byte first, with its position.
// Invalid UTF-8 inside strings and comments is left to toml++, which reports
// it as a syntax error. Two places inside a multi-line basic string are
// refused too, where toml++ 3.3 classifies a code point with the same broken
// function: right after a backslash (`"""\é"""`, an invalid escape anyway)
// and the first character after a line-ending backslash (`"""\<newline>é"""`,
// valid TOML). Where a string starts is decided as toml++ does: a quote inside
// a bare token (`a = 1Y'é'`) starts none.
// Thread affinity: any thread; pure function.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tlsfront::config {

struct TextPosition {
  enum class Where { OutsideString, AfterBackslash };  // AfterBackslash: in a multi-line basic string
  size_t line = 1;    // 1-based
  size_t column = 1;  // 1-based, in code points (UTF-8 lead bytes), as toml++ counts
  unsigned char byte = 0;
  Where where = Where::OutsideString;
};

// The first byte >= 0x80 of `toml` that is outside every string and comment
// (or right after a backslash, see above), or nullopt. Unterminated
// single-line strings end at their newline.
std::optional<TextPosition> first_non_ascii_outside_strings(std::string_view toml);

}  // namespace tlsfront::config
