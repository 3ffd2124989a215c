#ifndef SCATTER_SAMPLER_SIMD_H_
#define SCATTER_SAMPLER_SIMD_H_

#include <cstddef>
#include <vector>

namespace scatter::sampler {

// The compiled vector paths. The binary carries all of them and picks one at
// run time, so it is never tied to the machine it was built on. Every path
// computes each squared distance with the same operations in the same order
// (no fused multiply-add, no approximate square roots, no reductions whose
// result depends on lane order), so all give bit-identical points.
enum class SimdLevel {
  kBest,    // The widest path this CPU supports.
  kScalar,  // Plain C++; the compiler may use the baseline ISA.
  kAvx2,    // x86-64 AVX2, 4 doubles per instruction.
};

// "best", "scalar" or "avx2".
const char* SimdLevelName(SimdLevel level);

// The paths compiled into this binary that this CPU can run, narrowest
// first; always starts with kScalar.
std::vector<SimdLevel> SupportedSimdLevels();

// kBest resolved to a concrete level; a level the CPU cannot run falls back
// to kScalar.
SimdLevel ResolveSimdLevel(SimdLevel level);

// The kernels the sampler's hot loops call. xs/ys/zs hold n points; the
// query is (cx, cy[, cz]). True when some point has squared distance below
// `threshold`, computed as (dx*dx + dy*dy) [+ dz*dz].
//
// filter_box_{2d,3d}: of the n points in in[0..dims-1], copies those whose
// squared distance to the box [lo, hi] is below `threshold` to
// out[0..dims-1], in order, and returns how many; returns -1 instead when
// one of them has every corner of the box closer than `threshold`. The
// arrays must hold NaN from n up to the next multiple of 4, and `out` room
// for n + 4 values each: the kernel may write the 4 slots past its count.
//
// any_within_2d_block: the same test over a block of grid cells, points
// interleaved (x, y) and NaN in empty cells: `rows` rows of `cells` points,
// each row `row_stride` doubles after the one before.
//
// split_near_far_3d: of the n points in in[0..2], appends those whose
// squared distance to p is below near2 to near[0..2] at *n_near, and those
// below far2 but not near2 to far[0..2] at *n_far, in order, advancing the
// counts. The inputs must hold NaN from n up to the next multiple of 4, and
// each output room for 4 values past its final count.
//
// any_conflict_{2d,3d} (variable radius): true when some point j < n of
// xs[0..dims-1] has squared distance to c, computed as above, below
// max(rc2, r2[j]). The arrays must hold NaN coordinates (and any r2) from n
// up to the next multiple of 4.
struct SimdKernels {
  bool (*any_within_2d)(const double* xs, const double* ys, std::size_t n,
                        double cx, double cy, double threshold);
  bool (*any_within_3d)(const double* xs, const double* ys, const double* zs,
                        std::size_t n, double cx, double cy, double cz,
                        double threshold);
  std::ptrdiff_t (*filter_box_2d)(const double* const* in, std::size_t n,
                                  const double* lo, const double* hi,
                                  double threshold, double* const* out);
  std::ptrdiff_t (*filter_box_3d)(const double* const* in, std::size_t n,
                                  const double* lo, const double* hi,
                                  double threshold, double* const* out);
  bool (*any_conflict_2d)(const double* const* xs, const double* r2,
                          std::size_t n, const double* c, double rc2);
  bool (*any_conflict_3d)(const double* const* xs, const double* r2,
                          std::size_t n, const double* c, double rc2);
  bool (*any_within_2d_block)(const double* xy, std::size_t row_stride,
                              std::size_t rows, std::size_t cells, double cx,
                              double cy, double threshold);
  void (*split_near_far_3d)(const double* const* in, std::size_t n,
                            const double* p, double near2, double far2,
                            double* const* near, std::size_t* n_near,
                            double* const* far, std::size_t* n_far);
};

// The kernels of `level` (resolved as above).
const SimdKernels& KernelsFor(SimdLevel level);

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_SIMD_H_
