#include "sampler/box.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace scatter::sampler {

absl::StatusOr<Box> Box::Create(int dims, const Vec& min, const Vec& max) {
  if (dims != 2 && dims != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("box.dims must be 2 or 3, got ", dims));
  }
  static constexpr const char* kAxis[] = {"x", "y", "z"};
  Vec lo = {0, 0, 0};
  Vec hi = {0, 0, 0};
  for (int a = 0; a < dims; ++a) {
    if (!std::isfinite(min[a]) || !std::isfinite(max[a])) {
      return absl::InvalidArgumentError(
          absl::StrCat("box.min.", kAxis[a], " and box.max.", kAxis[a],
                       " must be finite, got ", min[a], " and ", max[a]));
    }
    if (!(min[a] < max[a])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "box.min.", kAxis[a], " must be below box.max.", kAxis[a],
          " (empty or inverted box), got ", min[a], " >= ", max[a]));
    }
    if (!std::isfinite(max[a] - min[a])) {
      return absl::InvalidArgumentError(
          absl::StrCat("box extent on ", kAxis[a], " overflows a double, got ",
                       min[a], " to ", max[a]));
    }
    lo[a] = min[a];
    hi[a] = max[a];
  }
  return Box(dims, lo, hi);
}

double Box::Measure() const {
  double m = 1;
  for (int a = 0; a < dims_; ++a) m *= extent(a);
  return m;
}

}  // namespace scatter::sampler
