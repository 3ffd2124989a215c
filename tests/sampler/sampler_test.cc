#include "sampler/sampler.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "sampler/box.h"
#include "sampler/quality.h"
#include "sampler/rng.h"
#include "sampler/version.h"
#include "tests/sampler/point_set.h"

namespace scatter::sampler {
namespace {

using test::Bits;
using test::Collect;
using test::Digest;
using test::PointSet;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Box UnitBox(int dims) {
  absl::StatusOr<Box> box = Box::Create(dims, {0, 0, 0}, {1, 1, 1});
  EXPECT_TRUE(box.ok()) << box.status();
  return *box;
}

// The Poisson configurations every property is checked on. Sizes stay
// moderate so the suite is quick under ASan/UBSan in Debug: about 7-9k
// points in 2D and 4k in 3D.
struct Config {
  const char* name;
  int dims;
  Method method;
  double radius;
  // Maximality probes: 2e6 per unit area in 2D (~250 per point) and 1e6 per
  // unit volume in 3D (~250 per point); DESIGN.md asks for an uncovered
  // fraction <= 1e-5, so at most 20 and 10 misses.
  std::uint64_t probes;
};

const Config kConfigs[] = {
    {"Dense2D", 2, Method::kPoissonDense, 0.01, 2000000},
    {"Classic2D", 2, Method::kPoissonClassic, 0.01, 2000000},
    {"Dense3D", 3, Method::kPoissonDense, 0.06, 1000000},
    {"Classic3D", 3, Method::kPoissonClassic, 0.06, 1000000},
};

SamplerOptions OptionsFor(const Config& config) {
  SamplerOptions options;
  options.method = config.method;
  options.radius = config.radius;
  options.seed = 1;
  return options;
}

// Creates a sampler, failing the test if Create refuses.
absl::StatusOr<Sampler> MustCreate(const Box& box,
                                   const SamplerOptions& options) {
  absl::StatusOr<Sampler> sampler = Sampler::Create(box, options);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  return sampler;
}

PointSet RunToEnd(const Box& box, const SamplerOptions& options) {
  absl::StatusOr<Sampler> sampler = MustCreate(box, options);
  if (!sampler.ok()) {
    PointSet refused;
    refused.status = sampler.status();
    return refused;
  }
  PointSet points = Collect(*sampler);
  EXPECT_TRUE(points.status.ok()) << points.status;
  return points;
}

// Expects points bit-identical in every field, reporting the first place
// they differ.
void ExpectIdentical(const PointSet& a, const PointSet& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.dims, b.dims);
  const std::vector<std::uint64_t> a_bits = Bits(a.coords);
  const std::vector<std::uint64_t> b_bits = Bits(b.coords);
  for (std::size_t i = 0; i < a_bits.size(); ++i) {
    ASSERT_EQ(a_bits[i], b_bits[i])
        << "coordinate " << i << ": " << a.coords[i] << " vs " << b.coords[i];
  }
  EXPECT_EQ(Bits(a.radius), Bits(b.radius));
  EXPECT_EQ(a.layer, b.layer);
  EXPECT_EQ(a.id, b.id);
}

// A box whose last cell along x starts one ulp below its far side: gap
// filling split that cell's one-ulp sliver, whose midpoint rounds to an
// end, and placed points exactly on max.x (points 111, 115 and 117 here),
// outside the half-open box. Found by a stress run of 25 000 random 3D
// boxes (16 such cases).
TEST(SamplerTest, GapFillingKeepsPointsOffTheFarSideOfAnUlpWideCell) {
  const Box box = *Box::Create(
      3, {0.38013821728599018, 0.32509695467005234, 0.38013821728599018},
      {2.1596464546354133, 4.8836964714347566, 11.477765908559538});
  SamplerOptions options;
  options.method = Method::kPoissonDense;
  options.radius = 1.027400587259433;
  options.max_attempts = 1;
  options.seed = 4413071646678744797ULL;
  options.layer = 2;
  for (SimdLevel level : SupportedSimdLevels()) {
    options.simd = level;
    const PointSet points = RunToEnd(box, options);
    ASSERT_GT(points.size(), 117u);
    for (std::size_t i = 0; i < points.size(); ++i) {
      const double* p = &points.coords[i * 3];
      ASSERT_TRUE(box.Contains(p))
          << SimdLevelName(level) << ": point " << i << " at "
          << absl::StrFormat("%.17g, %.17g, %.17g", p[0], p[1], p[2]);
    }
  }
}

class SamplerPropertyTest : public ::testing::TestWithParam<Config> {
 protected:
  const Config& config() const { return GetParam(); }
  Box box() const { return UnitBox(config().dims); }
  SamplerOptions base_options() const { return OptionsFor(config()); }
};

TEST_P(SamplerPropertyTest, NoTwoPointsAreCloserThanTheRadius) {
  const PointSet points = RunToEnd(box(), base_options());
  ASSERT_GT(points.size(), 1000u);
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance(points.coords, config().dims, config().radius);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_GE(report->min_ratio, 1.0);
}

TEST_P(SamplerPropertyTest, EveryPointIsInsideTheBox) {
  const Box unit = box();
  const PointSet points = RunToEnd(unit, base_options());
  ASSERT_GT(points.size(), 0u);
  const int dims = config().dims;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double* p = &points.coords[i * dims];
    ASSERT_TRUE(unit.Contains(p)) << "point " << i << " at " << p[0] << ", "
                                  << p[1] << ", " << (dims == 3 ? p[2] : 0.0);
  }
}

TEST_P(SamplerPropertyTest, TheSetIsMaximal) {
  const PointSet points = RunToEnd(box(), base_options());
  absl::StatusOr<CoverageReport> coverage =
      MeasureCoverage(points.coords, box(), config().radius, config().probes,
                      /*probe_seed=*/0x9e0be5eed);
  ASSERT_TRUE(coverage.ok()) << coverage.status();
  EXPECT_EQ(coverage->probes, config().probes);
  EXPECT_LE(coverage->uncovered_fraction(), 1e-5)
      << coverage->uncovered << " of " << coverage->probes
      << " probes uncovered";
}

TEST_P(SamplerPropertyTest, AnOffsetOblongBoxIsFilledToo) {
  const int dims = config().dims;
  absl::StatusOr<Box> oblong =
      Box::Create(dims, {-3, 10, 0.25}, {-2.5, 10.75, 0.5});
  ASSERT_TRUE(oblong.ok()) << oblong.status();
  const PointSet points = RunToEnd(*oblong, base_options());
  ASSERT_GT(points.size(), 10u);
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(oblong->Contains(&points.coords[i * dims])) << "point " << i;
  }
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance(points.coords, dims, config().radius);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  // Same probe density as in the unit box.
  const std::uint64_t probes = static_cast<std::uint64_t>(
      static_cast<double>(config().probes) * oblong->Measure());
  absl::StatusOr<CoverageReport> coverage = MeasureCoverage(
      points.coords, *oblong, config().radius, probes, /*probe_seed=*/77);
  ASSERT_TRUE(coverage.ok()) << coverage.status();
  EXPECT_LE(coverage->uncovered_fraction(), 1e-5)
      << coverage->uncovered << " of " << coverage->probes
      << " probes uncovered";
}

TEST_P(SamplerPropertyTest, SameSeedGivesBitIdenticalPoints) {
  const PointSet a = RunToEnd(box(), base_options());
  const PointSet b = RunToEnd(box(), base_options());
  ASSERT_GT(a.size(), 0u);
  ExpectIdentical(a, b);
}

