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

// The ring averages of `seeds` runs of `options` in `box`, averaged again
// over the runs: one periodogram is exponentially noisy, a few runs steady
// it.
RadialSpectrum MeanSpectrum(SamplerOptions options, int seeds, const Box& box,
                            int max_frequency) {
  RadialSpectrum mean;
  mean.power.assign(max_frequency + 1, 0);
  mean.anisotropy_db.assign(max_frequency + 1, 0);
  for (int s = 0; s < seeds; ++s) {
    options.seed = static_cast<std::uint64_t>(100 + s);
    absl::StatusOr<Sampler> sampler = Sampler::Create(box, options);
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
        MeasureSpectrum(coords, box, max_frequency);
    EXPECT_TRUE(one.ok()) << one.status();
    for (int k = 1; k <= max_frequency; ++k) {
      mean.power[k] += one->power[k] / seeds;
      mean.anisotropy_db[k] += one->anisotropy_db[k] / seeds;
    }
  }
  return mean;
}

RadialSpectrum MeanSpectrum(SamplerOptions options, int seeds) {
  return MeanSpectrum(options, seeds, UnitSquare(), kMaxFrequency);
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
  // In 3D: coords of whole 3D points, and at most 128 shells.
  const Box cube = *Box::Create(3, {0, 0, 0}, {1, 1, 1});
  EXPECT_EQ(MeasureSpectrum({0.5, 0.5}, cube, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MeasureSpectrum({0.5, 0.5, 0.5}, cube, 129).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(MeasureSpectrum({0.5, 0.5, 0.5}, cube, 4).ok());
}

}  // namespace
}  // namespace scatter::sampler

namespace scatter::sampler {
namespace {

// 3D: the periodogram of the points in the middle of the unit cube,
// [0.2, 0.8]^3, at integer frequencies of that box (so its edges, which cut
// the pattern rather than bound it, add no power), r = 0.05: about 1 400 of
// a run's 6 400 dense points, the peak near shell 14. Measured away from the
// cube's faces, where points pile up against the wall in layers (their
// power lies on the axes and would read as anisotropy).
constexpr int kMaxFrequency3d = 24;

RadialSpectrum InteriorSpectrum3d(SamplerOptions options, int seeds) {
  const Box cube = *Box::Create(3, {0, 0, 0}, {1, 1, 1});
  const Box middle = *Box::Create(3, {0.2, 0.2, 0.2}, {0.8, 0.8, 0.8});
  RadialSpectrum mean;
  mean.power.assign(kMaxFrequency3d + 1, 0);
  mean.anisotropy_db.assign(kMaxFrequency3d + 1, 0);
  for (int s = 0; s < seeds; ++s) {
    options.seed = static_cast<std::uint64_t>(100 + s);
    absl::StatusOr<Sampler> sampler = Sampler::Create(cube, options);
    EXPECT_TRUE(sampler.ok()) << sampler.status();
    std::vector<double> coords;
    EXPECT_TRUE(sampler
                    ->Run([&](const PointBatch& batch) {
                      for (std::size_t i = 0; i < batch.coords.size(); i += 3) {
                        const double* q = &batch.coords[i];
                        bool inside = true;
                        for (int a = 0; a < 3; ++a) {
                          inside &= q[a] >= 0.2 && q[a] < 0.8;
                        }
                        if (inside) coords.insert(coords.end(), q, q + 3);
                      }
                      return true;
                    })
                    .ok());
    absl::StatusOr<RadialSpectrum> one =
        MeasureSpectrum(coords, middle, kMaxFrequency3d);
    EXPECT_TRUE(one.ok()) << one.status();
    for (int k = 1; k <= kMaxFrequency3d; ++k) {
      mean.power[k] += one->power[k] / seeds;
      mean.anisotropy_db[k] += one->anisotropy_db[k] / seeds;
    }
  }
  return mean;
}

SamplerOptions Poisson3d(Method method) {
  SamplerOptions options;
  options.method = method;
  options.radius = 0.05;
  return options;
}

TEST(SpectrumTest, PoissonPacksAreBlueNoiseIn3d) {
  // As in 2D: little power at low frequencies (shells 1-6, well below the
  // peak; these runs give 0.12 dense and 0.13 classic), where uniform random
  // points carry ~1, and a peak above white-noise level near the mean
  // spacing (1.6 and 1.45).
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
    const RadialSpectrum s = InteriorSpectrum3d(Poisson3d(method), 4);
    EXPECT_LT(MeanOver(s.power, 1, 6), 0.25) << MethodName(method);
    double peak = 0;
    for (int k = 10; k <= 18; ++k) peak = std::max(peak, s.power[k]);
    EXPECT_GT(peak, 1.2) << MethodName(method);
  }
  SamplerOptions uniform;
  uniform.method = Method::kUniform;
  uniform.count = 6400;
  EXPECT_GT(MeanOver(InteriorSpectrum3d(uniform, 4).power, 1, 6), 0.7);
}

TEST(SpectrumTest, PoissonPacksAreIsotropicIn3d) {
  // No shell from 6 on (each holds over 100 frequencies) shows directional
  // order; these runs stay within 0.6 dB shell by shell and average 0.14 dB
  // (dense) and 0.04 dB (classic). The bound on the mean is what orders the
  // growth: dense candidates on an icosahedron turned so that a vertex
  // points back at each point's parent (tried for algorithm_version 4, and
  // not kept) averaged 0.6 dB here, 1 to 1.4 dB around the peak.
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
    const RadialSpectrum s = InteriorSpectrum3d(Poisson3d(method), 4);
    for (int k = 6; k <= kMaxFrequency3d; ++k) {
      EXPECT_LT(s.anisotropy_db[k], 2) << MethodName(method) << " shell " << k;
    }
    EXPECT_LT(std::abs(MeanOver(s.anisotropy_db, 6, kMaxFrequency3d)), 0.4)
        << MethodName(method);
  }
}

TEST(SpectrumTest, AnisotropyFindsTheSpikesOfA3dLattice) {
  // The control for the test above: a 12^3 cubic lattice, each point moved
  // by up to a tenth of its spacing, has spikes at (+-12, 0, 0) and its
  // turns, which make shell 12 strongly anisotropic.
  std::vector<double> coords;
  CounterRng rng(7);
  for (int k = 0; k < 12; ++k) {
    for (int j = 0; j < 12; ++j) {
      for (int i = 0; i < 12; ++i) {
        for (int index : {i, j, k}) {
          coords.push_back((index + 0.5 + 0.1 * rng.UniformSigned()) / 12);
        }
      }
    }
  }
  const Box cube = *Box::Create(3, {0, 0, 0}, {1, 1, 1});
  absl::StatusOr<RadialSpectrum> s =
      MeasureSpectrum(coords, cube, kMaxFrequency3d);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->anisotropy_db[12], 10);
  EXPECT_LT(std::abs(s->anisotropy_db[8]), 2);
}

}  // namespace
}  // namespace scatter::sampler
