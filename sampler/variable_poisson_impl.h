// Internal: the variable-radius Poisson sampler, as a class template over
// the SIMD operations it uses. Included by variable_poisson.cc (ScalarOps,
// baseline ISA) and by variable_poisson_avx2.cc (Avx2Ops; it defines
// SCATTER_VARIABLE_POISSON_AVX2), so each translation unit compiles the
// whole hot loop for its own target with the kernels inlined, as
// poisson_impl.h does for constant radius (whose top comment says why the
// AVX2 target is set only after the includes). Everything below the
// includes has internal linkage. Include this file after every other
// header.

#ifndef SCATTER_SAMPLER_VARIABLE_POISSON_IMPL_H_
#define SCATTER_SAMPLER_VARIABLE_POISSON_IMPL_H_

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sampler/box_distance.h"
#include "sampler/directions.h"
#include "sampler/gap_pieces.h"
#include "sampler/grid_common.h"
#include "sampler/huge_pages.h"
#include "sampler/rng.h"
#include "sampler/rotation.h"
#include "sampler/simd_ops.h"
#include "sampler/variable_poisson.h"

#ifdef SCATTER_VARIABLE_POISSON_AVX2
// Set only here, after the includes above; see poisson_impl.h.
#pragma GCC push_options
#pragma GCC target("avx2")
#include "sampler/simd_ops_avx2.h"
#endif

namespace scatter::sampler::internal {
namespace {

// kDistanceSlack, kCellShrink, kBoundSlack and the other constants of both
// engines: grid_common.h.

// Covered-tests are narrowed by this factor, so rounding never calls a
// piece covered that is not.
constexpr double kCoverShrink = 1 - 1e-9;
constexpr int kMaxGapDepth = std::max(kMaxGapDepth2d, kMaxGapDepth3d);
// Dense candidates that move out take at most this many secant steps.
constexpr int kMoveOutSteps = 3;
// Block summaries: blocks of 2^kBlockBits cells per axis.
constexpr int kBlockBits = 3;
constexpr std::int64_t kBlockSide = std::int64_t{1} << kBlockBits;
// Levels: bands [r_min 2^l, r_min 2^(l+1)); 64 levels span any ratio of
// finite doubles that a memory limit lets through.
constexpr int kMaxLevels = 64;

// How many levels a run with these bounds has: up to the one whose band
// holds r_max.
int LevelCount(double r_min, double r_max) {
  int levels = 1;
  double lower = r_min * 2;
  while (levels < kMaxLevels && lower <= r_max) {
    ++levels;
    lower *= 2;
  }
  return levels;
}

double LevelCell(double r_min, int level, int dims) {
  return std::ldexp(r_min, level) / std::sqrt(static_cast<double>(dims)) *
         kCellShrink;
}

// r(x) = r_min + (r_max - r_min) * (1 - density), clamped to the bounds so
// rounding never leaves them.
struct RadiusField {
  const Raster* density;
  double r_min;
  double r_max;

  double FromDensity(double d) const {
    const double r = r_min + (r_max - r_min) * (1 - d);
    return r < r_min ? r_min : (r > r_max ? r_max : r);
  }
  double At(const double* p) const {
    return FromDensity(density->Sample(p[0], p[1]));
  }
};

// Bounds of the density over boxes at any scale in O(1), from the pixels
// and the raster's block levels (Raster::BlockLevels: per-block minima and
// maxima, level k blocks of 2^k x 2^k pixels), so a box covering many
// pixels reads at most 4 x 4 blocks of a coarse enough level, never all its
// pixels. The raster builds the levels once and keeps them.
class DensityBounds {
 public:
  explicit DensityBounds(const Raster& raster)
      : raster_(raster),
        pixels_(raster.pixels()),
        coarse_(raster.BlockLevels()),
        levels_(coarse_.size() + 1) {
    const RasterRect& rect = raster.rect();
    to_col_ = raster.width() / (rect.x1 - rect.x0);
    to_row_ = raster.height() / (rect.y1 - rect.y0);
  }

  // The least and greatest density Sample() can return in the box
  // [x0, x1] x [y0, y1]: over the pixels whose bilinear support meets it,
  // one more on each side against rounding of the pixel coordinates.
  void Bounds(double x0, double y0, double x1, double y1, double* lo,
              double* hi) const {
    Bounds(Pixels(x0, y0, x1, y1), lo, hi);
  }

  // The pixels Bounds reads for a box: equal ranges have equal bounds.
  struct Range {
    std::int64_t i0 = 0, i1 = -1, j0 = 0, j1 = -1;  // Default: none.
    bool operator==(const Range& o) const {
      return i0 == o.i0 && i1 == o.i1 && j0 == o.j0 && j1 == o.j1;
    }
  };
  Range Pixels(double x0, double y0, double x1, double y1) const {
    Range r;
    PixelRange(x0, y0, x1, y1, &r.i0, &r.i1, &r.j0, &r.j1);
    return r;
  }
  void Bounds(const Range& r, double* lo, double* hi) const {
    std::size_t k = 0;
    while (k + 1 < levels_ &&
           ((r.i1 >> k) - (r.i0 >> k) > 3 || (r.j1 >> k) - (r.j0 >> k) > 3)) {
      ++k;
    }
    BlockBounds(k, r.i0, r.i1, r.j0, r.j1, lo, hi);
  }

  // Bounds that hold as Bounds' do but may be wider: from the level where
  // the box's pixels span at most 2 x 2 blocks. Four reads.
  void LooseBounds(double x0, double y0, double x1, double y1, double* lo,
                   double* hi) const {
    std::int64_t i0, i1, j0, j1;
    PixelRange(x0, y0, x1, y1, &i0, &i1, &j0, &j1);
    // The smallest k with 2^k > span: then i0 >> k and i1 >> k differ by 1
    // at most.
    const auto span = static_cast<std::uint64_t>(std::max(i1 - i0, j1 - j0));
    std::size_t k = 0;
    while ((span >> k) != 0) ++k;
    k = std::min(k, levels_ - 1);
    BlockBounds(k, i0, i1, j0, j1, lo, hi);
  }

 private:
  // The least and greatest pixel over the blocks of level k that hold the
  // pixels [i0, i1] x [j0, j1].
  void BlockBounds(std::size_t k, std::int64_t i0, std::int64_t i1,
                   std::int64_t j0, std::int64_t j1, double* lo,
                   double* hi) const {
    float mn = 2, mx = -1;
    if (k == 0) {
      const std::size_t w = raster_.width();
      for (std::int64_t j = j0; j <= j1; ++j) {
        const float* row = pixels_ + static_cast<std::size_t>(j) * w;
        for (std::int64_t i = i0; i <= i1; ++i) {
          mn = std::min(mn, row[i]);
          mx = std::max(mx, row[i]);
        }
      }
    } else {
      const Raster::BlockLevel& level = coarse_[k - 1];
      for (std::int64_t j = j0 >> k; j <= j1 >> k; ++j) {
        for (std::int64_t i = i0 >> k; i <= i1 >> k; ++i) {
          const std::size_t c = static_cast<std::size_t>(j) * level.w +
                                static_cast<std::size_t>(i);
          mn = std::min(mn, level.lo[c]);
          mx = std::max(mx, level.hi[c]);
        }
      }
    }
    *lo = mn;
    *hi = mx;
  }

  // The pixels whose bilinear support meets [x0, x1] x [y0, y1], one more on
  // each side against rounding, clamped to the raster.
  [[gnu::always_inline]] void PixelRange(double x0, double y0, double x1,
                                         double y1, std::int64_t* i0,
                                         std::int64_t* i1, std::int64_t* j0,
                                         std::int64_t* j1) const {
    const RasterRect& rect = raster_.rect();
    const auto col = [&](double x) {
      return PixelIndex((x - rect.x0) * to_col_ - 0.5, raster_.width());
    };
    const auto row = [&](double y) {
      return PixelIndex((rect.y1 - y) * to_row_ - 0.5, raster_.height());
    };
    *i0 = std::max<std::int64_t>(col(x0) - 1, 0);
    *j0 = std::max<std::int64_t>(row(y1) - 1, 0);
    *i1 = std::min<std::int64_t>(col(x1) + 2, raster_.width() - 1);
    *j1 = std::min<std::int64_t>(row(y0) + 2, raster_.height() - 1);
  }

  // Floor of a continuous pixel coordinate, clamped to the raster (NaN and
  // huge values included).
  static std::int64_t PixelIndex(double u, std::uint32_t n) {
    if (!(u > 0)) return 0;
    const double last = static_cast<double>(n) - 1;
    return static_cast<std::int64_t>(u < last ? u : last);
  }

