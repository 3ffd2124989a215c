#ifndef SCATTER_CLIENT_LOCAL_H_
#define SCATTER_CLIENT_LOCAL_H_

// A request run in this process, with no server: the same conversion, the
// same sampler and the same packing as scatterd, so the same points, bit
// for bit, in the same batches.

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "scatter/v1/scatter.pb.h"
#include "server/convert.h"

namespace scatter::client {

// INVALID_ARGUMENT naming the first raster field that names a digest,
// which only a server's cache can look up: "region.mask.digest: WHO has no
// raster cache ...". A digest names a raster in a server's cache, and
// work in this process has none: the conversion's NOT_FOUND ("no raster
// ... on this server ...; upload it with PutRaster") would send the user
// to a server the work does not use.
absl::Status CheckNoDigests(
    const v1::Region& region,
    const google::protobuf::RepeatedPtrField<v1::Layer>& layers,
    absl::string_view who);

// The request converted as scatterd converts it, without the server's
// point, raster-size and tile limits (a request's own size limits, layers,
// obstacles and polygon vertices, hold as on a server).
// Its rasters must be inline.
absl::StatusOr<server::ScatterJob> LocalJob(const v1::ScatterRequest& request);

// Runs the request as scatterd does, with the same statuses: the
// request's own max_points ends it with RESOURCE_EXHAUSTED (see
// StoppedAtOwnCap()). A `timeout` above zero (the CLI's --timeout) stops
// the run that long after it starts, DEADLINE_EXCEEDED naming the flag.
// Limits are named as the user can change them: the sampler's grid limit
// is scatterd's --max_grid_bytes, at its default here. Running out of
// memory (std::bad_alloc) ends the run with RESOURCE_EXHAUSTED, as in
// RunTilesLocal.
absl::StatusOr<v1::Summary> RunLocal(
    const v1::ScatterRequest& request, const BatchHandler& handler,
    absl::Duration timeout = absl::ZeroDuration());

// A summary for a run that sent none (it stopped at the request's own
// max_points): the points per layer in `points`, every layer in placement
// order. Elapsed time and version are left 0. Its rasters must be inline.
absl::StatusOr<v1::Summary> SummaryFromPoints(const v1::ScatterRequest& request,
                                              const v1::PointBatch& points);

struct LocalTilesOptions {
  int threads = 0;  // Generator threads; 0: one per CPU it may use.
  // Bytes of finished generators kept while serving (as scatterd's
  // --tile_cache_bytes): a sweep needs its frontier held. Also the most
  // the run keeps alive at once (sampler::TileWorld::Serve).
  std::size_t cache_bytes = std::size_t{512} << 20;
  // Above zero (the CLI's --timeout), the run stops that long after it
  // starts: DEADLINE_EXCEEDED naming the flag.
  absl::Duration timeout = absl::ZeroDuration();
};

// Serves the request in this process as scatterd serves it: the same
// conversion, tiles and parts, so the same points, bit for bit, in the same
// messages. The server's tile and point limits do not apply (a request's
// own size limits do). Its
// rasters must be inline.
absl::StatusOr<v1::TilesSummary> RunTilesLocal(
    const v1::ScatterTilesRequest& request, const LocalTilesOptions& options,
    const TileHandler& handler);

}  // namespace scatter::client

#endif  // SCATTER_CLIENT_LOCAL_H_
