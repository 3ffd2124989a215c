#include "sampler/region.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "sampler/box_distance.h"
#include "sampler/sampler.h"

namespace scatter::sampler {
namespace internal {

// The caller's stop predicate during an index build: asked once every
// kEvery steps (a cell an edge may cross, a row an edge spans, a cell of
// a row; each well under a microsecond), and a yes is kept.
struct BuildPoll {
  static constexpr std::int64_t kEvery = 4096;
  absl::FunctionRef<bool()> stop;
  std::int64_t since = 0;
  bool stopped = false;

  // Whether to stop, before `steps` more steps. (Callers stop at the
  // first yes, so a kept yes is only read through `stopped`.)
  bool operator()(std::int64_t steps = 1) {
    since += steps;
    return since >= kEvery && Ask();
  }

  bool Ask() {
    since = 0;
    stopped = stop();
    return stopped;
  }

  // f(k) for k in [0, n), asking between runs of kEvery; false when told
  // to stop.
  template <class F>
  bool EachInRuns(std::size_t n, F f) {
    for (std::size_t run = 0; run < n; run += kEvery) {
      if (Ask()) return false;
      const std::size_t end = std::min<std::size_t>(n, run + kEvery);
      for (std::size_t k = run; k < end; ++k) f(k);
    }
    return true;
  }
};

// Polygons indexed for point-in-polygon queries. A uniform grid over the
// bounds lists, per cell, the edges that touch it, and stores the winding
// number at one point of the cell, its centre (kRefX, kRefY: not quite the
// middle). A query starts from its cell's centre and adds the signed
// crossings of the segment centre -> p, which can only meet edges listed
// in that cell: a few edges whatever the polygon's size.
class PolygonIndex {
 public:
  // Asks `poll` now and then; when it says stop, the build ends at once
  // (poll.stopped, and the index is unusable).
  PolygonIndex(std::vector<std::array<double, 4>> edges, FillRule rule,
               const Box& bounds, BuildPoll& poll)
      : rule_(rule), edges_(std::move(edges)) {
    // About eight cells per edge: long, jagged edges (a coastline's) cross
    // many cells, and smaller cells keep each list short. Edges that are
    // long against the polygon (a star of near-diameters) cross a line of
    // cells each, about sqrt(cells): past kPairsPerEdge (cell, edge) pairs
    // an edge the grid is 16 times coarser, so the index stays within
    // 12 bytes a pair of that bound. (One cell holds every edge once.)
    const std::size_t cap =
        kPairsPerEdge * edges_.size() + (std::size_t{1} << 22);
    double target = std::clamp(8.0 * static_cast<double>(edges_.size()), 1.0,
                               static_cast<double>(kMaxCells));
    for (;;) {
      SetGrid(bounds, target);
      if (BuildCellLists(cap, poll) || target <= 1 || poll.stopped) break;
      target = std::max(1.0, target / 16);
    }
    if (!poll.stopped) BuildCentreWindings(poll);
    if (!poll.stopped) BuildClearBlocks(poll);
  }

  // Heap bytes held: the edges, the cell lists and the per-cell tables.
  std::size_t Bytes() const {
    return edges_.capacity() * sizeof(edges_[0]) +
           cell_begin_.capacity() * sizeof(cell_begin_[0]) +
           cell_edges_.capacity() * sizeof(cell_edges_[0]) +
           centre_winding_.capacity() * sizeof(centre_winding_[0]) +
           clear_.capacity() * sizeof(clear_[0]);
  }

  bool Contains(double px, double py) const {
    const std::int64_t i = Clamp((px - x0_) * inv_cw_, gx_);
    const std::int64_t j = Clamp((py - y0_) * inv_ch_, gy_);
    const std::size_t cell = static_cast<std::size_t>(j * gx_ + i);
    const double cx = x0_ + (static_cast<double>(i) + kRefX) * cw_;
    const double cy = y0_ + (static_cast<double>(j) + kRefY) * ch_;
    int winding = centre_winding_[cell];
    for (std::uint32_t k = cell_begin_[cell]; k < cell_begin_[cell + 1]; ++k) {
      const std::array<double, 4>& e = edges_[cell_edges_[k]];
      // The edge's ends on either side of the line c -> p (an end on the
      // line counts as the left side, so an edge chain through a vertex on
      // the line is counted once) ...
      const bool a_left = Orient(cx, cy, px, py, e[0], e[1]) >= 0;
      const bool b_left = Orient(cx, cy, px, py, e[2], e[3]) >= 0;
      if (a_left == b_left) continue;
      // ... and c and p on either side of the edge.
      const bool c_left = Orient(e[0], e[1], e[2], e[3], cx, cy) > 0;
      const bool p_left = Orient(e[0], e[1], e[2], e[3], px, py) > 0;
      if (c_left == p_left) continue;
      // Stepping onto an edge's left side steps into a counter-clockwise
      // ring: winding + 1.
      winding += p_left ? 1 : -1;
    }
    return Inside(winding);
  }

