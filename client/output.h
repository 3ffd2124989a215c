#ifndef SCATTER_CLIENT_OUTPUT_H_
#define SCATTER_CLIENT_OUTPUT_H_

// Point files the `scatter` command writes. Every format keeps doubles
// exact (CSV and JSON lines print the shortest digits that read back as the
// same double), so a point read back is the point that was sent.
//
//   csv    header x,y[,z],layer,radius,id,yaw,scale then one line per point
//   jsonl  {"x":..,"y":..[,"z":..],"layer":..,"radius":..,"id":..,
//          "yaw":..,"scale":..} per line
//   ply    binary_little_endian 1.0, element vertex with double x, y, z
//          (z = 0 in 2D), uint layer, double radius, uint id_lo, uint id_hi
//          (PLY has no 64-bit integer), double yaw, double scale
//   raw    8 bytes "SCATRAW1", u32 dims, then per point little-endian:
//          dims doubles, u32 layer, double radius, u64 id, double yaw,
//          double scale (point count = (size - 12) / (8 * dims + 36))

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scatter/v1/scatter.pb.h"

namespace scatter::client {

enum class Format { kCsv, kJsonLines, kPly, kRaw };

// "csv", "jsonl", "ply" or "raw"; InvalidArgument otherwise.
absl::StatusOr<Format> ParseFormat(const std::string& name);

class PointWriter {
 public:
  virtual ~PointWriter() = default;
  // Batches must carry every array (no omitted fields).
  virtual absl::Status Write(const v1::PointBatch& batch) = 0;
  // Completes the file (PLY writes its header here).
  virtual absl::Status Finish() = 0;
};

// Writes to `path`, or to stdout when path is "-".
absl::StatusOr<std::unique_ptr<PointWriter>> OpenWriter(Format format,
                                                        const std::string& path);

// Reads a file written by OpenWriter back into one batch (for tests and
// tools). InvalidArgument naming the line or byte offset when it is not.
absl::StatusOr<v1::PointBatch> ReadPoints(Format format, const std::string& path);

}  // namespace scatter::client

#endif  // SCATTER_CLIENT_OUTPUT_H_
