#include "sampler/cover_stencil.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>

#include "gtest/gtest.h"

namespace scatter::sampler::internal {
namespace {

// The stencils are checked against a brute force over every piece near the
// centre's cell: a piece is marked exactly when it lies within the radius
// of every centre in the class (its farthest point from the class box,
// per axis the larger of the two end gaps, is closer than the radius).
// Both are in piece units; the radius is r over the piece side, without
// the grid's shrink, which only makes the true radius larger.

// Farthest distance along one axis from [c0, c1] to the piece [i, i + 1].
double Farthest(double c0, double c1, int i) {
  return std::max(i + 1 - c0, c1 - i);
}

// Squared farthest distance from a centre in 3D class q (per axis
// [q, q + 1] * kSplit / kClasses) to the quarter-cell `piece`.
double Farthest2(const int* q, const int* piece) {
  constexpr double kScale =
      static_cast<double>(CoverStencil3d::kSplit) / CoverStencil3d::kClasses;
  double d2 = 0;
  for (int a = 0; a < 3; ++a) {
    const double f = Farthest(q[a] * kScale, (q[a] + 1) * kScale, piece[a]);
    d2 += f * f;
  }
  return d2;
}

// floor(a / b) for b > 0.
int FloorDiv(int a, int b) { return a >= 0 ? a / b : -((b - 1 - a) / b); }

TEST(CoverStencilTest, ThreeDMarksExactlyTheQuarterCellsEveryCentreCovers) {
  const CoverStencil3d& s = CoverStencil3d::Get();
  constexpr int kQ = CoverStencil3d::kClasses;
  constexpr int kS = CoverStencil3d::kSplit;
  const double radius = kS * std::sqrt(3.0);
  ASSERT_EQ(s.begin.size(), static_cast<std::size_t>(kQ * kQ * kQ) + 1);
  std::size_t marked = 0;
  for (int qz = 0; qz < kQ; ++qz) {
    for (int qy = 0; qy < kQ; ++qy) {
      for (int qx = 0; qx < kQ; ++qx) {
        const int q[3] = {qx, qy, qz};
        const std::size_t k =
            static_cast<std::size_t>((qz * kQ + qy) * kQ + qx);
        std::map<std::tuple<int, int, int>, std::uint64_t> got;
        for (std::uint32_t e = s.begin[k]; e < s.begin[k + 1]; ++e) {
          const CoverStencil3d::Entry& entry = s.entries[e];
          ASSERT_NE(entry.mask, 0u);
          ASSERT_LE(std::max({std::abs(int{entry.dx}), std::abs(int{entry.dy}),
                              std::abs(int{entry.dz})}),
                    s.reach);
          auto [it, fresh] =
              got.emplace(std::tuple{entry.dx, entry.dy, entry.dz}, entry.mask);
          ASSERT_TRUE(fresh) << "a cell listed twice in class " << k;
        }
        std::map<std::tuple<int, int, int>, std::uint64_t> want;
        // Quarter-cells -8 .. 11 along each axis: beyond the ball's reach.
        for (int l = -8; l <= 11; ++l) {
          for (int j = -8; j <= 11; ++j) {
            for (int i = -8; i <= 11; ++i) {
              const int piece[3] = {i, j, l};
              const double d2 = Farthest2(q, piece);
              // Within 1e-9 of the radius either answer is right.
              if (std::abs(std::sqrt(d2) - radius) < 1e-6) continue;
              if (d2 >= radius * radius) continue;
              const int c[3] = {FloorDiv(i, kS), FloorDiv(j, kS),
                                FloorDiv(l, kS)};
              const int bit = (i - kS * c[0]) +
                              kS * ((j - kS * c[1]) + kS * (l - kS * c[2]));
              want[{c[0], c[1], c[2]}] |= std::uint64_t{1} << bit;
            }
          }
        }
        for (const auto& [cell, mask] : want) {
          const std::uint64_t have = got.count(cell) ? got[cell] : 0;
          EXPECT_EQ(have & mask, mask)
              << "class " << k << " leaves covered quarter-cells unmarked";
        }
        for (const auto& [cell, mask] : got) {
          const std::uint64_t allowed = want.count(cell) ? want[cell] : 0;
          // Bits outside `want` may only be the ones within 1e-6 of the
          // radius, which the brute force skipped; recount those exactly.
          std::uint64_t extra = mask & ~allowed;
          for (int bit = 0; bit < 64 && extra != 0; ++bit) {
            if (((extra >> bit) & 1) == 0) continue;
            const int piece[3] = {std::get<0>(cell) * kS + bit % kS,
                                  std::get<1>(cell) * kS + bit / kS % kS,
                                  std::get<2>(cell) * kS + bit / (kS * kS)};
            EXPECT_LT(Farthest2(q, piece), radius * radius)
                << "class " << k << " marks a quarter-cell some centre "
                << "of the class does not cover";
            extra &= ~(std::uint64_t{1} << bit);
          }
          marked += static_cast<std::size_t>(__builtin_popcountll(mask));
        }
        if (testing::Test::HasFailure()) return;
      }
    }
  }
  // Below the ball's volume in quarter-cells, 4/3 pi (4 sqrt 3)^3 = 1393,
  // by the rim that the class's extent and the pieces' size cost (889 per
  // class when this was written).
  const double per_class = static_cast<double>(marked) / (kQ * kQ * kQ);
  EXPECT_GT(per_class, 850);
  EXPECT_LT(per_class, 1393);
}

TEST(CoverStencilTest, TwoDMarksOnlyHalfCellsEveryCentreCovers) {
  const CoverStencil2d& s = CoverStencil2d::Get();
  constexpr int kQ = CoverStencil2d::kClasses;
  const double radius = 2 * std::sqrt(2.0);
  for (int parity = 0; parity < 4; ++parity) {
    for (int qy = 0; qy < kQ; ++qy) {
      for (int qx = 0; qx < kQ; ++qx) {
        const std::size_t k =
            static_cast<std::size_t>(((parity * kQ) + qy) * kQ + qx);
        // The centre's class box in half-cell units from its cell's corner.
        const double c0[2] = {(parity & 1) + static_cast<double>(qx) / kQ,
                              (parity >> 1) + static_cast<double>(qy) / kQ};
        const double c1[2] = {c0[0] + 1.0 / kQ, c0[1] + 1.0 / kQ};
        int count = 0;
        for (std::uint32_t e = s.begin[k]; e < s.begin[k + 1]; ++e) {
          const CoverStencil2d::Entry& entry = s.entries[e];
          for (int bit = 0; bit < 4; ++bit) {
            if (((entry.mask >> bit) & 1) == 0) continue;
            const int piece[2] = {2 * entry.dx + (bit & 1),
                                  2 * entry.dy + (bit >> 1)};
            double d2 = 0;
            for (int a = 0; a < 2; ++a) {
              const double f = Farthest(c0[a], c1[a], piece[a]);
              d2 += f * f;
            }
            EXPECT_LT(d2, radius * radius) << "class " << k;
            ++count;
          }
        }
        // The half-cells around the centre's own are always covered:
        // 2 sqrt 2 reaches every place of the 3 x 3 block around it.
        EXPECT_GE(count, 9) << "class " << k;
      }
    }
  }
}

// Every run holds exactly the pieces of its row that lie within the
// radius of every centre in the class (up to the stencil's 1e-6 shrink),
// and the rows past kReach hold none.
TEST(CoverStencilTest, TakenRunsHoldExactlyThePiecesEveryCentreCovers) {
  const TakenStencil2d& s = TakenStencil2d::Get();
  constexpr int kQ = TakenStencil2d::kClasses;
  constexpr double kStep = 1.0 / kQ;
  const double radius = TakenStencil2d::Radius();
  ASSERT_GT(radius, 5.6);
  ASSERT_LT(radius, 5.7);
  std::size_t marked = 0;
  for (int qy = 0; qy < kQ; ++qy) {
    for (int qx = 0; qx < kQ; ++qx) {
      const TakenStencil2d::Run* rows = s.Rows(qx, qy);
      // Each run's mask holds its pieces from x0 on, and nothing when empty.
      for (int k = 0; k < TakenStencil2d::kRows; ++k) {
        const unsigned want = rows[k].x0 > rows[k].x1
                                  ? 0u
                                  : (1u << (rows[k].x1 - rows[k].x0 + 1)) - 1;
        EXPECT_EQ(rows[k].mask, want) << qx << ", " << qy << ", row " << k;
      }
      for (int dy = -10; dy <= 10; ++dy) {
        const int k = dy + TakenStencil2d::kReach;
        const bool listed = k >= 0 && k < TakenStencil2d::kRows;
        for (int dx = -10; dx <= 10; ++dx) {
          const double fx = Farthest(qx * kStep, (qx + 1) * kStep, dx);
          const double fy = Farthest(qy * kStep, (qy + 1) * kStep, dy);
          const double d = std::sqrt(fx * fx + fy * fy);
          const bool in_run = listed && rows[k].x0 <= dx && dx <= rows[k].x1;
          marked += in_run;
          if (std::abs(d - radius) < 1e-5 * radius) continue;
          EXPECT_EQ(in_run, d < radius)
              << "class (" << qx << ", " << qy << "), piece (" << dx << ", "
              << dy << "), farthest " << d;
        }
      }
    }
  }
  // About the disk's area less a ring of pieces: many marks per class.
  EXPECT_GT(marked, static_cast<std::size_t>(kQ * kQ * 60));
}

}  // namespace
}  // namespace scatter::sampler::internal