TEST_P(SamplerPropertyTest, BatchSizeDoesNotChangeThePoints) {
  const PointSet reference = RunToEnd(box(), base_options());
  for (std::size_t batch_size : {std::size_t{1}, std::size_t{7},
                                 std::size_t{1000}, std::size_t{1} << 20}) {
    SCOPED_TRACE(absl::StrFormat("batch_size %d", batch_size));
    SamplerOptions options = base_options();
    options.batch_size = batch_size;
    const PointSet points = RunToEnd(box(), options);
    ExpectIdentical(reference, points);
    for (std::size_t size : points.batch_sizes) {
      EXPECT_LE(size, batch_size);
    }
  }
}

TEST_P(SamplerPropertyTest, DifferentSeedsGiveDifferentPoints) {
  SamplerOptions options = base_options();
  const PointSet a = RunToEnd(box(), options);
  options.seed = 2;
  const PointSet b = RunToEnd(box(), options);
  ASSERT_GT(a.size(), 0u);
  ASSERT_GT(b.size(), 0u);
  EXPECT_NE(Bits(a.coords), Bits(b.coords));
  // Not merely shifted in order: almost no coordinate is shared.
  const std::vector<std::uint64_t> a_bits = Bits(a.coords);
  const std::set<std::uint64_t> a_set(a_bits.begin(), a_bits.end());
  std::size_t shared = 0;
  for (std::uint64_t bits : Bits(b.coords)) shared += a_set.count(bits);
  EXPECT_LT(shared, b.coords.size() / 100);
}

TEST_P(SamplerPropertyTest, DifferentLayersGiveDifferentPoints) {
  // The layer keys the random streams as well as the ids.
  SamplerOptions options = base_options();
  const PointSet a = RunToEnd(box(), options);
  options.layer = 1;
  const PointSet b = RunToEnd(box(), options);
  EXPECT_NE(Bits(a.coords), Bits(b.coords));
}

TEST_P(SamplerPropertyTest, ExtremeSeedsAreFine) {
  for (std::uint64_t seed : {std::uint64_t{0}, ~std::uint64_t{0}}) {
    SamplerOptions options = base_options();
    options.seed = seed;
    const PointSet points = RunToEnd(box(), options);
    EXPECT_GT(points.size(), 100u) << "seed " << seed;
  }
}

// Points from a run with `few` and with `many` attempts, as the issue's
// "more attempts => no fewer points" compares them. Classic: 40 against 5
// candidates before a point retires. Dense: 30 against 6 directions.
void ExpectMoreAttemptsPackNoFewerPoints(const Config& config,
                                         SamplerOptions options) {
  const bool dense = config.method == Method::kPoissonDense;
  options.max_attempts = dense ? 6 : 5;
  const PointSet few = RunToEnd(UnitBox(config.dims), options);
  options.max_attempts = dense ? 30 : 40;
  const PointSet many = RunToEnd(UnitBox(config.dims), options);
  EXPECT_GE(many.size(), few.size())
      << (dense ? "k = 30" : "k = 40") << " gave " << many.size() << " points, "
      << (dense ? "k = 6" : "k = 5") << " gave " << few.size();
}

// The property belongs to Bridson's phase: more attempts leave fewer holes.
// With the maximal fill on, it does not hold and is not asserted: a small k
// leaves more holes, and filling holes one random point at a time packs
// denser than Bridson's front (2D classic r = 0.01 falls from ~7200 points
// at k = 3 to ~6900 at k = 40).
TEST_P(SamplerPropertyTest, MoreAttemptsPackNoFewerPointsWithoutGapFill) {
  SamplerOptions options = base_options();
  options.fill_gaps = false;
  ExpectMoreAttemptsPackNoFewerPoints(config(), options);
}

TEST_P(SamplerPropertyTest, RelativeRadiusIsInTheExpectedRange) {
  const PointSet points = RunToEnd(box(), base_options());
  const double rho = RelativeRadius(points.size(), box().Measure(),
                                    config().dims, config().radius);
  RecordProperty("rho", absl::StrFormat("%.4f", rho));
  // No set with the minimum distance beats the hexagonal or FCC packing
  // (rho <= 1). Every maximal set has rho >= 0.52 in 2D (disks of radius r
  // cover the area) and >= 0.55 in 3D, but these packings do much better,
  // and a change that loosened them should fail here: the sampler issue's
  // floors in 2D (dense 0.84, classic 0.72; these runs give 0.872 and
  // 0.773), and in 3D a little under what these runs give (dense 0.857
  // since algorithm_version 4, 0.851 before; classic 0.831; the output is
  // pinned by the golden digests, so only a change of algorithm moves
  // them).
  double lower = 0;
  if (config().dims == 2) {
    lower = config().method == Method::kPoissonDense ? 0.84 : 0.72;
  } else {
    lower = config().method == Method::kPoissonDense ? 0.82 : 0.80;
  }
  EXPECT_GE(rho, lower) << points.size() << " points";
  EXPECT_LE(rho, 1.0) << points.size() << " points";
}

TEST_P(SamplerPropertyTest, WithoutGapFillTheMinimumDistanceStillHolds) {
  SamplerOptions options = base_options();
  options.fill_gaps = false;
  const Box unit = box();
  const PointSet points = RunToEnd(unit, options);
  ASSERT_GT(points.size(), 0u);
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance(points.coords, config().dims, config().radius);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(unit.Contains(&points.coords[i * config().dims]))
        << "point " << i;
  }
}

TEST_P(SamplerPropertyTest, BatchFieldsAreConsistent) {
  SamplerOptions options = base_options();
  options.layer = 7;
  options.seed = 1234;
  options.batch_size = 500;
  absl::StatusOr<Sampler> sampler = MustCreate(box(), options);
  ASSERT_TRUE(sampler.ok());
  const int dims = config().dims;
  std::size_t total = 0;
  std::size_t calls = 0;
  absl::Status status = sampler->Run([&](const PointBatch& batch) {
    ++calls;
    EXPECT_EQ(batch.dims, dims);
    EXPECT_LE(batch.size(), 500u);
    EXPECT_EQ(batch.coords.size(), dims * batch.size());
    EXPECT_EQ(batch.radius.size(), batch.size());
    EXPECT_EQ(batch.layer.size(), batch.size());
    EXPECT_EQ(batch.id.size(), batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      EXPECT_EQ(batch.radius[i], config().radius);
      EXPECT_EQ(batch.layer[i], 7u);
      EXPECT_EQ(batch.id[i], PointId(1234, 7, &batch.coords[i * dims], dims));
    }
    total += batch.size();
    return true;
  });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_GT(total, 1000u);
  EXPECT_GE(calls, 3u);
}

TEST_P(SamplerPropertyTest, IdsAreDistinct) {
  const PointSet points = RunToEnd(box(), base_options());
  const std::set<std::uint64_t> ids(points.id.begin(), points.id.end());
  EXPECT_EQ(ids.size(), points.size());
}

TEST_P(SamplerPropertyTest, RunsFromTwoThreadsAgree) {
  absl::StatusOr<Sampler> sampler = MustCreate(box(), base_options());
  ASSERT_TRUE(sampler.ok());
  const PointSet reference = Collect(*sampler);
  PointSet a;
  PointSet b;
  std::thread first([&] { a = Collect(*sampler); });
  std::thread second([&] { b = Collect(*sampler); });
  first.join();
  second.join();
  EXPECT_TRUE(a.status.ok()) << a.status;
  EXPECT_TRUE(b.status.ok()) << b.status;
  ExpectIdentical(reference, a);
  ExpectIdentical(reference, b);
}

TEST_P(SamplerPropertyTest, StopsWhenTheSinkSaysSo) {
  SamplerOptions options = base_options();
  options.batch_size = 64;
  absl::StatusOr<Sampler> sampler = MustCreate(box(), options);
  ASSERT_TRUE(sampler.ok());
  for (int stop_at : {1, 3}) {
    int calls = 0;
    absl::Status status = sampler->Run([&](const PointBatch&) {
      ++calls;
      return calls < stop_at;
    });
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    // The call that said false is the last one.
    EXPECT_EQ(calls, stop_at);
  }
}

