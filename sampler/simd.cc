#include "sampler/simd.h"

#include "sampler/simd_kernels.h"

namespace scatter::sampler {
namespace {

// The reference path. Each squared distance is (dx*dx + dy*dy) [+ dz*dz] in
// exactly this order; the vector paths must match it bit for bit.
bool AnyWithin2dScalar(const double* xs, const double* ys, std::size_t n,
                       double cx, double cy, double threshold) {
  for (std::size_t j = 0; j < n; ++j) {
    const double dx = xs[j] - cx;
    const double dy = ys[j] - cy;
    if (dx * dx + dy * dy < threshold) return true;
  }
  return false;
}

bool AnyWithin3dScalar(const double* xs, const double* ys, const double* zs,
                       std::size_t n, double cx, double cy, double cz,
                       double threshold) {
  for (std::size_t j = 0; j < n; ++j) {
    const double dx = xs[j] - cx;
    const double dy = ys[j] - cy;
    const double dz = zs[j] - cz;
    if (dx * dx + dy * dy + dz * dz < threshold) return true;
  }
  return false;
}

constexpr SimdKernels kScalarKernels = {AnyWithin2dScalar, AnyWithin3dScalar};

bool CpuHasAvx2() {
#if SCATTER_HAVE_AVX2_PATH
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

}  // namespace

const char* SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kBest:
      return "best";
    case SimdLevel::kScalar:
      return "scalar";
    case SimdLevel::kAvx2:
      return "avx2";
  }
  return "unknown";
}

std::vector<SimdLevel> SupportedSimdLevels() {
  std::vector<SimdLevel> levels = {SimdLevel::kScalar};
  if (CpuHasAvx2()) levels.push_back(SimdLevel::kAvx2);
  return levels;
}

SimdLevel ResolveSimdLevel(SimdLevel level) {
  static const bool has_avx2 = CpuHasAvx2();
  switch (level) {
    case SimdLevel::kBest:
      return has_avx2 ? SimdLevel::kAvx2 : SimdLevel::kScalar;
    case SimdLevel::kAvx2:
      return has_avx2 ? SimdLevel::kAvx2 : SimdLevel::kScalar;
    case SimdLevel::kScalar:
      return SimdLevel::kScalar;
  }
  return SimdLevel::kScalar;
}

const SimdKernels& KernelsFor(SimdLevel level) {
#if SCATTER_HAVE_AVX2_PATH
  if (ResolveSimdLevel(level) == SimdLevel::kAvx2) return internal::kAvx2Kernels;
#endif
  (void)level;
  return kScalarKernels;
}

}  // namespace scatter::sampler
