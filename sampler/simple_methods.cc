// The comparison methods the seeds draw: uniform random points and a
// jittered grid. Neither keeps a minimum distance.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sampler/methods.h"
#include "sampler/rng.h"

namespace scatter::sampler::internal {
namespace {

constexpr std::uint64_t kPollEvery = 4096;
// A point's draws before the region is judged to have no room for it.
constexpr std::uint64_t kMaxDraws = std::uint64_t{1} << 24;

absl::Status Stopped(const char* who) {
  return absl::CancelledError(std::string("sampling stopped by the ") + who);
}

// A jittered grid's cells along `axis` of `box`: at least one.
double JitteredCellsAlong(const Box& box, int axis, double cell_size) {
  return std::max(1.0, std::ceil(box.extent(axis) / cell_size));
}

// Cells of one size that hold every place of a region that is not a box:
// its bounds halved along every axis, level by level, keeping the cells
// that Classify does not put outside, until there are kUniformCells of
// them (or the cells are 2^-kMaxUniformLevel of the bounds a side). A
// uniform point is a draw in a cell picked uniformly, kept when the region
// holds it. Draws over the whole bounds missed as often as the region is
// small in them: two triangles 316 apart took 450 points a second, and
// under about 6e-8 of the bounds no point was found at all (found by a
// review helper).
constexpr std::size_t kUniformCells = 4096;
constexpr int kMaxUniformLevel = 40;

struct UniformCells {
  int level = 0;
  std::vector<std::array<std::uint64_t, 3>> index;  // Per axis.
};

// Cell `index` of `level` over `box`, into lo and hi.
void CellBounds(const Box& box, int level,
                const std::array<std::uint64_t, 3>& index, double* lo,
                double* hi) {
  for (int a = 0; a < box.dims(); ++a) {
    const auto i = static_cast<std::size_t>(a);
    lo[a] = box.min(a) +
            box.extent(a) * std::ldexp(static_cast<double>(index[i]), -level);
    hi[a] =
        box.min(a) +
        box.extent(a) * std::ldexp(static_cast<double>(index[i] + 1), -level);
  }
}

UniformCells MeetingUniformCells(const Region& region) {
  const Box& box = region.bounds();
  const int dims = box.dims();
  UniformCells cells;
  cells.index.push_back({0, 0, 0});
  while (cells.index.size() < kUniformCells && cells.level < kMaxUniformLevel) {
    std::vector<std::array<std::uint64_t, 3>> finer;
    for (const auto& parent : cells.index) {
      for (unsigned child = 0; child < (1u << dims); ++child) {
        std::array<std::uint64_t, 3> index = {0, 0, 0};
        for (int a = 0; a < dims; ++a) {
          const auto i = static_cast<std::size_t>(a);
          index[i] = 2 * parent[i] + ((child >> a) & 1);
        }
        double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        CellBounds(box, cells.level + 1, index, lo, hi);
        if (region.Classify(lo, hi) != Region::Overlap::kOutside) {
          finer.push_back(index);
        }
      }
    }
    // None left: nothing of the region has room (the draws will say so).
    if (finer.empty()) break;
    cells.index = std::move(finer);
    ++cells.level;
  }
  return cells;
}

}  // namespace

absl::Status RunUniform(const Region& region, const ObstacleIndex& obstacles,
                        const SamplerOptions& options, BatchWriter* out,
                        absl::FunctionRef<bool()> stop) {
  const std::uint64_t root =
      StreamKey::Of(options.seed, options.layer, Purpose::kUniform);
  const Box& box = region.bounds();
  const int dims = box.dims();
  const UniformCells cells =
      region.IsBox() ? UniformCells() : MeetingUniformCells(region);
  double p[3] = {0, 0, 0};
  std::uint64_t since_poll = 0;
  for (std::uint64_t i = 0; i < options.count; ++i) {
    // Point i has its own stream, so any prefix of the output is the same
    // whatever the count. It is the first draw of that stream that lands in
    // the region (in a box region, the first draw). A draw is a place in
    // the box, or in a region that is not one, a cell of `cells` and a
    // place in it.
    CounterRng rng(Combine(root, i));
    std::uint64_t draws = 0;
    do {
      if (++draws > kMaxDraws) {
        // LayeredSampler passes the earlier layers' points as obstacles:
        // "the obstacles" would send the user looking for some in the job.
        const std::size_t earlier = options.earlier_layer_obstacles;
        const bool own = options.obstacles.size() > earlier;
        return absl::InvalidArgumentError(absl::StrCat(
            "uniform: no place found for point ", i, " inside the region",
            region.IsBox() ? "" : " (its shape and mask)",
            own ? " clear of the obstacles" : "",
            own && earlier > 0 ? " and" : "",
            earlier > 0 ? " clear of the earlier layers' points" : "",
            " after ", kMaxDraws, " draws",
            earlier > 0 ? "" : ": is there room for points at all?"));
      }
      if (++since_poll == kPollEvery) {
        since_poll = 0;
        if (stop()) return Stopped("caller");
      }
      if (region.IsBox()) {
        for (int a = 0; a < dims; ++a) {
          p[a] = box.min(a) + rng.Uniform01() * box.extent(a);
          if (!(p[a] < box.max(a))) p[a] = box.min(a);
        }
      } else {
        const std::size_t n = cells.index.size();
        const std::size_t k = std::min(
            n - 1,
            static_cast<std::size_t>(rng.Uniform01() * static_cast<double>(n)));
        double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        CellBounds(box, cells.level, cells.index[k], lo, hi);
        for (int a = 0; a < dims; ++a) {
          p[a] = lo[a] + rng.Uniform01() * (hi[a] - lo[a]);
          if (!(p[a] < hi[a])) p[a] = lo[a];
        }
      }
    } while ((!region.IsBox() && !region.Contains(p)) || obstacles.TooClose(p));
    if (!out->Add(p, 0)) return out->StopStatus();
  }
  return absl::OkStatus();
}

double JitteredCellCount(const Box& box, double cell_size) {
  double cells = 1;
  for (int a = 0; a < box.dims(); ++a) {
    cells *= JitteredCellsAlong(box, a, cell_size);
  }
  return cells;
}

namespace {

// The jittered grid's cells in index order (x fastest), with the blocks of
// them that miss the region (Region::Classify) left out whole: cut in halves
// along the outermost axis that has more than one cell (so the order stays
// the index order) down to rows of kLeafCells. Over the bounds of two
// islands 10 000 apart, cell 0.02, every one of 2.5e11 cells was visited:
// hours for 2 500 points (found by a review helper).
class JitteredGrid {
 public:
  JitteredGrid(const Region& region, const ObstacleIndex& obstacles,
               const SamplerOptions& options, BatchWriter* out,
               absl::FunctionRef<bool()> stop)
      : region_(region),
        box_(region.bounds()),
        obstacles_(obstacles),
        out_(out),
        stop_(stop),
        root_(StreamKey::Of(options.seed, options.layer, Purpose::kJitter)),
        dims_(box_.dims()),
        s_(options.cell_size) {
    for (int a = 0; a < dims_; ++a) {
      n_[a] = static_cast<std::uint64_t>(JitteredCellsAlong(box_, a, s_));
    }
  }

