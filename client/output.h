#ifndef SCATTER_CLIENT_OUTPUT_H_
#define SCATTER_CLIENT_OUTPUT_H_

// Point files the `scatter` command writes. Every format keeps doubles
// exact (CSV and JSON lines print the shortest digits that read back as the
// same double), so a point read back is the point that was sent.
//
//   csv    header x,y[,z],layer,radius,id,yaw,scale then one line per point
//   jsonl  {"x":..,"y":..[,"z":..],"layer":..,"radius":..,"id":"..",
//          "yaw":..,"scale":..} per line; the id is a decimal string, as
//          in protobuf's JSON mapping (JSON readers that hold numbers as
//          doubles would round it)
//   ply    binary_little_endian 1.0, element vertex with double x, y, z
//          (z = 0 in 2D), uint layer, double radius, uint id_lo, uint id_hi
//          (PLY has no 64-bit integer), double yaw, double scale
//   raw    8 bytes "SCATRAW1", u32 dims, then per point little-endian:
//          dims doubles, u32 layer, double radius, u64 id, double yaw,
//          double scale (point count = (size - 12) / (8 * dims + 36))

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
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

// Writes to stdout when path is "-", and in place to a path that exists
// and is not a regular file (/dev/null, a FIFO). Otherwise to a hidden
// temporary file beside `path` that Finish renames over it (after an
// fsync; see WritePathFor), so `path` keeps its old content until the new
// one is whole; a writer destroyed unfinished removes its temporary file.
// `dims` (2 or 3) is the run's, for the header of a file that gets no
// points. A PLY file's header, which counts the points, is rewritten at
// the end; on stdout or a pipe the points wait in an unnamed temporary
// file until then. No format holds the points in memory.
absl::StatusOr<std::unique_ptr<PointWriter>> OpenWriter(Format format,
                                                        const std::string& path,
                                                        int dims);

// Where to write a file that must replace `path` whole or not at all: a
// hidden temporary file beside it, unique to this call (pid and 64 random
// bits: two processes 1 in two containers never share one), for
// CommitTemporary to rename over `path`; or `path` itself when it exists
// and is not a regular file (/dev/null, a FIFO: written in place). When
// `path` is a symlink, "beside it" and "over it" mean the file it names:
// the link stays. InvalidArgument when `path` is a directory or ends in
// '/'.
absl::StatusOr<std::string> WritePathFor(const std::string& path);

// The descriptor of this process that `path` names, through its links:
// 1 for /dev/stdout, N for /dev/fd/N or /proc/self/fd/N.
std::optional<int> OwnDescriptor(const std::string& path);

// Opens `path` (from WritePathFor) to write: a copy of the descriptor it
// names (OwnDescriptor; *stream set), written where it stands, or the file,
// truncated. Null with errno set on failure.
std::FILE* OpenForWriting(const std::string& path, bool* stream);

// Whether writing `a` and `b` (paths, "-" for stdout) would write one
// file, pipe or terminal (not /dev/null): through links, descriptors
// (/dev/stdout, or "-" redirected to the file) and different spellings of
// one path, and for a file not made yet.
bool WriteOneFile(const std::string& a, const std::string& b);

// Makes the closed file `temp` (from WritePathFor) durable (fsync) and
// renames it over `path` (the file a symlink names), with the permissions
// of the file it replaces; removes it when that fails. Nothing to do when
// temp is path.
absl::Status CommitTemporary(const std::string& temp, const std::string& path);

// Removes `temp` (from WritePathFor) when it is not `path` itself: the
// write failed and `path` keeps what it held.
void DiscardTemporary(const std::string& temp, const std::string& path);

// Makes SIGINT, SIGTERM and SIGHUP remove the temporary files being
// written (from WritePathFor until they are committed or discarded)
// before the process dies of the signal. Call once, at start.
void RemoveTemporariesOnSignals();

// The file name ending of a format: "csv", "jsonl", "ply" or "raw".
const char* FormatExtension(Format format);

// "tile_<x>_<y>.<ext>", e.g. tile_-3_0.csv.
std::string TileFileName(std::int64_t x, std::int64_t y, Format format);

// Writes the tiles of a ScatterTiles stream as one file each,
// DIR/TileFileName(x, y, format). A tile's parts go to a temporary file in
// DIR that is renamed over the tile's file (after an fsync) when its last
// part arrives, so a tile file is always whole, and a retried export
// rewrites the same bytes.
class TileFiles {
 public:
  // Creates DIR (and its parents) when missing. Unavailable naming the
  // path when it cannot. Destroyed with a tile unfinished, it removes that
  // tile's temporary file.
  static absl::StatusOr<std::unique_ptr<TileFiles>> Open(Format format,
                                                         const std::string& dir);

  // Parts must come in order (part 0 first), one tile after the other.
  absl::Status Write(const v1::TileResponse& part);
  std::uint64_t tiles_written() const { return tiles_; }

 private:
  TileFiles(Format format, std::string dir)
      : format_(format), dir_(std::move(dir)) {}

  const Format format_;
  const std::string dir_;
  std::unique_ptr<PointWriter> open_;  // The tile being written.
  std::string final_;                  // Its tile file.
  std::uint64_t tiles_ = 0;
};

// Reads a file written by OpenWriter back into one batch (for tests and
// tools). InvalidArgument naming the line or byte offset when it is not.
absl::StatusOr<v1::PointBatch> ReadPoints(Format format, const std::string& path);

}  // namespace scatter::client

#endif  // SCATTER_CLIENT_OUTPUT_H_
