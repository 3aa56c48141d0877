// files::resolve() against a real directory tree: root and alias, index,
// try_files with each kind of fallback, dotfiles, symbolic links in and out
// of the root, a FIFO, a directory without its "/", precompressed variants.
#include "data/files/file_resolver.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tlsfront::files {
namespace {

namespace fs = std::filesystem;

class FileResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tlsfront-files-XXXXXX";
    base_ = mkdtemp(tmpl);
    root_ = base_ / "www";
    fs::create_directories(root_ / "docs");
    fs::create_directories(root_ / "empty");
    write(root_ / "index.html", "home");
    write(root_ / "app.js", "js");
    write(root_ / "docs" / "index.html", "docs");
    write(root_ / ".env", "secret");
    write(base_ / "outside.txt", "outside");
    fs::create_symlink(base_ / "outside.txt", root_ / "out.txt");
    fs::create_symlink(root_ / "app.js", root_ / "in.js");
    mkfifo((root_ / "fifo").c_str(), 0600);
    route_.path = "/";
    route_.files = std::make_shared<config::FileRoute>();
    route_.files->dir = root_.string();
  }
  void TearDown() override { fs::remove_all(base_); }
  static void write(const fs::path& p, std::string_view s) { std::ofstream(p) << s; }
  Resolution get(std::string_view path, std::string_view accept = {}) { return resolve(route_, path, "", accept); }
  static std::string body(const Resolution& r) {
    char buf[64];
    const ssize_t n = r.file ? pread(r.file->fd.get(), buf, sizeof buf, 0) : -1;
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

  fs::path base_, root_;
  config::Route route_;
};

TEST_F(FileResolverTest, FilesIndexAndDirectories) {
  EXPECT_EQ(body(get("/app.js")), "js");
  EXPECT_EQ(body(get("/")), "home");
  EXPECT_EQ(body(get("/docs/")), "docs");
  Resolution r = get("/docs");
  EXPECT_EQ(r.kind, Resolution::Kind::Redirect);
  EXPECT_EQ(r.location, "/docs/");
  EXPECT_EQ(get("/empty/").status, 403);  // no index: never a listing
  EXPECT_EQ(get("/missing.js").status, 404);
  EXPECT_EQ(get("/app.js/").status, 404);
  EXPECT_EQ(get("/app%2Ejs").kind, Resolution::Kind::File);  // percent-decoded
}

TEST_F(FileResolverTest, RefusesDotfilesSymlinksOutAndSpecialFiles) {
  EXPECT_EQ(get("/.env").status, 404);
  EXPECT_EQ(get("/out.txt").status, 403);
  EXPECT_EQ(get("/in.js").status, 403);  // any link, unless follow_symlinks
  EXPECT_EQ(get("/fifo").status, 403);
  EXPECT_EQ(get("/a%00b").status, 400);
  route_.files->dotfiles = true;
  EXPECT_EQ(body(get("/.env")), "secret");
  route_.files->follow_symlinks = true;
  EXPECT_EQ(body(get("/out.txt")), "outside");
  EXPECT_EQ(body(get("/in.js")), "js");
}

// A file the process may not read is 403 with the cause, never 404 or a
// crash. Root reads anything: the check runs in a child that, when root,
// becomes nobody first.
TEST_F(FileResolverTest, UnreadableFileIs403WithItsCause) {
  write(root_ / "secret.txt", "secret");
  ASSERT_EQ(chmod((root_ / "secret.txt").c_str(), 0), 0);
  ASSERT_EQ(chmod(base_.c_str(), 0755), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(2);
    const Resolution r = get("/secret.txt");
    const bool ok = r.kind == Resolution::Kind::Status && r.status == 403 &&
                    r.error.find("Permission denied") != std::string::npos && body(get("/app.js")) == "js";
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: not 403 with its cause; 2: could not become nobody";
}

TEST_F(FileResolverTest, TryFilesFallbacks) {
  route_.files->try_files = {"$uri", "$uri/"};
  route_.files->fallback_path = "/index.html";
  EXPECT_EQ(body(get("/app.js")), "js");
  EXPECT_EQ(body(get("/docs")), "docs");
  // The fallback path is routed again (nginx's internal redirect), once.
  Resolution again = get("/some/client/route");
  EXPECT_EQ(again.kind, Resolution::Kind::Rematch);
  EXPECT_EQ(again.location, "/index.html");
  EXPECT_EQ(resolve(route_, "/nope", "", "", nullptr, true).status, 404);
  route_.files->fallback_path = "$uri/x";
  EXPECT_EQ(get("/a%20b%25").location, "/a%20b%25/x");
  route_.files->fallback_path = "/index.html";
  EXPECT_EQ(get("/out.txt").status, 403);  // refused, not a fallback
  route_.files->fallback_path.clear();
  route_.files->fallback_status = 410;
  EXPECT_EQ(get("/nope").status, 410);
  route_.files->fallback_route = 3;
  Resolution r = get("/nope");
  EXPECT_EQ(r.kind, Resolution::Kind::Route);
  EXPECT_EQ(r.route, 3u);
}

TEST_F(FileResolverTest, Alias) {
  route_.path = "/static/";
  route_.files->alias = true;
  route_.files->dir = (root_ / "docs").string();
  EXPECT_EQ(body(get("/static/index.html")), "docs");
  EXPECT_EQ(body(get("/static/")), "docs");
}

TEST_F(FileResolverTest, PrecompressedVariantWhenAcceptedAndNotOlder) {
  write(root_ / "app.js.br", "br!");
  write(root_ / "app.js.gz", "gz!");
  route_.files->precompressed = {"br", "gzip"};
  Resolution r = get("/app.js", "gzip, br");
  EXPECT_EQ(r.coding, "br");
  EXPECT_EQ(body(r), "br!");
  EXPECT_EQ(r.type_path, "app.js");
  r = get("/app.js", "gzip, br;q=0");
  EXPECT_EQ(r.coding, "gzip");
  EXPECT_EQ(get("/app.js", "").coding, "");
  // A variant older than the file is stale: the file itself.
  struct timespec times[2] = {{0, UTIME_OMIT}, {1000, 0}};
  utimensat(AT_FDCWD, (root_ / "app.js.br").c_str(), times, 0);
  utimensat(AT_FDCWD, (root_ / "app.js.gz").c_str(), times, 0);
  r = get("/app.js", "br, gzip");
  EXPECT_EQ(r.coding, "");
  EXPECT_EQ(body(r), "js");
}

}  // namespace
}  // namespace tlsfront::files
