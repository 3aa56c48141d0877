// util/random_batch.h: RAND_bytes drawn in batches per thread; a forked child
// starts with an empty batch.
#include "util/random_batch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <set>
#include <string>
#include <thread>

namespace tlsfront::random_batch {
namespace {

TEST(RandomBatch, OneRandBytesCallServesManyRequests) {
  std::array<unsigned char, 16> iv{};
  ASSERT_TRUE(fill(iv.data(), iv.size()));
  const size_t left = available();
  EXPECT_LE(left, kBatchBytes - 16);
  ASSERT_TRUE(fill(iv.data(), iv.size()));
  EXPECT_EQ(available(), left - 16);
}

TEST(RandomBatch, ValuesDifferAndRefillWhenTheBatchRunsOut) {
  std::set<std::string> seen;
  for (size_t i = 0; i < 3 * kBatchBytes / 16; ++i) {
    std::array<unsigned char, 16> v{};
    ASSERT_TRUE(fill(v.data(), v.size()));
    EXPECT_TRUE(seen.emplace(reinterpret_cast<const char*>(v.data()), v.size()).second) << i;
    EXPECT_LE(available(), kBatchBytes);
  }
}

TEST(RandomBatch, ABatchTooShortForARequestIsRefilled) {
  unsigned char v[kMaxRequest];
  while (available() == 0 || available() >= kMaxRequest) ASSERT_TRUE(fill(v, 1));
  ASSERT_TRUE(fill(v, kMaxRequest));
  EXPECT_EQ(available(), kBatchBytes - kMaxRequest);
}

TEST(RandomBatch, RefusesMoreThanTheMaximum) {
  unsigned char v[kMaxRequest + 1];
  EXPECT_FALSE(fill(v, sizeof v));
}

TEST(RandomBatch, EachThreadHasItsOwnBatch) {
  unsigned char v[16];
  ASSERT_TRUE(fill(v, sizeof v));
  const size_t here = available();
  size_t there = 0;
  std::thread t([&] {
    unsigned char w[8];
    there = fill(w, sizeof w) ? available() : 0;
  });
  t.join();
  EXPECT_EQ(there, kBatchBytes - 8);
  EXPECT_EQ(available(), here);
}

TEST(RandomBatch, AForkedChildStartsWithAnEmptyBatch) {
  unsigned char v[16];
  ASSERT_TRUE(fill(v, sizeof v));
  ASSERT_GT(available(), 0u);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(available() == 0 ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child would hand out the parent's octets";
}

}  // namespace
}  // namespace tlsfront::random_batch