  // kInside / kOutside when no edge meets the box (then its centre tells
  // the side); kPartial when one does, or when the box spans more than
  // kMaxClassifyCells index cells.
  Region::Overlap Classify(const double* lo, const double* hi) const {
    // Most boxes (around points deep inside, or runs of cells at sea) lie
    // in the 3 x 3 index cells around their centre's cell with no edge in
    // any of them: one lookup tells.
    if (hi[0] - lo[0] <= kClearSpan * cw_ &&
        hi[1] - lo[1] <= kClearSpan * ch_) {
      const std::int64_t i = Clamp(((lo[0] + hi[0]) / 2 - x0_) * inv_cw_, gx_);
      const std::int64_t j = Clamp(((lo[1] + hi[1]) / 2 - y0_) * inv_ch_, gy_);
      const std::uint8_t clear = clear_[static_cast<std::size_t>(j * gx_ + i)];
      if (clear != kNotClear) {
        return clear == kClearInside ? Region::Overlap::kInside
                                     : Region::Overlap::kOutside;
      }
    }
    const std::int64_t i0 = Clamp((lo[0] - x0_) * inv_cw_ - 1e-9, gx_);
    const std::int64_t i1 = Clamp((hi[0] - x0_) * inv_cw_ + 1e-9, gx_);
    const std::int64_t j0 = Clamp((lo[1] - y0_) * inv_ch_ - 1e-9, gy_);
    const std::int64_t j1 = Clamp((hi[1] - y0_) * inv_ch_ + 1e-9, gy_);
    if ((i1 - i0 + 1) * (j1 - j0 + 1) > kMaxClassifyCells) {
      return Region::Overlap::kPartial;
    }
    bool edge_free = true;
    for (std::int64_t j = j0; j <= j1; ++j) {
      for (std::int64_t i = i0; i <= i1; ++i) {
        const std::size_t cell = static_cast<std::size_t>(j * gx_ + i);
        edge_free &= cell_begin_[cell] == cell_begin_[cell + 1];
        for (std::uint32_t k = cell_begin_[cell]; k < cell_begin_[cell + 1];
             ++k) {
          if (SegmentTouchesRect(edges_[cell_edges_[k]], lo[0], hi[0], lo[1],
                                 hi[1])) {
            return Region::Overlap::kPartial;
          }
        }
      }
    }
    // Index cells without edges form one side of every ring, and the box
    // lies in them: the first one's centre tells.
    const bool in =
        edge_free ? Inside(centre_winding_[static_cast<std::size_t>(
                        j0 * gx_ + i0)])
                  : Contains((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2);
    return in ? Region::Overlap::kInside : Region::Overlap::kOutside;
  }

 private:
  static constexpr std::int64_t kMaxCells = std::int64_t{1} << 22;
  // Where in its cell the point lies whose winding the cell keeps (its
  // "centre"), as fractions of the cell: not the middle, which edges at
  // round coordinates pass through (a diagonal of a square polygon does).
  // A centre on an edge is still sound (BuildCentreWindings decides it with
  // Contains' own test); off the middle, fewer are.
  static constexpr double kRefX = 0.4583127;
  static constexpr double kRefY = 0.5271843;
  // (cell, edge) pairs an edge may average before the grid coarsens (a
  // coastline's edges have about 3).
  static constexpr std::size_t kPairsPerEdge = 32;
  // clear_ values.
  static constexpr std::uint8_t kNotClear = 0;
  static constexpr std::uint8_t kClearInside = 1;
  static constexpr std::uint8_t kClearOutside = 2;
  // A box at most this many index cells wide (per axis) around a centre in
  // cell c lies in the 3 x 3 cells around c: its half-width is under one
  // cell, with room for rounding in the centre's cell index.
  static constexpr double kClearSpan = 1.99;
  static constexpr std::int64_t kMaxClassifyCells = 64;

  bool Inside(int winding) const {
    return rule_ == FillRule::kEvenOdd ? (winding & 1) != 0 : winding != 0;
  }

  static double Orient(double ax, double ay, double bx, double by, double cx,
                       double cy) {
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  }

  static std::int64_t Clamp(double f, std::int64_t n) {
    if (!(f > 0)) return 0;
    const double last = static_cast<double>(n - 1);
    return static_cast<std::int64_t>(f < last ? f : last);
  }

  // Where Contains and Classify place a point among the cells, (x - x0) *
  // inv_cw and the cell's corner x0 + i * cw round by up to about 4 parts
  // in 2^53 of x - x0: 1.9e-9 of a cell in a grid kMaxCells = 2^22 cells
  // wide. A cell lists the edges within this much of a cell of it (beyond
  // the hair), so a point placed in a cell it lies just outside still
  // finds every edge between it and the cell. (With 1e-9, enough under a
  // million cells, a point 1.4e-10 of a cell left of a cell of a grid 2^22
  // wide was placed in it and missed the edge between: outside, it was
  // inside.)
  static constexpr double kPlaceSlack = 8e-9;

  // The hair SegmentTouchesRect grows [lo, hi] by along one axis, for a
  // segment whose ends lie at a and b on that axis. It must exceed two
  // roundings (where points are placed among the cells, kPlaceSlack).
  // The rectangle's bounds: a step of the doubles at its coordinates
  // each. The corner signs, which subtract coordinates before they
  // multiply: parts in 2^53 of hi - lo and of |b - a|, wherever they lie. 2^-48 of the coordinates is 16 steps or
  // more, and 32 parts in 2^53 of |b - a| <= |a| + |b|. (At 2^-40 of them
  // a polygon 0.02 wide at 1e7 had a hair of half a cell: every cell
  // listed its neighbours' edges, and sampling it ran over 100 times
  // slower.)
  static double Hair(double lo, double hi, double a, double b) {
    return (hi - lo) * 1e-9 +
           (std::abs(lo) + std::abs(hi) + std::abs(a) + std::abs(b)) *
               0x1.0p-48;
  }

  // Whether segment e meets the rectangle [xmin, xmax] x [ymin, ymax]
  // grown by a hair on each side (Hair): a false yes costs a test or a
  // split; a false no would give a wrong answer. Separating axes, without a
  // division: the segment misses the rectangle when their x or y extents
  // are apart, or when all four corners lie strictly on one side of its
  // line.
  static bool SegmentTouchesRect(const std::array<double, 4>& e, double xmin,
                                 double xmax, double ymin, double ymax) {
    const double mx = Hair(xmin, xmax, e[0], e[2]);
    const double my = Hair(ymin, ymax, e[1], e[3]);
    xmin -= mx;
    xmax += mx;
    ymin -= my;
    ymax += my;
    if (std::max(e[0], e[2]) < xmin || std::min(e[0], e[2]) > xmax ||
        std::max(e[1], e[3]) < ymin || std::min(e[1], e[3]) > ymax) {
      return false;
    }
    const double dx = e[2] - e[0];
    const double dy = e[3] - e[1];
    const double ax = xmin - e[0], bx = xmax - e[0];
    const double ay = ymin - e[1], by = ymax - e[1];
    const double s0 = dx * ay - dy * ax;
    const double s1 = dx * ay - dy * bx;
    const double s2 = dx * by - dy * ax;
    const double s3 = dx * by - dy * bx;
    const bool all_above = s0 > 0 && s1 > 0 && s2 > 0 && s3 > 0;
    const bool all_below = s0 < 0 && s1 < 0 && s2 < 0 && s3 < 0;
    return !all_above && !all_below;
  }

  // Whether edge e belongs in cell (i, j)'s list: it meets the cell grown
  // by kPlaceSlack of a cell on each side (and a hair).
  bool SegmentTouchesCell(const std::array<double, 4>& e, std::int64_t i,
                          std::int64_t j) const {
    const double mx = kPlaceSlack * cw_, my = kPlaceSlack * ch_;
    return SegmentTouchesRect(e, x0_ + static_cast<double>(i) * cw_ - mx,
                              x0_ + static_cast<double>(i + 1) * cw_ + mx,
                              y0_ + static_cast<double>(j) * ch_ - my,
                              y0_ + static_cast<double>(j + 1) * ch_ + my);
  }

  // About `target` cells over `bounds`, square where the bounds allow.
  void SetGrid(const Box& bounds, double target) {
    x0_ = bounds.min(0);
    y0_ = bounds.min(1);
    const double w = bounds.extent(0);
    const double h = bounds.extent(1);
    gx_ = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::ceil(std::sqrt(target * w / h))), 1,
        kMaxCells);
    gy_ = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::ceil(target / static_cast<double>(gx_))),
        1, kMaxCells / gx_);
    cw_ = w / static_cast<double>(gx_);
    ch_ = h / static_cast<double>(gy_);
    inv_cw_ = 1 / cw_;
    inv_ch_ = 1 / ch_;
  }

  // The cell lists of the grid SetGrid chose. False, having built nothing,
  // when they would hold more than `cap` (cell, edge) pairs.
  bool BuildCellLists(std::size_t cap, BuildPoll& poll) {
    const std::size_t cells = static_cast<std::size_t>(gx_ * gy_);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;  // cell, edge
    pairs.reserve(std::min(edges_.size() * 3, cap));
    for (std::size_t k = 0; k < edges_.size(); ++k) {
      const std::array<double, 4>& e = edges_[k];
      // Cells as far as kPlaceSlack and a hair beyond the edge's ends, and
      // the rounding of the quotients.
      constexpr double kReach = 2 * kPlaceSlack;
      const std::int64_t i0 =
          Clamp((std::min(e[0], e[2]) - x0_) / cw_ - kReach, gx_);
      const std::int64_t i1 =
          Clamp((std::max(e[0], e[2]) - x0_) / cw_ + kReach, gx_);
      const std::int64_t j0 =
          Clamp((std::min(e[1], e[3]) - y0_) / ch_ - kReach, gy_);
      const std::int64_t j1 =
          Clamp((std::max(e[1], e[3]) - y0_) / ch_ + kReach, gy_);
      // The cells of the edge's box bound those it is tested against.
      if (poll((i1 - i0 + 1) * (j1 - j0 + 1))) return false;
      const double dx = e[2] - e[0];
      const double dy = e[3] - e[1];
      for (std::int64_t j = j0; j <= j1; ++j) {
        // Only the cells of this row that the segment can reach: its x
        // extent over the row's band grown by the test's own y margin
        // (SegmentTouchesRect), and by a cell a side for rounding; cells
        // the test then rejects cost nothing. A long edge so walks a line
        // of cells, not its bounding box, which for a star of
        // near-diameters made the index quadratic in edges.
        std::int64_t r0 = i0, r1 = i1;
        if (dy != 0) {
          // The row as SegmentTouchesCell grows it.
          const double ymin =
              y0_ + static_cast<double>(j) * ch_ - kPlaceSlack * ch_;
          const double ymax =
              y0_ + static_cast<double>(j + 1) * ch_ + kPlaceSlack * ch_;
          const double my = Hair(ymin, ymax, e[1], e[3]);
          const double t0 = std::clamp((ymin - my - e[1]) / dy, 0.0, 1.0);
          const double t1 = std::clamp((ymax + my - e[1]) / dy, 0.0, 1.0);
          const double xa = e[0] + t0 * dx, xb = e[0] + t1 * dx;
          r0 = std::max(i0, Clamp((std::min(xa, xb) - x0_) / cw_, gx_) - 1);
          r1 = std::min(i1, Clamp((std::max(xa, xb) - x0_) / cw_, gx_) + 1);
        }
        for (std::int64_t i = r0; i <= r1; ++i) {
          if (SegmentTouchesCell(e, i, j)) {
            pairs.emplace_back(static_cast<std::uint32_t>(j * gx_ + i),
                               static_cast<std::uint32_t>(k));
          }
        }
        if (pairs.size() > cap) return false;
      }
    }
    // Big arrays are first touched page by page (about 3 us a page on some
    // guests): the predicate is asked after each.
    cell_begin_.assign(cells + 1, 0);
    if (poll.Ask()) return false;
    if (!poll.EachInRuns(pairs.size(), [&](std::size_t k) {
          ++cell_begin_[pairs[k].first + 1];
        })) {
      return false;
    }
    for (std::size_t c = 0; c < cells; ++c)
      cell_begin_[c + 1] += cell_begin_[c];
    cell_edges_.resize(pairs.size());
    if (poll.Ask()) return false;
    std::vector<std::uint32_t> fill(cell_begin_.begin(), cell_begin_.end() - 1);
    if (poll.Ask()) return false;
    return poll.EachInRuns(pairs.size(), [&](std::size_t k) {
      cell_edges_[fill[pairs[k].first]++] = pairs[k].second;
    });
  }

  // The winding number at every cell centre, a row at a time: the signed
  // crossings of the horizontal line through the centres, left of each
  // centre (a downward edge to the left of a point winds it +1 with
  // counter-clockwise outer rings). An edge counts for a line when one end
  // is at or below it and the other above: the usual half-open rule, so a
  // vertex on the line counts once.
  //
  // Which centres lie past an edge is decided by Contains' own test
  // (Orient(edge, centre) > 0 is the edge's left side; on it, within
  // rounding, counts as its right side), not by the crossing's x: the two
  // disagreed where a centre lay on an edge (computed distance 0, which
  // coarse coordinates far from the origin make common), and then Contains
  // stepped from a winding off by one over the whole cell.
  void BuildCentreWindings(BuildPoll& poll) {
    // Per row: the first centre each edge winds, and by how much.
    std::vector<std::vector<std::pair<std::int64_t, int>>> rows(
        static_cast<std::size_t>(gy_));
    for (const std::array<double, 4>& e : edges_) {
      const double ylo = std::min(e[1], e[3]);
      const double yhi = std::max(e[1], e[3]);
      const std::int64_t j0 = Clamp((ylo - y0_) / ch_ - kRefY - 1, gy_);
      const std::int64_t j1 = Clamp((yhi - y0_) / ch_ - kRefY + 1, gy_);
      if (poll(j1 - j0 + 1)) return;
      const int sign = e[3] < e[1] ? 1 : -1;
      for (std::int64_t j = j0; j <= j1; ++j) {
        const double y = y0_ + (static_cast<double>(j) + kRefY) * ch_;
        if ((e[1] <= y) == (e[3] <= y)) continue;
        // Centre i lies past the edge when it is on the edge's right side
        // for an upward edge, its left side for a downward one (the +x
        // side either way).
        auto past = [&](std::int64_t i) {
          const double cx = x0_ + (static_cast<double>(i) + kRefX) * cw_;
          const bool left = Orient(e[0], e[1], e[2], e[3], cx, y) > 0;
          return sign > 0 ? left : !left;
        };
        // From the crossing's x, then a step or two by the test itself
        // (centres are a cell apart, so only one can be in doubt).
        const double x = e[0] + (y - e[1]) * (e[2] - e[0]) / (e[3] - e[1]);
        const double guess = std::ceil((x - x0_) / cw_ - kRefX);
        std::int64_t first = guess > 0 ? (guess < static_cast<double>(gx_)
                                              ? static_cast<std::int64_t>(guess)
                                              : gx_)
                                       : 0;
        while (first > 0 && past(first - 1)) --first;
        while (first < gx_ && !past(first)) ++first;
        rows[static_cast<std::size_t>(j)].emplace_back(first, sign);
      }
    }
    centre_winding_.assign(static_cast<std::size_t>(gx_ * gy_), 0);
    if (poll.Ask()) return;
    for (std::int64_t j = 0; j < gy_; ++j) {
      if (poll(gx_)) return;
      auto& row = rows[static_cast<std::size_t>(j)];
      std::sort(row.begin(), row.end());
      int winding = 0;
      std::size_t next = 0;
      for (std::int64_t i = 0; i < gx_; ++i) {
        while (next < row.size() && row[next].first <= i) {
          winding += row[next++].second;
        }
        centre_winding_[static_cast<std::size_t>(j * gx_ + i)] = winding;
      }
    }
  }

  // Per cell: whether it and its 8 neighbours hold no edge, and then on
  // which side of the rings they all lie (cells beyond the grid hold no
  // edge either).
  void BuildClearBlocks(BuildPoll& poll) {
    clear_.assign(static_cast<std::size_t>(gx_ * gy_), kNotClear);
    if (poll.Ask()) return;
    auto empty = [&](std::int64_t i, std::int64_t j) {
      if (i < 0 || i >= gx_ || j < 0 || j >= gy_) return true;
      const auto c = static_cast<std::size_t>(j * gx_ + i);
      return cell_begin_[c] == cell_begin_[c + 1];
    };
    for (std::int64_t j = 0; j < gy_; ++j) {
      if (poll(gx_)) return;
      for (std::int64_t i = 0; i < gx_; ++i) {
        bool clear = true;
        for (std::int64_t dj = -1; dj <= 1; ++dj) {
          for (std::int64_t di = -1; di <= 1; ++di) {
            clear &= empty(i + di, j + dj);
          }
        }
        if (!clear) continue;
        const auto c = static_cast<std::size_t>(j * gx_ + i);
        clear_[c] = Inside(centre_winding_[c]) ? kClearInside : kClearOutside;
      }
    }
  }

  FillRule rule_;
  std::vector<std::array<double, 4>> edges_;  // ax, ay, bx, by.
  double x0_ = 0, y0_ = 0, cw_ = 1, ch_ = 1, inv_cw_ = 1, inv_ch_ = 1;
  std::int64_t gx_ = 1, gy_ = 1;
  std::vector<std::uint32_t> cell_begin_;  // Per cell, into cell_edges_.
  std::vector<std::uint32_t> cell_edges_;
  std::vector<int> centre_winding_;
  std::vector<std::uint8_t> clear_;  // kNotClear, kClearInside, kClearOutside.
};

}  // namespace internal

