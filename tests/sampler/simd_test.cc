#include "sampler/simd.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "sampler/box.h"
#include "sampler/raster.h"
#include "sampler/region.h"
#include "sampler/rng.h"
#include "sampler/sampler.h"
#include "tests/sampler/point_set.h"

namespace scatter::sampler {
namespace {

using test::Bits;
using test::Collect;
using test::Digest;
using test::PointSet;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(SimdTest, SupportedLevelsStartWithScalar) {
  const std::vector<SimdLevel> levels = SupportedSimdLevels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), SimdLevel::kScalar);
  for (SimdLevel level : levels) {
    EXPECT_NE(level, SimdLevel::kBest);
    EXPECT_EQ(ResolveSimdLevel(level), level) << SimdLevelName(level);
  }
  std::string names;
  for (SimdLevel level : levels) {
    names += SimdLevelName(level);
    names += " ";
  }
  RecordProperty("supported_levels", names);
}

TEST(SimdTest, BestResolvesToASupportedLevel) {
  const std::vector<SimdLevel> levels = SupportedSimdLevels();
  const SimdLevel best = ResolveSimdLevel(SimdLevel::kBest);
  EXPECT_NE(best, SimdLevel::kBest);
  // The widest: the last one listed, narrowest first.
  EXPECT_EQ(best, levels.back());
}

TEST(SimdTest, LevelNamesAreStable) {
  EXPECT_STREQ(SimdLevelName(SimdLevel::kBest), "best");
  EXPECT_STREQ(SimdLevelName(SimdLevel::kScalar), "scalar");
  EXPECT_STREQ(SimdLevelName(SimdLevel::kAvx2), "avx2");
}

// Every level the binary and CPU support, plus kBest.
std::vector<SimdLevel> LevelsToCompare() {
  std::vector<SimdLevel> levels = SupportedSimdLevels();
  levels.push_back(SimdLevel::kBest);
  return levels;
}

// ---------------------------------------------------------------------------
// Kernels against the definition.

// The definition in simd.h, with the same operations in the same order.
bool ReferenceWithin2d(const double* xs, const double* ys, std::size_t n,
                       double cx, double cy, double threshold) {
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = xs[i] - cx;
    const double dy = ys[i] - cy;
    if (dx * dx + dy * dy < threshold) return true;
  }
  return false;
}

bool ReferenceWithin3d(const double* xs, const double* ys, const double* zs,
                       std::size_t n, double cx, double cy, double cz,
                       double threshold) {
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = xs[i] - cx;
    const double dy = ys[i] - cy;
    const double dz = zs[i] - cz;
    if (dx * dx + dy * dy + dz * dz < threshold) return true;
  }
  return false;
}

// Sizes that cover empty input, every tail length of a 4- or 8-wide loop,
// and a few full vectors.
const std::size_t kSizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64};

struct KernelInput {
  // One spare slot in front so the data is not 32-byte aligned, and one at
  // the end holding a point right on the query, so a kernel that reads past
  // n gives a wrong answer (and ASan a report).
  std::vector<double> xs, ys, zs;
  double cx = 0, cy = 0, cz = 0;
  const double* x() const { return xs.data() + 1; }
  const double* y() const { return ys.data() + 1; }
  const double* z() const { return zs.data() + 1; }
};

KernelInput RandomInput(std::size_t n, CounterRng* rng, bool with_nans) {
  KernelInput in;
  in.cx = rng->UniformSigned();
  in.cy = rng->UniformSigned();
  in.cz = rng->UniformSigned();
  in.xs.push_back(in.cx);
  in.ys.push_back(in.cy);
  in.zs.push_back(in.cz);
  for (std::size_t i = 0; i < n; ++i) {
    in.xs.push_back(in.cx + rng->UniformSigned());
    in.ys.push_back(in.cy + rng->UniformSigned());
    in.zs.push_back(in.cz + rng->UniformSigned());
    if (with_nans && rng->Uniform01() < 0.3) {
      const int axis = static_cast<int>(rng->Next() % 3);
      (axis == 0 ? in.xs : axis == 1 ? in.ys : in.zs).back() = kNaN;
    }
  }
  in.xs.push_back(in.cx);
  in.ys.push_back(in.cy);
  in.zs.push_back(in.cz);
  return in;
}