  const Raster& raster_;
  const float* pixels_;
  const std::vector<Raster::BlockLevel>& coarse_;  // Levels 1 and up.
  std::size_t levels_;                             // Level 0 too.
  double to_col_ = 1;
  double to_row_ = 1;
};

template <int D, class Ops>
class VariableRun {
 public:
  VariableRun(const Region& region, const ObstacleIndex& obstacles,
              const SamplerOptions& options, BatchWriter* out,
              absl::FunctionRef<bool()> stop)
      : region_(region),
        obstacles_(obstacles),
        box_only_(region.IsBox()),
        maybe_partial_(!region.IsBox() || !obstacles.empty()),
        out_(out),
        stop_(stop),
        dense_(options.method == Method::kPoissonDense),
        fill_gaps_(options.fill_gaps),
        attempts_(options.max_attempts),
        eps_(options.dense_epsilon),
        field_{options.density.get(), options.radius_min, options.radius_max},
        density_bounds_(*options.density),
        per_point_footprint_(options.footprint == 0),
        per_point_(per_point_footprint_ || obstacles.takes_own_radius()) {
    candidate_key_ = PoissonStreamKey(options, Purpose::kCandidates);
    gap_key_ = PoissonStreamKey(options, Purpose::kGapFill);
    const Box& box = region.bounds();
    for (int a = 0; a < D; ++a) {
      lo_[a] = box.min(a);
      hi_[a] = box.max(a);
    }
    const int levels = LevelCount(field_.r_min, field_.r_max);
    levels_.resize(static_cast<std::size_t>(levels));
    for (int l = 0; l < levels; ++l) {
      Level& level = levels_[static_cast<std::size_t>(l)];
      level.lo_r = std::ldexp(field_.r_min, l);
      level.hi_r =
          l + 1 == levels ? field_.r_max : std::ldexp(field_.r_min, l + 1);
      level.cell = LevelCell(field_.r_min, l, D);
      level.inv_cell = 1 / level.cell;
      level.cells = 1;
      for (int a = 0; a < D; ++a) {
        level.n[a] = std::max<std::int64_t>(
            1, static_cast<std::int64_t>(
                   std::ceil(box.extent(a) * level.inv_cell)));
        level.stride[a] = level.cells;
        level.cells *= static_cast<std::uint64_t>(level.n[a]);
      }
      std::uint64_t blocks = 1;
      for (int a = 0; a < D; ++a) {
        level.block_stride[a] = blocks;
        blocks *= static_cast<std::uint64_t>((level.n[a] >> kBlockBits) + 1);
      }
      level.blocks = blocks;
    }
    if (dense_) {
      if constexpr (D == 2) {
        circle_ = CircleDirections(attempts_);
        woken_circle_ = CircleDirections(kWokenDirections * attempts_);
      } else {
        sphere_ = SphereDirections(attempts_);
        woken_sphere_ = SphereDirections(kWokenDirections * attempts_);
      }
    }
    max_extra_ = per_point_footprint_ ? field_.r_max / 2 : 0;
    coordinate_slack_ = CoordinateSlack(lo_, hi_, D);
    // Far from the origin, dense candidates need more room than eps r to
    // clear their parent after rounding (see PoissonRun).
    eps_ = std::max(eps_, 2 * coordinate_slack_ / field_.r_min);
  }

  absl::Status Run() {
    for (Level& level : levels_) {
      // A cell is read only where its occupancy bit is set, so pages of
      // cells that never hold a point are never touched.
      level.points.Zeroed(level.cells * (D + 1), false);
      AdviseWhereLevelLands(level, &level.points, D + 1);
      level.bits.Zeroed(level.cells / 64 + 2, false);
      level.block_bits.Zeroed(level.blocks / 64 + 2, false);
    }
    if (fill_gaps_) {
      for (Level& level : levels_) {
        level.cover.Zeroed(level.cells + 8, false);
        AdviseWhereLevelLands(level, &level.cover, 1);
      }
      // Places within an obstacle's clearance (without the point's own
      // footprint, which only adds to it) need no point.
      // The stop predicate is polled every 16 obstacles: one over the
      // whole grid marks every cell.
      std::uint64_t count = 0;
      const bool marked =
          obstacles_.ForEach([&](const double* c, double clearance) {
            MarkCovered(c, clearance);
            obstacles_marked_ = true;
            return ++count % 16 != 0 || !stop_();
          });
      if (!marked) {
        return absl::CancelledError("sampling stopped by the caller");
      }
    }
    // Same-layer obstacles in the bounds join the grids, dormant (never
    // emitted): each wakes as an active point when a new point lands
    // within kWakeRadius max(r, r_q) of it, so the front that reaches them
    // grows on through their gaps as one front (as the constant-radius run
    // does).
    bool crowded = false;
    obstacles_.ForEachSameLayer(
        [&](const double* c, double r, std::int32_t wake) {
          const int l = LevelOf(r);
          Level& level = levels_[static_cast<std::size_t>(l)];
          const std::uint64_t cell = CellOf(level, c);
          if ((level.bits[cell >> 6] >> (cell & 63)) & 1) {
            crowded = true;
            return;
          }
          // A point of this layer has the field's radius at its place; one
          // that does not turns off what ForEachNear concludes from that.
          double r_lo, r_hi;
          RadiusBounds(c, c, &r_lo, &r_hi);
          if (!(r >= r_lo && r <= r_hi)) radii_from_field_ = false;
          Place(c, r, /*active=*/false);
          if (level.dormant.empty())
            level.dormant.assign(level.cells / 64 + 2, 0);
          level.dormant[cell >> 6] |= std::uint64_t{1} << (cell & 63);
          ++level.dormant_left;
          ++dormant_left_;
          if (wake >= 0) schedule_.Add(wake, {cell, l});
        });
    if (crowded) {
      return absl::InvalidArgumentError(
          "obstacles: two same-layer obstacles are closer than their radii, "
          "as points of one layer never are");
    }
    if (!schedule_.empty()) {
      // Growth starts from the points due first; Drain wakes the others as
      // the generations pass.
      schedule_.Start([this](const DormantAt& at) { WakeScheduled(at); },
                      [this] { return active_.size(); });
      absl::Status status = Drain();
      if (!status.ok()) return status;
    }
    if (fill_gaps_) return FillGaps();
    // Without gap filling, one seed (clear of the same-layer points) and
    // its growth, as the constant-radius run does.
    double p[D];
    if (!FirstSeed(p)) return halt_;  // Stopped, or no room in the region.
    Accept(p, field_.At(p));
    return Drain();
  }

 private:
  struct Level {
    // Cells holding same-layer obstacles not yet woken; see WakeNear.
    std::vector<std::uint64_t> dormant;
    std::uint64_t dormant_left = 0;
    double lo_r = 0;  // Radii in [lo_r, hi_r).
    double hi_r = 0;  // The top level includes r_max.
    double cell = 0;
    double inv_cell = 0;
    std::int64_t n[D];
    std::uint64_t stride[D];
    std::uint64_t cells = 0;
    std::uint64_t blocks = 0;
    // Per cell: the point's D coordinates and radius, valid where the
    // occupancy bit is set; in the cell itself, so a window's row is one
    // run of memory.
    RunArray<double> points;
    RunArray<std::uint64_t> bits;  // Occupancy; two spare words.
    // Blocks of kBlockSide^D cells: one bit each, set when one holds a
    // point; two spare words.
    std::uint64_t block_stride[D];
    RunArray<std::uint64_t> block_bits;
    std::uint64_t count = 0;  // Points stored.
    double max_r = 0;         // Their largest radius.
    double min_r = std::numeric_limits<double>::infinity();  // Smallest.
    // Gap filling: per cell, one bit per half-cell (2^D of them) that a
    // single disk of this level's radii covers whole; 8 spare bytes.
    RunArray<std::uint8_t> cover;
  };

  // Asks for huge pages in the parts of one of a level's per-cell arrays
  // (`per_cell` elements a cell) whose cells may hold a point of the level:
  // where the raster's radius bounds over the rows a huge page spans meet
  // the level's radii. A run touches those parts over most of their pages
  // (a band of the field), and a huge page maps with one fault what took
  // hundreds, and covers as much per TLB entry; elsewhere it touches
  // nothing, so those parts stay unmapped. (Points of another radius,
  // same-layer obstacles', only miss the advice.)
  template <class T>
  void AdviseWhereLevelLands(const Level& level, RunArray<T>* array,
                             std::size_t per_cell) const {
    if (array->bytes() < kHugePageBytes) return;
    const std::size_t cell_bytes = sizeof(T) * per_cell;
    const auto row_cells = static_cast<std::uint64_t>(level.n[0]);
    const auto rows_y = static_cast<std::uint64_t>(level.n[1]);
    for (std::size_t begin = 0; begin + kHugePageBytes <= array->bytes();
         begin += kHugePageBytes) {
      const std::size_t end = begin + kHugePageBytes;
      const std::uint64_t first_row = begin / cell_bytes / row_cells;
      const std::uint64_t last_row = (end - 1) / cell_bytes / row_cells;
      // Rows are y (and z above them in 3D); the raster spans x-y.
      std::uint64_t y0 = first_row % rows_y, y1 = last_row % rows_y;
      if (first_row / rows_y != last_row / rows_y) {
        y0 = 0;
        y1 = rows_y - 1;
      }
      double lo[D], hi[D];
      for (int a = 0; a < D; ++a) {
        lo[a] = lo_[a];
        hi[a] = hi_[a];
      }
      lo[1] = lo_[1] + static_cast<double>(y0) * level.cell;
      hi[1] =
          std::min(hi_[1], lo_[1] + static_cast<double>(y1 + 1) * level.cell);
      double r_lo, r_hi;
      RadiusBounds(lo, hi, &r_lo, &r_hi);
      if (r_hi * (1 + 1e-9) >= level.lo_r && r_lo * (1 - 1e-9) <= level.hi_r) {
        array->AdviseHugePages(begin, end);
      }
    }
  }

