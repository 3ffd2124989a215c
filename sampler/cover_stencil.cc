#include "sampler/cover_stencil.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

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

}  // namespace

const CoverStencil2d& CoverStencil2d::Get() {
  static const CoverStencil2d* const stencil = new CoverStencil2d(Build());
  return *stencil;
}

}  // namespace scatter::sampler::internal
