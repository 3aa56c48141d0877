// The preconditions and ranges of RFC 9110 (§13.2.2, §14) as
// files::evaluate() applies them, the HTTP-date forms, entity-tag
// comparison, and the Content-Type table.
#include "data/files/file_rules.h"

#include <gtest/gtest.h>

#include "data/files/mime_types.h"

namespace tlsfront::files {
namespace {

constexpr std::string_view kTag = "\"5f-1000\"";
constexpr time_t kMtime = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
constexpr uint64_t kSize = 1000;

Preconditions get() {
  Preconditions p;
  p.method = "GET";
  return p;
}

TEST(FileRules, HttpDateFormsAndRoundTrip) {
  EXPECT_EQ(http_date(kMtime), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), kMtime);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), kMtime);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), kMtime);
  EXPECT_FALSE(parse_http_date("yesterday"));
  EXPECT_FALSE(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"));
  EXPECT_FALSE(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"));
}

TEST(FileRules, EtagComparison) {
  EXPECT_TRUE(etag_list_matches("\"5f-1000\"", kTag, false));
  EXPECT_TRUE(etag_list_matches("\"x\", \"5f-1000\"", kTag, false));
  EXPECT_TRUE(etag_list_matches("*", kTag, false));
  EXPECT_FALSE(etag_list_matches("W/\"5f-1000\"", kTag, false));  // strong: a weak tag never matches
  EXPECT_TRUE(etag_list_matches("W/\"5f-1000\"", kTag, true));    // weak comparison
  EXPECT_FALSE(etag_list_matches("5f-1000", kTag, true));          // not quoted: not a tag
  EXPECT_NE(strong_etag(1'000'000'000, 10), strong_etag(1'000'000'001, 10));
  EXPECT_NE(strong_etag(1'000'000'000, 10), strong_etag(1'000'000'000, 10, "br"));
}

TEST(FileRules, IfNoneMatchWinsOverIfModifiedSince) {
  Preconditions p = get();
  p.if_none_match = "\"other\"";
  p.if_modified_since = "Sun, 06 Nov 1994 08:49:37 GMT";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 200);  // §13.2.2: IMS ignored when INM is present
  p.if_none_match = kTag;
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 304);
  p.method = "HEAD";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 304);
}

TEST(FileRules, IfModifiedSince) {
  Preconditions p = get();
  p.if_modified_since = "Sun, 06 Nov 1994 08:49:37 GMT";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 304);
  EXPECT_EQ(evaluate(p, kTag, kMtime + 1, kSize).status, 200);
  p.if_modified_since = "not a date";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 200);  // §13.1.3: ignored
}

TEST(FileRules, IfMatchAndIfUnmodifiedSince) {
  Preconditions p = get();
  p.if_match = "\"other\"";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 412);
  p.if_match = kTag;
  p.if_unmodified_since = "Sat, 05 Nov 1994 08:49:37 GMT";  // ignored: If-Match is present
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 200);
  p.if_match.reset();
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 412);
}

TEST(FileRules, SingleRanges) {
  EXPECT_EQ(single_range("bytes=0-99", kSize)->length, 100u);
  auto tail = single_range("bytes=-10", kSize);
  EXPECT_EQ(tail->offset, 990u);
  EXPECT_EQ(tail->length, 10u);
  auto open = single_range("bytes=990-", kSize);
  EXPECT_EQ(open->offset, 990u);
  EXPECT_EQ(open->length, 10u);
  EXPECT_EQ(single_range("bytes=990-5000", kSize)->length, 10u);  // clamped to the end
  EXPECT_EQ(single_range("bytes=-5000", kSize)->length, kSize);
  EXPECT_EQ(single_range("bytes=1000-", kSize)->status, 416);
  EXPECT_EQ(single_range("bytes=-0", kSize)->status, 416);
  EXPECT_FALSE(single_range("bytes=5-1", kSize));     // invalid: ignored
  EXPECT_FALSE(single_range("items=0-1", kSize));     // another unit: ignored
  EXPECT_FALSE(single_range("bytes=0-1,5-6", kSize));  // several: the whole file
  EXPECT_FALSE(single_range("bytes=a-b", kSize));
  // An empty file: an int-range is unsatisfiable, a suffix-range is not
  // (RFC 9110 §14.1.2) but has no 206 form: ignored, the file is sent.
  EXPECT_EQ(single_range("bytes=0-0", 0)->status, 416);
  EXPECT_EQ(single_range("bytes=0-", 0)->status, 416);
  EXPECT_EQ(single_range("bytes=-0", 0)->status, 416);
  EXPECT_FALSE(single_range("bytes=-5", 0));
  // Positions beyond 64 bits are past any file, not a syntax error.
  auto huge_last = single_range("bytes=10-99999999999999999999", kSize);
  ASSERT_TRUE(huge_last);
  EXPECT_EQ(huge_last->status, 206);
  EXPECT_EQ(huge_last->offset, 10u);
  EXPECT_EQ(huge_last->length, kSize - 10);
  EXPECT_EQ(single_range("bytes=99999999999999999999-", kSize)->status, 416);
  EXPECT_EQ(single_range("bytes=18446744073709551616-18446744073709551617", kSize)->status, 416);
  EXPECT_EQ(single_range("bytes=-99999999999999999999", kSize)->length, kSize);
  EXPECT_FALSE(single_range("bytes=99999999999999999999-5", kSize));  // last < first: ignored
  EXPECT_FALSE(single_range("bytes=+1-2", kSize));
  EXPECT_FALSE(single_range("bytes=1-+2", kSize));
  EXPECT_FALSE(single_range("bytes=--1", kSize));
  EXPECT_FALSE(single_range("bytes=0x1-2", kSize));
}

TEST(FileRules, RangeAndIfRange) {
  Preconditions p = get();
  p.range = "bytes=0-9";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 206);
  p.if_range = kTag;
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 206);
  p.if_range = "\"old\"";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 200);
  p.if_range = "W/\"5f-1000\"";  // weak: never matches for If-Range
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 200);
  p.if_range = "Sun, 06 Nov 1994 08:49:37 GMT";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 206);
  EXPECT_EQ(evaluate(p, kTag, kMtime + 1, kSize).status, 200);
  p.if_range.reset();
  p.range = "bytes=0-1,4-5";
  const FileAnswer whole = evaluate(p, kTag, kMtime, kSize);
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(whole.length, kSize);
  p.range = "bytes=2000-";
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 416);
  p.method = "POST";  // Range applies to GET (and HEAD) only
  EXPECT_EQ(evaluate(p, kTag, kMtime, kSize).status, 200);
}

TEST(FileRules, ContentTypes) {
  std::vector<std::pair<std::string, std::string>> none;
  EXPECT_EQ(content_type_for("/a/app.JS", none), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("/x.woff2", none), "font/woff2");
  EXPECT_EQ(content_type_for("/dir.d/README", none), "application/octet-stream");
  EXPECT_EQ(content_type_for("/a.unknownext", none), "application/octet-stream");
  std::vector<std::pair<std::string, std::string>> types{{"js", "application/x-custom"}};
  EXPECT_EQ(content_type_for("/a.js", types), "application/x-custom");
}

}  // namespace
}  // namespace tlsfront::files