  int LevelOf(double r) const {
    int l = 0;
    const int last = static_cast<int>(levels_.size()) - 1;
    while (l < last && r >= levels_[static_cast<std::size_t>(l + 1)].lo_r) {
      ++l;
    }
    return l;
  }

  // Truncation is floor here: negative values are clamped first.
  static std::int64_t AxisCell(const Level& level, int a, double v, double lo) {
    const double f = (v - lo) * level.inv_cell;
    if (!(f > 0)) return 0;
    const double last = static_cast<double>(level.n[a] - 1);
    return static_cast<std::int64_t>(f < last ? f : last);
  }
  std::uint64_t CellOf(const Level& level, const double* p) const {
    std::uint64_t c = 0;
    for (int a = 0; a < D; ++a) {
      c += level.stride[a] *
           static_cast<std::uint64_t>(AxisCell(level, a, p[a], lo_[a]));
    }
    return c;
  }

  // Calls f(q) for every stored point q (D coordinates, then its radius) in
  // the cells [c0, c1] (per axis) of `level`, scanning occupancy bits, in
  // cell order. In 3D, where a window has rows squared, rows of up to 16
  // cells (nearly every window) go 4 to a word, 16 bits each, and one loop
  // takes the word's points: a loop per row exits after 0 to 3 points, in
  // no order a predictor learns. (In 2D that was no faster.)
  template <class F>
  void ScanCells(const Level& level, const std::int64_t* c0,
                 const std::int64_t* c1, F& f) const {
    const auto len = static_cast<std::uint64_t>(c1[0] - c0[0] + 1);
    for (std::int64_t z = c0[2]; z <= c1[2]; ++z) {
      std::uint64_t base = static_cast<std::uint64_t>(c0[0]);
      if constexpr (D == 3) {
        base += static_cast<std::uint64_t>(z) * level.stride[2];
      }
      if (D == 3 && len <= 16) {
        for (std::int64_t y = c0[1]; y <= c1[1]; y += 4) {
          std::uint64_t start[4];
          std::uint64_t word = 0;
          for (int k = 0; k < 4; ++k) {
            // Rows past c1 repeat the last one, their bits dropped.
            const std::int64_t row = std::min<std::int64_t>(y + k, c1[1]);
            start[k] = base + static_cast<std::uint64_t>(row) * level.stride[1];
            const std::uint64_t keep =
                std::uint64_t{0} - static_cast<std::uint64_t>(y + k <= c1[1]);
            word |= (BitRun(level.bits.data(), start[k],
                            static_cast<unsigned>(len)) &
                     keep)
                    << (16 * k);
          }
          while (word != 0) {
            const auto bit = static_cast<unsigned>(__builtin_ctzll(word));
            word &= word - 1;
            const std::uint64_t cell = start[bit >> 4] + (bit & 15);
            f(&level.points[cell * (D + 1)]);
          }
        }
        continue;
      }
      for (std::int64_t y = c0[1]; y <= c1[1]; ++y) {
        const std::uint64_t start =
            base + static_cast<std::uint64_t>(y) * level.stride[1];
        for (std::uint64_t off = 0; off < len; off += 64) {
          std::uint64_t bits = BitRun(
              level.bits.data(), start + off,
              static_cast<unsigned>(std::min<std::uint64_t>(64, len - off)));
          while (bits != 0) {
            const std::uint64_t cell =
                start + off + static_cast<std::uint64_t>(__builtin_ctzll(bits));
            bits &= bits - 1;
            f(&level.points[cell * (D + 1)]);
          }
        }
      }
    }
  }

  // Calls f(q) for every stored point q (D coordinates, then its radius)
  // that may lie within reach(r_q) of the box [b0, b1]: the cells of every
  // level that meet the box grown by w_l = reach(the largest radius the
  // level can hold there; see below). `reach` must not fall as the radius
  // grows. The level's block
  // bits come first, so a wide window over a fine level where no point is
  // near (a big point over small ones) costs a few words.
  //
  // Stored radii are the field's at their places (radii_from_field_), so
  // the raster bounds the radii of every point that can matter. A level
  // whose radii all miss those bounds is skipped, and the others' windows
  // reach only as far as the bounds allow. In 2D the bounds are read once,
  // loosely, over the box grown by the widest reach of any level. In 3D,
  // where a window costs rows squared, each level reads tighter bounds over
  // the box grown by its own widest reach (its points that can matter lie
  // there): fewer levels are scanned (callgrind, ratio 10: dense 3D -10 %
  // instructions), where in 2D the extra reads cost more than they spare.
  // In a smooth field that leaves one level or two.
  template <class Reach, class F>
  void ForEachNear(const double* b0, const double* b1, Reach reach, F f) const {
    double r_lo = 0;
    double r_hi = std::numeric_limits<double>::infinity();
    // The raster's bounds over [b0, b1] grown by w (loose in 2D, tight in
    // 3D), widened far past the hair by which bilinear sampling may round
    // past the pixels it blends.
    auto bounds_within = [&](double w) {
      double e0[D], e1[D];
      for (int a = 0; a < D; ++a) {
        e0[a] = b0[a] - w;
        e1[a] = b1[a] + w;
      }
      if constexpr (D == 2) {
        LooseRadiusBounds(e0, e1, &r_lo, &r_hi);
      } else {
        RadiusBounds(e0, e1, &r_lo, &r_hi);
      }
      r_lo *= 1 - 1e-9;
      r_hi *= 1 + 1e-9;
    };
    if (D == 2 && radii_from_field_) {
      double stored = 0;
      for (const Level& level : levels_) {
        if (level.count != 0) stored = std::max(stored, level.max_r);
      }
      bounds_within(reach(stored));
    }
    for (const Level& level : levels_) {
      if (level.count == 0) continue;
      if (D == 3 && radii_from_field_) {
        bounds_within(reach(level.max_r));
      }
      if (level.max_r < r_lo || level.min_r > r_hi) continue;
      const double w = reach(std::min(level.max_r, r_hi));
      std::int64_t c0[3] = {0, 0, 0}, c1[3] = {0, 0, 0};
      for (int a = 0; a < D; ++a) {
        c0[a] = AxisCell(level, a, b0[a] - w, lo_[a]);
        c1[a] = AxisCell(level, a, b1[a] + w, lo_[a]);
      }
      // Rows of blocks first: a block row with no point in the window's
      // blocks skips its kBlockSide rows of cells (kBlockSide^2 in 3D).
      std::int64_t k0[3] = {0, 0, 0}, k1[3] = {0, 0, 0};
      for (int a = 0; a < D; ++a) {
        k0[a] = c0[a] >> kBlockBits;
        k1[a] = c1[a] >> kBlockBits;
      }
      const auto len = static_cast<std::uint64_t>(k1[0] - k0[0] + 1);
      for (std::int64_t kz = k0[2]; kz <= k1[2]; ++kz) {
        for (std::int64_t ky = k0[1]; ky <= k1[1]; ++ky) {
          std::uint64_t start =
              static_cast<std::uint64_t>(k0[0]) +
              static_cast<std::uint64_t>(ky) * level.block_stride[1];
          if constexpr (D == 3) {
            start += static_cast<std::uint64_t>(kz) * level.block_stride[2];
          }
          bool any = false;
          for (std::uint64_t off = 0; off < len && !any; off += 64) {
            any = BitRun(level.block_bits.data(), start + off,
                         static_cast<unsigned>(
                             std::min<std::uint64_t>(64, len - off))) != 0;
          }
          if (!any) continue;
          std::int64_t s0[3] = {c0[0], 0, 0}, s1[3] = {c1[0], 0, 0};
          const std::int64_t k[3] = {0, ky, kz};
          for (int a = 1; a < D; ++a) {
            s0[a] = std::max(c0[a], k[a] << kBlockBits);
            s1[a] = std::min(c1[a], (k[a] << kBlockBits) + kBlockSide - 1);
          }
          ScanCells(level, s0, s1, f);
        }
      }
    }
  }

  // In the region and clear of every obstacle, for a point of radius r.
  bool Inside(const double* p, double r) const {
    for (int a = 0; a < D; ++a) {
      if (!(p[a] >= lo_[a] && p[a] < hi_[a])) return false;
    }
    if (!box_only_ && !region_.Contains(p)) return false;
    if (obstacles_.empty()) return true;
    return per_point_ ? !obstacles_.TooCloseExtra(
                            p, per_point_footprint_ ? r / 2 : 0, r)
                      : !obstacles_.TooClose(p);
  }

  void Halt(absl::Status status) {
    if (halt_.ok()) halt_ = std::move(status);
  }

  // Records an accepted point: store, grid, coverage, active list, output.
  void Accept(const double* p, double r) {
    Place(p, r, /*active=*/true);
    if (dormant_left_ > 0) WakeNear(p, r);
    if (!out_->template Add<D>(p, r)) Halt(out_->StopStatus());
  }

