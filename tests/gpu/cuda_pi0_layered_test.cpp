// The pi0 / pi0.5 action head following the backbone's cache layer by layer on the cuda backend
// (EDGEVLA_CUDA_LAYER_FENCES): the same actions as engines that wait for the whole cache, with the
// backbone's own cache and with one bound on the device (a bus block), the bound blocks past the
// ones written inside the pass, and the stage timings that keep the two stages apart. Without a
// GPU every test skips itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/fence.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "tests/gpu/cuda_pi0_pairs.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends {
namespace {

using model::ModelType;

using test::all_finite;
using test::checkpoint;
using test::open_with;
using test::Pair;
using test::rel_l2;

// EDGEVLA_CUDA_LAYER_FENCES=1: the backbone hands its own cache out while its stream still runs,
// with an event per layer, and the head's first step waits for layer l's event before it reads
// layer l. Against the same engines waiting for the whole cache (same GEMM picks, from one plan
// file), the actions are the same: a head that read a layer before it was written would read the
// previous run's cache (each run here has other inputs, so its actions would differ).
TEST(CudaPi0Layered, TheHeadFollowingTheBackboneLayerByLayerGivesTheSameActions) {
  REQUIRE_GPU();
  for (ModelType type : {ModelType::kPi05, ModelType::kPi0}) {
    const std::string dir = checkpoint("small", type);
    const test::TempPlanFile plans(dir + "-layered-plans.txt");
    auto layered = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "1"}});
    ASSERT_TRUE(layered) << layered.status().to_string();
    const model::ModelConfig& c = layered->model->config();
    const std::vector<std::pair<int, int>> cases = {{5, 10}, {40, 10}, {17, 4}, {5, 10}, {40, 1}};
    std::vector<model::ForwardInputs> ins;
    std::vector<Tensor> first;  // the layered engines' first runs (eager, then captured), planning every GEMM
    for (std::size_t run = 0; run < cases.size(); ++run) {
      auto in = model::random_inputs(c, 300 + run, {}, std::min(cases[run].first, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = cases[run].second;
      auto a = model::run_forward(*layered->backbone, *layered->head, c, *in, false);
      ASSERT_TRUE(a) << a.status().to_string();
      // The layered backbone returned before its device work was done.
      ASSERT_FALSE(a->parts.empty());
      EXPECT_EQ(a->parts.front().first, "backbone_enqueue");
      first.push_back(a->actions);
      ins.push_back(*in);
    }
    // Opened after: the same GEMM picks, from the plan file.
    auto whole = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "0"}});
    ASSERT_TRUE(whole) << whole.status().to_string();
    for (std::size_t run = 0; run < cases.size(); ++run) {
      auto a = model::run_forward(*layered->backbone, *layered->head, c, ins[run], false);  // graphs replayed
      auto b = model::run_forward(*whole->backbone, *whole->head, c, ins[run], false);
      ASSERT_TRUE(a && b) << (a ? b.status().to_string() : a.status().to_string());
      ASSERT_FALSE(b->parts.empty());
      EXPECT_EQ(b->parts.front().first, "backbone_gpu");  // finished before it returned
      ASSERT_TRUE(all_finite(a->actions) && all_finite(first[run]));
      const std::int64_t n = b->actions.numel();
      const double e = rel_l2(a->actions.data<float>(), b->actions.data<float>(), n);
      const double e0 = rel_l2(first[run].data<float>(), b->actions.data<float>(), n);
      std::printf("[small %s] run %zu (%d tokens, %d steps): layered vs whole actions rel-L2 %.2e (first run %.2e)\n",
                  std::string(model::model_type_name(type)).c_str(), run, cases[run].first, cases[run].second, e, e0);
      EXPECT_LE(e, 1e-6) << "run " << run;
      EXPECT_LE(e0, 1e-6) << "run " << run;
    }
  }
}

