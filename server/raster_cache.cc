#include "server/raster_cache.h"

#include <openssl/evp.h>

#include <array>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace scatter::server {
namespace {

template <typename T>
void AppendLittleEndian(T value, std::string* out) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

// Width and height from a PNG's IHDR chunk (which the format puts first),
// big-endian right after the 8-byte signature and the chunk's length and
// type; false when the bytes do not start like a PNG.
bool PngSize(absl::string_view png, std::uint32_t* width,
             std::uint32_t* height) {
  if (png.size() < 24 || png.substr(12, 4) != "IHDR") return false;
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      v = (v << 8) | static_cast<std::uint8_t>(png[at + i]);
    }
    return v;
  };
  *width = be32(16);
  *height = be32(20);
  return true;
}

}  // namespace

std::string Sha256Hex(absl::string_view head, absl::string_view tail) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  EVP_DigestInit_ex(context, EVP_sha256(), nullptr);
  EVP_DigestUpdate(context, head.data(), head.size());
  EVP_DigestUpdate(context, tail.data(), tail.size());
  EVP_DigestFinal_ex(context, digest.data(), &length);
  EVP_MD_CTX_free(context);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), length));
}

std::string RasterDigest(v1::RasterFormat format, std::uint32_t width,
                         std::uint32_t height, absl::string_view pixels) {
  if (format == v1::RASTER_FORMAT_PNG) width = height = 0;
  std::string header;
  header.push_back(static_cast<char>(format));
  AppendLittleEndian<std::uint32_t>(width, &header);
  AppendLittleEndian<std::uint32_t>(height, &header);
  AppendLittleEndian<std::uint64_t>(pixels.size(), &header);
  return Sha256Hex(header, pixels);
}

absl::Status KnownFormat(absl::string_view field, v1::RasterFormat format) {
  switch (format) {
    case v1::RASTER_FORMAT_U8:
    case v1::RASTER_FORMAT_U16:
    case v1::RASTER_FORMAT_F32:
    case v1::RASTER_FORMAT_PNG:
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".format: must be U8, U16, F32 or PNG, got ",
                       static_cast<int>(format)));
  }
}

absl::Status CheckDecodedSize(absl::string_view field, v1::RasterFormat format,
                              std::uint32_t width, std::uint32_t height,
                              absl::string_view bytes, std::size_t max_bytes) {
  // The limit is on decoded pixels, 4 bytes each, whatever the format.
  if (format == v1::RASTER_FORMAT_PNG && !PngSize(bytes, &width, &height)) {
    return absl::OkStatus();
  }
  if (static_cast<std::uint64_t>(width) * height > max_bytes / 4) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": ", width, " x ", height,
        " pixels decode to more bytes (4 per pixel) than the limit "
        "max_raster_bytes = ",
        max_bytes));
  }
  return absl::OkStatus();
}

namespace {

// DecodeRaster's work: the raster decoded into *raster, or with raster
// null the bytes only checked (Raster::CheckRaw, CheckPng), with the same
// errors.
absl::Status ReadRasterBytes(absl::string_view field, v1::RasterFormat format,
                             std::uint32_t width, std::uint32_t height,
                             absl::string_view pixels, std::size_t max_bytes,
                             absl::StatusOr<sampler::Raster>* raster) {
  const auto bytes = absl::MakeConstSpan(
      reinterpret_cast<const std::uint8_t*>(pixels.data()), pixels.size());
  const sampler::RasterRect unit;
  // The format first: a raster of no format and a large size was told to
  // shrink, not to name its format.
  absl::Status known = KnownFormat(field, format);
  if (!known.ok()) return known;
  const absl::Status fits =
      CheckDecodedSize(field, format, width, height, pixels, max_bytes);
  if (!fits.ok()) return fits;
  sampler::RasterFormat raw = sampler::RasterFormat::kU8;
  switch (format) {
    case v1::RASTER_FORMAT_U8:
      break;
    case v1::RASTER_FORMAT_U16:
      raw = sampler::RasterFormat::kU16;
      break;
    case v1::RASTER_FORMAT_F32:
      raw = sampler::RasterFormat::kF32;
      break;
    default:
      break;  // PNG; others are refused above.
  }
  absl::Status status;
  if (format == v1::RASTER_FORMAT_PNG) {
    // FromPng's limit counts pixels at the file's depth (1 or 2 bytes).
    // The header's size passed the check above, so this only guards a
    // file whose header disagrees with its data; give 16-bit files the
    // same pixel count as 8-bit ones.
    const std::size_t png_bytes = max_bytes / 4 * 2;
    if (raster != nullptr) {
      *raster = sampler::Raster::FromPng(bytes, unit, png_bytes);
      status = raster->status();
    } else {
      status = sampler::Raster::CheckPng(bytes, png_bytes);
    }
  } else if (raster != nullptr) {
    *raster =
        sampler::Raster::FromRaw(raw, width, height, bytes, unit, max_bytes);
    status = raster->status();
  } else {
    status = sampler::Raster::CheckRaw(raw, width, height, bytes, max_bytes);
  }
  if (status.ok()) return status;
  return absl::Status(
      status.code(),
      absl::StrCat(field, ": ", status.message(),
                   status.code() == absl::StatusCode::kResourceExhausted
                       ? absl::StrCat(" (max_raster_bytes = ", max_bytes,
                                      " at 4 bytes per decoded pixel)")
                       : ""));
}

}  // namespace