// Thresholds around the squared distances actually present, including each
// exactly (where "below" must say no) and the next double up.
std::vector<double> ThresholdsFor(const KernelInput& in, std::size_t n,
                                  int dims, CounterRng* rng) {
  std::vector<double> thresholds = {0.0, -1.0, kNaN, 0.25, 1.0, 4.0};
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = in.x()[i] - in.cx;
    const double dy = in.y()[i] - in.cy;
    const double dz = in.z()[i] - in.cz;
    const double d2 =
        dims == 2 ? dx * dx + dy * dy : dx * dx + dy * dy + dz * dz;
    if (rng->Uniform01() < 0.5) {
      thresholds.push_back(d2);
      thresholds.push_back(std::nextafter(d2, 10.0));
    }
  }
  return thresholds;
}

TEST(SimdTest, KernelsAgreeWithTheDefinitionOnRandomInputs) {
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    ASSERT_NE(kernels.any_within_2d, nullptr);
    ASSERT_NE(kernels.any_within_3d, nullptr);
    CounterRng rng(0x51d);
    int trues = 0;
    int falses = 0;
    for (bool with_nans : {false, true}) {
      for (std::size_t n : kSizes) {
        for (int trial = 0; trial < 20; ++trial) {
          const KernelInput in = RandomInput(n, &rng, with_nans);
          for (int dims : {2, 3}) {
            for (double t : ThresholdsFor(in, n, dims, &rng)) {
              bool expected;
              bool actual;
              if (dims == 2) {
                expected =
                    ReferenceWithin2d(in.x(), in.y(), n, in.cx, in.cy, t);
                actual =
                    kernels.any_within_2d(in.x(), in.y(), n, in.cx, in.cy, t);
              } else {
                expected = ReferenceWithin3d(in.x(), in.y(), in.z(), n, in.cx,
                                             in.cy, in.cz, t);
                actual = kernels.any_within_3d(in.x(), in.y(), in.z(), n, in.cx,
                                               in.cy, in.cz, t);
              }
              ASSERT_EQ(actual, expected)
                  << dims << "D n " << n << " trial " << trial << " threshold "
                  << t << (with_nans ? " with NaNs" : "");
              (expected ? trues : falses) += 1;
            }
          }
        }
      }
    }
    // Both answers are well represented.
    EXPECT_GT(trues, 1000);
    EXPECT_GT(falses, 1000);
  }
}

TEST(SimdTest, KernelsSeeAPointInEveryPosition) {
  // Only point i is near the query; every other one is far. Catches a
  // kernel that skips the tail or the first vector.
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    for (std::size_t n : kSizes) {
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> xs(n + 2, 100.0);
        std::vector<double> ys(n + 2, 100.0);
        std::vector<double> zs(n + 2, 100.0);
        xs[i + 1] = 0.5;
        ys[i + 1] = 0.5;
        zs[i + 1] = 0.5;
        EXPECT_TRUE(kernels.any_within_2d(xs.data() + 1, ys.data() + 1, n, 0.5,
                                          0.5, 1e-6))
            << "n " << n << " i " << i;
        EXPECT_TRUE(kernels.any_within_3d(xs.data() + 1, ys.data() + 1,
                                          zs.data() + 1, n, 0.5, 0.5, 0.5,
                                          1e-6))
            << "n " << n << " i " << i;
      }
    }
  }
}

TEST(SimdTest, KernelsIgnoreValuesPastN) {
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    for (std::size_t n : kSizes) {
      // Far points up to n, a point right on the query just past it.
      std::vector<double> xs(n + 1, 100.0);
      std::vector<double> ys(n + 1, 100.0);
      std::vector<double> zs(n + 1, 100.0);
      xs[n] = ys[n] = zs[n] = 0;
      EXPECT_FALSE(kernels.any_within_2d(xs.data(), ys.data(), n, 0, 0, 1.0))
          << "n " << n;
      EXPECT_FALSE(kernels.any_within_3d(xs.data(), ys.data(), zs.data(), n, 0,
                                         0, 0, 1.0))
          << "n " << n;
    }
  }
}