  // Makes the dormant points q within kWakeRadius max(r, r_q) of p active,
  // level by level, in cell order.
  void WakeNear(const double* p, double r) {
    for (std::size_t l = 0; l < levels_.size(); ++l) {
      Level& level = levels_[l];
      if (level.dormant_left == 0) continue;
      const double reach = kWakeRadius * std::max(r, level.hi_r);
      const auto w =
          static_cast<std::int64_t>(std::ceil(reach * level.inv_cell));
      std::int64_t c0[3] = {0, 0, 0}, c1[3] = {0, 0, 0};
      for (int a = 0; a < D; ++a) {
        const std::int64_t c = AxisCell(level, a, p[a], lo_[a]);
        c0[a] = std::max<std::int64_t>(0, c - w);
        c1[a] = std::min<std::int64_t>(level.n[a] - 1, c + w);
      }
      for (std::int64_t z = c0[2]; z <= c1[2]; ++z) {
        for (std::int64_t y = c0[1]; y <= c1[1]; ++y) {
          // A row's cells are consecutive bits.
          const std::uint64_t row =
              static_cast<std::uint64_t>(y) * level.stride[1] +
              (D == 3 ? static_cast<std::uint64_t>(z) * level.stride[D - 1]
                      : 0);
          ForEachSetBit(
              level.dormant.data(), row + static_cast<std::uint64_t>(c0[0]),
              row + static_cast<std::uint64_t>(c1[0]) + 1,
              [&](std::uint64_t c) {
                const double* q = &level.points[c * (D + 1)];
                const double limit = kWakeRadius * std::max(r, q[D]);
                double d2 = 0;
                for (int a = 0; a < D; ++a) {
                  d2 += (q[a] - p[a]) * (q[a] - p[a]);
                }
                if (d2 >= limit * limit) return;
                level.dormant[c >> 6] &= ~(std::uint64_t{1} << (c & 63));
                --level.dormant_left;
                --dormant_left_;
                active_.push_back({c, WokenIndex(), static_cast<int>(l)});
              });
        }
      }
    }
  }

  // A point in its level's grid, covering its disk, and active when asked:
  // Accept() without the output.
  void Place(const double* p, double r, bool active) {
    const int l = LevelOf(r);
    Level& level = levels_[static_cast<std::size_t>(l)];
    const std::uint64_t c = CellOf(level, p);
    assert(((level.bits[c >> 6] >> (c & 63)) & 1) == 0);
    for (int a = 0; a < D; ++a) level.points[c * (D + 1) + a] = p[a];
    level.points[c * (D + 1) + D] = r;
    level.bits[c >> 6] |= std::uint64_t{1} << (c & 63);
    std::uint64_t block = 0;
    for (int a = 0; a < D; ++a) {
      block += level.block_stride[a] *
               static_cast<std::uint64_t>(AxisCell(level, a, p[a], lo_[a]) >>
                                          kBlockBits);
    }
    level.block_bits[block >> 6] |= std::uint64_t{1} << (block & 63);
    ++level.count;
    level.max_r = std::max(level.max_r, r);
    level.min_r = std::min(level.min_r, r);
    if (fill_gaps_) MarkCovered(p, r);
    if (active) active_.push_back({c, next_index_++, l});
  }

  // The half-cell index along axis a of v in `level`, clamped to the grid.
  std::int64_t HalfIndex(const Level& level, int a, double v) const {
    const double f = (v - lo_[a]) * (2 * level.inv_cell);
    if (!(f > 0)) return 0;
    const double last = static_cast<double>(2 * level.n[a] - 1);
    return static_cast<std::int64_t>(f < last ? f : last);
  }

  // ORs `mask` into n bytes (n may be <= 0), 8 at a time. The last word
  // is OR-ed whole, with `mask` only in the bytes of the run: rows are
  // mostly shorter than 8 cells, and a loop over the odd bytes missed its
  // exit about 3 times a point. The bytes past the run take 0, so p[0..7]
  // must be readable and writable (the cover array has 8 spare bytes).
  static void OrRun(std::uint8_t* p, std::int64_t n, std::uint8_t mask) {
    const std::uint64_t wide = 0x0101010101010101ULL * mask;
    for (; n > 8; n -= 8, p += 8) {
      std::uint64_t v;
      std::memcpy(&v, p, sizeof v);
      v |= wide;
      std::memcpy(p, &v, sizeof v);
    }
    // n in [.., 8]: the low n bytes of the word (none for n <= 0).
    static constexpr std::uint64_t kLowBytes[9] = {
        0,
        0xffULL,
        0xffffULL,
        0xffffffULL,
        0xffffffffULL,
        0xffffffffffULL,
        0xffffffffffffULL,
        0xffffffffffffffULL,
        ~std::uint64_t{0}};
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    v |= wide & kLowBytes[n > 0 ? n : 0];
    std::memcpy(p, &v, sizeof v);
  }

  // Marks the half-cells (2^D per cell, one bit each) of the level that
  // `radius` belongs to that lie wholly within `radius` of p: every place
  // there has a point closer than its radius, so gap filling skips them.
  // Marking in the radius's own level costs the same few rows for any
  // radius. Per row of half-cells the covered ones form one run; the bound
  // is shrunk so rounding can only leave a covered piece unmarked.
  void MarkCovered(const double* p, double radius) {
    Level& l0 = levels_[static_cast<std::size_t>(LevelOf(radius))];
    const double h = l0.cell / 2;
    const double inv_h = 2 * l0.inv_cell;
    const double r2 = radius * radius * kCoverShrink;
    const std::int64_t hz0 =
        D == 3 ? HalfIndex(l0, D - 1, p[D - 1] - radius) : 0;
    const std::int64_t hz1 =
        D == 3 ? HalfIndex(l0, D - 1, p[D - 1] + radius) : 0;
    for (std::int64_t hz = hz0; hz <= hz1; ++hz) {
      double rem_z = r2;
      if constexpr (D == 3) {
        const double z0 = lo_[2] + static_cast<double>(hz) * h;
        const double fz = std::max(p[2] - z0, z0 + h - p[2]);
        rem_z -= fz * fz;
        if (rem_z <= 0) continue;
      }
      const std::int64_t hy0 = HalfIndex(l0, 1, p[1] - radius);
      const std::int64_t hy1 = HalfIndex(l0, 1, p[1] + radius);
      for (std::int64_t hy = hy0; hy <= hy1; ++hy) {
        const double y0 = lo_[1] + static_cast<double>(hy) * h;
        const double fy = std::max(p[1] - y0, y0 + h - p[1]);
        const double rem = rem_z - fy * fy;
        if (rem <= 0) continue;
        const double w = std::sqrt(rem);
        const std::int64_t hx0 =
            std::max<std::int64_t>(0, CeilToInt((p[0] - w - lo_[0]) * inv_h));
        const std::int64_t hx1 = std::min<std::int64_t>(
            2 * l0.n[0] - 1, FloorToInt((p[0] + w - lo_[0]) * inv_h) - 1);
        std::uint64_t row = static_cast<std::uint64_t>(hy >> 1) * l0.stride[1];
        unsigned yz_bits = static_cast<unsigned>((hy & 1) << 1);
        if constexpr (D == 3) {
          row += static_cast<std::uint64_t>(hz >> 1) * l0.stride[2];
          yz_bits |= static_cast<unsigned>((hz & 1) << 2);
        }
        if (hx0 > hx1) continue;
        // Whole cells take both x halves; odd ends take one. Which ends are
        // odd is data (about 5 branch misses a point): both end cells are
        // written, with no bit where the end is whole. (cx1 >= hx0 >> 1 >=
        // 0, so cells[cx1] is in the row even when the odd start took the
        // only cell.)
        std::int64_t cx0 = hx0 >> 1, cx1 = hx1 >> 1;
        std::uint8_t* cells = &l0.cover[row];
        const bool odd_start = (hx0 & 1) != 0;
        cells[cx0] |= static_cast<std::uint8_t>(static_cast<unsigned>(odd_start)
                                                << (yz_bits | 1));
        cx0 += odd_start;
        const bool even_end = (hx1 & 1) == 0 && cx1 >= cx0;
        cells[cx1] |= static_cast<std::uint8_t>(static_cast<unsigned>(even_end)
                                                << yz_bits);
        cx1 -= even_end;
        OrRun(cells + cx0, cx1 - cx0 + 1,
              static_cast<std::uint8_t>(3u << yz_bits));
      }
    }
  }

  // --- Bridson ---------------------------------------------------------

  // Collects into the list every stored point that can conflict with a
  // candidate within `rho` of p whose radius is at most `rc_hi`: those with
  // |q - p| < rho + max(rc_hi, r_q). In 3D, those nearer than rho / 2 +
  // max(rc_hi, r_q) come first: candidates mostly die on them, and
  // Conflicts stops at the first hit. 2D lists are short (about 10 points),
  // and putting the near ones first saved less than it cost.
  // Whether a point is in, near or far is data the branch predictor cannot
  // learn (8 misses a point in dense 2D): each point is written to the
  // lists it may join, and each count grows by its test.
  void Gather(const double* p, double rho, double rc_hi) {
    list_size_ = 0;
    far_size_ = 0;
    ForEachNear(
        p, p,
        [&](double max_r) {
          return (rho + std::max(rc_hi, max_r)) * kBoundSlack;
        },
        [&](const double* q) SCATTER_INLINE_LAMBDA {
          double d2 = 0;
          for (int a = 0; a < D; ++a) {
            const double d = q[a] - p[a];
            d2 += d * d;
          }
          const double m = std::max(rc_hi, q[D]);
          const double t = (rho + m) * kBoundSlack;
          const bool in_bound = d2 < t * t;
          MakeRoom();
          for (int a = 0; a < D; ++a) list_[a][list_size_] = q[a];
          list_r2_[list_size_] = q[D] * q[D] * (1 + kDistanceSlack);
          if constexpr (D == 2) {
            list_size_ += in_bound;
          } else {
            const double near = rho * 0.5 + m;
            const bool is_near = d2 < near * near;  // Implies in_bound.
            if (far_size_ + D + 1 > far_.size()) {
              far_.resize(std::max<std::size_t>(64, 2 * far_.size()));
            }
            std::copy(q, q + D + 1, &far_[far_size_]);
            list_size_ += is_near;
            far_size_ +=
                static_cast<std::size_t>(in_bound & !is_near) * (D + 1);
          }
        });
    for (std::size_t j = 0; j < far_size_; j += D + 1) {
      Append(&far_[j], far_[j + D]);
    }
    PadList();
  }