TEST_P(SamplerPropertyTest, StopsPromptlyWhenThePredicateSaysSo) {
  SamplerOptions options = base_options();
  options.batch_size = 64;
  absl::StatusOr<Sampler> sampler = MustCreate(box(), options);
  ASSERT_TRUE(sampler.ok());
  // Count the polls of a full run first.
  std::uint64_t polls = 0;
  std::size_t full = 0;
  absl::Status status = sampler->Run(
      [&](const PointBatch& batch) {
        full += batch.size();
        return true;
      },
      [&] {
        ++polls;
        return false;
      });
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_GE(polls, 2u) << "a run of " << full << " points polled stop " << polls
                       << " times";

  for (std::uint64_t fire_at : {std::uint64_t{1}, polls / 2}) {
    SCOPED_TRACE(
        absl::StrFormat("stop fires at poll %d of %d", fire_at, polls));
    std::uint64_t polled = 0;
    bool fired = false;
    std::size_t before = 0;
    std::size_t after = 0;
    status = sampler->Run(
        [&](const PointBatch& batch) {
          (fired ? after : before) += batch.size();
          return true;
        },
        [&] {
          fired = ++polled >= fire_at;
          return fired;
        });
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    EXPECT_TRUE(fired);
    // Once stop said true, at most the batch already being filled may go out.
    EXPECT_LE(after, options.batch_size);
    EXPECT_LT(before + after, full);
  }
}

TEST_P(SamplerPropertyTest, StopIsPolledEveryFewThousandCandidates) {
  // Every point costs at least k candidates (classic retires a point after k
  // failures in a row; dense tries all k directions once), so a run of N
  // points tests at least N k candidates. "Every few thousand candidates at
  // most" (sampler.h) then means at least N k / 8192 polls. Checked at the
  // usual k and at a large one, where polling per active point would not be
  // often enough.
  for (int attempts : {0, 256}) {
    SamplerOptions options = base_options();
    options.max_attempts = attempts;
    absl::StatusOr<Sampler> sampler = MustCreate(box(), options);
    ASSERT_TRUE(sampler.ok());
    const int k = sampler->options().max_attempts;
    ASSERT_GT(k, 0);
    std::uint64_t polls = 0;
    std::uint64_t points = 0;
    absl::Status status = sampler->Run(
        [&](const PointBatch& batch) {
          points += batch.size();
          return true;
        },
        [&] {
          ++polls;
          return false;
        });
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_GE(polls * 8192, points * static_cast<std::uint64_t>(k))
        << polls << " polls for " << points << " points at k = " << k;
  }
}

TEST_P(SamplerPropertyTest, NeverEmitsMorePointsThanMaxPoints) {
  // max_points is checked against an estimate before the run and, as
  // DESIGN.md asks, as a hard cap while running. k = 40 packs denser than
  // the usual k, so an estimate made without regard to k may let the run
  // start and the cap has to stop it. That happens in dense 2D at k = 40
  // (rho 0.9 passes the estimate's 0.81 of the hexagonal count); in the
  // other setups the estimate refuses every cap below the full count, and
  // only that is checked.
  int stopped_running = 0;
  for (int attempts : {0, 40}) {
    SamplerOptions base = base_options();
    base.max_attempts = attempts;
    const PointSet full = RunToEnd(box(), base);
    ASSERT_GT(full.size(), 100u);
    for (std::uint64_t cap : {std::uint64_t{full.size()} - 1,
                              std::uint64_t{full.size()} * 9 / 10}) {
      SCOPED_TRACE(absl::StrFormat("max_attempts %d, max_points %d of %d",
                                   attempts, cap, full.size()));
      SamplerOptions options = base;
      options.max_points = cap;
      absl::StatusOr<Sampler> sampler = Sampler::Create(box(), options);
      if (!sampler.ok()) {
        EXPECT_EQ(sampler.status().code(), absl::StatusCode::kResourceExhausted)
            << sampler.status();
        continue;
      }
      const PointSet points = Collect(*sampler);
      EXPECT_EQ(points.status.code(), absl::StatusCode::kResourceExhausted)
          << points.status << " after " << points.size() << " points";
      EXPECT_TRUE(absl::StrContains(points.status.message(), "max_points"))
          << points.status.message();
      EXPECT_LE(points.size(), cap);
      ++stopped_running;
    }
    SamplerOptions options = base;
    options.max_points = full.size();
    absl::StatusOr<Sampler> exact = Sampler::Create(box(), options);
    if (exact.ok()) {
      const PointSet points = Collect(*exact);
      EXPECT_TRUE(points.status.ok()) << points.status;
      EXPECT_EQ(points.size(), full.size());
    }
  }
  if (config().dims == 2 && config().method == Method::kPoissonDense) {
    EXPECT_GT(stopped_running, 0) << "no run reached the running cap";
  }
}

TEST_P(SamplerPropertyTest, RadiusLargerThanTheBoxGivesOnePoint) {
  SamplerOptions options = base_options();
  options.radius = 2;  // The unit box's diagonal is at most sqrt(3).
  const PointSet points = RunToEnd(box(), options);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_TRUE(box().Contains(points.coords.data()));
}

TEST_P(SamplerPropertyTest, DefaultAttemptsAreResolved) {
  absl::StatusOr<Sampler> sampler = MustCreate(box(), base_options());
  ASSERT_TRUE(sampler.ok());
  EXPECT_EQ(sampler->options().max_attempts,
            config().method == Method::kPoissonDense ? 12 : 30);
  EXPECT_NE(sampler->options().simd, SimdLevel::kBest);
}

// Names the case in test names and failure messages.
void PrintTo(const Config& config, std::ostream* os) { *os << config.name; }

std::string ConfigName(const ::testing::TestParamInfo<Config>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(AllPackings, SamplerPropertyTest,
                         ::testing::ValuesIn(kConfigs), ConfigName);

// ---------------------------------------------------------------------------
// Invalid input.

// Expects Create to refuse with `code` and a message naming `field`.
void ExpectRefused(const Box& box, const SamplerOptions& options,
                   absl::StatusCode code, const std::string& field) {
  absl::StatusOr<Sampler> sampler = Sampler::Create(box, options);
  ASSERT_FALSE(sampler.ok()) << "expected " << field << " to be refused";
  EXPECT_EQ(sampler.status().code(), code) << sampler.status();
  EXPECT_TRUE(absl::StrContains(sampler.status().message(), field))
      << "message does not name " << field << ": "
      << sampler.status().message();
}

SamplerOptions PoissonOptions(Method method) {
  SamplerOptions options;
  options.method = method;
  options.radius = 0.05;
  return options;
}

const Method kPoissonMethods[] = {Method::kPoissonDense,
                                  Method::kPoissonClassic};

TEST(SamplerTest, NonFiniteOrNonPositiveRadiusIsInvalidArgument) {
  for (Method method : kPoissonMethods) {
    for (double radius : {kNaN, kInf, -kInf, 0.0, -0.0, -1.0}) {
      SCOPED_TRACE(absl::StrFormat("%s radius %f", MethodName(method), radius));
      SamplerOptions options = PoissonOptions(method);
      options.radius = radius;
      ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                    "radius");
      ExpectRefused(UnitBox(3), options, absl::StatusCode::kInvalidArgument,
                    "radius");
    }
  }
}

