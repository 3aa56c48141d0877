// A [[route]] with root or alias (config/files_config.h): values, defaults,
// try_files' fallbacks, and errors with their positions.
#include "config/loader_test_support.h"

namespace tlsfront::config {
namespace {

// kMinimal's route (lines 12-13) named "api", then a file route from line 15.
std::string files(std::string_view keys) {
  return with("name = \"api\"\n[[route]]\npath_prefix = \"/static/\"\n" + std::string(keys));
}

TEST(LoaderFiles, RootDefaultsAndKeys) {
  Config c = load_ok(files("root = \"/srv/www/\"\n"));
  ASSERT_EQ(c.routes.size(), 2u);
  const Route& r = c.routes[1];
  EXPECT_EQ(r.action, RouteAction::Files);
  ASSERT_TRUE(r.files);
  EXPECT_EQ(r.files->dir, "/srv/www");
  EXPECT_FALSE(r.files->alias);
  EXPECT_EQ(r.files->index, std::vector<std::string>{"index.html"});
  EXPECT_TRUE(r.files->try_files.empty());
  EXPECT_FALSE(r.files->expires_s);
  EXPECT_FALSE(r.files->follow_symlinks);
  EXPECT_FALSE(r.files->dotfiles);
  EXPECT_TRUE(r.access_log);

  c = load_ok(files(R"(alias = "/srv/static"
index = ["default.htm", "index.html"]
try_files = ["$uri", "$uri/", "@api"]
expires = "30d"
precompressed = ["br", "gzip"]
types = { WebManifest = "application/manifest+json" }
follow_symlinks = true
dotfiles = true
access_log = false
)"));
  const FileRoute& f = *c.routes[1].files;
  EXPECT_TRUE(f.alias);
  EXPECT_EQ(f.index.size(), 2u);
  EXPECT_EQ(f.try_files, (std::vector<std::string>{"$uri", "$uri/"}));
  EXPECT_EQ(f.fallback_route, 0u);
  EXPECT_EQ(f.expires_s, 30u * 86400);
  EXPECT_EQ(f.precompressed, (std::vector<std::string>{"br", "gzip"}));
  ASSERT_EQ(f.types.size(), 1u);
  EXPECT_EQ(f.types[0].first, "webmanifest");
  EXPECT_TRUE(f.follow_symlinks && f.dotfiles);
  EXPECT_FALSE(c.routes[1].access_log);

  // A file route compresses as a proxying one (files of compressible types).
  c = load_ok(files("root = \"/srv\"\ncompress = [\"gzip\"]\ncompress_min_bytes = \"100\"\n"));
  EXPECT_EQ(c.routes[1].compression.encodings.size(), 1u);
  EXPECT_EQ(c.routes[1].compression.min_bytes, 100u);

  c = load_ok(files("root = \"/srv\"\ntry_files = [\"$uri\", \"=410\"]\n"));
  EXPECT_EQ(c.routes[1].files->fallback_status, 410);
  c = load_ok(files("root = \"/srv\"\ntry_files = [\"$uri\", \"/index.html\"]\n"));
  EXPECT_EQ(c.routes[1].files->fallback_path, "/index.html");
}

TEST(LoaderFiles, Errors) {
  EXPECT_EQ(load_error(files("root = \"www\"\n")), "t.toml:17:1: route[1].root: must be an absolute path, got \"www\"");
  EXPECT_EQ(load_error(files("root = \"/a\"\nalias = \"/b\"\n")),
            "t.toml:18:1: route[1].alias: only one of upstream, return, redirect, root and alias per route (root is set "
            "too)");
  EXPECT_EQ(load_error(with("path_regex = '.*[.]css'\n[[route]]\npath_regex = '.*'\nalias = \"/b\"\n")),
            "t.toml:17:1: route[1].alias: needs a path_prefix (it replaces that prefix); use root with path_exact or "
            "path_regex");
  EXPECT_EQ(load_error(files("expires = \"30d\"\nupstream = \"demo\"\n")),
            "t.toml:17:1: route[1].expires: needs root or alias (it is about serving files)");
  EXPECT_EQ(load_error(files("root = \"/a\"\ntry_files = [\"$uri\"]\n")),
            "t.toml:18:1: route[1].try_files: needs at least two entries: what to try, then the fallback (nginx "
            "try_files)");
  EXPECT_EQ(load_error(files("root = \"/a\"\ntry_files = [\"$uri\", \"@nowhere\"]\n")),
            "t.toml:18:1: route[1].try_files: \"@nowhere\" names no route with an upstream (its name = \"...\")");
  EXPECT_EQ(load_error(files("root = \"/a\"\ntry_files = [\"$document_root$uri\", \"=404\"]\n")),
            "t.toml:18:14: route[1].try_files[0]: \"$document_root$uri\" must start with \"/\" or \"$uri\"");
  EXPECT_EQ(load_error(files("root = \"/a\"\ntry_files = [\"$uri\", \"=99\"]\n")),
            "t.toml:18:22: route[1].try_files[1]: \"=99\": a status is \"=\" and 200..599 (\"=404\")");
  EXPECT_EQ(load_error(files("root = \"/a\"\nindex = [\"a/b.html\"]\n")),
            "t.toml:18:10: route[1].index[0]: \"a/b.html\" is not a file name (no \"/\")");
  EXPECT_EQ(load_error(files("root = \"/a\"\nprecompressed = [\"zstd\"]\n")),
            "t.toml:18:18: route[1].precompressed[0]: \"zstd\": \"br\" or \"gzip\"");
  EXPECT_EQ(load_error(files("root = \"/a\"\ntypes = { js = \"javascript\" }\n")),
            "t.toml:18:16: route[1].types.js: \"javascript\" is not a media type (\"type/subtype\")");
  EXPECT_EQ(load_error(files("root = \"/a\"\nlimit_req = [\"x\"]\n")).find("route[1].limit_req"), 14u);
}

}  // namespace
}  // namespace tlsfront::config
