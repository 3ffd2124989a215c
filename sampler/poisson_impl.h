// Internal: the Poisson sampler, as a class template over the SIMD
// operations it uses. Included by poisson.cc (ScalarOps, baseline ISA) and
// by poisson_avx2.cc (Avx2Ops; it defines SCATTER_POISSON_AVX2), so each
// translation unit compiles the whole hot loop for its own target with the
// kernels inlined. Everything below the includes has internal linkage, so
// the two copies never meet at link time.
//
// The AVX2 target is set here, after every header this file includes:
// their inline functions and templates are emitted as weak symbols where
// they are not inlined, and the linker keeps one copy for the program, so
// one defined under the pragma could be AVX2 code that the scalar path
// runs on a CPU without it (tests/sampler/check_avx2_weak_symbols.sh).
// Include this file after every other header.
//
// Bridson Poisson-disk sampling in 2D and 3D, in two packings, with maximal
// gap filling. Speed comes from three choices:
//  - The grid (cell side just under r / sqrt(D), so at most one point per
//    cell) stores the coordinates themselves, with an occupancy bitmap.
//  - An active point gathers its neighbourhood once: every point that could
//    conflict with any of its candidates, nearest first, into a short
//    structure-of-arrays list. All its candidates are tested against that
//    list, and accepted candidates join it. (2D runs with taken marks, and
//    3D runs that fill gaps, gather nothing: see below.)
//  - Candidates come from +, x and sqrt only (no sin/cos), which is also
//    what makes them portable.
//  - 2D runs keep taken marks (MarkTaken; classic, and dense with gap
//    filling): one bit rejects most candidates, and the gap scan skips the
//    pieces they mark. 3D runs that fill gaps do the same with the gap
//    scan's cover marks (AcceptIfUncovered).
//
// Determinism: candidate i of visit j of point a comes from the stream keyed
// by (seed, layer, tile, purpose) and then (a, j), at counter block i, so it
// never depends on how many draws another path made; candidates are tested
// and accepted in index order; active points are processed first in, first
// out; gap filling scans cells in index order.

#ifndef SCATTER_SAMPLER_POISSON_IMPL_H_
#define SCATTER_SAMPLER_POISSON_IMPL_H_

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "sampler/batch_writer.h"
#include "sampler/box.h"
#include "sampler/box_distance.h"
#include "sampler/cover_stencil.h"
#include "sampler/directions.h"
#include "sampler/gap_pieces.h"
#include "sampler/grid_common.h"
#include "sampler/huge_pages.h"
#include "sampler/obstacles.h"
#include "sampler/region.h"
#include "sampler/rng.h"
#include "sampler/rotation.h"
#include "sampler/sampler.h"
#include "sampler/select.h"
#include "sampler/simd_ops.h"

#ifdef SCATTER_POISSON_AVX2
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2")
#include "sampler/simd_ops_avx2.h"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SCATTER_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define SCATTER_ALWAYS_INLINE inline
#endif

namespace scatter::sampler::internal {
namespace {

// kDistanceSlack, kCellShrink, kBoundSlack, kPollEvery, kMaxGapDepth2d/3d
// and kBlockShift: grid_common.h, shared with the variable-radius engine.

// Bytes of cover marks per grid cell (PoissonRun::CoverWord), for the
// memory estimate (PoissonGridBytes).
constexpr double CoverBytesPerCell(int dims) { return dims == 2 ? 1 : 8; }

double CellSide(double radius, int dims) {
  return radius / std::sqrt(static_cast<double>(dims)) * kCellShrink;
}

// Whether a run keeps taken marks (PoissonRun::MarkTaken): classic 2D, and
// dense 2D with gap filling (without it, the marks cost dense more than its
// candidates save), where the doubles are fine enough for the marks' margin
// (the stencil's radius is shrunk by about 5e-7 r) to hold the rounding of
// coordinates in piece units (a few parts in 2^53 of the largest
// coordinate) more than a hundred times over: coordinates up to about
// 1e6 r.
bool UsesTakenMarks(const Box& box, const SamplerOptions& options) {
  if (box.dims() != 2) return false;
  if (options.method != Method::kPoissonClassic &&
      !(options.method == Method::kPoissonDense && options.fill_gaps)) {
    return false;
  }
  const double lo[2] = {box.min(0), box.min(1)};
  const double hi[2] = {box.max(0), box.max(1)};
  return CoordinateSlack(lo, hi, 2) < options.radius * 1e-9;
}
bool UsesTakenMarks(const Region& region, const SamplerOptions& options) {
  return UsesTakenMarks(region.bounds(), options);
}

// Ops supplies the distance kernels: ScalarOps, or Avx2Ops in the AVX2
// translation unit, where this whole class is compiled for AVX2.
// kTaken: the run keeps taken marks (2D; see MarkTaken and
// UsesTakenMarks), a separate instantiation so that the other runs' hot
// loops stay as they are.
template <int D, class Ops, bool kTaken = false>
class PoissonRun {
  // Cover marks split a cell into kSplit pieces per axis: half-cells in 2D,
  // quarter-cells in 3D (see CoverStencil3d), one bit each.
  static constexpr int kSplit = D == 2 ? 2 : CoverStencil3d::kSplit;
  // The children (bits as in ChildBox) in the lower (0) or upper (1) half
  // along each axis.
  static constexpr unsigned kHalfChildren[3][2] = {
      {D == 2 ? 0x5u : 0x55u, D == 2 ? 0xAu : 0xAAu},
      {D == 2 ? 0x3u : 0x33u, D == 2 ? 0xCu : 0xCCu},
      {0x0Fu, 0xF0u}};
  using CoverWord = std::conditional_t<D == 2, std::uint8_t, std::uint64_t>;
  static_assert(sizeof(CoverWord) * 8 >= (D == 2 ? 4 : 64));
  static_assert(sizeof(CoverWord) == CoverBytesPerCell(D));
  static constexpr CoverWord kFullCover =
      D == 2 ? CoverWord{0xF} : static_cast<CoverWord>(~std::uint64_t{0});
  static constexpr unsigned kAllChildren = (1u << (1 << D)) - 1;

 public:
  PoissonRun(const Region& region, const ObstacleIndex& obstacles,
             const SamplerOptions& options, BatchWriter* out,
             absl::FunctionRef<bool()> stop)
      : region_(region),
        obstacles_(obstacles),
        box_only_(region.IsBox()),
        out_(out),
        stop_(stop),
        dense_(options.method == Method::kPoissonDense),
        fill_gaps_(options.fill_gaps),
        attempts_(options.max_attempts),
        r_(options.radius),
        min_d2_(options.radius * options.radius * (1 + kDistanceSlack)),
        cell_(CellSide(options.radius, D)),
        inv_cell_(1 / cell_) {
    candidate_key_ = PoissonStreamKey(options, Purpose::kCandidates);
    gap_key_ = PoissonStreamKey(options, Purpose::kGapFill);
    reach_cells_ = r_ * inv_cell_ * (1 + 1e-6);

    const Box& box = region.bounds();
    cells_ = 1;
    for (int a = 0; a < D; ++a) {
      lo_[a] = box.min(a);
      hi_[a] = box.max(a);
      n_[a] = std::max<std::int64_t>(
          1, static_cast<std::int64_t>(std::ceil(box.extent(a) * inv_cell_)));
      stride_[a] = cells_;
      cells_ *= static_cast<std::uint64_t>(n_[a]);
    }

    // Dense candidates sit at r (1 + eps) from their parent; far from the
    // origin a coordinate rounds by more than eps r (1e-7 r by default),
    // and a candidate would fall within r of its own parent. There eps
    // grows to twice the rounding (CoordinateSlack): the same points
    // wherever the doubles are fine enough (a box within about 5e7 r of
    // the origin), and a dense pattern, not gap filling alone, beyond.
    const double slack = CoordinateSlack(lo_, hi_, D);
    const double eps = std::max(options.dense_epsilon, 2 * slack / r_);
    // The farthest a point that conflicts with some candidate can be from
    // the active point: candidate distance plus r.
    const double reach = dense_ ? r_ * (1 + eps) * (1 + 1e-9) : 2 * r_;
    gather_bound_ = (reach + r_) * kBoundSlack + slack;
    static_assert(!kTaken || D == 2);
    assert(!kTaken || UsesTakenMarks(region, options));
    reach_ = reach * kBoundSlack + slack;
    near_bound_ = (reach * 0.5 + r_) * kBoundSlack;
    // A few ulps of r^2, and the rounding of the searched boxes' bounds
    // (a few of a coordinate's, over distances of up to 3r; the sites are
    // moved into a box's frame exactly).
    certain_d2_ = min_d2_ * (1 - 1e-9) - 12 * r_ * slack;
    peak_margin_ = cell_ / 4;
    for (int a = 0; a < D; ++a) last_[a] = std::nextafter(hi_[a], lo_[a]);
    // 3D runs that fill gaps reject candidates on the cover marks (see
    // CoverHolds), where the doubles are fine enough for the marks' margin,
    // as UsesTakenMarks asks in 2D.
    cover_rejects_ = D == 3 && fill_gaps_ && slack < r_ * 1e-9;
    // CoverLanes' cell indices are int32 lanes, its plane offsets 32 x
    // 32-bit products.
    constexpr std::int64_t kLane = std::int64_t{1} << 31;
    cover_in_lanes_ = cover_rejects_;
    for (int a = 0; a < D; ++a) {
      cover_in_lanes_ &= n_[a] < kLane && stride_[a] < (std::uint64_t{1} << 32);
    }
    if (cover_rejects_) {
      marked_through_ = std::numeric_limits<std::int64_t>::max() / 2;
    }

    if (dense_) {
      if constexpr (D == 2) {
        circle_ = CircleDirections(attempts_);
        woken_circle_ = CircleDirections(kWokenDirections * attempts_);
        circle_lanes_ = Lanes(circle_);
        woken_lanes_ = Lanes(woken_circle_);
      } else {
        sphere_ = SphereDirections(attempts_);
        woken_sphere_ = SphereDirections(kWokenDirections * attempts_);
        sphere_lanes_ = Lanes(sphere_);
        woken_sphere_lanes_ = Lanes(woken_sphere_);
      }
      step_ = r_ * (1 + eps);
    }
  }

  // Directions as x and y arrays, padded with zeros to a multiple of 4.
  template <std::size_t kDims>
  static std::array<std::vector<double>, kDims> Lanes(
      const std::vector<std::array<double, kDims>>& directions) {
    std::array<std::vector<double>, kDims> lanes;
    for (std::size_t a = 0; a < kDims; ++a) {
      lanes[a].assign((directions.size() + 3) & ~std::size_t{3}, 0.0);
      for (std::size_t i = 0; i < directions.size(); ++i) {
        lanes[a][i] = directions[i][a];
      }
    }
    return lanes;
  }

  absl::Status Run() {
    // A region that is not its bounds, over a grid of a huge page or more,
    // with no same-layer points to hold in the grid: a sparse run (see
    // near_), whose arrays come zeroed and whose grid is NaN only where
    // the run may read it.
    sparse_ = !box_only_ && !obstacles_.HasSameLayer() &&
              cells_ * D * sizeof(double) >= kHugePageBytes;
    // Zeroed arrays, or arrays filled a chunk at a time with the stop
    // predicate polled between chunks (FillPolling).
    auto zeros = [&](auto* array, std::uint64_t n) {
      if (sparse_) {
        array->Zeroed(n, false);
        return true;
      }
      return array->Fill(n, 0, stop_);
    };
    bool filled =
        sparse_ ? MapNear() && FillNearGrid()
                : grid_.Fill(cells_ * D,
                             std::numeric_limits<double>::quiet_NaN(), stop_);
    // 3D and classic 2D gathers scan occupancy bits (one spare word so
    // BitRun may always read the word after); dense 2D gathers read the
    // grid itself.
    if (filled && scan_bits_) filled = zeros(&occupied_, cells_ / 64 + 2);
    if (filled && fill_gaps_) filled = zeros(&cover_, cells_ + 8);
    if (filled && taken_marks_) {
      taken_row_bits_ =
          (static_cast<std::uint64_t>(kTakenSplit * n_[0]) / 64 + 1) * 64;
      // UntakenLanes' piece indices are int32 lanes (at most one past the
      // last piece), its row offsets 32 x 32-bit products.
      constexpr std::int64_t kLane = std::int64_t{1} << 31;
      taken_in_lanes_ = kTakenSplit * n_[0] + 1 < kLane &&
                        kTakenSplit * n_[1] + 1 < kLane &&
                        taken_row_bits_ < (std::uint64_t{1} << 32);
      // A spare row, as each row has a spare column (TakenView).
      filled = zeros(
          &taken_, taken_row_bits_ / 64 *
                           static_cast<std::uint64_t>(kTakenSplit * n_[1] + 1) +
                       1);
    }
    if (!filled) return absl::CancelledError("sampling stopped by the caller");
    BuildOffsets();
    // One point per cell in the window around an active point bounds the
    // list, accepted candidates included (they land in empty window cells).
    // Gather writes one past its count, and the list is padded to a
    // multiple of 4.
    std::size_t window = 0;
    for (const RowRun& run : gather_runs_) {
      window += static_cast<std::size_t>(run.x1 - run.x0 + 1);
    }
    // Runs with taken marks or cover rejection gather no list
    // (AcceptIfUntaken, AcceptIfUncovered).
    const bool gathers = !taken_marks_ && !cover_rejects_;
    if (gathers) {
      for (auto& column : list_) column.resize(window + 4);
    }
    if (D == 3 && gathers) {
      // SplitNearFar3d: NaN padding to a group of 4 after the window's
      // points, and up to 4 slots written past each count.
      for (auto& column : far_) column.resize(window + 4);
      for (auto& column : window_) column.resize(window + 4);
    }
    const std::size_t gap_window = static_cast<std::size_t>(std::pow(5, D));
    // Room for the window and 4 slots past any count: GatherAroundCell
    // writes one past its count, PadGapList 4 NaN, and the AVX2 FilterBox
    // up to 4 past the count it returns.
    gap_stride_ = (gap_window + 1 + 3 + 3) & ~std::size_t{3};
    for (auto& level : gap_lists_) level.resize(gap_stride_ * D);

    if (fill_gaps_) {
      // Places within an obstacle's clearance need no point: mark them
      // covered, so the gap scan skips them. An obstacle over the whole
      // grid marks every cell, so the stop predicate is polled every 16
      // obstacles (a million of those took seconds to cancel).
      std::uint64_t count = 0;
      const bool marked =
          obstacles_.ForEach([&](const double* c, double clearance) {
            MarkCoveredDisk(c, clearance);
            return ++count % 16 != 0 || !stop_();
          });
      if (!marked) {
        return absl::CancelledError("sampling stopped by the caller");
      }
    }
    // Same-layer obstacles in the bounds join the grid, dormant (never
    // emitted): each wakes as an active point when a new point lands within
    // kWakeRadius r of it, so the front that reaches them grows on through
    // their gaps as one front (waking them all at once would start fronts
    // from every side, and a seam where they meet), or at its scheduled
    // generation (Obstacle::wake_generation), which lets tiles choose where
    // fronts meet.
    bool crowded = false;
    obstacles_.ForEachSameLayer([&](const double* c, double,
                                    std::int32_t wake) {
      const std::uint64_t cell = CellOf(c);
      if (Occupied(cell)) {
        crowded = true;
        return;
      }
      for (int a = 0; a < D; ++a) grid_[cell * D + a] = c[a];
      if (scan_bits_) SetBit(&occupied_, cell);
      MarkNewPoint(cell, c);
      if (dormant_.empty()) {
        dormant_.assign(cells_ / 64 + 2, 0);
        std::uint64_t blocks = 1;
        for (int a = 0; a < D; ++a) {
          blocks *= static_cast<std::uint64_t>((n_[a] >> kDormantShift) + 1);
        }
        dormant_in_block_.assign(blocks, 0);
      }
      SetBit(&dormant_, cell);
      ++dormant_in_block_[DormantBlock(cell)];
      ++dormant_left_;
      if (wake >= 0) schedule_.Add(wake, cell);
    });
    if (crowded) return CrowdedError();
    if (!schedule_.empty()) {
      // Growth starts from the points due first; Drain wakes the others as
      // the generations pass.
      schedule_.Start([this](std::uint64_t c) { WakeScheduled(c); },
                      [this] { return active_.size(); });
      absl::Status status = Drain();
      if (!status.ok()) return status;
    }
    if (!fill_gaps_) {
      // Bridson alone: one seed, in the first cell that has a place inside
      // the region, grown until the active list is empty.
      double p[D];
      if (!FirstSeed(p)) return halt_;  // Stopped, or no room in the region.
      return FinishGapPoint(p);
    }
    return FillGaps();
  }

