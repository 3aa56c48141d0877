// Tests for import-nginx's reader of nginx configuration files: words,
// quotes and escapes, comments, blocks, include (globs, order, relative to
// the main file, cycles, depth) and every syntax error with its position.
#include "tools/nginx_conf.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "shared/temp_dir.h"

namespace tlsfront::tools::nginx {
namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<Directive> parse_ok(const std::string& text) {
  auto r = parse_string(text, "t.conf", "/nonexistent");
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? std::move(r).value() : std::vector<Directive>{};
}

std::string parse_error(const std::string& text) {
  auto r = parse_string(text, "t.conf", "/nonexistent");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message();
}

TEST(NginxConf, WordsQuotesEscapesAndComments) {
  auto v = parse_ok(
      "# a comment\n"
      "a b \"c d\" 'e\\'f' g\\;h x#y a\\\"b \\.php$;  # trailing comment\n"
      "q \"\\t\\n\\\\\\\"\\x\" '';\n"
      "return 200 ${host}x;\n");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "a");
  EXPECT_EQ(v[0].args, (std::vector<std::string>{"b", "c d", "e'f", "g\\;h", "x#y", "a\"b", "\\.php$"}));
  EXPECT_EQ(v[0].line, 2);
  EXPECT_EQ(v[0].column, 1);
  EXPECT_EQ(v[1].args, (std::vector<std::string>{"\t\n\\\"\\x", ""}));
  // "${" inside a word opens no block (nginx reads variables so).
  EXPECT_EQ(v[2].args, (std::vector<std::string>{"200", "${host}x"}));
  EXPECT_FALSE(v[2].block);
}

TEST(NginxConf, BlocksNestAndKeepPositions) {
  auto v = parse_ok("http {\n  server {\n\tlisten 443 ssl;\n  }\n  upstream b{server 1.2.3.4;}\n}\n");
  ASSERT_EQ(v.size(), 1u);
  ASSERT_TRUE(v[0].block);
  ASSERT_EQ(v[0].children.size(), 2u);
  const Directive& server = v[0].children[0];
  EXPECT_EQ(server.name, "server");
  EXPECT_EQ(server.line, 2);
  EXPECT_EQ(server.column, 3);
  ASSERT_EQ(server.children.size(), 1u);
  EXPECT_EQ(server.children[0].name, "listen");
  EXPECT_EQ(server.children[0].where(), "t.conf:3");
  EXPECT_EQ(server.children[0].column, 2);
  EXPECT_EQ(v[0].children[1].args, std::vector<std::string>{"b"});
  EXPECT_EQ(v[0].children[1].children[0].args, std::vector<std::string>{"1.2.3.4"});
}

TEST(NginxConf, SyntaxErrorsNameTheirPosition) {
  EXPECT_EQ(parse_error("a;\n}\n"), "t.conf:2:1: unexpected \"}\"");
  EXPECT_EQ(parse_error("a b\n  c;\nd"), "t.conf:3:2: unexpected end of file: directive \"d\" is not terminated by \";\"");
  EXPECT_EQ(parse_error("http {\n  a;\n"), "t.conf:3:1: unexpected end of file, expecting \"}\"");
  EXPECT_EQ(parse_error("a \"b;\n\n"), "t.conf:1:3: unexpected end of file in a quoted string");
  EXPECT_EQ(parse_error("a \"b\"c;"), "t.conf:1:6: unexpected \"c\" after a quoted string");
  EXPECT_EQ(parse_error("a;\n  ;"), "t.conf:2:3: unexpected \";\"");
  EXPECT_EQ(parse_error("{ a; }"), "t.conf:1:1: unexpected \"{\"");
  EXPECT_EQ(parse_error("http { a }"), "t.conf:1:10: unexpected \"}\": directive \"a\" is not terminated by \";\"");
  std::string deep;
  for (int i = 0; i < 70; ++i) deep += "a {";
  EXPECT_EQ(parse_error(deep), "t.conf:1:195: blocks nested more than 64 deep");
}

TEST(NginxConf, IncludesResolveAgainstTheMainFilesDirectoryInSortedOrder) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("conf.d"));
  std::filesystem::create_directories(dir.file("sub"));
  write(dir.file("nginx.conf"), "top;\nhttp {\n  include conf.d/*.conf;\n  include none.d/*.conf;\n  after;\n}\n");
  write(dir.file("conf.d/b.conf"), "b 2;\n");
  write(dir.file("conf.d/a.conf"), "\na 1;\ninclude sub/c;\n");  // relative to the main file's directory, not conf.d
  write(dir.file("conf.d/skip.txt"), "not included;\n");
  write(dir.file("sub/c"), "c 3;\n");
  auto r = parse_file(dir.file("nginx.conf"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  const auto& http = (*r)[1].children;
  ASSERT_EQ(http.size(), 4u);
  EXPECT_EQ(http[0].name, "a");
  EXPECT_EQ(http[0].where(), dir.file("conf.d/a.conf") + ":2");
  EXPECT_EQ(http[1].name, "c");
  EXPECT_EQ(http[1].where(), dir.file("sub/c") + ":1");
  EXPECT_EQ(http[2].name, "b");
  EXPECT_EQ(http[3].name, "after");
  EXPECT_EQ(http[3].where(), dir.file("nginx.conf") + ":5");
}

TEST(NginxConf, IncludeErrors) {
  TempDir dir;
  write(dir.file("missing.conf"), "a;\n  include nothere.conf;\n");
  auto r = parse_file(dir.file("missing.conf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), dir.file("missing.conf") + ":2:3: include: cannot open \"" + dir.file("nothere.conf") +
                                     "\": No such file or directory");

  write(dir.file("a.conf"), "include b.conf;\n");
  write(dir.file("b.conf"), "x;\ninclude a.conf;\n");
  r = parse_file(dir.file("a.conf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), dir.file("b.conf") + ":2:1: include: \"" + dir.file("a.conf") + "\" includes itself (an include cycle)");

  write(dir.file("self.conf"), "include *.conf;\n");  // the glob matches the file itself
  r = parse_file(dir.file("self.conf"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("includes itself (an include cycle)"), std::string::npos) << r.error().message();

  std::filesystem::create_directories(dir.file("deep"));
  for (int i = 0; i < 20; ++i) {
    write(dir.file("deep/" + std::to_string(i) + ".conf"), "include " + std::to_string(i + 1) + ".conf;\n");  // relative to deep/, the main file's
  }
  write(dir.file("deep/20.conf"), "end;\n");
  r = parse_file(dir.file("deep/0.conf"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(":1:1: include: nested more than 16 deep"), std::string::npos) << r.error().message();

  write(dir.file("syntax.conf"), "include bad.inc;\n");
  write(dir.file("bad.inc"), "ok;\n\n  oops }\n");
  r = parse_file(dir.file("syntax.conf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), dir.file("bad.inc") + ":3:8: unexpected \"}\": directive \"oops\" is not terminated by \";\"");

  EXPECT_EQ(parse_error("include a b;"), "t.conf:1:1: include: takes exactly one file or pattern");
  EXPECT_EQ(parse_error("include a { }"), "t.conf:1:1: include: takes no block");
  auto missing = parse_file(dir.file("no-such-main.conf"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "cannot open \"" + dir.file("no-such-main.conf") + "\": No such file or directory");
}

}  // namespace
}  // namespace tlsfront::tools::nginx
