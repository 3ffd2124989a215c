#include "client/local.h"

#include <algorithm>
#include <limits>
#include <new>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "sampler/layers.h"
#include "sampler/tiles.h"
#include "sampler/version.h"
#include "server/convert.h"

namespace scatter::client {
namespace {

// A local run has the machine to itself: no server limits but the
// request's own cap.
server::Limits LocalLimits() {
  server::Limits limits;
  limits.max_points = std::numeric_limits<std::uint64_t>::max() / 2;
  limits.max_raster_bytes = std::size_t{1} << 34;
  limits.max_tiles_per_request = std::numeric_limits<std::size_t>::max();
  return limits;
}

// The sampler's limits in the words of a --local run. SamplerOptions
// calls the grid limit max_memory_bytes, a name the user sets nowhere: it
// is scatterd's --max_grid_bytes (server::ServerWords), which a --local
// run keeps at its default.
// Its point limit is no setting either, only the most a run counts.
absl::Status LocalWords(const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(
      status.code(),
      absl::StrReplaceAll(
          status.message(),
          {{"the limit max_memory_bytes = ",
            "the limit a --local run keeps, scatterd's "
            "default --max_grid_bytes = "},
           {absl::StrCat("the limit max_points = ", LocalLimits().max_points),
            absl::StrCat("the most points a --local run counts, ",
                         LocalLimits().max_points)},
           // The tiles' plan limit, set from max_points (as a double, so
           // its figure is 2^63, not max_points').
           {"the limit max_planned_points = ",
            "the most points a --local run plans for one tile's "
            "generators, "}}));
}

// `work()`, with std::bad_alloc made its status: the estimates refuse grids
// over the limit before allocating, but the memory under it may still not
// be there (ulimit -v, a container's limit), and the caller must be able
// to clean up as after any other error. `instead` says what to try.
template <class Work>
auto OutOfMemoryAsStatus(absl::string_view instead, Work work)
    -> decltype(work()) {
  try {
    return work();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory (std::bad_alloc): this process could not allocate "
        "what the --local run needs; ",
        instead, ", or run against a server"));
  }
}

// When the run must stop for --timeout: never for a zero timeout.
absl::Time Deadline(absl::Time start, absl::Duration timeout) {
  return timeout > absl::ZeroDuration() ? start + timeout
                                        : absl::InfiniteFuture();
}

// A run stopped by its deadline, as scatterd's "the call's deadline passed
// after ... sent"; `done` says how far it got ("12 points").
absl::Status PastTimeout(absl::Duration timeout, const std::string& done) {
  return absl::DeadlineExceededError(
      absl::StrCat("--timeout=", absl::FormatDuration(timeout),
                   " passed in the --local run after ", done));
}

absl::Status CheckVersion(std::uint32_t asked) {
  if (asked == 0 || asked == sampler::kAlgorithmVersion) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("algorithm_version: this build implements version ",
                   sampler::kAlgorithmVersion, " only, asked for ", asked));
}

}  // namespace

absl::Status CheckNoDigests(
    const v1::Region& region,
    const google::protobuf::RepeatedPtrField<v1::Layer>& layers,
    absl::string_view who) {
  auto check = [who](const std::string& field, const v1::RasterInput& input) {
    if (input.source_case() != v1::RasterInput::kDigest) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".digest: ", who,
        " has no raster cache to look up a digest in; give the raster inline "
        "(data) or by the job's rasterFiles"));
  };
  if (region.has_mask()) {
    const absl::Status mask = check("region.mask", region.mask());
    if (!mask.ok()) return mask;
  }
  for (int i = 0; i < layers.size(); ++i) {
    if (!layers[i].has_density()) continue;
    const absl::Status density =
        check(absl::StrCat("layers[", i, "].density"), layers[i].density());
    if (!density.ok()) return density;
  }
  return absl::OkStatus();
}

absl::StatusOr<server::ScatterJob> LocalJob(const v1::ScatterRequest& request) {
  const absl::Status inline_only =
      CheckNoDigests(request.region(), request.layers(), "a --local run");
  if (!inline_only.ok()) return inline_only;
  // The job pins the rasters it uses; the cache may go.
  server::RasterCache rasters(std::size_t{1} << 40);
  return server::ToJob(request, LocalLimits(), rasters);
}

namespace {

// RunLocal, which makes std::bad_alloc out of this a status.
absl::StatusOr<v1::Summary> RunLocalUnguarded(const v1::ScatterRequest& request,
                                              const BatchHandler& handler,
                                              absl::Duration timeout) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = Deadline(start, timeout);
  const absl::Status version = CheckVersion(request.algorithm_version());
  if (!version.ok()) return version;
  absl::StatusOr<server::ScatterJob> job = LocalJob(request);
  if (!job.ok()) return LocalWords(job.status());
  absl::StatusOr<sampler::LayeredSampler> run = sampler::LayeredSampler::Create(
      job->region, job->layers, job->shared, job->overrides);
  if (!run.ok()) return LocalWords(run.status());