  // Room in the list for one more point and its padding.
  void MakeRoom() {
    if (list_size_ + 4 > list_r2_.size()) {
      const std::size_t n = std::max<std::size_t>(64, 2 * list_r2_.size());
      for (auto& column : list_) column.resize(n);
      list_r2_.resize(n);
    }
  }

  // Adds q, of radius r, to the list. The list must be padded (PadList)
  // before ListConflict reads it.
  void Append(const double* q, double r) {
    MakeRoom();
    for (int a = 0; a < D; ++a) list_[a][list_size_] = q[a];
    list_r2_[list_size_] = r * r * (1 + kDistanceSlack);
    ++list_size_;
  }

  // Groups of 4 read past the end: NaN there is never closer than
  // anything. (Append leaves room for them.)
  void PadList() {
    MakeRoom();
    for (std::size_t j = list_size_; j < list_size_ + 3; ++j) {
      for (int a = 0; a < D; ++a) {
        list_[a][j] = std::numeric_limits<double>::quiet_NaN();
      }
      list_r2_[j] = 0;
    }
  }

  void Poll() {
    if (++since_poll_ >= kPollEvery) {
      since_poll_ = 0;
      if (stop_()) Halt(absl::CancelledError("sampling stopped by the caller"));
    }
  }

  // Whether every place within `reach` of p is in the region and clear of
  // obstacles, so candidates there need no inside test.
  bool InteriorWithin(const double* p, double reach) const {
    double r0[D], r1[D];
    for (int a = 0; a < D; ++a) {
      r0[a] = p[a] - reach;
      r1[a] = p[a] + reach;
      if (!(r0[a] >= lo_[a] && r1[a] < hi_[a])) return false;
    }
    if (!obstacles_.empty()) {
      bool covered = false, reaches = false;
      obstacles_.ClassifyExtra(r0, r1, 0, max_extra_, &covered, &reaches,
                               field_.r_min, field_.r_max);
      if (reaches) return false;
    }
    return box_only_ || region_.Classify(r0, r1) == Region::Overlap::kInside;
  }

  // Whether c is closer to a listed point q than max(r_c, r_q), given
  // rc2 = r_c^2 (1 + kDistanceSlack). With rc2 = 0: closer than r_q alone, a
  // conflict whatever c's own radius, so the raster need not be read.
  bool ListConflict(const double* c, double rc2) const {
    const double* xs[D];
    for (int a = 0; a < D; ++a) xs[a] = list_[a].data();
    return Ops::template AnyConflict<D>(xs, list_r2_.data(), list_size_, c,
                                        rc2);
  }

  // The largest radius anywhere within `reach` of p (per axis): from the
  // raster's pixels, tightened by the interpolation where they are far
  // apart (TightenRadiusBounds). From the pixels alone, every place within
  // two pixels of a sharp edge had r_max as its bound, so a visit there
  // gathered every point within r_max: at r_max / r_min = 100 over a 0/1
  // raster a run took 22 s instead of 1.3, and 1000 did not end.
  double MaxRadiusNear(const double* p, double reach) const {
    double b0[D], b1[D];
    for (int a = 0; a < D; ++a) {
      b0[a] = p[a] - reach;
      b1[a] = p[a] + reach;
    }
    double r_lo, r_hi;
    RadiusBounds(b0, b1, &r_lo, &r_hi);
    TightenRadiusBounds(b0, b1, &r_lo, &r_hi);
    return r_hi;
  }

  // Tests candidate c, whose radius is read only when no listed point's own
  // radius already rules it out; accepts it when it is inside and clear.
  // Dense only (`from` is the parent, else nullptr): when c's radius r_c
  // exceeds the parent's r, c conflicts with the parent, so it moves out
  // along `dir` to where s = r(s) (1 + eps), s its distance from the
  // parent: first to r_c (1 + eps), then by up to kMoveOutSteps secant
  // steps while the radius there still reaches back to the parent. A
  // candidate that would pass `max_step` is dropped (the neighbourhood was
  // gathered for no farther).
  bool TryCandidate(double* c, bool interior, const double* from, double r,
                    double step, const double* dir, double max_step) {
    if (ListConflict(c, 0)) return false;
    double rc = field_.At(c);
    if (from != nullptr && rc > r) {
      const double grow = 1 + eps_;
      double s0 = step, r0 = rc;
      double s1 = rc * grow;
      for (int k = 0;; ++k) {
        if (!(s1 <= max_step)) return false;
        for (int a = 0; a < D; ++a) c[a] = from[a] + s1 * dir[a];
        rc = field_.At(c);
        if (!(rc * grow > s1) || k == kMoveOutSteps) break;
        // Secant on f(s) = r(s) (1 + eps) - s, which falls through its
        // root when the radius grows slower than the distance.
        const double f0 = r0 * grow - s0;
        const double f1 = rc * grow - s1;
        if (!(f0 > f1)) return false;
        const double s2 = (s1 + f1 * (s1 - s0) / (f0 - f1)) * grow;
        s0 = s1;
        r0 = rc;
        s1 = s2;
      }
      if (ListConflict(c, 0)) return false;
    }
    if (!(interior || Inside(c, rc)) ||
        ListConflict(c, rc * rc * (1 + kDistanceSlack))) {
      return false;
    }
    Append(c, rc);
    PadList();
    Accept(c, rc);
    return true;
  }

