// ChunkExecutor driven by explicit times: no clock, no sleeping, exact numbers.
#include "nodes/actuation/chunk_executor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace edgevla::nodes {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kPeriod = 20 * kMs;               // 50 Hz
constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;  // an arbitrary wall-clock instant
constexpr int kCols = 32;                                // chunks are padded to 32 columns

// A chunk whose action i of joint j is base + i + 100 j; padding columns hold 9999.
struct TestChunk {
  std::vector<float> data;
  std::int64_t rows = 0;
  std::int64_t cols = kCols;
  std::int64_t source_stamp_ns = 0;
  std::optional<double> dt_s;
  std::int64_t id = 0;

  float& at(std::int64_t i, std::int64_t j) { return data[static_cast<std::size_t>(i * cols + j)]; }
  ChunkInput input() const { return {data, rows, cols, source_stamp_ns, dt_s, id}; }
};

TestChunk ramp(std::int64_t rows, float base, std::int64_t id = 0, std::int64_t cols = kCols) {
  TestChunk c;
  c.rows = rows;
  c.cols = cols;
  c.id = id;
  c.data.assign(static_cast<std::size_t>(rows * cols), 9999.0f);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < std::min<std::int64_t>(cols, 2); ++j) {
      c.at(i, j) = base + static_cast<float>(i) + 100.0f * static_cast<float>(j);
    }
  }
  return c;
}

// Every action the same: {v0, v1}.
TestChunk constant(std::int64_t rows, float v0, float v1, std::int64_t id = 0) {
  TestChunk c = ramp(rows, 0, id);
  for (std::int64_t i = 0; i < rows; ++i) {
    c.at(i, 0) = v0;
    c.at(i, 1) = v1;
  }
  return c;
}

// Two joints at 50 Hz, stride 4, no latency compensation, no watchdog, no limits.
ChunkExecutorOptions plain() {
  ChunkExecutorOptions o;
  o.control_rate_hz = 50;
  o.action_dim = 2;
  o.tuning.execute_steps = 4;
  o.tuning.latency_compensation = false;
  o.tuning.watchdog_timeout_s = 0;
  return o;
}

ChunkExecutor make(const ChunkExecutorOptions& o) {
  auto e = ChunkExecutor::create(o);
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return std::move(*e);
}

// The tick at time kT0 + k periods.
std::int64_t at_tick(std::int64_t k) { return kT0 + k * kPeriod; }

void expect_position(const std::optional<Command>& c, double j0, double j1) {
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->position.size(), 2u);
  EXPECT_NEAR(c->position[0], j0, 1e-9);
  EXPECT_NEAR(c->position[1], j1, 1e-9);
}

TEST(ActuationChunkExecutor, CommandsNothingBeforeTheFirstChunk) {
  ChunkExecutor e = make(plain());
  EXPECT_FALSE(e.tick(at_tick(0)).has_value());
  EXPECT_FALSE(e.tick(at_tick(1)).has_value());
  EXPECT_EQ(e.counters().ticks, 2u);
  EXPECT_EQ(e.counters().commands, 0u);
}

TEST(ActuationChunkExecutor, HoldsInitialPositionBeforeTheFirstChunk) {
  ChunkExecutorOptions o = plain();
  o.initial_position = {0.5, -0.25};
  ChunkExecutor e = make(o);
  for (int k = 0; k < 3; ++k) {
    auto c = e.tick(at_tick(k));
    expect_position(c, 0.5, -0.25);
    EXPECT_EQ(c->state, CommandState::kInitial);
    EXPECT_EQ(c->chunk_id, -1);
    EXPECT_TRUE(c->chunk_wanted);
  }
  ASSERT_TRUE(e.submit(ramp(3, 10).input(), at_tick(2) + kMs).is_ok());
  expect_position(e.tick(at_tick(3)), 10, 110);
}