 private:
  std::uint64_t CellOf(const double* p) const {
    std::uint64_t c = 0;
    for (int a = 0; a < D; ++a) c += stride_[a] * AxisCell(a, p[a]);
    return c;
  }

  // Sparse runs (sparse_). The grid's rows (along x; one per y, and z in
  // 3D) are cut into chunks of kChunkCells cells. MapNear sets near_[row *
  // chunks_ + k] where chunk k of the row, grown by a cell on each side (so
  // that the cells' own bounds, which round apart from the chunk's, stay
  // inside it), meets the region: Classify is not kOutside. Every place of
  // the others is outside the region, so the gap scan and the first seed
  // skip them; points, candidates and the cells the scan searches all lie
  // in or near chunks that meet it. False when the stop predicate said
  // stop.
  static constexpr std::uint64_t kChunkCells = 64;
  static constexpr std::uint64_t kGroupChunks = 16;
  bool MapNear() {
    const auto row_cells = static_cast<std::uint64_t>(n_[0]);
    chunks_ = (row_cells + kChunkCells - 1) / kChunkCells;
    rows_ = cells_ / row_cells;
    near_.assign(rows_ * chunks_, 0);
    for (std::uint64_t row = 0; row < rows_; ++row) {
      if (row % 64 == 63 && stop_()) return false;
      double b0[D], b1[D];
      for (int a = 1; a < D; ++a) {
        const auto i = static_cast<double>((row * row_cells / stride_[a]) %
                                           static_cast<std::uint64_t>(n_[a]));
        b0[a] = lo_[a] + (i - 1) * cell_;
        b1[a] = lo_[a] + (i + 2) * cell_;
      }
      b0[0] = lo_[0] - cell_;
      b1[0] = lo_[0] + static_cast<double>(row_cells + 1) * cell_;
      // The row, then groups of kGroupChunks chunks, then the chunks of
      // the groups that meet the region.
      auto meets = [&](std::uint64_t first_chunk, std::uint64_t end_chunk) {
        const std::uint64_t first = first_chunk * kChunkCells;
        const std::uint64_t end = std::min(end_chunk * kChunkCells, row_cells);
        b0[0] = lo_[0] + (static_cast<double>(first) - 1) * cell_;
        b1[0] = lo_[0] + static_cast<double>(end + 1) * cell_;
        return region_.Classify(b0, b1) != Region::Overlap::kOutside;
      };
      if (!meets(0, chunks_)) continue;
      for (std::uint64_t g = 0; g < chunks_; g += kGroupChunks) {
        const std::uint64_t g_end = std::min(g + kGroupChunks, chunks_);
        if (!meets(g, g_end)) continue;
        for (std::uint64_t k = g; k < g_end; ++k) {
          near_[row * chunks_ + k] = meets(k, k + 1);
        }
      }
    }
    return true;
  }

  // A sparse run's grid: zeroed, and NaN (empty) over the chunks within
  // kReadReach of a chunk that meets the region, which hold every cell a
  // run reads: the gathers around a point (within 3 r of it), the cells
  // around a candidate (at most 2 r from its point, so within 4.5 r), and
  // the 5 x 5 (x 5) cells around a cell the gap scan searches. The rest
  // stays untouched, and costs nothing. In builds without NDEBUG the rest
  // is closed too (AllocateZeroed's guard), so a read there crashes the
  // tests instead of finding a point at the origin. False when the stop
  // predicate said stop.
  bool FillNearGrid() {
    grid_.Zeroed(cells_ * D, kGuardSparseGrid);
    const auto row_cells = static_cast<std::uint64_t>(n_[0]);
    // The reach in cells (rows) and in chunks; kReadReach radii.
    const auto reach =
        static_cast<std::uint64_t>(std::ceil(kReadReach * r_ * inv_cell_)) + 3;
    const std::uint64_t reach_chunks = (reach + kChunkCells - 1) / kChunkCells;
    // Dilate near_ by the reach, one axis at a time.
    std::vector<std::uint8_t> fill(near_.size(), 0), pass = near_;
    for (std::uint64_t row = 0; row < rows_; ++row) {
      for (std::uint64_t k = 0; k < chunks_; ++k) {
        if (!pass[row * chunks_ + k]) continue;
        const std::uint64_t k0 = k > reach_chunks ? k - reach_chunks : 0;
        const std::uint64_t k1 = std::min(k + reach_chunks + 1, chunks_);
        for (std::uint64_t j = k0; j < k1; ++j) fill[row * chunks_ + j] = 1;
      }
    }
    for (int a = 1; a < D; ++a) {
      pass.swap(fill);
      std::fill(fill.begin(), fill.end(), 0);
      // Rows along axis a are stride_[a] / row_cells rows apart.
      const std::uint64_t step = stride_[a] / row_cells;
      const auto count = static_cast<std::uint64_t>(n_[a]);
      for (std::uint64_t row = 0; row < rows_; ++row) {
        if (row % 256 == 255 && stop_()) return false;
        const std::uint64_t i = (row / step) % count;
        const std::uint64_t i0 = i > reach ? i - reach : 0;
        const std::uint64_t i1 = std::min(i + reach + 1, count);
        std::uint8_t* out = &fill[row * chunks_];
        for (std::uint64_t j = i0; j < i1; ++j) {
          const std::uint8_t* in = &pass[(row - i * step + j * step) * chunks_];
          for (std::uint64_t k = 0; k < chunks_; ++k) out[k] |= in[k];
        }
      }
    }
    // NaN over the runs of chunks to fill, merged where one ends at the
    // next one's start (across rows too).
    std::uint64_t begin = 0, end = 0, since_poll = 0;
    // A run is filled kFillChunkBytes at a time, with the stop predicate
    // polled between (a region over whole rows merges into one run of
    // gigabytes).
    constexpr std::uint64_t kPollCells = kFillChunkBytes / (D * sizeof(double));
    auto flush = [&] {
      if (begin == end) return true;
      grid_.Open(begin * D, end * D);
      for (std::uint64_t from = begin; from < end;) {
        const std::uint64_t to =
            std::min(end, from + (kPollCells - since_poll));
        std::fill(&grid_[from * D], &grid_[to * D],
                  std::numeric_limits<double>::quiet_NaN());
        since_poll += to - from;
        from = to;
        if (since_poll == kPollCells) {
          since_poll = 0;
          if (stop_()) return false;
        }
      }
      begin = end = 0;
      return true;
    };
    for (std::uint64_t row = 0; row < rows_; ++row) {
      for (std::uint64_t k = 0; k < chunks_; ++k) {
        if (!fill[row * chunks_ + k]) continue;
        const std::uint64_t first = row * row_cells + k * kChunkCells;
        const std::uint64_t last =
            row * row_cells + std::min((k + 1) * kChunkCells, row_cells);
        if (first != end && !flush()) return false;
        if (begin == end) begin = first;
        end = last;
      }
    }
    return flush();
  }

  // A sparse run's next cell at or after c in a chunk that meets the
  // region (cells_ when there is none), and in *until the end of that
  // chunk.
  std::uint64_t NextNear(std::uint64_t c, std::uint64_t* until) const {
    const auto row_cells = static_cast<std::uint64_t>(n_[0]);
    const std::uint64_t from =
        c / row_cells * chunks_ + c % row_cells / kChunkCells;
    for (std::uint64_t i = from; i < near_.size(); ++i) {
      if (!near_[i]) continue;
      const std::uint64_t row = i / chunks_, k = i % chunks_;
      *until = row * row_cells + std::min((k + 1) * kChunkCells, row_cells);
      return std::max(c, row * row_cells + k * kChunkCells);
    }
    *until = cells_;
    return cells_;
  }

  void BuildOffsets() {
    // In cell units: how far a point may be for its cell to matter.
    const double reach = gather_bound_ * inv_cell_;
    const auto w = static_cast<std::int64_t>(std::ceil(reach)) + 1;
    const std::int64_t wz = D == 3 ? w : 0;
    // Distance between two cells `d` apart along an axis is at least
    // (|d| - 1) cells.
    auto gap = [](std::int64_t d) {
      const double g = static_cast<double>(d < 0 ? -d : d) - 1;
      return g > 0 ? g * g : 0.0;
    };
    for (std::int64_t dz = -wz; dz <= wz; ++dz) {
      for (std::int64_t dy = -w; dy <= w; ++dy) {
        const double rem = reach * reach - gap(dy) - gap(dz);
        if (rem < 0) continue;
        std::int64_t dx = 0;
        while (gap(dx + 1) < rem) ++dx;
        const std::int64_t offset =
            dy * static_cast<std::int64_t>(stride_[1]) +
            (D == 3 ? dz * static_cast<std::int64_t>(stride_[D - 1]) : 0) - dx;
        gather_runs_.push_back({{0, dy, dz}, -dx, dx, offset});
      }
    }
    gather_window_ = w;
    const std::int64_t gz = D == 3 ? 2 : 0;
    for (std::int64_t dz = -gz; dz <= gz; ++dz) {
      for (std::int64_t dy = -2; dy <= 2; ++dy) {
        gap_rows_.push_back(
            dy * static_cast<std::int64_t>(stride_[1]) +
            (D == 3 ? dz * static_cast<std::int64_t>(stride_[D - 1]) : 0) - 2);
      }
    }
  }

  // Truncation is floor here: negative values are clamped first. (std::floor
  // is a library call on baseline x86-64.)
  std::uint64_t AxisCell(int a, double v) const {
    const double f = (v - lo_[a]) * inv_cell_;
    if (!(f > 0)) return 0;
    const double last = static_cast<double>(n_[a] - 1);
    // Through int64, as TakenView converts.
    return static_cast<std::uint64_t>(
        static_cast<std::int64_t>(f < last ? f : last));
  }

  bool Occupied(std::uint64_t c) const { return !std::isnan(grid_[c * D]); }
  template <class Bits>
  static void SetBit(Bits* bits, std::uint64_t i) {
    (*bits)[i >> 6] |= std::uint64_t{1} << (i & 63);
  }
  // Bits [start, start + len) of `bits`, 1 <= len <= 64.
  // In the region and clear of every obstacle.
  bool Inside(const double* p) const { return InBounds(p) && InShape(p); }
  bool InBounds(const double* p) const {
    for (int a = 0; a < D; ++a) {
      if (!(p[a] >= lo_[a] && p[a] < hi_[a])) return false;
    }
    return true;
  }
  // Inside() for a point known to be in the bounds.
  bool InShape(const double* p) const {
    return (box_only_ || region_.Contains(p)) &&
           (obstacles_.empty() || !obstacles_.TooClose(p));
  }

  // The marks of a point just put in the grid at cell c: taken marks, or
  // cover marks where the gap scan's marking has passed c's plane.
  void MarkNewPoint(std::uint64_t c, const double* p) {
    if (taken_marks_) {
      MarkTaken(p);
    } else if (fill_gaps_ && MarkedPlane(c)) {
      MarkCovered(p);
    }
  }

  // Records an accepted point: grid, active list, output. Halts the run when
  // the writer refuses it (sink said stop, or the point cap).
  void Accept(const double* p) {
    const std::uint64_t c = CellOf(p);
    assert(!Occupied(c));
    for (int a = 0; a < D; ++a) grid_[c * D + a] = p[a];
    if (scan_bits_) SetBit(&occupied_, c);
    MarkNewPoint(c, p);
    active_.push_back({c, next_index_++});
    if (dormant_left_ > 0) WakeNear(p);
    if (!out_->template Add<D>(p, r_)) Halt(out_->StopStatus());
  }

  // A woken point's generation index carries this bit in a dense run (which
  // also keys its candidates apart from any emitted point's).
  static constexpr std::uint64_t kWokenBit = std::uint64_t{1} << 62;
  static bool Woken(std::uint64_t index) { return (index & kWokenBit) != 0; }

  // Dormant points are counted per block of 2^kDormantShift cells a side.
  static constexpr int kDormantShift = 4;
  std::uint64_t BlockIndex(std::int64_t bx, std::int64_t by,
                           std::int64_t bz) const {
    const auto nbx = static_cast<std::uint64_t>((n_[0] >> kDormantShift) + 1);
    const auto nby = static_cast<std::uint64_t>((n_[1] >> kDormantShift) + 1);
    return static_cast<std::uint64_t>(bx) +
           nbx * (static_cast<std::uint64_t>(by) +
                  nby * static_cast<std::uint64_t>(bz));
  }
  std::uint64_t DormantBlock(std::uint64_t c) const {
    std::int64_t b[3] = {0, 0, 0};
    for (int a = 0; a < D; ++a) {
      b[a] = static_cast<std::int64_t>((c / stride_[a]) %
                                       static_cast<std::uint64_t>(n_[a])) >>
             kDormantShift;
    }
    return BlockIndex(b[0], b[1], b[2]);
  }

  static absl::Status CrowdedError() {
    return absl::InvalidArgumentError(
        "obstacles: two same-layer obstacles are closer than the radius, as "
        "points of one layer never are");
  }

  // Makes the dormant points within kWakeRadius r of p active, in cell
  // order.
  void WakeNear(const double* p) {
    const auto w =
        static_cast<std::int64_t>(std::ceil(kWakeRadius * r_ * inv_cell_));
    const double limit = kWakeRadius * kWakeRadius * r_ * r_;
    std::int64_t c0[3] = {0, 0, 0}, c1[3] = {0, 0, 0};
    for (int a = 0; a < D; ++a) {
      const auto c = static_cast<std::int64_t>(AxisCell(a, p[a]));
      c0[a] = std::max<std::int64_t>(0, c - w);
      c1[a] = std::min<std::int64_t>(n_[a] - 1, c + w);
    }
    // Most points are far from every dormant one: the blocks tell.
    bool any = false;
    for (std::int64_t bz = c0[2] >> kDormantShift;
         bz <= c1[2] >> kDormantShift && !any; ++bz) {
      for (std::int64_t by = c0[1] >> kDormantShift;
           by <= c1[1] >> kDormantShift && !any; ++by) {
        for (std::int64_t bx = c0[0] >> kDormantShift;
             bx <= c1[0] >> kDormantShift && !any; ++bx) {
          any = dormant_in_block_[BlockIndex(bx, by, bz)] != 0;
        }
      }
    }
    if (!any) return;
    for (std::int64_t z = c0[2]; z <= c1[2]; ++z) {
      for (std::int64_t y = c0[1]; y <= c1[1]; ++y) {
        // A row's cells are consecutive bits.
        const std::uint64_t row =
            static_cast<std::uint64_t>(y) * stride_[1] +
            (D == 3 ? static_cast<std::uint64_t>(z) * stride_[D - 1] : 0);
        ForEachSetBit(
            dormant_.data(), row + static_cast<std::uint64_t>(c0[0]),
            row + static_cast<std::uint64_t>(c1[0]) + 1, [&](std::uint64_t c) {
              double d2 = 0;
              for (int a = 0; a < D; ++a) {
                const double d = grid_[c * D + a] - p[a];
                d2 += d * d;
              }
              if (d2 >= limit) return;
              dormant_[c >> 6] &= ~(std::uint64_t{1} << (c & 63));
              --dormant_in_block_[DormantBlock(c)];
              --dormant_left_;
              active_.push_back({c, next_index_++ | (dense_ ? kWokenBit : 0)});
            });
      }
    }
  }

