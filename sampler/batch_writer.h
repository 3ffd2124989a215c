#ifndef SCATTER_SAMPLER_BATCH_WRITER_H_
#define SCATTER_SAMPLER_BATCH_WRITER_H_

// Internal: collects accepted points into structure-of-arrays batches and
// hands them to the sink. Shared by every method.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sampler/rng.h"
#include "sampler/sampler.h"

namespace scatter::sampler::internal {

// PointId() in two steps, so a run hashes (seed, layer) once.
inline std::uint64_t PointIdKey(std::uint64_t seed, std::uint32_t layer) {
  StreamKey key;
  key.seed = seed;
  key.layer = layer;
  key.purpose = Purpose::kPointId;
  return key.Hash();
}

inline std::uint64_t PointIdFromKey(std::uint64_t key, const double* coords,
                                    int dims) {
  // + 0.0 folds -0.0 into 0.0: the same place has one id.
  for (int a = 0; a < dims; ++a) key = Combine(key, DoubleBits(coords[a] + 0.0));
  return key;
}

class BatchWriter {
 public:
  BatchWriter(int dims, const SamplerOptions& options, BatchSink sink)
      : dims_(dims),
        capacity_(options.batch_size),
        id_key_(PointIdKey(options.seed, options.layer)),
        layer_(options.layer),
        sink_(sink) {
    coords_.resize(capacity_ * static_cast<std::size_t>(dims));
    radius_.resize(capacity_);
    layers_.assign(capacity_, layer_);
    ids_.resize(capacity_);
  }

  // Appends one point; false when the sink asked to stop.
  bool Add(const double* p, double radius) {
    double* out = &coords_[size_ * static_cast<std::size_t>(dims_)];
    for (int a = 0; a < dims_; ++a) out[a] = p[a];
    radius_[size_] = radius;
    ids_[size_] = PointIdFromKey(id_key_, p, dims_);
    ++size_;
    ++total_;
    return size_ < capacity_ || Flush();
  }

  // Sends what is pending, if anything; false when the sink asked to stop.
  bool Flush() {
    if (size_ == 0) return true;
    PointBatch batch;
    batch.dims = dims_;
    batch.coords = absl::MakeConstSpan(coords_.data(),
                                       size_ * static_cast<std::size_t>(dims_));
    batch.radius = absl::MakeConstSpan(radius_.data(), size_);
    batch.layer = absl::MakeConstSpan(layers_.data(), size_);
    batch.id = absl::MakeConstSpan(ids_.data(), size_);
    size_ = 0;
    return sink_(batch);
  }

  std::uint64_t total() const { return total_; }

 private:
  int dims_;
  std::size_t capacity_;
  std::uint64_t id_key_;
  std::uint32_t layer_;
  BatchSink sink_;
  std::vector<double> coords_;
  std::vector<double> radius_;
  std::vector<std::uint32_t> layers_;
  std::vector<std::uint64_t> ids_;
  std::size_t size_ = 0;
  std::uint64_t total_ = 0;
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_BATCH_WRITER_H_