TEST(ActuationChunkExecutor,
     OneActionPerTickStrideMarksTheNextChunkWantedThenRunsToTheEndAndHolds) {
  ChunkExecutor e = make(plain());  // execute_steps = 4
  ASSERT_TRUE(e.submit(ramp(6, 10, /*id=*/7).input(), at_tick(0) - kMs).is_ok());
  for (int k = 0; k < 6; ++k) {
    auto c = e.tick(at_tick(k));
    expect_position(c, 10 + k, 110 + k);
    EXPECT_EQ(c->state, CommandState::kRun);
    EXPECT_EQ(c->chunk_id, 7);
    EXPECT_EQ(c->chunk_step, k);
    EXPECT_EQ(c->chunk_wanted, k >= 3) << k;  // after 4 actions the next chunk is due
  }
  EXPECT_EQ(e.counters().late_ticks, 2u);  // actions 4 and 5 ran past the stride
  EXPECT_EQ(e.counters().holds, 0u);
  for (int k = 6; k < 9; ++k) {
    auto c = e.tick(at_tick(k));
    expect_position(c, 15, 115);  // the last action, held
    EXPECT_EQ(c->state, CommandState::kHold);
    EXPECT_EQ(c->chunk_id, 7);
    EXPECT_EQ(c->chunk_step, -1);
    EXPECT_TRUE(c->chunk_wanted);
  }
  EXPECT_EQ(e.counters().holds, 3u);
  EXPECT_EQ(e.counters().commands, 9u);
}

TEST(ActuationChunkExecutor, ReplaceTakesOverAtTheNextTick) {
  ChunkExecutor e = make(plain());
  ASSERT_TRUE(e.submit(ramp(10, 10, 1).input(), at_tick(0) - kMs).is_ok());
  for (int k = 0; k < 3; ++k) expect_position(e.tick(at_tick(k)), 10 + k, 110 + k);
  ASSERT_TRUE(e.submit(ramp(10, 50, 2).input(), at_tick(2) + kMs).is_ok());
  for (int k = 0; k < 4; ++k) {
    auto c = e.tick(at_tick(3 + k));
    expect_position(c, 50 + k, 150 + k);
    EXPECT_EQ(c->state, CommandState::kRun);
    EXPECT_EQ(c->chunk_id, 2);
    EXPECT_EQ(c->chunk_step, k);
  }
}

TEST(ActuationChunkExecutor, BlendMixesTheOverlapThenFollowsTheNewChunk) {
  ChunkExecutorOptions o = plain();
  o.tuning.transition = Transition::kBlend;  // 0.3 old, 0.7 new
  ChunkExecutor e = make(o);
  ASSERT_TRUE(e.submit(ramp(6, 10, 1).input(), at_tick(0) - kMs).is_ok());
  expect_position(e.tick(at_tick(0)), 10, 110);
  expect_position(e.tick(at_tick(1)), 11, 111);
  // Old actions 12..15 remain for the next 4 ticks; the new chunk has 50..57 for them.
  ASSERT_TRUE(e.submit(ramp(8, 50, 2).input(), at_tick(1) + kMs).is_ok());
  const double blended[] = {38.6, 39.6, 40.6, 41.6};  // 0.3 * (12 + k) + 0.7 * (50 + k)
  for (int k = 0; k < 4; ++k) {
    auto c = e.tick(at_tick(2 + k));
    expect_position(c, blended[k], blended[k] + 100);
    EXPECT_EQ(c->state, CommandState::kBlend);
    EXPECT_EQ(c->chunk_id, 2);
    EXPECT_EQ(c->chunk_step, k);
  }
  for (int k = 4; k < 8; ++k) {
    auto c = e.tick(at_tick(2 + k));
    expect_position(c, 50 + k, 150 + k);
    EXPECT_EQ(c->state, CommandState::kRun);
  }
  expect_position(e.tick(at_tick(10)), 57, 157);  // then holds the new chunk's last action

  // The weight is a tuning knob; blending into an exhausted plan has no overlap.
  e.set_tuning({4, Transition::kBlend, 0.5, false, 0});
  ASSERT_TRUE(e.submit(ramp(4, 20, 3).input(), at_tick(10) + kMs).is_ok());
  expect_position(e.tick(at_tick(11)), 20, 120);
  ASSERT_TRUE(e.submit(ramp(4, 40, 4).input(), at_tick(11) + kMs).is_ok());
  expect_position(e.tick(at_tick(12)), 0.5 * 21 + 0.5 * 40, 0.5 * 121 + 0.5 * 140);
}

