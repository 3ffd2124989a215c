#ifndef SCATTER_CLIENT_REPORT_H_
#define SCATTER_CLIENT_REPORT_H_

// `scatter run --report`: what a run produced, measured on the points the
// client received.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scatter/v1/scatter.pb.h"

namespace scatter::client {

struct LayerReport {
  std::uint32_t layer = 0;
  std::uint64_t points = 0;
  double radius_min = 0, radius_max = 0;
  // Smallest pairwise distance over the allowed one, max(r_a, r_b): >= 1
  // when the minimum distance holds; `violations` pairs are closer. NaN
  // for a layer of one point.
  double min_ratio = 0;
  std::uint64_t violations = 0;
  // Points closer to an obstacle than its radius plus the layer's
  // footprint, or to an earlier layer's point than the clearance between
  // the two layers: 0 when every clearance holds.
  std::uint64_t blocked = 0;
  // Maximality (DESIGN.md): the fraction of probes in the region that some
  // point of the layer covers (d < its radius), or that an obstacle or an
  // earlier layer's point blocks (d < the clearance the layer keeps).
  std::uint64_t probes = 0;
  std::uint64_t uncovered = 0;
  // Lagae & Dutre's rho over the region's area (volume), constant radius
  // only; 0 otherwise.
  double rho = 0;
};

// `points` holds every point of the run (all arrays). Layers come in the
// summary's order (placement order).
absl::StatusOr<std::vector<LayerReport>> MeasureRun(
    const v1::ScatterRequest& request, const v1::Summary& summary,
    const v1::PointBatch& points, std::uint64_t probes);

std::string FormatReport(const std::vector<LayerReport>& layers,
                         std::uint64_t total, double seconds);

}  // namespace scatter::client

#endif  // SCATTER_CLIENT_REPORT_H_
