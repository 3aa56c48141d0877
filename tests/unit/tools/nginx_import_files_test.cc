// Tests for import-nginx's file locations (tools/nginx_import_files.cc):
// root (inherited from the server) and alias, index, try_files with each
// kind of fallback, expires, gzip_static, add_header, access_log off,
// autoindex, disable_symlinks (with nginx's inheritance from the server
// and http blocks), and regex locations of file extensions,
// each as the route the loader reads back, and what is not carried over
// reported.
#include <string>

#include <gtest/gtest.h>
#include <re2/re2.h>

#include "nginx_import_support.h"

namespace tlsfront::tools::nginx {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared helpers

const config::Route* route_at(const config::Config& cfg, const std::string& path) {
  for (const config::Route& r : cfg.routes) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

TEST(NginxImport, FileLocationsCarryEachDirective) {
  Outcome r = run(server(
      "root /srv/www;\n"
      "index index.htm index.html;\n"
      "location /static/ { alias /srv/static/; expires 7d; gzip_static on; autoindex off; access_log off; }\n"
      "location ~* \\.(css|js|woff2)$ { expires 30d; add_header Cache-Control \"public, immutable\";\n"
      "  gzip_static always; }\n"
      "location /app/ { try_files $uri $uri/ /app/index.html; add_header Cache-Control no-cache; }\n"
      "location /strict/ { try_files $uri =404; disable_symlinks off; gzip_static off; }\n"
      "location /links/ { disable_symlinks if_not_owner; }\n"));
  ASSERT_TRUE(r.ok) << r.error;

  const config::Route* s = route_at(r.cfg, "/static/");
  ASSERT_TRUE(s && s->files) << r.toml;
  EXPECT_TRUE(s->files->alias);
  EXPECT_EQ(s->files->dir, "/srv/static");
  EXPECT_EQ(s->files->index, (std::vector<std::string>{"index.htm", "index.html"}));  // inherited
  EXPECT_EQ(s->files->expires_s, 7u * 86400);
  EXPECT_EQ(s->files->precompressed, std::vector<std::string>{"gzip"});
  EXPECT_FALSE(s->access_log);

  const config::Route* assets = nullptr;
  for (const config::Route& x : r.cfg.routes) {
    if (x.path_match == config::PathMatch::Regex) assets = &x;
  }
  ASSERT_TRUE(assets && assets->files) << r.toml;
  EXPECT_FALSE(assets->files->alias);
  EXPECT_EQ(assets->files->dir, "/srv/www");  // the server's root
  EXPECT_EQ(assets->files->expires_s, 30u * 86400);
  EXPECT_EQ(assets->files->precompressed, std::vector<std::string>{"gzip"});
  ASSERT_EQ(assets->response_headers.add.size(), 1u) << r.toml;
  EXPECT_EQ(assets->response_headers.add[0].name, "Cache-Control");
  EXPECT_EQ(assets->response_headers.add[0].value[0].literal, "public, immutable");
  EXPECT_TRUE(assets->access_log);
  // ~*: case-insensitive, against the path's end.
  EXPECT_TRUE(RE2::PartialMatch("/a/B.CSS", *assets->regex));
  EXPECT_TRUE(RE2::PartialMatch("/f.woff2", *assets->regex));
  EXPECT_FALSE(RE2::PartialMatch("/a.css.map", *assets->regex));

  const config::Route* app = route_at(r.cfg, "/app/");
  ASSERT_TRUE(app && app->files) << r.toml;
  EXPECT_EQ(app->files->try_files, (std::vector<std::string>{"$uri", "$uri/"}));
  EXPECT_EQ(app->files->fallback_path, "/app/index.html");
  ASSERT_EQ(app->response_headers.add.size(), 1u);
  EXPECT_EQ(app->response_headers.add[0].value[0].literal, "no-cache");

  const config::Route* strict = route_at(r.cfg, "/strict/");
  ASSERT_TRUE(strict && strict->files) << r.toml;
  EXPECT_EQ(strict->files->try_files, std::vector<std::string>{"$uri"});
  EXPECT_EQ(strict->files->fallback_status, 404);
  EXPECT_TRUE(strict->files->fallback_path.empty());
  EXPECT_TRUE(strict->files->follow_symlinks);
  EXPECT_TRUE(strict->files->precompressed.empty());

  const config::Route* links = route_at(r.cfg, "/links/");
  ASSERT_TRUE(links && links->files) << r.toml;
  EXPECT_FALSE(links->files->follow_symlinks);  // if_not_owner: carried over as on
  EXPECT_REPORTS(r, "n.conf:14: disable_symlinks: carried over as on: every symbolic link is refused");
  EXPECT_REPORTS(r, "n.conf:11: gzip_static: carried over as on: a client that does not accept gzip gets the file");
  // Nothing else in the file locations is reported as left behind.
  EXPECT_EQ(r.report.find("not carried over"), std::string::npos) << r.report;
  EXPECT_EQ(r.report.find("no equivalent"), std::string::npos) << r.report;
}

// expires, gzip_static, autoindex and disable_symlinks of the server or
// http block apply to its file locations, as nginx inherits them; try_files
// does not.
TEST(NginxImport, FileDirectivesAreInheritedAsNginxInheritsThem) {
  Outcome r = run(server(
      "expires 1h; disable_symlinks off; root /srv/www; autoindex off;\n"
      "location /a/ { }\n"
      "location /b/ { expires 2h; gzip_static off; disable_symlinks on; }\n",
      "gzip_static on;"));
  ASSERT_TRUE(r.ok) << r.error;
  const config::Route* a = route_at(r.cfg, "/a/");
  ASSERT_TRUE(a && a->files) << r.toml;
  EXPECT_EQ(a->files->expires_s, 3600u);
  EXPECT_EQ(a->files->precompressed, std::vector<std::string>{"gzip"});
  EXPECT_TRUE(a->files->follow_symlinks);
  const config::Route* b = route_at(r.cfg, "/b/");
  ASSERT_TRUE(b && b->files) << r.toml;
  EXPECT_EQ(b->files->expires_s, 7200u);
  EXPECT_TRUE(b->files->precompressed.empty());
  EXPECT_FALSE(b->files->follow_symlinks);
  // The proxied "/" gets no expires: said.
  EXPECT_REPORTS(r, "n.conf:7: expires: carried over to the locations beneath it that serve files; nginx sets it on "
                    "proxied responses there too");
  EXPECT_EQ(r.report.find("gzip_static"), std::string::npos) << r.report;
  EXPECT_EQ(r.report.find("autoindex"), std::string::npos) << r.report;
}

TEST(NginxImport, FileDirectivesWithoutAnEquivalentAreReported) {
  Outcome r = run(server(
      "location /list/ { root /srv/list; autoindex on; }\n"
      "location /never/ { root /srv/n; expires epoch; }\n"
      "location /max/ { root /srv/m; expires max; }\n"
      "location /named/ { root /srv/x; try_files $uri @fallback; }\n"
      "location /vars/ { root /srv/v; try_files $uri $document_root/x.html =404; }\n"
      "location ~ ^/img/(.+)\\.png$ { alias /srv/img/$1.png; }\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "n.conf:7: autoindex: no equivalent: tlsfront never lists a directory");
  EXPECT_REPORTS(r, "n.conf:8: expires: not carried over: tlsfront's expires is a time");
  EXPECT_REPORTS(r, "n.conf:9: expires: not carried over: tlsfront's expires is a time");
  EXPECT_REPORTS(r, "n.conf:10: try_files: not carried over: a named location as the fallback");
  EXPECT_REPORTS(r, "n.conf:11: try_files: not carried over: \"$document_root/x.html\"");
  EXPECT_REPORTS(r, "n.conf:12: alias: not carried over: one path without variables");
  const config::Route* list = route_at(r.cfg, "/list/");
  ASSERT_TRUE(list && list->files) << r.toml;  // served, never listed
  const config::Route* never = route_at(r.cfg, "/never/");
  ASSERT_TRUE(never && never->files) << r.toml;
  EXPECT_FALSE(never->files->expires_s);
}

}  // namespace
}  // namespace tlsfront::tools::nginx
