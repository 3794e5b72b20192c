// GoogleTest helpers for per-node replay tests: a replay is an ordinary test case.
#pragma once

#include <gtest/gtest.h>

#include "runtime/bag/replay.hpp"

// Replays options.node from options.bag; fails the test (printing the comparison table) when
// the replay cannot run or any output is out of tolerance.
#define EXPECT_REPLAY_PASSES(options)                                             \
  do {                                                                            \
    auto edgevla_replay_ = ::edgevla::bag::replay_node(options);                  \
    ASSERT_TRUE(edgevla_replay_.has_value()) << edgevla_replay_.status().to_string(); \
    EXPECT_TRUE(edgevla_replay_->passed()) << edgevla_replay_->table();           \
  } while (0)

// The opposite: the replay runs, and at least one output is out of tolerance.
#define EXPECT_REPLAY_FAILS(options)                                              \
  do {                                                                            \
    auto edgevla_replay_ = ::edgevla::bag::replay_node(options);                  \
    ASSERT_TRUE(edgevla_replay_.has_value()) << edgevla_replay_.status().to_string(); \
    EXPECT_FALSE(edgevla_replay_->passed()) << edgevla_replay_->table();          \
  } while (0)