// One forward with the backbone's cache bound to `block` (a device [L, 2, P, K, h] tensor in the
// compute dtype, as a bus block in the node graphs) and the head reading it there.
Expected<Tensor> forward_into(Pair& p, const model::ModelConfig& c, const model::ForwardInputs& in, const Tensor& block) {
  p.backbone->clear_bindings();
  for (std::size_t s = 0; s < c.cameras.size(); ++s) {
    if (in.images[s].defined()) EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("image." + c.cameras[s], in.images[s]));
  }
  EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("tokens", in.tokens));
  EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("token_mask", in.token_mask));
  EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("kv", block));
  EDGEVLA_RETURN_IF_ERROR(p.backbone->run({}));
  p.head->clear_bindings();
  EDGEVLA_ASSIGN_OR_RETURN(Tensor kv, p.backbone->output("kv"));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor mask, p.backbone->output("mask"));
  EDGEVLA_RETURN_IF_ERROR(p.head->bind("kv", kv));
  EDGEVLA_RETURN_IF_ERROR(p.head->bind("mask", mask));
  if (in.state.defined()) EDGEVLA_RETURN_IF_ERROR(p.head->bind("state", in.state));
  EDGEVLA_RETURN_IF_ERROR(p.head->bind("noise", in.noise));
  RunOptions ro;
  ro.num_steps = in.num_steps;
  EDGEVLA_RETURN_IF_ERROR(p.head->run(ro));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor actions, p.head->output("actions"));
  return actions.clone();
}