TEST(ActuationChunkExecutor, LatencyCompensationSkipsActionsWhoseTimeHasPassed) {
  ChunkExecutorOptions o = plain();
  o.tuning.latency_compensation = true;
  ChunkExecutor e = make(o);
  // Observed at kT0, inference took 70 ms: at the tick of kT0 + 80 ms, action 4 is due.
  TestChunk c = ramp(10, 10, 1);
  c.source_stamp_ns = kT0;
  ASSERT_TRUE(e.submit(c.input(), kT0 + 70 * kMs).is_ok());
  auto first = e.tick(kT0 + 80 * kMs);
  expect_position(first, 14, 114);
  EXPECT_EQ(first->chunk_step, 4);
  expect_position(e.tick(kT0 + 100 * kMs), 15, 115);

  // The action nearest in time: 4.45 periods -> action 4, 4.55 -> action 5.
  ChunkExecutor near = make(o);
  ASSERT_TRUE(near.submit(c.input(), kT0 + 70 * kMs).is_ok());
  EXPECT_EQ(near.tick(kT0 + 89 * kMs)->chunk_step, 4);
  ChunkExecutor later = make(o);
  ASSERT_TRUE(later.submit(c.input(), kT0 + 70 * kMs).is_ok());
  EXPECT_EQ(later.tick(kT0 + 91 * kMs)->chunk_step, 5);

  // Off: the chunk starts at its first action whatever its age.
  ChunkExecutor off = make(plain());
  ASSERT_TRUE(off.submit(c.input(), kT0 + 70 * kMs).is_ok());
  expect_position(off.tick(kT0 + 80 * kMs), 10, 110);

  // An observation stamped ahead of our clock (skew) is not delayed: action 0 now.
  ChunkExecutor skew = make(o);
  c.source_stamp_ns = kT0 + 500 * kMs;
  ASSERT_TRUE(skew.submit(c.input(), kT0).is_ok());
  expect_position(skew.tick(kT0 + 20 * kMs), 10, 110);
}

TEST(ActuationChunkExecutor, LatencyCompensationAndBlendAlignOnTime) {
  ChunkExecutorOptions o = plain();
  o.tuning.latency_compensation = true;
  o.tuning.transition = Transition::kBlend;
  ChunkExecutor e = make(o);
  TestChunk a = ramp(10, 10, 1);
  a.source_stamp_ns = kT0;
  ASSERT_TRUE(e.submit(a.input(), kT0).is_ok());
  for (int k = 0; k < 3; ++k) expect_position(e.tick(at_tick(k)), 10 + k, 110 + k);
  // Observed at tick 1, arrives after tick 2: at tick 3 the new chunk's action 2 is due,
  // blended with the old chunk's action 3.
  TestChunk b = ramp(10, 50, 2);
  b.source_stamp_ns = at_tick(1);
  ASSERT_TRUE(e.submit(b.input(), at_tick(2) + 10 * kMs).is_ok());
  auto c = e.tick(at_tick(3));
  expect_position(c, 0.3 * 13 + 0.7 * 52, 0.3 * 113 + 0.7 * 152);  // 40.3, 140.3
  EXPECT_EQ(c->chunk_step, 2);
  EXPECT_EQ(c->state, CommandState::kBlend);
}

TEST(ActuationChunkExecutor, AChunkEntirelyInThePastIsRejectedAndThePlanContinues) {
  ChunkExecutorOptions o = plain();
  o.tuning.latency_compensation = true;
  ChunkExecutor e = make(o);
  ASSERT_TRUE(e.submit(ramp(10, 10, 1).input(), kT0).is_ok());  // unstamped: never stale
  expect_position(e.tick(at_tick(0)), 10, 110);
  TestChunk stale = ramp(5, 50, 2);
  stale.source_stamp_ns = kT0 - 200 * kMs;  // 5 actions span 100 ms
  const Status s = e.submit(stale.input(), kT0 + 5 * kMs);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(e.counters().chunks_rejected, 1u);
  expect_position(e.tick(at_tick(1)), 11, 111);
}

