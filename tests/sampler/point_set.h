#ifndef SCATTER_TESTS_SAMPLER_POINT_SET_H_
#define SCATTER_TESTS_SAMPLER_POINT_SET_H_

// Test helpers shared by the sampler tests: collect a run's batches into one
// owned point set, and digest it bit for bit.

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "sampler/rng.h"
#include "sampler/sampler.h"

namespace scatter::test {

// Everything a run emitted, concatenated in the order it arrived.
struct PointSet {
  absl::Status status;
  int dims = 0;
  std::vector<double> coords;
  std::vector<double> radius;
  std::vector<std::uint32_t> layer;
  std::vector<std::uint64_t> id;
  std::vector<std::size_t> batch_sizes;
  std::size_t size() const { return radius.size(); }
};

inline void Append(const sampler::PointBatch& batch, PointSet* out) {
  out->dims = batch.dims;
  out->coords.insert(out->coords.end(), batch.coords.begin(),
                     batch.coords.end());
  out->radius.insert(out->radius.end(), batch.radius.begin(),
                     batch.radius.end());
  out->layer.insert(out->layer.end(), batch.layer.begin(), batch.layer.end());
  out->id.insert(out->id.end(), batch.id.begin(), batch.id.end());
  out->batch_sizes.push_back(batch.size());
}

// Runs `s` to the end (or until `stop`) and keeps every point.
inline PointSet Collect(const sampler::Sampler& s,
                        absl::FunctionRef<bool()> stop) {
  PointSet out;
  out.status = s.Run(
      [&](const sampler::PointBatch& batch) {
        Append(batch, &out);
        return true;
      },
      stop);
  return out;
}

inline PointSet Collect(const sampler::Sampler& s) {
  return Collect(s, [] { return false; });
}

// The raw bits of each double, so comparisons are bit-exact (0.0 and -0.0
// differ, as they would on the wire).
inline std::vector<std::uint64_t> Bits(const std::vector<double>& values) {
  std::vector<std::uint64_t> bits;
  bits.reserve(values.size());
  for (double v : values) bits.push_back(sampler::DoubleBits(v));
  return bits;
}

// 64-bit FNV-1a over the bytes of each value, low byte first, so the digest
// is the same on every little- or big-endian machine.
class Fnv1a {
 public:
  void Add(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (value >> (8 * i)) & 0xff;
      hash_ *= 0x100000001b3ULL;
    }
  }
  void Add(double value) { Add(sampler::DoubleBits(value)); }
  std::uint64_t hash() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

// Digest of everything that must be bit-identical between runs: the point
// count, then coordinates, radii, layers and ids, each in emission order.
inline std::uint64_t Digest(const PointSet& points) {
  Fnv1a h;
  h.Add(static_cast<std::uint64_t>(points.dims));
  h.Add(static_cast<std::uint64_t>(points.size()));
  for (double v : points.coords) h.Add(v);
  for (double v : points.radius) h.Add(v);
  for (std::uint32_t v : points.layer) h.Add(std::uint64_t{v});
  for (std::uint64_t v : points.id) h.Add(v);
  return h.hash();
}

}  // namespace scatter::test

#endif  // SCATTER_TESTS_SAMPLER_POINT_SET_H_
