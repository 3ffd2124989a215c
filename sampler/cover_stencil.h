#ifndef SCATTER_SAMPLER_COVER_STENCIL_H_
#define SCATTER_SAMPLER_COVER_STENCIL_H_

// Internal: which pieces of the grid's cells a disk (ball) of radius r covers
// whole, precomputed: half-cells in 2D, quarter-cells in 3D.
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

// The same in 3D, finer: per cell (side just under r / sqrt(3)), one bit per
// quarter-cell, 64 of them, bit qx + 4 qy + 16 qz. In a finished dense 3D
// set, 22 % of the cells have an octant no single ball covers, which the
// gap filler must then search from the octant down; 7.5 % have such a
// quarter-cell, and with this stencil's classes (16 per axis; 8 cost 15 %
// more instructions in all) 14 %, searched only in their unmarked
// quarters. The class is where the centre sits in its cell.
struct CoverStencil3d {
  static constexpr int kClasses = 16;
  static constexpr int kSplit = 4;  // Quarter-cells per cell and axis.

  struct Entry {
    std::uint64_t mask;  // Quarter-cells of the cell (dx, dy, dz) covered.
    std::int8_t dx;      // Cell offset from the centre's cell.
    std::int8_t dy;
    std::int8_t dz;
  };

  // Entries for class (qx, qy, qz): entries[begin[k]] .. entries[begin[k+1]]
  // with k = (qz * kClasses + qy) * kClasses + qx.
  std::vector<Entry> entries;
  std::vector<std::uint32_t> begin;
  int reach = 0;  // Largest |dx|, |dy| or |dz| in any entry.

  static const CoverStencil3d& Get();
};

// The taken marks' stencil (classic 2D; poisson_impl.h, MarkTaken): one
// bit per piece a quarter cell a side, kept row by row over the whole grid.
// In piece units the radius is 4 sqrt(2) / kCellShrink. For a centre in
// class (qx, qy) of its piece (each axis of the piece cut kClasses times),
// per row of pieces from kReach below the centre's row to kReach above,
// the run of pieces (offsets from the centre's piece) that the disk holds
// whole wherever in the class the centre lies. The radius is shrunk by a
// part in 2e6, far more than coordinates round by in piece units, so a
// marked piece is always inside the disk.
struct TakenStencil2d {
  static constexpr int kClasses = 16;
  static constexpr int kReach = 6;
  static constexpr int kRows = 2 * kReach + 1;
  struct Run {
    std::int8_t x0, x1;  // Empty when x0 > x1.
    // Bits 0 to x1 - x0 set: the run's pieces from x0 on; 0 when empty.
    std::uint16_t mask;
  };
  // kRows runs per class, at (qy * kClasses + qx) * kRows.
  std::vector<Run> runs;

  const Run* Rows(int qx, int qy) const {
    return &runs[static_cast<std::size_t>((qy * kClasses + qx) * kRows)];
  }
  // The radius in piece units, before the shrink.
  static double Radius();

  static const TakenStencil2d& Get();
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_COVER_STENCIL_H_
