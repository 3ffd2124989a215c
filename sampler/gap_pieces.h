#ifndef SCATTER_SAMPLER_GAP_PIECES_H_
#define SCATTER_SAMPLER_GAP_PIECES_H_

// Internal: how the gap fill of both Poisson engines (constant and variable
// radius) splits a cell into the 2^D pieces it searches, and in which order.

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

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

// (x - m) . (s_j - s_i), m the middle of s_i and s_j, at the corners (0, 0),
// (w, 0), (0, h) and (w, h) of a box: negative on s_i's side of their
// bisector, positive on s_j's.
struct BisectorSides {
  double s00, s10, s01, s11;
};
inline BisectorSides BisectorAtCorners(const double* sx, const double* sy,
                                       std::size_t i, std::size_t j, double w,
                                       double h) {
  const double dx = sx[j] - sx[i];
  const double dy = sy[j] - sy[i];
  const double mx = (sx[i] + sx[j]) / 2;
  const double my = (sy[i] + sy[j]) / 2;
  BisectorSides b;
  b.s00 = -(mx * dx + my * dy);
  b.s10 = b.s00 + w * dx;
  b.s01 = b.s00 + h * dy;
  b.s11 = b.s10 + h * dy;
  return b;
}

// The places of the box [0, w] x [0, h] where the distance to the nearest of
// n sites (sx[i], sy[i]; n <= 64), d(x) = min_i |x - s_i|, may peak, given
// to `place(x, y)` until it returns true; returns whether one did.
// d is convex on each site's Voronoi cell, so over the box it peaks at a
// vertex of the box cut by the Voronoi diagram: a corner of the box, a
// place of an edge of the box equidistant from two sites, or the place
// equidistant from three (their circumcentre). Every pair and triple whose
// bisectors cross the box is tried, which gives every such vertex and some
// more places, all in the box. A place closer than sqrt(bound) to a site
// that defines it (so d(x)^2 < bound there) is not given.
// `bound` may rise as places are given (a search for the farthest one
// needs no place nearer than the best so far).
template <class Place>
bool ForEachPeakPlace2d(const double* sx, const double* sy, std::size_t n,
                        double w, double h, const double& bound,
                        Place&& place) {
  if (place(0.0, 0.0) || place(w, 0.0) || place(0.0, h) || place(w, h)) {
    return true;
  }
  // crosses[i] bit j: the bisector of s_i and s_j (i < j) meets the box.
  std::uint64_t crosses[64];
  for (std::size_t i = 0; i < n; ++i) {
    crosses[i] = 0;
    for (std::size_t j = i + 1; j < n; ++j) {
      // A branch-free pass first: most bisectors miss a small box.
      const BisectorSides b = BisectorAtCorners(sx, sy, i, j, w, h);
      const double lo =
          std::min(std::min(b.s00, b.s10), std::min(b.s01, b.s11));
      const double hi =
          std::max(std::max(b.s00, b.s10), std::max(b.s01, b.s11));
      crosses[i] |= static_cast<std::uint64_t>(!(lo > 0) & !(hi < 0)) << j;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint64_t bits = crosses[i]; bits != 0; bits &= bits - 1) {
      const auto j = static_cast<std::size_t>(__builtin_ctzll(bits));
      const BisectorSides b = BisectorAtCorners(sx, sy, i, j, w, h);
      const double s00 = b.s00, s10 = b.s10, s01 = b.s01, s11 = b.s11;
      // Where the bisector crosses an edge (its ends' signs differ; a
      // crossing at a corner is the corner's).
      auto on_edge = [&](double x, double y) {
        const double ex = x - sx[i];
        const double ey = y - sy[i];
        return !(ex * ex + ey * ey < bound) && place(x, y);
      };
      if (((s00 < 0) != (s10 < 0) && on_edge(w * (s00 / (s00 - s10)), 0.0)) ||
          ((s01 < 0) != (s11 < 0) && on_edge(w * (s01 / (s01 - s11)), h)) ||
          ((s00 < 0) != (s01 < 0) && on_edge(0.0, h * (s00 / (s00 - s01)))) ||
          ((s10 < 0) != (s11 < 0) && on_edge(w, h * (s10 / (s10 - s11))))) {
        return true;
      }
      // Centres: on all three bisectors.
      for (std::uint64_t more = crosses[i] & crosses[j]; more != 0;
           more &= more - 1) {
        const auto k = static_cast<std::size_t>(__builtin_ctzll(more));
        // The circumcentre of s_i, s_j, s_k, from s_i.
        const double dx = sx[j] - sx[i];
        const double dy = sy[j] - sy[i];
        const double bx = sx[k] - sx[i];
        const double by = sy[k] - sy[i];
        const double det = 2 * (dx * by - dy * bx);
        if (det == 0) continue;  // In a line: no centre.
        const double a2 = dx * dx + dy * dy;
        const double b2 = bx * bx + by * by;
        const double ux = (by * a2 - dy * b2) / det;
        const double uy = (dx * b2 - bx * a2) / det;
        if (ux * ux + uy * uy < bound) continue;
        const double x = sx[i] + ux;
        const double y = sy[i] + uy;
        if (x >= 0 && x <= w && y >= 0 && y <= h && place(x, y)) return true;
      }
    }
  }
  return false;
}