  // Dense: one visit, k candidates on evenly stepped directions rotated by
  // a random unit vector (2D) or rotation (3D), at r_p (1 + eps) from the
  // parent p. A candidate whose own radius is larger moves out along its
  // direction until it clears the parent (see TryCandidate).
  // The neighbourhood is gathered first, for candidates within rho of p
  // with radii up to the raster's bound there.
  void VisitDense(const double* p, double r, std::uint64_t index) {
    CounterRng rng(Combine(Combine(candidate_key_, index), 0));
    const double step = r * (1 + eps_);
    // Unmoved candidates lie within step of p, so their radii are at most
    // hi0 and moved ones within hi0 (1 + eps).
    const double hi0 = MaxRadiusNear(p, step * kBoundSlack);
    // No candidate moves out when no radius near p exceeds r; then the
    // first bound is the only one. Otherwise candidates may move out to
    // max_step, 5 % past the radius bound near p, and the radii there are
    // bounded again.
    const bool moves = hi0 > r;
    const double max_step = moves ? hi0 * (1 + eps_) * 1.05 : step;
    const double rho = max_step * kBoundSlack + coordinate_slack_;
    const double rc_hi = moves ? MaxRadiusNear(p, rho) : hi0;
    const bool interior = InteriorWithin(p, rho);
    Gather(p, rho, rc_hi);
    double m[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    if constexpr (D == 2) {
      double u, v;
      RandomUnit2(rng, &u, &v);
      m[0][0] = u;
      m[0][1] = -v;
      m[1][0] = v;
      m[1][1] = u;
    } else {
      RandomRotation3(rng, m);
    }
    // A woken point grows into the gaps of a pattern not its own: more
    // directions (kWokenDirections, as in the constant-radius run).
    const bool woken = (index & kWokenBit) != 0;
    const auto& circle = woken ? woken_circle_ : circle_;
    const auto& sphere = woken ? woken_sphere_ : sphere_;
    const int directions = D == 2 ? static_cast<int>(circle.size())
                                  : static_cast<int>(sphere.size());
    for (int i = 0; i < directions; ++i) {
      Poll();
      double dir[D];
      for (int a = 0; a < D; ++a) {
        if constexpr (D == 2) {
          dir[a] = m[a][0] * circle[i][0] + m[a][1] * circle[i][1];
        } else {
          dir[a] = m[a][0] * sphere[i][0] + m[a][1] * sphere[i][1] +
                   m[a][2] * sphere[i][2];
        }
      }
      double c[D];
      for (int a = 0; a < D; ++a) c[a] = p[a] + step * dir[a];
      TryCandidate(c, interior, p, r, step, dir, max_step);
      if (!halt_.ok()) return;
    }
  }

  // Classic: candidates uniform in the annulus (shell) [r_p, 2 r_p]. A visit
  // ends at its first accepted candidate and the point stays active; it
  // retires after a visit of k failures. One gather serves every visit
  // (accepted candidates join the list).
  void VisitClassic(const double* p, double r, std::uint64_t index) {
    const double rho = 2 * r * kBoundSlack + coordinate_slack_;
    const double rc_hi = MaxRadiusNear(p, rho);
    const bool interior = InteriorWithin(p, rho);
    Gather(p, rho, rc_hi);
    const ShellDirectionTable& shell_directions = *shell_directions_;
    for (std::uint64_t visit = 0;; ++visit) {
      const std::uint64_t visit_key =
          Combine(Combine(candidate_key_, index), visit);
      bool accepted = false;
      for (int i = 0; i < attempts_ && !accepted; ++i) {
        Poll();
        CounterRng rng(visit_key, static_cast<std::uint64_t>(i) << kBlockShift);
        double v[D];
        if constexpr (D == 2) {
          UnitShellPoint2d(shell_directions, rng.Next(), v);
        } else {
          UnitShellPoint<D>(&rng, v);
        }
        double c[D];
        for (int a = 0; a < D; ++a) c[a] = p[a] + r * v[a];
        accepted = TryCandidate(c, interior, nullptr, r, 0, nullptr, 0);
        if (!halt_.ok()) return;
      }
      if (!accepted) return;
    }
  }

  // Bounds of r over the box [lo, hi] (x-y only), widened a little against
  // rounding in the bilinear interpolation.
  void RadiusBounds(const double* lo, const double* hi, double* r_lo,
                    double* r_hi) const {
    RadiusBounds(PixelsOf(lo, hi), r_lo, r_hi);
  }
  // The same in two steps: the pixels that decide them, then the bounds.
  DensityBounds::Range PixelsOf(const double* lo, const double* hi) const {
    return density_bounds_.Pixels(lo[0], lo[1], hi[0], hi[1]);
  }
  void RadiusBounds(const DensityBounds::Range& pixels, double* r_lo,
                    double* r_hi) const {
    double d_lo, d_hi;
    density_bounds_.Bounds(pixels, &d_lo, &d_hi);
    RadiiOf(d_lo, d_hi, r_lo, r_hi);
  }

  // Tightens [*r_lo, *r_hi], bounds of r over the box [lo, hi] (x-y only),
  // with the interpolation's values where the box lies inside 2 x 2
  // bilinear patches (Raster::PatchBounds): the pixels' bounds stay r_min
  // to r_max across a sharp edge in the density however small the box, and
  // there
  // the gap search kept every point within r_max of each piece, to the
  // deepest level (a 0/1 raster at r_max / r_min = 25 stalled).
  // Only where the bounds are wide: in a smooth field the pixels' bounds
  // are within a few percent, the lists short either way, and the corner
  // reads (4 to 9 interpolations) cost a tenth of a run (classic 2D, ratio
  // 10) for nothing.
  void TightenRadiusBounds(const double* lo, const double* hi, double* r_lo,
                           double* r_hi) const {
    if (!(*r_hi > 1.25 * *r_lo)) return;
    double d_lo, d_hi;
    if (!field_.density->PatchBounds(lo[0], lo[1], hi[0], hi[1], &d_lo,
                                     &d_hi)) {
      return;
    }
    double t_lo, t_hi;
    RadiiOf(d_lo, d_hi, &t_lo, &t_hi);
    *r_lo = std::max(*r_lo, t_lo);
    *r_hi = std::min(*r_hi, t_hi);
  }

  // RadiusBounds from DensityBounds::LooseBounds: wider, and cheaper.
  void LooseRadiusBounds(const double* lo, const double* hi, double* r_lo,
                         double* r_hi) const {
    double d_lo, d_hi;
    density_bounds_.LooseBounds(lo[0], lo[1], hi[0], hi[1], &d_lo, &d_hi);
    RadiiOf(d_lo, d_hi, r_lo, r_hi);
  }

  // The radius bounds of density bounds (radius falls as density rises).
  void RadiiOf(double d_lo, double d_hi, double* r_lo, double* r_hi) const {
    *r_lo = std::max(field_.r_min, field_.FromDensity(d_hi) * (1 - 1e-12));
    *r_hi = std::min(field_.r_max, field_.FromDensity(d_lo) * (1 + 1e-12));
  }

  // Processes active points first in, first out until none is left, or the
  // run halts.
  // A woken point's generation index carries this bit in a dense run
  // (which also keys its candidates apart from any emitted point's).
  static constexpr std::uint64_t kWokenBit = std::uint64_t{1} << 62;
  std::uint64_t WokenIndex() {
    return next_index_++ | (dense_ ? kWokenBit : 0);
  }

  // A dormant point: its cell in its level.
  struct DormantAt {
    std::uint64_t cell;
    int level;
  };

  // Wakes the scheduled point at `at`, unless it is awake already.
  void WakeScheduled(const DormantAt& at) {
    Level& level = levels_[static_cast<std::size_t>(at.level)];
    const std::uint64_t c = at.cell;
    if (((level.dormant[c >> 6] >> (c & 63)) & 1) == 0) return;
    level.dormant[c >> 6] &= ~(std::uint64_t{1} << (c & 63));
    --level.dormant_left;
    --dormant_left_;
    active_.push_back({c, WokenIndex(), at.level});
  }

  absl::Status Drain() {
    while (halt_.ok() &&
           schedule_.Next(
               head_, [this](const DormantAt& at) { WakeScheduled(at); },
               [this] { return active_.size(); })) {
      const Active e = active_[head_++];
      double p[D];
      const double* q =
          &levels_[static_cast<std::size_t>(e.level)].points[e.cell * (D + 1)];
      for (int a = 0; a < D; ++a) p[a] = q[a];
      const double r = q[D];
      if (dense_) {
        VisitDense(p, r, e.index);
      } else {
        VisitClassic(p, r, e.index);
      }
      // Drop the retired prefix now and then, so the queue holds about the
      // frontier, not every point ever made.
      if (head_ >= 4096 && head_ * 2 >= active_.size()) {
        active_.erase(active_.begin(),
                      active_.begin() + static_cast<std::ptrdiff_t>(head_));
        schedule_.Dropped(head_);
        head_ = 0;
      }
    }
    return halt_;
  }

  // --- Gap filling -----------------------------------------------------

  void UnclippedCellBounds(std::uint64_t c, double* b0, double* b1) const {
    const Level& l0 = levels_[0];
    for (int a = 0; a < D; ++a) {
      const std::uint64_t i =
          (c / l0.stride[a]) % static_cast<std::uint64_t>(l0.n[a]);
      b0[a] = lo_[a] + static_cast<double>(i) * l0.cell;
      b1[a] = b0[a] + l0.cell;
    }
  }

  // A point uniform in [b0, b1) from the stream of (cell, piece).
  void RandomPointIn(const double* b0, const double* b1, std::uint64_t cell,
                     std::uint64_t piece, double* p) const {
    CounterRng rng(Combine(gap_key_, cell), piece << kBlockShift);
    for (int a = 0; a < D; ++a) {
      p[a] = b0[a] + rng.Uniform01() * (b1[a] - b0[a]);
      if (!(p[a] < b1[a])) p[a] = b0[a];
    }
  }

  // Fill off: a random place inside the region in the first level-0 cell
  // that has one (16 tries per cell); false when none is found, or when the
  // stop predicate (polled every kPollEvery cells: the region may lie at the
  // far end of a big grid) halts the run.
  bool FirstSeed(double* p) {
    for (std::uint64_t c = 0; c < levels_[0].cells; ++c) {
      Poll();
      if (!halt_.ok()) return false;
      double b0[D], b1[D];
      UnclippedCellBounds(c, b0, b1);
      for (int a = 0; a < D; ++a) b1[a] = std::min(b1[a], hi_[a]);
      if (!box_only_ && region_.Classify(b0, b1) == Region::Overlap::kOutside) {
        continue;
      }
      for (std::uint64_t piece = 0; piece < 16; ++piece) {
        RandomPointIn(b0, b1, c, piece, p);
        const double r = field_.At(p);
        if (!Inside(p, r)) continue;
        // Clear of the points already in the grids (same-layer obstacles,
        // and those grown from scheduled ones).
        Gather(p, 0, r);
        if (!ListConflict(p, r * r * (1 + kDistanceSlack))) return true;
      }
    }
    return false;
  }

  // Where the children of (cell, piece) start in the scan order.
  unsigned ChildTurn(std::uint64_t cell, std::uint64_t piece) const {
    return internal::ChildTurn(gap_key_, cell, piece);
  }

  std::vector<double>& GapList(int depth, std::size_t n) {
    std::vector<double>& list = gap_lists_[depth];
    if (list.size() < n * (D + 1)) list.resize(n * (D + 1));
    return list;
  }

  // Into gap level 0: every point that can cover or conflict with a place
  // in [b0, b1] whose radius is at most r_hi: those nearer the box than
  // max(r_q, r_hi). Entries are D coordinates and r_q^2 (1 + kDistanceSlack).
  std::size_t GatherAroundBox(const double* b0, const double* b1, double r_hi) {
    std::size_t n = 0;
    ForEachNear(
        b0, b1,
        [&](double max_r) { return std::max(max_r, r_hi) * kBoundSlack; },
        [&](const double* q) {
          const double t = std::max(q[D], r_hi) * kBoundSlack;
          if (NearestDistance2(q, b0, b1, D) >= t * t) return;
          std::vector<double>& list = GapList(0, n + 1);
          for (int a = 0; a < D; ++a) list[n * (D + 1) + a] = q[a];
          list[n * (D + 1) + D] = q[D] * q[D] * (1 + kDistanceSlack);
          ++n;
        });
    return n;
  }

  // Gap level 0 for cell i of level l, whose radius bound is r_hi:
  // what GatherAroundBox collects for it, or more. The cells of one block
  // of 2^D often come one after another (FillCell takes a coarser cell's
  // children in turn: 57 % of searched cells follow one of their block in
  // 3D at ratio 10, 13 % in 2D), so the list is gathered for the block's
  // box with the bound over the block's pixels and kept until a point is
  // added or another block comes. A longer list changes no answer:
  // FindUncovered's first filter drops every point that does not reach the
  // piece, and the order of the rest decides only which sound cover test
  // proves a piece covered first (and which of two equal powers is taken).
  std::size_t GatherForCell(int l, const std::uint64_t* i, double r_hi) {
    const Level& level = levels_[static_cast<std::size_t>(l)];
    bool same = gap_block_level_ == l && r_hi <= gap_block_r_hi_;
    std::uint64_t block[D];
    for (int a = 0; a < D; ++a) {
      block[a] = i[a] >> 1;
      same &= block[a] == gap_block_[a];
    }
    if (same) return gap_block_n_;
    // The block's box, by FillCell's own expressions: k0 is its even
    // cell's u0 and k1 its odd cell's u1, so every cell's box lies inside
    // it bit for bit.
    double k0[D], k1[D];
    for (int a = 0; a < D; ++a) {
      k0[a] = lo_[a] + static_cast<double>(2 * block[a]) * level.cell;
      k1[a] = std::min(
          lo_[a] + static_cast<double>(2 * block[a] + 1) * level.cell +
              level.cell,
          hi_[a]);
    }
    double block_lo, block_hi;
    RadiusBounds(PixelsOf(k0, k1), &block_lo, &block_hi);
    TightenRadiusBounds(k0, k1, &block_lo, &block_hi);  // As MaxRadiusNear.
    gap_block_r_hi_ = std::max(block_hi, r_hi);
    gap_block_n_ = GatherAroundBox(k0, k1, gap_block_r_hi_);
    gap_block_level_ = l;
    for (int a = 0; a < D; ++a) gap_block_[a] = block[a];
    return gap_block_n_;
  }

  // Whether p, of radius rp, is clear of all m points of `list`.
  static bool ClearOf(const double* list, std::size_t m, const double* p,
                      double rp) {
    const double rp2 = rp * rp * (1 + kDistanceSlack);
    for (std::size_t j = 0; j < m; ++j) {
      const double* q = &list[j * (D + 1)];
      double d2 = 0;
      for (int a = 0; a < D; ++a) {
        const double d = q[a] - p[a];
        d2 += d * d;
      }
      if (d2 < std::max(rp2, q[D])) return false;
    }
    return true;
  }

  // Looks for a place p in [b0, b1) that conflicts with none of the n points
  // of gap level depth - 1; on success *rp is its radius. With the radius
  // bounded by [r_lo, r_hi] over the piece, a point q leaves the piece alone
  // when it is at least max(r_q, r_hi) from all of it, and covers it all
  // when it is nearer than max(r_q, r_lo) to all of it. A piece left alone
  // by every point is free; otherwise it splits into 2^D children, down to
  // a depth where one random place decides.
  //
  // r_lo and r_hi come from the parent, whose bounds were read from the
  // pixels `outer`: a piece within the same pixels has those bounds, so
  // only a piece that reads fewer pixels looks them up again. (Most pieces
  // are far smaller than a pixel.)
  bool FindUncovered(const double* b0, const double* b1, int depth,
                     std::size_t n, std::uint64_t cell, std::uint64_t piece,
                     bool partial, double r_lo, double r_hi,
                     const DensityBounds::Range& outer, double* p, double* rp) {
    const int max_depth = D == 2 ? kMaxGapDepth2d : kMaxGapDepth3d;
    if (depth == max_depth && !partial) {
      // One random place decides, as below, against every point of the
      // parent's list: sorting out which reach the piece, or whether one
      // covers it whole, would not change the answer (a point that misses
      // the piece misses the place, one that covers the piece covers the
      // place).
      RandomPointIn(b0, b1, cell, piece, p);
      *rp = field_.At(p);
      return ClearOf(gap_lists_[depth - 1].data(), n, p, *rp);
    }
    const DensityBounds::Range pixels = PixelsOf(b0, b1);
    if (!(pixels == outer)) {
      double lo_here, hi_here;
      RadiusBounds(pixels, &lo_here, &hi_here);
      r_lo = std::max(r_lo, lo_here);
      r_hi = std::min(r_hi, hi_here);
    }
    TightenRadiusBounds(b0, b1, &r_lo, &r_hi);
    if (partial) {
      const Region::Overlap overlap = region_.Classify(b0, b1);
      if (overlap == Region::Overlap::kOutside) return false;
      bool in_obstacle = false, near_obstacle = false;
      if (per_point_) {
        const double f = per_point_footprint_ ? 0.5 : 0;
        obstacles_.ClassifyExtra(b0, b1, r_lo * f, r_hi * f, &in_obstacle,
                                 &near_obstacle, r_lo, r_hi);
      } else {
        obstacles_.Classify(b0, b1, &in_obstacle, &near_obstacle);
      }
      if (in_obstacle) return false;
      partial = overlap == Region::Overlap::kPartial || near_obstacle;
    }
    const double hi2 = r_hi * r_hi * (1 + kDistanceSlack) * kBoundSlack;
    const double lo2 = r_lo * r_lo * kCoverShrink;
    // The squared radius (shrunk) that listed q covers for sure in the
    // piece: its own radius's, or r_lo's where that is larger.
    auto sure2 = [lo2](const double* q) {
      return std::max(q[D] * kCoverShrink, lo2);
    };
    const std::vector<double>& in = gap_lists_[depth - 1];
    std::vector<double>& kept = GapList(depth, n);
    std::size_t m = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const double* q = &in[j * (D + 1)];
      if (NearestDistance2(q, b0, b1, D) >= std::max(q[D], hi2)) continue;
      if (FarthestDistance2(q, b0, b1, D) < sure2(q)) {
        return false;  // Covered whole.
      }
      std::copy(q, q + D + 1, &kept[m * (D + 1)]);
      ++m;
    }
    // The listed points of lowest power at the piece's centre (below),
    // which cover most of its children that one disk covers. (At the last
    // depth, with `partial` set, they stay the first listed point; that
    // piece has no children.)
    const double* near_s = m >= 1 ? &kept[0] : nullptr;
    const double* near_t = near_s;
    if (m >= 2 && depth < max_depth) {
      // Covered by two disks together (most pieces that straddle the
      // boundary between two disks): nothing here for the search below to
      // find, so leaving now changes no output. The two: the lowest powers
      // |c - q|^2 - sure2(q) at the piece's centre c.
      double centre[D];
      for (int a = 0; a < D; ++a) centre[a] = b0[a] + (b1[a] - b0[a]) / 2;
      std::size_t first = 0, second = 0;
      double first_pow = std::numeric_limits<double>::infinity();
      double second_pow = first_pow;
      for (std::size_t j = 0; j < m; ++j) {
        const double* q = &kept[j * (D + 1)];
        double d2 = 0;
        for (int a = 0; a < D; ++a) {
          const double d = q[a] - centre[a];
          d2 += d * d;
        }
        const double power = d2 - sure2(q);
        if (power < second_pow) {
          if (power < first_pow) {
            second = first;
            second_pow = first_pow;
            first = j;
            first_pow = power;
          } else {
            second = j;
            second_pow = power;
          }
        }
      }
      const double* s = &kept[first * (D + 1)];
      const double* t = &kept[second * (D + 1)];
      if (TwoDisksCover<D>(s, sure2(s), t, sure2(t), b0, b1)) {
        return false;
      }
      near_s = s;
      near_t = t;
    }
    if (m == 0) {
      for (int attempt = 0; attempt < (partial ? 4 : 1); ++attempt) {
        RandomPointIn(b0, b1, cell,
                      piece + (static_cast<std::uint64_t>(attempt) << 24), p);
        *rp = field_.At(p);
        if (!partial || Inside(p, *rp)) return true;
      }
      if (depth == max_depth) return false;
    }
    if (depth == max_depth) {
      RandomPointIn(b0, b1, cell, piece, p);
      *rp = field_.At(p);
      return ClearOf(kept.data(), m, p, *rp) && (!partial || Inside(p, *rp));
    }
    double mid[D];
    for (int a = 0; a < D; ++a) mid[a] = b0[a] + (b1[a] - b0[a]) / 2;
    const unsigned turn = ChildTurn(cell, piece);
    for (unsigned t = 0; t < (1u << D); ++t) {
      const unsigned child = (t + turn) & ((1u << D) - 1);
      double c0[D], c1[D];
      if (!ChildBox<D>(b0, b1, mid, child, c0, c1)) continue;
      // A child one of the two disks covers whole has no place for the
      // search below to find (it would find that disk with the child's
      // radius bounds, which are at least as tight as these), so skipping
      // it changes no output.
      if (near_s != nullptr &&
          (FarthestDistance2(near_s, c0, c1, D) < sure2(near_s) ||
           FarthestDistance2(near_t, c0, c1, D) < sure2(near_t))) {
        continue;
      }
      if (FindUncovered(c0, c1, depth + 1, m, cell, (piece << D) + child,
                        partial, r_lo, r_hi, pixels, p, rp)) {
        return true;
      }
    }
    return false;
  }

