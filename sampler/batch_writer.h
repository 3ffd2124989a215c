#ifndef SCATTER_SAMPLER_BATCH_WRITER_H_
#define SCATTER_SAMPLER_BATCH_WRITER_H_

// Internal: collects accepted points into structure-of-arrays batches and
// hands them to the sink. Shared by every method.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sampler/rng.h"
#include "sampler/sampler.h"

namespace scatter::sampler::internal {

// PointId() in two steps, so a run hashes (seed, layer) once.
inline std::uint64_t PointIdKey(std::uint64_t seed, std::uint32_t layer) {
  return StreamKey::Of(seed, layer, Purpose::kPointId);
}

// The key of a Poisson run's candidate or gap-fill stream: (seed, layer,
// tile, purpose), the border pass of a tile drawing from purposes of its own.
inline std::uint64_t PoissonStreamKey(const SamplerOptions& options,
                                      Purpose purpose) {
  if (options.border_pass) {
    purpose = purpose == Purpose::kCandidates ? Purpose::kBorderCandidates
                                              : Purpose::kBorderGapFill;
  }
  return StreamKey::OfTile(options.seed, options.layer, options.tile_x,
                           options.tile_y, purpose);
}

inline std::uint64_t PointIdFromKey(std::uint64_t key, const double* coords,
                                    int dims) {
  // + 0.0 folds -0.0 into 0.0: the same place has one id.
  for (int a = 0; a < dims; ++a)
    key = Combine(key, DoubleBits(coords[a] + 0.0));
  return key;
}

class BatchWriter {
 public:
  BatchWriter(int dims, const SamplerOptions& options, BatchSink sink)
      : dims_(dims),
        capacity_(options.batch_size),
        id_key_(PointIdKey(options.seed, options.layer)),
        attribute_key_(
            StreamKey::Of(options.seed, options.layer, Purpose::kAttributes)),
        scale_min_(options.scale_min),
        scale_span_(options.scale_max - options.scale_min),
        layer_(options.layer),
        sink_(sink),
        max_points_(options.max_points) {
    coords_.resize(capacity_ * static_cast<std::size_t>(dims));
    radius_.resize(capacity_);
    layers_.assign(capacity_, layer_);
    ids_.resize(capacity_);
    yaw_.resize(capacity_);
    scale_.resize(capacity_);
  }

  // Appends one point of D coordinates (D: the writer's dims); false when
  // the run must stop (see StopStatus()). Its id and attributes are
  // computed with the rest of its batch, in Flush (Label).
  template <int D>
  bool Add(const double* p, double radius) {
    assert(D == dims_);
    if (total_ == max_points_) {
      cap_reached_ = true;
      return false;
    }
    double* out = &coords_[size_ * D];
    for (int a = 0; a < D; ++a) out[a] = p[a];
    radius_[size_] = radius;
    ++size_;
    ++total_;
    return size_ < capacity_ || Flush();
  }
  // The same for a point of the writer's dims coordinates.
  bool Add(const double* p, double radius) {
    return dims_ == 2 ? Add<2>(p, radius) : Add<3>(p, radius);
  }

  // Sends what is pending, if anything; false when the sink asked to stop.
  // Out of line, so that Add, inlined where points are made, stays small.
  [[gnu::noinline]] bool Flush() {
    if (size_ == 0) return true;
    if (sink_stopped_) return false;
    if (dims_ == 2) {
      Label<2>();
    } else {
      Label<3>();
    }
    PointBatch batch;
    batch.dims = dims_;
    batch.coords = absl::MakeConstSpan(coords_.data(),
                                       size_ * static_cast<std::size_t>(dims_));
    batch.radius = absl::MakeConstSpan(radius_.data(), size_);
    batch.layer = absl::MakeConstSpan(layers_.data(), size_);
    batch.id = absl::MakeConstSpan(ids_.data(), size_);
    batch.yaw = absl::MakeConstSpan(yaw_.data(), size_);
    batch.scale = absl::MakeConstSpan(scale_.data(), size_);
    size_ = 0;
    sink_stopped_ = !sink_(batch);
    return !sink_stopped_;
  }

  std::uint64_t total() const { return total_; }

  // Why Add() or Flush() said stop.
  absl::Status StopStatus() const {
    if (sink_stopped_)
      return absl::CancelledError("sampling stopped by the sink");
    if (cap_reached_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the run reached the limit max_points = ", max_points_,
                       " after ", total_, " points"));
    }
    return absl::OkStatus();
  }

 private:
  // The pending points' ids and attributes (yaw, scale).
  template <int D>
  void Label() {
    const double* p = coords_.data();
    for (std::size_t i = 0; i < size_; ++i, p += D) {
      const std::uint64_t id = PointIdFromKey(id_key_, p, D);
      ids_[i] = id;
      // Attributes from the id's own stream: positions never depend on
      // them. The id is already a full-avalanche hash, so it keys the
      // stream directly (xor with the run's attribute key).
      CounterRng attributes(attribute_key_ ^ id);
      yaw_[i] = attributes.Uniform01() * kTwoPi;
      scale_[i] = scale_min_ + attributes.Uniform01() * scale_span_;
    }
  }

  int dims_;
  std::size_t capacity_;
  // 2 pi rounded to a double: yaw = u * kTwoPi stays below it for u < 1.
  static constexpr double kTwoPi = 6.283185307179586;
  std::uint64_t id_key_;
  std::uint64_t attribute_key_;
  double scale_min_;
  double scale_span_;
  std::uint32_t layer_;
  BatchSink sink_;
  std::vector<double> coords_;
  std::vector<double> radius_;
  std::vector<std::uint32_t> layers_;
  std::vector<std::uint64_t> ids_;
  std::vector<double> yaw_;
  std::vector<double> scale_;
  std::size_t size_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t max_points_;
  bool cap_reached_ = false;
  bool sink_stopped_ = false;
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_BATCH_WRITER_H_