  // Wakes the scheduled point in cell c, unless it is awake already.
  void WakeScheduled(std::uint64_t c) {
    if (((dormant_[c >> 6] >> (c & 63)) & 1) == 0) return;
    dormant_[c >> 6] &= ~(std::uint64_t{1} << (c & 63));
    --dormant_in_block_[DormantBlock(c)];
    --dormant_left_;
    active_.push_back({c, next_index_++ | (dense_ ? kWokenBit : 0)});
  }

  // Cover marks are written plane by plane (rows in 2D) just ahead of the
  // gap scan, which is the only reader: a point's marks reach at most
  // `stencil reach` planes from its own, so when the scan reads cell c, the
  // marks of every point in the planes up to c's plane plus that reach must
  // be in, and no others can touch c. Marking each point as it is accepted
  // gave the same marks, but the front scatters its writes over the whole
  // grid (most of them cache misses; 10 % of a dense 3D run); ahead of the
  // scan they fall on a few planes at a time.
  // The plane (axis D - 1) of cell c.
  std::int64_t PlaneOf(std::uint64_t c) const {
    return static_cast<std::int64_t>(c / stride_[D - 1]);
  }
  // Whether the scan's marking has passed c's plane, so a point accepted
  // there now must be marked at once.
  bool MarkedPlane(std::uint64_t c) const {
    return PlaneOf(c) <= marked_through_;
  }
  int StencilReach() const {
    if constexpr (D == 2) {
      return stencil_->reach;
    } else {
      return stencil3d_->reach;
    }
  }
  // Marks the points of the planes after marked_through_ up to `last`.
  void MarkPlanesThrough(std::int64_t last) {
    last = std::min(last, n_[D - 1] - 1);
    for (std::int64_t z = marked_through_ + 1; z <= last; ++z) {
      const std::uint64_t begin =
          static_cast<std::uint64_t>(z) * stride_[D - 1];
      const std::uint64_t end = begin + stride_[D - 1];
      if (scan_bits_) {
        ForEachSetBit(occupied_.data(), begin, end,
                      [&](std::uint64_t c) { MarkCovered(&grid_[c * D]); });
      } else {
        for (std::uint64_t c = begin; c < end; ++c) {
          if (Occupied(c)) MarkCovered(&grid_[c * D]);
        }
      }
    }
    marked_through_ = std::max(marked_through_, last);
  }

  // Marks the pieces of cells (quarters in 2D, 1/64ths in 3D; see
  // kSplit) that p's disk covers whole, so gap filling skips them and,
  // mostly, their cells without looking, from precomputed stencils.
  void MarkCovered(const double* p) {
    if constexpr (D == 2) {
      MarkCoveredByStencil(p);
    } else {
      MarkCoveredByStencil3d(p);
    }
  }

  // The pieces inside the disk (ball) of `radius` around p, for any radius
  // (obstacles' clearances). Per row of pieces, the covered ones form one
  // run: those whose farthest x is within sqrt(r^2 - fy^2 [- fz^2]) of p.
  // The bound is shrunk a little so rounding can only leave a covered piece
  // unmarked, never mark an uncovered one.
  void MarkCoveredDisk(const double* p, double radius) {
    const double h = cell_ / kSplit;
    const double inv_h = kSplit * inv_cell_;
    const double r2 = radius * radius * (1 - 1e-9);
    const std::int64_t hz0 = D == 3 ? PieceIndex(2, p[2] - radius) : 0;
    const std::int64_t hz1 = D == 3 ? PieceIndex(2, p[2] + radius) : 0;
    constexpr std::uint64_t kRowBits = (1u << kSplit) - 1;
    for (std::int64_t hz = hz0; hz <= hz1; ++hz) {
      double rem_z = r2;
      if constexpr (D == 3) {
        const double z0 = lo_[2] + static_cast<double>(hz) * h;
        const double fz = std::max(p[2] - z0, z0 + h - p[2]);
        rem_z -= fz * fz;
        if (rem_z <= 0) continue;
      }
      const std::int64_t hy0 = PieceIndex(1, p[1] - radius);
      const std::int64_t hy1 = PieceIndex(1, p[1] + radius);
      for (std::int64_t hy = hy0; hy <= hy1; ++hy) {
        const double y0 = lo_[1] + static_cast<double>(hy) * h;
        const double fy = std::max(p[1] - y0, y0 + h - p[1]);
        const double rem = rem_z - fy * fy;
        if (rem <= 0) continue;
        const double w = std::sqrt(rem);
        // Pieces [lo + i h, lo + (i + 1) h] inside [p - w, p + w].
        const std::int64_t hx0 =
            std::max<std::int64_t>(0, CeilToInt((p[0] - w - lo_[0]) * inv_h));
        const std::int64_t hx1 = std::min<std::int64_t>(
            kSplit * n_[0] - 1, FloorToInt((p[0] + w - lo_[0]) * inv_h) - 1);
        if (hx0 > hx1) continue;
        const std::uint64_t row =
            static_cast<std::uint64_t>(hy / kSplit) * stride_[1] +
            (D == 3 ? static_cast<std::uint64_t>(hz / kSplit) * stride_[2] : 0);
        const int shift =
            static_cast<int>(kSplit * (hy % kSplit) +
                             (D == 3 ? kSplit * kSplit * (hz % kSplit) : 0));
        // Whole cells of the run get the row's kSplit pieces; the end cells
        // those from hx0 on and up to hx1.
        const auto c0 = static_cast<std::uint64_t>(hx0 / kSplit);
        const auto c1 = static_cast<std::uint64_t>(hx1 / kSplit);
        const std::uint64_t first =
            kRowBits & ~((std::uint64_t{1} << (hx0 % kSplit)) - 1);
        const std::uint64_t last = (std::uint64_t{2} << (hx1 % kSplit)) - 1;
        if (c0 == c1) {
          cover_[row + c0] |= static_cast<CoverWord>((first & last) << shift);
          continue;
        }
        cover_[row + c0] |= static_cast<CoverWord>(first << shift);
        for (std::uint64_t x = c0 + 1; x < c1; ++x) {
          cover_[row + x] |= static_cast<CoverWord>(kRowBits << shift);
        }
        cover_[row + c1] |= static_cast<CoverWord>(last << shift);
      }
    }
  }

  // MarkCovered in 3D, from the precomputed stencils (cover_stencil.h).
  void MarkCoveredByStencil3d(const double* p) {
    const CoverStencil3d& stencil = *stencil3d_;
    constexpr int kQ = CoverStencil3d::kClasses;
    std::int64_t cell[3];
    int cls[3];
    for (int a = 0; a < 3; ++a) {
      const double f = (p[a] - lo_[a]) * inv_cell_;
      const auto c = static_cast<std::int64_t>(f);  // f >= 0: p is inside.
      const int q = static_cast<int>((f - static_cast<double>(c)) * kQ);
      cls[a] = q < 0 ? 0 : (q >= kQ ? kQ - 1 : q);
      cell[a] = c;
    }
    const std::size_t k =
        static_cast<std::size_t>((cls[2] * kQ + cls[1]) * kQ + cls[0]);
    const CoverStencil3d::Entry* e = &stencil.entries[stencil.begin[k]];
    const CoverStencil3d::Entry* end = &stencil.entries[stencil.begin[k + 1]];
    const std::int64_t reach = stencil.reach;
    bool interior = true;
    for (int a = 0; a < 3; ++a) {
      interior &= cell[a] >= reach && cell[a] + reach < n_[a];
    }
    const auto sy = static_cast<std::int64_t>(stride_[1]);
    const auto sz = static_cast<std::int64_t>(stride_[2]);
    const std::int64_t base = cell[0] + cell[1] * sy + cell[2] * sz;
    for (; e != end; ++e) {
      if (!interior) {
        const std::int64_t x = cell[0] + e->dx;
        const std::int64_t y = cell[1] + e->dy;
        const std::int64_t z = cell[2] + e->dz;
        if (x < 0 || x >= n_[0] || y < 0 || y >= n_[1] || z < 0 || z >= n_[2]) {
          continue;
        }
      }
      cover_[static_cast<std::uint64_t>(base + e->dx + e->dy * sy +
                                        e->dz * sz)] |=
          static_cast<CoverWord>(e->mask);
    }
  }

  // MarkCovered in 2D, from the precomputed stencils (cover_stencil.h).
  void MarkCoveredByStencil(const double* p) {
    const CoverStencil2d& stencil = *stencil_;
    constexpr int kQ = CoverStencil2d::kClasses;
    std::int64_t cell[2];
    int half[2];
    int cls[2];
    for (int a = 0; a < 2; ++a) {
      const double f = (p[a] - lo_[a]) * (2 * inv_cell_);
      const auto h = static_cast<std::int64_t>(f);  // f >= 0: p is inside.
      const int q = static_cast<int>((f - static_cast<double>(h)) * kQ);
      cls[a] = q < 0 ? 0 : (q >= kQ ? kQ - 1 : q);
      cell[a] = h >> 1;
      half[a] = static_cast<int>(h & 1);
    }
    const std::size_t k = static_cast<std::size_t>(
        (((half[1] * 2 + half[0]) * kQ + cls[1]) * kQ) + cls[0]);
    const CoverStencil2d::Entry* e = &stencil.entries[stencil.begin[k]];
    const CoverStencil2d::Entry* end = &stencil.entries[stencil.begin[k + 1]];
    const std::int64_t reach = stencil.reach;
    const bool interior = cell[0] >= reach && cell[0] + reach < n_[0] &&
                          cell[1] >= reach && cell[1] + reach < n_[1];
    const std::int64_t base =
        cell[0] + cell[1] * static_cast<std::int64_t>(stride_[1]);
    for (; e != end; ++e) {
      if (!interior) {
        const std::int64_t x = cell[0] + e->dx;
        const std::int64_t y = cell[1] + e->dy;
        if (x < 0 || x >= n_[0] || y < 0 || y >= n_[1]) continue;
      }
      cover_[static_cast<std::uint64_t>(
          base + e->dx + e->dy * static_cast<std::int64_t>(stride_[1]))] |=
          e->mask;
    }
  }

  // Taken marks (2D; UsesTakenMarks): a bit per piece of a cell cut kTakenSplit
  // times per axis, row by row over the whole grid, set when an accepted
  // point's disk holds the piece whole. A candidate in a marked piece is
  // closer than r to that point, which is in the grid, so the grid test
  // (GridConflict) would reject it too: rejecting it on the mark changes
  // no output. Rejected candidates land in such a piece 97 % of the time
  // in classic 2D (bench/README.md, "Candidates in covered places") and in
  // dense 2D (89 % of all dense candidates), so one load decides most
  // candidates, and the few others read the grid around themselves instead of a
  // gathered list. In dense 2D the marks also spare the gap scan most of its
  // searches. What they gained: bench/README.md, "Taken marks" and "Taken marks
  // in dense 2D".
  static constexpr int kTakenSplit = 4;

  // Whether c lies in a marked piece, for c in the box: its piece indices
  // are then >= 0, and at most one past the last piece (rounding at the
  // box's far side), where the spare column and row read 0.
  struct TakenView {
    const std::uint64_t* bits;
    double lo0, lo1, inv_h;
    std::uint64_t row_bits;
    SCATTER_ALWAYS_INLINE bool operator()(const double* c) const {
      // Through int64: x86-64 before AVX-512 has no instruction for
      // double to uint64, and the compiler adds a test and a branch.
      const auto x = static_cast<std::uint64_t>(
          static_cast<std::int64_t>((c[0] - lo0) * inv_h));
      const auto y = static_cast<std::uint64_t>(
          static_cast<std::int64_t>((c[1] - lo1) * inv_h));
      const std::uint64_t bit = y * row_bits + x;
      return ((bits[bit >> 6] >> (bit & 63)) & 1) != 0;
    }
  };
  TakenView Taken() const {
    return {taken_.data(), lo_[0], lo_[1], kTakenSplit * inv_cell_,
            taken_row_bits_};
  }

  // Marks the pieces inside p's disk, from the stencil of p's class
  // (TakenStencil2d: its radius is shrunk by 1e-6 in r^2, so rounding can
  // only leave a covered piece unmarked, never mark one that reaches past
  // the disk).
  [[gnu::noinline]] void MarkTaken(const double* p) {
    const TakenStencil2d& stencil = *taken_stencil_;
    const double inv_h = kTakenSplit * inv_cell_;
    const double px = (p[0] - lo_[0]) * inv_h;
    const double py = (p[1] - lo_[1]) * inv_h;
    // p is in the box: px, py >= 0, so truncation is floor.
    const auto ix = static_cast<std::int64_t>(px);
    const auto iy = static_cast<std::int64_t>(py);
    const auto qx = std::min(TakenStencil2d::kClasses - 1,
                             static_cast<int>((px - static_cast<double>(ix)) *
                                              TakenStencil2d::kClasses));
    const auto qy = std::min(TakenStencil2d::kClasses - 1,
                             static_cast<int>((py - static_cast<double>(iy)) *
                                              TakenStencil2d::kClasses));
    const TakenStencil2d::Run* run = stencil.Rows(qx, qy);
    const std::int64_t last_x = kTakenSplit * n_[0] - 1;
    const std::int64_t last_y = kTakenSplit * n_[1] - 1;
    constexpr int kReach = TakenStencil2d::kReach;
    std::uint64_t* bits = taken_.data();
    if (ix >= kReach && ix + kReach <= last_x && iy >= kReach &&
        iy + kReach <= last_y) {
      // Most points: no run needs clipping, and each (at most 12 pieces)
      // is one write of the 8 bytes from the run's first piece's byte,
      // without a branch (an empty run's mask is 0). On a little-endian
      // machine bit b of the marks is bit b % 8 of byte b / 8, so the run
      // shifted by its first piece's place in that byte (at most 7 + 12
      // bits) lands on the same bits as word writes would. Those bytes end
      // within the word after the run's first piece's word: the row's
      // spare word at most. One write a row, unrolled, not two word
      // writes in a loop: MarkTaken went from 318 to 172 instructions a
      // point in poisson_dense/2d (bench/README.md).
      static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                    "taken marks are written as unaligned little-endian "
                    "64-bit words");
      auto* bytes = reinterpret_cast<unsigned char*>(bits);
      const std::uint64_t row_bits = taken_row_bits_;
      std::uint64_t row = static_cast<std::uint64_t>(iy - kReach) * row_bits +
                          static_cast<std::uint64_t>(ix);
#pragma GCC unroll 13
      for (int k = 0; k < TakenStencil2d::kRows; ++k, row += row_bits) {
        const std::uint64_t first =
            row + static_cast<std::uint64_t>(std::int64_t{run[k].x0});
        unsigned char* at = bytes + (first >> 3);
        std::uint64_t word;
        std::memcpy(&word, at, sizeof word);
        word |= std::uint64_t{run[k].mask} << (first & 7);
        std::memcpy(at, &word, sizeof word);
      }
      return;
    }
    for (int k = 0; k < TakenStencil2d::kRows; ++k) {
      const std::int64_t y = iy + k - kReach;
      if (y < 0 || y > last_y || run[k].x0 > run[k].x1) continue;
      const std::int64_t x0 = std::max<std::int64_t>(0, ix + run[k].x0);
      const std::int64_t x1 = std::min(last_x, ix + run[k].x1);
      if (x0 > x1) continue;
      const std::uint64_t row = static_cast<std::uint64_t>(y) * taken_row_bits_;
      SetBitRange(bits, row + static_cast<std::uint64_t>(x0),
                  row + static_cast<std::uint64_t>(x1));
    }
  }

