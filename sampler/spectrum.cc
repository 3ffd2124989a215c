#include "sampler/spectrum.h"

#include <cmath>
#include <complex>

#include "absl/strings/str_cat.h"

namespace scatter::sampler {

absl::StatusOr<RadialSpectrum> MeasureSpectrum(absl::Span<const double> coords,
                                               const Box& box,
                                               int max_frequency) {
  if (box.dims() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("spectrum needs a 2D box, got dims ", box.dims()));
  }
  if (coords.size() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "coords must hold whole 2D points, got ", coords.size(), " values"));
  }
  if (max_frequency < 1 || max_frequency > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_frequency must be in [1, 1024], got ", max_frequency));
  }
  const int f = max_frequency;
  const std::size_t n = coords.size() / 2;
  // Half plane: fx in [0, f], fy in [-f, f]; P(-f) = P(f).
  const std::size_t width = static_cast<std::size_t>(2 * f + 1);
  std::vector<std::complex<double>> sum((f + 1) * width);
  std::vector<std::complex<double>> ex(f + 1);
  std::vector<std::complex<double>> ey(f + 1);
  constexpr double kTwoPi = 6.283185307179586476925;
  for (std::size_t j = 0; j < n; ++j) {
    // A measurement, not sampling: libm's sin/cos are fine here.
    const double u = (coords[2 * j] - box.min(0)) / box.extent(0);
    const double v = (coords[2 * j + 1] - box.min(1)) / box.extent(1);
    const std::complex<double> step_x = std::polar(1.0, -kTwoPi * u);
    const std::complex<double> step_y = std::polar(1.0, -kTwoPi * v);
    ex[0] = ey[0] = 1;
    for (int k = 1; k <= f; ++k) {
      ex[k] = ex[k - 1] * step_x;
      ey[k] = ey[k - 1] * step_y;
    }
    for (int fx = 0; fx <= f; ++fx) {
      std::complex<double>* row = &sum[static_cast<std::size_t>(fx) * width];
      for (int fy = -f; fy <= f; ++fy) {
        const std::complex<double> y = fy >= 0 ? ey[fy] : std::conj(ey[-fy]);
        row[fy + f] += ex[fx] * y;
      }
    }
  }
  RadialSpectrum out;
  out.power.assign(f + 1, 0);
  out.anisotropy_db.assign(f + 1, 0);
  out.samples.assign(f + 1, 0);
  std::vector<double> sum_sq(f + 1, 0);
  for (int fx = 0; fx <= f; ++fx) {
    for (int fy = -f; fy <= f; ++fy) {
      if (fx == 0 && fy <= 0) continue;  // Each +-f pair once; skip f = 0.
      const int ring = static_cast<int>(std::lround(std::hypot(fx, fy)));
      if (ring < 1 || ring > f) continue;
      const double p =
          std::norm(sum[static_cast<std::size_t>(fx) * width + (fy + f)]) /
          static_cast<double>(n);
      out.power[ring] += p;
      sum_sq[ring] += p * p;
      ++out.samples[ring];
    }
  }
  for (int k = 1; k <= f; ++k) {
    const double m = out.samples[k];
    if (m == 0) continue;
    const double mean = out.power[k] / m;
    const double var = sum_sq[k] / m - mean * mean;
    out.power[k] = mean;
    out.anisotropy_db[k] =
        mean > 0 && var > 0 ? 10 * std::log10(var / (mean * mean)) : 0;
  }
  return out;
}

}  // namespace scatter::sampler