// Distances are compared squared: radii whose squares leave the normal
// doubles are refused (at 1e199 every square was inf, nothing conflicted
// and a run streamed points without end), and every scale in between
// samples alike.
TEST(SamplerTest, RadiiWhoseSquaresLeaveTheDoublesAreRefused) {
  for (Method method : kPoissonMethods) {
    for (double radius : {1e-151, 1e-200, 2e150, 1e199}) {
      SCOPED_TRACE(absl::StrFormat("%s radius %g", MethodName(method), radius));
      SamplerOptions options = PoissonOptions(method);
      options.radius = radius;
      ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                    "radius must be in [1e-150, 1e+150]");
    }
    std::size_t counts[3] = {};
    const double scales[3] = {1e-140, 1, 1e140};
    for (int i = 0; i < 3; ++i) {
      const double side = scales[i];
      SCOPED_TRACE(absl::StrFormat("%s box side %g", MethodName(method), side));
      SamplerOptions options = PoissonOptions(method);
      options.radius = side / 20;
      const PointSet points =
          RunToEnd(*Box::Create(2, {0, 0, 0}, {side, side, 0}), options);
      absl::StatusOr<MinDistanceReport> report =
          CheckMinDistance(points.coords, 2, options.radius);
      ASSERT_TRUE(report.ok()) << report.status();
      EXPECT_EQ(report->violations, 0u);
      counts[i] = points.size();
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_GT(counts[i], 250u);
      EXPECT_LT(counts[i], 420u);
    }
  }
}

// Obstacle radii and footprints are compared squared too: a clearance
// whose square was inf let every point through (an obstacle of radius 2e155
// around the unit box left the jittered grid and Poisson without gap
// filling placing points inside it). Past 1e150 they are refused, and the
// largest allowed clearance still keeps the box empty.
TEST(SamplerTest, ClearancesWhoseSquaresLeaveTheDoublesAreRefused) {
  for (double length : {2e150, 2e155, 1e300}) {
    SCOPED_TRACE(absl::StrFormat("length %g", length));
    SamplerOptions options = PoissonOptions(Method::kPoissonDense);
    options.obstacles.push_back({{length / 2, 0, 0}, length});
    ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                  "obstacles[0].radius must be in [0, 1e+150]");
    options = PoissonOptions(Method::kPoissonDense);
    options.footprint = length;
    ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                  "footprint must be in [0, 1e+150]");
  }
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic,
                        Method::kJitteredGrid}) {
    for (bool fill_gaps : {true, false}) {
      SCOPED_TRACE(
          absl::StrFormat("%s fill_gaps %d", MethodName(method), fill_gaps));
      SamplerOptions options = PoissonOptions(method);
      options.cell_size = 0.05;
      options.fill_gaps = fill_gaps;
      options.obstacles.push_back({{5e149, 0, 0}, kMaxRadius});
      options.footprint = kMaxRadius;
      const PointSet points = RunToEnd(UnitBox(2), options);
      ASSERT_TRUE(points.status.ok()) << points.status;
      EXPECT_EQ(points.size(), 0u);
    }
  }
}

// Far from the origin doubles are coarse: at 1e14 with r = 1 (steps of
// r / 64) a dense run put points on the box's far face and pairs 2 %
// closer than r. Coordinates may stay under r * 2^43 (steps of r / 1024);
// there the points stay inside and apart, in 2D and 3D, both packings,
// with and without gap filling (dense candidates then step out further
// than r (1 + 1e-7), or they would round onto their parent's disk); from
// there the box is refused, for variable radius at radius_min.
TEST(SamplerTest, CoordinatesFarPastTheRadiusAreRefused) {
  const double r = 1;
  for (int dims : {2, 3}) {
    for (const double offset : {1e14, 3e13, 8.8e12}) {
      SCOPED_TRACE(absl::StrFormat("%dD offset %g", dims, offset));
      const Box box = *Box::Create(dims, {offset, 0, 0}, {offset + 50, 50, 50});
      SamplerOptions options = PoissonOptions(Method::kPoissonDense);
      options.radius = r;
      ExpectRefused(box, options, absl::StatusCode::kInvalidArgument,
                    "the region's coordinates reach");
      options.density = std::make_shared<const Raster>(*Raster::FromRaw(
          RasterFormat::kU8, 1, 1, {std::uint8_t{128}}, RasterRect{}, 1 << 20));
      options.radius_min = r;
      options.radius_max = 2 * r;
      ExpectRefused(box, options, absl::StatusCode::kInvalidArgument,
                    "over radius_min / 1024");
    }
    for (Method method : kPoissonMethods) {
      for (bool fill_gaps : {true, false}) {
        const double offset = 8.7e12;  // Steps of r / 1024.
        SCOPED_TRACE(absl::StrFormat("%dD %s fill_gaps %d", dims,
                                     MethodName(method), fill_gaps));
        const Box box =
            *Box::Create(dims, {offset, 0, 0}, {offset + 30, 30, 30});
        SamplerOptions options = PoissonOptions(method);
        options.radius = r;
        options.fill_gaps = fill_gaps;
        const PointSet points = RunToEnd(box, options);
        ASSERT_TRUE(points.status.ok()) << points.status;
        EXPECT_GT(points.size(), dims == 2 ? 500u : 5000u);
        for (std::size_t i = 0; i < points.size(); ++i) {
          ASSERT_TRUE(box.Contains(&points.coords[i * dims]))
              << points.coords[i * dims];
        }
        absl::StatusOr<MinDistanceReport> report =
            CheckMinDistance(points.coords, dims, r);
        ASSERT_TRUE(report.ok()) << report.status();
        EXPECT_EQ(report->violations, 0u);
        // And with variable radius, r to 2 r.
        options.density = std::make_shared<const Raster>(
            *Raster::FromRaw(RasterFormat::kU8, 1, 1, {std::uint8_t{128}},
                             RasterRect{offset, 0, offset + 30, 30}, 1 << 20));
        options.radius_min = r;
        options.radius_max = 2 * r;
        const PointSet variable = RunToEnd(box, options);
        ASSERT_TRUE(variable.status.ok()) << variable.status;
        EXPECT_GT(variable.size(), dims == 2 ? 150u : 1000u);
        for (std::size_t i = 0; i < variable.size(); ++i) {
          ASSERT_TRUE(box.Contains(&variable.coords[i * dims]));
        }
        report =
            CheckMinDistanceVariable(variable.coords, variable.radius, dims);
        ASSERT_TRUE(report.ok()) << report.status();
        EXPECT_EQ(report->violations, 0u);
      }
    }
  }
}

TEST(SamplerTest, NegativeMaxAttemptsIsInvalidArgument) {
  for (Method method : kPoissonMethods) {
    for (int attempts : {-1, std::numeric_limits<int>::min()}) {
      SamplerOptions options = PoissonOptions(method);
      options.max_attempts = attempts;
      ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                    "max_attempts");
    }
  }
}

TEST(SamplerTest, BatchSizeOutsideOneToTwoToTheTwentyIsInvalidArgument) {
  for (std::size_t batch_size : {std::size_t{0}, (std::size_t{1} << 20) + 1,
                                 std::numeric_limits<std::size_t>::max()}) {
    SamplerOptions options = PoissonOptions(Method::kPoissonDense);
    options.batch_size = batch_size;
    ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                  "batch_size");
  }
  for (std::size_t batch_size : {std::size_t{1}, std::size_t{1} << 20}) {
    SamplerOptions options = PoissonOptions(Method::kPoissonDense);
    options.batch_size = batch_size;
    EXPECT_TRUE(Sampler::Create(UnitBox(2), options).ok())
        << "batch_size " << batch_size;
  }
}

TEST(SamplerTest, DenseEpsilonOutOfRangeIsInvalidArgument) {
  // "Must stay well above 1e-12" (sampler.h).
  for (double epsilon : {kNaN, kInf, -kInf, 0.0, -1e-7, 1e-13, 1e-12}) {
    SCOPED_TRACE(absl::StrFormat("dense_epsilon %g", epsilon));
    SamplerOptions options = PoissonOptions(Method::kPoissonDense);
    options.dense_epsilon = epsilon;
    ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                  "dense_epsilon");
  }
  SamplerOptions options = PoissonOptions(Method::kPoissonDense);
  options.dense_epsilon = 1e-3;
  EXPECT_TRUE(Sampler::Create(UnitBox(2), options).ok());
}

