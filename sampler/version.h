#ifndef SCATTER_SAMPLER_VERSION_H_
#define SCATTER_SAMPLER_VERSION_H_

#include <cstdint>

namespace scatter::sampler {

// The version of the point-generation algorithm. Same request, same seed and
// same version give bit-identical points on every machine. The golden digests
// in tests/sampler/ belong to this number: any change to what points come out
// (candidate order, key layout, gap filling) bumps it.
inline constexpr std::uint32_t kAlgorithmVersion = 1;

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_VERSION_H_
