// The cuda backend's flow_step (the boundary between two Euler steps of a flow-matching head)
// against the four steps it replaces, computed on the host in double precision from the same
// rounded operands, and its argument errors. Without a CUDA device every test skips itself (the
// test main then reports "not run").
#include "tests/gpu/cuda_test_util.hpp"

namespace edgevla::backends::cuda {
namespace {

// v = y·W_outᵀ + b_out, x += dt·v, next = act(x)·W_inᵀ + b_in. pi0.5's shape (50 rows,
// width 1024, 32 actions), an odd one on the scalar path, with and without the next projection,
// f32 and bf16 next outputs.
TEST_F(CudaKernels, FlowStepMatchesTheStepsItReplaces) {
  struct Shape {
    std::int64_t rows, width, actions;
  };
  for (const DType act : kActs) {
    for (const Shape sh : {Shape{50, 1024, 32}, Shape{3, 20, 7}}) {
      for (int next_kind = 0; next_kind < 3; ++next_kind) {  // none, f32, act
        const std::string what = std::string("flow_step act=") + name(act) + " rows=" + std::to_string(sh.rows) +
                                 " width=" + std::to_string(sh.width) + " actions=" + std::to_string(sh.actions) +
                                 " next=" + (next_kind == 0 ? "none" : next_kind == 1 ? "f32" : "act");
        const std::size_t R = static_cast<std::size_t>(sh.rows), E = static_cast<std::size_t>(sh.width),
                          A = static_cast<std::size_t>(sh.actions);
        const auto y = rounded(random_values(R * E, -2.0f, 2.0f, 40), act);
        const auto w_out = rounded(random_values(A * E, -0.05f, 0.05f, 41), act);
        const auto b_out = random_values(A, -0.1f, 0.1f, 42);
        const auto x = random_values(R * A, -1.0f, 1.0f, 43);
        const auto w_in = rounded(random_values(E * A, -0.3f, 0.3f, 44), act);
        const auto b_in = random_values(E, -0.1f, 0.1f, 45);
        const float dt = -0.1f;
        const DType next_type = next_kind == 2 ? act : DType::kF32;
        DeviceBuffer dy(y, act), dwo(w_out, act), dbo(b_out, DType::kF32), dx(x, DType::kF32), dwi(w_in, act),
            dbi(b_in, DType::kF32), dv(R * A * 4), dn(R * E * 4);
        FlowStepArgs f;
        f.act = act, f.rows = sh.rows, f.width = sh.width, f.action_dim = sh.actions;
        f.y = dy.get(), f.ldy = sh.width, f.w_out = dwo.get(), f.ld_out = sh.width, f.b_out = dbo.as<float>();
        f.x = dx.as<float>(), f.dt = dt, f.v_out = dv.as<float>();
        if (next_kind != 0) {
          f.w_in = dwi.get(), f.ld_in = sh.actions, f.b_in = dbi.as<float>(), f.next_width = sh.width;
          f.next = dn.get(), f.next_type = next_type, f.ld_next = sh.width;
        }
        ASSERT_OK(flow_step(stream_, f));
        sync();
        std::vector<double> v_ref(R * A), x_ref(R * A), n_ref(R * E);
        std::vector<float> x_new(R * A);
        for (std::size_t r = 0; r < R; ++r) {
          for (std::size_t a = 0; a < A; ++a) {
            double s = b_out[a];
            for (std::size_t e = 0; e < E; ++e) s += static_cast<double>(y[r * E + e]) * w_out[a * E + e];
            v_ref[r * A + a] = s;
            x_ref[r * A + a] = x[r * A + a] + dt * s;
            x_new[r * A + a] = static_cast<float>(x_ref[r * A + a]);
          }
        }
        const auto x_act = rounded(x_new, act);
        for (std::size_t r = 0; r < R; ++r) {
          for (std::size_t e = 0; e < E; ++e) {
            double s = b_in[e];
            for (std::size_t a = 0; a < A; ++a) s += static_cast<double>(x_act[r * A + a]) * w_in[e * A + a];
            n_ref[r * E + e] = s;
          }
        }
        expect_close(dv.download(DType::kF32, R * A), v_ref, tolerance_for(DType::kF32), what + " (velocity)");
        expect_close(dx.download(DType::kF32, R * A), x_ref, tolerance_for(DType::kF32), what + " (x)");
        if (next_kind != 0) {
          // f32 sums of the same rounded operands; a bf16 output adds one rounding. In bf16 an x
          // within f32 rounding of a bf16 tie may round the other way: the tolerance covers one
          // bf16 step of x times the row of W_in.
          const Tolerance tol = next_type == DType::kF32 && act == DType::kF32 ? tolerance_for(DType::kF32)
                                                                               : tolerance_for(DType::kBF16);
          expect_close(dn.download(next_type, R * E), n_ref, tol, what + " (next projection)");
        }
        if (HasFailure()) return;
      }
    }
  }
}

TEST_F(CudaKernels, FlowStepRefusesBadArguments) {
  DeviceBuffer buf(1 << 20);
  float* f = buf.as<float>();
  const auto invalid = [](const Status& s) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find("flow_step"), std::string::npos) << s.message();
  };
  FlowStepArgs fs;
  fs.rows = 4, fs.width = 64, fs.action_dim = 300, fs.y = f, fs.ldy = 64, fs.w_out = f, fs.ld_out = 64, fs.x = f;
  invalid(flow_step(stream_, fs));  // more action dims than a block holds
  fs.action_dim = 8, fs.act = DType::kF16;
  invalid(flow_step(stream_, fs));
  fs.act = DType::kBF16, fs.w_in = f, fs.ld_in = 8, fs.next_width = 64, fs.ld_next = 64;  // no next buffer
  invalid(flow_step(stream_, fs));
  fs.next = f, fs.ld_in = 4;  // a row stride shorter than the action dims
  invalid(flow_step(stream_, fs));
  sync();
}

}  // namespace
}  // namespace edgevla::backends::cuda