  // Whether cell i (per-axis indices) of level l is covered whole: all its
  // half-cells marked in its own level, or the half-cell of a coarser level
  // m that holds it marked there. Cells nest: a level-m cell is exactly
  // 2^(m - l) level-l cells per axis, a level-m half-cell 2^(m - l - 1).
  bool Covered(int l, const std::uint64_t* i) const {
    constexpr std::uint8_t kFull = (1u << (1 << D)) - 1;
    const Level& own = levels_[static_cast<std::size_t>(l)];
    std::uint64_t cell = 0;
    for (int a = 0; a < D; ++a) cell += i[a] * own.stride[a];
    if (own.cover[cell] == kFull) return true;
    for (int m = l + 1; m < static_cast<int>(levels_.size()); ++m) {
      const Level& level = levels_[static_cast<std::size_t>(m)];
      if (level.count == 0 && !obstacles_marked_) continue;
      const unsigned shift = static_cast<unsigned>(m - l - 1);
      std::uint64_t coarse = 0;
      unsigned bit = 0;
      for (int a = 0; a < D; ++a) {
        const std::uint64_t half = i[a] >> shift;
        coarse += (half >> 1) * level.stride[a];
        bit |= static_cast<unsigned>(half & 1) << a;
      }
      if ((level.cover[coarse] >> bit) & 1) return true;
    }
    return false;
  }

