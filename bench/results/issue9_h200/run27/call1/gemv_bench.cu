// Standalone probe: a register-streaming few-rows GEMM (weights as the mma's A operand, loaded
// 16 bytes a lane straight from global memory, k permuted the same way on both operands) against
// cuBLASLt's best heuristic candidate, and a plain read of the same bytes, each as a CUDA graph
// of back-to-back calls over rotating weight copies (cold in L2).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1);} } while (0)
#define LK(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { std::printf("cublasLt %s at %d: %d\n", #x, __LINE__, (int)s_); std::exit(1);} } while (0)

using bf16 = __nv_bfloat16;

__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}

__device__ __forceinline__ void mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                    unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__global__ void stream_read(const uint4* p, long long n16, unsigned* sink) {
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = ld_stream(p + i), b = ld_stream(p + i + stride), c = ld_stream(p + i + 2 * stride),
          d = ld_stream(p + i + 3 * stride);
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < n16; i += stride) acc ^= ld_stream(p + i).x;
  if (acc == 0x12345678u) sink[0] = acc;
}

__global__ void empty_kernel() {}

// Y[m, N] (bf16) or parts[p][m][N] (f32) = X[m, K] · W[N, K]ᵀ. Block: 8 warps = RG row groups of
// 16 features × KS k shares; grid (N / (16 RG), P).
template <int NT, int KS, int U>
__global__ void __launch_bounds__(256) gemv_mma(const bf16* __restrict__ X, int m, int ldx,
                                                const bf16* __restrict__ W, int K, int N,
                                                bf16* __restrict__ Y, float* __restrict__ parts) {
  constexpr int RG = 8 / KS;
  __shared__ float red[8][16][8 * NT + 1];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int rg = blockIdx.x * RG + warp / KS, ks = warp % KS;
  const int P = gridDim.y, p = blockIdx.y;
  const int kper = K / (P * KS);
  const int k0 = (p * KS + ks) * kper;
  const bf16* w0 = W + (long long)(rg * 16 + g) * K + k0 + 8 * t;
  const bf16* w1 = w0 + 8LL * K;
  const bf16* x = X + k0 + 8 * t;
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  const int nch = kper / 32;
  uint4 cur[U][2];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (u < nch) { cur[u][0] = ld_stream(w0 + u * 32); cur[u][1] = ld_stream(w1 + u * 32); }
  }
  for (int c = 0; c < nch; c += U) {
    uint4 nxt[U][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c + U + u < nch) {
        nxt[u][0] = ld_stream(w0 + (c + U + u) * 32);
        nxt[u][1] = ld_stream(w1 + (c + U + u) * 32);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c + u < nch) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int row = 8 * j + g;
          uint4 b = make_uint4(0, 0, 0, 0);
          if (row < m) b = __ldg(reinterpret_cast<const uint4*>(x + (long long)row * ldx + (c + u) * 32));
          mma(acc[j], cur[u][0].x, cur[u][1].x, cur[u][0].y, cur[u][1].y, b.x, b.y);
          mma(acc[j], cur[u][0].z, cur[u][1].z, cur[u][0].w, cur[u][1].w, b.z, b.w);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) { cur[u][0] = nxt[u][0]; cur[u][1] = nxt[u][1]; }
  }
  // D fragment: c0,c1 = (feature g, act rows 8j+2t, +1); c2,c3 = (feature g+8, same rows).
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    red[warp][g][8 * j + 2 * t] = acc[j][0];
    red[warp][g][8 * j + 2 * t + 1] = acc[j][1];
    red[warp][g + 8][8 * j + 2 * t] = acc[j][2];
    red[warp][g + 8][8 * j + 2 * t + 1] = acc[j][3];
  }
  __syncthreads();
  constexpr int kElems = RG * 16 * 8 * NT;
  for (int e = threadIdx.x; e < kElems; e += 256) {
    const int r = e % (8 * NT);          // activation row
    const int f = (e / (8 * NT)) % 16;   // feature within group
    const int gl = e / (8 * NT * 16);    // local row group
    if (r >= m) continue;
    float s = 0.f;
#pragma unroll
    for (int q = 0; q < KS; ++q) s += red[gl * KS + q][f][r];
    const int col = (blockIdx.x * RG + gl) * 16 + f;
    if (P == 1) Y[(long long)r * N + col] = __float2bfloat16(s);
    else parts[((long long)p * m + r) * N + col] = s;
  }
}

struct Shape { const char* name; int m, n, k; };