absl::StatusOr<sampler::Raster> DecodeRaster(
    absl::string_view field, v1::RasterFormat format, std::uint32_t width,
    std::uint32_t height, absl::string_view pixels, std::size_t max_bytes) {
  absl::StatusOr<sampler::Raster> raster;
  const absl::Status read =
      ReadRasterBytes(field, format, width, height, pixels, max_bytes, &raster);
  if (!read.ok()) return read;
  return raster;
}

absl::StatusOr<RasterCache::Entry> RasterCache::Put(
    absl::string_view field, v1::RasterFormat format, std::uint32_t width,
    std::uint32_t height, absl::string_view pixels,
    std::size_t max_raster_bytes) {
  absl::Status format_known = KnownFormat(field, format);
  if (!format_known.ok()) return format_known;
  // The decoded size: a PNG's is in its header (0 x 0 when the bytes are
  // not a PNG, which FromPng says).
  std::uint32_t decoded_width = width, decoded_height = height;
  if (format == v1::RASTER_FORMAT_PNG) {
    const bool png = PngSize(pixels, &decoded_width, &decoded_height);
    if (!png) decoded_width = decoded_height = 0;
    // The file says its size. One the client gives must be the file's, and
    // the digest is the same either way (a PNG's canonical size is 0 x 0).
    if (png && (width != 0 || height != 0) &&
        (width != decoded_width || height != decoded_height)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": width and height ", width, " x ", height,
                       " are not the PNG's own ", decoded_width, " x ",
                       decoded_height, " (give 0 x 0: the file says)"));
    }
    width = height = 0;
  }
  std::string digest = RasterDigest(format, width, height, pixels);
  // Known, or being decoded by another call, or this call's to decode.
  std::shared_ptr<Decoding> first, mine;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = slots_.find(digest); it != slots_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return Entry{std::move(digest), it->second.raster};
    }
    if (auto at = decoding_.find(digest); at != decoding_.end()) {
      first = at->second;
    } else {
      // Made before it is entered: a throw leaves no empty entry behind.
      mine = std::make_shared<Decoding>();
      mine->field = std::string(field);
      // What the waiters get should Decode end without a result (throw).
      mine->status = absl::UnavailableError(
          absl::StrCat(field, ": the call decoding this raster failed; retry"));
      decoding_.emplace(digest, mine);
    }
  }
  if (first != nullptr) {
    // Calls that sent one new raster at once each reserved its room and
    // decoded it, and all but the first that fitted were refused as if the
    // cache were full (the client's resend after NOT_FOUND does that). The
    // first call's raster serves them all; its error is theirs too (the
    // same bytes fail the same way), said of their own field.
    first->done.WaitForNotification();
    if (first->status.ok() && first->raster != nullptr) {
      return Entry{std::move(digest), first->raster};
    }
    absl::string_view message = first->status.message();
    if (absl::ConsumePrefix(&message, first->field)) {
      return absl::Status(first->status.code(), absl::StrCat(field, message));
    }
    return first->status;
  }
  // Whatever Decode ends with (an exception too), the calls waiting on it
  // are told.
  absl::Cleanup tell = [this, &digest, &mine] {
    {
      absl::MutexLock lock(&mu_);
      decoding_.erase(digest);
    }
    mine->done.Notify();
  };
  absl::StatusOr<Entry> made =
      Decode(field, format, width, height, decoded_width, decoded_height,
             pixels, max_raster_bytes, digest);
  mine->status = made.status();
  if (made.ok()) mine->raster = made->raster;
  return made;
}

