#ifndef SCATTER_SAMPLER_COVER_STENCIL_H_
#define SCATTER_SAMPLER_COVER_STENCIL_H_

// Internal: which half-cells a disk covers whole, precomputed in 2D.
//
// The Poisson grid has cells of side just under r / sqrt(2) and marks, per
// cell, the four half-cells (quarters) that one disk covers whole. In
// half-cell units the radius is a constant (2 sqrt(2)), so the covered set
// depends only on where the centre sits inside its half-cell. That position
// is cut into kClasses x kClasses classes; a class's stencil lists the
// half-cells covered for *every* centre in the class, merged per cell as
// (cell offset, 4-bit mask), for each parity of the centre's half-cell
// within its cell. Marking a point is then a handful of ORs instead of a
// square root and a loop per row. Conservative: the class box costs at most
// 1/(2 kClasses) of r; those pieces are left to the gap filler, which
// checks them exactly.

#include <cstdint>
#include <vector>

namespace scatter::sampler::internal {

struct CoverStencil2d {
  static constexpr int kClasses = 16;

  struct Entry {
    std::int8_t dx;  // Cell offset from the centre's cell.
    std::int8_t dy;
    std::uint8_t mask;  // Bit (x half) | (y half) << 1.
  };

  // Entries of the stencil for half-cell parity (px, py) and class (qx, qy):
  // entries[begin[k]] .. entries[begin[k + 1]] with
  // k = ((py * 2 + px) * kClasses + qy) * kClasses + qx.
  std::vector<Entry> entries;
  std::vector<std::uint32_t> begin;
  int reach = 0;  // Largest |dx| or |dy| in any entry.

  // Built once, on first use; thread-safe.
  static const CoverStencil2d& Get();
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_COVER_STENCIL_H_