  // Sets bits [first, last] of `bits`.
  static void SetBitRange(std::uint64_t* bits, std::uint64_t first,
                          std::uint64_t last) {
    const std::uint64_t w0 = first >> 6;
    const std::uint64_t w1 = last >> 6;
    const std::uint64_t head = ~std::uint64_t{0} << (first & 63);
    const std::uint64_t tail = ~std::uint64_t{0} >> (63 - (last & 63));
    if (w0 == w1) {
      bits[w0] |= head & tail;
      return;
    }
    bits[w0] |= head;
    for (std::uint64_t w = w0 + 1; w < w1; ++w) bits[w] = ~std::uint64_t{0};
    bits[w1] |= tail;
  }

  // Per axis, the first and last cells that can hold a point closer than
  // r to c, a place in the box (GridConflict says why).
  SCATTER_ALWAYS_INLINE void ConflictWindow(const double* c,
                                            std::int64_t* first,
                                            std::int64_t* last) const {
    for (int a = 0; a < D; ++a) {
      const auto i = static_cast<std::int64_t>(AxisCell(a, c[a]));
      const double u = (c[a] - lo_[a]) * inv_cell_ - static_cast<double>(i);
      first[a] = std::max<std::int64_t>(
          0, i - 2 + static_cast<std::int64_t>(u >= reach_cells_ - 1));
      last[a] = std::min<std::int64_t>(
          n_[a] - 1, i + 2 - static_cast<std::int64_t>(u <= 2 - reach_cells_));
    }
  }

  // Whether a point of the grid is closer than r to c, a place in the box
  // (2D): the list test's squared distance and comparison (Ops'
  // AnyWithin2dBlock) over the cells that can hold such a point. Along
  // each axis those are within 2 cells of c's (two cells are wider than
  // r), and of the two cells 2 away, only one can be nearer than r, and
  // only when c sits in the far part of its cell: from an offset u (in
  // cells) into its cell, the cell 2 before is u + 1 away, the cell 2
  // after 2 - u, against r of about 1.414 cells. So c's window is 3 or 4
  // cells a side, not 5 (with a margin of 1e-6 r, far more than the
  // rounding of u where taken marks are kept). Every cell is read, empty
  // ones NaN: no branch on which cells hold a point.
  SCATTER_ALWAYS_INLINE bool GridConflict(const double* c) const {
    std::int64_t first[D], last[D];
    ConflictWindow(c, first, last);
    const std::uint64_t start =
        static_cast<std::uint64_t>(first[1]) * stride_[1] +
        static_cast<std::uint64_t>(first[0]);
    return Ops::AnyWithin2dBlock(
        &grid_[start * D], stride_[1] * D,
        static_cast<std::size_t>(last[1] - first[1] + 1),
        static_cast<std::size_t>(last[0] - first[0] + 1), c[0], c[1], min_d2_);
  }

  // The taken mark of cell c's first piece (2D); the cell's piece (qx, qy)
  // is qy rows of pieces and qx bits on.
  std::uint64_t FirstTakenBit(std::uint64_t c) const {
    const std::uint64_t cx = c % static_cast<std::uint64_t>(n_[0]);
    const std::uint64_t cy = c / static_cast<std::uint64_t>(n_[0]);
    return kTakenSplit * (cy * taken_row_bits_ + cx);
  }

  // The taken marks of cell c (2D): bit qx + 4 qy for its piece (qx, qy).
  unsigned TakenCellMask(std::uint64_t c) const {
    std::uint64_t bit = FirstTakenBit(c);
    unsigned out = 0;
    for (int qy = 0; qy < kTakenSplit; ++qy, bit += taken_row_bits_) {
      out |= static_cast<unsigned>(BitRun(taken_.data(), bit, kTakenSplit))
             << (kTakenSplit * qy);
    }
    return out;
  }

  // Whether the taken marks hold every piece of cells c to c + 7 (2D; a
  // run that leaves the row reads the row's spare bits, 0).
  bool EightTaken(std::uint64_t c) const {
    std::uint64_t bit = FirstTakenBit(c);
    std::uint64_t all = ~std::uint64_t{0};
    for (int qy = 0; qy < kTakenSplit; ++qy, bit += taken_row_bits_) {
      all &= BitRun(taken_.data(), bit, 8 * kTakenSplit) |
             ~((std::uint64_t{1} << (8 * kTakenSplit)) - 1);
    }
    return all == ~std::uint64_t{0};
  }

  // The 2D cover marks' half-cells (bit hx + 2 hy) as the four sixteenths
  // each holds, in TakenCellMask's bits.
  static unsigned HalvesAsQuarters(unsigned halves) {
    unsigned out = 0;
    for (unsigned half = 0; half < 4; ++half) {
      if (((halves >> half) & 1) == 0) continue;
      const unsigned x = 2 * (half & 1);
      const unsigned y = 2 * (half >> 1);
      out |= 0x33u << (x + kTakenSplit * y);
    }
    return out;
  }

  // Which of half-cell `half`'s 4 children (bit `child` as in ChildBox)
  // TakenCellMask's bits mark.
  static unsigned QuarterPieces(unsigned quarters, unsigned half) {
    unsigned out = 0;
    for (unsigned child = 0; child < 4; ++child) {
      const unsigned x = 2 * (half & 1) + (child & 1);
      const unsigned y = 2 * (half >> 1) + (child >> 1);
      out |= ((quarters >> (x + kTakenSplit * y)) & 1) << child;
    }
    return out;
  }

  // The piece index (kSplit per cell) along axis a of v, clamped to the
  // grid.
  std::int64_t PieceIndex(int a, double v) const {
    const double f = (v - lo_[a]) * (kSplit * inv_cell_);
    if (!(f > 0)) return 0;
    const double last = static_cast<double>(kSplit * n_[a] - 1);
    return static_cast<std::int64_t>(f < last ? f : last);
  }

  // Collects every point within gather_bound_ of p into list_. In 3D,
  // where lists run to 30-60 points, those within `near_bound_` come first:
  // candidates mostly die on those, and the kernel checks for a hit every
  // 16 points. 2D lists are shorter than that, so order does not matter.
  void Gather(const double* p) {
    if (D == 3 || scan_bits_) {
      GatherRows<true>(p);
    } else {
      GatherRows<false>(p);
    }
  }

  // Gather's loop, over occupancy bits or (dense 2D) over every cell.
  template <bool kScanBits>
  void GatherRows(const double* p) {
    std::int64_t idx[D];
    for (int a = 0; a < D; ++a)
      idx[a] = static_cast<std::int64_t>(AxisCell(a, p[a]));
    const double b2 = gather_bound_ * gather_bound_;
    const double near2 = D == 3 ? near_bound_ * near_bound_ : b2;
    std::size_t n_near = 0;
    std::size_t n_far = 0;
    double* near[D];
    double* far[D];
    double* window[D];
    std::size_t n_window = 0;
    for (int a = 0; a < D; ++a) {
      near[a] = list_[a].data();
      far[a] = far_[a].data();
      window[a] = window_[a].data();
    }
    // The cells [start, start + len) of one row.
    auto row = [&](std::uint64_t start, std::int64_t len) {
      if constexpr (!kScanBits && D == 2) {
        // Dense 2D rows are at most 7 cells, a third of them occupied:
        // reading every cell (NaN when empty, never within the bound) costs
        // fewer cycles than a bit scan whose loop exit mispredicts on every
        // row. Classic rows run to 13 cells, and there the bits win.
        const double* q = &grid_[start * D];
        for (std::int64_t x = 0; x < len; ++x, q += D) {
          const double dx = q[0] - p[0];
          const double dy = q[1] - p[1];
          near[0][n_near] = q[0];
          near[1][n_near] = q[1];
          n_near += dx * dx + dy * dy < b2;
        }
        return;
      }
      std::uint64_t bits =
          BitRun(occupied_.data(), start, static_cast<unsigned>(len));
      if constexpr (D == 3) {
        // The window's points first, then one vector pass sorts them
        // (Ops::SplitNearFar3d).
        while (bits != 0) {
          const std::uint64_t cell =
              start + static_cast<std::uint64_t>(__builtin_ctzll(bits));
          bits &= bits - 1;
          const double* q = &grid_[cell * D];
          for (int a = 0; a < D; ++a) window[a][n_window] = q[a];
          ++n_window;
        }
        return;
      }
      while (bits != 0) {
        const std::uint64_t cell =
            start + static_cast<std::uint64_t>(__builtin_ctzll(bits));
        bits &= bits - 1;
        const double* q = &grid_[cell * D];
        double d2 = 0;
        for (int a = 0; a < D; ++a) {
          const double d = q[a] - p[a];
          d2 += d * d;
        }
        // Branch-free: write, then advance the count that applies.
        const bool is_near = d2 < near2;
        for (int a = 0; a < D; ++a) near[a][n_near] = q[a];
        n_near += is_near;
        if constexpr (D == 3) {
          for (int a = 0; a < D; ++a) far[a][n_far] = q[a];
          n_far += (!is_near) & (d2 < b2);  // &: no branch.
        }
      }
    };
    bool interior = true;
    std::int64_t centre = 0;
    for (int a = 0; a < D; ++a) {
      interior &= idx[a] >= gather_window_ && idx[a] + gather_window_ < n_[a];
      centre += idx[a] * static_cast<std::int64_t>(stride_[a]);
    }
    if (interior) {
      // Most points: no run needs clipping to the grid.
      for (const RowRun& run : gather_runs_) {
        row(static_cast<std::uint64_t>(centre + run.offset),
            run.x1 - run.x0 + 1);
      }
    } else {
      for (const RowRun& run : gather_runs_) {
        std::int64_t base = 0;
        bool inside = true;
        for (int a = 1; a < D; ++a) {
          const std::int64_t i = idx[a] + run.d[a];
          inside &= i >= 0 && i < n_[a];
          base += i * static_cast<std::int64_t>(stride_[a]);
        }
        if (!inside) continue;
        const std::int64_t x0 = std::max<std::int64_t>(0, idx[0] + run.x0);
        const std::int64_t x1 =
            std::min<std::int64_t>(n_[0] - 1, idx[0] + run.x1);
        if (x0 > x1) continue;
        row(static_cast<std::uint64_t>(base + x0), x1 - x0 + 1);
      }
    }
    if constexpr (D == 3) {
      for (int a = 0; a < D; ++a) {
        for (int j = 0; j < 4; ++j) {
          window[a][n_window + j] = std::numeric_limits<double>::quiet_NaN();
        }
      }
      Ops::SplitNearFar3d(window, n_window, p, near2, b2, near, &n_near, far,
                          &n_far);
      for (int a = 0; a < D; ++a) {
        std::copy(far[a], far[a] + n_far, near[a] + n_near);
      }
    }
    list_size_ = n_near + n_far;
    PadList();
  }

  // The kernels run over whole groups of 4; the slots past the list hold
  // NaN, which is never closer than anything.
  void PadList() {
    for (int a = 0; a < D; ++a) {
      for (std::size_t j = 0; j < 3; ++j) {
        list_[a][list_size_ + j] = std::numeric_limits<double>::quiet_NaN();
      }
    }
  }

  void AppendToList(const double* q) {
    assert(list_size_ + 3 < list_[0].size());
    for (int a = 0; a < D; ++a) list_[a][list_size_] = q[a];
    ++list_size_;
    PadList();
  }

  std::size_t Padded() const { return (list_size_ + 3) & ~std::size_t{3}; }

  // Whether c is closer than r to a listed point, given Padded().
  SCATTER_ALWAYS_INLINE bool ConflictsWithin(std::size_t padded,
                                             const double* c) const {
    if constexpr (D == 2) {
      return Ops::AnyWithin2d(list_[0].data(), list_[1].data(), padded, c[0],
                              c[1], min_d2_);
    } else {
      return Ops::AnyWithin3d(list_[0].data(), list_[1].data(), list_[2].data(),
                              padded, c[0], c[1], c[2], min_d2_);
    }
  }

  // Tests a candidate and accepts it when it is inside and clear. Returns
  // whether it was accepted. Polls the stop predicate now and then; when
  // the run must end, sets halt_ and the caller unwinds.
  SCATTER_ALWAYS_INLINE bool TryCandidate(const double* c) {
    if (++since_poll_ == kPollEvery) {
      since_poll_ = 0;
      if (stop_()) Halt(absl::CancelledError("sampling stopped by the caller"));
    }
    return AcceptIfClear(Padded(), interior_, c);
  }
  // TryCandidate without the poll, given Padded() and interior_ (which a
  // caller may hold in locals). Outside the interior, the cheap bounds test
  // first, then the neighbours, and only then the region and obstacles:
  // most candidates fail on a neighbour, and the order changes no answer.
  SCATTER_ALWAYS_INLINE bool AcceptIfClear(std::size_t padded, bool interior,
                                           const double* c) {
    if (!interior && !InBounds(c)) return false;
    if (ConflictsWithin(padded, c)) return false;
    if (!interior && !InShape(c)) return false;
    AppendToList(c);
    Accept(c);
    return true;
  }

  // AcceptIfClear for a run with taken marks: most candidates end on their
  // mark; the few others are tested against the grid cells around them
  // (GridConflict), and no list is gathered. The tests and their order are
  // AcceptIfClear's, so the answers are too.
  SCATTER_ALWAYS_INLINE bool AcceptIfUntaken(const TakenView& taken,
                                             bool interior, const double* c) {
    if (!interior && !InBounds(c)) return false;
    if (taken(c)) return false;
    if (GridConflict(c)) return false;
    if (!interior && !InShape(c)) return false;
    Accept(c);
    return true;
  }

  // AcceptIfClear for a 3D run with cover rejection (cover_rejects_): a
  // candidate in a piece that the cover marks hold ends there (CoverHolds);
  // the others are tested against the grid cells around them
  // (GridConflict3d), and no list is gathered. The tests and their order
  // are AcceptIfClear's, so the answers are too.
  SCATTER_ALWAYS_INLINE bool AcceptIfUncovered(bool interior, bool marks_decide,
                                               const double* c) {
    if (!interior && !InBounds(c)) return false;
    if (marks_decide && CoverHolds(c)) return false;
    if (GridConflict3d(c)) return false;
    if (!interior && !InShape(c)) return false;
    Accept(c);
    return true;
  }

  // Whether the cover marks hold the piece of c, a place in the box (3D).
  // A marked piece lies within r (1 - 1e-6) of a point of the grid (the
  // stencil's ball, CoverStencil3d), so the grid test would reject c too:
  // rejecting it here changes no output. Rounding in the piece's index
  // moves c by at most a coordinate's step, which cover_rejects_ keeps
  // under 1e-9 r, a thousandth of that margin. Obstacles mark the pieces
  // inside their clearances with a margin of only 1e-9 in the clearance
  // squared (MarkCoveredDisk), so where one reaches the candidates, a
  // visit does not ask (marks_decide_).
  SCATTER_ALWAYS_INLINE bool CoverHolds(const double* c) const {
    std::uint64_t cell = 0;
    unsigned bit = 0;
    for (int a = 0; a < D; ++a) {
      const double f = (c[a] - lo_[a]) * inv_cell_;
      std::int64_t i = static_cast<std::int64_t>(f);  // f >= 0: c is inside.
      i = std::min<std::int64_t>(i, n_[a] - 1);
      const auto q =
          static_cast<std::int64_t>((f - static_cast<double>(i)) * kSplit);
      bit += static_cast<unsigned>(std::min<std::int64_t>(q, kSplit - 1))
             << (2 * a);
      cell += static_cast<std::uint64_t>(i) * stride_[a];
    }
    return ((cover_[cell] >> bit) & 1) != 0;
  }

