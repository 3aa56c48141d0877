// ReplayRecorder (the node's recording of 0-RTT ClientHellos) and
// EarlyDataGate::first_binder (the PSK binder it records).
#include "tls/replay_recorder.h"

#include <gtest/gtest.h>

#include <string>

#include "tls/early_data_gate.h"

namespace tlsfront::tls {
namespace {

using Claim = ReplayRecorder::Claim;
using std::chrono::seconds;

TEST(ReplayRecorder, AClientHelloIsFirstOnceThenSeenUntilTheWindowEnds) {
  const auto t0 = ReplayRecorder::Clock::now();
  ReplayRecorder r(t0 - ReplayRecorder::kWindow);
  const std::string a(32, 'a'), b(32, 'b');
  EXPECT_EQ(r.claim(a, t0), Claim::First);
  EXPECT_EQ(r.claim(a, t0 + seconds(1)), Claim::Seen);
  EXPECT_EQ(r.claim(b, t0 + seconds(1)), Claim::First);
  EXPECT_EQ(r.claim(a, t0 + ReplayRecorder::kWindow - seconds(1)), Claim::Seen);
  EXPECT_EQ(r.claim(a, t0 + ReplayRecorder::kWindow), Claim::First) << "kept for kWindow, then forgotten";
  EXPECT_EQ(r.size(), 2u);
}

TEST(ReplayRecorder, RefusesWithinTheStartWindowOnlyWhenAsked) {
  const auto t0 = ReplayRecorder::Clock::now();
  ReplayRecorder r(t0);
  EXPECT_EQ(r.claim(std::string(32, 'a'), t0 + seconds(1)), Claim::Starting);
  EXPECT_EQ(r.claim(std::string(32, 'a'), t0 + seconds(1), false), Claim::First);
  EXPECT_EQ(r.claim(std::string(32, 'b'), t0 + ReplayRecorder::kWindow), Claim::First);
}

TEST(ReplayRecorder, FailsClosedWhenFull) {
  const auto t0 = ReplayRecorder::Clock::now();
  ReplayRecorder r(t0 - ReplayRecorder::kWindow);
  size_t first = 0, full = 0;
  for (size_t i = 0; i < ReplayRecorder::kMaxRecords + 1000; ++i) {
    const Claim c = r.claim(std::to_string(i), t0);
    first += c == Claim::First;
    full += c == Claim::Full;
  }
  EXPECT_LE(first, ReplayRecorder::kMaxRecords);
  EXPECT_GE(full, 1000u);
  EXPECT_EQ(first + full, ReplayRecorder::kMaxRecords + 1000);
}

// pre_shared_key extension body: identities<7..>, binders<33..>.
std::string psk_ext(std::string_view binder) {
  std::string identity = std::string("\x00\x03", 2) + "abc" + std::string(4, '\x01');  // ticket "abc" + age
  std::string ids = std::string(1, '\0') + static_cast<char>(identity.size()) + identity;
  std::string binders = static_cast<char>(binder.size()) + std::string(binder);
  return ids + std::string(1, '\0') + static_cast<char>(binders.size()) + binders;
}

TEST(EarlyDataGate, FirstBinderOfAWellFormedExtensionOnly) {
  const std::string binder(32, '\x7f');
  const std::string ext = psk_ext(binder);  // the result is a view into it
  auto got = EarlyDataGate::first_binder(ext);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, binder);
  EXPECT_FALSE(EarlyDataGate::first_binder(psk_ext(std::string(31, 'x')))) << "binders are 32..255 bytes";
  std::string truncated = psk_ext(binder);
  truncated.pop_back();
  EXPECT_FALSE(EarlyDataGate::first_binder(truncated));
  EXPECT_FALSE(EarlyDataGate::first_binder(""));
  EXPECT_FALSE(EarlyDataGate::first_binder(std::string("\x00\x03", 2)));
}

}  // namespace
}  // namespace tlsfront::tls
