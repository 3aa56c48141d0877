// files::OpenFileCache against a real directory: a hit reuses the open file
// and its content; a file rewritten, replaced by rename or deleted is
// opened again at once; a new file where there was none is seen once
// `valid` has passed; entries and content stay within max and memory; the
// walk that stands in for openat2 refuses symbolic links as openat2 does.
#include "data/files/open_file_cache.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tlsfront::files {
namespace {

namespace fs = std::filesystem;

class OpenFileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tlsfront-ofc-XXXXXX";
    base_ = mkdtemp(tmpl);
    dir_ = base_.string();
    write("a.js", "alpha");
  }
  void TearDown() override { fs::remove_all(base_); }
  void write(const std::string& name, const std::string& s) { std::ofstream(base_ / name, std::ios::binary) << s; }
  Opened open(const std::string& rel, uint64_t now_ms = 0) {
    LazyDir dir(dir_);
    return cache_.open(limits_, now_ms, dir, rel, false);
  }

  fs::path base_;
  std::string dir_;
  config::OpenFileCache limits_;
  OpenFileCache cache_;
};

TEST_F(OpenFileCacheTest, AHitReusesTheOpenFileAndItsContent) {
  Opened first = open("a.js");
  ASSERT_EQ(first.outcome, Outcome::Found);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(first.file->in_memory);
  EXPECT_EQ(first.file->content, "alpha");
  EXPECT_TRUE(first.file->etag.starts_with("\""));
  Opened again = open("a.js", 10);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.file, first.file);
  EXPECT_EQ(cache_.size(), 1u);
  EXPECT_EQ(cache_.memory(), 5u);
}

TEST_F(OpenFileCacheTest, AChangedFileIsOpenedAgainAtOnce) {
  Opened first = open("a.js");
  write("a.js", "alpha, longer");  // in place: size and mtime change
  Opened after_write = open("a.js", 1);
  EXPECT_FALSE(after_write.cache_hit);
  EXPECT_EQ(after_write.file->content, "alpha, longer");
  write("b.tmp", "bravo!");
  fs::rename(base_ / "b.tmp", base_ / "a.js");  // replaced: the old inode has no link left
  Opened after_rename = open("a.js", 2);
  EXPECT_FALSE(after_rename.cache_hit);
  EXPECT_EQ(after_rename.file->content, "bravo!");
  fs::remove(base_ / "a.js");
  EXPECT_EQ(open("a.js", 3).outcome, Outcome::Missing);
  EXPECT_EQ(cache_.memory(), 0u);
}

TEST_F(OpenFileCacheTest, AFileIsCheckedOncePerLoopIteration) {
  LazyDir dir(dir_);
  Opened first = cache_.open(limits_, 0, dir, "a.js", false, 7);
  ASSERT_EQ(first.outcome, Outcome::Found);
  write("b.tmp", "bravo!");
  fs::rename(base_ / "b.tmp", base_ / "a.js");
  // The same iteration: its requests were read together, the entry's
  // check at its insertion stands.
  Opened same_pass = cache_.open(limits_, 0, dir, "a.js", false, 7);
  EXPECT_TRUE(same_pass.cache_hit);
  EXPECT_EQ(same_pass.file, first.file);
  EXPECT_EQ(same_pass.file->content, "alpha");
  // The next iteration checks again.
  Opened next_pass = cache_.open(limits_, 0, dir, "a.js", false, 8);
  EXPECT_FALSE(next_pass.cache_hit);
  EXPECT_EQ(next_pass.file->content, "bravo!");
  write("c.tmp", "charlie");
  fs::rename(base_ / "c.tmp", base_ / "a.js");
  // Without an iteration (0) every hit is checked.
  EXPECT_EQ(cache_.open(limits_, 0, dir, "a.js", false, 0).file->content, "charlie");
}

TEST_F(OpenFileCacheTest, AMissingPathIsRememberedUntilValidHasPassed) {
  EXPECT_EQ(open("new.js", 0).outcome, Outcome::Missing);
  write("new.js", "new");
  Opened within = open("new.js", 999);
  EXPECT_EQ(within.outcome, Outcome::Missing);
  EXPECT_TRUE(within.cache_hit);
  Opened after = open("new.js", 1000);
  ASSERT_EQ(after.outcome, Outcome::Found);
  EXPECT_EQ(after.file->content, "new");
  // The same file after `valid` keeps its entry (and its content).
  Opened later = open("new.js", 2500);
  EXPECT_EQ(later.file, after.file);
}

TEST_F(OpenFileCacheTest, EntriesAndContentStayWithinTheLimits) {
  limits_.max = 3;
  limits_.memory = 12;
  limits_.content_max = 8;
  for (int i = 0; i < 6; ++i) write("f" + std::to_string(i), "12345");
  write("big", "123456789");
  for (int i = 0; i < 6; ++i) EXPECT_EQ(open("f" + std::to_string(i)).outcome, Outcome::Found);
  EXPECT_EQ(cache_.size(), 2u);  // 3 would hold 15 octets of content
  EXPECT_LE(cache_.memory(), 12u);
  Opened big = open("big");
  EXPECT_FALSE(big.file->in_memory);  // over content_max: read from the file
  EXPECT_LE(cache_.size(), 3u);
  limits_.max = 0;  // off (a reload): nothing kept
  EXPECT_FALSE(open("big").cache_hit);
  EXPECT_EQ(cache_.size(), 0u);
}

TEST_F(OpenFileCacheTest, RefusalsAreNeverKept) {
  fs::create_symlink(base_ / "a.js", base_ / "link.js");
  Opened o = open("link.js");
  EXPECT_EQ(o.outcome, Outcome::Refused);
  EXPECT_EQ(o.status, 403);
  EXPECT_EQ(cache_.size(), 0u);
}

}  // namespace
}  // namespace tlsfront::files

namespace tlsfront::files {
namespace {

// The walk that stands in for openat2 (valgrind 3.19, kernels before 5.6).
TEST_F(OpenFileCacheTest, TheWalkWithoutOpenat2RefusesSymbolicLinks) {
  fs::create_directories(base_ / "sub");
  write("sub/b.css", "b");
  fs::create_symlink(base_ / "a.js", base_ / "link.js");
  fs::create_directory_symlink(base_ / "sub", base_ / "linkdir");
  const int dir = ::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  const int ok = open_walking(dir, "sub/b.css");
  EXPECT_GE(ok, 0);
  char c = 0;
  EXPECT_EQ(pread(ok, &c, 1, 0), 1);
  EXPECT_EQ(c, 'b');
  ::close(ok);
  EXPECT_EQ(open_walking(dir, "link.js"), -1);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_EQ(open_walking(dir, "linkdir/b.css"), -1);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_EQ(open_walking(dir, "a.js/x"), -1);
  EXPECT_EQ(errno, ENOTDIR);
  EXPECT_EQ(open_walking(dir, "none/x"), -1);
  EXPECT_EQ(errno, ENOENT);
  ::close(dir);
}

}  // namespace
}  // namespace tlsfront::files