  // Whether a point of the grid is closer than r to c, a place in the box
  // (3D), by the list test's squared distance and comparison (Ops'
  // AnyWithin3d: (dx*dx + dy*dy) + dz*dz < r^2 (1 + kDistanceSlack)), over
  // the cells that can hold such a point: along each axis within 2 cells
  // of c's (two cells are wider than r), of the two cells 2 away only the
  // one c's offset u into its cell brings within r (u + 1 or 2 - u cells,
  // against r of about 1.732 cells; GridConflict says more). The window's
  // rows are read from the occupancy bits.
  SCATTER_ALWAYS_INLINE bool GridConflict3d(const double* c) const {
    std::int64_t first[D], last[D];
    ConflictWindow(c, first, last);
    const auto len = static_cast<unsigned>(last[0] - first[0] + 1);
    for (std::int64_t z = first[2]; z <= last[2]; ++z) {
      for (std::int64_t y = first[1]; y <= last[1]; ++y) {
        const std::uint64_t start =
            static_cast<std::uint64_t>(first[0]) +
            static_cast<std::uint64_t>(y) * stride_[1] +
            static_cast<std::uint64_t>(z) * stride_[D - 1];
        for (std::uint64_t bits = BitRun(occupied_.data(), start, len);
             bits != 0; bits &= bits - 1) {
          const double* q = &grid_[(start + static_cast<std::uint64_t>(
                                                __builtin_ctzll(bits))) *
                                   D];
          const double dx = q[0] - c[0];
          const double dy = q[1] - c[1];
          const double dz = q[D - 1] - c[D - 1];
          if (dx * dx + dy * dy + dz * dz < min_d2_) return true;
        }
      }
    }
    return false;
  }

  void Halt(absl::Status status) {
    if (halt_.ok()) halt_ = std::move(status);
  }

  // Counts n candidates towards the next poll of the stop predicate, and
  // polls it when due. Returns whether the run must end (halt_ is set).
  bool PollStop(std::uint64_t n) {
    since_poll_ += n;
    if (since_poll_ < kPollEvery) return false;
    since_poll_ = 0;
    if (!stop_()) return false;
    Halt(absl::CancelledError("sampling stopped by the caller"));
    return true;
  }

  // Dense: one visit, k candidates at r(1 + eps) on evenly stepped
  // directions, rotated by a random unit vector (2D) or a random rotation
  // (3D) drawn by rejection from the cube and normalised.
  void VisitDense(const double* p, std::uint64_t index) {
    CounterRng rng(Combine(Combine(candidate_key_, index), 0));
    double c[D];
    if constexpr (D == 2) {
      double u, v;
      RandomUnit2(rng, &u, &v);
      const auto& directions = Woken(index) ? woken_circle_ : circle_;
      // With taken marks the stop predicate is polled once a visit, as in
      // VisitClassic.
      if (kTaken && PollStop(directions.size())) return;
      const TakenView taken = Taken();
      const bool interior = interior_;
#ifdef SCATTER_POISSON_AVX2
      if constexpr (kTaken) {
        if (interior && taken_in_lanes_) {
          DenseGroups(p, u, v, Woken(index) ? woken_lanes_ : circle_lanes_,
                      directions.size(), taken);
          return;
        }
      }
#endif
      for (const auto& d : directions) {
        c[0] = p[0] + step_ * (u * d[0] - v * d[1]);
        c[1] = p[1] + step_ * (v * d[0] + u * d[1]);
        if constexpr (kTaken) {
          AcceptIfUntaken(taken, interior, c);
        } else {
          TryCandidate(c);
        }
        if (!halt_.ok()) return;
      }
    } else {
      double m[3][3];
      RandomRotation3(rng, m);
      const auto& directions = Woken(index) ? woken_sphere_ : sphere_;
      // With cover rejection the stop predicate is polled once a visit.
      if (cover_rejects_ && PollStop(directions.size())) return;
      const bool interior = interior_;
      const bool marks_decide = marks_decide_;
#ifdef SCATTER_POISSON_AVX2
      if (interior && marks_decide && cover_in_lanes_) {
        DenseGroups3d(p, m, Woken(index) ? woken_sphere_lanes_ : sphere_lanes_,
                      directions.size());
        return;
      }
#endif
      for (const auto& d : directions) {
        for (int a = 0; a < 3; ++a) {
          c[a] =
              p[a] + step_ * (m[a][0] * d[0] + m[a][1] * d[1] + m[a][2] * d[2]);
        }
        if (cover_rejects_) {
          AcceptIfUncovered(interior, marks_decide, c);
        } else {
          TryCandidate(c);
        }
        if (!halt_.ok()) return;
      }
    }
  }

  // Classic: candidates uniform in the annulus (shell) [r, 2r]: in 2D from
  // one draw each (UnitShellPoint2d), in 3D by rejection from the cube
  // [-2r, 2r]^3 (UnitShellPoint). A visit ends at the first accepted
  // candidate and the point stays active; it retires after a visit of k
  // failures.
  // The loop keeps what a visit reads in locals (the list changes only
  // when a candidate is accepted, which ends the visit) and polls the stop
  // predicate once a visit: members reloaded around every candidate cost
  // a tenth of its instructions.
  void VisitClassic(const double* p, std::uint64_t index) {
    const double r = r_;
    const bool interior = interior_;
    const bool marks_decide = marks_decide_;
    const int attempts = attempts_;
    const TakenView taken = Taken();
    const ShellDirectionTable& shell_directions = *shell_directions_;
    for (std::uint64_t visit = 0;; ++visit) {
      if (PollStop(static_cast<std::uint64_t>(attempts))) return;
      const std::uint64_t visit_key =
          Combine(Combine(candidate_key_, index), visit);
      const std::size_t padded = taken_marks_ || cover_rejects_ ? 0 : Padded();
      // Whether the candidate at c is accepted.
      auto try_candidate = [&](const double* c) SCATTER_INLINE_LAMBDA {
        if (taken_marks_) return AcceptIfUntaken(taken, interior, c);
        if constexpr (D == 3) {
          if (cover_rejects_) {
            return AcceptIfUncovered(interior, marks_decide, c);
          }
        }
        return AcceptIfClear(padded, interior, c);
      };
      bool accepted = false;
#ifdef SCATTER_POISSON_AVX2
      if constexpr (kTaken) {
        if (interior && taken_in_lanes_) {
          // Four candidates at a time (ShellGroupUntaken), then those off
          // the marks one by one, in index order, as the loop below.
          for (int i = 0; i < attempts && !accepted; i += 4) {
            alignas(32) double cx[4], cy[4];
            unsigned open =
                ShellGroupUntaken(shell_directions, visit_key, i, p, cx, cy);
            if (attempts - i < 4) open &= (1u << (attempts - i)) - 1;
            for (; open != 0; open &= open - 1) {
              const int j = __builtin_ctz(open);
              const double c[2] = {cx[j], cy[j]};
              if (GridConflict(c)) continue;
              Accept(c);
              accepted = true;
              break;
            }
          }
          if (!accepted || !halt_.ok()) return;
          continue;
        }
      }
#endif
      for (int i = 0; i < attempts; ++i) {
        CounterRng rng(visit_key, static_cast<std::uint64_t>(i) << kBlockShift);
        double v[D];
        if constexpr (D == 2) {
          UnitShellPoint2d(shell_directions, rng.Next(), v);
        } else {
          UnitShellPoint<D>(&rng, v);
        }
        double c[D];
        for (int a = 0; a < D; ++a) c[a] = p[a] + r * v[a];
        if (try_candidate(c)) {
          accepted = true;
          break;
        }
      }
      if (!accepted || !halt_.ok()) return;
    }
  }

#ifdef SCATTER_POISSON_AVX2
  // VisitDense's loop for an interior visit with taken marks, four
  // directions at a time: the candidates placed as the scalar loop places
  // them, operation for operation, and looked up in the marks in lanes
  // (UntakenLanes). Marks are only ever set, so a candidate its lane finds
  // taken stays taken; the others go through AcceptIfUntaken in index
  // order, which reads the marks again (an earlier one of the four may
  // have been accepted). `lanes`: the directions' x and y, padded to a
  // multiple of 4.
  void DenseGroups(const double* p, double u, double v,
                   const std::array<std::vector<double>, 2>& lanes,
                   std::size_t count, const TakenView& taken) {
    const __m256d step = _mm256_set1_pd(step_);
    const __m256d vu = _mm256_set1_pd(u);
    const __m256d vv = _mm256_set1_pd(v);
    const __m256d p0 = _mm256_set1_pd(p[0]);
    const __m256d p1 = _mm256_set1_pd(p[1]);
    for (std::size_t i = 0; i < count; i += 4) {
      const __m256d dx = _mm256_loadu_pd(&lanes[0][i]);
      const __m256d dy = _mm256_loadu_pd(&lanes[1][i]);
      const __m256d c0 = _mm256_add_pd(
          p0, _mm256_mul_pd(step, _mm256_sub_pd(_mm256_mul_pd(vu, dx),
                                                _mm256_mul_pd(vv, dy))));
      const __m256d c1 = _mm256_add_pd(
          p1, _mm256_mul_pd(step, _mm256_add_pd(_mm256_mul_pd(vv, dx),
                                                _mm256_mul_pd(vu, dy))));
      unsigned open = UntakenLanes(c0, c1);
      if (count - i < 4) open &= (1u << (count - i)) - 1;
      if (open == 0) continue;
      alignas(32) double cx[4], cy[4];
      _mm256_store_pd(cx, c0);
      _mm256_store_pd(cy, c1);
      for (; open != 0; open &= open - 1) {
        const int j = __builtin_ctz(open);
        const double c[2] = {cx[j], cy[j]};
        AcceptIfUntaken(taken, true, c);
        if (!halt_.ok()) return;
      }
    }
  }

  // Classic 2D candidates i to i + 3 of a visit in AVX2 lanes: each drawn
  // as UnitShellPoint2d draws it and placed at p + r v, operation for
  // operation as VisitClassic's scalar loop does (so the same bits), into
  // cx and cy, and looked up in the taken marks as TakenView looks. Returns
  // the candidates whose piece is not taken (bit j for candidate i + j).
  // For an interior visit (every candidate in the box) when the piece
  // indices fit the lanes (taken_in_lanes_).
  SCATTER_ALWAYS_INLINE unsigned ShellGroupUntaken(
      const ShellDirectionTable& directions, std::uint64_t visit_key, int i,
      const double* p, double* cx, double* cy) const {
    // Four draws, written out: as a loop over an array, GCC 12 keeps the
    // products in memory.
    auto draw = [&](int j) {
      CounterRng rng(visit_key, static_cast<std::uint64_t>(i + j)
                                    << kBlockShift);
      return rng.Next();
    };
    const std::uint64_t bits[4] = {draw(0), draw(1), draw(2), draw(3)};
    // The directions' (cos, sin) pairs, two to a register, then sorted
    // into the cosines and the sines.
    auto pair = [&](int j) {
      return _mm_loadu_pd(directions[static_cast<std::size_t>(
                                         bits[j] >> (64 - kShellDirectionBits))]
                              .data());
    };
    const __m256d d02 =
        _mm256_insertf128_pd(_mm256_castpd128_pd256(pair(0)), pair(2), 1);
    const __m256d d13 =
        _mm256_insertf128_pd(_mm256_castpd128_pd256(pair(1)), pair(3), 1);
    const __m256d cosines = _mm256_unpacklo_pd(d02, d13);
    const __m256d sines = _mm256_unpackhi_pd(d02, d13);
    const __m256i b = _mm256_set_epi64x(
        static_cast<long long>(bits[3]), static_cast<long long>(bits[2]),
        static_cast<long long>(bits[1]), static_cast<long long>(bits[0]));
    // Integers below 2^52 to doubles, exactly: under 2^52's exponent their
    // bits are 2^52 + v; less 2^52 leaves v.
    const __m256d two52 = _mm256_set1_pd(0x1.0p52);
    auto exact = [&](__m256i v) {
      return _mm256_sub_pd(
          _mm256_castsi256_pd(_mm256_or_si256(v, _mm256_castpd_si256(two52))),
          two52);
    };
    const __m256d t =
        _mm256_mul_pd(exact(_mm256_and_si256(_mm256_srli_epi64(b, 32),
                                             _mm256_set1_epi64x(0xFFFFF))),
                      _mm256_set1_pd(kShellTurnPerUnit));
    const __m256d u = _mm256_mul_pd(
        exact(_mm256_and_si256(b, _mm256_set1_epi64x(0xFFFFFFFF))),
        _mm256_set1_pd(0x1.0p-32));
    const __m256d one = _mm256_set1_pd(1);
    const __m256d radius = _mm256_mul_pd(
        _mm256_sqrt_pd(_mm256_add_pd(one, _mm256_mul_pd(_mm256_set1_pd(3), u))),
        _mm256_sub_pd(one,
                      _mm256_mul_pd(_mm256_set1_pd(0.5), _mm256_mul_pd(t, t))));
    const __m256d r = _mm256_set1_pd(r_);
    const __m256d c0 = _mm256_add_pd(
        _mm256_set1_pd(p[0]),
        _mm256_mul_pd(
            r, _mm256_mul_pd(radius,
                             _mm256_sub_pd(cosines, _mm256_mul_pd(sines, t)))));
    const __m256d c1 = _mm256_add_pd(
        _mm256_set1_pd(p[1]),
        _mm256_mul_pd(
            r, _mm256_mul_pd(radius,
                             _mm256_add_pd(sines, _mm256_mul_pd(cosines, t)))));
    _mm256_store_pd(cx, c0);
    _mm256_store_pd(cy, c1);
    return UntakenLanes(c0, c1);
  }