TEST(SimdTest, KernelsTreatNaNPointsAsFarAway) {
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    for (std::size_t n : kSizes) {
      if (n == 0) continue;
      std::vector<double> xs(n, kNaN);
      std::vector<double> ys(n, 0.0);
      std::vector<double> zs(n, 0.0);
      EXPECT_FALSE(kernels.any_within_2d(xs.data(), ys.data(), n, 0, 0, 1.0))
          << "n " << n;
      EXPECT_FALSE(kernels.any_within_3d(xs.data(), ys.data(), zs.data(), n, 0,
                                         0, 0, 1.0))
          << "n " << n;
      // One real close point among the NaNs still counts.
      xs[n - 1] = 0;
      EXPECT_TRUE(kernels.any_within_2d(xs.data(), ys.data(), n, 0, 0, 1.0))
          << "n " << n;
      EXPECT_TRUE(kernels.any_within_3d(xs.data(), ys.data(), zs.data(), n, 0,
                                        0, 0, 1.0))
          << "n " << n;
    }
  }
}

TEST(SimdTest, KernelsUseStrictlyBelow) {
  // 3-4-5 and 1-2-2-3: squared distances 25 and 9 are exact.
  const double xs[] = {3, 1};
  const double ys[] = {4, 2};
  const double zs[] = {100, 2};
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    EXPECT_FALSE(kernels.any_within_2d(xs, ys, 1, 0, 0, 25));
    EXPECT_TRUE(
        kernels.any_within_2d(xs, ys, 1, 0, 0, std::nextafter(25.0, 26.0)));
    EXPECT_FALSE(kernels.any_within_3d(xs + 1, ys + 1, zs + 1, 1, 0, 0, 0, 9));
    EXPECT_TRUE(kernels.any_within_3d(xs + 1, ys + 1, zs + 1, 1, 0, 0, 0,
                                      std::nextafter(9.0, 10.0)));
  }
}

// ---------------------------------------------------------------------------
// filter_box against its definition.

// The definition in simd.h: the squared distance to the nearest and to the
// farthest place of the box, summed over the axes in order.
std::ptrdiff_t ReferenceFilterBox(int dims, const double* const* in,
                                  std::size_t n, const double* lo,
                                  const double* hi, double threshold,
                                  std::vector<double>* out) {
  std::ptrdiff_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double near2 = 0;
    double far2 = 0;
    for (int a = 0; a < dims; ++a) {
      const double p = in[a][i];
      const double dn = std::max(std::max(lo[a] - p, p - hi[a]), 0.0);
      const double df = std::max(p - lo[a], hi[a] - p);
      near2 += dn * dn;
      far2 += df * df;
    }
    if (!(near2 < threshold)) continue;
    if (far2 < threshold) return -1;
    for (int a = 0; a < dims; ++a) out[a].push_back(in[a][i]);
    ++m;
  }
  return m;
}

TEST(SimdTest, FilterBoxAgreesWithTheDefinitionOnRandomInputs) {
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    ASSERT_NE(kernels.filter_box_2d, nullptr);
    ASSERT_NE(kernels.filter_box_3d, nullptr);
    CounterRng rng(0xf17);
    int held = 0;
    int kept_some = 0;
    for (std::size_t n : kSizes) {
      for (int trial = 0; trial < 40; ++trial) {
        for (int dims : {2, 3}) {
          // A box of side 0.1 to 0.6 and points within about 1 of it,
          // NaN-padded to a whole group of 4 as the kernels require.
          double lo[3], hi[3];
          for (int a = 0; a < 3; ++a) {
            lo[a] = rng.UniformSigned();
            hi[a] = lo[a] + 0.1 + 0.5 * rng.Uniform01();
          }
          const std::size_t padded = (n + 3) / 4 * 4;
          std::vector<double> coords[3];
          const double* in[3];
          for (int a = 0; a < 3; ++a) {
            coords[a].assign(padded, kNaN);
            for (std::size_t i = 0; i < n; ++i) {
              coords[a][i] = lo[a] - 0.5 + 1.6 * rng.Uniform01();
            }
            in[a] = coords[a].data();
          }
          const double threshold = 0.05 + 0.5 * rng.Uniform01();
          std::vector<double> expected_out[3];
          const std::ptrdiff_t expected =
              ReferenceFilterBox(dims, in, n, lo, hi, threshold, expected_out);
          std::vector<double> out_storage[3];
          double* out[3];
          for (int a = 0; a < 3; ++a) {
            out_storage[a].assign(n + 4, 0.0);
            out[a] = out_storage[a].data();
          }
          const std::ptrdiff_t actual =
              dims == 2 ? kernels.filter_box_2d(in, n, lo, hi, threshold, out)
                        : kernels.filter_box_3d(in, n, lo, hi, threshold, out);
          ASSERT_EQ(actual, expected)
              << dims << "D n " << n << " trial " << trial;
          if (actual < 0) {
            ++held;
            continue;
          }
          kept_some += actual > 0;
          for (int a = 0; a < dims; ++a) {
            for (std::ptrdiff_t i = 0; i < actual; ++i) {
              ASSERT_EQ(DoubleBits(out[a][i]), DoubleBits(expected_out[a][i]))
                  << dims << "D n " << n << " trial " << trial << " point "
                  << i;
            }
          }
        }
      }
    }
    // Both outcomes are well represented.
    EXPECT_GT(held, 50);
    EXPECT_GT(kept_some, 50);
  }
}