Region Region::FromBox(const Box& box) { return Region(Kind::kBox, box); }

absl::StatusOr<Region> Region::Circle(double cx, double cy, double radius) {
  absl::StatusOr<Region> ball = Sphere({cx, cy, 0}, radius);
  if (!ball.ok()) return ball.status();
  absl::StatusOr<Box> bounds = Box::Create(2, {cx - radius, cy - radius, 0},
                                           {cx + radius, cy + radius, 0});
  if (!bounds.ok()) return bounds.status();
  Region region(Kind::kBall, *bounds);
  region.center_ = {cx, cy, 0};
  region.radius2_ = radius * radius;
  return region;
}

absl::StatusOr<Region> Region::Sphere(const Vec& center, double radius) {
  for (int a = 0; a < 3; ++a) {
    if (!std::isfinite(center[a])) {
      return absl::InvalidArgumentError(
          absl::StrCat("center must be finite, got (", center[0], ", ",
                       center[1], ", ", center[2], ")"));
    }
  }
  if (!std::isfinite(radius) || !(radius > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius must be finite and > 0, got ", radius));
  }
  // Contains and Classify compare squared distances with the radius
  // squared. Past these bounds (the sampler's radii) the squares leave the
  // normal doubles: at 1e155 the radius and every distance past 1.3e154
  // squared to inf, and the ball held only the points within 1.3e154 of
  // its centre; at 1e-170 the square was 0 and it held nothing.
  if (!(radius >= kMinRadius && radius <= kMaxRadius)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius must be in [", kMinRadius, ", ", kMaxRadius,
                     "] (its square a normal double), got ", radius));
  }
  absl::StatusOr<Box> bounds = Box::Create(
      3, {center[0] - radius, center[1] - radius, center[2] - radius},
      {center[0] + radius, center[1] + radius, center[2] + radius});
  if (!bounds.ok()) {
    // Not the box's own words: the caller gave no box. A centre near the
    // largest doubles overflows, or leaves no room for a radius that small
    // (1.7e308 +- 1e150 is 1.7e308).
    return absl::InvalidArgumentError(absl::StrCat(
        "center +- radius must be finite and apart on every axis, got center "
        "(",
        center[0], ", ", center[1], ", ", center[2], ") and radius ", radius,
        ": move the center nearer the origin or use a larger radius"));
  }
  Region region(Kind::kBall, *bounds);
  region.center_ = center;
  region.radius2_ = radius * radius;
  return region;
}