  // VisitDense's 3D loop for an interior visit with cover rejection where
  // the marks decide, four directions at a time: the candidates placed as
  // the scalar loop places them, operation for operation (so the same
  // bits), and looked up in the cover marks in lanes (CoverLanes). Marks
  // are only ever set, so a candidate its lane finds marked stays
  // rejected; the others go through AcceptIfUncovered in index order,
  // which reads the marks again. `lanes`: the directions' x, y and z,
  // padded to a multiple of 4.
  void DenseGroups3d(const double* p, const double (*m)[3],
                     const std::array<std::vector<double>, 3>& lanes,
                     std::size_t count) {
    const __m256d step = _mm256_set1_pd(step_);
    for (std::size_t i = 0; i < count; i += 4) {
      const __m256d dx = _mm256_loadu_pd(&lanes[0][i]);
      const __m256d dy = _mm256_loadu_pd(&lanes[1][i]);
      const __m256d dz = _mm256_loadu_pd(&lanes[2][i]);
      __m256d c[3];
      for (int a = 0; a < 3; ++a) {
        // p + step (m0 d0 + m1 d1 + m2 d2), summed left to right.
        const __m256d dot = _mm256_add_pd(
            _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(m[a][0]), dx),
                          _mm256_mul_pd(_mm256_set1_pd(m[a][1]), dy)),
            _mm256_mul_pd(_mm256_set1_pd(m[a][2]), dz));
        c[a] = _mm256_add_pd(_mm256_set1_pd(p[a]), _mm256_mul_pd(step, dot));
      }
      unsigned open = CoverLanes(c);
      if (count - i < 4) open &= (1u << (count - i)) - 1;
      if (open == 0) continue;
      alignas(32) double cx[4], cy[4], cz[4];
      _mm256_store_pd(cx, c[0]);
      _mm256_store_pd(cy, c[1]);
      _mm256_store_pd(cz, c[2]);
      for (; open != 0; open &= open - 1) {
        const int j = __builtin_ctz(open);
        const double one[3] = {cx[j], cy[j], cz[j]};
        AcceptIfUncovered(true, true, one);
        if (!halt_.ok()) return;
      }
    }
  }

  // Which of the four places (c[a] along axis a, each in the box) lie in a
  // piece the cover marks do not hold (bit j for lane j), looked up as
  // CoverHolds looks, given cover_in_lanes_.
  SCATTER_ALWAYS_INLINE unsigned CoverLanes(const __m256d* c) const {
    __m128i cell[3], bit = _mm_setzero_si128();
    for (int a = 0; a < 3; ++a) {
      const __m256d f =
          _mm256_mul_pd(_mm256_sub_pd(c[a], _mm256_set1_pd(lo_[a])),
                        _mm256_set1_pd(inv_cell_));
      const __m128i i = _mm_min_epi32(
          _mm256_cvttpd_epi32(f), _mm_set1_epi32(static_cast<int>(n_[a] - 1)));
      const __m128i q = _mm_min_epi32(
          _mm256_cvttpd_epi32(_mm256_mul_pd(
              _mm256_sub_pd(f, _mm256_cvtepi32_pd(i)), _mm256_set1_pd(kSplit))),
          _mm_set1_epi32(kSplit - 1));
      bit = _mm_add_epi32(bit, _mm_slli_epi32(q, 2 * a));
      cell[a] = i;
    }
    const __m256i index = _mm256_add_epi64(
        _mm256_add_epi64(
            _mm256_cvtepu32_epi64(cell[0]),
            _mm256_mul_epu32(
                _mm256_cvtepu32_epi64(cell[1]),
                _mm256_set1_epi64x(static_cast<long long>(stride_[1])))),
        _mm256_mul_epu32(
            _mm256_cvtepu32_epi64(cell[2]),
            _mm256_set1_epi64x(static_cast<long long>(stride_[2]))));
    const __m256i words = _mm256_i64gather_epi64(
        reinterpret_cast<const long long*>(cover_.data()), index, 8);
    const __m256i marks = _mm256_srlv_epi64(words, _mm256_cvtepu32_epi64(bit));
    const int held =
        _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(marks, 63)));
    return ~static_cast<unsigned>(held) & 0xFu;
  }

  // Which of the four places (x in c0, y in c1, each in the box) lie in a
  // piece the taken marks do not hold (bit j for lane j), looked up as
  // TakenView looks, given taken_in_lanes_.
  SCATTER_ALWAYS_INLINE unsigned UntakenLanes(__m256d c0, __m256d c1) const {
    // Piece (x, y) is bit y row_bits + x.
    const __m256d inv_h = _mm256_set1_pd(kTakenSplit * inv_cell_);
    const __m128i x = _mm256_cvttpd_epi32(
        _mm256_mul_pd(_mm256_sub_pd(c0, _mm256_set1_pd(lo_[0])), inv_h));
    const __m128i y = _mm256_cvttpd_epi32(
        _mm256_mul_pd(_mm256_sub_pd(c1, _mm256_set1_pd(lo_[1])), inv_h));
    const __m256i bit = _mm256_add_epi64(
        _mm256_mul_epu32(
            _mm256_cvtepu32_epi64(y),
            _mm256_set1_epi64x(static_cast<long long>(taken_row_bits_))),
        _mm256_cvtepu32_epi64(x));
    const __m256i words = _mm256_i64gather_epi64(
        reinterpret_cast<const long long*>(taken_.data()),
        _mm256_srli_epi64(bit, 6), 8);
    const __m256i marks =
        _mm256_srlv_epi64(words, _mm256_and_si256(bit, _mm256_set1_epi64x(63)));
    const int taken =
        _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(marks, 63)));
    return ~static_cast<unsigned>(taken) & 0xFu;
  }
