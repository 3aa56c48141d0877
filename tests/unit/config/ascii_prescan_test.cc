// Tests for the pre-scan that keeps non-ASCII bytes in key/value position
// away from toml++ (which reaches undefined behaviour on them).
#include "config/ascii_prescan.h"

#include <string>

#include <gtest/gtest.h>

#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

std::string where(std::string_view toml) {
  const auto at = first_non_ascii_outside_strings(toml);
  if (!at) return "none";
  return std::to_string(at->line) + ":" + std::to_string(at->column) + ":" + std::to_string(at->byte);
}

TEST(AsciiPrescan, FindsBytesInKeyValueAndWhitespacePositions) {
  EXPECT_EQ(where("\xc3\xbf"), "1:1:195");
  EXPECT_EQ(where("a = 1 \xc3\xbf"), "1:7:195");
  EXPECT_EQ(where("x = 1\n[\xc3\xbf]"), "2:2:195");
  EXPECT_EQ(where("a = \xc3\xbf"), "1:5:195");
  EXPECT_EQ(where("a\xc2\xa0= 1"), "1:2:194");
  // Columns count code points: the "é" in the string takes one.
  EXPECT_EQ(where("a = \"\xc3\xa9\" \xe2\x80\x83"), "1:9:226");
}

TEST(AsciiPrescan, LeavesStringsAndCommentsToToml) {
  EXPECT_EQ(where("a = \"\xc3\xbf\"\n"), "none");
  EXPECT_EQ(where("a = '\xff'\n"), "none");
  EXPECT_EQ(where("\"\xc3\xbf\" = 1\n"), "none");  // quoted key
  EXPECT_EQ(where("# \xc3\xbf\na = 1\n"), "none");
  EXPECT_EQ(where("a = \"\"\"\n\xc3\xbf\n\"\"\"\n"), "none");
  EXPECT_EQ(where("a = '''\n\xc3\xbf\n'''\n"), "none");
  // An escaped quote does not end a basic string; a literal string has no escapes.
  EXPECT_EQ(where("a = \"\\\"\xc3\xbf\"\n"), "none");
  EXPECT_EQ(where("a = '\\' \xc3\xbf"), "1:9:195");
}

TEST(AsciiPrescan, StringEndsWhereTomlEndsIt) {
  // Up to two quotes end a multi-line string's content: the delimiter is the last three.
  EXPECT_EQ(where("a = \"\"\"x\"\"\"\"\" \xc3\xbf"), "1:15:195");
  EXPECT_EQ(where("a = '''x'''' \xc3\xbf"), "1:14:195");
  // An unterminated single-line string ends at its newline.
  EXPECT_EQ(where("a = \"open\n\xc3\xbf = 1"), "2:1:195");
  // A comment ends at its newline.
  EXPECT_EQ(where("# note\n\xc3\xbf"), "2:1:195");
}

// A quote starts a string only where TOML allows one; elsewhere toml++ reads
// it as part of bare text (found by the config_toml fuzz target).
TEST(AsciiPrescan, QuoteInsideBareTextStartsNoString) {
  EXPECT_EQ(where("a = 1Y'\xc2\xbb'"), "1:8:194");
  EXPECT_EQ(where("a = 1\"\xc2\xbb\""), "1:7:194");
  EXPECT_EQ(where("x\"\xc2\xbb\" = 1"), "1:3:194");
  EXPECT_EQ(where("w= 4\"aut[\"[!ioCM-SHA25\xca\xbe"), "1:23:202");  // '[' inside the token opens nothing
  EXPECT_EQ(where("a = 1.\"\xc3\xa9\""), "1:8:195");                 // nor does 1.5's '.'
  EXPECT_EQ(where("a = \"x\"\"\xc3\xa9\""), "1:9:195");               // a quote right after a string
  EXPECT_EQ(where("a = \"\"\"x\ny\"\"\" \"\xc3\xa9\""), "2:7:195");       // also after a multi-line one
  EXPECT_EQ(where("a = 0TT\\T\"/1\"V=\"\"\"=\xc3\xa9\"\""), "1:20:195");  // '=' inside a value token
  EXPECT_EQ(where("a = [\n  1.\"\xc3\xa9\"\n]"), "2:6:195");         // a multi-line array's line is a value
  EXPECT_EQ(where("a = [\n  1,\n]\nb = 2 \xc3\xa9"), "4:7:195");       // ... until its ']'
  // Where strings may start: keys, values, array elements, inline tables, dotted keys.
  EXPECT_EQ(where("a = [ '\xc3\xa9',\n  \"\xc3\xa9\" ]\nb = { \"\xc3\xa9\" = 1, c = '\xc3\xa9' }\n"
                  "d.'\xc3\xa9' = 1\n[\"\xc3\xa9\"]\n\t'\xc3\xa9' = \"\"\"\xc3\xa9\"\"\"\n"),
            "none");
}

// toml++ 3.3 also breaks on non-ASCII text as the first character after a
// line-ending backslash (found by the config_toml fuzz target).
TEST(AsciiPrescan, NonAsciiRightAfterALineEndingBackslashIsRefused) {
  EXPECT_EQ(where("a = \"\"\"\\\n\xc3\xa9\"\"\""), "2:1:195");
  EXPECT_EQ(where("a = \"\"\"x\\  \n\n \t\xc3\xa9\"\"\""), "3:3:195");
  EXPECT_EQ(first_non_ascii_outside_strings("a = \"\"\"\\\n\xc3\xa9\"\"\"")->where,
            TextPosition::Where::AfterBackslash);
  // After an ASCII character the rest of the line is ordinary content.
  EXPECT_EQ(where("a = \"\"\"\\\n x\xc3\xa9\"\"\"\n"), "none");
  // A backslash before non-ASCII text (an invalid escape) in a multi-line string.
  EXPECT_EQ(where("a = \"\"\"\\\xc3\xa9\"\"\""), "1:9:195");
  EXPECT_EQ(where("a = \"\\\xc3\xa9\"\n"), "none");  // single-line: toml++ reports the bad escape
  // An escaped backslash ends no line; nor does one in a literal string.
  EXPECT_EQ(where("a = \"\"\"\\\\\n\xc3\xa9\"\"\"\n"), "none");
  EXPECT_EQ(where("a = \'\'\'\\\n\xc3\xa9\'\'\'\n"), "none");
}

TEST(AsciiPrescan, LoaderReportsThePositionWithoutReachingToml) {
  EXPECT_EQ(load_error("\xc3\xbf"),
            "t.toml:1:1: syntax error: byte 0xC3 outside a string or comment (only strings and comments may "
            "hold non-ASCII text: quote the key or value)");
  EXPECT_EQ(load_error(with("[log]\nlevel = \xe2\x80\x9cinfo\xe2\x80\x9d\n")).rfind("t.toml:", 0), 0u);
  EXPECT_EQ(load_error("a = \"\"\"\\\n\xc3\xa9\"\"\""),
            "t.toml:2:1: syntax error: byte 0xC3 right after a backslash in a multi-line string (not supported: "
            "put an ASCII character first)");
  // Inside a string it reaches the schema as usual.
  EXPECT_NE(load_error(with("[log]\nlevel = \"\xc3\xbf\"\n")).find("log.level"), std::string::npos);
}

}  // namespace
}  // namespace tlsfront::config
