// Tests for the access log's JSON string encoder (append_json_string):
// escapes, every control byte, UTF-8 passed through or each invalid byte
// replaced, special bytes at every position of a long input (the eight-at-a-
// time copy), and a reference encoder on random input.
#include <random>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "json_reference.h"
#include "log/access_log.h"

namespace tlsfront::log {
namespace {

using namespace std::string_view_literals;

using testing::JsonChecker;
using testing::reference_json_string;

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST(AccessLogJsonString, PlainAscii) {
  EXPECT_EQ(json_string(""), R"("")");
  EXPECT_EQ(json_string("a"), R"("a")");
  EXPECT_EQ(json_string("/index.html?q=1&r=2#frag"), R"("/index.html?q=1&r=2#frag")");
  EXPECT_EQ(json_string("slash/ and DEL \x7f and ~"), "\"slash/ and DEL \x7f and ~\"");
}

TEST(AccessLogJsonString, AppendsToExistingContent) {
  std::string out = "x=";
  append_json_string(out, "a\"b");
  append_json_string(out, "");
  EXPECT_EQ(out, R"(x="a\"b""")");
}

TEST(AccessLogJsonString, QuoteAndBackslash) {
  EXPECT_EQ(json_string("\""), R"("\"")");
  EXPECT_EQ(json_string("\\"), R"("\\")");
  EXPECT_EQ(json_string(R"(say "hi" \o/)"), R"("say \"hi\" \\o/")");
  EXPECT_EQ(json_string(R"(\")"), R"("\\\"")");
}

TEST(AccessLogJsonString, EveryControlByte) {
  for (int c = 0; c < 0x20; ++c) {
    const char byte = static_cast<char>(c);
    std::string expected;
    switch (c) {
      case '\n': expected = R"("\n")"; break;
      case '\r': expected = R"("\r")"; break;
      case '\t': expected = R"("\t")"; break;
      case '\b': expected = R"("\b")"; break;
      case '\f': expected = R"("\f")"; break;
      default: {
        char buf[16];
        std::snprintf(buf, sizeof buf, "\"\\u%04x\"", c);
        expected = buf;
      }
    }
    EXPECT_EQ(json_string(std::string_view(&byte, 1)), expected) << "byte " << c;
  }
  EXPECT_EQ(json_string(std::string_view("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(json_string("\x1b[31mred"), R"("\u001b[31mred")");
}

TEST(AccessLogJsonString, ValidUtf8PassesThrough) {
  const std::string_view cases[] = {
      "\xc2\x80",              // U+0080, smallest 2-byte
      "\xc3\xa9",              // é
      "\xdf\xbf",              // U+07FF, largest 2-byte
      "\xe0\xa0\x80",          // U+0800, smallest 3-byte
      "\xe2\x82\xac",          // €
      "\xed\x9f\xbf",          // U+D7FF, just below the surrogates
      "\xee\x80\x80",          // U+E000, just above the surrogates
      "\xef\xbf\xbd",          // U+FFFD itself
      "\xef\xbf\xbf",          // U+FFFF, largest 3-byte
      "\xf0\x90\x80\x80",      // U+10000, smallest 4-byte
      "\xf0\x9f\x98\x80",      // 😀
      "\xf3\xbf\xbf\xbf",      // U+FFFFF
      "\xf4\x8f\xbf\xbf",      // U+10FFFF, the largest code point
      "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9d\x84\x9e",
  };
  for (const auto s : cases) {
    EXPECT_EQ(json_string(s), "\"" + std::string(s) + "\"");
  }
}

TEST(AccessLogJsonString, EachInvalidByteBecomesReplacement) {
  struct Case {
    std::string_view name, input, expected;
  };
  const Case cases[] = {
      {"stray continuation", "\x80", R"("\ufffd")"},
      {"stray continuations", "a\x80\xbf" "b", R"("a\ufffd\ufffdb")"},
      {"overlong 2-byte C0", "\xc0\x80", R"("\ufffd\ufffd")"},
      {"overlong 2-byte C1", "\xc1\xbf", R"("\ufffd\ufffd")"},
      {"overlong slash", "\xc0\xaf", R"("\ufffd\ufffd")"},
      {"overlong 3-byte", "\xe0\x80\x80", R"("\ufffd\ufffd\ufffd")"},
      {"overlong 3-byte max", "\xe0\x9f\xbf", R"("\ufffd\ufffd\ufffd")"},
      {"overlong 4-byte", "\xf0\x80\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd")"},
      {"overlong 4-byte max", "\xf0\x8f\xbf\xbf", R"("\ufffd\ufffd\ufffd\ufffd")"},
      {"high surrogate", "\xed\xa0\x80", R"("\ufffd\ufffd\ufffd")"},
      {"low surrogate", "\xed\xbf\xbf", R"("\ufffd\ufffd\ufffd")"},
      {"surrogate pair (CESU-8)", "\xed\xa0\xbd\xed\xb8\x80",
       R"("\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd")"},
      {"above U+10FFFF", "\xf4\x90\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd")"},
      {"F5 lead", "\xf5\x80\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd")"},
      {"FE FF", "\xfe\xff", R"("\ufffd\ufffd")"},
      {"5-byte form", "\xf8\x88\x80\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd\ufffd")"},
      {"truncated 2-byte at end", "a\xc3", R"("a\ufffd")"},
      {"truncated 3-byte at end", "a\xe2\x82", R"("a\ufffd\ufffd")"},
      {"truncated 4-byte at end", "a\xf0\x9f\x98", R"("a\ufffd\ufffd\ufffd")"},
      {"truncated 3-byte then ASCII", "\xe2\x82" "A", R"("\ufffd\ufffdA")"},
      {"truncated 4-byte then quote", "\xf0\x9f\"", R"("\ufffd\ufffd\"")"},
      {"lead then lead", "\xc3\xc3\xa9", "\"\\ufffd\xc3\xa9\""},
      {"valid after invalid", "\xff\xe2\x82\xac", "\"\\ufffd\xe2\x82\xac\""},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(json_string(c.input), c.expected) << c.name;
  }
}

TEST(AccessLogJsonString, SpecialByteAtEveryPositionOfLongInput) {
  // Exercises the word-at-a-time fast path: the special byte lands at every
  // offset within and across 8-byte words.
  const std::string_view specials[] = {"\"", "\\", "\n", "\x01", "\x1f", "\xc3\xa9", "\x80",
                                       "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xe2\x82"};
  for (const auto special : specials) {
    for (size_t pos = 0; pos <= 40; ++pos) {
      std::string input(pos, 'x');
      input += special;
      input += std::string(40 - pos % 17, 'y');
      ASSERT_EQ(json_string(input), reference_json_string(input)) << "pos " << pos;
    }
  }
  // Each byte value next to ASCII, both sides.
  for (int b = 0; b < 256; ++b) {
    std::string input = "0123456789";
    input += static_cast<char>(b);
    input += "abcdefghij";
    ASSERT_EQ(json_string(input), reference_json_string(input)) << "byte " << b;
  }
}

TEST(AccessLogJsonString, MatchesReferenceOnRandomInput) {
  std::mt19937 rng(12345);
  const std::string_view pieces[] = {"a", "Z", " ", "/", "\"", "\\", "\n", "\t", "\x00"sv, "\x7f",
                                     "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\xa0\x80",
                                     "\xc0\x80", "\xf4\x90\x80\x80", "\xe0\xa0", "abcdefgh"};
  for (int iter = 0; iter < 20000; ++iter) {
    std::string input;
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) {
      if (rng() % 3 == 0) {
        input += static_cast<char>(rng() & 0xff);  // any byte at all
      } else {
        input += pieces[rng() % std::size(pieces)];
      }
    }
    const std::string got = json_string(input);
    ASSERT_EQ(got, reference_json_string(input)) << "iteration " << iter;
    JsonChecker checker(got);
    ASSERT_TRUE(checker.check()) << got;
  }
}

}  // namespace
}  // namespace tlsfront::log