absl::StatusOr<Region> Region::Polygons(absl::Span<const Ring> rings,
                                        FillRule rule,
                                        std::size_t max_vertices) {
  return Polygons(rings, rule, max_vertices, [] { return false; });
}

absl::StatusOr<Region> Region::Polygons(absl::Span<const Ring> rings,
                                        FillRule rule, std::size_t max_vertices,
                                        absl::FunctionRef<bool()> stop) {
  if (rings.empty()) {
    return absl::InvalidArgumentError("rings must hold at least one ring");
  }
  internal::BuildPoll poll{stop};
  auto stopped = [] {
    return absl::CancelledError(
        "building the polygons' index stopped by the caller");
  };
  std::size_t total = 0;
  for (const Ring& ring : rings) total += ring.size();
  if (total > max_vertices) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the rings hold ", total,
        " vertices, over the limit max_vertices = ", max_vertices));
  }
  std::vector<std::array<double, 4>> edges;
  edges.reserve(total);
  double lo[2] = {HUGE_VAL, HUGE_VAL};
  double hi[2] = {-HUGE_VAL, -HUGE_VAL};
  for (std::size_t r = 0; r < rings.size(); ++r) {
    // Distinct consecutive vertices; a closing repeat of the first is
    // dropped too.
    std::vector<std::array<double, 2>> v;
    v.reserve(rings[r].size());
    for (std::size_t k = 0; k < rings[r].size(); ++k) {
      if (k % internal::BuildPoll::kEvery == 0 && poll.Ask()) return stopped();
      const std::array<double, 2>& p = rings[r][k];
      if (!std::isfinite(p[0]) || !std::isfinite(p[1])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rings[", r, "][", k, "]: coordinates must be finite, got (", p[0],
            ", ", p[1], ")"));
      }
      if (v.empty() || v.back() != p) v.push_back(p);
    }
    while (v.size() > 1 && v.back() == v.front()) v.pop_back();
    if (v.size() < 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("rings[", r,
                       "]: a ring needs at least 3 distinct "
                       "vertices, got ",
                       v.size()));
    }
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (k % internal::BuildPoll::kEvery == 0 && poll.Ask()) return stopped();
      const std::array<double, 2>& a = v[k];
      const std::array<double, 2>& b = k + 1 < v.size() ? v[k + 1] : v[0];
      edges.push_back({a[0], a[1], b[0], b[1]});
      for (int c = 0; c < 2; ++c) {
        lo[c] = std::min(lo[c], a[c]);
        hi[c] = std::max(hi[c], a[c]);
      }
    }
    // Only a ring on one line is refused: a zero signed area is also a
    // ring that crosses itself into equal halves turning opposite ways (a
    // bowtie), which encloses area under either rule. (The line is asked
    // of every ring: asked only when the shoelace sum was 0, a ring on a
    // line at 1e7 passed, its sum 0.015625 by rounding.)
    bool on_a_line = true;
    for (std::size_t k = 2; on_a_line && k < v.size(); ++k) {
      on_a_line = (v[1][0] - v[0][0]) * (v[k][1] - v[0][1]) ==
                  (v[1][1] - v[0][1]) * (v[k][0] - v[0][0]);
    }
    if (on_a_line) {
      return absl::InvalidArgumentError(
          absl::StrCat("rings[", r,
                       "]: a ring must enclose a non-zero area "
                       "(its vertices are collinear)"));
    }
  }
  // Half-open bounds: nudge the maximum up so the rightmost and topmost
  // vertices are inside them.
  absl::StatusOr<Box> bounds = Box::Create(
      2, {lo[0], lo[1], 0},
      {std::nextafter(hi[0], HUGE_VAL), std::nextafter(hi[1], HUGE_VAL), 0});
  if (!bounds.ok()) {
    // Not the box's own words: the caller gave rings. Vertices at the
    // largest doubles leave no finite bound past them, and rings spanning
    // more than the largest double have no finite extent.
    return absl::InvalidArgumentError(absl::StrCat(
        "rings: the vertices' bounds must have a finite extent, got x from ",
        lo[0], " to ", hi[0], " and y from ", lo[1], " to ", hi[1],
        ": move the rings nearer the origin"));
  }
  auto index = std::make_shared<const internal::PolygonIndex>(
      std::move(edges), rule, *bounds, poll);
  if (poll.stopped) return stopped();
  Region region(Kind::kPolygons, *bounds);
  region.polygons_ = std::move(index);
  return region;
}