TEST(SimdTest, FilterBoxTreatsNaNPointsAsFarAway) {
  // NaN points (and NaN padding) are never kept and never hold the box.
  const double lo[3] = {0, 0, 0};
  const double hi[3] = {1, 1, 1};
  std::vector<double> nan(4, kNaN);
  const double* in[3] = {nan.data(), nan.data(), nan.data()};
  std::vector<double> storage(8, 0.0);
  double* out[3] = {storage.data(), storage.data(), storage.data()};
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    EXPECT_EQ(kernels.filter_box_2d(in, 0, lo, hi, 100.0, out), 0);
    EXPECT_EQ(kernels.filter_box_3d(in, 0, lo, hi, 100.0, out), 0);
    EXPECT_EQ(kernels.filter_box_3d(in, 3, lo, hi, 100.0, out), 0);
  }
}

// ---------------------------------------------------------------------------
// split_near_far_3d against its definition.

TEST(SimdTest, SplitNearFar3dAgreesWithTheDefinitionOnRandomInputs) {
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    ASSERT_NE(kernels.split_near_far_3d, nullptr);
    CounterRng rng(0x5911);
    std::size_t near_seen = 0, far_seen = 0, neither_seen = 0;
    for (std::size_t n : kSizes) {
      for (int trial = 0; trial < 40; ++trial) {
        // Points within about 2 of p, NaN-padded to a whole group of 4; the
        // lists already hold a few points, which stay.
        const double p[3] = {rng.UniformSigned(), rng.UniformSigned(),
                             rng.UniformSigned()};
        const std::size_t padded = (n + 3) / 4 * 4;
        std::vector<double> coords[3];
        const double* in[3];
        for (int a = 0; a < 3; ++a) {
          coords[a].assign(padded, kNaN);
          for (std::size_t i = 0; i < n; ++i) {
            coords[a][i] = p[a] + 2 * rng.UniformSigned();
          }
          in[a] = coords[a].data();
        }
        const double near2 = 0.5 + rng.Uniform01();
        const double far2 = near2 + 2 * rng.Uniform01();
        const std::size_t start_near = trial % 3, start_far = trial % 2;
        std::vector<double> want_near[3], want_far[3];
        for (std::size_t i = 0; i < n; ++i) {
          const double dx = in[0][i] - p[0];
          const double dy = in[1][i] - p[1];
          const double dz = in[2][i] - p[2];
          const double d2 = dx * dx + dy * dy + dz * dz;
          std::vector<double>* out = d2 < near2  ? want_near
                                     : d2 < far2 ? want_far
                                                 : nullptr;
          near_seen += out == want_near;
          far_seen += out == want_far;
          neither_seen += out == nullptr;
          if (out == nullptr) continue;
          for (int a = 0; a < 3; ++a) out[a].push_back(in[a][i]);
        }
        std::vector<double> near_storage[3], far_storage[3];
        double* near[3];
        double* far[3];
        for (int a = 0; a < 3; ++a) {
          near_storage[a].assign(start_near + n + 4, -7.0);
          far_storage[a].assign(start_far + n + 4, -7.0);
          near[a] = near_storage[a].data();
          far[a] = far_storage[a].data();
        }
        std::size_t n_near = start_near, n_far = start_far;
        kernels.split_near_far_3d(in, n, p, near2, far2, near, &n_near, far,
                                  &n_far);
        ASSERT_EQ(n_near, start_near + want_near[0].size())
            << "n " << n << " trial " << trial;
        ASSERT_EQ(n_far, start_far + want_far[0].size())
            << "n " << n << " trial " << trial;
        for (int a = 0; a < 3; ++a) {
          for (std::size_t i = 0; i < start_near; ++i) {
            EXPECT_EQ(near[a][i], -7.0) << "a point already listed moved";
          }
          for (std::size_t i = 0; i < start_far; ++i) {
            EXPECT_EQ(far[a][i], -7.0) << "a point already listed moved";
          }
          for (std::size_t i = 0; i < want_near[a].size(); ++i) {
            ASSERT_EQ(DoubleBits(near[a][start_near + i]),
                      DoubleBits(want_near[a][i]))
                << "near point " << i << ", n " << n << " trial " << trial;
          }
          for (std::size_t i = 0; i < want_far[a].size(); ++i) {
            ASSERT_EQ(DoubleBits(far[a][start_far + i]),
                      DoubleBits(want_far[a][i]))
                << "far point " << i << ", n " << n << " trial " << trial;
          }
        }
      }
    }
    // All three outcomes are well represented.
    EXPECT_GT(near_seen, 200u);
    EXPECT_GT(far_seen, 200u);
    EXPECT_GT(neither_seen, 200u);
  }
}

