#include "message/request_path.h"

#include <gtest/gtest.h>

#include <string>

namespace tlsfront::http {
namespace {

struct Row {
  const char* target;
  const char* path;  // expected normalized path; nullptr when rejected
  PathError error = PathError::None;
};

std::string show(const Row& r) { return std::string("target ") + r.target; }

TEST(RequestPath, Table) {
  const Row rows[] = {
      {"/", "/"},
      {"/api/x", "/api/x"},
      {"/api/x?a=../b&c=%2F", "/api/x"},  // the query is never looked at
      {"/.well-known/acme", "/.well-known/acme"},
      {"/a/..b/c.", "/a/..b/c."},
      {"/a/./b", "/a/b"},
      {"/a/.", "/a/"},
      {"/a/b/../c", "/a/c"},
      {"/a/b/..", "/a/"},
      {"/a/..", "/"},
      {"/api/slow/../../x", "/x"},
      {"//api/x", "/api/x"},
      {"/a//b///c", "/a/b/c"},
      {"/a/", "/a/"},
      {"/a//", "/a/"},
      {"/%61pi/%7Ex", "/api/~x"},
      {"/%2e%2e/x", nullptr, PathError::AboveRoot},
      {"/a/%2e%2E/b", "/b"},
      {"/a/%2e/b", "/a/b"},
      {"/a/.%2e", "/"},
      {"/a%2fb", nullptr, PathError::EncodedSlash},
      {"/a%2Fb", nullptr, PathError::EncodedSlash},
      {"/a%5cb", nullptr, PathError::EncodedSlash},
      {"/a%00b", nullptr, PathError::EncodedNul},
      {"/a%2a", "/a%2A"},
      {"/a%3F", "/a%3F"},
      {"/caf%c3%a9", "/caf%C3%A9"},
      {"/%F0%9F%98%80", "/%F0%9F%98%80"},
      {"/%C0%AE%C0%AE/x", nullptr, PathError::BadUtf8},  // overlong "."
      {"/%C0%AF", nullptr, PathError::BadUtf8},          // overlong "/"
      {"/%E0%80%AE", nullptr, PathError::BadUtf8},       // overlong, 3 bytes
      {"/%ED%A0%80", nullptr, PathError::BadUtf8},       // surrogate
      {"/%F4%90%80%80", nullptr, PathError::BadUtf8},    // above U+10FFFF
      {"/%80", nullptr, PathError::BadUtf8},             // stray continuation
      {"/%C3", nullptr, PathError::BadUtf8},             // truncated
      {"/%C3a", nullptr, PathError::BadUtf8},
      {"/%FF", nullptr, PathError::BadUtf8},
      {"/%", nullptr, PathError::BadPercent},
      {"/a%4", nullptr, PathError::BadPercent},
      {"/a%zz", nullptr, PathError::BadPercent},
      {"/a%?b", nullptr, PathError::BadPercent},
      {"/..", nullptr, PathError::AboveRoot},
      {"/../", nullptr, PathError::AboveRoot},
      {"/a/../..", nullptr, PathError::AboveRoot},
      {"/a/../../b", nullptr, PathError::AboveRoot},
      // ".." removing an empty segment: RFC 3986 §5.2.4 (and WHATWG URL)
      // resolve "/admin//../x" to "/admin/x", a server merging slashes
      // first (nginx) to "/x"; the route would disagree with one of them.
      {"/admin//../x", nullptr, PathError::DotDotEmpty},
      {"/admin//%2e%2e/x", nullptr, PathError::DotDotEmpty},
      {"/admin//%2E%2e/x", nullptr, PathError::DotDotEmpty},
      {"/admin//.%2e/x", nullptr, PathError::DotDotEmpty},
      {"/admin//./../x", nullptr, PathError::DotDotEmpty},
      {"/admin/.//../x", nullptr, PathError::DotDotEmpty},
      {"/admin///../../x", nullptr, PathError::DotDotEmpty},
      {"/a//b/../../x", nullptr, PathError::DotDotEmpty},  // the second ".." meets the empty segment
      {"/a/b//..", nullptr, PathError::DotDotEmpty},
      {"/a/b//../", nullptr, PathError::DotDotEmpty},
      {"//..", nullptr, PathError::DotDotEmpty},
      {"//../x", nullptr, PathError::DotDotEmpty},
      // "//" elsewhere: both orders give the same path.
      {"/a//b/../c", "/a/c"},
      {"/a/..//b", "/b"},
      {"//a/../x", "/x"},
      {"/a/b/..//c", "/a/c"},
      {"/a//./b", "/a/b"},
      {"/a//.", "/a/"},
      {"/a//b/..", "/a/"},
      {"/a#frag", nullptr, PathError::Fragment},
      {"/a\\b", nullptr, PathError::BadByte},
      {"/a b", nullptr, PathError::BadByte},
      {"/caf\xc3\xa9", nullptr, PathError::BadByte},
      {"", nullptr, PathError::NotOriginForm},
      {"a/b", nullptr, PathError::NotOriginForm},
      {"*", nullptr, PathError::NotOriginForm},
  };
  for (const Row& r : rows) {
    std::string scratch;
    NormalizedTarget n;
    PathError e = normalize_target(r.target, scratch, n);
    EXPECT_EQ(describe(e), std::string(describe(r.error))) << show(r);
    if (r.path != nullptr && e == PathError::None) {
      EXPECT_EQ(n.path, r.path) << show(r);
      EXPECT_EQ(n.changed, std::string_view(r.target).substr(0, std::string_view(r.target).find('?')) != r.path)
          << show(r);
    }
  }
}

TEST(RequestPath, QueryKeptAsSent) {
  std::string scratch;
  NormalizedTarget n;
  ASSERT_EQ(normalize_target("//a/./b?x=%2F&y=/../", scratch, n), PathError::None);
  EXPECT_EQ(n.path, "/a/b");
  EXPECT_EQ(n.query, "?x=%2F&y=/../");
  EXPECT_TRUE(n.changed);
}

TEST(RequestPath, NormalPathNeedsNoScratch) {
  std::string scratch;
  NormalizedTarget n;
  const std::string target = "/api/v1/users/42?expand=true";
  ASSERT_EQ(normalize_target(target, scratch, n), PathError::None);
  EXPECT_EQ(n.path.data(), target.data());  // a view of the target itself
  EXPECT_EQ(scratch.capacity(), std::string().capacity());
  EXPECT_FALSE(n.changed);
}

// Found by the request_path fuzz target: a path already normal but with a
// "%" goes the slow way; unchanged, it must still be the target's own bytes.
TEST(RequestPath, UnchangedSlowPathIsTheTargetsBytes) {
  std::string scratch;
  NormalizedTarget n;
  const std::string target = "/a%2Afpb70a1c/?q";
  ASSERT_EQ(normalize_target(target, scratch, n), PathError::None);
  EXPECT_FALSE(n.changed);
  EXPECT_EQ(n.path, "/a%2Afpb70a1c/");
  EXPECT_EQ(n.path.data(), target.data());
}

TEST(RequestPath, HostileInputs) {
  std::string scratch;
  NormalizedTarget n;
  // A megabyte of "../" under as many segments: linear, and it ends at "/".
  std::string deep;
  for (int i = 0; i < 100'000; ++i) deep += "/a";
  for (int i = 0; i < 100'000; ++i) deep += "/..";
  ASSERT_EQ(normalize_target(deep, scratch, n), PathError::None);
  EXPECT_EQ(n.path, "/");
  EXPECT_EQ(normalize_target(deep + "/..", scratch, n), PathError::AboveRoot);
  std::string dots = "/x";
  for (int i = 0; i < 200'000; ++i) dots += "/../x";
  ASSERT_EQ(normalize_target(dots, scratch, n), PathError::None);
  EXPECT_EQ(n.path, "/x");
  std::string slashes(1'000'000, '/');
  ASSERT_EQ(normalize_target(slashes, scratch, n), PathError::None);
  EXPECT_EQ(n.path, "/");
  EXPECT_EQ(normalize_target(slashes + "..", scratch, n), PathError::DotDotEmpty);
  std::string long_normal = "/" + std::string(1'000'000, 'a');
  ASSERT_EQ(normalize_target(long_normal, scratch, n), PathError::None);
  EXPECT_EQ(n.path.size(), long_normal.size());
  std::string encoded;
  for (int i = 0; i < 100'000; ++i) encoded += "%41";
  ASSERT_EQ(normalize_target("/" + encoded, scratch, n), PathError::None);
  EXPECT_EQ(n.path, "/" + std::string(100'000, 'A'));
  for (const char* bad : {"/%", "/%%", "/%%%", "/%z", "/%zz", "/%0", "/%%41", "/%4%41"}) {
    EXPECT_EQ(normalize_target(bad, scratch, n), PathError::BadPercent) << bad;
  }
  // Every single byte after "/": never a crash, and an accepted result is normal.
  for (int c = 0; c < 256; ++c) {
    std::string t = "/";
    t.push_back(static_cast<char>(c));
    if (normalize_target(t, scratch, n) != PathError::None) continue;
    EXPECT_EQ(n.path.find("//"), std::string_view::npos) << c;
  }
}

TEST(RequestPath, Idempotent) {
  for (const char* t : {"//a/./b/../c/%7e%41%2a", "/a/%2e%2e/b//c/", "/%c3%a9/./x"}) {
    std::string scratch, scratch2;
    NormalizedTarget n, n2;
    ASSERT_EQ(normalize_target(t, scratch, n), PathError::None) << t;
    ASSERT_EQ(normalize_target(n.path, scratch2, n2), PathError::None) << t;
    EXPECT_EQ(n2.path, n.path) << t;
    EXPECT_FALSE(n2.changed) << t;
  }
}

}  // namespace
}  // namespace tlsfront::http
