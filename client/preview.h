#ifndef SCATTER_CLIENT_PREVIEW_H_
#define SCATTER_CLIENT_PREVIEW_H_

// `scatter run --preview FILE.png`: a picture of a run. The region is shaded
// (its outline, holes included, drawn where inside meets outside), a layer's
// density raster, if any, tints it, obstacles are outlined, and each point
// is a disk of 0.35 times its spacing in its layer's colour. 3D runs are seen from
// above (+z): the points within half their spacing of the middle depth as disks, the rest as faint dots.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "scatter/v1/scatter.pb.h"

namespace scatter::client {

// InvalidArgument naming --preview_size unless 16 <= size <= 8192.
absl::Status CheckPreviewSize(int size);

// Unavailable naming --preview, `path` and why, when the picture's
// temporary file (output.h: WritePathFor) cannot be created there; it
// leaves nothing behind.
absl::Status CheckPreviewWritable(const std::string& path);

// `request` must have its rasters inline (not by digest). The longer side
// of the picture is `size` pixels (16 to 8192).
absl::Status WritePreview(const std::string& path, const v1::ScatterRequest& request,
                          const v1::PointBatch& points, int size);

}  // namespace scatter::client

#endif  // SCATTER_CLIENT_PREVIEW_H_