std::size_t Region::IndexBytes() const {
  return polygons_ != nullptr ? polygons_->Bytes() : 0;
}

absl::StatusOr<Region> Region::Masked(std::shared_ptr<const Raster> mask,
                                      double threshold) const {
  if (mask == nullptr) {
    return absl::InvalidArgumentError("mask must be set");
  }
  if (!(threshold >= 0 && threshold <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("mask threshold must be in [0, 1], got ", threshold));
  }
  Region masked = *this;
  masked.mask_ = std::move(mask);
  masked.mask_threshold_ = threshold;
  return masked;
}

std::optional<Region> Region::Clipped(const Box& keep,
                                      std::vector<Box> cut) const {
  Vec lo = {0, 0, 0};
  Vec hi = {0, 0, 0};
  for (int a = 0; a < dims(); ++a) {
    lo[a] = std::max(bounds_.min(a), keep.min(a));
    hi[a] = std::min(bounds_.max(a), keep.max(a));
    if (!(lo[a] < hi[a])) return std::nullopt;
  }
  absl::StatusOr<Box> bounds = Box::Create(dims(), lo, hi);
  if (!bounds.ok()) return std::nullopt;
  Region clipped = *this;
  clipped.bounds_ = *bounds;
  // Cuts that miss the bounds change nothing.
  std::vector<Box> kept = cuts_ == nullptr ? std::vector<Box>() : *cuts_;
  for (const Box& c : cut) {
    bool meets = true;
    for (int a = 0; a < dims(); ++a) {
      meets &= c.min(a) < hi[a] && c.max(a) > lo[a];
    }
    if (meets) kept.push_back(c);
  }
  clipped.cuts_ =
      kept.empty() ? nullptr
                   : std::make_shared<const std::vector<Box>>(std::move(kept));
  return clipped;
}

