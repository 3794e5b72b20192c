// GPU tests of the cuda backend's attention kernel (runtime/backends/cuda/kernels/attention.hpp)
// against a double-precision host reference written here: the shapes edgevla runs (SigLIP's
// vision tower, Gemma's prefix, the action expert's suffix with and without pi0's per-row
// limit), odd shapes, split keys with and without scratch, a captured CUDA graph replayed after
// the device-side block-a length changed, and the scratch a family of calls needs. Also prints the
// time per call of the real shapes in bf16. Without a CUDA device every test skips itself.
#include "tests/gpu/cuda_attention_cases.hpp"

namespace edgevla::backends::cuda {
namespace {

Case siglip() {
  Case c{.name = "siglip 3 cameras", .batch = 3, .rows = 256, .heads = 16, .kv_heads = 16, .h = 72};
  c.a_max = 256;
  c.a_len = -1;
  c.fused = true;
  c.batch_pad = 8;
  return c;
}
std::vector<Case> real_cases() {
  // gemma_prefix(1200, ...): 150 blocks, more than a wave of two-group blocks on the GPUs the
  // backend runs on (132 multiprocessors and fewer), so head dim 256 with one key group is
  // covered too; the prefixes of 968 and 1024 rows (121 / 128 blocks) take two groups. The
  // prefixes run where the plan puts them (on a compute capability 9.0 device the warpgroup
  // kernel) and on attn_bf16.
  std::vector<Case> v = {siglip(), gemma_prefix(968, 968), gemma_prefix(1024, 968), gemma_prefix(1200, 1100),
                         action_expert(51, 833, true), action_expert(50, 968, false)};
  for (int i : {1, 2, 3}) {
    Case c = v[i];
    c.wg = 0;
    c.name += " attn_bf16";
    v.push_back(c);
  }
  return v;
}

std::vector<Case> odd_cases() {
  std::vector<Case> v;
  {
    Case c{.name = "rows 1 gqa 4/2 h 64", .rows = 1, .heads = 4, .kv_heads = 2, .h = 64};
    c.a_max = 40, c.a_len = 17, c.b_len = 5, c.b_limit = {3};
    v.push_back(c);
  }
  {
    Case c{.name = "rows 7 h 72 b limits", .rows = 7, .heads = 2, .kv_heads = 1, .h = 72};
    c.a_max = 100, c.a_len = -1, c.b_len = 9, c.b_limit = {0, 1, 2, 9, 4, 12, 9};
    v.push_back(c);
  }
  {
    Case c{.name = "batch 3 rows 7 h 256 strides", .batch = 3, .rows = 7, .heads = 8, .kv_heads = 1, .h = 256};
    c.a_max = 130, c.a_len = 77, c.b_len = 20, c.pad = 16, c.batch_pad = 24;
    v.push_back(c);
  }
  {
    Case c{.name = "batch 3 h 64 b limit", .batch = 3, .rows = 33, .heads = 6, .kv_heads = 3, .h = 64};
    c.a_max = 300, c.a_len = 299, c.b_len = 33, c.b_limit = pi0_limits(33, 33), c.pad = 8, c.batch_pad = 8;
    v.push_back(c);
  }
  {
    Case c{.name = "h 8 rows 5", .rows = 5, .heads = 3, .kv_heads = 3, .h = 8};
    c.a_max = 33, c.a_len = 33;
    v.push_back(c);
  }
  {
    Case c{.name = "h 200 rows 9 group 4", .rows = 9, .heads = 8, .kv_heads = 2, .h = 200};
    c.a_max = 70, c.a_len = 65, c.b_len = 3;
    v.push_back(c);
  }
  {
    Case c{.name = "h 128 rows 100 group 4", .rows = 100, .heads = 8, .kv_heads = 2, .h = 128};
    c.a_max = 257, c.a_len = 257;
    v.push_back(c);
  }
  // The tiny generated checkpoints (head_dim 16): action expert (pi0.5, pi0), the prefix with a
  // padded bucket, and SigLIP over three cameras.
  {
    Case c{.name = "tiny expert h 16", .rows = 10, .heads = 2, .kv_heads = 1, .h = 16};
    c.a_max = 816, c.a_len = 521, c.b_len = 10;
    v.push_back(c);
  }
  {
    Case c{.name = "tiny pi0 expert h 16", .rows = 11, .heads = 2, .kv_heads = 1, .h = 16};
    c.a_max = 816, c.a_len = 791, c.b_len = 11, c.b_limit = pi0_limits(11, 11);
    v.push_back(c);
  }
  {
    Case c{.name = "tiny prefix h 16 bucket", .rows = 832, .heads = 2, .kv_heads = 1, .h = 16};
    c.a_max = 832, c.a_len = 791;
    v.push_back(c);
  }
  {
    Case c{.name = "tiny siglip h 16 3 cams", .batch = 3, .rows = 256, .heads = 2, .kv_heads = 2, .h = 16};
    c.a_max = 256, c.a_len = -1, c.fused = true;
    v.push_back(c);
  }
  {
    Case c{.name = "block b only", .rows = 7, .heads = 2, .kv_heads = 2, .h = 96};
    c.b_len = 13, c.b_limit = {13, 1, 5, 7, 0, 13, 2};
    v.push_back(c);
  }
  {
    Case c{.name = "zero keys", .rows = 3, .heads = 2, .kv_heads = 1, .h = 64};
    c.a_max = 10, c.a_len = 0, c.b_len = 4, c.b_limit = {0, 2, 4};
    v.push_back(c);
  }
  {
    Case c{.name = "h 160 fused", .batch = 2, .rows = 45, .heads = 4, .kv_heads = 2, .h = 160};
    c.a_max = 45, c.a_len = 45, c.fused = true, c.pad = 8;
    v.push_back(c);
  }
  return v;
}

TEST(CudaAttention, RealShapesF32) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  for (const Case& c : real_cases()) check_case(c, DType::kF32);
}

TEST(CudaAttention, RealShapesBf16) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  for (const Case& c : real_cases()) check_case(c, DType::kBF16);
}

