#include "sampler/spectrum.h"

#include <array>
#include <cmath>
#include <complex>
#include <vector>

#include "absl/strings/str_cat.h"

namespace scatter::sampler {

absl::StatusOr<RadialSpectrum> MeasureSpectrum(absl::Span<const double> coords,
                                               const Box& box,
                                               int max_frequency) {
  const int dims = box.dims();
  if (dims != 2 && dims != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("spectrum needs a 2D or 3D box, got dims ", dims));
  }
  const auto d = static_cast<std::size_t>(dims);
  if (coords.size() % d != 0) {
    return absl::InvalidArgumentError(absl::StrCat("coords must hold whole ",
                                                   dims, "D points, got ",
                                                   coords.size(), " values"));
  }
  if (max_frequency < 1 || max_frequency > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_frequency must be in [1, 1024], got ", max_frequency));
  }
  if (dims == 3 && max_frequency > 80) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_frequency must be in [1, 80] in 3D, got ", max_frequency));
  }
  const int f = max_frequency;
  const std::size_t n = coords.size() / d;
  // Half space: fx in [0, f], the other axes in [-f, f]; P(-f) = P(f).
  const std::size_t width = static_cast<std::size_t>(2 * f + 1);
  const std::size_t depth = dims == 3 ? width : 1;
  std::vector<std::complex<double>> sum((f + 1) * width * depth);
  // e[a][k] = exp(-2 pi i k u_a) for k in [0, f].
  std::array<std::vector<std::complex<double>>, 3> e;
  for (auto& powers : e) powers.resize(static_cast<std::size_t>(f) + 1);
  // exp(-2 pi i k u_a) for k in [-f, f].
  auto wave = [&](int a, int k) {
    return k >= 0 ? e[a][static_cast<std::size_t>(k)]
                  : std::conj(e[a][static_cast<std::size_t>(-k)]);
  };
  constexpr double kTwoPi = 6.283185307179586476925;
  for (std::size_t j = 0; j < n; ++j) {
    for (int a = 0; a < dims; ++a) {
      // A measurement, not sampling: libm's sin/cos are fine here.
      const double u =
          (coords[d * j + static_cast<std::size_t>(a)] - box.min(a)) /
          box.extent(a);
      const std::complex<double> step = std::polar(1.0, -kTwoPi * u);
      e[a][0] = 1;
      for (std::size_t k = 1; k <= static_cast<std::size_t>(f); ++k) {
        e[a][k] = e[a][k - 1] * step;
      }
    }
    for (int fx = 0; fx <= f; ++fx) {
      for (int fy = -f; fy <= f; ++fy) {
        const std::complex<double> xy =
            e[0][static_cast<std::size_t>(fx)] * wave(1, fy);
        std::complex<double>* cell =
            &sum[(static_cast<std::size_t>(fx) * width +
                  static_cast<std::size_t>(fy + f)) *
                 depth];
        if (dims == 2) {
          *cell += xy;
          continue;
        }
        for (int fz = -f; fz <= f; ++fz) {
          cell[fz + f] += xy * wave(2, fz);
        }
      }
    }
  }
  RadialSpectrum out;
  out.power.assign(f + 1, 0);
  out.anisotropy_db.assign(f + 1, 0);
  out.samples.assign(f + 1, 0);
  std::vector<double> sum_sq(f + 1, 0);
  const int fz_max = dims == 3 ? f : 0;
  for (int fx = 0; fx <= f; ++fx) {
    for (int fy = -f; fy <= f; ++fy) {
      for (int fz = -fz_max; fz <= fz_max; ++fz) {
        // Each +-f pair once (the first nonzero coordinate positive); skip
        // f = 0.
        if (fx == 0 && (fy < 0 || (fy == 0 && fz <= 0))) continue;
        const int ring = static_cast<int>(std::lround(
            std::sqrt(static_cast<double>(fx * fx + fy * fy + fz * fz))));
        if (ring < 1 || ring > f) continue;
        const std::size_t at = (static_cast<std::size_t>(fx) * width +
                                static_cast<std::size_t>(fy + f)) *
                                   depth +
                               static_cast<std::size_t>(fz + fz_max);
        const double p = std::norm(sum[at]) / static_cast<double>(n);
        out.power[ring] += p;
        sum_sq[ring] += p * p;
        ++out.samples[ring];
      }
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
