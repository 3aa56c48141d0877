// A small TOML lexer that knows only strings, comments and escapes.
#include "config/ascii_prescan.h"

namespace tlsfront::config {
namespace {

// Trimming: in a multi-line basic string after a line-ending backslash, up to
// the next character that is not whitespace or a newline.
enum class Lexeme { Bare, Comment, Basic, Literal, MultiBasic, Trimming, MultiLiteral };

// A backslash at s[i] ends its line: only spaces or tabs follow it before
// the newline (TOML 1.0, multi-line basic strings).
bool line_ending_backslash(std::string_view s, size_t i) {
  size_t j = i + 1;
  while (j < s.size() && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r')) ++j;
  return j < s.size() && s[j] == '\n';
}

bool starts_with(std::string_view s, size_t i, std::string_view prefix) { return s.substr(i, prefix.size()) == prefix; }

// The quotes `q` at s[i..]: a multi-line string's closing delimiter is the
// last three of a run of three to five (TOML 1.0: up to two quotes may end
// the content). 0 when fewer than three.
size_t closing_run(std::string_view s, size_t i, char q) {
  size_t n = 0;
  while (i + n < s.size() && s[i + n] == q && n < 5) ++n;
  return n >= 3 ? n : 0;
}

// Whether a quote after `prev` (the last structural byte: '\n' at a line
// start) can start a string in TOML: a key (line start, after '[', '.', '{'
// or ',') or a value (after '=', '[' or ','). Inside a bare token (a number,
// date, boolean or bare key: `a = 1Y'x'`, `w = 4"a["é`, `a = 0T="é"`) a quote
// is just another byte of the token for toml++, which reads on to the next
// value terminator, so it starts no string here either. Where this is
// unsure, a string is not assumed: the byte is refused rather than risked.
bool opens_string_after(unsigned char prev) {
  return prev == '\n' || prev == '=' || prev == '[' || prev == ',' || prev == '{' || prev == '.';
}

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r'; }

bool is_bare_key_byte(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

std::optional<TextPosition> first_non_ascii_outside_strings(std::string_view s) {
  Lexeme state = Lexeme::Bare;
  TextPosition pos;
  // Bare only: the last structural byte; whether a bare token is being
  // read; whether this is a value (after '=', or on a line of a multi-line
  // array) rather than a key; how deep in arrays the value is.
  unsigned char prev = '\n';
  bool in_token = false, in_value = false;
  int array_depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      ++pos.line;
      pos.column = 1;
      if (state == Lexeme::Comment || state == Lexeme::Basic || state == Lexeme::Literal) state = Lexeme::Bare;
      prev = '\n';
      in_token = false;
      in_value = array_depth > 0;
      continue;
    }
    switch (state) {
      case Lexeme::Bare: {
        if (c >= 0x80) {
          pos.byte = c;
          return pos;
        }
        if (in_token) {
          // toml++ reads a bare key up to the first byte that cannot be in
          // one, and a bare value (number, date, boolean) up to a value
          // terminator; until then quotes, '=' and brackets are token bytes.
          const bool ends = is_space(c) || c == '#' ||
                            (in_value ? c == ',' || c == ']' || c == '}' : !is_bare_key_byte(c));
          if (!ends) break;
          in_token = false;
        }
        if (is_space(c)) break;
        if (c == '#') {
          state = Lexeme::Comment;
        } else if ((c == '"' || c == '\'') && opens_string_after(prev)) {
          const bool multi = starts_with(s, i, c == '"' ? "\"\"\"" : "\'\'\'");
          state = c == '"' ? (multi ? Lexeme::MultiBasic : Lexeme::Basic)
                           : (multi ? Lexeme::MultiLiteral : Lexeme::Literal);
          if (multi) {
            i += 2;
            pos.column += 2;
          }
        } else if (c == '=' || c == ',' || c == '{' || c == '}' || c == '[' || c == ']' ||
                   (c == '.' && !in_value)) {  // '.': a dotted key's separator
          if (c == '=') in_value = true;
          if (in_value && c == '[') ++array_depth;
          if (in_value && c == ']' && array_depth > 0) --array_depth;
          prev = c;
        } else {
          in_token = true;
          prev = c;
        }
        break;
      }
      case Lexeme::Comment:
        break;
      case Lexeme::Trimming:
        if (c == ' ' || c == '\t' || c == '\r') break;
        if (c >= 0x80) {
          pos.byte = c;
          pos.where = TextPosition::Where::AfterBackslash;
          return pos;
        }
        state = Lexeme::MultiBasic;
        --i;  // look at it again as string content
        continue;
      case Lexeme::Basic:
      case Lexeme::MultiBasic:
        if (c == '\\' && state == Lexeme::MultiBasic && line_ending_backslash(s, i)) {
          state = Lexeme::Trimming;
        } else if (c == '\\' && state == Lexeme::MultiBasic && i + 1 < s.size() &&
                   static_cast<unsigned char>(s[i + 1]) >= 0x80) {
          // Not an escape anyway; toml++ 3.3 tests it for whitespace first.
          ++pos.column;
          pos.byte = static_cast<unsigned char>(s[i + 1]);
          pos.where = TextPosition::Where::AfterBackslash;
          return pos;
        } else if (c == '\\' && i + 1 < s.size() && s[i + 1] != '\n') {
          ++i;  // the escaped byte (a newline after '\' is a line-ending backslash, counted above)
          if (static_cast<unsigned char>(s[i]) < 0x80 || static_cast<unsigned char>(s[i]) >= 0xc0) ++pos.column;
        } else if (c == '"') {
          if (state == Lexeme::Basic) {
            state = Lexeme::Bare;
            prev = c;  // no string starts right after one (a newline inside may have reset prev)
          } else if (const size_t run = closing_run(s, i, '"')) {
            state = Lexeme::Bare;
            prev = c;
            i += run - 1;
            pos.column += run - 1;
          }
        }
        break;
      case Lexeme::Literal:
        if (c == '\'') {
          state = Lexeme::Bare;
          prev = c;
        }
        break;
      case Lexeme::MultiLiteral:
        if (const size_t run = closing_run(s, i, '\'')) {
          state = Lexeme::Bare;
          prev = c;
          i += run - 1;
          pos.column += run - 1;
        }
        break;
    }
    if (c < 0x80 || c >= 0xc0) ++pos.column;  // continuation bytes share their lead's column
  }
  return std::nullopt;
}

}  // namespace tlsfront::config