  // Gap filling, coarse to fine: a cell of level l where the radius is at
  // least the level's lower bound everywhere (raster bounds) is handled at
  // that level, since a point there covers it whole (r >= its diagonal);
  // any other cell passes to its 2^D children in the level below, down to
  // level 0 (r >= r_min everywhere). So a region of big radii costs cells
  // of its own size, not r_min's. A handled cell that still holds a place
  // where a point fits gets one there, and Bridson grows from it; points
  // only ever cover more, so one pass leaves the region maximal.
  absl::Status FillGaps() {
    const int top = static_cast<int>(levels_.size()) - 1;
    const Level& t = levels_[static_cast<std::size_t>(top)];
    for (std::uint64_t c = 0; c < t.cells; ++c) {
      std::uint64_t i[3] = {0, 0, 0};
      for (int a = 0; a < D; ++a) {
        i[a] = (c / t.stride[a]) % static_cast<std::uint64_t>(t.n[a]);
      }
      absl::Status s = FillCell(top, i, DensityBounds::Range(), 0, 0);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // `outer`, outer_lo and outer_hi: the pixels and radius bounds of the
  // cell this one splits from (none at the top level); a cell within the
  // same pixels has the same bounds.
  absl::Status FillCell(int l, const std::uint64_t* i,
                        const DensityBounds::Range& outer, double outer_lo,
                        double outer_hi) {
    const Level& level = levels_[static_cast<std::size_t>(l)];
    if (++since_poll_ >= kPollEvery / 8) {
      since_poll_ = 0;
      if (stop_()) {
        return absl::CancelledError("sampling stopped by the caller");
      }
    }
    if (Covered(l, i)) return absl::OkStatus();
    double u0[D], u1[D], b0[D], b1[D];
    for (int a = 0; a < D; ++a) {
      u0[a] = lo_[a] + static_cast<double>(i[a]) * level.cell;
      u1[a] = u0[a] + level.cell;
      b0[a] = u0[a];
      b1[a] = std::min(u1[a], hi_[a]);
      if (!(b0[a] < b1[a])) return absl::OkStatus();  // Past the box.
    }
    if (!box_only_ && region_.Classify(u0, u1) == Region::Overlap::kOutside) {
      return absl::OkStatus();
    }
    // The pixels' bounds, which children within the same pixels inherit
    // (a child's far side is computed at its own level and may pass this
    // cell's by an ulp, which the pixels' margin covers, and the corner
    // bounds below would not), then this cell's own, tightened.
    double px_lo = outer_lo, px_hi = outer_hi;
    const DensityBounds::Range pixels = PixelsOf(b0, b1);
    if (!(pixels == outer)) RadiusBounds(pixels, &px_lo, &px_hi);
    double r_lo = px_lo, r_hi = px_hi;
    TightenRadiusBounds(b0, b1, &r_lo, &r_hi);
    if (l > 0 && r_lo < level.lo_r) {
      const Level& below = levels_[static_cast<std::size_t>(l - 1)];
      for (unsigned child = 0; child < (1u << D); ++child) {
        std::uint64_t k[3] = {0, 0, 0};
        bool inside = true;
        for (int a = 0; a < D; ++a) {
          k[a] = 2 * i[a] + ((child >> a) & 1);
          inside &= k[a] < static_cast<std::uint64_t>(below.n[a]);
        }
        if (!inside) continue;
        absl::Status s = FillCell(l - 1, k, pixels, px_lo, px_hi);
        if (!s.ok()) return s;
      }
      return absl::OkStatus();
    }
    std::uint64_t cell = 0;
    for (int a = 0; a < D; ++a) cell += i[a] * level.stride[a];
    const std::uint8_t mask = level.cover[cell];
    // Streams are keyed by (level, cell).
    const std::uint64_t key = (static_cast<std::uint64_t>(l) << 58) ^ cell;
    const std::size_t n = GatherForCell(l, i, r_hi);
    double p[D];
    double rp = 0;
    bool found = false;
    const unsigned turn = ChildTurn(key, 0);
    for (unsigned t = 0; t < (1u << D) && !found; ++t) {
      const unsigned child = (t + turn) & ((1u << D) - 1);
      if ((mask >> child) & 1) continue;
      double c0[D], c1[D];
      if (!ClippedHalfCell<D>(u0, u1, lo_, hi_, child, c0, c1)) continue;
      found = FindUncovered(c0, c1, 1, n, key, 1 + child, maybe_partial_, r_lo,
                            r_hi, pixels, p, &rp);
    }
    if (!found) return absl::OkStatus();
    gap_block_level_ = -1;  // The kept list lacks the new point.
    Accept(p, rp);
    return Drain();
  }

  const Region& region_;
  const ObstacleIndex& obstacles_;
  bool box_only_;
  // Whether a gap piece can reach outside the region or into an obstacle.
  bool maybe_partial_;
  BatchWriter* out_;
  absl::FunctionRef<bool()> stop_;
  bool dense_;
  bool fill_gaps_;
  // Whether every stored point's radius is the field's at its place (same-
  // layer obstacles may bring others); see ForEachNear.
  bool radii_from_field_ = true;
  int attempts_;
  double eps_;
  RadiusField field_;
  DensityBounds density_bounds_;
  // Footprint r(x) / 2 per point (SamplerOptions::footprint == 0), up to
  // max_extra_ = r_max / 2; otherwise baked into the obstacle index.
  bool per_point_footprint_;
  // Obstacle clearances depend on the point: its footprint, or its own
  // radius for same-layer obstacles.
  bool per_point_;
  std::uint64_t dormant_left_ = 0;  // Over every level.
  double max_extra_ = 0;
  std::uint64_t candidate_key_ = 0;
  // Classic 2D candidates' directions (UnitShellPoint2d).
  const ShellDirectionTable* shell_directions_ = &ShellDirections2d();
  std::uint64_t gap_key_ = 0;
  std::vector<std::array<double, 2>> circle_;
  std::vector<std::array<double, 3>> sphere_;
  std::vector<std::array<double, 2>> woken_circle_;
  std::vector<std::array<double, 3>> woken_sphere_;

  double lo_[D];
  double hi_[D];
  std::vector<Level> levels_;
  struct Active {
    std::uint64_t cell;   // In its level.
    std::uint64_t index;  // Generation index: keys the point's candidates.
    int level;
  };
  std::vector<Active> active_;
  std::uint64_t next_index_ = 0;
  std::size_t head_ = 0;
  // The generations of active_, and dormant points woken by them.
  WakeSchedule<DormantAt> schedule_;
  std::uint64_t since_poll_ = 0;
  absl::Status halt_;

  // The gathered neighbourhood, SoA: coordinates and r^2 (1 + kDistanceSlack).
  std::vector<double> list_[D];
  std::vector<double> list_r2_;
  std::vector<double> far_;   // Gather's scratch: the farther points.
  std::size_t far_size_ = 0;  // Doubles of far_ in use.
  std::size_t list_size_ = 0;

  bool obstacles_marked_ = false;  // Obstacles marked some level's cover.
  double coordinate_slack_ = 0;    // CoordinateSlack of the bounds.
  std::vector<double> gap_lists_[kMaxGapDepth + 1];
  // What gap level 0 holds (GatherForCell): the list for block
  // gap_block_ of level gap_block_level_ (none when -1), gathered with
  // radius bound gap_block_r_hi_, gap_block_n_ points.
  int gap_block_level_ = -1;
  std::uint64_t gap_block_[D] = {};
  double gap_block_r_hi_ = 0;
  std::size_t gap_block_n_ = 0;
};

}  // namespace
}  // namespace scatter::sampler::internal

#ifdef SCATTER_VARIABLE_POISSON_AVX2
#pragma GCC pop_options
#endif

#endif  // SCATTER_SAMPLER_VARIABLE_POISSON_IMPL_H_
