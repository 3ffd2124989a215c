#ifndef SCATTER_SAMPLER_GAP_PIECES_H_
#define SCATTER_SAMPLER_GAP_PIECES_H_

// Internal: how the gap fill of both Poisson engines (constant and variable
// radius) splits a cell into the 2^D pieces it searches, and in which order.

#include <algorithm>
#include <cstdint>

#include "sampler/rng.h"
#include "sampler/select.h"

namespace scatter::sampler::internal {

// Where the children of (cell, piece) start in the scan order: a rotation,
// so gap points have no bias towards a corner of their cell.
inline unsigned ChildTurn(std::uint64_t gap_key, std::uint64_t cell,
                          std::uint64_t piece) {
  return static_cast<unsigned>(Mix64(gap_key ^ Mix64(cell) ^ piece) >> 61);
}

// Child `child` of the box [b0, b1) split at `mid`: bit a of `child` picks
// the upper half along axis a.
template <int D>
void ChildBox(const double* b0, const double* b1, const double* mid,
              unsigned child, double* c0, double* c1) {
  for (int a = 0; a < D; ++a) {
    // Which child comes next is data, so no branch (select.h).
    const bool upper = ((child >> a) & 1) != 0;
    c0[a] = SelectDouble(upper, mid[a], b0[a]);
    c1[a] = SelectDouble(upper, b1[a], mid[a]);
  }
}

// Half-cell `child` of the cell [u0, u1), clipped to the bounds [lo, hi);
// false when nothing of it is left.
template <int D>
bool ClippedHalfCell(const double* u0, const double* u1, const double* lo,
                     const double* hi, unsigned child, double* c0, double* c1) {
  bool empty = false;
  for (int a = 0; a < D; ++a) {
    const double mid = u0[a] + (u1[a] - u0[a]) / 2;
    const bool upper = ((child >> a) & 1) != 0;
    c0[a] = std::max(upper ? mid : u0[a], lo[a]);
    c1[a] = std::min(upper ? u1[a] : mid, hi[a]);
    empty |= !(c0[a] < c1[a]);
  }
  return !empty;
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_GAP_PIECES_H_
