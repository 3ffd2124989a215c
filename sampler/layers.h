#ifndef SCATTER_SAMPLER_LAYERS_H_
#define SCATTER_SAMPLER_LAYERS_H_

// Several object layers in one run: trees, then rocks among them, then
// grass, never inside a trunk.
//
// Each layer has its own spacing (its same-layer Poisson radius, or any
// method's options) and footprint (the object's own radius, default half
// the spacing; with a density raster, half of each point's own radius).
// Layers are placed in order of decreasing spacing (radius_max with a
// density raster); each layer's points keep footprint_a + footprint_b from
// every earlier layer's points (or exactly a per-pair clearance override),
// and every layer keeps clear of the shared obstacles. Points carry their
// layer; ids and random streams are keyed by it.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/region.h"
#include "sampler/sampler.h"

namespace scatter::sampler {

struct LayerSpec {
  std::uint32_t layer = 0;  // Carried by the points; unique per run.
  // Method, radius (the spacing), footprint, attempts, scale range... The
  // run's seed, batch size, limits, SIMD level and obstacles come from the
  // shared options instead; `layer` above replaces options.layer.
  SamplerOptions options;
};

// Points of layers a and b keep `clearance` apart instead of the sum of
// their footprints (either order).
struct ClearanceOverride {
  std::uint32_t a = 0;
  std::uint32_t b = 0;
  double clearance = 0;  // Finite, >= 0.
};

// What layers are placed by, largest first (ties in the order given): the
// Poisson radius (radius_max with a density raster), the jittered cell
// size; 0 for uniform points, which have none and come last.
double PlacementSpacing(const SamplerOptions& options);

class LayeredSampler {
 public:
  // InvalidArgument naming the layer (layers[i]: ...) for a bad layer's
  // options, a repeated layer number, or an override naming an unknown
  // layer, one layer twice or a bad clearance; the shared options are
  // checked first, as Sampler checks them, and their errors name no layer.
  static absl::StatusOr<LayeredSampler> Create(
      const Region& region, std::vector<LayerSpec> layers,
      const SamplerOptions& shared,
      std::vector<ClearanceOverride> overrides = {});

  // Runs the layers in order (decreasing spacing), streaming every layer's
  // batches to `sink` as they come. Same status rules as Sampler::Run;
  // max_points applies to each layer. InvalidArgument (a uniform layer with
  // no room for its points) names the layer as Create does, "layers[i]: ",
  // and the earlier layers whose points left none.
  absl::Status Run(BatchSink sink, absl::FunctionRef<bool()> stop) const;
  absl::Status Run(BatchSink sink) const {
    return Run(sink, [] { return false; });
  }

  // Layer numbers in the order they are placed.
  std::vector<std::uint32_t> Order() const;
  // The layers in placement order, each with its options resolved (the
  // defaults filled in, the shared options merged) as its run uses them,
  // but for the obstacles: those are the shared options' alone (held once;
  // each run adds them and the earlier layers' points), and a layer's
  // `options.obstacles` is empty.
  const std::vector<LayerSpec>& layers() const { return layers_; }

 private:
  LayeredSampler(const Region& region, std::vector<LayerSpec> layers,
                 std::vector<std::size_t> index, const SamplerOptions& shared,
                 std::vector<ClearanceOverride> overrides)
      : region_(region),
        layers_(std::move(layers)),
        index_(std::move(index)),
        shared_(shared),
        overrides_(std::move(overrides)) {}

  Region region_;
  std::vector<LayerSpec> layers_;  // Sorted: placement order.
  // layers_[k] was layers[index_[k]] of Create's, which errors name.
  std::vector<std::size_t> index_;
  SamplerOptions shared_;
  std::vector<ClearanceOverride> overrides_;
};

namespace internal {

// The obstacles that keep new points of the layer `options` describes
// (resolved: footprint 0 with a density raster means r(x) / 2 per point)
// clear of earlier points of other layers. The overrides that name the
// layer are looked up once, here: a run passes every earlier point, and
// scanning all overrides for each (2 016 of them over 64 layers) made the
// setup slower than the sampling.
class EarlierLayerObstacles {
 public:
  // `options` must outlive this.
  EarlierLayerObstacles(const SamplerOptions& options,
                        absl::Span<const ClearanceOverride> overrides);
  // For an earlier point at `center` of layer `layer` with footprint
  // `footprint`: footprint_a + footprint_b apart, or exactly an override's
  // clearance.
  Obstacle For(const Vec& center, std::uint32_t layer, double footprint) const;

 private:
  const SamplerOptions& options_;
  // (other layer, clearance) of the overrides naming options_.layer,
  // sorted by layer (LayeredSampler::Create refuses a pair given twice).
  std::vector<std::pair<std::uint32_t, double>> overridden_;
};

}  // namespace internal
}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_LAYERS_H_
