#ifndef SCATTER_SAMPLER_ROTATION_H_
#define SCATTER_SAMPLER_ROTATION_H_

// Random rotations for dense packing's evenly stepped directions, from +,
// x, sqrt and comparisons only (DESIGN.md, Portable determinism): a point
// drawn by rejection from the square (4D cube) and normalised.

#include <cmath>

#include "sampler/rng.h"

namespace scatter::sampler::internal {

// A uniformly random unit vector (u, v): the rotation by its angle.
inline void RandomUnit2(CounterRng& rng, double* u, double* v) {
  double s;
  do {
    rng.SignedPair(u, v);
    s = *u * *u + *v * *v;
  } while (!(s > 0x1.0p-4 && s <= 1));
  const double norm = std::sqrt(s);
  *u /= norm;
  *v /= norm;
}

// A uniformly random 3D rotation: the matrix of a random unit quaternion.
inline void RandomRotation3(CounterRng& rng, double m[3][3]) {
  double q[4];
  double s;
  do {
    rng.SignedPair(&q[0], &q[1]);
    rng.SignedPair(&q[2], &q[3]);
    s = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
  } while (!(s > 0x1.0p-4 && s <= 1));
  const double norm = std::sqrt(s);
  for (double& e : q) e /= norm;
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  m[0][0] = 1 - 2 * (y * y + z * z);
  m[0][1] = 2 * (x * y - w * z);
  m[0][2] = 2 * (x * z + w * y);
  m[1][0] = 2 * (x * y + w * z);
  m[1][1] = 1 - 2 * (x * x + z * z);
  m[1][2] = 2 * (y * z - w * x);
  m[2][0] = 2 * (x * z - w * y);
  m[2][1] = 2 * (y * z + w * x);
  m[2][2] = 1 - 2 * (x * x + y * y);
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_ROTATION_H_
