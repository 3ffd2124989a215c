#include "sampler/spectrum.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/box.h"
#include "sampler/rng.h"
#include "sampler/sampler.h"

namespace scatter::sampler {
namespace {

constexpr int kMaxFrequency = 80;

Box UnitSquare() { return *Box::Create(2, {0, 0, 0}, {1, 1, 0}); }

// The ring averages of `seeds` runs of `options`, averaged again over the
// runs: one periodogram is exponentially noisy, a few runs steady it.
RadialSpectrum MeanSpectrum(SamplerOptions options, int seeds) {
  RadialSpectrum mean;
  mean.power.assign(kMaxFrequency + 1, 0);
  mean.anisotropy_db.assign(kMaxFrequency + 1, 0);
  for (int s = 0; s < seeds; ++s) {
    options.seed = static_cast<std::uint64_t>(100 + s);
    absl::StatusOr<Sampler> sampler = Sampler::Create(UnitSquare(), options);
    EXPECT_TRUE(sampler.ok()) << sampler.status();
    std::vector<double> coords;
    EXPECT_TRUE(sampler
                    ->Run([&](const PointBatch& batch) {
                      coords.insert(coords.end(), batch.coords.begin(),
                                    batch.coords.end());
                      return true;
                    })
                    .ok());
    absl::StatusOr<RadialSpectrum> one =
        MeasureSpectrum(coords, UnitSquare(), kMaxFrequency);
    EXPECT_TRUE(one.ok()) << one.status();
    for (int k = 1; k <= kMaxFrequency; ++k) {
      mean.power[k] += one->power[k] / seeds;
      mean.anisotropy_db[k] += one->anisotropy_db[k] / seeds;
    }
  }
  return mean;
}

double MeanOver(const std::vector<double>& v, int from, int to) {
  double sum = 0;
  for (int k = from; k <= to; ++k) sum += v[k];
  return sum / (to - from + 1);
}

SamplerOptions Poisson(Method method) {
  SamplerOptions options;
  options.method = method;
  // r = 0.02: ~2200 (dense) points, the spectral peak near ring 50.
  options.radius = 0.02;
  return options;
}

TEST(SpectrumTest, PoissonPacksAreBlueNoise) {
  // Low frequencies (rings 1-20, well below the peak) carry little power;
  // uniform random points (white noise) carry ~1 there.
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
    const RadialSpectrum s = MeanSpectrum(Poisson(method), 2);
    EXPECT_LT(MeanOver(s.power, 1, 20), 0.2) << MethodName(method);
    // And a peak above white-noise level near the mean spacing.
    double peak = 0;
    for (int k = 30; k <= 70; ++k) peak = std::max(peak, s.power[k]);
    EXPECT_GT(peak, 1.2) << MethodName(method);
  }
  SamplerOptions uniform;
  uniform.method = Method::kUniform;
  uniform.count = 2000;
  EXPECT_GT(MeanOver(MeanSpectrum(uniform, 2).power, 1, 20), 0.7);
}

TEST(SpectrumTest, PoissonPacksAreIsotropic) {
  // No ring from the peak on shows the directional spikes of a lattice or
  // of scan-order artefacts (gap filling scans cells in row order). A
  // single isotropic periodogram has ~0 dB; 2-run means stay within a few
  // dB ring by ring.
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
    const RadialSpectrum s = MeanSpectrum(Poisson(method), 2);
    for (int k = 30; k <= kMaxFrequency; ++k) {
      EXPECT_LT(s.anisotropy_db[k], 5) << MethodName(method) << " ring " << k;
    }
    EXPECT_LT(std::abs(MeanOver(s.anisotropy_db, 30, kMaxFrequency)), 1.0)
        << MethodName(method);
  }
}

TEST(SpectrumTest, AnisotropyFindsTheSpikesOfALattice) {
  // The control for the test above: a 64 x 64 square lattice, each point
  // moved by up to a tenth of its spacing, has spikes at (+-64, 0) and
  // (0, +-64) that make ring 64 strongly anisotropic. (A fully jittered
  // grid would not do: uniform jitter over the whole cell cancels exactly
  // those spikes.)
  std::vector<double> coords;
  CounterRng rng(7);
  for (int j = 0; j < 64; ++j) {
    for (int i = 0; i < 64; ++i) {
      coords.push_back((i + 0.5 + 0.1 * rng.UniformSigned()) / 64);
      coords.push_back((j + 0.5 + 0.1 * rng.UniformSigned()) / 64);
    }
  }
  absl::StatusOr<RadialSpectrum> s =
      MeasureSpectrum(coords, UnitSquare(), kMaxFrequency);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->anisotropy_db[64], 10);
  EXPECT_LT(std::abs(s->anisotropy_db[40]), 5);
}

TEST(SpectrumTest, BadInputsAreInvalidArgument) {
  const std::vector<double> coords = {0.5, 0.5};
  EXPECT_EQ(MeasureSpectrum(coords, UnitSquare(), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MeasureSpectrum({0.5, 0.5, 0.5}, UnitSquare(), 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Box cube = *Box::Create(3, {0, 0, 0}, {1, 1, 1});
  EXPECT_EQ(MeasureSpectrum({0.5, 0.5, 0.5}, cube, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace scatter::sampler