// EDGEVLA_CUDA_LAYER_FENCES=2: a cache bound on the device (a bus block) is written layer by layer
// inside the backbone's pass and handed out with the layer events. Two blocks alternate (a graph
// per block); against engines that copy the cache after the pass (0): the same actions, and the
// same bytes in the block (the valid rows, and zeros past them).
TEST(CudaPi0Layered, ACacheBoundOnTheDeviceIsWrittenLayerByLayerToo) {
  REQUIRE_GPU();
  for (ModelType type : {ModelType::kPi05, ModelType::kPi0}) {
    const std::string dir = checkpoint("small", type);
    const test::TempPlanFile plans(dir + "-bound-plans.txt");
    auto layered = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "2"}});
    ASSERT_TRUE(layered) << layered.status().to_string();
    const model::ModelConfig& c = layered->model->config();
    const Shape kv_shape{c.vlm.depth, 2, c.prefix_len(), c.vlm.num_kv_heads, c.vlm.head_dim};
    std::vector<Tensor> blocks;
    for (int b = 0; b < 2; ++b) {
      auto t = Tensor::empty(DType::kBF16, kv_shape, Device::cuda(0));
      ASSERT_TRUE(t) << t.status().to_string();
      blocks.push_back(*t);
    }
    const std::vector<std::pair<int, int>> cases = {{5, 10}, {40, 10}, {17, 4}, {5, 10}};
    std::vector<model::ForwardInputs> ins;
    std::vector<Tensor> first;
    for (std::size_t run = 0; run < cases.size(); ++run) {
      auto in = model::random_inputs(c, 500 + run, {}, std::min(cases[run].first, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = cases[run].second;
      auto a = forward_into(*layered, c, *in, blocks[run % 2]);
      ASSERT_TRUE(a) << a.status().to_string();
      // The block went out with the backbone's layer events.
      EXPECT_NE(backends::cuda::layer_events_of(blocks[run % 2], 0), nullptr);
      first.push_back(*a);
      ins.push_back(*in);
    }
    auto whole = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "0"}});
    ASSERT_TRUE(whole) << whole.status().to_string();
    const std::size_t bytes = blocks[0].nbytes();
    std::vector<std::byte> ka(bytes), kb(bytes);
    for (std::size_t run = 0; run < cases.size(); ++run) {
      // Each block written by the other block's run first, so stale rows would show.
      auto a = forward_into(*layered, c, ins[run], blocks[(run + 1) % 2]);
      ASSERT_TRUE(a) << a.status().to_string();
      // The head waited for the layers only; the zeroing after the pass is the block's fence's.
      ASSERT_OK(blocks[(run + 1) % 2].buffer()->wait_ready());
      ASSERT_EQ(cudaMemcpy(ka.data(), blocks[(run + 1) % 2].raw_data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      auto b = forward_into(*whole, c, ins[run], blocks[run % 2]);
      ASSERT_TRUE(b) << b.status().to_string();
      EXPECT_EQ(backends::cuda::layer_events_of(blocks[run % 2], 0), nullptr);
      ASSERT_OK(blocks[run % 2].buffer()->wait_ready());
      ASSERT_EQ(cudaMemcpy(kb.data(), blocks[run % 2].raw_data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      const std::int64_t n = b->numel();
      const double e = rel_l2(a->data<float>(), b->data<float>(), n);
      const double e0 = rel_l2(first[run].data<float>(), b->data<float>(), n);
      std::printf("[small %s] run %zu (%d tokens, %d steps): bound layered vs whole actions rel-L2 %.2e (first run "
                  "%.2e), cache bytes %s\n",
                  std::string(model::model_type_name(type)).c_str(), run, cases[run].first, cases[run].second, e, e0,
                  ka == kb ? "equal" : "DIFFER");
      EXPECT_LE(e, 1e-6) << "run " << run;
      EXPECT_LE(e0, 1e-6) << "run " << run;
      EXPECT_TRUE(ka == kb) << "run " << run;
    }
  }
}

// A backbone writes at most kMaxLayeredBlocks bound blocks inside its pass (a graph each); the
// blocks after them get the cache copied after the pass and no layer events, with the same actions
// and bytes, and the first blocks keep the layered form. The head's timings keep the backbone's
// part apart.
TEST(CudaPi0Layered, BlocksPastTheLayeredOnesTakeTheCopy) {
  REQUIRE_GPU();
  const std::string dir = checkpoint("small", ModelType::kPi05);
  const test::TempPlanFile plans(dir + "-many-blocks-plans.txt");
  auto p = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}});  // the default: layer fences 2
  ASSERT_TRUE(p) << p.status().to_string();
  const model::ModelConfig& c = p->model->config();
  const Shape kv_shape{c.vlm.depth, 2, c.prefix_len(), c.vlm.num_kv_heads, c.vlm.head_dim};
  auto in = model::random_inputs(c, 700, {}, std::min(9, c.token_len()));
  ASSERT_TRUE(in);
  in->num_steps = 3;
  const std::size_t count = backends::cuda::kMaxLayeredBlocks + 2;
  std::vector<Tensor> blocks;
  std::vector<std::vector<std::byte>> bytes;
  Tensor first;
  for (std::size_t b = 0; b <= count; ++b) {
    if (b < count) {
      auto t = Tensor::empty(DType::kBF16, kv_shape, Device::cuda(0));
      ASSERT_TRUE(t) << t.status().to_string();
      ASSERT_EQ(cudaMemset(t->raw_data(), 0xff, t->nbytes()), cudaSuccess);  // stale rows would show
      blocks.push_back(*t);
    }
    const Tensor& block = blocks[b % count];  // the last run: the first block again
    auto a = forward_into(*p, c, *in, block);
    ASSERT_TRUE(a) << a.status().to_string();
    const bool layered = b % count < backends::cuda::kMaxLayeredBlocks;
    EXPECT_EQ(backends::cuda::layer_events_of(block, 0) != nullptr, layered) << "block " << b;
    ASSERT_OK(block.buffer()->wait_ready());
    std::vector<std::byte> kb(block.nbytes());
    ASSERT_EQ(cudaMemcpy(kb.data(), block.raw_data(), kb.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    if (b == 0) {
      first = *a;
    } else {
      const double e = rel_l2(first.data<float>(), a->data<float>(), first.numel());
      EXPECT_LE(e, 1e-6) << "block " << b;
      EXPECT_TRUE(kb == bytes[0]) << "block " << b << ": its cache bytes differ from the first block's";
    }
    bytes.push_back(std::move(kb));
  }
  // Replays on a layered block: the head's time up to the backbone's end is counted as its wait for
  // the backbone (input_wait_ms, which the nodes report as the backbone's), not as the head's own.
  int timed = 0;
  for (int r = 0; r < 4; ++r) {
    auto a = forward_into(*p, c, *in, blocks[0]);
    ASSERT_TRUE(a) << a.status().to_string();
    const backends::RunTimings& t = p->head->last_timings();
    std::printf("layered replay %d: head %.3f ms, of it waiting for the backbone %.3f ms\n", r, t.total_ms,
                t.input_wait_ms);
    EXPECT_GE(t.input_wait_ms, 0.0);
    EXPECT_LE(t.input_wait_ms, t.total_ms);
    if (t.input_wait_ms > 0) ++timed;
  }
  EXPECT_GT(timed, 0) << "no replay timed the backbone's part of the head's run";
}

}  // namespace
}  // namespace edgevla::backends
