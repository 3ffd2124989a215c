#ifndef SCATTER_SERVER_CONVERT_H_
#define SCATTER_SERVER_CONVERT_H_

// Request proto -> validated sampler spec. Every bad input gets
// InvalidArgument whose message names the field path and the rule; limits
// the request would exceed get ResourceExhausted naming the limit, before
// anything is sampled. The adapter never does geometry; the core never sees
// protobuf.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "sampler/layers.h"
#include "sampler/raster.h"
#include "sampler/region.h"
#include "sampler/sampler.h"
#include "sampler/tiles.h"
#include "scatter/v1/scatter.pb.h"
#include "server/raster_cache.h"

namespace scatter::server {

// What one request may ask for. Defaults suit one machine serving tools.
struct Limits {
  // Points per request: the estimate (the integral of 2 / (sqrt(3) r^2)
  // over the region, per layer) must stay under it before sampling, and the
  // stream is cut at exactly this many while running.
  std::uint64_t max_points = 200'000'000;
  // Decoded bytes of one raster (4 per pixel), inline or uploaded.
  std::size_t max_raster_bytes = std::size_t{256} << 20;
  // Polygon vertices over all rings and flattened splines.
  std::size_t max_polygon_vertices = std::size_t{1} << 22;
  std::size_t max_obstacles = std::size_t{1} << 20;
  std::size_t max_layers = 64;
  // The sampler's acceleration grid of one layer.
  std::uint64_t max_grid_bytes = std::uint64_t{8} << 30;
  // Tiles one ScatterTiles request may ask for.
  std::size_t max_tiles_per_request = 10'000;
};

struct ScatterJob {
  sampler::Region region;
  std::vector<sampler::LayerSpec> layers;
  sampler::SamplerOptions shared;
  std::vector<sampler::ClearanceOverride> overrides;
  // Cache entries of the rasters in use, pinned for the request's life.
  std::vector<std::shared_ptr<const sampler::Raster>> pinned;
  // Points to send at most: the request's cap or the server's.
  std::uint64_t point_cap = 0;
  double estimated_points = 0;
  // Sampling memory the run holds at most (see ServiceOptions::
  // memory_budget_bytes).
  double estimated_bytes = 0;
  std::size_t batch_size = 4096;
};

// A ScatterTiles request, converted: the world and the tiles to serve.
struct TilesJob {
  // Its cache_key is WorldKey(request). The tile size is checked against
  // the layers by sampler::TileWorld::Create.
  sampler::WorldSpec world;
  std::vector<sampler::TileCoord> tiles;  // In serving order.
  // Cache entries of the rasters in use, pinned for the request's life.
  std::vector<std::shared_ptr<const sampler::Raster>> pinned;
  int dims = 2;
  std::size_t batch_size = 4096;  // Points per message.
  std::uint64_t point_cap = 0;    // Points per stream at most.
};

// Points per message when the request says 0.
inline constexpr std::size_t kDefaultBatchSize = 4096;
// Bytes a layered run holds per point it keeps for later layers: the
// point, its obstacle copy and index entry (sampler/layers.cc). Measured
// 134 at the peak of a run that kept 3.5 M points for a last uniform
// layer; the list of kept points grows by doubling, so up to 40 more.
inline constexpr double kKeptPointBytes = 176;
// Bytes a run holds per obstacle of the request: the shared list (40), the
// copy each layer's run takes in turn and its index entries (about 64),
// with the allocator's rounding. With kParsedObstacleBytes, what 2^20
// empty obstacles took at the peak of a run: 298 MB over an idle server's.
// The service holds both with the request message, for the whole call.
inline constexpr double kObstacleBytes = 208;
// Bytes a parsed request holds per obstacle beyond its wire bytes (an
// empty one is 2 bytes on the wire): the message (56), its pointer and
// the allocator's header.
inline constexpr double kParsedObstacleBytes = 80;

// A PointBatch message stays under this many bytes.
inline constexpr std::size_t kMaxBatchBytes = std::size_t{1} << 20;

// Asked for the bytes a polygon region's index will take (by its vertex
// count, kIndexBytesPerVertex each) before it is built: a status that is
// not OK refuses the request with it.
using IndexHoldFn = absl::FunctionRef<absl::Status(double bytes)>;
// What a polygon index takes a vertex at least, for the hold before it is
// built: its edges, 32 bytes each. What it takes beyond them (its cells
// and their lists: 45 to 1 236 bytes a vertex measured, from circles to
// zigzags across the width) the estimate counts once it is built. A hold
// of 192 a vertex refused circles that fit, and zigzags outgrew it.
inline constexpr double kIndexBytesPerVertex = 32;

// NotFound naming the digest when a raster is given by an unknown digest.
// Polls `stop` while it builds a polygon region's index (seconds for
// millions of vertices): Cancelled when it says stop.
absl::StatusOr<ScatterJob> ToJob(const v1::ScatterRequest& request,
                                 const Limits& limits, RasterCache& rasters,
                                 absl::FunctionRef<bool()> stop,
                                 IndexHoldFn hold_index);
inline absl::StatusOr<ScatterJob> ToJob(const v1::ScatterRequest& request,
                                        const Limits& limits,
                                        RasterCache& rasters) {
  return ToJob(
      request, limits, rasters, [] { return false; },
      [](double) { return absl::OkStatus(); });
}

// Errors as ToJob; first of all ResourceExhausted naming
// max_tiles_per_request and InvalidArgument naming `tiles` or `rect` (both
// or neither given, an empty rectangle, an index outside [-2^31, 2^31)),
// before any raster is decoded. sampler::TileWorld::Create checks the rest
// (Poisson methods only, the tile size).
absl::StatusOr<TilesJob> ToTilesJob(const v1::ScatterTilesRequest& request,
                                    const Limits& limits, RasterCache& rasters,
                                    absl::FunctionRef<bool()> stop,
                                    IndexHoldFn hold_index);
inline absl::StatusOr<TilesJob> ToTilesJob(
    const v1::ScatterTilesRequest& request, const Limits& limits,
    RasterCache& rasters) {
  return ToTilesJob(
      request, limits, rasters, [] { return false; },
      [](double) { return absl::OkStatus(); });
}

// ResourceExhausted naming max_points when the tiles could hold more points
// than the limit, before any is sampled: the sum of
// sampler::TileWorld::MostServedPoints over the tiles (per tile and layer,
// the densest packing (2 / (sqrt(3) r^2) in 2D) at the least radius the
// layer can have there, over the tile within the bounds of the region with
// r / 2 more on each side).
absl::Status CheckTilesEstimate(const TilesJob& job,
                                const sampler::TileWorld& world,
                                const Limits& limits);

// Estimated sampling bytes of any one tile generator of the world: the
// largest of its layers' sampler::MostRunBytes over
// sampler::TileWorld::WidestGeneratorArea (a tile grown by 5 r_max on each
// side, narrowed to the region's bounds where they are narrower; in 3D over
// the world's height), as wide as any generator samples, with a density
// raster at its brightest pixel, as bright as any generator sees.
double GeneratorBytes(const TilesJob& job, const sampler::TileWorld& world);

// ResourceExhausted naming --threads when `pool` (sized by --threads =
// `threads`, scatterd's or `scatter tiles --local`'s) could not start its
// workers; OK when it did.
absl::Status CheckThreadsStarted(const sampler::ThreadPool& pool, int threads);

// An estimate (points, bytes) for a message: the integer, or past 2^64 the
// floating-point figure.
std::string WholeFigure(double n);

// The name of the request's world in a sampler::GeneratorCache: lower-case
// hex SHA-256 of its deterministic serialization without tiles, rect,
// batch_size and fields, with algorithm_version 0 made the current one and
// every inline raster replaced by the digest PutRaster would give it. So
// requests for other tiles of one world, inline or by digest, share cached
// generators.
std::string WorldKey(const v1::ScatterTilesRequest& request);

// How many messages a tile of `points` points takes (1 when it is empty).
std::size_t TileParts(std::size_t points, std::size_t batch_size);

// Part `part` of the tile (points [part * batch_size, ...)) into `out`,
// with the tile, the part number and last_part set: the one packing the
// server and `scatter tiles --local` share.
void PackTilePart(const sampler::TilePoints& tile, std::size_t part,
                  std::size_t batch_size, const v1::Fields& fields,
                  v1::TileResponse* out);

// The largest value of `requested` points per batch (0 = default) whose
// message stays under kMaxBatchBytes in `dims` dimensions.
std::size_t ClampBatchSize(std::uint32_t requested, int dims);

// Appends the first n points of `batch` to `out` (the arrays `fields` asks
// for): the one packing the server and `scatter run --local` share.
void PackBatch(const sampler::PointBatch& batch, std::size_t n,
               const v1::Fields& fields, v1::PointBatch* out);

}  // namespace scatter::server

#endif  // SCATTER_SERVER_CONVERT_H_