TEST(CudaAttention, OddShapesF32) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  for (const Case& c : odd_cases()) check_case(c, DType::kF32);
}

TEST(CudaAttention, OddShapesBf16) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  for (const Case& c : odd_cases()) check_case(c, DType::kBF16);
}

// The action expert with no scratch (one block per row tile) and with scratch for two splits.
TEST(CudaAttention, SplitKeysFollowTheScratch) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  for (DType act : {DType::kBF16, DType::kF32}) {
    const Case c = action_expert(51, 900, true);
    {
      Problem p(c, act);
      ASSERT_TRUE(p.ready());
      EXPECT_GT(p.args().scratch_bytes, 0u) << "the action expert's shape should split its keys";
    }
    check_case(c, act, false);
    const std::size_t one_split = std::size_t{51} * 8 * (256 + 2) * sizeof(float);
    check_case(c, act, true, 2 * one_split + 100);
  }
}

// A graph captured once serves every block-a length: change *a_len on the device, replay.
TEST(CudaAttention, GraphReplayFollowsALen) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  for (DType act : {DType::kBF16, DType::kF32}) {
    for (bool pi0 : {true, false}) check_replays(action_expert(pi0 ? 51 : 50, 300, pi0), act, {300, 968, 517, 1, 0});
  }
}

TEST(CudaAttention, RejectsBadArguments) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  Case c{.name = "args", .rows = 4, .heads = 4, .kv_heads = 2, .h = 64};
  c.a_max = 16, c.a_len = 16;
  Problem p(c, DType::kBF16);
  ASSERT_TRUE(p.ready());
  ASSERT_TRUE(attention(nullptr, p.args()).is_ok());
  auto expect_rejected = [&](AttentionArgs a, const char* what) {
    EXPECT_FALSE(attention(nullptr, a).is_ok()) << what;
  };
  AttentionArgs a = p.args();
  a.h = 12;
  expect_rejected(a, "h not a multiple of 8");
  a = p.args();
  a.h = 264;
  a.ldq = a.ldo = 4 * 264;
  a.a.ld = 2 * 264;
  expect_rejected(a, "h over 256");
  a = p.args();
  a.kv_heads = 3;
  expect_rejected(a, "heads not a multiple of kv_heads");
  a = p.args();
  a.act = DType::kF16;
  expect_rejected(a, "f16");
  a = p.args();
  a.ldq = 4 * 64 + 4;
  expect_rejected(a, "stride not a multiple of 8");
  a = p.args();
  a.q = static_cast<const char*>(a.q) + 2;
  expect_rejected(a, "misaligned q");
  a = p.args();
  a.a.k = nullptr;
  expect_rejected(a, "block a without k");
  a = p.args();
  a.wg_keys = 96;
  expect_rejected(a, "a walk tile other than 64 or 128 keys");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Microseconds per call: back-to-back stream launches, and a graph of `iters` captured calls.