  const std::vector<std::uint32_t> order = run->Order();
  std::vector<std::uint64_t> per_layer(order.size(), 0);
  std::uint64_t sent = 0;
  bool cap_hit = false, stopped = false;
  v1::PointBatch batch;
  const absl::Status status = run->Run(
      [&](const sampler::PointBatch& points) {
        std::size_t n = points.size();
        if (sent + n > job->point_cap) {
          n = static_cast<std::size_t>(job->point_cap - sent);
          cap_hit = true;
        }
        if (n > 0) {
          batch.Clear();
          server::PackBatch(points, n, request.fields(), &batch);
          const auto at =
              std::find(order.begin(), order.end(), points.layer[0]);
          per_layer[static_cast<std::size_t>(at - order.begin())] += n;
          sent += n;
          if (!handler(batch)) {
            stopped = true;
            return false;
          }
        }
        return !cap_hit;
      },
      [&] { return absl::Now() >= deadline; });
  if (stopped) return absl::CancelledError("cancelled by the caller");
  if (cap_hit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "point cap reached: ", sent, " points sent; the limit is max_points = ",
        job->point_cap, " (the request's own)"));
  }
  if (absl::IsCancelled(status) && absl::Now() >= deadline) {
    return PastTimeout(timeout, absl::StrCat(sent, " points"));
  }
  if (!status.ok()) return LocalWords(status);
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

}  // namespace

absl::StatusOr<v1::Summary> RunLocal(const v1::ScatterRequest& request,
                                     const BatchHandler& handler,
                                     absl::Duration timeout) {
  return OutOfMemoryAsStatus(
      "ask for less (a smaller region, a larger spacing)",
      [&] { return RunLocalUnguarded(request, handler, timeout); });
}

absl::StatusOr<v1::Summary> SummaryFromPoints(const v1::ScatterRequest& request,
                                              const v1::PointBatch& points) {
  absl::StatusOr<server::ScatterJob> job = LocalJob(request);
  if (!job.ok()) return job.status();
  absl::StatusOr<sampler::LayeredSampler> run = sampler::LayeredSampler::Create(
      job->region, job->layers, job->shared, job->overrides);
  if (!run.ok()) return run.status();
  v1::Summary summary;
  for (const std::uint32_t layer : run->Order()) {
    v1::LayerCount* count = summary.add_layers();
    count->set_layer(layer);
    count->set_points(static_cast<std::uint64_t>(
        std::count(points.layer().begin(), points.layer().end(), layer)));
  }
  summary.set_total_points(static_cast<std::uint64_t>(points.id_size()));
  return summary;
}

namespace {

// RunTilesLocal, which makes std::bad_alloc out of this a status.
absl::StatusOr<v1::TilesSummary> RunTilesLocalUnguarded(
    const v1::ScatterTilesRequest& request, const LocalTilesOptions& options,
    const TileHandler& handler) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = Deadline(start, options.timeout);
  const absl::Status version = CheckVersion(request.algorithm_version());
  if (!version.ok()) return version;
  const absl::Status inline_only =
      CheckNoDigests(request.region(), request.layers(), "a --local run");
  if (!inline_only.ok()) return inline_only;
  server::RasterCache rasters(std::size_t{1} << 40);
  absl::StatusOr<server::TilesJob> job =
      server::ToTilesJob(request, LocalLimits(), rasters);
  if (!job.ok()) return LocalWords(job.status());
  absl::StatusOr<std::shared_ptr<const sampler::TileWorld>> world =
      sampler::TileWorld::Create(job->world);
  if (!world.ok()) return LocalWords(world.status());
  sampler::GeneratorCache cache(options.cache_bytes);
  sampler::ThreadPool pool(options.threads);
  const absl::Status started =
      server::CheckThreadsStarted(pool, options.threads);
  if (!started.ok()) return started;

  const std::vector<std::uint32_t>& order = (*world)->layer_order();
  std::vector<std::uint64_t> per_layer(order.size(), 0);
  std::uint64_t tiles = 0, points = 0;
  bool stopped = false;
  v1::TileResponse message;
  const absl::Status status = (*world)->Serve(
      job->tiles, &cache, &pool,
      [&](const sampler::TilePoints& tile) {
        const std::size_t n = tile.points.size();
        for (std::uint32_t layer : tile.points.layer) {
          const auto at = std::find(order.begin(), order.end(), layer);
          ++per_layer[static_cast<std::size_t>(at - order.begin())];
        }
        const std::size_t parts = server::TileParts(n, job->batch_size);
        for (std::size_t part = 0; part < parts; ++part) {
          server::PackTilePart(tile, part, job->batch_size, request.fields(),
                               &message);
          if (!handler(message)) {
            stopped = true;
            return false;
          }
        }
        ++tiles;
        points += n;
        return true;
      },
      /*stop=*/[&] { return absl::Now() >= deadline; });
  if (stopped) return absl::CancelledError("cancelled by the caller");
  if (absl::IsCancelled(status) && absl::Now() >= deadline) {
    return PastTimeout(options.timeout, absl::StrCat(tiles, " tiles"));
  }
  if (!status.ok()) return LocalWords(status);
  v1::TilesSummary summary;
  summary.set_tiles(tiles);
  summary.set_total_points(points);
  summary.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  summary.set_algorithm_version(sampler::kAlgorithmVersion);
  summary.set_generators_computed((*world)->generated());
  summary.set_tile_size((*world)->tile_size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    v1::LayerCount* count = summary.add_layers();
    count->set_layer(order[i]);
    count->set_points(per_layer[i]);
  }
  return summary;
}

}  // namespace

absl::StatusOr<v1::TilesSummary> RunTilesLocal(
    const v1::ScatterTilesRequest& request, const LocalTilesOptions& options,
    const TileHandler& handler) {
  return OutOfMemoryAsStatus(
      absl::StrCat("try ", options.threads != 1 ? "fewer --threads, " : "",
                   "a smaller --tile_cache_bytes or fewer tiles a run "
                   "(--tiles, --shard)"),
      [&] { return RunTilesLocalUnguarded(request, options, handler); });
}

}  // namespace scatter::client