TEST(SamplerTest, NonPositiveOrNonFiniteCellSizeIsInvalidArgument) {
  // 1e300 too: half a cell is the default footprint, compared squared.
  for (double cell_size : {0.0, -0.1, kNaN, kInf, 1e300}) {
    SCOPED_TRACE(absl::StrFormat("cell_size %f", cell_size));
    SamplerOptions options;
    options.method = Method::kJitteredGrid;
    options.cell_size = cell_size;
    ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                  "cell_size");
  }
}

TEST(SamplerTest, UniformCountZeroIsInvalidArgument) {
  SamplerOptions options;
  options.method = Method::kUniform;
  options.count = 0;
  ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                "count");
}

TEST(SamplerTest, UnknownSimdLevelIsInvalidArgument) {
  SamplerOptions options = PoissonOptions(Method::kPoissonDense);
  options.simd = static_cast<SimdLevel>(99);
  ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                "simd");
}

TEST(SamplerTest, UnknownMethodIsInvalidArgument) {
  SamplerOptions options = PoissonOptions(Method::kPoissonDense);
  options.method = static_cast<Method>(99);
  ExpectRefused(UnitBox(2), options, absl::StatusCode::kInvalidArgument,
                "method");
}

TEST(SamplerTest, EveryErrorMessageStartsLowercaseWithoutTrailingPeriod) {
  SamplerOptions options = PoissonOptions(Method::kPoissonClassic);
  options.radius = -1;
  absl::StatusOr<Sampler> sampler = Sampler::Create(UnitBox(2), options);
  ASSERT_FALSE(sampler.ok());
  const std::string message(sampler.status().message());
  ASSERT_FALSE(message.empty());
  EXPECT_TRUE(std::islower(static_cast<unsigned char>(message.front())))
      << message;
  EXPECT_NE(message.back(), '.') << message;
}

TEST(SamplerTest, TinyRadiusIsRefusedBeforeAllocating) {
  // r = 1e-9 in the unit square needs ~1e18 grid cells; were they allocated
  // first, ASan would abort on the size. Default limits.
  SamplerOptions options = PoissonOptions(Method::kPoissonDense);
  options.radius = 1e-9;
  absl::StatusOr<Sampler> sampler = Sampler::Create(UnitBox(2), options);
  ASSERT_FALSE(sampler.ok());
  EXPECT_EQ(sampler.status().code(), absl::StatusCode::kResourceExhausted)
      << sampler.status();
}

TEST(SamplerTest, GridOverTheMemoryLimitIsResourceExhausted) {
  for (Method method : kPoissonMethods) {
    for (int dims : {2, 3}) {
      SCOPED_TRACE(absl::StrFormat("%s %dD", MethodName(method), dims));
      SamplerOptions options = PoissonOptions(method);
      options.max_points = std::numeric_limits<std::uint64_t>::max();
      options.radius = 1e-9;
      ExpectRefused(UnitBox(dims), options,
                    absl::StatusCode::kResourceExhausted, "max_memory_bytes");
      // A modest grid against a tiny limit.
      options.radius = 0.001;
      options.max_memory_bytes = 4096;
      ExpectRefused(UnitBox(dims), options,
                    absl::StatusCode::kResourceExhausted, "max_memory_bytes");
      // It names what the estimate is over, and the bytes as a whole
      // number (it said "in this box needs a 9720.5-byte sampling grid").
      ExpectRefused(UnitBox(dims), options,
                    absl::StatusCode::kResourceExhausted,
                    dims == 2 ? "radius 0.001 over the region's bounds, 1 x 1 "
                                "needs a "
                              : "radius 0.001 over the region's bounds, 1 x 1 "
                                "x 1 needs a ");
      const std::string message = std::string(
          Sampler::Create(UnitBox(dims), options).status().message());
      const std::size_t needs = message.find("needs a ") + 8;
      const std::size_t bytes = message.find("-byte sampling grid");
      ASSERT_LT(needs, bytes) << message;
      EXPECT_EQ(
          message.substr(needs, bytes - needs).find_first_not_of("0123456789"),
          std::string::npos)
          << message;
    }
  }
}

TEST(SamplerTest, ExpectedPointsOverMaxPointsIsResourceExhausted) {
  for (Method method : kPoissonMethods) {
    SamplerOptions options = PoissonOptions(method);
    options.radius = 0.01;  // ~8k points.
    options.max_points = 100;
    ExpectRefused(UnitBox(2), options, absl::StatusCode::kResourceExhausted,
                  "max_points");
  }
}

TEST(SamplerTest, UniformCountOverMaxPointsIsResourceExhausted) {
  SamplerOptions options;
  options.method = Method::kUniform;
  options.count = 1001;
  options.max_points = 1000;
  ExpectRefused(UnitBox(2), options, absl::StatusCode::kResourceExhausted,
                "max_points");
  options.count = 1000;
  EXPECT_TRUE(Sampler::Create(UnitBox(2), options).ok());
}

TEST(SamplerTest, JitteredCellsOverMaxPointsIsResourceExhausted) {
  SamplerOptions options;
  options.method = Method::kJitteredGrid;
  options.cell_size = 1e-9;  // 1e18 cells.
  ExpectRefused(UnitBox(2), options, absl::StatusCode::kResourceExhausted,
                "max_points");
}

// ---------------------------------------------------------------------------
// Uniform and jittered grid.

TEST(SamplerTest, UniformGivesExactlyCountPointsInsideTheBox) {
  for (int dims : {2, 3}) {
    absl::StatusOr<Box> box = Box::Create(dims, {-2, 5, 1}, {-1.5, 7, 1.25});
    ASSERT_TRUE(box.ok()) << box.status();
    SamplerOptions options;
    options.method = Method::kUniform;
    options.count = 5000;
    options.seed = 3;
    options.layer = 2;
    options.batch_size = 333;
    const PointSet points = RunToEnd(*box, options);
    ASSERT_EQ(points.size(), 5000u);
    EXPECT_EQ(points.dims, dims);
    for (std::size_t i = 0; i < points.size(); ++i) {
      ASSERT_TRUE(box->Contains(&points.coords[i * dims])) << "point " << i;
      EXPECT_EQ(points.radius[i], 0.0);
      EXPECT_EQ(points.layer[i], 2u);
      EXPECT_EQ(points.id[i], PointId(3, 2, &points.coords[i * dims], dims));
    }
    // Spread over the whole box: each half of every axis gets a fair share.
    for (int a = 0; a < dims; ++a) {
      const double middle = (box->min(a) + box->max(a)) / 2;
      int low = 0;
      for (std::size_t i = 0; i < points.size(); ++i) {
        low += points.coords[i * dims + a] < middle ? 1 : 0;
      }
      EXPECT_NEAR(low, 2500, 300) << "axis " << a;
    }
  }
}

TEST(SamplerTest, UniformSameSeedSamePointsDifferentSeedDifferentPoints) {
  SamplerOptions options;
  options.method = Method::kUniform;
  options.count = 1000;
  options.seed = 5;
  const PointSet a = RunToEnd(UnitBox(3), options);
  const PointSet b = RunToEnd(UnitBox(3), options);
  ExpectIdentical(a, b);
  options.seed = 6;
  const PointSet c = RunToEnd(UnitBox(3), options);
  EXPECT_NE(Bits(a.coords), Bits(c.coords));
}