// ---------------------------------------------------------------------------
// any_conflict against its definition.

// The definition in simd.h, as the variable-radius sampler wrote it before
// it had kernels: below max(rc2, r2[j]), as std::max gives it.
bool ReferenceConflict(int dims, const double* const* xs, const double* r2,
                       std::size_t n, const double* c, double rc2) {
  for (std::size_t j = 0; j < n; ++j) {
    double d2 = 0;
    for (int a = 0; a < dims; ++a) {
      const double d = xs[a][j] - c[a];
      d2 = a == 0 ? d * d : d2 + d * d;
    }
    if (d2 < std::max(rc2, r2[j])) return true;
  }
  return false;
}

TEST(SimdTest, AnyConflictAgreesWithTheDefinitionOnRandomInputs) {
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    ASSERT_NE(kernels.any_conflict_2d, nullptr);
    ASSERT_NE(kernels.any_conflict_3d, nullptr);
    CounterRng rng(0xc0f1);
    int trues = 0;
    int falses = 0;
    int own_radius = 0;  // Answers that only the query's rc2 decided.
    for (std::size_t n : kSizes) {
      for (int trial = 0; trial < 40; ++trial) {
        for (int dims : {2, 3}) {
          // Points within about 1 of the query, radii up to 0.5, NaN
          // padding to a whole group of 4 as the kernels require; the
          // padding's r2 is huge, so a kernel that lets it count fails.
          const std::size_t padded = (n + 3) / 4 * 4;
          double c[3];
          std::vector<double> coords[3];
          const double* xs[3];
          for (int a = 0; a < 3; ++a) {
            c[a] = rng.UniformSigned();
            coords[a].assign(padded, kNaN);
            for (std::size_t j = 0; j < n; ++j) {
              coords[a][j] = c[a] + rng.UniformSigned();
            }
            xs[a] = coords[a].data();
          }
          std::vector<double> r2(padded, 1e300);
          for (std::size_t j = 0; j < n; ++j) {
            const double r = 0.5 * rng.Uniform01();
            r2[j] = r * r;
          }
          // Now and then a radius exactly at a point's squared distance,
          // where "below" must say no.
          if (n > 0 && rng.Uniform01() < 0.3) {
            const std::size_t j = rng.Next() % n;
            double d2 = 0;
            for (int a = 0; a < dims; ++a) {
              const double d = xs[a][j] - c[a];
              d2 = a == 0 ? d * d : d2 + d * d;
            }
            r2[j] = d2;
          }
          for (double rc2 : {0.0, 0.01, 0.05, 0.2}) {
            const bool expected =
                ReferenceConflict(dims, xs, r2.data(), n, c, rc2);
            const bool actual =
                dims == 2 ? kernels.any_conflict_2d(xs, r2.data(), n, c, rc2)
                          : kernels.any_conflict_3d(xs, r2.data(), n, c, rc2);
            ASSERT_EQ(actual, expected)
                << dims << "D n " << n << " trial " << trial << " rc2 " << rc2;
            (expected ? trues : falses) += 1;
            own_radius += expected && rc2 > 0 &&
                          !ReferenceConflict(dims, xs, r2.data(), n, c, 0);
          }
        }
      }
    }
    // Both answers, and answers decided by the query's own radius, are
    // well represented.
    EXPECT_GT(trues, 500);
    EXPECT_GT(falses, 500);
    EXPECT_GT(own_radius, 100);
  }
}