TEST(ActuationChunkExecutor, ADtOtherThanTheControlPeriodIsResampledByNearestAction) {
  ChunkExecutor e = make(plain());
  TestChunk c = ramp(3, 10, 1);
  c.dt_s = 0.04;  // two control periods per action
  ASSERT_TRUE(e.submit(c.input(), kT0 - kMs).is_ok());
  const int expected[] = {0, 1, 1, 2, 2};  // halfway ties go to the later action
  for (int k = 0; k < 5; ++k) {
    auto cmd = e.tick(at_tick(k));
    EXPECT_EQ(cmd->chunk_step, expected[k]) << k;
    EXPECT_EQ(cmd->state, CommandState::kRun);
  }
  EXPECT_EQ(e.tick(at_tick(5))->state, CommandState::kHold);
}

TEST(ActuationChunkExecutor, StarvedItHoldsTheLastActionNeverZeros) {
  ChunkExecutor e = make(plain());
  ASSERT_TRUE(e.submit(constant(3, 0.75f, -2.5f).input(), kT0 - kMs).is_ok());
  for (int k = 0; k < 100; ++k) {
    auto c = e.tick(at_tick(k));
    expect_position(c, 0.75, -2.5);
    EXPECT_EQ(c->state, k < 3 ? CommandState::kRun : CommandState::kHold);
  }
  EXPECT_EQ(e.counters().holds, 97u);
}

TEST(ActuationChunkExecutor, PositionLimitsClampEveryCommand) {
  ChunkExecutorOptions o = plain();
  o.position_min = {-1.0, 0.0};
  o.position_max = {1.0, 0.5};
  ChunkExecutor e = make(o);
  TestChunk c = ramp(3, 0, 1);
  c.at(0, 0) = 5;
  c.at(0, 1) = 0.75f;
  c.at(1, 0) = -5;
  c.at(1, 1) = -3;
  c.at(2, 0) = 0.25f;
  c.at(2, 1) = 0.25f;
  ASSERT_TRUE(e.submit(c.input(), kT0 - kMs).is_ok());
  auto c0 = e.tick(at_tick(0));
  expect_position(c0, 1.0, 0.5);
  EXPECT_TRUE(c0->clamped);
  expect_position(e.tick(at_tick(1)), -1.0, 0.0);
  auto c2 = e.tick(at_tick(2));
  expect_position(c2, 0.25, 0.25);
  EXPECT_FALSE(c2->clamped);
  EXPECT_EQ(e.counters().position_clamps, 4u);
  EXPECT_EQ(e.counters().velocity_clamps, 0u);
}

TEST(ActuationChunkExecutor, VelocityLimitBoundsThePerTickChange) {
  ChunkExecutorOptions o = plain();
  o.max_velocity = {1.0};  // one value for every joint: 0.02 per tick at 50 Hz
  ChunkExecutor e = make(o);
  ASSERT_TRUE(e.submit(constant(2, 0, 0, 1).input(), kT0 - kMs).is_ok());
  expect_position(e.tick(at_tick(0)), 0, 0);  // the first command has nothing to limit against
  ASSERT_TRUE(e.submit(constant(50, 1, -1, 2).input(), at_tick(0) + kMs).is_ok());
  for (int k = 1; k <= 10; ++k) {
    auto c = e.tick(at_tick(k));
    expect_position(c, 0.02 * k, -0.02 * k);
    EXPECT_TRUE(c->clamped);
  }
  EXPECT_EQ(e.counters().velocity_clamps, 20u);
  // Starved, the hold keeps approaching the last action at the limit, then stays there.
  ChunkExecutor f = make(o);
  ASSERT_TRUE(f.submit(constant(1, 0, 0, 1).input(), kT0 - kMs).is_ok());
  expect_position(f.tick(at_tick(0)), 0, 0);
  ASSERT_TRUE(f.submit(constant(1, 0.05f, 0, 2).input(), at_tick(0) + kMs).is_ok());
  expect_position(f.tick(at_tick(1)), 0.02, 0);
  expect_position(f.tick(at_tick(2)), 0.04, 0);
  expect_position(f.tick(at_tick(3)), 0.05f, 0);
  expect_position(f.tick(at_tick(4)), 0.05f, 0);

  // Per-joint limits, and position limits applied after the velocity limit.
  ChunkExecutorOptions p = plain();
  p.max_velocity = {1.0, 0.5};
  p.position_max = {0.03, 10};
  ChunkExecutor g = make(p);
  ASSERT_TRUE(g.submit(constant(1, 0, 0, 1).input(), kT0 - kMs).is_ok());
  expect_position(g.tick(at_tick(0)), 0, 0);
  ASSERT_TRUE(g.submit(constant(5, 1, 1, 2).input(), at_tick(0) + kMs).is_ok());
  expect_position(g.tick(at_tick(1)), 0.02, 0.01);
  expect_position(g.tick(at_tick(2)), 0.03, 0.02);
}