// Counts points per cell of a grid of side `cell` anchored at the box's min
// corner (where the jittered grid starts).
std::vector<int> PointsPerCell(const PointSet& points, const Box& box,
                               double cell, int* cells_per_axis) {
  const int dims = box.dims();
  int n[3] = {1, 1, 1};
  for (int a = 0; a < dims; ++a) {
    n[a] = static_cast<int>(std::ceil(box.extent(a) / cell));
  }
  std::vector<int> counts(static_cast<std::size_t>(n[0]) * n[1] * n[2], 0);
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::size_t index = 0;
    for (int a = dims - 1; a >= 0; --a) {
      const int c = static_cast<int>(
          std::floor((points.coords[i * dims + a] - box.min(a)) / cell));
      EXPECT_GE(c, 0);
      EXPECT_LT(c, n[a]);
      index = index * n[a] + static_cast<std::size_t>(c);
    }
    ++counts[index];
  }
  for (int a = 0; a < 3; ++a) cells_per_axis[a] = n[a];
  return counts;
}

TEST(SamplerTest, JitteredGridPutsOnePointInEveryWholeCell) {
  // Cells of 1/32 (exact in binary) tile the unit box exactly.
  for (int dims : {2, 3}) {
    SCOPED_TRACE(absl::StrFormat("%dD", dims));
    SamplerOptions options;
    options.method = Method::kJitteredGrid;
    options.cell_size = dims == 2 ? 1.0 / 32 : 1.0 / 16;
    options.seed = 9;
    const Box box = UnitBox(dims);
    const PointSet points = RunToEnd(box, options);
    int n[3];
    const std::vector<int> counts =
        PointsPerCell(points, box, options.cell_size, n);
    EXPECT_EQ(points.size(), counts.size());
    for (std::size_t c = 0; c < counts.size(); ++c) {
      ASSERT_EQ(counts[c], 1) << "cell " << c;
    }
    for (std::size_t i = 0; i < points.size(); ++i) {
      ASSERT_TRUE(box.Contains(&points.coords[i * dims])) << "point " << i;
      EXPECT_EQ(points.radius[i], 0.0);
    }
  }
}

TEST(SamplerTest, JitteredGridPutsAtMostOnePointPerCellInsideTheBox) {
  // 0.03 does not divide the box: the last row and column stick out and
  // keep their point only when it lands inside.
  for (int dims : {2, 3}) {
    SCOPED_TRACE(absl::StrFormat("%dD", dims));
    absl::StatusOr<Box> box = Box::Create(dims, {-1, 2, 0}, {0, 3, 1});
    ASSERT_TRUE(box.ok()) << box.status();
    SamplerOptions options;
    options.method = Method::kJitteredGrid;
    options.cell_size = dims == 2 ? 0.03 : 0.07;
    options.seed = 10;
    const PointSet points = RunToEnd(*box, options);
    int n[3];
    const std::vector<int> counts =
        PointsPerCell(points, *box, options.cell_size, n);
    std::size_t whole_cells = 1;
    for (int a = 0; a < dims; ++a) whole_cells *= n[a] - 1;
    EXPECT_GE(points.size(), whole_cells);
    EXPECT_LE(points.size(), counts.size());
    for (std::size_t c = 0; c < counts.size(); ++c) {
      ASSERT_LE(counts[c], 1) << "cell " << c;
    }
    for (std::size_t i = 0; i < points.size(); ++i) {
      ASSERT_TRUE(box->Contains(&points.coords[i * dims])) << "point " << i;
    }
  }
}

TEST(SamplerTest, JitteredGridSameSeedSamePoints) {
  SamplerOptions options;
  options.method = Method::kJitteredGrid;
  options.cell_size = 0.05;
  options.seed = 11;
  const PointSet a = RunToEnd(UnitBox(2), options);
  options.batch_size = 3;
  const PointSet b = RunToEnd(UnitBox(2), options);
  ExpectIdentical(a, b);
  options.seed = 12;
  const PointSet c = RunToEnd(UnitBox(2), options);
  EXPECT_NE(Bits(a.coords), Bits(c.coords));
}

TEST(SamplerTest, SimpleMethodsStopWhenTheSinkSaysSo) {
  for (Method method : {Method::kUniform, Method::kJitteredGrid}) {
    SamplerOptions options;
    options.method = method;
    options.count = 100000;
    options.cell_size = 0.001;
    options.batch_size = 100;
    absl::StatusOr<Sampler> sampler = MustCreate(UnitBox(2), options);
    ASSERT_TRUE(sampler.ok());
    int calls = 0;
    absl::Status status = sampler->Run([&](const PointBatch&) {
      ++calls;
      return calls < 2;
    });
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    EXPECT_EQ(calls, 2) << MethodName(method);
  }
}

TEST(SamplerTest, SimpleMethodsStopWhenThePredicateSaysSo) {
  for (Method method : {Method::kUniform, Method::kJitteredGrid}) {
    SamplerOptions options;
    options.method = method;
    options.count = 1000000;
    options.cell_size = 0.001;  // 1e6 cells.
    absl::StatusOr<Sampler> sampler = MustCreate(UnitBox(2), options);
    ASSERT_TRUE(sampler.ok());
    std::size_t emitted = 0;
    absl::Status status = sampler->Run(
        [&](const PointBatch& batch) {
          emitted += batch.size();
          return true;
        },
        [] { return true; });
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    EXPECT_LT(emitted, 1000000u) << MethodName(method);
  }
}

// The process's resident bytes (/proc/self/statm), or -1 where unreadable.
double ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  unsigned long size = 0, resident = 0;
  const int read = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (read != 2) return -1;
  return static_cast<double>(resident) * 4096;
}