TEST(SimdTest, AnyConflictSeesAPointInEveryPosition) {
  // Only point i conflicts; the others are far. Catches a kernel that
  // skips a group or the tail.
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    for (std::size_t n : kSizes) {
      const std::size_t padded = (n + 3) / 4 * 4;
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> coords(padded, 100.0);
        for (std::size_t j = n; j < padded; ++j) coords[j] = kNaN;
        coords[i] = 0.5;
        const double* xs[3] = {coords.data(), coords.data(), coords.data()};
        std::vector<double> r2(padded, 0.0);
        r2[i] = 1e-6;
        const double c[3] = {0.5, 0.5, 0.5};
        EXPECT_TRUE(kernels.any_conflict_2d(xs, r2.data(), n, c, 0))
            << "n " << n << " i " << i;
        EXPECT_TRUE(kernels.any_conflict_3d(xs, r2.data(), n, c, 0))
            << "n " << n << " i " << i;
        r2[i] = 0;  // Then only the query's own radius reaches it.
        EXPECT_FALSE(kernels.any_conflict_2d(xs, r2.data(), n, c, 0));
        EXPECT_TRUE(kernels.any_conflict_3d(xs, r2.data(), n, c, 1e-6));
      }
    }
  }
}

// Blocks of 1 to 5 rows of 1 to 7 cells (the grid test reads up to 5 x 5;
// odd widths leave a cell for the AVX2 path's single-cell step), inside a
// larger grid whose other cells hold a point right on the query, so a
// kernel that reads outside the block gives a wrong answer.
TEST(SimdTest, BlockKernelAgreesWithTheDefinitionOnRandomInputs) {
  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    const SimdKernels& kernels = KernelsFor(level);
    ASSERT_NE(kernels.any_within_2d_block, nullptr);
    CounterRng rng(0xb10c);
    int trues = 0;
    int falses = 0;
    for (std::size_t rows = 1; rows <= 5; ++rows) {
      for (std::size_t cells = 1; cells <= 7; ++cells) {
        for (int trial = 0; trial < 40; ++trial) {
          const double cx = rng.UniformSigned();
          const double cy = rng.UniformSigned();
          // The block starts at cell (1, 1) of a grid 2 cells wider and
          // taller, rows 9 cells (18 doubles) apart.
          constexpr std::size_t kStride = 18;
          std::vector<double> grid(kStride * (rows + 2));
          for (std::size_t i = 0; i < grid.size(); i += 2) {
            grid[i] = cx;
            grid[i + 1] = cy;
          }
          std::vector<double> xs, ys;
          for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t j = 0; j < cells; ++j) {
              double* q = &grid[(i + 1) * kStride + 2 * (j + 1)];
              q[0] = cx + rng.UniformSigned();
              q[1] = cy + rng.UniformSigned();
              if (rng.Uniform01() < 0.4) q[rng.Next() % 2] = kNaN;
              xs.push_back(q[0]);
              ys.push_back(q[1]);
            }
          }
          // Thresholds at some squared distances exactly (where "below"
          // must say no), the next double up, and a few fixed ones.
          std::vector<double> thresholds = {0.0, kNaN, 0.1, 0.5, 2.0};
          for (std::size_t k = 0; k < xs.size(); ++k) {
            const double dx = xs[k] - cx;
            const double dy = ys[k] - cy;
            const double d2 = dx * dx + dy * dy;
            if (std::isnan(d2) || rng.Uniform01() < 0.6) continue;
            thresholds.push_back(d2);
            thresholds.push_back(std::nextafter(d2, 10.0));
          }
          for (const double t : thresholds) {
            const bool expected =
                ReferenceWithin2d(xs.data(), ys.data(), xs.size(), cx, cy, t);
            const bool actual = kernels.any_within_2d_block(
                &grid[kStride + 2], kStride, rows, cells, cx, cy, t);
            ASSERT_EQ(actual, expected) << rows << " x " << cells << " trial "
                                        << trial << " threshold " << t;
            (expected ? trues : falses) += 1;
          }
        }
      }
    }
    EXPECT_GT(trues, 1000);
    EXPECT_GT(falses, 1000);
  }
}

// ---------------------------------------------------------------------------
// Whole runs: every path gives the scalar path's points, bit for bit.

struct Config {
  const char* name;
  int dims;
  Method method;
  double radius;
  // Variable radius from a density raster when > 0: radii [radius,
  // radius_max].
  double radius_max = 0;
  int max_attempts = 0;  // 0: the method's default.
};