#endif

  // Processes active points until none is left, or the run halts.
  absl::Status Drain() {
    while (halt_.ok() &&
           schedule_.Next(
               head_, [this](std::uint64_t c) { WakeScheduled(c); },
               [this] { return active_.size(); })) {
      const Active e = active_[head_++];
      double p[D];
      for (int a = 0; a < D; ++a) p[a] = grid_[e.cell * D + a];
      if (!taken_marks_ && !(D == 3 && cover_rejects_)) Gather(p);
      // When every place a candidate can reach is inside, no candidate
      // needs the inside test: a bounds check in a box region, one
      // classification of the reach's box in any other (most points sit
      // far from the region's edge).
      interior_ = true;
      for (int a = 0; a < D; ++a) {
        interior_ &= p[a] - reach_ >= lo_[a] && p[a] + reach_ < hi_[a];
      }
      // Whether an obstacle's clearance reaches the candidates' box.
      bool reaches = false;
      const bool ask_obstacles =
          !obstacles_.empty() && (interior_ || (D == 3 && cover_rejects_));
      if (ask_obstacles || (interior_ && !box_only_)) {
        double r0[D], r1[D];
        for (int a = 0; a < D; ++a) {
          r0[a] = p[a] - reach_;
          r1[a] = p[a] + reach_;
        }
        if (ask_obstacles) {
          bool covered = false;
          obstacles_.Classify(r0, r1, &covered, &reaches);
        }
        if (interior_) {
          interior_ = !reaches && (box_only_ || region_.Classify(r0, r1) ==
                                                    Region::Overlap::kInside);
        }
      }
      // Obstacles set cover marks too, shrunk by less than the points'
      // stencils (MarkCoveredDisk: 1e-9 of the clearance squared): where
      // one reaches, its marks are left out of the decision (CoverHolds).
      if constexpr (D == 3) marks_decide_ = !reaches;
      if (dense_) {
        VisitDense(p, e.index);
      } else {
        VisitClassic(p, e.index);
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

  // Accepts a point found by gap filling and grows Bridson from it.
  absl::Status FinishGapPoint(const double* p) {
    Accept(p);
    return Drain();
  }

  // The cell's bounds clipped to the box.
  void CellBounds(std::uint64_t c, double* b0, double* b1) const {
    UnclippedCellBounds(c, b0, b1);
    for (int a = 0; a < D; ++a) {
      b1[a] = std::min(b1[a], hi_[a]);
      b0[a] = std::max(b0[a], lo_[a]);
    }
  }

  // A point uniform in [b0, b1) from the stream of (cell, piece).
  void RandomPointIn(const double* b0, const double* b1, std::uint64_t cell,
                     std::uint64_t piece, double* p) const {
    RandomPointInCell(b0, b1, Combine(gap_key_, cell), piece, p);
  }

  // The same, given the cell's key Combine(gap_key_, cell).
  static void RandomPointInCell(const double* b0, const double* b1,
                                std::uint64_t cell_key, std::uint64_t piece,
                                double* p) {
    CounterRng rng(cell_key, piece << kBlockShift);
    for (int a = 0; a < D; ++a) {
      p[a] = b0[a] + rng.Uniform01() * (b1[a] - b0[a]);
      if (!(p[a] < b1[a])) p[a] = b0[a];
    }
  }

  // A random place inside the region in the first cell that has one (a
  // few tries per cell that meets the region); false when none is found,
  // or when the stop predicate (polled every kPollEvery cells: the region
  // may lie at the far end of a big grid) halts the run.
  bool FirstSeed(double* p) {
    // A sparse run's end of the chunk the scan is in (MapNear); others
    // never pass it.
    std::uint64_t near_until = sparse_ ? 0 : cells_;
    // Cells visited, not the index: with the far chunks skipped, the
    // index can step over every multiple of kPollEvery (rows of 4096
    // cells, the region short of their ends).
    std::uint64_t visited = 0;
    for (std::uint64_t c = 0; c < cells_; ++c) {
      if (c >= near_until) {
        // Chunks that miss the region hold no place of it (MapNear).
        c = NextNear(c, &near_until);
        if (c >= cells_) break;
      }
      if (++visited % kPollEvery == 0 && PollStop(kPollEvery)) return false;
      double b0[D], b1[D];
      CellBounds(c, b0, b1);
      if (!box_only_ && region_.Classify(b0, b1) == Region::Overlap::kOutside) {
        continue;
      }
      for (std::uint64_t piece = 0; piece < 16; ++piece) {
        RandomPointIn(b0, b1, c, piece, p);
        if (Inside(p) && !NearGridPoint(p)) return true;
      }
    }
    return false;
  }

  // Whether a point already in the grid (a same-layer obstacle's, or one
  // grown from a scheduled one) is closer than r to p, a place in the box:
  // the cells within 2 of p's along each axis (two cells are wider than r
  // for D <= 3), empty ones NaN.
  bool NearGridPoint(const double* p) const {
    std::int64_t first[3] = {0, 0, 0}, last[3] = {0, 0, 0};
    for (int a = 0; a < D; ++a) {
      const auto i = static_cast<std::int64_t>(AxisCell(a, p[a]));
      first[a] = std::max<std::int64_t>(0, i - 2);
      last[a] = std::min<std::int64_t>(n_[a] - 1, i + 2);
    }
    for (std::int64_t z = first[2]; z <= last[2]; ++z) {
      for (std::int64_t y = first[1]; y <= last[1]; ++y) {
        for (std::int64_t x = first[0]; x <= last[0]; ++x) {
          const std::uint64_t c =
              static_cast<std::uint64_t>(x) +
              static_cast<std::uint64_t>(y) * stride_[1] +
              (D == 3 ? static_cast<std::uint64_t>(z) * stride_[D - 1] : 0);
          double d2 = 0;
          for (int a = 0; a < D; ++a) {
            const double d = grid_[c * D + a] - p[a];
            d2 += d * d;
          }
          if (d2 < min_d2_) return true;
        }
      }
    }
    return false;
  }

  // Scans every cell in index order; a cell that still holds an uncovered
  // place gets a point there, and Bridson grows from it. Points only ever
  // cover more, so one scan leaves the whole box covered.
  absl::Status FillGaps() {
    const int reach = StencilReach();
    // A sparse run's end of the chunk the scan is in (MapNear); others
    // never pass it.
    std::uint64_t near_until = sparse_ ? 0 : cells_;
    for (std::uint64_t c = 0; c < cells_; ++c) {
      if (c >= near_until) {
        // Chunks that miss the region hold no place of it (MapNear). From
        // the 8 cells the next near one is among, so the scan's groups of
        // 8 stay as they were.
        const std::uint64_t next = NextNear(c, &near_until);
        if (next >= cells_) break;
        c = std::max(c, next & ~std::uint64_t{7});
      }
      if ((c & 7) == 0) {
        // The marks of cells c to c + 7 (see MarkedPlane).
        const std::int64_t need = PlaneOf(std::min(c + 7, cells_ - 1)) + reach;
        if (need > marked_through_ && !taken_marks_) MarkPlanesThrough(need);
        // Skip runs of 8 fully covered cells.
        CoverWord eight = kFullCover;
        for (int i = 0; i < 8; ++i) eight &= cover_[c + i];
        if ((eight == kFullCover || (taken_marks_ && EightTaken(c))) &&
            c + 8 <= cells_) {
          c += 7;
          continue;
        }
        if (++since_poll_ >= kPollEvery / 8) {
          since_poll_ = 0;
          if (stop_()) {
            return absl::CancelledError("sampling stopped by the caller");
          }
        }
        // Skip runs of 8 cells of one row that lie wholly outside the
        // region with one classification instead of eight (the sea around
        // a coastline is most of what the scan would classify).
        if (!box_only_ && c + 8 <= cells_ &&
            c % static_cast<std::uint64_t>(n_[0]) + 8 <=
                static_cast<std::uint64_t>(n_[0])) {
          double r0[D], r1[D];
          for (int a = 0; a < D; ++a) {
            const auto i = static_cast<std::int64_t>(
                (c / stride_[a]) % static_cast<std::uint64_t>(n_[a]));
            r0[a] = lo_[a] + static_cast<double>(i) * cell_;
            r1[a] = r0[a] + cell_ * (a == 0 ? 8 : 1);
          }
          if (region_.Classify(r0, r1) == Region::Overlap::kOutside) {
            c += 7;
            continue;
          }
        }
      }
      CoverWord mask = cover_[c];
      if (mask == kFullCover) continue;
      // With taken marks, the cell's sixteenths that they mark (and the
      // cover marks' half-cells, which obstacles set), as QuarterPieces
      // reads them.
      unsigned quarters = 0;
      if (taken_marks_) {
        quarters = TakenCellMask(c) |
                   HalvesAsQuarters(static_cast<unsigned>(mask & 0xF));
        if (quarters == 0xFFFF) continue;
      }
      std::int64_t idx[D];
      double u0[D], u1[D];
      for (int a = 0; a < D; ++a) {
        idx[a] = static_cast<std::int64_t>((c / stride_[a]) %
                                           static_cast<std::uint64_t>(n_[a]));
        u0[a] = lo_[a] + static_cast<double>(idx[a]) * cell_;
        u1[a] = u0[a] + cell_;
      }
      if (!box_only_ && region_.Classify(u0, u1) == Region::Overlap::kOutside) {
        continue;
      }
      bool clipped = false;
      for (int a = 0; a < D; ++a) clipped |= u1[a] > hi_[a];
      if constexpr (D == 3) {
        if (!clipped) {
          mask |= HeldNearby(idx, u0, u1, static_cast<CoverWord>(~mask));
          if (mask == kFullCover) continue;
        }
      }
      // Classic 2D fills its gaps at peaks (FillCellAtPeaks) where it can;
      // dense packing, and 3D, split cells (SearchCell). Of the cells a
      // classic run searches, one in five holds a place (58 k of 265 k in
      // poisson_classic/2d), and splitting one until a random place hit took
      // about 11 k instructions (bench/README.md, "Gaps at Voronoi
      // vertices"); dense runs gained nothing from peaks.
      if constexpr (D == 2) {
        if (!dense_ && PeaksServe(u0, u1)) {
          absl::Status s = FillCellAtPeaks(c, idx, u0, u1, clipped);
          if (!s.ok()) return s;
          continue;
        }
      }
      absl::Status s = SearchCell(c, idx, u0, u1, mask, quarters, clipped);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Gap filling in cell c (per-axis index idx, bounds [u0, u1)) by
  // splitting it: places a point if the search finds a place. `mask`: its
  // cover marks; `quarters`: with taken marks, the sixteenths they hold;
  // `clipped`: the box's edge cuts the cell.
  absl::Status SearchCell(std::uint64_t c, const std::int64_t* idx,
                          const double* u0, const double* u1, CoverWord mask,
                          unsigned quarters, bool clipped) {
    const std::size_t n = GatherAroundCell(c, idx, u0, u1);
    // Only the half-cells no single disk covers need a look, and in 3D
    // only their quarter-cells that no single disk covers (when the grid's
    // edge does not cut the cell: then the half-cell's children are other
    // boxes than the grid's quarter-cells).
    double p[D];
    bool found = false;
    // Children in a rotated order, so gap points have no bias towards
    // a corner of their cell.
    const unsigned turn = ChildTurn(c, 0);
    for (unsigned t = 0; t < (1u << D) && !found; ++t) {
      const unsigned child = (t + turn) & ((1u << D) - 1);
      const unsigned covered = taken_marks_ ? QuarterPieces(quarters, child)
                                            : HalfCellPieces(mask, child);
      if (covered == kAllChildren) continue;
      double c0[D], c1[D];
      if (!ClippedHalfCell<D>(u0, u1, lo_, hi_, child, c0, c1)) continue;
      found = FindUncovered(c0, c1, 1, n, c, 1 + child, maybe_partial_, p,
                            clipped ? 0 : covered);
    }
    if (!found) return absl::OkStatus();
    return FinishGapPoint(p);
  }

  // FillCellAtPeaks' draws in cell c's stream, past the pieces the
  // search draws from (under 2^14, and its tries in a piece the region's
  // edge crosses at 2^24 to 2^26): round i's place when nothing is near is
  // piece kPeakPieces + i, its move piece kPeakPieces + kPeakJitter + i.
  static constexpr std::uint64_t kPeakPieces = std::uint64_t{1} << 20;
  static constexpr std::uint64_t kPeakJitter = std::uint64_t{1} << 19;

  // The box [b0, b1] widened by `margin` and clipped to the closed box
  // [lo_, last_], into w0 and w1.
  void WidenedInBox(const double* b0, const double* b1, double margin,
                    double* w0, double* w1) const {
    for (int a = 0; a < D; ++a) {
      w0[a] = std::max(b0[a] - margin, lo_[a]);
      w1[a] = std::min(b1[a] + margin, last_[a]);
    }
  }

  // Whether FillCellAtPeaks may fill the 2D cell [u0, u1): the cell widened
  // by (a little more than) peak_margin_, within the box, lies wholly inside
  // the region, and no obstacle's clearance reaches it.
  bool PeaksServe(const double* u0, const double* u1) const {
    if (box_only_ && obstacles_.empty()) return true;
    // FillCellAtPeaks' boxes reach a millionth of a piece further.
    double d0[D], d1[D];
    WidenedInBox(u0, u1, peak_margin_ * 1.01, d0, d1);
    if (!box_only_ && region_.Classify(d0, d1) != Region::Overlap::kInside) {
      return false;
    }
    if (obstacles_.empty()) return true;
    bool in_obstacle = false, near_obstacle = false;
    obstacles_.Classify(d0, d1, &in_obstacle, &near_obstacle);
    return !in_obstacle && !near_obstacle;
  }

  // Gap filling in the 2D cell c (index idx, bounds [u0, u1); PeaksServe):
  // while some place of the cell is at least r from every point, a point
  // goes where the distance to the nearest point peaks in the box of the
  // cell's open sixteenths widened by peak_margin_ (the middle of the hole,
  // which may lie a little past the cell's edge), moved to a random place
  // of the disk around the peak that is as far (within the widened box),
  // and grows as any gap point does. Whether
  // the cell holds a place, and where the peak is, come from the Voronoi
  // vertices of the points around it (BoxMayHoldPlace2d,
  // FarthestPlace2d), not from splitting the cell. All boxes are clipped
  // to the closed box [lo_, last_], whose places are the box's.
  absl::Status FillCellAtPeaks(std::uint64_t c, const std::int64_t* idx,
                               const double* u0, const double* u1,
                               bool clipped) {
    for (std::uint64_t round = 0;; ++round) {
      // Places at r from every point lie in the sixteenths of the cell that
      // no mark holds: only their bounding box is asked, and the points
      // that reach it.
      const unsigned open =
          ~((taken_marks_ ? TakenCellMask(c) : 0) |
            HalvesAsQuarters(static_cast<unsigned>(cover_[c] & 0xF))) &
          0xFFFFu;
      if (open == 0) return absl::OkStatus();
      unsigned columns = 0, rows = 0;
      for (unsigned qy = 0; qy < kTakenSplit; ++qy) {
        const unsigned row = (open >> (kTakenSplit * qy)) & 0xFu;
        columns |= row;
        rows |= static_cast<unsigned>(row != 0) << qy;
      }
      const int first[2] = {__builtin_ctz(columns), __builtin_ctz(rows)};
      const int last[2] = {31 - __builtin_clz(columns),
                           31 - __builtin_clz(rows)};
      double s0[D], s1[D], w0[D], w1[D];
      for (int a = 0; a < D; ++a) {
        // Widened by a millionth of a piece: the marks' pieces and these
        // bounds round apart.
        const double piece = (u1[a] - u0[a]) / kTakenSplit;
        s0[a] = u0[a] + (first[a] - 1e-6) * piece;
        s1[a] = u0[a] + (last[a] + 1 + 1e-6) * piece;
      }
      WidenedInBox(s0, s1, 0, s0, s1);
      // Open pieces wholly past the box's far side hold no place of it.
      if (!(s0[0] <= s1[0] && s0[1] <= s1[1])) return absl::OkStatus();
      WidenedInBox(s0, s1, peak_margin_, w0, w1);
      std::size_t n = GatherAroundCell(c, idx, s0, s1);
      const double* list[D] = {GapList(0, 0), GapList(0, 1)};
      if (!BoxMayHoldPlace2d(list[0], list[1], n, s0, s1, certain_d2_)) {
        return absl::OkStatus();
      }
      double p[D] = {};
      n = GatherAroundCell(c, idx, w0, w1);
      if (n == 0) {
        // Nothing within r of the widened box: any place of it will do.
        RandomPointIn(w0, w1, c, kPeakPieces + round, p);
      } else {
        const double best =
            FarthestPlace2d(list[0], list[1], n, w0, w1, min_d2_, p);
        if (best == 0 || !ClearOf(list, n, p)) {
          // No place reaches r (a peak within rounding of it): the cell is
          // searched by splitting, once.
          return SearchCell(c, idx, u0, u1, cover_[c], ~open & 0xFFFFu,
                            clipped);
        }
        // A random place of the disk of radius sqrt(best) - r around the
        // peak (all of it at least r from the points) within the widened
        // box: drawn in the box that bounds the two, up to 8 tries (each
        // lands with probability pi / 4 or more, unless the disk only
        // grazes the box), else the peak itself. When the hole is wider
        // than the widened box, the peak lies on its edge, a line that is
        // the same for every seed; the draw takes the point off it.
        const double reach = (std::sqrt(best) - r_) * (1 - 1e-6);
        double j0[D], j1[D];
        for (int a = 0; a < D; ++a) {
          j0[a] = std::max(p[a] - reach, w0[a]);
          j1[a] = std::min(p[a] + reach, w1[a]);
        }
        CounterRng rng(Combine(gap_key_, c), (kPeakPieces + kPeakJitter + round)
                                                 << kBlockShift);
        for (int attempt = 0; attempt < 8; ++attempt) {
          double q[D], d2 = 0;
          for (int a = 0; a < D; ++a) {
            q[a] = j0[a] + rng.Uniform01() * (j1[a] - j0[a]);
            d2 += (q[a] - p[a]) * (q[a] - p[a]);
          }
          if (d2 < reach * reach && ClearOf(list, n, q)) {
            p[0] = q[0];
            p[1] = q[1];
            break;
          }
        }
      }
      absl::Status s = FinishGapPoint(p);
      if (!s.ok()) return s;
      // A point in the cell's closed box is closer than r to all of it.
      if (p[0] >= u0[0] && p[0] <= u1[0] && p[1] >= u0[1] && p[1] <= u1[1]) {
        return absl::OkStatus();
      }
    }
  }

  // The quarter-cells among `need` of a 3D cell (per-axis index idx, low
  // corner u0, not clipped by the box) that the ball of a point in the 3 x 3
  // x 3 cells around it holds whole, tested exactly. The stencil's classes
  // leave many such pieces unmarked (in a finished dense set 14 % of the
  // cells have an unmarked quarter-cell, 7.5 % one that no single ball
  // holds: cover_stencil.h), and a cell with one unmarked piece costs a
  // gather of 125 cells and a search. A piece held whole has no place for
  // the search to find, so leaving it out changes no output. The pieces'
  // bounds are the search's own, bit for bit (halved twice, as
  // ClippedHalfCell and ChildBox halve), so the held box is the searched
  // one; the bound, shrunk by 1e-9, absorbs the rounding of the distances.
  CoverWord HeldNearby(const std::int64_t* idx, const double* u0,
                       const double* u1, CoverWord need) const {
    static_assert(kSplit == 4);
    double edge[3][kSplit + 1];
    for (int a = 0; a < 3; ++a) {
      const double mid = u0[a] + (u1[a] - u0[a]) / 2;
      edge[a][0] = u0[a];
      edge[a][1] = u0[a] + (mid - u0[a]) / 2;
      edge[a][2] = mid;
      edge[a][3] = mid + (u1[a] - mid) / 2;
      edge[a][4] = u1[a];
    }
    const double r2 = r_ * r_ * (1 - 1e-9);
    // The 3 x 3 x 3 cells around, clipped to the grid.
    std::int64_t lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::max<std::int64_t>(0, idx[a] - 1);
      hi[a] = std::min<std::int64_t>(n_[a] - 1, idx[a] + 1);
    }
    CoverWord held = 0;
    for (std::int64_t z = lo[2]; z <= hi[2]; ++z) {
      for (std::int64_t y = lo[1]; y <= hi[1]; ++y) {
        const std::uint64_t start = static_cast<std::uint64_t>(z) * stride_[2] +
                                    static_cast<std::uint64_t>(y) * stride_[1] +
                                    static_cast<std::uint64_t>(lo[0]);
        std::uint64_t bits = BitRun(occupied_.data(), start,
                                    static_cast<unsigned>(hi[0] - lo[0] + 1));
        while (bits != 0) {
          const double* q = &grid_[(start + static_cast<std::uint64_t>(
                                                __builtin_ctzll(bits))) *
                                   D];
          bits &= bits - 1;
          // Per axis and slab, the square of q's farthest distance to it.
          double far2[3][kSplit];
          for (int a = 0; a < 3; ++a) {
            for (int i = 0; i < kSplit; ++i) {
              const double f = std::max(std::fabs(q[a] - edge[a][i]),
                                        std::fabs(edge[a][i + 1] - q[a]));
              far2[a][i] = f * f;
            }
          }
          for (CoverWord rest = need & ~held; rest != 0; rest &= rest - 1) {
            const auto bit = static_cast<unsigned>(__builtin_ctzll(rest));
            if (far2[0][bit & 3] + far2[1][(bit >> 2) & 3] + far2[2][bit >> 4] <
                r2) {
              held |= CoverWord{1} << bit;
            }
          }
          if ((need & ~held) == 0) return held;
        }
      }
    }
    return held;
  }

  void UnclippedCellBounds(std::uint64_t c, double* b0, double* b1) const {
    for (int a = 0; a < D; ++a) {
      const std::uint64_t i =
          (c / stride_[a]) % static_cast<std::uint64_t>(n_[a]);
      b0[a] = lo_[a] + static_cast<double>(i) * cell_;
      b1[a] = b0[a] + cell_;
    }
  }

  static double DistToBox2(const double* q, const double* b0,
                           const double* b1) {
    return NearestDistance2(q, b0, b1, D);
  }
  static double FarCorner2(const double* q, const double* b0,
                           const double* b1) {
    return FarthestDistance2(q, b0, b1, D);
  }

  // Points whose disks reach into cell c (index idx), into gap level 0.
  // A cell's disks come from at most 2 cells away: 2 cells are wider than r
  // for D <= 3.
  std::size_t GatherAroundCell(std::uint64_t c, const std::int64_t* idx,
                               const double* b0, const double* b1) {
    double* list[D];
    for (int a = 0; a < D; ++a) list[a] = GapList(0, a);
    std::size_t n = 0;
    // The cells [start, start + len) of one row.
    auto row = [&](std::uint64_t start, std::int64_t len) {
      if (scan_bits_) {
        // Most of the 5^D cells are empty: visit the occupied ones.
        std::uint64_t bits =
            BitRun(occupied_.data(), start, static_cast<unsigned>(len));
        while (bits != 0) {
          const double* q = &grid_[(start + static_cast<std::uint64_t>(
                                                __builtin_ctzll(bits))) *
                                   D];
          bits &= bits - 1;
          for (int a = 0; a < D; ++a) list[a][n] = q[a];
          n += DistToBox2(q, b0, b1) < min_d2_;
        }
        return;
      }
      // Every cell is read: an empty one holds NaN, whose distance is
      // never below the bound. Branch-free append.
      const double* q = &grid_[start * D];
      for (std::int64_t x = 0; x < len; ++x, q += D) {
        for (int a = 0; a < D; ++a) list[a][n] = q[a];
        n += DistToBox2(q, b0, b1) < min_d2_;
      }
    };
    bool interior = true;
    for (int a = 0; a < D; ++a) interior &= idx[a] >= 2 && idx[a] + 2 < n_[a];
    if (interior) {
      for (const std::int64_t offset : gap_rows_) {
        row(static_cast<std::uint64_t>(static_cast<std::int64_t>(c) + offset),
            5);
      }
    } else {
      std::int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
      for (int a = 0; a < D; ++a) {
        lo[a] = std::max<std::int64_t>(0, idx[a] - 2);
        hi[a] = std::min<std::int64_t>(n_[a] - 1, idx[a] + 2);
      }
      for (std::int64_t z = lo[2]; z <= hi[2]; ++z) {
        for (std::int64_t y = lo[1]; y <= hi[1]; ++y) {
          const std::uint64_t first =
              (D == 3 ? static_cast<std::uint64_t>(z) * stride_[D - 1] : 0) +
              static_cast<std::uint64_t>(y) * stride_[1] +
              static_cast<std::uint64_t>(lo[0]);
          row(first, hi[0] - lo[0] + 1);
        }
      }
    }
    PadGapList(0, n);
    return n;
  }

  // Looks for a place in [b0, b1) at distance >= r from the n points of gap
  // level depth - 1 (level 0: those around the cell). A piece no disk reaches
  // is free: any point in it will do. A piece inside one disk is covered.
  // Otherwise the piece splits into 2^D children, down to a depth where one
  // random point decides. The uncovered area this can miss is part of pieces
  // 1/2^depth of a cell wide that straddle a disk boundary; the maximality
  // tests bound it.
  // `covered`: children of the piece known to be covered (a bit per child),
  // which need no look.
  bool FindUncovered(const double* b0, const double* b1, int depth,
                     std::size_t n, std::uint64_t cell, std::uint64_t piece,
                     bool partial, double* p, unsigned covered = 0) {
    // `partial`: the piece may reach outside the region; then a piece
    // wholly outside has nothing to fill, and any place found must be
    // inside.
    if (partial) {
      const Region::Overlap overlap = region_.Classify(b0, b1);
      if (overlap == Region::Overlap::kOutside) return false;
      bool in_obstacle = false, near_obstacle = false;
      obstacles_.Classify(b0, b1, &in_obstacle, &near_obstacle);
      if (in_obstacle) return false;
      partial = overlap == Region::Overlap::kPartial || near_obstacle;
    }
    const double* in[D];
    for (int a = 0; a < D; ++a) in[a] = GapList(depth - 1, a);
    const int max_depth = D == 2 ? kMaxGapDepth2d : kMaxGapDepth3d;
    if (depth == max_depth && !partial) {
      // One random place decides, as below; sorting out which disks reach
      // the piece first would not change the answer (a disk that misses
      // the piece misses the place, one that holds it holds the place).
      RandomPointIn(b0, b1, cell, piece, p);
      return ClearOf(in, n, p);
    }
    double* kept[D];
    for (int a = 0; a < D; ++a) kept[a] = GapList(depth, a);
    // The disks that reach the piece; none if one of them holds it whole.
    const std::ptrdiff_t reaching =
        Ops::template FilterBox<D>(in, n, b0, b1, min_d2_, kept);
    if (reaching < 0) return false;  // Inside one disk.
    const auto m = static_cast<std::size_t>(reaching);
    PadGapList(depth, m);
    // The piece's centre, where its children meet.
    double mid[D];
    for (int a = 0; a < D; ++a) mid[a] = b0[a] + (b1[a] - b0[a]) / 2;
    // The two sites nearest the piece's centre, for TwoDisksCover. Without
    // branches (which site is nearest is data): min and max for the
    // distances, as `if (d2 < second_d2) { if (d2 < first_d2) shift and take
    // first; else take second }` would leave them (first_d2 <= second_d2),
    // and integer selects for the indices.
    std::size_t first = 0, second = 0;
    double first_d2 = std::numeric_limits<double>::infinity();
    double second_d2 = first_d2;
    for (std::size_t j = 0; j < m; ++j) {
      double d2 = 0;
      for (int a = 0; a < D; ++a) {
        const double d = kept[a][j] - mid[a];
        d2 += d * d;
      }
      const bool closer_first = d2 < first_d2;
      const bool closer_second = d2 < second_d2;
      second = closer_first ? first : (closer_second ? j : second);
      first = closer_first ? j : first;
      second_d2 = std::min(second_d2, std::max(d2, first_d2));
      first_d2 = std::min(first_d2, d2);
    }
    // Covered by two disks together (most pieces that straddle the
    // boundary between two disks): nothing here for the search below to
    // find, so leaving now changes no output.
    // The two sites nearest the centre (one when m == 1; m == 0 reads a
    // slot past the list and uses nothing), which also cover most of the
    // children that one disk covers (see below).
    double near_s[D], near_t[D];
    for (int a = 0; a < D; ++a) {
      near_s[a] = kept[a][first];
      near_t[a] = kept[a][second];
    }
    if (m >= 2 && TwoDisksCover(near_s, near_t, b0, b1)) return false;
    if (m == 0) {
      // No disk reaches the piece: any place in it that is in the region
      // will do. A few random tries before splitting a piece that the
      // region's edge crosses.
      for (int attempt = 0; attempt < (partial ? 4 : 1); ++attempt) {
        RandomPointIn(b0, b1, cell,
                      piece + (static_cast<std::uint64_t>(attempt) << 24), p);
        if (!partial || Inside(p)) return true;
      }
      if (depth == max_depth) return false;
    }
    if (depth == max_depth) {
      // One random place decides. (Not the centre: grid-aligned points
      // would repeat across seeds and line up.)
      RandomPointIn(b0, b1, cell, piece, p);
      return ClearOf(kept, m, p) && (!partial || Inside(p));
    }
    const unsigned turn = ChildTurn(cell, piece);
    // Per axis, the bounds of each half (bit a of a child picks the upper
    // one, as in ChildBox) and the squares of the two sites' farthest
    // distances to it, summed per child in FarthestDistance2's order. The
    // children to skip, none of which holds a place the search below could
    // find, so skipping them changes no output: the covered ones, the empty
    // ones (see ChildBox), and those inside one of the two disks (each would
    // find it in its own FilterBox, or its random place inside it). Tables
    // and masks, not a select per child and axis: which children those are
    // is data.
    double half0[D][2], half1[D][2], far_s[D][2], far_t[D][2];
    unsigned skip = covered;
    for (int a = 0; a < D; ++a) {
      half0[a][0] = b0[a];
      half1[a][0] = mid[a];
      half0[a][1] = mid[a];
      half1[a][1] = b1[a];
      for (int h = 0; h < 2; ++h) {
        if (!(half0[a][h] < half1[a][h])) skip |= kHalfChildren[a][h];
        const double ds =
            std::max(near_s[a] - half0[a][h], half1[a][h] - near_s[a]);
        const double dt =
            std::max(near_t[a] - half0[a][h], half1[a][h] - near_t[a]);
        far_s[a][h] = ds * ds;
        far_t[a][h] = dt * dt;
      }
    }
    if (m >= 1) {
      for (unsigned child = 0; child < (1u << D); ++child) {
        double fs = 0, ft = 0;
        for (int a = 0; a < D; ++a) {
          fs += far_s[a][(child >> a) & 1];
          ft += far_t[a][(child >> a) & 1];
        }
        skip |= static_cast<unsigned>((fs < min_d2_) | (ft < min_d2_)) << child;
      }
    }
    // Children at the last depth that the region's edge cannot cross are
    // one random place each: tested here, as FindUncovered would.
    const bool leaves = depth + 1 == max_depth && !partial;
    const std::uint64_t cell_key = leaves ? Combine(gap_key_, cell) : 0;
    for (unsigned t = 0; t < (1u << D); ++t) {
      const unsigned child = (t + turn) & ((1u << D) - 1);
      if ((skip >> child) & 1) continue;
      double c0[D], c1[D];
      for (int a = 0; a < D; ++a) {
        c0[a] = half0[a][(child >> a) & 1];
        c1[a] = half1[a][(child >> a) & 1];
      }
      if (leaves) {
        RandomPointInCell(c0, c1, cell_key, (piece << D) + child, p);
        if (ClearOf(kept, m, p)) return true;
        continue;
      }
      if (FindUncovered(c0, c1, depth + 1, m, cell, (piece << D) + child,
                        partial, p)) {
        return true;
      }
    }
    return false;
  }

  // Whether every place of the box [b0, b1] is closer than r to s or to t
  // (with a margin, so rounding can only make it answer no; gap_pieces.h).
  bool TwoDisksCover(const double* s, const double* t, const double* b0,
                     const double* b1) const {
    return internal::TwoDisksCover<D>(s, t, min_d2_, b0, b1);
  }

  // Where the children of (cell, piece) start in the scan order.
  unsigned ChildTurn(std::uint64_t cell, std::uint64_t piece) const {
    return internal::ChildTurn(gap_key_, cell, piece);
  }

  // Whether p is at least r from all m points of `list` (interleaved).
  bool ClearOf(const double* const* list, std::size_t m,
               const double* p) const {
    if constexpr (D == 2) {
      return !Ops::AnyWithin2d(list[0], list[1], m, p[0], p[1], min_d2_);
    } else {
      return !Ops::AnyWithin3d(list[0], list[1], list[2], m, p[0], p[1], p[2],
                               min_d2_);
    }
  }

  // Axis a of gap level `level`'s list (structure of arrays).
  double* GapList(int level, int a) {
    return gap_lists_[level].data() + static_cast<std::size_t>(a) * gap_stride_;
  }

  // NaN in the 4 slots after the first n of gap level `level` (so up to a
  // whole group of 4), for the vector kernels. A fixed count: a store or
  // two, where a loop to the group's end cost 40 instructions a search
  // step. gap_stride_ has room for them.
  void PadGapList(int level, std::size_t n) {
    for (int a = 0; a < D; ++a) {
      double* list = GapList(level, a) + n;
      for (int j = 0; j < 4; ++j) {
        list[j] = std::numeric_limits<double>::quiet_NaN();
      }
    }
  }

  // Which of half-cell `half`'s 2^D children (bit `child` as in ChildBox)
  // `mask` marks covered: all of them when the pieces are the half-cells.
  static unsigned HalfCellPieces(CoverWord mask, unsigned half) {
    if constexpr (kSplit == 2) {
      return ((mask >> half) & 1) != 0 ? kAllChildren : 0;
    } else {
      unsigned out = 0;
      for (unsigned child = 0; child < (1u << D); ++child) {
        int bit = 0;
        for (int a = 0, scale = 1; a < D; ++a, scale *= kSplit) {
          const int q = 2 * static_cast<int>((half >> a) & 1) +
                        static_cast<int>((child >> a) & 1);
          bit += q * scale;
        }
        out |= static_cast<unsigned>((mask >> bit) & 1) << child;
      }
      return out;
    }
  }

  struct Active {
    std::uint64_t cell;
    std::uint64_t index;  // Generation index: keys the point's candidates.
  };

  const Region& region_;
  const ObstacleIndex& obstacles_;
  bool box_only_;  // The region is its bounds: no inside tests needed.
  // Whether a gap piece can reach outside the region or into an obstacle.
  bool maybe_partial_ = !box_only_ || !obstacles_.empty();
  BatchWriter* out_;
  absl::FunctionRef<bool()> stop_;
  bool dense_;
  bool scan_bits_ = D == 3 || !dense_;
  bool fill_gaps_;
  int attempts_;
  double r_;
  double min_d2_;
  // BoxMayHoldPlace2d's bound: below r^2 by far more than its rounding and
  // the search's (at least 0.95 r^2: CheckCoordinateSteps keeps a
  // coordinate's step under r / 1024).
  double certain_d2_ = 0;
  double last_[D];  // Per axis, the box's last place (hi_ is past it).
  // How far FillCellAtPeaks looks past a cell's edges for the middle of a
  // hole: a quarter of a cell (the 5 x 5 cells it gathers reach r past
  // that).
  double peak_margin_ = 0;
  double cell_;
  double inv_cell_;
  // r in cells, widened by 1e-6 (GridConflict).
  double reach_cells_ = 0;
  double gather_bound_ = 0;
  double near_bound_ = 0;
  // How far a candidate can be from its parent (with slack), and whether
  // the current active point is so far inside the box that no candidate
  // can leave it.
  double reach_ = 0;
  bool interior_ = false;
  // No obstacle's clearance reaches the current active point's candidates:
  // the cover marks may reject them (AcceptIfUncovered).
  bool marks_decide_ = true;
  double step_ = 0;
  std::uint64_t candidate_key_ = 0;
  std::uint64_t gap_key_ = 0;
  std::vector<std::array<double, 2>> circle_;
  std::vector<std::array<double, 2>> woken_circle_;
  // The same as x and y arrays padded to a multiple of 4 (DenseGroups).
  std::array<std::vector<double>, 2> circle_lanes_;
  std::array<std::vector<double>, 2> woken_lanes_;
  std::vector<std::array<double, 3>> woken_sphere_;
  std::vector<std::array<double, 3>> sphere_;
  // The same as x, y and z arrays padded to a multiple of 4
  // (DenseGroups3d).
  std::array<std::vector<double>, 3> sphere_lanes_;
  std::array<std::vector<double>, 3> woken_sphere_lanes_;

  double lo_[D];
  double hi_[D];
  std::int64_t n_[D];
  std::uint64_t stride_[D];
  std::uint64_t cells_ = 0;
  // Sparse runs: see MapNear. The reach of a run's reads, in radii
  // (FillNearGrid); whether the grid's unfilled part is closed.
  bool sparse_ = false;
  std::uint64_t chunks_ = 0;  // Per row.
  std::uint64_t rows_ = 0;
  std::vector<std::uint8_t> near_;
  static constexpr double kReadReach = 5;
#ifdef NDEBUG
  static constexpr bool kGuardSparseGrid = false;
#else
  static constexpr bool kGuardSparseGrid = true;
#endif
  // D coordinates per cell; NaN when empty (in a sparse run, where the
  // run may read: FillNearGrid).
  RunArray<double> grid_;

  std::vector<Active> active_;
  // Cells holding same-layer obstacles not yet woken; see WakeNear.
  HugePageVector<std::uint64_t> dormant_;
  std::vector<std::uint32_t> dormant_in_block_;
  std::uint64_t dormant_left_ = 0;
  std::size_t head_ = 0;
  // The generations of active_, and dormant points (cells) woken by them.
  WakeSchedule<std::uint64_t> schedule_;
  std::uint64_t next_index_ = 0;
  std::uint64_t since_poll_ = 0;
  absl::Status halt_;  // Not OK once the run must end.

  // Conservative window of cells around an active point's cell, as runs of
  // x: every cell that could hold a point within gather_bound_ of any place
  // in the centre cell.
  struct RowRun {
    std::int64_t d[3];  // d[1], d[2]: row offset; d[0] unused.
    std::int64_t x0, x1;
    // From the centre cell's index to the run's first cell, when the whole
    // window is inside the grid.
    std::int64_t offset;
  };
  std::vector<RowRun> gather_runs_;
  std::int64_t gather_window_ = 0;  // Largest |offset| of a run, in cells.
  // GatherAroundCell's rows of 5 cells, from a cell's index to each row's
  // first cell, for cells 2 or more from the grid's edge.
  std::vector<std::int64_t> gap_rows_;
  // One bit per cell, kept when gathers scan it.
  RunArray<std::uint64_t> occupied_;
  // Per cell, one bit per piece (kSplit^D of them) that a single disk
  // covers whole; 8 spare words let FillGaps read 8 at a time.
  RunArray<CoverWord> cover_;
  // The last plane whose points' marks are in cover_ (see MarkedPlane).
  // Dense 2D without taken marks marks each point as it comes: its grid
  // has no occupancy bits to find the points of a row by, its cover bytes
  // are few, and testing every cell of the grid costs more than the
  // scattered writes did. Runs with taken marks mark points there instead,
  // and cover_ holds only the obstacles' marks.
  // 3D runs that fill gaps mark each point as it comes (cover_rejects_).
  std::int64_t marked_through_ =
      scan_bits_ ? -1 : std::numeric_limits<std::int64_t>::max() / 2;
  // 3D runs that fill gaps (where the doubles are fine enough) reject
  // candidates on the cover marks and gather no list (AcceptIfUncovered).
  bool cover_rejects_ = false;
  // The AVX2 lanes (DenseGroups3d) may serve such a run.
  bool cover_in_lanes_ = false;
  // Taken marks (MarkTaken): whether this run keeps them, the bits, and
  // the bits a row of pieces takes (a whole number of words, plus one).
  static constexpr bool taken_marks_ = kTaken;
  RunArray<std::uint64_t> taken_;
  std::uint64_t taken_row_bits_ = 0;
  // The AVX2 lanes (ShellGroupUntaken, DenseGroups) may serve the run.
  bool taken_in_lanes_ = false;
  // Classic 2D candidates' directions (UnitShellPoint2d).
  const ShellDirectionTable* shell_directions_ = &ShellDirections2d();
  const TakenStencil2d* taken_stencil_ =
      kTaken ? &TakenStencil2d::Get() : nullptr;
  const CoverStencil2d* stencil_ = &CoverStencil2d::Get();
  const CoverStencil3d* stencil3d_ = D == 3 ? &CoverStencil3d::Get() : nullptr;

  std::vector<double> list_[D];    // The gathered neighbourhood, SoA.
  std::vector<double> far_[D];     // Scratch for Gather's 3D partition.
  std::vector<double> window_[D];  // Gather's 3D window points, unsorted.
  std::size_t list_size_ = 0;
  // Per recursion level of FindUncovered, the points that reach the piece:
  // D arrays of gap_stride_ each.
  std::vector<double> gap_lists_[std::max(kMaxGapDepth2d, kMaxGapDepth3d) + 1];
  std::size_t gap_stride_ = 0;
};

// Runs the Poisson sampler over `region` with the kernels of Ops.
template <class Ops>
absl::Status RunPoissonWith(const Region& region,
                            const ObstacleIndex& obstacles,
                            const SamplerOptions& options, BatchWriter* out,
                            absl::FunctionRef<bool()> stop) {
  if (region.dims() == 3) {
    return PoissonRun<3, Ops>(region, obstacles, options, out, stop).Run();
  }
  if (UsesTakenMarks(region, options)) {
    return PoissonRun<2, Ops, true>(region, obstacles, options, out, stop)
        .Run();
  }
  return PoissonRun<2, Ops>(region, obstacles, options, out, stop).Run();
}

}  // namespace
}  // namespace scatter::sampler::internal

#ifdef SCATTER_POISSON_AVX2
#pragma GCC pop_options
#endif

#endif  // SCATTER_SAMPLER_POISSON_IMPL_H_