absl::StatusOr<RasterCache::Entry> RasterCache::Decode(
    absl::string_view field, v1::RasterFormat format, std::uint32_t width,
    std::uint32_t height, std::uint32_t decoded_width,
    std::uint32_t decoded_height, absl::string_view pixels,
    std::size_t max_raster_bytes, std::string digest) {
  // The room is taken before decoding, not after: calls that each sent a
  // big raster inline decoded them all at once, past raster_cache_bytes,
  // and only then learned that most would not fit (16 calls with a 5 600 x
  // 5 600 U16 mask held 1.2 GB beside a 256 MB cache). The decoded size
  // is the header's; a size past max_raster_bytes takes no room, as
  // DecodeRaster refuses it unread.
  std::size_t reserved = 0;
  if (static_cast<std::uint64_t>(decoded_width) * decoded_height <=
      max_raster_bytes / 4) {
    reserved = DecodedBytes(decoded_width, decoded_height);
    bool evicts = false;
    {
      absl::MutexLock lock(&mu_);
      // (A raster larger than the whole cache is refused unread below.)
      evicts = reserved <= max_bytes_ && bytes_ + reserved > max_bytes_;
    }
    // Room made is rasters evicted, which other calls may name next: only
    // for bytes that decode, so they are read through once first, keeping
    // no pixels (a 45-byte PNG header saying 500 x 500 emptied the cache
    // of the rasters it held, and NOT_FOUND followed; found by a review
    // helper).
    if (evicts) {
      const absl::Status decodes =
          ReadRasterBytes(field, format, width, height, pixels,
                          max_raster_bytes, /*raster=*/nullptr);
      if (!decodes.ok()) return decodes;
    }
    absl::MutexLock lock(&mu_);
    absl::Status room = TakeRoomLocked(field, reserved);
    if (!room.ok()) return room;
  }
  // Gives the room back unless the raster takes it.
  struct Reservation {
    RasterCache* cache;
    std::size_t bytes;
    ~Reservation() {
      if (bytes == 0) return;
      absl::MutexLock lock(&cache->mu_);
      cache->bytes_ -= bytes;
    }
  } reservation{this, reserved};

  absl::StatusOr<sampler::Raster> raster =
      DecodeRaster(field, format, width, height, pixels, max_raster_bytes);
  if (!raster.ok()) return raster.status();
  auto shared = std::make_shared<const sampler::Raster>(*std::move(raster));
  const std::size_t bytes = DecodedBytes(shared->width(), shared->height());

  absl::MutexLock lock(&mu_);
  // What the header said is what decoding made; should a file disagree,
  // the room is taken again for what it made.
  bytes_ -= reservation.bytes;
  reservation.bytes = 0;
  absl::Status room = TakeRoomLocked(field, bytes);
  if (!room.ok()) return room;
  lru_.push_front(digest);
  slots_.emplace(digest, Slot{shared, bytes, lru_.begin()});
  return Entry{std::move(digest), std::move(shared)};
}

std::size_t RasterCache::DecodedBytes(std::uint32_t width,
                                      std::uint32_t height) {
  // The pixels, 4 bytes each, and the block levels a variable-radius run
  // builds once and keeps with them (Raster::BlockLevels).
  return std::size_t{4} * width * height +
         sampler::Raster::BlockLevelsBytes(width, height);
}

absl::Status RasterCache::TakeRoomLocked(absl::string_view field,
                                         std::size_t bytes) {
  if (bytes > max_bytes_) {
    // No eviction could make room: the cache is smaller than this raster.
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": a raster of ", bytes,
        " bytes (decoded pixels and their block bounds) is larger than the "
        "whole raster cache (raster_cache_bytes = ",
        max_bytes_, ")"));
  }
  if (!MakeRoomLocked(bytes)) {
    // Every idle raster was evicted; what is left, running calls hold or
    // are decoding.
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": a raster of ", bytes,
        " bytes (decoded pixels and their block bounds) does not fit the "
        "raster cache (raster_cache_bytes = ",
        max_bytes_, ", ", bytes_,
        " held by running requests and rasters being decoded)"));
  }
  bytes_ += bytes;
  return absl::OkStatus();
}

std::shared_ptr<const sampler::Raster> RasterCache::Get(
    const std::string& digest) {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(digest);
  if (it == slots_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.raster;
}

bool RasterCache::MakeRoomLocked(std::size_t incoming) {
  if (incoming > max_bytes_) return false;
  auto it = lru_.end();
  while (bytes_ + incoming > max_bytes_ && it != lru_.begin()) {
    --it;
    auto slot = slots_.find(*it);
    // use_count() is exact here: copies are only made under mu_, and a
    // holder releasing concurrently only makes an entry evictable later.
    if (slot->second.raster.use_count() > 1) continue;
    bytes_ -= slot->second.bytes;
    slots_.erase(slot);
    it = lru_.erase(it);
  }
  return bytes_ + incoming <= max_bytes_;
}

std::size_t RasterCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

std::size_t RasterCache::size() const {
  absl::MutexLock lock(&mu_);
  return slots_.size();
}

}  // namespace scatter::server
