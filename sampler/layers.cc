#include "sampler/layers.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"

namespace scatter::sampler {

double PlacementSpacing(const SamplerOptions& o) {
  if (o.density != nullptr) return o.radius_max;
  switch (o.method) {
    case Method::kPoissonDense:
    case Method::kPoissonClassic:
      return o.radius;
    case Method::kJitteredGrid:
      return o.cell_size;
    case Method::kUniform:
      return 0;
  }
  return 0;
}

namespace {

// The layer's options as its own run sees them; without the shared
// obstacles, the layer's options as Create checks them (the probe checks
// the obstacles once: a copy and an index of up to 2^20 of them for each
// of 64 layers took gigabytes and tens of seconds).
SamplerOptions LayerOptions(const LayerSpec& spec, const SamplerOptions& shared,
                            bool with_obstacles) {
  SamplerOptions o = spec.options;
  o.layer = spec.layer;
  o.seed = shared.seed;
  o.batch_size = shared.batch_size;
  o.max_memory_bytes = shared.max_memory_bytes;
  o.max_points = shared.max_points;
  o.simd = shared.simd;
  if (with_obstacles) {
    o.obstacles = shared.obstacles;
  } else {
    std::vector<Obstacle>().swap(o.obstacles);
  }
  o.max_obstacles = shared.max_obstacles;
  return o;
}

}  // namespace

absl::StatusOr<LayeredSampler> LayeredSampler::Create(
    const Region& region, std::vector<LayerSpec> layers,
    const SamplerOptions& shared, std::vector<ClearanceOverride> overrides) {
  if (layers.empty()) {
    return absl::InvalidArgumentError("layers must hold at least one layer");
  }
  // The shared options first, with a layer that checks nothing of its own
  // (one uniform point), so that their errors name them and no layer.
  LayerSpec probe;
  probe.options.method = Method::kUniform;
  probe.options.count = 1;
  absl::StatusOr<Sampler> shared_alone =
      Sampler::Create(region, LayerOptions(probe, shared, true));
  if (!shared_alone.ok()) return shared_alone.status();
  std::set<std::uint32_t> seen;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!seen.insert(layers[i].layer).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layers[", i, "]: layer ", layers[i].layer, " appears twice"));
    }
    // Each layer alone must be a valid run. (The shared obstacles cannot
    // make one invalid: the probe refuses a same-layer obstacle, the only
    // kind a layer's options are asked about.)
    absl::StatusOr<Sampler> alone =
        Sampler::Create(region, LayerOptions(layers[i], shared, false));
    if (!alone.ok()) {
      return absl::Status(
          alone.status().code(),
          absl::StrCat("layers[", i, "]: ", alone.status().message()));
    }
    // Keep the resolved options (footprint default and the like).
    layers[i].options = alone->options();
  }
  // Two layers keep the sum of their footprints apart; each footprint is at
  // most kMaxRadius (Sampler::Create checked it, and a density layer's
  // goes up to radius_max / 2), so the sum and its square are numbers.
  for (std::size_t k = 0; k < overrides.size(); ++k) {
    const ClearanceOverride& o = overrides[k];
    if (seen.count(o.a) == 0 || seen.count(o.b) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "overrides[", k, "]: unknown layer ", seen.count(o.a) ? o.b : o.a));
    }
    if (o.a == o.b) {
      // A layer's own points keep its spacing; the override would be
      // ignored.
      return absl::InvalidArgumentError(absl::StrCat(
          "overrides[", k, "]: a clearance is between two layers; layer ", o.a,
          " keeps its own spacing"));
    }
    if (!(o.clearance >= 0 && o.clearance <= kMaxRadius)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "overrides[", k, "].clearance must be in [0, ", kMaxRadius,
          "] (distances are compared squared), got ", o.clearance));
    }
    // Two for one pair: the last one applied, silently, while a tiled
    // world sized its margins by the larger (as the server refuses it).
    for (std::size_t j = 0; j < k; ++j) {
      const ClearanceOverride& e = overrides[j];
      if ((e.a == o.a && e.b == o.b) || (e.a == o.b && e.b == o.a)) {
        return absl::InvalidArgumentError(
            absl::StrCat("overrides[", k, "]: layers ", o.a, " and ", o.b,
                         " already have a clearance (overrides[", j, "])"));
      }
    }
  }
  // Placement order, each layer with its index in `layers`, which errors
  // at run time name as Create's do.
  std::vector<std::size_t> index(layers.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
  std::stable_sort(index.begin(), index.end(),
                   [&](std::size_t x, std::size_t y) {
                     return PlacementSpacing(layers[x].options) >
                            PlacementSpacing(layers[y].options);
                   });
  std::vector<LayerSpec> placed;
  placed.reserve(layers.size());
  for (const std::size_t i : index) placed.push_back(std::move(layers[i]));
  return LayeredSampler(region, std::move(placed), std::move(index), shared,
                        std::move(overrides));
}

std::vector<std::uint32_t> LayeredSampler::Order() const {
  std::vector<std::uint32_t> order;
  for (const LayerSpec& spec : layers_) order.push_back(spec.layer);
  return order;
}