Region::Overlap Region::Classify(const double* lo, const double* hi) const {
  Overlap shape = ClassifyShape(lo, hi);
  if (shape == Overlap::kOutside) return shape;
  // A clipped ball or polygon: its shape test knows nothing of the clip.
  if (shape == Overlap::kInside && kind_ != Kind::kBox) {
    for (int a = 0; a < dims(); ++a) {
      if (!(lo[a] >= bounds_.min(a) && hi[a] < bounds_.max(a))) {
        shape = Overlap::kPartial;
      }
    }
  }
  if (cuts_ != nullptr) {
    for (const Box& c : *cuts_) {
      bool within = true;
      bool meets = true;
      for (int a = 0; a < dims(); ++a) {
        within &= lo[a] >= c.min(a) && hi[a] < c.max(a);
        meets &= hi[a] >= c.min(a) && lo[a] < c.max(a);
      }
      if (within) return Overlap::kOutside;
      if (meets) shape = Overlap::kPartial;
    }
  }
  if (mask_ == nullptr) return shape;
  if (OffMask(lo, hi)) return Overlap::kOutside;
  const RasterRect& r = mask_->rect();
  const bool within =
      lo[0] >= r.x0 && hi[0] <= r.x1 && lo[1] >= r.y0 && hi[1] <= r.y1;
  double least = 0, most = 0;
  if (!mask_->Bounds(lo[0], lo[1], hi[0], hi[1], &least, &most)) {
    // Over more pixels than Bounds reads, the block levels still bound the
    // greatest: a box where the mask is dark throughout is outside. (Said
    // partial, every cell of the server's estimate over a mask finer than
    // 64 pixels a cell counted as if unmasked: a request masked down to a
    // hundredth was refused as too large, found by a review helper.)
    return mask_->Greatest(lo[0], lo[1], hi[0], hi[1]) < mask_threshold_
               ? Overlap::kOutside
               : Overlap::kPartial;
  }
  if (most < mask_threshold_) return Overlap::kOutside;
  if (within && least >= mask_threshold_) return shape;
  // Across a sharp edge (a 0/1 mask) the pixels say 0 to 1 however small
  // the box, and every piece near the edge would be partial down to the
  // gap search's deepest level; a box over at most 2 x 2 bilinear patches
  // is bounded by the interpolation itself, so only the pieces the
  // threshold's contour crosses stay partial.
  if (mask_->PatchBounds(lo[0], lo[1], hi[0], hi[1], &least, &most)) {
    if (most < mask_threshold_) return Overlap::kOutside;
    if (within && least >= mask_threshold_) return shape;
  }
  return Overlap::kPartial;
}

