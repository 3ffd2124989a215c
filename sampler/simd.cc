#include "sampler/simd.h"

#include "sampler/simd_ops.h"

namespace scatter::sampler {
namespace internal {
#if SCATTER_HAVE_AVX2_PATH
extern const SimdKernels kAvx2Kernels;  // simd_avx2.cc
#endif
}  // namespace internal
namespace {

constexpr SimdKernels kScalarKernels = {
    internal::ScalarOps::AnyWithin2d,      internal::ScalarOps::AnyWithin3d,
    internal::ScalarOps::FilterBox<2>,     internal::ScalarOps::FilterBox<3>,
    internal::ScalarOps::AnyConflict<2>,   internal::ScalarOps::AnyConflict<3>,
    internal::ScalarOps::AnyWithin2dBlock, internal::ScalarOps::SplitNearFar3d};

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
  if (ResolveSimdLevel(level) == SimdLevel::kAvx2)
    return internal::kAvx2Kernels;
#endif
  (void)level;
  return kScalarKernels;
}

}  // namespace scatter::sampler
