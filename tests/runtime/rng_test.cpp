// The node generator must match its specification in runtime/util/rng.hpp exactly (other
// implementations, e.g. NumPy references, reproduce it from that text). Expected values were
// computed by a separate Python implementation of the written spec.
#include "runtime/util/rng.hpp"

#include <gtest/gtest.h>

namespace edgevla {
namespace {

TEST(Rng, MatchesItsSpecification) {
  Rng r(7, 0);
  EXPECT_EQ(r.next_u64(), 0x63cbe1e459320dd7ull);
  EXPECT_EQ(r.next_u64(), 0x044c3cd7f43c661cull);
  EXPECT_EQ(r.next_u64(), 0xe6984080bab12a02ull);
  EXPECT_DOUBLE_EQ(r.normal(), -1.2638933287309149);  // draws 4 and 5
  EXPECT_EQ(r.state(), (RngState{7, 5}));
  Rng u(12345, 41);
  EXPECT_DOUBLE_EQ(u.uniform(), 0.5302336372734242);
}

TEST(Rng, RestoringTheStateRepeatsTheDraws) {
  Rng a(99, 0);
  for (int i = 0; i < 10; ++i) a.normal();
  const RngState saved = a.state();
  std::vector<float> first(16), second(16);
  a.fill_normal(first);
  Rng b;
  b.set_state(saved);
  b.fill_normal(second);
  EXPECT_EQ(first, second);
  Rng c(100, 20);
  std::vector<float> other(16);
  c.fill_normal(other);
  EXPECT_NE(first, other);
}

}  // namespace
}  // namespace edgevla
