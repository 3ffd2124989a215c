// The comparison methods the seeds draw: uniform random points and a
// jittered grid. Neither keeps a minimum distance.

#include <algorithm>
#include <cmath>
#include <cstdint>

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

}  // namespace

absl::Status RunUniform(const Region& region, const ObstacleIndex& obstacles,
                        const SamplerOptions& options, BatchWriter* out,
                        absl::FunctionRef<bool()> stop) {
  const std::uint64_t root =
      StreamKey::Of(options.seed, options.layer, Purpose::kUniform);
  const Box& box = region.bounds();
  const int dims = box.dims();
  double p[3] = {0, 0, 0};
  std::uint64_t since_poll = 0;
  for (std::uint64_t i = 0; i < options.count; ++i) {
    // Point i has its own stream, so any prefix of the output is the same
    // whatever the count. It is the first draw of that stream that lands in
    // the region (in a box region, the first draw).
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
      for (int a = 0; a < dims; ++a) {
        p[a] = box.min(a) + rng.Uniform01() * box.extent(a);
        if (!(p[a] < box.max(a))) p[a] = box.min(a);
      }
    } while ((!region.IsBox() && !region.Contains(p)) || obstacles.TooClose(p));
    if (!out->Add(p, 0)) return out->StopStatus();
  }
  return absl::OkStatus();
}

double JitteredCellCount(const Box& box, double cell_size) {
  double cells = 1;
  for (int a = 0; a < box.dims(); ++a) {
    cells *= std::max(1.0, std::ceil(box.extent(a) / cell_size));
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
      n_[a] = static_cast<std::uint64_t>(
          std::max(1.0, std::ceil(box_.extent(a) / s_)));
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
