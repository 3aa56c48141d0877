// Tests for the compile-time fix of toml++ 3.3.0's whitespace classifier
// (config/toml_fixed.h) and for what the loader does with non-ASCII text.
#include "config/toml_fixed.h"

#include <string>

#include <gtest/gtest.h>

#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

// TOML's whitespace is ASCII only, but toml++ recognizes Unicode's horizontal
// spaces (to report them); everything else must be "not whitespace".
constexpr bool unicode_horizontal_space(char32_t c) {
  return c == 0xA0 || c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200B) || c == 0x202F ||
         c == 0x205F || c == 0x2060 || c == 0x3000 || c == 0xFEFF;
}

// Evaluated by the compiler: without the fix, the first code point that
// reaches TOML_UNREACHABLE (U+00A1) makes this a compile error, not UB.
constexpr bool classifier_answers_every_code_point() {
  for (char32_t c = 0x80; c <= 0xFFFF; ++c) {  // above U+FEFF it answers from a range check
    if (toml::impl::is_non_ascii_horizontal_whitespace(c) != unicode_horizontal_space(c)) return false;
  }
  return !toml::impl::is_non_ascii_horizontal_whitespace(0x10FFFF);
}
static_assert(classifier_answers_every_code_point());

// Inputs that reached the unreachable point in toml++ 3.3.0 (the config_toml
// fuzz target found most of them): each is now a value or a positioned error.
TEST(TomlFixed, NonAsciiWhereWhitespaceMayBeIsAPositionedError) {
  EXPECT_EQ(load_error("\xc3\xbf").rfind("t.toml:1:1: syntax error: ", 0), 0u) << load_error("\xc3\xbf");
  EXPECT_EQ(load_error("a = 1 \xc2\xa7").rfind("t.toml:1:7: syntax error: ", 0), 0u) << load_error("a = 1 \xc2\xa7");
  EXPECT_EQ(load_error("a = 1Y'\xc2\xbb'").rfind("t.toml:1:", 0), 0u);
  EXPECT_EQ(load_error("x = 1\n[\xd0\x96]").rfind("t.toml:2:", 0), 0u);
  EXPECT_EQ(load_error("a = 1 \xef\xb9\x90").rfind("t.toml:1:7: syntax error: ", 0), 0u);  // U+FE50
  EXPECT_EQ(load_error(with("[log]\nlevel = \xe2\x80\x9cinfo\xe2\x80\x9d\n")).rfind("t.toml:", 0), 0u);
}

TEST(TomlFixed, NonAsciiAfterALineEndingBackslashIsStringContent) {
  // Valid TOML: the line-ending backslash trims the newline; "§" is the content.
  EXPECT_NE(load_error(with("[log]\nlevel = \"\"\"\\\n\xc2\xa7\"\"\"\n")).find("log.level"), std::string::npos);
  // An invalid escape: a positioned error.
  EXPECT_EQ(load_error("a = \"\"\"\\\xc3\xa9\"\"\"").rfind("t.toml:1:", 0), 0u);
}

TEST(TomlFixed, NonAsciiInStringsAndCommentsReachesTheSchema) {
  EXPECT_NE(load_error(with("# caf\xc3\xa9 \xd0\x96\n[log]\nlevel = \"\xc3\xbf\"\n")).find("log.level"),
            std::string::npos);
}

}  // namespace
}  // namespace tlsfront::config