TEST(ActuationChunkExecutor, WatchdogFreezesReportsAFaultAndRecovers) {
  ChunkExecutorOptions o = plain();
  o.tuning.watchdog_timeout_s = 0.1;
  ChunkExecutor e = make(o);
  ASSERT_TRUE(e.submit(ramp(50, 10, 1).input(), at_tick(0)).is_ok());
  for (int k = 0; k <= 5; ++k) {  // 100 ms of silence is still within the timeout
    auto c = e.tick(at_tick(k));
    expect_position(c, 10 + k, 110 + k);
    EXPECT_TRUE(c->fault.empty());
  }
  for (int k = 6; k <= 8; ++k) {
    auto c = e.tick(at_tick(k));
    expect_position(c, 15, 115);  // frozen at the last command, the plan is abandoned
    EXPECT_EQ(c->state, CommandState::kFault);
    EXPECT_FALSE(c->fault.empty());
    EXPECT_EQ(c->chunk_id, 1);
  }
  EXPECT_EQ(e.counters().watchdog_faults, 1u);  // one trip, however long it lasts
  EXPECT_EQ(e.counters().holds, 3u);
  ASSERT_TRUE(e.submit(ramp(50, 30, 2).input(), at_tick(8) + kMs).is_ok());
  auto c = e.tick(at_tick(9));
  expect_position(c, 30, 130);
  EXPECT_EQ(c->state, CommandState::kRun);
  EXPECT_TRUE(c->fault.empty());
  expect_position(e.tick(at_tick(10)), 31, 131);
  EXPECT_EQ(e.counters().watchdog_faults, 1u);
}

TEST(ActuationChunkExecutor, AChunkNarrowerThanActionDimIsRejectedWhileThePlanRuns) {
  ChunkExecutor e = make(plain());
  ASSERT_TRUE(e.submit(ramp(10, 10, 1).input(), kT0 - kMs).is_ok());
  expect_position(e.tick(at_tick(0)), 10, 110);
  const Status s = e.submit(ramp(10, 50, 2, /*cols=*/1).input(), at_tick(0) + kMs);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.counters().chunks_rejected, 1u);
  auto c = e.tick(at_tick(1));
  expect_position(c, 11, 111);
  EXPECT_EQ(c->chunk_id, 1);
}

TEST(ActuationChunkExecutor, NanOrInfInTheUsedColumnsRejectsTheChunk) {
  ChunkExecutor e = make(plain());
  ASSERT_TRUE(e.submit(ramp(10, 10, 1).input(), kT0 - kMs).is_ok());
  expect_position(e.tick(at_tick(0)), 10, 110);
  TestChunk nan = ramp(10, 50, 2);
  nan.at(3, 1) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(e.submit(nan.input(), at_tick(0) + kMs).code(), StatusCode::kInvalidArgument);
  TestChunk inf = ramp(10, 50, 3);
  inf.at(9, 0) = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(e.submit(inf.input(), at_tick(0) + kMs).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.counters().chunks_rejected, 2u);
  expect_position(e.tick(at_tick(1)), 11, 111);  // the previous plan keeps running
  // Padding columns beyond action_dim are not commanded, so they are not checked.
  TestChunk padded = ramp(10, 50, 4);
  padded.at(0, 5) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(e.submit(padded.input(), at_tick(1) + kMs).is_ok());
  expect_position(e.tick(at_tick(2)), 50, 150);
}

