#ifndef SCATTER_SAMPLER_METHODS_H_
#define SCATTER_SAMPLER_METHODS_H_

// Internal: the methods behind Sampler::Run. Options arrive validated and
// with defaults resolved.

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "sampler/batch_writer.h"
#include "sampler/box.h"
#include "sampler/obstacles.h"
#include "sampler/region.h"
#include "sampler/sampler.h"

namespace scatter::sampler::internal {

// Bytes the Poisson grid of this box and options (radius, method, gap
// filling) needs, as a double so huge requests do not overflow before they
// are refused.
double PoissonGridBytes(const Box& box, const SamplerOptions& options);

absl::Status RunPoisson(const Region& region, const ObstacleIndex& obstacles,
                        const SamplerOptions& options, BatchWriter* out,
                        absl::FunctionRef<bool()> stop);
// The two builds of RunPoisson, one per SIMD path (poisson.cc,
// poisson_avx2.cc).
absl::Status RunPoissonScalar(const Region& region,
                              const ObstacleIndex& obstacles,
                              const SamplerOptions& options, BatchWriter* out,
                              absl::FunctionRef<bool()> stop);
absl::Status RunPoissonAvx2(const Region& region,
                            const ObstacleIndex& obstacles,
                            const SamplerOptions& options, BatchWriter* out,
                            absl::FunctionRef<bool()> stop);
absl::Status RunUniform(const Region& region, const ObstacleIndex& obstacles,
                        const SamplerOptions& options, BatchWriter* out,
                        absl::FunctionRef<bool()> stop);
absl::Status RunJitteredGrid(const Region& region,
                             const ObstacleIndex& obstacles,
                             const SamplerOptions& options, BatchWriter* out,
                             absl::FunctionRef<bool()> stop);

// Cells of the jittered grid, as a double (see PoissonGridBytes).
double JitteredCellCount(const Box& box, double cell_size);

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_METHODS_H_
