#ifndef SCATTER_CLIENT_JOB_H_
#define SCATTER_CLIENT_JOB_H_

// Job files: a v1::Job in protobuf's JSON mapping, with rasters by file.

#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "scatter/v1/job.pb.h"

namespace scatter::client {

// Parses the file with protobuf's JSON parser. InvalidArgument naming the
// file and the parser's reason (field path, position) when it is not a Job.
absl::StatusOr<v1::Job> LoadJob(const std::string& path);

// The directory a job file's relative raster paths are taken from: the
// file's own ("jobs" for "jobs/a.json", "/" for "/a.json"), or "" (the
// current directory) for a bare name.
std::string JobDir(const std::string& job_path);

// The request with every raster file read and put in place inline.
// Relative paths are taken from `base_dir`. NotFound naming the file when
// it cannot be read; InvalidArgument naming rasterFiles[i] for a bad target.
absl::StatusOr<v1::ScatterRequest> ResolveRasters(const v1::Job& job,
                                                  const std::string& base_dir);

// The same for a job's `world` (`scatter tiles`).
absl::StatusOr<v1::ScatterTilesRequest> ResolveWorldRasters(
    const v1::Job& job, const std::string& base_dir);

// `status` with the raster file named when its message starts with the
// field one of the job's rasterFiles fills: "region.mask.data: not a PNG
// file" becomes "rasterFiles[0] (dir/mask.png): region.mask.data: not a PNG
// file", as the user wrote a file, not the field. Rasters are only decoded
// when the request runs (or is uploaded), so their errors come back by
// field. Any other status is returned as it is, and so is any about the
// call rather than its data (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED,
// UNAUTHENTICATED, PERMISSION_DENIED), whatever its message.
absl::Status NameRasterFile(const v1::Job& job, const std::string& base_dir,
                            const absl::Status& status);

// The request with every inline raster uploaded with PutRaster and named
// by the digest the server returns (the client keeps the data to upload
// again, or resend inline, should the server lose it). Errors about a
// raster name its field; those about the call (the server unreachable, the
// deadline, cancelled, credentials) name the server instead. Each upload
// is one call with `call`'s deadline.
absl::StatusOr<v1::ScatterRequest> UploadRasters(v1::ScatterRequest request,
                                                 Client& client,
                                                 const CallOptions& call = {});
absl::StatusOr<v1::ScatterTilesRequest> UploadRasters(
    v1::ScatterTilesRequest request, Client& client,
    const CallOptions& call = {});

}  // namespace scatter::client

#endif  // SCATTER_CLIENT_JOB_H_
