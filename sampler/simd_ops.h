#ifndef SCATTER_SAMPLER_SIMD_OPS_H_
#define SCATTER_SAMPLER_SIMD_OPS_H_

// Internal: the distance kernels as inline operations, so the sampler's hot
// loop can inline them. ScalarOps is the reference; Avx2Ops (simd_ops_avx2.h)
// must match it bit for bit: each squared distance is (dx*dx + dy*dy)
// [+ dz*dz] in exactly this order, and each comparison is its own yes/no.

#include <cstddef>

#include "sampler/box_distance.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SCATTER_HAVE_AVX2_PATH 1
#else
#define SCATTER_HAVE_AVX2_PATH 0
#endif

namespace scatter::sampler::internal {

struct ScalarOps {
  // True when some point j < n has squared distance to (cx, cy) below t.
  static bool AnyWithin2d(const double* xs, const double* ys, std::size_t n,
                          double cx, double cy, double t) {
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = xs[j] - cx;
      const double dy = ys[j] - cy;
      if (dx * dx + dy * dy < t) return true;
    }
    return false;
  }

  // True when some point of a block of grid cells (2D, coordinates
  // interleaved x, y; an empty cell holds NaN) has squared distance to
  // (cx, cy) below t: `rows` rows of `cells` cells each, the row after
  // `row_stride` doubles on.
  static bool AnyWithin2dBlock(const double* xy, std::size_t row_stride,
                               std::size_t rows, std::size_t cells, double cx,
                               double cy, double t) {
    for (std::size_t i = 0; i < rows; ++i, xy += row_stride) {
      if (AnyWithin2dPairs(xy, cells, cx, cy, t)) return true;
    }
    return false;
  }
  static bool AnyWithin2dPairs(const double* xy, std::size_t n, double cx,
                               double cy, double t) {
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = xy[2 * j] - cx;
      const double dy = xy[2 * j + 1] - cy;
      if (dx * dx + dy * dy < t) return true;
    }
    return false;
  }

  static bool AnyWithin3d(const double* xs, const double* ys, const double* zs,
                          std::size_t n, double cx, double cy, double cz,
                          double t) {
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = xs[j] - cx;
      const double dy = ys[j] - cy;
      const double dz = zs[j] - cz;
      if (dx * dx + dy * dy + dz * dz < t) return true;
    }
    return false;
  }

  // Of the n points in (in[0], in[1], in[2]), appends those whose squared
  // distance to p is below near2 to `near` (from *n_near on), and those
  // below far2 but not near2 to `far` (from *n_far on), each in order, and
  // advances the counts. The squared distance is (dx*dx + dy*dy) + dz*dz.
  // Writes the slot after each count whatever it appends (so no branch
  // decides a write): the outputs need a spare slot; Avx2Ops needs 4, and
  // the inputs NaN (never kept) up to a whole group of 4.
  static void SplitNearFar3d(const double* const* in, std::size_t n,
                             const double* p, double near2, double far2,
                             double* const* near, std::size_t* n_near,
                             double* const* far, std::size_t* n_far) {
    std::size_t nn = *n_near, nf = *n_far;
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = in[0][j] - p[0];
      const double dy = in[1][j] - p[1];
      const double dz = in[2][j] - p[2];
      const double d2 = dx * dx + dy * dy + dz * dz;
      const bool is_near = d2 < near2;
      for (int a = 0; a < 3; ++a) near[a][nn] = in[a][j];
      nn += is_near;
      for (int a = 0; a < 3; ++a) far[a][nf] = in[a][j];
      nf += (!is_near) & (d2 < far2);  // &: no branch.
    }
    *n_near = nn;
    *n_far = nf;
  }

  // Variable radius: true when some point j < n of (xs[0], .., xs[D - 1])
  // has squared distance to c below max(rc2, r2[j]). The lists must be
  // padded to a whole group of 4 with NaN coordinates (never closer than
  // anything).
  template <int D>
  static bool AnyConflict(const double* const* xs, const double* r2,
                          std::size_t n, const double* c, double rc2) {
    for (std::size_t j = 0; j < n; ++j) {
      double d2 = 0;
      for (int a = 0; a < D; ++a) {
        const double d = xs[a][j] - c[a];
        d2 = a == 0 ? d * d : d2 + d * d;
      }
      if (d2 < (rc2 < r2[j] ? r2[j] : rc2)) return true;
    }
    return false;
  }

  // Of the n points in (in[0], .., in[D - 1]), copies those whose squared
  // distance to the box [lo, hi] is below t to `out`, in order, and returns
  // how many; returns -1 instead when one of them has every corner of the
  // box closer than t (its disk holds the box). Squared distances as
  // NearestDistance2 and FarthestDistance2 give them.
  template <int D>
  static std::ptrdiff_t FilterBox(const double* const* in, std::size_t n,
                                  const double* lo, const double* hi, double t,
                                  double* const* out) {
    std::ptrdiff_t m = 0;
    for (std::size_t j = 0; j < n; ++j) {
      double q[D];
      for (int a = 0; a < D; ++a) q[a] = in[a][j];
      if (!(NearestDistance2(q, lo, hi, D) < t)) continue;
      if (FarthestDistance2(q, lo, hi, D) < t) return -1;
      for (int a = 0; a < D; ++a) out[a][m] = q[a];
      ++m;
    }
    return m;
  }
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_SIMD_OPS_H_