// At most this many sites for the two functions below (a gap cell's
// neighbourhood holds at most 25: one point a cell of the 5 x 5 around it).
inline constexpr std::size_t kMaxPeakSites = 64;

// A box's own frame for the searches below: lengths from its low corner b0,
// over `unit`, a power of two near its larger side. From the corner,
// coordinates far from the origin lose nothing to the differences. Over
// the unit, the circumcentre's terms, cubes of lengths, stay finite and
// normal: in plain lengths they overflowed past r = 3e102 and underflowed
// below r = 1e-107, and classic 2D left holes at radii the sampler accepts
// (up to 1e150 and down to 1e-150). A power of two divides exactly, so
// wherever nothing over- or underflowed, the places found are the same
// bits as before.
struct PeakFrame {
  double unit = 1;
  double inverse = 1;
  // The unit is the power of two at or below the larger side, from its
  // exponent bits (frexp and ldexp were calls, 1.4 % of a classic run's
  // instructions); a side that is 0, subnormal or not finite keeps 1.
  explicit PeakFrame(const double* b0, const double* b1) {
    const double side = std::max(b1[0] - b0[0], b1[1] - b0[1]);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &side, sizeof(bits));
    const std::uint64_t biased = (bits >> 52) & 0x7FF;
    if (biased == 0 || biased >= 0x7FE) return;
    const std::uint64_t unit_bits = biased << 52;
    const std::uint64_t inverse_bits = (2046 - biased) << 52;
    std::memcpy(&unit, &unit_bits, sizeof(unit));
    std::memcpy(&inverse, &inverse_bits, sizeof(inverse));
  }
};

// The n sites (xs[i], ys[i]) in the frame of the box from b0: less b0,
// over frame.unit, into sx and sy.
inline void SitesFrom(const double* xs, const double* ys, std::size_t n,
                      const double* b0, const PeakFrame& frame, double* sx,
                      double* sy) {
  assert(n <= kMaxPeakSites);
  for (std::size_t i = 0; i < n; ++i) {
    sx[i] = (xs[i] - b0[0]) * frame.inverse;
    sy[i] = (ys[i] - b0[1]) * frame.inverse;
  }
}

// Whether the closed box [b0, b1] (2D) may hold a place at squared distance
// at least `bound` from each of the n sites (xs[i], ys[i]; n <=
// kMaxPeakSites). False means every place of the box is closer than that to
// a site. Exact up to rounding, which the caller's bound (below r^2 by a
// margin) absorbs.
inline bool BoxMayHoldPlace2d(const double* xs, const double* ys, std::size_t n,
                              const double* b0, const double* b1,
                              double bound) {
  if (n == 0) return true;
  const PeakFrame frame(b0, b1);
  double sx[kMaxPeakSites], sy[kMaxPeakSites];
  SitesFrom(xs, ys, n, b0, frame, sx, sy);
  bound *= frame.inverse * frame.inverse;
  return ForEachPeakPlace2d(sx, sy, n, (b1[0] - b0[0]) * frame.inverse,
                            (b1[1] - b0[1]) * frame.inverse, bound,
                            [&](double x, double y) {
                              for (std::size_t i = 0; i < n; ++i) {
                                const double dx = x - sx[i];
                                const double dy = y - sy[i];
                                if (dx * dx + dy * dy < bound) return false;
                              }
                              return true;
                            });
}

// The place of the closed box [b0, b1] (2D) farthest from the n sites
// (1 <= n <= kMaxPeakSites), into p, with its squared distance to the
// nearest site; 0 when no place is at least sqrt(bound) away (p is then
// unset). The place is found in the box's frame and moved back, so its
// distance to the sites may differ from the returned one by rounding.
inline double FarthestPlace2d(const double* xs, const double* ys, std::size_t n,
                              const double* b0, const double* b1, double bound,
                              double* p) {
  assert(n >= 1);
  const PeakFrame frame(b0, b1);
  double sx[kMaxPeakSites], sy[kMaxPeakSites];
  SitesFrom(xs, ys, n, b0, frame, sx, sy);
  // No place nearer than the best so far, or than `bound`, is wanted:
  // ForEachPeakPlace2d reads `need` as it rises.
  double need = bound * frame.inverse * frame.inverse, best = 0, best_x = 0,
         best_y = 0;
  ForEachPeakPlace2d(sx, sy, n, (b1[0] - b0[0]) * frame.inverse,
                     (b1[1] - b0[1]) * frame.inverse, need,
                     [&](double x, double y) {
                       double d2 = std::numeric_limits<double>::infinity();
                       for (std::size_t i = 0; i < n; ++i) {
                         const double dx = x - sx[i];
                         const double dy = y - sy[i];
                         d2 = std::min(d2, dx * dx + dy * dy);
                         if (d2 < need) return false;
                       }
                       best = d2;
                       best_x = x;
                       best_y = y;
                       need = d2;
                       return false;
                     });
  if (best > 0) {
    // Back from the box's frame, which may round past its far side.
    p[0] = std::min(b0[0] + best_x * frame.unit, b1[0]);
    p[1] = std::min(b0[1] + best_y * frame.unit, b1[1]);
  }
  return best * frame.unit * frame.unit;
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
