// The comparison methods the seeds draw: uniform random points and a
// jittered grid. Neither keeps a minimum distance.

#include <cmath>

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

absl::Status RunJitteredGrid(const Region& region,
                             const ObstacleIndex& obstacles,
                             const SamplerOptions& options, BatchWriter* out,
                             absl::FunctionRef<bool()> stop) {
  const Box& box = region.bounds();
  const std::uint64_t root =
      StreamKey::Of(options.seed, options.layer, Purpose::kJitter);
  const int dims = box.dims();
  const double s = options.cell_size;
  std::uint64_t n[3] = {1, 1, 1};
  for (int a = 0; a < dims; ++a) {
    n[a] =
        static_cast<std::uint64_t>(std::max(1.0, std::ceil(box.extent(a) / s)));
  }
  std::uint64_t cell = 0;
  double p[3] = {0, 0, 0};
  for (std::uint64_t z = 0; z < n[2]; ++z) {
    for (std::uint64_t y = 0; y < n[1]; ++y) {
      for (std::uint64_t x = 0; x < n[0]; ++x, ++cell) {
        if (cell % kPollEvery == kPollEvery - 1 && stop()) {
          return Stopped("caller");
        }
        CounterRng rng(Combine(root, cell));
        const std::uint64_t idx[3] = {x, y, z};
        for (int a = 0; a < dims; ++a) {
          p[a] =
              box.min(a) + (static_cast<double>(idx[a]) + rng.Uniform01()) * s;
        }
        // Cells that stick out of the region keep their point only when
        // it lands inside, so the density stays uniform up to the edge.
        if (!region.Contains(p) || obstacles.TooClose(p)) continue;
        if (!out->Add(p, 0)) return out->StopStatus();
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace scatter::sampler::internal