void time_calls(const Problem& p, cudaStream_t stream, int iters, double& stream_us, double& graph_us) {
  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(attention(stream, p.args()).is_ok());
  ASSERT_EQ(cudaEventRecord(start, stream), cudaSuccess);
  for (int i = 0; i < iters; ++i) ASSERT_TRUE(attention(stream, p.args()).is_ok());
  ASSERT_EQ(cudaEventRecord(stop, stream), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  float ms = 0.0f;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  stream_us = 1000.0 * ms / iters;

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  bool all_ok = true;
  for (int i = 0; i < iters; ++i) all_ok = attention(stream, p.args()).is_ok() && all_ok;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(all_ok);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);  // warm
  ASSERT_EQ(cudaEventRecord(start, stream), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(stop, stream), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  graph_us = 1000.0 * ms / iters;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// Time per call of the real shapes (printed, not asserted), in bf16 and f32; the split-key
// shapes also with their key splits capped by smaller scratch.
TEST(CudaAttention, Timing) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  constexpr int kIters = 100;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const std::vector<Case> cases = {siglip(), gemma_prefix(968, 968), action_expert(51, 968, true),
                                   action_expert(50, 968, false)};
  for (DType act : {DType::kBF16, DType::kF32}) {
    for (const Case& c : cases) {
      const std::size_t one_split = std::size_t(c.batch) * c.kv_heads * c.rows * (c.heads / c.kv_heads) *
                                    (c.h + 2) * sizeof(float);
      std::size_t auto_bytes = 0;
      {
        Problem probe(c, act);
        ASSERT_TRUE(probe.ready());
        auto_bytes = probe.args().scratch_bytes;
      }
      // Split caps to try: the automatic choice, then (bf16, where it splits) fewer.
      std::vector<int> caps = {0};
      if (act == DType::kBF16 && auto_bytes > 0) {
        for (int cap : {1, 2, 4, 8, 12, 16}) {
          if (cap * one_split < auto_bytes) caps.push_back(cap);
        }
      }
      for (int cap : caps) {
        Problem p(c, act, cap != 1, cap > 1 ? cap * one_split : 0);
        ASSERT_TRUE(p.ready());
        double stream_us = 0.0, graph_us = 0.0;
        time_calls(p, stream, kIters, stream_us, graph_us);
        if (HasFatalFailure()) return;
        const int splits = static_cast<int>(p.args().scratch_bytes / one_split);
        std::printf("  timing %-4s %-34s splits %2d%s %8.1f us/call (stream) %8.1f us/call (graph)\n",
                    act == DType::kBF16 ? "bf16" : "f32", c.name.c_str(), std::max(splits, 1),
                    cap == 0 ? " auto" : "     ", stream_us, graph_us);
      }
    }
  }
  cudaStreamDestroy(stream);
}

// attention_scratch_bytes_upto: the most any member of the family takes (each batch up to the
// call's, each row bucket up to its rows, a self-attention's keys shortened with the rows), which
// on a large GPU is more than the largest member's: pi0.5's one-view prefix (464 rows) splits its
// keys where the three-view one (976) does not.
TEST(CudaAttention, ScratchUptoCoversEveryShorterCall) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  struct Family {
    AttentionArgs args;
    std::int64_t step;
  };
  AttentionArgs prefix{DType::kBF16, 1, 976, 8, 1, 256};
  prefix.a_max = 976;
  AttentionArgs tower{DType::kBF16, 3, 256, 16, 16, 72};
  tower.a_max = 256;
  AttentionArgs llm{DType::kBF16, 1, 320, 16, 8, 128};
  llm.b_len = 320;
  for (const Family& f : {Family{prefix, 16}, Family{tower, 256}, Family{llm, 16}}) {
    std::size_t want = 0;
    for (std::int64_t b = 1; b <= f.args.batch; ++b) {
      for (std::int64_t r = f.step; r <= f.args.rows; r += f.step) {
        AttentionArgs a = f.args;
        a.batch = b;
        a.rows = r;
        if (f.args.a_max == f.args.rows) a.a_max = r;
        if (f.args.b_len == f.args.rows) a.b_len = r;
        want = std::max(want, attention_scratch_bytes(a));
      }
    }
    EXPECT_EQ(attention_scratch_bytes_upto(f.args, f.step), want) << f.args.rows << " rows";
    EXPECT_GE(want, attention_scratch_bytes(f.args));
  }
  AttentionArgs one_view = prefix;
  one_view.rows = one_view.a_max = 464;
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  std::printf("prefix scratch: 976 rows %zu bytes, 464 rows %zu, every bucket %zu (%d multiprocessors)\n",
              attention_scratch_bytes(prefix), attention_scratch_bytes(one_view),
              attention_scratch_bytes_upto(prefix, 16), sms);
  if (sms >= 100) {
    EXPECT_GT(attention_scratch_bytes(one_view), attention_scratch_bytes(prefix));
  }
  EXPECT_EQ(attention_scratch_bytes_upto(prefix, 0), 0u);  // no step: nothing to size
}

}  // namespace
}  // namespace edgevla::backends::cuda