TEST(ActuationChunkExecutor, EmptyChunksAndBadDtAreRejected) {
  ChunkExecutor e = make(plain());
  EXPECT_FALSE(e.submit(ramp(0, 10).input(), kT0).is_ok());
  for (double dt : {0.0, -0.02, 100.0, std::nan("")}) {
    TestChunk c = ramp(4, 10);
    c.dt_s = dt;
    EXPECT_FALSE(e.submit(c.input(), kT0).is_ok()) << dt;
  }
  EXPECT_EQ(e.counters().chunks_rejected, 5u);
  EXPECT_FALSE(e.tick(kT0).has_value());  // nothing was accepted
}

TEST(ActuationChunkExecutor, AChunkOlderThanTheCurrentOneIsRejected) {
  ChunkExecutor e = make(plain());
  TestChunk newer = ramp(10, 10, 1);
  newer.source_stamp_ns = kT0;
  ASSERT_TRUE(e.submit(newer.input(), kT0 + kMs).is_ok());
  TestChunk older = ramp(10, 50, 2);
  older.source_stamp_ns = kT0 - 40 * kMs;
  EXPECT_FALSE(e.submit(older.input(), kT0 + 2 * kMs).is_ok());
  expect_position(e.tick(kT0 + 3 * kMs), 10, 110);
}

TEST(ActuationChunkExecutor, TheNewestOfSeveralChunksBetweenTwoTicksWins) {
  ChunkExecutor e = make(plain());
  ASSERT_TRUE(e.submit(ramp(10, 10, 1).input(), kT0 - 3 * kMs).is_ok());
  ASSERT_TRUE(e.submit(ramp(10, 50, 2).input(), kT0 - 2 * kMs).is_ok());
  auto c = e.tick(kT0);
  expect_position(c, 50, 150);
  EXPECT_EQ(c->chunk_id, 2);
  EXPECT_EQ(e.counters().chunks_superseded, 1u);
  EXPECT_EQ(e.counters().chunks_received, 2u);
}

TEST(ActuationChunkExecutor, OptionsAreValidated) {
  auto bad = [](auto change) {
    ChunkExecutorOptions o = plain();
    change(o);
    return ChunkExecutor::validate(o);
  };
  EXPECT_TRUE(bad([](auto&) {}).is_ok());
  EXPECT_FALSE(bad([](auto& o) { o.action_dim = 0; }).is_ok());
  EXPECT_FALSE(bad([](auto& o) { o.position_min = {0, 0, 0}; }).is_ok());
  EXPECT_FALSE(bad([](auto& o) { o.position_max = {1}; }).is_ok());
  EXPECT_FALSE(bad([](auto& o) {
                 o.position_min = {0, 2};
                 o.position_max = {1, 1};
               }).is_ok());
  EXPECT_TRUE(bad([](auto& o) { o.max_velocity = {1}; }).is_ok());
  EXPECT_FALSE(bad([](auto& o) { o.max_velocity = {1, 1, 1}; }).is_ok());
  EXPECT_FALSE(bad([](auto& o) { o.max_velocity = {-1}; }).is_ok());
  EXPECT_FALSE(bad([](auto& o) { o.initial_position = {0}; }).is_ok());
  EXPECT_FALSE(bad([](auto& o) {
                 o.position_max = {1, 1};
                 o.initial_position = {0, 2};
               }).is_ok());
  EXPECT_FALSE(bad([](auto& o) { o.tuning.blend_old_weight = 1.5; }).is_ok());
  EXPECT_FALSE(ChunkExecutor::create([] {
                 ChunkExecutorOptions o = plain();
                 o.control_rate_hz = 0;
                 return o;
               }())
                   .has_value());
}

}  // namespace
}  // namespace edgevla::nodes
