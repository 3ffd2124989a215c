#include "sampler/cover_stencil.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "sampler/grid_common.h"

namespace scatter::sampler::internal {
namespace {

CoverStencil2d Build() {
  constexpr int kQ = CoverStencil2d::kClasses;
  // The radius in half-cell units is 2 sqrt(2) / kCellShrink; the plain
  // 2 sqrt(2), shrunk a little more, is safely below it whatever rounding
  // does to a centre's class.
  const double radius = 2 * std::sqrt(2.0) * (1 - 1e-9);
  const double r2 = radius * radius;
  CoverStencil2d s;
  for (int parity = 0; parity < 4; ++parity) {
    const int px = parity & 1;
    const int py = parity >> 1;
    for (int qy = 0; qy < kQ; ++qy) {
      for (int qx = 0; qx < kQ; ++qx) {
        s.begin.push_back(static_cast<std::uint32_t>(s.entries.size()));
        // Centre in [qx, qx + 1] / kQ x [qy, qy + 1] / kQ of its half-cell;
        // half-cell (i, j) relative to it spans [i, i + 1] x [j, j + 1].
        const double c0x = static_cast<double>(qx) / kQ;
        const double c1x = static_cast<double>(qx + 1) / kQ;
        const double c0y = static_cast<double>(qy) / kQ;
        const double c1y = static_cast<double>(qy + 1) / kQ;
        std::map<std::pair<int, int>, std::uint8_t> cells;
        for (int j = -4; j <= 4; ++j) {
          for (int i = -4; i <= 4; ++i) {
            const double fx = std::max(i + 1 - c0x, c1x - i);
            const double fy = std::max(j + 1 - c0y, c1y - j);
            if (fx * fx + fy * fy >= r2) continue;
            // Half-cell index px + i from the cell's first half-cell.
            const int hx = px + i;
            const int hy = py + j;
            const int cx = hx >= 0 ? hx / 2 : -((1 - hx) / 2);
            const int cy = hy >= 0 ? hy / 2 : -((1 - hy) / 2);
            const int bit = (hx - 2 * cx) | ((hy - 2 * cy) << 1);
            cells[{cy, cx}] |= static_cast<std::uint8_t>(1u << bit);
          }
        }
        for (const auto& [cell, mask] : cells) {
          s.entries.push_back({static_cast<std::int8_t>(cell.second),
                               static_cast<std::int8_t>(cell.first), mask});
          s.reach =
              std::max({s.reach, std::abs(cell.first), std::abs(cell.second)});
        }
      }
    }
  }
  s.begin.push_back(static_cast<std::uint32_t>(s.entries.size()));
  return s;
}

// a / b rounded down, for b > 0.
int FloorDiv(int a, int b) { return a >= 0 ? a / b : -((b - 1 - a) / b); }

// In 3D, along one axis and in quarter-cell units: class q spans
// [q, q + 1] * kSplit / kClasses of its cell, quarter-cell i spans [i, i + 1].
double ClassLo3d(int q) {
  return static_cast<double>(q) * CoverStencil3d::kSplit /
         CoverStencil3d::kClasses;
}

// Farthest distance from a centre anywhere in class q to quarter-cell i.
double Farthest3d(int q, int i) {
  return std::max(i + 1 - ClassLo3d(q), ClassLo3d(q + 1) - i);
}

// The quarter-cells i in [lo, hi] within sqrt(rem) of every centre of class
// q form one run, i > c1 - w and i + 1 < c0 + w with [c0, c1] the class's
// extent and w = sqrt(rem): [*i0, *i1], false when it is empty. The exact
// test settles the ends, so rounding in w cannot widen it.
bool CoveredRun(int q, double rem, int lo, int hi, int* i0, int* i1) {
  auto covered = [&](int i) {
    const double f = Farthest3d(q, i);
    return f * f < rem;
  };
  const double w = std::sqrt(rem);
  int a = static_cast<int>(std::floor(ClassLo3d(q + 1) - w)) + 1;
  int b = static_cast<int>(std::ceil(ClassLo3d(q) + w)) - 2;
  while (a - 1 >= lo && covered(a - 1)) --a;
  while (a <= b && !covered(a)) ++a;
  while (b + 1 <= hi && covered(b + 1)) ++b;
  while (b >= a && !covered(b)) --b;
  *i0 = a;
  *i1 = b;
  return a <= b;
}

CoverStencil3d Build3d() {
  constexpr int kQ = CoverStencil3d::kClasses;
  constexpr int kS = CoverStencil3d::kSplit;
  // In quarter-cell units the radius is 4 sqrt(3) / kCellShrink; as in 2D,
  // the plain 4 sqrt(3), shrunk a little more, is safely below it.
  const double radius = kS * std::sqrt(3.0) * (1 - 1e-9);
  const double r2 = radius * radius;
  // A ball reaches at most this many quarter-cells past its centre's:
  // 4 sqrt(3) < 7.
  constexpr int kReach = 7;
  // A centre's quarter-cell index is 0 .. kS - 1 along each axis, so
  // quarter-cells -kReach .. kS - 1 + kReach are all a ball can reach.
  constexpr int kLo = -kReach, kHi = kS - 1 + kReach;
  // Per cell offset -kCells .. kCells along each axis, the mask built so far.
  constexpr int kCells = (kReach + kS - 1) / kS;
  constexpr int kSide = 2 * kCells + 1;
  // Only the classes in the lower half of the cell along every axis are
  // computed; the others are their mirror images (below).
  constexpr int kH = kQ / 2;
  CoverStencil3d half;
  std::vector<std::uint64_t> cells(kSide * kSide * kSide);
  auto at = [&](int cx, int cy, int cz) -> std::uint64_t& {
    return cells[static_cast<std::size_t>(
        ((cz + kCells) * kSide + cy + kCells) * kSide + cx + kCells)];
  };
  for (int qz = 0; qz < kH; ++qz) {
    for (int qy = 0; qy < kH; ++qy) {
      for (int qx = 0; qx < kH; ++qx) {
        half.begin.push_back(static_cast<std::uint32_t>(half.entries.size()));
        std::fill(cells.begin(), cells.end(), 0);
        for (int l = kLo; l <= kHi; ++l) {
          const double fz = Farthest3d(qz, l);
          if (fz * fz >= r2) continue;
          for (int j = kLo; j <= kHi; ++j) {
            const double fy = Farthest3d(qy, j);
            const double rem = r2 - fz * fz - fy * fy;
            if (rem <= 0) continue;
            int i0 = 0, i1 = 0;
            if (!CoveredRun(qx, rem, kLo, kHi, &i0, &i1)) continue;
            const int cy = FloorDiv(j, kS);
            const int cz = FloorDiv(l, kS);
            const int shift = kS * ((j - kS * cy) + kS * (l - kS * cz));
            for (int cx = FloorDiv(i0, kS); cx <= FloorDiv(i1, kS); ++cx) {
              const int lo = std::max(i0, kS * cx) - kS * cx;
              const int hi = std::min(i1, kS * cx + kS - 1) - kS * cx;
              const std::uint64_t bits =
                  ((std::uint64_t{2} << hi) - (std::uint64_t{1} << lo))
                  << shift;
              at(cx, cy, cz) |= bits;
            }
          }
        }
        // In (z, y, x) order of the offsets.
        for (int cz = -kCells; cz <= kCells; ++cz) {
          for (int cy = -kCells; cy <= kCells; ++cy) {
            for (int cx = -kCells; cx <= kCells; ++cx) {
              const std::uint64_t mask = at(cx, cy, cz);
              if (mask == 0) continue;
              half.entries.push_back({mask, static_cast<std::int8_t>(cx),
                                      static_cast<std::int8_t>(cy),
                                      static_cast<std::int8_t>(cz)});
            }
          }
        }
      }
    }
  }
  half.begin.push_back(static_cast<std::uint32_t>(half.entries.size()));

  // Class q along an axis is class kQ - 1 - q seen in a mirror: offsets
  // change sign, and quarter-cell k of a cell becomes kS - 1 - k, which
  // reverses the order of the bits in a nibble (x), of the nibbles in a
  // 16-bit row group (y) or of the 16-bit groups (z).
  static_assert(kS == 4 && kQ % 2 == 0);
  auto swap = [](std::uint64_t m, int shift, std::uint64_t low) {
    return ((m >> shift) & low) | ((m & low) << shift);
  };
  auto mirror_x = [&](std::uint64_t m) {
    return swap(swap(m, 1, 0x5555555555555555), 2, 0x3333333333333333);
  };
  auto mirror_y = [&](std::uint64_t m) {
    return swap(swap(m, 4, 0x0F0F0F0F0F0F0F0F), 8, 0x00FF00FF00FF00FF);
  };
  auto mirror_z = [&](std::uint64_t m) {
    return swap(swap(m, 16, 0x0000FFFF0000FFFF), 32, 0x00000000FFFFFFFF);
  };
  CoverStencil3d s;
  s.entries.reserve(half.entries.size() * 8);
  for (int qz = 0; qz < kQ; ++qz) {
    for (int qy = 0; qy < kQ; ++qy) {
      for (int qx = 0; qx < kQ; ++qx) {
        s.begin.push_back(static_cast<std::uint32_t>(s.entries.size()));
        const bool fx = qx >= kH, fy = qy >= kH, fz = qz >= kH;
        const int hx = fx ? kQ - 1 - qx : qx;
        const int hy = fy ? kQ - 1 - qy : qy;
        const int hz = fz ? kQ - 1 - qz : qz;
        const std::size_t k =
            static_cast<std::size_t>((hz * kH + hy) * kH + hx);
        for (std::uint32_t e = half.begin[k]; e < half.begin[k + 1]; ++e) {
          CoverStencil3d::Entry entry = half.entries[e];
          if (fx) {
            entry.mask = mirror_x(entry.mask);
            entry.dx = static_cast<std::int8_t>(-entry.dx);
          }
          if (fy) {
            entry.mask = mirror_y(entry.mask);
            entry.dy = static_cast<std::int8_t>(-entry.dy);
          }
          if (fz) {
            entry.mask = mirror_z(entry.mask);
            entry.dz = static_cast<std::int8_t>(-entry.dz);
          }
          s.entries.push_back(entry);
          s.reach =
              std::max({s.reach, std::abs(int{entry.dx}),
                        std::abs(int{entry.dy}), std::abs(int{entry.dz})});
        }
      }
    }
  }
  s.begin.push_back(static_cast<std::uint32_t>(s.entries.size()));
  return s;
}

TakenStencil2d BuildTaken() {
  constexpr int kQ = TakenStencil2d::kClasses;
  constexpr int kRows = TakenStencil2d::kRows;
  TakenStencil2d t;
  t.runs.assign(static_cast<std::size_t>(kQ * kQ * kRows), {1, 0, 0});
  const double radius = TakenStencil2d::Radius();
  const double r2 = radius * radius * (1 - 1e-6);
  const double q = 1.0 / kQ;
  for (int qy = 0; qy < kQ; ++qy) {
    for (int qx = 0; qx < kQ; ++qx) {
      for (int k = 0; k < kRows; ++k) {
        const int dy = k - TakenStencil2d::kReach;
        // The farthest y-distance between the class's centres and the row.
        const double fy = std::max(dy + 1 - qy * q, (qy + 1) * q - dy);
        const double rem = r2 - fy * fy;
        if (rem <= 0) continue;
        const double w = std::sqrt(rem);
        // Pieces [dx, dx + 1] whose farther x-end is within w of every
        // centre: dx + 1 - qx q <= w and (qx + 1) q - dx <= w.
        const auto x0 = static_cast<int>(std::ceil((qx + 1) * q - w));
        const auto x1 = static_cast<int>(std::floor(w - 1 + qx * q));
        if (x0 > x1) continue;
        t.runs[static_cast<std::size_t>((qy * kQ + qx) * kRows + k)] = {
            static_cast<std::int8_t>(x0), static_cast<std::int8_t>(x1),
            static_cast<std::uint16_t>((1u << (x1 - x0 + 1)) - 1)};
      }
    }
  }
  return t;
}

}  // namespace

double TakenStencil2d::Radius() { return 4 * std::sqrt(2.0) / kCellShrink; }

const TakenStencil2d& TakenStencil2d::Get() {
  static const TakenStencil2d* const stencil = new TakenStencil2d(BuildTaken());
  return *stencil;
}

const CoverStencil3d& CoverStencil3d::Get() {
  static const CoverStencil3d* const stencil = new CoverStencil3d(Build3d());
  return *stencil;
}

const CoverStencil2d& CoverStencil2d::Get() {
  static const CoverStencil2d* const stencil = new CoverStencil2d(Build());
  return *stencil;
}

}  // namespace scatter::sampler::internal