static float time_graph(cudaStream_t s, cudaGraphExec_t ge, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  return best;
}

int main(int argc, char** argv) {
  const int calls = 40;            // calls per graph
  const size_t pool_bytes = 512ull << 20;
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* pool; CK(cudaMalloc(&pool, pool_bytes));
  CK(cudaMemset(pool, 0x3c, pool_bytes));  // bf16 ~0.0115 everywhere (finite)
  bf16 *X, *Y; float* parts; unsigned* sink;
  CK(cudaMalloc(&X, 64 * 8192 * 2)); CK(cudaMalloc(&Y, 64 * 16384 * 2));
  CK(cudaMalloc(&parts, 32ull * 64 * 16384 * 4)); CK(cudaMalloc(&sink, 64));
  {
    std::vector<bf16> hx(64 * 8192);
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = __float2bfloat16(((int)(i * 2654435761u % 2001) - 1000) / 1000.f);
    CK(cudaMemcpy(X, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
  }
  cublasLtHandle_t lt; LK(cublasLtCreate(&lt));
  void* ws; const size_t ws_bytes = 32 << 20; CK(cudaMalloc(&ws, ws_bytes));

  std::vector<Shape> shapes = {
      {"groot_ff1", 17, 6144, 1536}, {"groot_ff2", 17, 1536, 6144}, {"groot_qkv", 17, 4608, 1536},
      {"groot_out", 17, 1536, 1536}, {"pi05_qkv", 50, 2560, 1024},  {"pi05_o", 50, 1024, 2048},
      {"pi05_gateup", 50, 8192, 1024}, {"pi05_down", 50, 1024, 4096},
  };
  // launch floor
  {
    cudaGraph_t gr; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < calls; ++i) empty_kernel<<<132, 256, 0, s>>>();
    CK(cudaStreamEndCapture(s, &gr)); CK(cudaGraphInstantiate(&ge, gr, 0));
    std::printf("empty kernel (132x256): %.2f us per call\n", time_graph(s, ge, 20) * 1000 / calls);
  }
  for (const Shape& sh : shapes) {
    const size_t wbytes = (size_t)sh.n * sh.k * 2;
    const int copies = (int)std::min<size_t>(64, pool_bytes / wbytes);
    auto wptr = [&](int i) { return reinterpret_cast<bf16*>((char*)pool + (size_t)(i % copies) * wbytes); };
    std::printf("== %s m=%d n=%d k=%d  %.2f MB, %d copies\n", sh.name, sh.m, sh.n, sh.k, wbytes / 1e6, copies);
    auto run_graph = [&](auto&& body) {
      cudaGraph_t gr; cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < calls; ++i) body(i);
      CK(cudaStreamEndCapture(s, &gr));
      CK(cudaGraphInstantiate(&ge, gr, 0));
      float us = time_graph(s, ge, 20) * 1000 / calls;
      CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(gr));
      return us;
    };
    for (int blocks : {132, 264, 528}) {
      float us = run_graph([&](int i) { stream_read<<<blocks, 512, 0, s>>>((const uint4*)wptr(i), wbytes / 16, sink); });
      std::printf("  read %4d blocks   %7.2f us  %.2f TB/s\n", blocks, us, wbytes / us / 1e6);
    }
    // cuBLASLt: D^T (n x m col-major) = W^T(op T on k x n) x X (k x m)
    {
      for (int P : {1, 2, 4, 8}) {
        if (sh.k % (P * 64)) continue;
        if (P > 1 && sh.n > 2048) continue;
        const int kp = sh.k / P;
        cublasLtMatmulDesc_t op; LK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        cublasLtMatrixLayout_t la, lb, ld;
        LK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, kp, sh.n, sh.k));
        LK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, kp, sh.m, sh.k));
        cudaDataType_t dt = P == 1 ? CUDA_R_16BF : CUDA_R_32F;
        LK(cublasLtMatrixLayoutCreate(&ld, dt, sh.n, sh.m, sh.n));
        if (P > 1) {
          int32_t bc = P; int64_t sa = kp, sb = kp, sd = (int64_t)sh.n * sh.m;
          for (auto l : {la, lb, ld}) LK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
          LK(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa));
          LK(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb));
          LK(cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sd, sizeof sd));
        }
        cublasLtMatmulPreference_t pref; LK(cublasLtMatmulPreferenceCreate(&pref));
        LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
        cublasLtMatmulHeuristicResult_t res[16]; int nres = 0;
        LK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 16, res, &nres));
        float best = 1e30f; int besti = -1;
        for (int a = 0; a < nres; ++a) {
          const float alpha = 1.f, beta = 0.f;
          void* D = P == 1 ? (void*)Y : (void*)parts;
          float us = run_graph([&](int i) {
            cublasLtMatmul(lt, op, &alpha, wptr(i), la, X, lb, &beta, D, ld, D, ld, &res[a].algo, ws, ws_bytes, s);
          });
          if (us < best) { best = us; besti = a; }
        }
        std::printf("  cublasLt parts %d  %7.2f us  %.2f TB/s  (best of %d, #%d)\n", P, best, wbytes / best / 1e6, nres, besti);
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatmulDescDestroy(op);
      }
    }
    // gemv_mma variants
    auto try_gemv = [&](auto kern, int ks, int u, int P, int nt) {
      const int rg = 8 / ks;
      if (sh.n % (16 * rg)) return;
      if (sh.k % (32 * P * ks)) return;
      if (P > 1 && sh.n > 2048) return;
      dim3 grid(sh.n / (16 * rg), P);
      float us = run_graph([&](int i) { kern<<<grid, 256, 0, s>>>(X, sh.m, sh.k, wptr(i), sh.k, sh.n, Y, parts); });
      CK(cudaGetLastError());
      std::printf("  gemv NT%d KS%d U%d P%-2d grid %4d  %7.2f us  %.2f TB/s\n", nt, ks, u, P, grid.x * grid.y, us, wbytes / us / 1e6);
    };
    for (int P : {1, 2, 4, 8}) {
      if (sh.m <= 24) {
        try_gemv(gemv_mma<3, 8, 4>, 8, 4, P, 3); try_gemv(gemv_mma<3, 4, 4>, 4, 4, P, 3);
        try_gemv(gemv_mma<3, 2, 4>, 2, 4, P, 3); try_gemv(gemv_mma<3, 8, 2>, 8, 2, P, 3);
        try_gemv(gemv_mma<3, 4, 8>, 4, 8, P, 3);
      } else {
        try_gemv(gemv_mma<7, 8, 4>, 8, 4, P, 7); try_gemv(gemv_mma<7, 4, 4>, 4, 4, P, 7);
        try_gemv(gemv_mma<7, 2, 4>, 2, 4, P, 7); try_gemv(gemv_mma<7, 8, 2>, 8, 2, P, 7);
        try_gemv(gemv_mma<7, 4, 2>, 4, 2, P, 7);
      }
    }
  }
  // correctness of one gemv against a host product (first shape of each NT)
  for (int which : {0, 4}) {
    const Shape sh = shapes[which];
    std::vector<bf16> hw((size_t)sh.n * sh.k), hx((size_t)64 * 8192);
    for (size_t i = 0; i < hw.size(); ++i) hw[i] = __float2bfloat16(((int)(i * 40503u % 1999) - 999) / 4000.f);
    bf16* dw = reinterpret_cast<bf16*>(pool);
    CK(cudaMemcpy(dw, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(hx.data(), X, hx.size() * 2, cudaMemcpyDeviceToHost));
    dim3 grid(sh.n / 16, 1);
    if (sh.m <= 24) gemv_mma<3, 8, 4><<<grid, 256, 0, s>>>(X, sh.m, sh.k, dw, sh.k, sh.n, Y, parts);
    else gemv_mma<7, 8, 4><<<grid, 256, 0, s>>>(X, sh.m, sh.k, dw, sh.k, sh.n, Y, parts);
    CK(cudaStreamSynchronize(s));
    std::vector<bf16> hy((size_t)sh.m * sh.n);
    CK(cudaMemcpy(hy.data(), Y, hy.size() * 2, cudaMemcpyDeviceToHost));
    double err = 0, ref2 = 0;
    for (int r = 0; r < sh.m; ++r)
      for (int c = 0; c < sh.n; ++c) {
        double acc = 0;
        for (int kk = 0; kk < sh.k; ++kk) acc += (double)__bfloat162float(hx[(size_t)r * sh.k + kk]) * __bfloat162float(hw[(size_t)c * sh.k + kk]);
        const double d = __bfloat162float(hy[(size_t)r * sh.n + c]) - acc;
        err += d * d; ref2 += acc * acc;
      }
    std::printf("check %s: rel-L2 %.3e\n", sh.name, std::sqrt(err / ref2));
  }
  return 0;
}
