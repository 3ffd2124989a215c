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
// the upper half along axis a. False when the child is empty: a piece one
// ulp wide (the last cell of a box can start an ulp below its end; far from
// the origin, past about 2^46 r, the deepest pieces are an ulp or two wide
// anywhere) has a midpoint that rounds to one of its ends, and a place
// drawn in the empty half would be that end, outside the half-open piece.
template <int D>
[[nodiscard]] bool ChildBox(const double* b0, const double* b1,
                            const double* mid, unsigned child, double* c0,
                            double* c1) {
  bool empty = false;
  for (int a = 0; a < D; ++a) {
    // Which child comes next is data, so no branch (select.h).
    const bool upper = ((child >> a) & 1) != 0;
    c0[a] = SelectDouble(upper, mid[a], b0[a]);
    c1[a] = SelectDouble(upper, b1[a], mid[a]);
    empty |= !(c0[a] < c1[a]);
  }
  return !empty;
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

// Whether every place of the box [b0, b1] is inside the disk (ball) of
// squared radius s2 around s or the one of squared radius t2 around t,
// with a margin, so rounding can only make it answer no. The power
// bisector (radical plane) |x - s|^2 - s2 = |x - t|^2 - t2 cuts the box into
// two convex polytopes; on each, the site of the lower power must hold the
// place farthest from it, a vertex: a box corner on that side, or where a
// box edge crosses the bisector (equal power for both). kEqual: s2 = t2,
// the plain bisector, and fewer operations (the constant-radius engine).
template <int D, bool kEqual>
bool TwoDisksCoverImpl(const double* s, double s2, const double* t, double t2,
                       const double* b0, const double* b1) {
  s2 *= 1 - 1e-9;
  t2 *= 1 - 1e-9;
  double mid[D], dir[D];
  for (int a = 0; a < D; ++a) {
    mid[a] = (s[a] + t[a]) / 2;
    dir[a] = t[a] - s[a];
  }
  // sigma(x) = (power_s(x) - power_t(x)) / 2 = (x - mid) . dir + shift.
  const double shift = (t2 - s2) / 2;
  constexpr unsigned kCorners = 1u << D;
  // Per axis and side of the box, the terms of the corners' sums.
  double ts[D][2], tt[D][2], tm[D][2];
  for (int a = 0; a < D; ++a) {
    for (int h = 0; h < 2; ++h) {
      const double x = h != 0 ? b1[a] : b0[a];
      const double es = x - s[a];
      const double et = x - t[a];
      ts[a][h] = es * es;
      tt[a][h] = et * et;
      tm[a][h] = (x - mid[a]) * dir[a];
    }
  }
  double side[kCorners];
  for (unsigned k = 0; k < kCorners; ++k) {
    double ds = ts[0][k & 1], dt = tt[0][k & 1], sigma = tm[0][k & 1];
    for (int a = 1; a < D; ++a) {
      const unsigned h = (k >> a) & 1;
      ds += ts[a][h];
      dt += tt[a][h];
      sigma += tm[a][h];
    }
    if constexpr (kEqual) {
      if (!(std::min(ds, dt) < s2)) return false;
      side[k] = sigma;
    } else {
      if (!(std::min(ds - s2, dt - t2) < 0)) return false;
      side[k] = sigma + shift;
    }
  }
  // Edges: corner k and k + (1 << a), for k without bit a.
  for (int a = 0; a < D; ++a) {
    const unsigned bit = 1u << a;
    for (unsigned k = 0; k < kCorners; ++k) {
      if ((k & bit) != 0) continue;
      const double s0 = side[k];
      const double s1 = side[k | bit];
      if ((s0 < 0) == (s1 < 0)) continue;
      // sigma changes by dir[a] per unit of x[a] along the edge, and
      // dir[a] != 0 since the sign changed.
      double ys = 0, yt = 0;
      for (int e = 0; e < D; ++e) {
        double y = SelectDouble(((k >> e) & 1) != 0, b1[e], b0[e]);
        if (e == a) y = std::min(std::max(y - s0 / dir[a], b0[a]), b1[a]);
        const double es = y - s[e];
        const double et = y - t[e];
        ys += es * es;
        yt += et * et;
      }
      if constexpr (kEqual) {
        if (!(std::max(ys, yt) < s2)) return false;
      } else {
        if (!(std::max(ys - s2, yt - t2) < 0)) return false;
      }
    }
  }
  return true;
}

// Disks of squared radii s2 and t2.
template <int D>
bool TwoDisksCover(const double* s, double s2, const double* t, double t2,
                   const double* b0, const double* b1) {
  return TwoDisksCoverImpl<D, false>(s, s2, t, t2, b0, b1);
}

// Disks of one squared radius r2.
template <int D>
bool TwoDisksCover(const double* s, const double* t, double r2,
                   const double* b0, const double* b1) {
  return TwoDisksCoverImpl<D, true>(s, r2, t, r2, b0, b1);
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_GAP_PIECES_H_
