#ifndef SCATTER_SAMPLER_SPECTRUM_H_
#define SCATTER_SAMPLER_SPECTRUM_H_

// The spectral quality measure of DESIGN.md for 2D and 3D point sets: the
// periodogram P(f) = |sum_j exp(-2 pi i f.x_j)|^2 / N at integer frequencies
// f (in cycles per box side, x scaled to the unit square or cube), averaged
// over rings (shells in 3D) |f| in [k - 1/2, k + 1/2), and the anisotropy of
// each ring (variance over mean^2, in dB). Blue noise has little power at
// low frequencies and a peak near the mean point spacing; an isotropic set
// has anisotropy near 0 dB in every ring (a single periodogram is
// exponentially distributed, so its variance equals its squared mean),
// while lattice-like order or seams show as rings of high anisotropy.

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/box.h"

namespace scatter::sampler {

struct RadialSpectrum {
  // Index k: ring k (k = 0 is unused). Power is 1 for white noise.
  std::vector<double> power;
  std::vector<double> anisotropy_db;
  std::vector<int> samples;  // Frequencies averaged in each ring.
};

// Rings 1 .. max_frequency = f. Costs about 2 N f^2 complex products in 2D
// and 4 N f^3 in 3D, and as many complex doubles of memory as frequencies
// (about 2 f^2 or 4 f^3: 34 MB at the largest f either allows).
// InvalidArgument unless box is 2D or 3D, coords holds whole points, and f
// is in [1, 1024] ([1, 80] in 3D).
absl::StatusOr<RadialSpectrum> MeasureSpectrum(absl::Span<const double> coords,
                                               const Box& box,
                                               int max_frequency);

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_SPECTRUM_H_
