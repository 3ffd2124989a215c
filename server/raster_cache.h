#ifndef SCATTER_SERVER_RASTER_CACHE_H_
#define SCATTER_SERVER_RASTER_CACHE_H_

// Rasters uploaded once and named by a digest the server computes, so a
// client can never bind a digest to someone else's data. Entries are
// decoded rasters, evicted least recently used first when the bytes exceed
// the budget; an entry a running request holds is pinned (never evicted).
// An entry counts its pixels (4 bytes each) and the block bounds that
// variable-radius runs build once and keep with them
// (sampler::Raster::BlockLevelsBytes), whether or not a run has built them
// yet: a raster only ever used as a mask is charged for bounds it never
// builds, which errs on the side of room.

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "sampler/raster.h"
#include "scatter/v1/scatter.pb.h"

namespace scatter::server {

// Lower-case hex SHA-256 of head followed by tail.
std::string Sha256Hex(absl::string_view head, absl::string_view tail = {});

// Lower-case hex SHA-256 over the canonical encoding RasterRef documents:
// format byte, width and height (u32 LE), pixel byte count (u64 LE), pixels.
// A PNG's width and height are its file's, so the encoding has 0 x 0 for
// them whatever is given: an inline PNG sent with its size and the one
// PutRaster stored are one raster (and one tiled world, WorldKey).
std::string RasterDigest(v1::RasterFormat format, std::uint32_t width,
                         std::uint32_t height, absl::string_view pixels);

// InvalidArgument naming `field`.format unless it is one Scatter decodes
// (U8, U16, F32 or PNG).
absl::Status KnownFormat(absl::string_view field, v1::RasterFormat format);

// ResourceExhausted naming `field` when a raster of `format` decodes to more
// than max_bytes (4 bytes a pixel): width x height, or a PNG's size in the
// header `bytes` starts with. OK for a PNG whose header is not (yet) there:
// decoding says what is wrong with one that has none.
absl::Status CheckDecodedSize(absl::string_view field, v1::RasterFormat format,
                              std::uint32_t width, std::uint32_t height,
                              absl::string_view bytes, std::size_t max_bytes);

// Decodes raster content; the rectangle is the unit square (callers lay it
// over their own with Raster::WithRect). InvalidArgument naming `field` and
// the rule; ResourceExhausted past max_bytes of decoded pixels.
absl::StatusOr<sampler::Raster> DecodeRaster(absl::string_view field,
                                             v1::RasterFormat format,
                                             std::uint32_t width,
                                             std::uint32_t height,
                                             absl::string_view pixels,
                                             std::size_t max_bytes);

class RasterCache {
 public:
  struct Entry {
    std::string digest;
    std::shared_ptr<const sampler::Raster> raster;  // Pins while held.
  };

  explicit RasterCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Decodes and stores the content (or refreshes it when already present),
  // returning its digest. Errors as DecodeRaster; ResourceExhausted naming
  // the cache budget when the raster cannot fit beside the pinned ones.
  // Content another call is decoding is waited for, not decoded twice:
  // that call's raster, or its error said of `field`.
  absl::StatusOr<Entry> Put(absl::string_view field, v1::RasterFormat format,
                            std::uint32_t width, std::uint32_t height,
                            absl::string_view pixels,
                            std::size_t max_raster_bytes);

  // The raster with this digest, pinned while the result is held; nullptr
  // when unknown (never uploaded here, or evicted).
  std::shared_ptr<const sampler::Raster> Get(const std::string& digest);

  std::size_t bytes() const;
  std::size_t size() const;

  // What a decoded raster of width x height holds in the cache: its
  // pixels, 4 bytes each, and their block bounds.
  static std::size_t DecodedBytes(std::uint32_t width, std::uint32_t height);

 private:
  struct Slot {
    std::shared_ptr<const sampler::Raster> raster;
    std::size_t bytes = 0;
    std::list<std::string>::iterator lru;  // Front = most recent.
  };
  // A raster one call is decoding, for the calls that bring the same
  // content meanwhile: done once its result is set.
  struct Decoding {
    absl::Notification done;
    absl::Status status;                            // Put's.
    std::shared_ptr<const sampler::Raster> raster;  // When status is OK.
    std::string field;                              // Named in status.
  };
  // Put's work for content neither stored nor being decoded: takes room,
  // decodes, stores.
  absl::StatusOr<Entry> Decode(absl::string_view field, v1::RasterFormat format,
                               std::uint32_t width, std::uint32_t height,
                               std::uint32_t decoded_width,
                               std::uint32_t decoded_height,
                               absl::string_view pixels,
                               std::size_t max_raster_bytes,
                               std::string digest);
  // Drops unpinned entries, oldest first, until `incoming` more bytes fit.
  bool MakeRoomLocked(std::size_t incoming) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts `bytes` in the cache, evicting idle rasters to make room;
  // ResourceExhausted naming `field` and raster_cache_bytes when they
  // cannot fit.
  absl::Status TakeRoomLocked(absl::string_view field, std::size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::size_t max_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Decoding>> decoding_
      ABSL_GUARDED_BY(mu_);
  std::size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace scatter::server

#endif  // SCATTER_SERVER_RASTER_CACHE_H_