  absl::Status Run() {
    const std::uint64_t lo[3] = {0, 0, 0};
    return Visit(lo, n_);
  }

 private:
  static constexpr std::uint64_t kLeafCells = 64;

  // The cells [lo[a], hi[a]) on each axis.
  absl::Status Visit(const std::uint64_t* lo, const std::uint64_t* hi) {
    if (!Poll(1)) return Stopped("caller");
    if (!region_.IsBox()) {
      // A cell's point lies in its closed box; an ulp more each way, so
      // rounding cannot put it outside what is classified.
      double b0[3], b1[3];
      for (int a = 0; a < dims_; ++a) {
        b0[a] = std::nextafter(box_.min(a) + static_cast<double>(lo[a]) * s_,
                               -HUGE_VAL);
        b1[a] = std::nextafter(box_.min(a) + static_cast<double>(hi[a]) * s_,
                               HUGE_VAL);
      }
      if (region_.Classify(b0, b1) == Region::Overlap::kOutside) {
        return absl::OkStatus();
      }
    }
    int axis = 0;
    for (int a = dims_ - 1; a > 0; --a) {
      if (hi[a] - lo[a] > 1) {
        axis = a;
        break;
      }
    }
    if (axis == 0 && hi[0] - lo[0] <= kLeafCells) return Row(lo, hi[0]);
    const std::uint64_t mid = lo[axis] + (hi[axis] - lo[axis]) / 2;
    std::uint64_t split_hi[3] = {hi[0], hi[1], hi[2]};
    std::uint64_t split_lo[3] = {lo[0], lo[1], lo[2]};
    split_hi[axis] = mid;
    split_lo[axis] = mid;
    absl::Status status = Visit(lo, split_hi);
    if (!status.ok()) return status;
    return Visit(split_lo, hi);
  }

  // The cells (x, lo[1], lo[2]) for x in [lo[0], x_end).
  absl::Status Row(const std::uint64_t* lo, std::uint64_t x_end) {
    if (!Poll(x_end - lo[0])) return Stopped("caller");
    std::uint64_t cell = (lo[2] * n_[1] + lo[1]) * n_[0] + lo[0];
    double p[3] = {0, 0, 0};
    for (std::uint64_t x = lo[0]; x < x_end; ++x, ++cell) {
      CounterRng rng(Combine(root_, cell));
      const std::uint64_t idx[3] = {x, lo[1], lo[2]};
      for (int a = 0; a < dims_; ++a) {
        p[a] =
            box_.min(a) + (static_cast<double>(idx[a]) + rng.Uniform01()) * s_;
      }
      // Cells that stick out of the region keep their point only when
      // it lands inside, so the density stays uniform up to the edge.
      if (!region_.Contains(p) || obstacles_.TooClose(p)) continue;
      if (!out_->Add(p, 0)) return out_->StopStatus();
    }
    return absl::OkStatus();
  }

  // Counts `work` (cells, or a block classified) and asks the stop
  // predicate every kPollEvery of it; false to stop.
  bool Poll(std::uint64_t work) {
    since_poll_ += work;
    if (since_poll_ < kPollEvery) return true;
    since_poll_ = 0;
    return !stop_();
  }

  const Region& region_;
  const Box& box_;
  const ObstacleIndex& obstacles_;
  BatchWriter* out_;
  absl::FunctionRef<bool()> stop_;
  const std::uint64_t root_;
  const int dims_;
  const double s_;
  std::uint64_t n_[3] = {1, 1, 1};
  std::uint64_t since_poll_ = 0;
};

}  // namespace

absl::Status RunJitteredGrid(const Region& region,
                             const ObstacleIndex& obstacles,
                             const SamplerOptions& options, BatchWriter* out,
                             absl::FunctionRef<bool()> stop) {
  return JitteredGrid(region, obstacles, options, out, stop).Run();
}

}  // namespace scatter::sampler::internal