TEST(SamplerTest, StopIsPolledWhileABigGridIsFilled) {
  // A grid of 1.4 GB (r = 1.5e-4 over the unit square: 9 428^2 cells of 16
  // bytes) takes a second or more to fill, and a big service request's
  // took over 30 s: the stop predicate must be asked before most of it is
  // touched, not after. Stop at the first poll, and see how much memory the
  // run had touched by then.
  SamplerOptions options;
  options.radius = 1.5e-4;
  options.max_memory_bytes = std::uint64_t{4} << 30;
  absl::StatusOr<Sampler> sampler = MustCreate(UnitBox(2), options);
  ASSERT_TRUE(sampler.ok());
  const double before = ResidentBytes();
  if (before < 0) GTEST_SKIP() << "no /proc/self/statm here";
  double touched = -1;
  std::size_t emitted = 0;
  const absl::Status status = sampler->Run(
      [&](const PointBatch& batch) {
        emitted += batch.size();
        return true;
      },
      [&] {
        if (touched < 0) touched = ResidentBytes() - before;
        return true;
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_EQ(emitted, 0u);
  // One 16 MB chunk (FillPolling), with room for huge-page rounding.
  EXPECT_LT(touched, 64e6) << absl::StrFormat(
      "the first poll came after %.0f MB of the grid were filled",
      touched / 1e6);
}

// ---------------------------------------------------------------------------
// Ids and names.

TEST(SamplerTest, PointIdFoldsNegativeZeroIntoZero) {
  const double a[3] = {-0.0, 0.5, -0.0};
  const double b[3] = {0.0, 0.5, 0.0};
  EXPECT_EQ(PointId(1, 0, a, 2), PointId(1, 0, b, 2));
  EXPECT_EQ(PointId(1, 0, a, 3), PointId(1, 0, b, 3));
}

TEST(SamplerTest, PointIdDependsOnSeedLayerAndEveryCoordinate) {
  const double p[3] = {0.25, 0.5, 0.75};
  const std::uint64_t base = PointId(1, 2, p, 3);
  EXPECT_NE(PointId(3, 2, p, 3), base);
  EXPECT_NE(PointId(1, 3, p, 3), base);
  for (int a = 0; a < 3; ++a) {
    double q[3] = {p[0], p[1], p[2]};
    q[a] = std::nextafter(q[a], 1.0);  // One ulp is enough.
    EXPECT_NE(PointId(1, 2, q, 3), base) << "axis " << a;
  }
  // Swapped coordinates are another place.
  const double swapped[3] = {0.5, 0.25, 0.75};
  EXPECT_NE(PointId(1, 2, swapped, 3), base);
}

TEST(SamplerTest, PointIdIn2DIgnoresTheThirdValue) {
  const double a[3] = {0.25, 0.5, 1};
  const double b[3] = {0.25, 0.5, 2};
  EXPECT_EQ(PointId(1, 0, a, 2), PointId(1, 0, b, 2));
  EXPECT_NE(PointId(1, 0, a, 3), PointId(1, 0, b, 3));
}

// Classic 2D, and dense 2D with gap filling, keep taken marks, 16 bits a
// cell, where coordinates are within about 1e6 r; the estimate counts them
// there and only there.
TEST(SamplerTest, EstimateCountsTheTakenMarksOfTwoD) {
  SamplerOptions options;
  options.radius = 1;
  auto bytes = [&](Method method, bool fill_gaps, double offset) {
    options.method = method;
    options.fill_gaps = fill_gaps;
    return EstimatedRunBytes(
        *Box::Create(2, {offset, 0, 0}, {offset + 1000, 1000, 0}), options);
  };
  // Cells just under r / sqrt(2) a side: 1415 per axis.
  const double cells = 1415.0 * 1415.0;
  // Dense without gap filling keeps none.
  const double none = bytes(Method::kPoissonDense, false, 0);
  for (const auto& [method, fill_gaps] :
       {std::pair{Method::kPoissonClassic, true},
        std::pair{Method::kPoissonClassic, false},
        std::pair{Method::kPoissonDense, true}}) {
    SCOPED_TRACE(
        absl::StrFormat("%s, fill_gaps %d", MethodName(method), fill_gaps));
    const double taken = bytes(method, fill_gaps, 0) - none;
    EXPECT_GE(taken, 2 * cells);
    EXPECT_LE(taken, 2.05 * cells);
    // At 1e8 r the doubles step by 1.5e-8 r: no taken marks, nothing
    // counted.
    EXPECT_EQ(bytes(method, fill_gaps, 1e8),
              bytes(Method::kPoissonDense, false, 1e8));
  }
}

// Taken marks decide most 2D candidates (classic, and dense with gap
// filling) and gap pieces up to about 1e6 r from the origin, where the
// doubles step by 2e-10 r; past that the runs go without them. Either side
// of the switch the set is inside, apart and maximal.
TEST(SamplerTest, TwoDFarFromTheOriginIsApartAndMaximal) {
  for (const Method method : kPoissonMethods) {
    for (const double offset : {0.0, 9e5, 4e6, 1e9}) {
      SCOPED_TRACE(
          absl::StrFormat("%s, offset %g", MethodName(method), offset));
      const Box box =
          *Box::Create(2, {offset, -offset, 0}, {offset + 60, -offset + 60, 0});
      SamplerOptions options = PoissonOptions(method);
      options.radius = 1;
      const PointSet points = RunToEnd(box, options);
      ASSERT_TRUE(points.status.ok()) << points.status;
      EXPECT_GT(points.size(), 2500u);
      for (std::size_t i = 0; i < points.size(); ++i) {
        ASSERT_TRUE(box.Contains(&points.coords[i * 2]));
      }
      absl::StatusOr<MinDistanceReport> report =
          CheckMinDistance(points.coords, 2, options.radius);
      ASSERT_TRUE(report.ok()) << report.status();
      EXPECT_EQ(report->violations, 0u);
      // 1e6 probes, about 280 per unit of area.
      absl::StatusOr<CoverageReport> coverage =
          MeasureCoverage(points.coords, box, options.radius, 1000000, 7);
      ASSERT_TRUE(coverage.ok()) << coverage.status();
      EXPECT_LE(coverage->uncovered_fraction(), 1e-5);
    }
  }
}

// Classic 2D fills its gaps at the peaks of the distance to the points
// (FillCellAtPeaks), exactly: not one of 2 million probes over a 60 x 60
// box at r = 1 (560 per unit of area) is at least r from every point, near
// the origin (taken marks) and at 4e6 (past 2^21 r: cover marks only, so
// the open pieces are half-cells), over several seeds. Splitting cells to pieces 1/64 of a cell wide and testing one
// random place in each (algorithm_version 6) left one such probe in four
// of these six runs.
TEST(SamplerTest, ClassicTwoDGapsAreFilledExactly) {
  for (const double offset : {0.0, 4e6}) {
    for (const std::uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE(absl::StrFormat("offset %g, seed %d", offset, seed));
      const Box box =
          *Box::Create(2, {offset, -offset, 0}, {offset + 60, -offset + 60, 0});
      SamplerOptions options = PoissonOptions(Method::kPoissonClassic);
      options.radius = 1;
      options.seed = seed;
      const PointSet points = RunToEnd(box, options);
      ASSERT_TRUE(points.status.ok()) << points.status;
      absl::StatusOr<CoverageReport> coverage =
          MeasureCoverage(points.coords, box, options.radius, 2000000, 11);
      ASSERT_TRUE(coverage.ok()) << coverage.status();
      EXPECT_EQ(coverage->probes, 2000000u);
      EXPECT_EQ(coverage->uncovered, 0u);
    }
  }
}

// The radius range's ends, where classic 2D's peak search (BoxMayHoldPlace2d,
// FarthestPlace2d) multiplied three lengths: at r = 1e103 or 1e-120 the
// circumcentres overflowed or underflowed, cells with room were taken for
// full, and 55 of 400 000 probes over a 20 r x 20 r box were uncovered
// (1.4e-4), each up to 1.1 r from every point. The search now works in
// units of a power of two near the box's size: the same bits at r = 1.
TEST(SamplerTest, ClassicTwoDIsMaximalAtTheEndsOfTheRadiusRange) {
  for (const double radius : {1e-149, 1e-120, 1e103, 1e149}) {
    SCOPED_TRACE(absl::StrFormat("r = %g", radius));
    const Box box = *Box::Create(2, {0, 0, 0}, {20 * radius, 20 * radius, 0});
    SamplerOptions options = PoissonOptions(Method::kPoissonClassic);
    options.radius = radius;
    const PointSet points = RunToEnd(box, options);
    ASSERT_TRUE(points.status.ok()) << points.status;
    EXPECT_GT(points.size(), 250u);
    absl::StatusOr<CoverageReport> coverage =
        MeasureCoverage(points.coords, box, options.radius, 400000, 7);
    ASSERT_TRUE(coverage.ok()) << coverage.status();
    EXPECT_EQ(coverage->uncovered, 0u);
  }
}

// Without gap filling a run grows from one seed; points of its own layer
// already placed (a neighbouring tile's) are in its grid, and the seed
// must keep clear of them as every other point does. It was placed 0.27 r
// from one (and in 2D classic overwrote it in the grid).
TEST(SamplerTest, WithoutGapFillingTheSeedKeepsClearOfSameLayerPoints) {
  for (const int dims : {2, 3}) {
    for (const Method method : kPoissonMethods) {
      for (const bool variable : {false, true}) {
        SCOPED_TRACE(absl::StrFormat("%dD %s variable %d", dims,
                                     MethodName(method), variable));
        const Box box = *Box::Create(dims, {0, 0, 0}, {10, 10, 10});
        SamplerOptions options = PoissonOptions(method);
        options.radius = 1;
        options.fill_gaps = false;
        Obstacle placed;
        placed.center = {0.3, 0.3, 0.3};
        placed.radius = 1;
        placed.same_layer = true;
        options.obstacles.push_back(placed);
        if (variable) {
          options.density = std::make_shared<const Raster>(
              *Raster::FromRaw(RasterFormat::kU8, 1, 1, {std::uint8_t{128}},
                               RasterRect{0, 0, 10, 10}, 1 << 20));
          options.radius_min = 1;
          options.radius_max = 2;
        }
        const PointSet points = RunToEnd(box, options);
        ASSERT_TRUE(points.status.ok()) << points.status;
        // About 90 points in 2D, 700 in 3D; 40 and 200 with variable radius.
        ASSERT_GT(points.size(), 20u);
        for (std::size_t i = 0; i < points.size(); ++i) {
          double d2 = 0;
          for (int a = 0; a < dims; ++a) {
            const double d = points.coords[i * dims + a] - placed.center[a];
            d2 += d * d;
          }
          const double keep = std::max(placed.radius, points.radius[i]);
          ASSERT_GE(d2, keep * keep) << "point " << i;
        }
      }
    }
  }
}

TEST(SamplerTest, MethodNamesAreStable) {
  EXPECT_STREQ(MethodName(Method::kPoissonDense), "poisson_dense");
  EXPECT_STREQ(MethodName(Method::kPoissonClassic), "poisson_classic");
  EXPECT_STREQ(MethodName(Method::kJitteredGrid), "jittered_grid");
  EXPECT_STREQ(MethodName(Method::kUniform), "uniform");
}

// ---------------------------------------------------------------------------
// Golden digests.

struct GoldenCase {
  const char* name;
  int dims;
  Method method;
  double
      param;  // Radius (Poisson), cell size (jittered grid), count (uniform).
  std::uint64_t digest;
};

SamplerOptions GoldenOptions(const GoldenCase& golden) {
  SamplerOptions options;
  options.method = golden.method;
  options.seed = 42;
  switch (golden.method) {
    case Method::kPoissonDense:
    case Method::kPoissonClassic:
      options.radius = golden.param;
      break;
    case Method::kJitteredGrid:
      options.cell_size = golden.param;
      break;
    case Method::kUniform:
      options.count = static_cast<std::uint64_t>(golden.param);
      break;
  }
  return options;
}

const char* MethodEnumName(Method method) {
  switch (method) {
    case Method::kPoissonDense:
      return "kPoissonDense";
    case Method::kPoissonClassic:
      return "kPoissonClassic";
    case Method::kJitteredGrid:
      return "kJitteredGrid";
    case Method::kUniform:
      return "kUniform";
  }
  return "?";
}

// The algorithm's output for version kAlgorithmVersion, pinned bit for bit
// (count, coordinates, radii, layers and ids; see Digest in point_set.h).
// These literals must be equal in every build preset (dev, release, tsan),
// on every SIMD path and on every machine. Change them only together with a
// bump of kAlgorithmVersion in sampler/version.h.
constexpr std::uint32_t kGoldenVersion = 9;
const GoldenCase kGoldenCases[] = {
    {"dense 2D r=0.05", 2, Method::kPoissonDense, 0.05, 0xd7cf773c2f9149cdULL},
    {"classic 2D r=0.05", 2, Method::kPoissonClassic, 0.05,
     0x6d48b314a2e9303cULL},
    {"dense 3D r=0.15", 3, Method::kPoissonDense, 0.15, 0x68cac7c9d11b85ecULL},
    {"classic 3D r=0.15", 3, Method::kPoissonClassic, 0.15,
     0x1aa708f09b03365fULL},
    {"jittered 2D cell=0.05", 2, Method::kJitteredGrid, 0.05,
     0x3f9adcf1fd7bdf7cULL},
    {"uniform 3D count=500", 3, Method::kUniform, 500, 0x21be022b37a0f033ULL},
};

TEST(SamplerTest, GoldenDigestsPinTheAlgorithm) {
  ASSERT_EQ(kAlgorithmVersion, kGoldenVersion)
      << "the algorithm version changed: recompute the golden digests";
  std::string actual_table;
  bool all_match = true;
  for (const GoldenCase& golden : kGoldenCases) {
    for (SimdLevel level : SupportedSimdLevels()) {
      SamplerOptions options = GoldenOptions(golden);
      options.simd = level;
      const PointSet points = RunToEnd(UnitBox(golden.dims), options);
      const std::uint64_t digest = Digest(points);
      EXPECT_EQ(digest, golden.digest)
          << golden.name << " (" << SimdLevelName(level)
          << "): " << points.size() << " points, digest "
          << absl::StrFormat("0x%016xULL", digest);
      if (level != SimdLevel::kScalar) continue;
      all_match = all_match && digest == golden.digest;
      absl::StrAppendFormat(
          &actual_table, "    {\"%s\", %d, Method::%s, %g, 0x%016xULL},\n",
          golden.name, golden.dims, MethodEnumName(golden.method), golden.param,
          digest);
    }
  }
  if (!all_match) {
    std::printf("Actual golden digests for kAlgorithmVersion %u:\n%s",
                kAlgorithmVersion, actual_table.c_str());
  }
}

}  // namespace
}  // namespace scatter::sampler