// Density falling from 1 at the left to 0 at the right, with ripples.
std::shared_ptr<const Raster> RippleDensity() {
  constexpr std::uint32_t kSide = 64;
  std::vector<float> pixels(kSide * kSide);
  for (std::uint32_t j = 0; j < kSide; ++j) {
    for (std::uint32_t i = 0; i < kSide; ++i) {
      const double x = (i + 0.5) / kSide;
      const double y = (j + 0.5) / kSide;
      const double d = 1 - x + 0.2 * std::sin(11 * x) * std::sin(7 * y);
      pixels[j * kSide + i] = static_cast<float>(std::clamp(d, 0.0, 1.0));
    }
  }
  std::vector<std::uint8_t> bytes(pixels.size() * sizeof(float));
  std::memcpy(bytes.data(), pixels.data(), bytes.size());
  absl::StatusOr<Raster> raster = Raster::FromRaw(
      RasterFormat::kF32, kSide, kSide, bytes, RasterRect{}, 1 << 20);
  return std::make_shared<const Raster>(*std::move(raster));
}

class SimdRunTest : public ::testing::TestWithParam<Config> {};

TEST_P(SimdRunTest, EveryLevelGivesTheScalarPoints) {
  const Config& config = GetParam();
  absl::StatusOr<Box> box = Box::Create(config.dims, {0, 0, 0}, {1, 1, 1});
  ASSERT_TRUE(box.ok()) << box.status();
  SamplerOptions options;
  options.method = config.method;
  options.radius = config.radius;
  if (config.radius_max > 0) {
    options.radius_min = config.radius;
    options.radius_max = config.radius_max;
    options.density = RippleDensity();
  }
  options.seed = 2024;
  options.max_attempts = config.max_attempts;
  options.simd = SimdLevel::kScalar;
  absl::StatusOr<Sampler> scalar = Sampler::Create(*box, options);
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  const PointSet reference = Collect(*scalar);
  ASSERT_TRUE(reference.status.ok()) << reference.status;
  ASSERT_GT(reference.size(), 1000u);
  const std::uint64_t reference_digest = Digest(reference);

  for (SimdLevel level : LevelsToCompare()) {
    SCOPED_TRACE(SimdLevelName(level));
    options.simd = level;
    absl::StatusOr<Sampler> sampler = Sampler::Create(*box, options);
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    const PointSet points = Collect(*sampler);
    ASSERT_TRUE(points.status.ok()) << points.status;
    ASSERT_EQ(points.size(), reference.size());
    const std::vector<std::uint64_t> a = Bits(reference.coords);
    const std::vector<std::uint64_t> b = Bits(points.coords);
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i], b[i]) << "first difference at coordinate " << i;
    }
    EXPECT_EQ(Digest(points), reference_digest);
  }
}

TEST(SimdVariableRunTest, APolygonWithObstaclesGivesTheScalarPoints) {
  // A square with a square lake, other-layer obstacles and same-layer ones
  // (dormant points that wake): the gap search's partial pieces and the
  // wake paths run too, not only the box's interior.
  const std::vector<Ring> rings = {
      {{0, 0}, {1, 0}, {1, 1}, {0, 1}},
      {{0.4, 0.4}, {0.6, 0.4}, {0.6, 0.6}, {0.4, 0.6}},
  };
  absl::StatusOr<Region> region = Region::Polygons(rings);
  ASSERT_TRUE(region.ok()) << region.status();
  SamplerOptions options;
  options.radius_min = 0.006;
  options.radius_max = 0.04;
  options.density = RippleDensity();
  options.seed = 77;
  for (int k = 0; k < 6; ++k) {
    Obstacle rock;
    rock.center = {0.1 + 0.15 * k, 0.2 + 0.1 * (k % 3), 0};
    rock.radius = 0.02;
    options.obstacles.push_back(rock);
  }
  for (int k = 0; k < 3; ++k) {
    Obstacle tree;
    tree.center = {0.15 + 0.3 * k, 0.85, 0};
    tree.radius = 0.04;
    tree.same_layer = true;
    options.obstacles.push_back(tree);
  }
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
    SCOPED_TRACE(MethodName(method));
    options.method = method;
    options.simd = SimdLevel::kScalar;
    absl::StatusOr<Sampler> scalar = Sampler::Create(*region, options);
    ASSERT_TRUE(scalar.ok()) << scalar.status();
    const PointSet reference = Collect(*scalar);
    ASSERT_TRUE(reference.status.ok()) << reference.status;
    ASSERT_GT(reference.size(), 1000u);
    for (SimdLevel level : LevelsToCompare()) {
      SCOPED_TRACE(SimdLevelName(level));
      options.simd = level;
      absl::StatusOr<Sampler> sampler = Sampler::Create(*region, options);
      ASSERT_TRUE(sampler.ok()) << sampler.status();
      const PointSet points = Collect(*sampler);
      ASSERT_TRUE(points.status.ok()) << points.status;
      ASSERT_EQ(points.size(), reference.size());
      EXPECT_EQ(Bits(points.coords), Bits(reference.coords));
      EXPECT_EQ(Digest(points), Digest(reference));
    }
  }
}