bool Region::OffMask(const double* lo, const double* hi) const {
  const RasterRect& r = mask_->rect();
  return hi[0] < r.x0 || lo[0] > r.x1 || hi[1] < r.y0 || lo[1] > r.y1;
}

bool Region::MaskExcludes(const double* lo, const double* hi,
                          std::size_t max_pixels) const {
  if (mask_ == nullptr) return false;
  if (OffMask(lo, hi)) return true;
  double least = 0, most = 0;
  return mask_->Bounds(lo[0], lo[1], hi[0], hi[1], &least, &most,
                       max_pixels) &&
         most < mask_threshold_;
}

Region::Overlap Region::ClassifyShape(const double* lo,
                                      const double* hi) const {
  for (int a = 0; a < dims(); ++a) {
    if (hi[a] < bounds_.min(a) || lo[a] >= bounds_.max(a)) {
      return Overlap::kOutside;
    }
  }
  switch (kind_) {
    case Kind::kBox: {
      bool inside = true;
      for (int a = 0; a < dims(); ++a) {
        inside &= lo[a] >= bounds_.min(a) && hi[a] < bounds_.max(a);
      }
      return inside ? Overlap::kInside : Overlap::kPartial;
    }
    case Kind::kBall: {
      if (internal::NearestDistance2(center_.data(), lo, hi, dims()) >=
          radius2_) {
        return Overlap::kOutside;
      }
      return internal::FarthestDistance2(center_.data(), lo, hi, dims()) <
                     radius2_
                 ? Overlap::kInside
                 : Overlap::kPartial;
    }
    case Kind::kPolygons:
      return polygons_->Classify(lo, hi);
  }
  return Overlap::kPartial;
}

bool Region::Contains(const double* p) const {
  if (!ContainsShape(p)) return false;
  if (cuts_ != nullptr) {
    for (const Box& c : *cuts_) {
      if (c.Contains(p)) return false;
    }
  }
  if (mask_ == nullptr) return true;
  return mask_->Covers(p[0], p[1]) &&
         mask_->Sample(p[0], p[1]) >= mask_threshold_;
}

bool Region::ContainsShape(const double* p) const {
  if (!bounds_.Contains(p)) return false;
  switch (kind_) {
    case Kind::kBox:
      return true;
    case Kind::kBall: {
      double d2 = 0;
      for (int a = 0; a < dims(); ++a) {
        const double d = p[a] - center_[a];
        d2 += d * d;
      }
      return d2 < radius2_;
    }
    case Kind::kPolygons:
      return polygons_->Contains(p[0], p[1]);
  }
  return false;
}

}  // namespace scatter::sampler