absl::Status LayeredSampler::Run(BatchSink sink,
                                 absl::FunctionRef<bool()> stop) const {
  const int dims = region_.dims();
  // Every earlier point, as an obstacle whose radius is set per layer so
  // that radius + this layer's footprint is the clearance required.
  struct Placed {
    Vec center;
    std::uint32_t layer;
    double footprint;
  };
  std::vector<Placed> placed;
  for (std::size_t k = 0; k < layers_.size(); ++k) {
    const LayerSpec& spec = layers_[k];
    // No later layer needs the last one's points: keeping them would cost
    // a single-layer run 40 bytes a point and the faults of a vector
    // growing to hold them all (half the time of a 10 M-point run).
    const bool keep = &spec != &layers_.back();
    SamplerOptions o = LayerOptions(spec, shared_, true);
    o.footprint = spec.options.footprint;
    // A density layer with footprint 0 has a footprint per point, r(x) / 2,
    // which the sampler adds to each obstacle's radius itself.
    const bool per_point = o.density != nullptr && o.footprint == 0;
    o.obstacles.reserve(o.obstacles.size() + placed.size());
    const internal::EarlierLayerObstacles earlier(o, overrides_);
    // Millions of earlier points take seconds: the stop predicate is
    // polled as they are made obstacles.
    for (std::size_t i = 0; i < placed.size(); ++i) {
      if (i % 65536 == 65535 && stop()) {
        return absl::CancelledError("sampling stopped by the caller");
      }
      const Placed& q = placed[i];
      o.obstacles.push_back(earlier.For(q.center, q.layer, q.footprint));
    }
    o.earlier_layer_obstacles = placed.size();
    // Create checked the caller's obstacles; earlier layers' points do not
    // count against the limit.
    o.max_obstacles = std::max(o.max_obstacles, o.obstacles.size());
    const double footprint = o.footprint;
    // Moved: the obstacles are as many as the points kept so far.
    absl::StatusOr<Sampler> sampler = Sampler::Create(region_, std::move(o));
    if (!sampler.ok()) return sampler.status();
    absl::Status status = sampler->Run(
        [&](const PointBatch& batch) {
          if (!keep) return sink(batch);
          for (std::size_t i = 0; i < batch.size(); ++i) {
            Placed q{{0, 0, 0},
                     spec.layer,
                     per_point ? batch.radius[i] / 2 : footprint};
            for (int a = 0; a < dims; ++a) {
              q.center[a] = batch.coords[i * dims + a];
            }
            placed.push_back(q);
          }
          return sink(batch);
        },
        stop);
    // Only a uniform layer finds no room (a Poisson or jittered layer
    // places fewer points instead); say which layer, and which ones took
    // the room, as the request lists them.
    if (absl::IsInvalidArgument(status)) {
      std::string before;
      if (spec.options.method == Method::kUniform && !placed.empty()) {
        for (std::size_t j = 0; j < k; ++j) {
          absl::StrAppend(&before, j == 0 ? "" : ", ", "layers[", index_[j],
                          "]");
        }
        before = absl::StrCat(": the points of ", before,
                              ", placed before it (by decreasing spacing, "
                              "uniform layers last), leave no room");
      }
      return absl::InvalidArgumentError(
          absl::StrCat("layers[", index_[k], "]: ", status.message(), before));
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

namespace internal {

EarlierLayerObstacles::EarlierLayerObstacles(
    const SamplerOptions& options,
    absl::Span<const ClearanceOverride> overrides)
    : options_(options) {
  for (const ClearanceOverride& ov : overrides) {
    if (ov.a == options.layer) overridden_.emplace_back(ov.b, ov.clearance);
    if (ov.b == options.layer && ov.a != ov.b) {
      overridden_.emplace_back(ov.a, ov.clearance);
    }
  }
  // One a pair (Create refuses a second), so the order within a layer
  // never matters; stable anyway.
  std::stable_sort(
      overridden_.begin(), overridden_.end(),
      [](const auto& x, const auto& y) { return x.first < y.first; });
}

Obstacle EarlierLayerObstacles::For(const Vec& center, std::uint32_t layer,
                                    double footprint) const {
  // The pair's override, if it has one.
  const auto after = std::upper_bound(
      overridden_.begin(), overridden_.end(), layer,
      [](std::uint32_t l, const auto& entry) { return l < entry.first; });
  // Exactly the override, whatever this layer's footprint (also one below
  // it, which an obstacle radius of clearance - footprint could not say:
  // it was clamped at 0, and the layers kept the footprint apart instead).
  if (after != overridden_.begin() && std::prev(after)->first == layer) {
    return {center, std::prev(after)->second, true};
  }
  if (options_.density != nullptr && options_.footprint == 0) {
    // Earlier point's footprint plus this point's own.
    return {center, footprint};
  }
  const double clearance = footprint + options_.footprint;
  return {center, std::max(clearance - options_.footprint, 0.0)};
}

}  // namespace internal
}  // namespace scatter::sampler