// Constant radius with same-layer obstacles (woken points try the woken
// directions), run to the end and stopped by the sink at point 777 (batches
// of one, so the stop lands inside a visit): every level gives the scalar
// points and the same status.
TEST(SimdConstantRunTest, WokenPointsAndAStopGiveTheScalarPoints) {
  absl::StatusOr<Box> box = Box::Create(2, {0, 0, 0}, {1, 1, 1});
  ASSERT_TRUE(box.ok()) << box.status();
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
    for (std::size_t stop_at : {std::size_t{0}, std::size_t{777}}) {
      SCOPED_TRACE(absl::StrCat(MethodName(method), ", stop at ", stop_at));
      SamplerOptions options;
      options.method = method;
      options.radius = 0.01;
      options.seed = 31;
      options.batch_size = 1;
      for (int k = 0; k < 5; ++k) {
        Obstacle tree;
        tree.center = {0.1 + 0.2 * k, 0.3 + 0.1 * (k % 2), 0};
        tree.radius = 0.01;
        tree.same_layer = true;
        options.obstacles.push_back(tree);
      }
      auto run = [&](SimdLevel level) {
        options.simd = level;
        absl::StatusOr<Sampler> sampler = Sampler::Create(*box, options);
        EXPECT_TRUE(sampler.ok()) << sampler.status();
        PointSet points;
        points.status = sampler->Run([&](const PointBatch& batch) {
          Append(batch, &points);
          return stop_at == 0 || points.size() < stop_at;
        });
        return points;
      };
      const PointSet reference = run(SimdLevel::kScalar);
      if (stop_at == 0) {
        ASSERT_TRUE(reference.status.ok()) << reference.status;
        ASSERT_GT(reference.size(), 5000u);
      } else {
        ASSERT_EQ(reference.status.code(), absl::StatusCode::kCancelled);
        ASSERT_EQ(reference.size(), stop_at);
      }
      for (SimdLevel level : LevelsToCompare()) {
        SCOPED_TRACE(SimdLevelName(level));
        const PointSet points = run(level);
        EXPECT_EQ(points.status, reference.status);
        EXPECT_EQ(Bits(points.coords), Bits(reference.coords));
      }
    }
  }
}

const Config kRunConfigs[] = {
    {"Dense2D", 2, Method::kPoissonDense, 0.01},
    {"Classic2D", 2, Method::kPoissonClassic, 0.01},
    // Attempts that are no multiple of the AVX2 paths' four lanes
    // (DenseGroups, ShellGroupUntaken, DenseGroups3d), and fewer than four.
    {"Dense2DK13", 2, Method::kPoissonDense, 0.01, 0, 13},
    {"Classic2DK3", 2, Method::kPoissonClassic, 0.01, 0, 3},
    {"Classic2DK13", 2, Method::kPoissonClassic, 0.01, 0, 13},
    {"Dense3D", 3, Method::kPoissonDense, 0.06},
    {"Dense3DK13", 3, Method::kPoissonDense, 0.06, 0, 13},
    {"Dense3DK2", 3, Method::kPoissonDense, 0.06, 0, 2},
    {"Classic3D", 3, Method::kPoissonClassic, 0.06},
    {"VariableDense2D", 2, Method::kPoissonDense, 0.004, 0.04},
    {"VariableClassic2D", 2, Method::kPoissonClassic, 0.004, 0.04},
    {"VariableDense3D", 3, Method::kPoissonDense, 0.04, 0.12},
    {"VariableClassic3D", 3, Method::kPoissonClassic, 0.04, 0.12},
};

// Names the case in test names and failure messages.
void PrintTo(const Config& config, std::ostream* os) { *os << config.name; }

std::string ConfigName(const ::testing::TestParamInfo<Config>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(AllPackings, SimdRunTest,
                         ::testing::ValuesIn(kRunConfigs), ConfigName);

}  // namespace
}  // namespace scatter::sampler
