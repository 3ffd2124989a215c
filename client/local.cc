#include "client/local.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "sampler/layers.h"
#include "sampler/version.h"
#include "server/convert.h"

namespace scatter::client {

absl::StatusOr<server::ScatterJob> LocalJob(const v1::ScatterRequest& request) {
  // A local run has the machine to itself: no server limits but the
  // request's own cap.
  server::Limits limits;
  limits.max_points = std::numeric_limits<std::uint64_t>::max() / 2;
  limits.max_raster_bytes = std::size_t{1} << 34;
  // The job pins the rasters it uses; the cache may go.
  server::RasterCache rasters(std::size_t{1} << 40);
  return server::ToJob(request, limits, rasters);
}

absl::StatusOr<v1::Summary> RunLocal(const v1::ScatterRequest& request,
                                     const BatchHandler& handler) {
  const absl::Time start = absl::Now();
  if (request.algorithm_version() != 0 &&
      request.algorithm_version() != sampler::kAlgorithmVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("algorithm_version: this build implements version ",
                     sampler::kAlgorithmVersion, " only, asked for ",
                     request.algorithm_version()));
  }
  absl::StatusOr<server::ScatterJob> job = LocalJob(request);
  if (!job.ok()) return job.status();
  absl::StatusOr<sampler::LayeredSampler> run = sampler::LayeredSampler::Create(
      job->region, job->layers, job->shared, job->overrides);
  if (!run.ok()) return run.status();

  const std::vector<std::uint32_t> order = run->Order();
  std::vector<std::uint64_t> per_layer(order.size(), 0);
  std::uint64_t sent = 0;
  bool cap_hit = false, stopped = false;
  v1::PointBatch batch;
  const absl::Status status = run->Run([&](const sampler::PointBatch& points) {
    std::size_t n = points.size();
    if (sent + n > job->point_cap) {
      n = static_cast<std::size_t>(job->point_cap - sent);
      cap_hit = true;
    }
    if (n > 0) {
      batch.Clear();
      server::PackBatch(points, n, request.fields(), &batch);
      const auto at = std::find(order.begin(), order.end(), points.layer[0]);
      per_layer[static_cast<std::size_t>(at - order.begin())] += n;
      sent += n;
      if (!handler(batch)) {
        stopped = true;
        return false;
      }
    }
    return !cap_hit;
  });
  if (stopped) return absl::CancelledError("cancelled by the caller");
  if (cap_hit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "point cap reached: ", sent, " points sent; the limit is max_points = ",
        job->point_cap, " (the request's own)"));
  }
  if (!status.ok()) return status;
  v1::Summary summary;
  for (std::size_t i = 0; i < order.size(); ++i) {
    v1::LayerCount* count = summary.add_layers();
    count->set_layer(order[i]);
    count->set_points(per_layer[i]);
  }
  summary.set_total_points(sent);
  summary.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  summary.set_algorithm_version(sampler::kAlgorithmVersion);
  return summary;
}

}  // namespace scatter::client
