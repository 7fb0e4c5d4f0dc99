// The GPU's matrix-multiply ceiling, measured as METHOD says: a large cuBLAS product on random
// data, warmed up, then the median of timed repeats (device events).
#include <cublas_v2.h>

#include <algorithm>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/elementwise.h"

namespace cnnbench::cuda {

double matmul_peak_gflops(DType type, bool allow_tf32) {
  constexpr int n = 8192;
  const size_t elements = size_t{n} * n;
  std::vector<float> host(elements);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& x : host) x = d(rng);
  DeviceBuffer a32(elements * 4), c(elements * 4), a16(elements * 2);
  a32.upload(host.data(), elements * 4);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
  cublasSetStream(blas, stream);
  const bool half = type != DType::f32;
  if (half) cast_from_f32(a32.as<float>(), a16.as<uint16_t>(), static_cast<int64_t>(elements), type, stream);
  const cudaDataType_t t = type == DType::f16 ? CUDA_R_16F : type == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const void* a = half ? a16.data() : a32.data();
  const cublasComputeType_t compute = !half && allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {
    const cublasStatus_t s = cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, a, t, n, a, t, n, &zero,
                                          c.data(), CUDA_R_32F, n, compute, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string("cublasGemmEx: ") + cublasGetStatusString(s));
  };
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) gemm();
  std::vector<float> ms;
  for (int i = 0; i < 10; ++i) {
    CUDA_CHECK(cudaEventRecord(start, stream));
    gemm();
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t_ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t_ms, start, stop));
    ms.push_back(t_ms);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  return 2.0 * n * n * static_cast<double>(n) / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

}  // namespace cnnbench::cuda