namespace scatter::sampler {
namespace {

// Collects yaw and scale as well as positions and ids.
struct Attributes {
  std::vector<double> coords, yaw, scale;
  std::vector<std::uint64_t> id;
};

Attributes RunWithAttributes(const SamplerOptions& options) {
  const Box box = *Box::Create(2, {0, 0, 0}, {1, 1, 0});
  absl::StatusOr<Sampler> sampler = Sampler::Create(box, options);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  Attributes out;
  EXPECT_TRUE(sampler
                  ->Run([&](const PointBatch& b) {
                    out.coords.insert(out.coords.end(), b.coords.begin(),
                                      b.coords.end());
                    out.yaw.insert(out.yaw.end(), b.yaw.begin(), b.yaw.end());
                    out.scale.insert(out.scale.end(), b.scale.begin(),
                                     b.scale.end());
                    out.id.insert(out.id.end(), b.id.begin(), b.id.end());
                    return true;
                  })
                  .ok());
  return out;
}

TEST(AttributeTest, YawAndScaleStayInRangeAndNeverMovePoints) {
  SamplerOptions options;
  options.radius = 0.02;
  options.seed = 3;
  const Attributes plain = RunWithAttributes(options);
  options.scale_min = 0.5;
  options.scale_max = 2;
  const Attributes scaled = RunWithAttributes(options);
  ASSERT_GT(plain.id.size(), 1000u);
  // Positions and ids do not depend on the attribute ranges.
  EXPECT_EQ(plain.coords, scaled.coords);
  EXPECT_EQ(plain.id, scaled.id);
  EXPECT_EQ(plain.yaw, scaled.yaw);
  double yaw_sum = 0, scale_sum = 0;
  for (std::size_t i = 0; i < scaled.id.size(); ++i) {
    ASSERT_GE(scaled.yaw[i], 0);
    ASSERT_LT(scaled.yaw[i], 2 * 3.14159265358979323846);
    ASSERT_GE(scaled.scale[i], 0.5);
    ASSERT_LE(scaled.scale[i], 2);
    EXPECT_EQ(plain.scale[i], 1);
    yaw_sum += scaled.yaw[i];
    scale_sum += scaled.scale[i];
  }
  // Spread over their ranges (means of ~1500 uniform draws).
  const double n = static_cast<double>(scaled.id.size());
  EXPECT_NEAR(yaw_sum / n, 3.14159, 0.15);
  EXPECT_NEAR(scale_sum / n, 1.25, 0.05);
}

TEST(AttributeTest, BadScaleRangeIsInvalidArgument) {
  const Box box = *Box::Create(2, {0, 0, 0}, {1, 1, 0});
  SamplerOptions options;
  options.scale_min = 2;
  options.scale_max = 1;
  EXPECT_EQ(Sampler::Create(box, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.scale_min = 0;
  options.scale_max = 1;
  EXPECT_EQ(Sampler::Create(box, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace scatter::sampler
