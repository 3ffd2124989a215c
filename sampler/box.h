#ifndef SCATTER_SAMPLER_BOX_H_
#define SCATTER_SAMPLER_BOX_H_

#include <array>

#include "absl/status/statusor.h"

namespace scatter::sampler {

// A point in 2D or 3D; a 2D point leaves z at 0.
using Vec = std::array<double, 3>;

// An axis-aligned box in 2D or 3D with positive, finite extent on every axis.
// A Box that exists is valid. Membership is half-open: [min, max).
class Box {
 public:
  // InvalidArgument, naming the field and the rule, when dims is not 2 or 3,
  // a coordinate is NaN or infinite, or min is not strictly below max on an
  // axis (an empty or inverted box). For dims == 2 the z values are ignored.
  static absl::StatusOr<Box> Create(int dims, const Vec& min, const Vec& max);

  int dims() const { return dims_; }
  double min(int axis) const { return min_[axis]; }
  double max(int axis) const { return max_[axis]; }
  double extent(int axis) const { return max_[axis] - min_[axis]; }
  // Area in 2D, volume in 3D, in the caller's units.
  double Measure() const;
  // Half-open: min <= p < max on each of the first dims() axes.
  bool Contains(const double* p) const {
    for (int a = 0; a < dims_; ++a) {
      if (!(p[a] >= min_[a] && p[a] < max_[a])) return false;
    }
    return true;
  }

 private:
  Box(int dims, const Vec& min, const Vec& max)
      : dims_(dims), min_(min), max_(max) {}

  int dims_;
  Vec min_;
  Vec max_;
};

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_BOX_H_
