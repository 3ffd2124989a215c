#ifndef SCATTER_SAMPLER_BOX_DISTANCE_H_
#define SCATTER_SAMPLER_BOX_DISTANCE_H_

// Internal: squared distances between a point and an axis-aligned box
// [lo, hi], the two questions every "does this disc reach / hold this box"
// test asks. max() rather than branches: which side a point lies on is a
// coin flip.

#include <algorithm>

namespace scatter::sampler::internal {

// To the nearest place of the box (0 inside it).
inline double NearestDistance2(const double* p, const double* lo,
                               const double* hi, int dims) {
  double d2 = 0;
  for (int a = 0; a < dims; ++a) {
    const double d = std::max(std::max(lo[a] - p[a], p[a] - hi[a]), 0.0);
    d2 += d * d;
  }
  return d2;
}

// To the farthest corner of the box.
inline double FarthestDistance2(const double* p, const double* lo,
                                const double* hi, int dims) {
  double d2 = 0;
  for (int a = 0; a < dims; ++a) {
    const double d = std::max(p[a] - lo[a], hi[a] - p[a]);
    d2 += d * d;
  }
  return d2;
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_BOX_DISTANCE_H_
