// Issue 11's question for the float16 product: how near cuBLAS does a Hopper kernel
// (TMA loads, wgmma from shared memory, warp-specialized producer and consumers) get on
// this GPU? This probe times CUTLASS 3's SM90 GEMM, D = A B^T (A: M x K, B: N x K, both
// row-major as nn.dense's operands; float16 in and out, float32 accumulation), and checks
// 32,768 of its results against a float32 dot product. It prints one JSON line.
//
// Built without a GPU by tools/gpu/cutlass_probe.sh (nvcc, -arch=sm_90a; the headers of
// PyPI's nvidia-cutlass, since the TVM wheel's copy lacks the collective builders), run by
// tools/gpu/check.sh. The schedule is chosen at compile time: -DPINGPONG for the ping-pong
// consumers (two warp groups on alternate tiles), else the cooperative one (two warp
// groups on one 128 x 256 tile). -DNDEBUG matters: without it ptxas serializes the wgmma
// pipeline at the assertions' calls (its warning C7510).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

using namespace cute;
using Half = cutlass::half_t;

#ifdef PINGPONG
using TileShape = Shape<_64, _256, _64>;
using ClusterShape = Shape<_1, _2, _1>;
using MainSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpiSchedule = cutlass::epilogue::TmaWarpSpecialized;
static const char* kName = "pingpong 64x256x64, cluster 1x2";
#else
using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;
using MainSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpiSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
static const char* kName = "cooperative 128x256x64, cluster 2x1";
#endif

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, Half,
    cutlass::layout::RowMajor, 8, Half, cutlass::layout::RowMajor, 8, EpiSchedule>::CollectiveOp;
// (B: N x K row-major is K x N column-major: the "TN" product, K contiguous in both)
using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Half, cutlass::layout::RowMajor, 8,
    Half, cutlass::layout::ColumnMajor, 8, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    MainSchedule>::CollectiveOp;
using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

// uniform values in [-0.5, 0.5) from a hash of the index
__global__ void fill(Half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = Half((h & 0xffff) / 65536.0f - 0.5f);
  }
}

// the largest |d - ref| / (1 + |ref|) over 256 x 128 scattered results
__global__ void check(const Half* a, const Half* b, const Half* d, int m, int n, int k,
                      float* worst) {
  int i = (blockIdx.x * 7919) % m, j = (threadIdx.x * 104729 + blockIdx.x * 31) % n;
  float s = 0;
  for (int l = 0; l < k; ++l) s += float(a[size_t(i) * k + l]) * float(b[size_t(j) * k + l]);
  float err = fabsf(s - float(d[size_t(i) * n + j])) / (1.0f + fabsf(s));
  atomicMax(reinterpret_cast<int*>(worst), __float_as_int(err));  // (err >= 0)
}

#define CHECK_CUDA(x)                                                              \
  do {                                                                             \
    cudaError_t e = (x);                                                           \
    if (e != cudaSuccess) {                                                        \
      printf("{\"error\": \"%s at line %d\"}\n", cudaGetErrorString(e), __LINE__); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)
#define CHECK_CUTLASS(x)                                                             \
  do {                                                                               \
    cutlass::Status s = (x);                                                         \
    if (s != cutlass::Status::kSuccess) {                                            \
      printf("{\"error\": \"%s at line %d\"}\n", cutlassGetStatusString(s), __LINE__); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(int argc, char** argv) {
  int m = argc > 1 ? atoi(argv[1]) : 4096, n = argc > 2 ? atoi(argv[2]) : 4096;
  int k = argc > 3 ? atoi(argv[3]) : 4096, reps = argc > 4 ? atoi(argv[4]) : 50;
  Half *a, *b, *d;
  float* worst;
  CHECK_CUDA(cudaMalloc(&a, sizeof(Half) * m * k));
  CHECK_CUDA(cudaMalloc(&b, sizeof(Half) * n * k));
  CHECK_CUDA(cudaMalloc(&d, sizeof(Half) * m * n));
  CHECK_CUDA(cudaMalloc(&worst, sizeof(float)));
  fill<<<1024, 256>>>(a, size_t(m) * k, 1u);
  fill<<<1024, 256>>>(b, size_t(n) * k, 2u);
  typename Kernel::StrideA sa = make_stride(int64_t(k), Int<1>{}, int64_t(m) * k);
  typename Kernel::StrideB sb = make_stride(int64_t(k), Int<1>{}, int64_t(n) * k);
  typename Kernel::StrideC sc = make_stride(int64_t(n), Int<1>{}, int64_t(m) * n);
  typename Kernel::StrideD sd = make_stride(int64_t(n), Int<1>{}, int64_t(m) * n);
  typename Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm, {m, n, k, 1}, {a, sa, b, sb}, {{1.0f, 0.0f}, d, sc, d, sd}};
  Gemm gemm;
  CHECK_CUTLASS(gemm.can_implement(args));
  void* workspace = nullptr;
  size_t bytes = Gemm::get_workspace_size(args);
  if (bytes) CHECK_CUDA(cudaMalloc(&workspace, bytes));
  CHECK_CUTLASS(gemm.initialize(args, workspace));
  CHECK_CUTLASS(gemm.run());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemset(worst, 0, sizeof(float)));
  check<<<256, 128>>>(a, b, d, m, n, k, worst);
  float err;
  CHECK_CUDA(cudaMemcpy(&err, worst, sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < 5; ++r) CHECK_CUTLASS(gemm.run());  // (warm-up)
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  cudaEventRecord(t0);
  for (int r = 0; r < reps; ++r) gemm.run();
  cudaEventRecord(t1);
  CHECK_CUDA(cudaEventSynchronize(t1));
  float ms;
  cudaEventElapsedTime(&ms, t0, t1);
  ms /= reps;
  printf("{\"kernel\": \"cutlass %s\", \"m\": %d, \"n\": %d, \"k\": %d, \"ms\": %.4f, "
         "\"tflops\": %.1f, \"max_rel_err\": %.3g}\n",
         kName, m, n, k, ms, 2.0 * m * n * k / ms / 1e9, err);
  return 0;
}
