// util/state.h: transition() stores legal moves and, with the check on,
// aborts on an illegal one naming both states.
#define TLSFRONT_CHECK_TRANSITIONS 1
#include "util/state.h"

#include <gtest/gtest.h>

namespace tlsfront {
namespace {

enum class Door { Shut, Open, Locked };
constexpr bool legal(Door from, Door to) {
  return (from == Door::Shut && (to == Door::Open || to == Door::Locked)) || (from == Door::Open && to == Door::Shut);
}
constexpr const char* name(Door d) {
  constexpr const char* names[] = {"Shut", "Open", "Locked"};
  return names[static_cast<int>(d)];
}

TEST(StateTransition, LegalMovesAreStored) {
  Door d = Door::Shut;
  transition(d, Door::Open);
  EXPECT_EQ(d, Door::Open);
  transition(d, Door::Shut);
  transition(d, Door::Locked);
  EXPECT_EQ(d, Door::Locked);
}

TEST(StateTransitionDeathTest, IllegalMoveAbortsNamingBothStates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Door d = Door::Locked;
  EXPECT_DEATH(transition(d, Door::Open), "state_test.cc:[0-9]+: illegal state transition Locked -> Open");
  Door e = Door::Open;
  EXPECT_DEATH(transition(e, Door::Open), "illegal state transition Open -> Open");
}

}  // namespace
}  // namespace tlsfront
