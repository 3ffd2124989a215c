#ifndef SCATTER_SAMPLER_RASTER_H_
#define SCATTER_SAMPLER_RASTER_H_

// Grayscale rasters (density and mask maps), each laid over its own world
// rectangle. A Raster that exists is valid and immutable; Sample() may be
// called from several threads at once.
//
// Layout: row 0 is the top row (largest y), as images are stored; pixel
// (i, j) (column i, row j) has its centre at x0 + (i + 1/2) * (x1 - x0) /
// width, y1 - (j + 1/2) * (y1 - y0) / height. Values are normalised to
// [0, 1]: u8 / 255, u16 / 65535, f32 clamped to [0, 1].

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace scatter::sampler {

enum class RasterFormat {
  kU8,   // One byte per pixel.
  kU16,  // Two bytes per pixel, little-endian.
  kF32,  // Four bytes per pixel, IEEE single, little-endian.
};

// The world rectangle a raster covers: [x0, x1] x [y0, y1], x0 < x1, y0 < y1.
struct RasterRect {
  double x0 = 0;
  double y0 = 0;
  double x1 = 1;
  double y1 = 1;
};

class Raster {
 public:
  // Raw pixels, row-major from the top row. InvalidArgument naming the rule
  // when width or height is 0, the byte count is not width * height *
  // bytes per pixel, an f32 pixel is NaN, or the rectangle is not finite and
  // non-empty; ResourceExhausted when the pixels would take more than
  // max_bytes (checked for overflow before anything is allocated).
  static absl::StatusOr<Raster> FromRaw(RasterFormat format,
                                        std::uint32_t width,
                                        std::uint32_t height,
                                        absl::Span<const std::uint8_t> bytes,
                                        const RasterRect& rect,
                                        std::size_t max_bytes);

  // An 8- or 16-bit grayscale PNG, decoded with libpng under size limits
  // set before decoding. InvalidArgument for a corrupt or truncated file or
  // another colour type, ResourceExhausted past max_bytes (of decoded
  // pixels), rectangle as above.
  static absl::StatusOr<Raster> FromPng(absl::Span<const std::uint8_t> bytes,
                                        const RasterRect& rect,
                                        std::size_t max_bytes);

  // Whether FromRaw / FromPng would take these bytes (the rectangle
  // aside), with their errors, keeping no pixels: for a caller that makes
  // room before decoding, and should not for bytes that will be refused.
  // A PNG is decoded all the same, row by row into one row's memory.
  static absl::Status CheckRaw(RasterFormat format, std::uint32_t width,
                               std::uint32_t height,
                               absl::Span<const std::uint8_t> bytes,
                               std::size_t max_bytes);
  static absl::Status CheckPng(absl::Span<const std::uint8_t> bytes,
                               std::size_t max_bytes);

  // The same pixels laid over another rectangle; they are shared, not
  // copied. InvalidArgument as above for a bad rectangle.
  absl::StatusOr<Raster> WithRect(const RasterRect& rect) const;

  std::uint32_t width() const { return width_; }
  std::uint32_t height() const { return height_; }
  const RasterRect& rect() const { return rect_; }
  // Bytes of decoded pixels (4 per pixel).
  std::size_t decoded_bytes() const { return values_->size() * sizeof(float); }

  // Bilinear value at world (x, y) between pixel centres; outside the
  // rectangle the edge value continues (clamped), as a density should.
  // Inline: the variable-radius sampler calls it for every candidate.
  double Sample(double x, double y) const {
    // Continuous pixel coordinates with centres at integers.
    return Bilinear(PixelU(x), PixelV(y));
  }

  // Bounds of Sample() over the box [x0, x1] x [y0, y1] where it spans at
  // most 2 x 2 bilinear patches (the squares between pixel centres): the
  // least and greatest of the interpolation at the box's corners, where
  // the box crosses a pixel row or column, and at a pixel centre inside
  // it (each part of the box within one patch takes its extremes at its
  // corners, and the parts meet there), widened by 1e-12 of their size
  // against rounding. Far tighter than the pixels' bounds once a box is
  // smaller than a pixel: across a sharp edge the pixels say 0 to 1
  // however small the box. False for a box over more patches.
  bool PatchBounds(double x0, double y0, double x1, double y1, double* lo,
                   double* hi) const {
    // Monotone in x and y (v falls as y rises), as Sample() computes them.
    const double u[2] = {PixelU(x0), PixelU(x1)};
    const double v[2] = {PixelV(y1), PixelV(y0)};
    const auto iu0 = static_cast<std::uint32_t>(u[0]);
    const auto iu1 = static_cast<std::uint32_t>(u[1]);
    const auto iv0 = static_cast<std::uint32_t>(v[0]);
    const auto iv1 = static_cast<std::uint32_t>(v[1]);
    if (iu1 - iu0 > 1 || iv1 - iv0 > 1) return false;
    // Where the box crosses a column or row of pixel centres (at u = iu1
    // exactly, Sample() reads that column with weight 1), else a repeat.
    const double us[3] = {u[0], static_cast<double>(iu1), u[1]};
    const double vs[3] = {v[0], static_cast<double>(iv1), v[1]};
    const int nu = iu1 > iu0 ? 3 : 2, nv = iv1 > iv0 ? 3 : 2;
    double mn = Bilinear(u[0], v[0]), mx = mn;
    for (int a = 0; a < 3; ++a) {
      if (a == 1 && nu == 2) continue;
      for (int b = 0; b < 3; ++b) {
        if (b == 1 && nv == 2) continue;
        const double s = Bilinear(us[a], vs[b]);
        mn = s < mn ? s : mn;
        mx = s > mx ? s : mx;
      }
    }
    const double slack = 1e-12 * (1 + std::max(std::abs(mn), std::abs(mx)));
    *lo = mn - slack;
    *hi = mx + slack;
    return true;
  }

  // Whether (x, y) lies in the rectangle: a mask excludes everything
  // outside it.
  bool Covers(double x, double y) const {
    return x >= rect_.x0 && x <= rect_.x1 && y >= rect_.y0 && y <= rect_.y1;
  }

  // The least and greatest value Sample() can return in the box
  // [x0, x1] x [y0, y1] (the pixels whose bilinear support meets it). False
  // when that is more than max_pixels pixels (then nothing is said).
  bool Bounds(double x0, double y0, double x1, double y1, double* lo,
              double* hi, std::size_t max_pixels = 64) const;

  // At least the greatest value Sample() can return in the box [x0, x1] x
  // [y0, y1], at most the greatest pixel of the blocks of BlockLevels that
  // cover the pixels whose bilinear support meets it: the pixels when they
  // span at most 2 a side, else the first level whose blocks are wider than
  // their span (2 x 2 blocks at most, up to twice the span a side).
  double Greatest(double x0, double y0, double x1, double y1) const;
  // The same over the pixels of columns i0 to i1 and rows j0 to j1, as
  // PixelsUnder gives them.
  double GreatestOverPixels(std::uint32_t i0, std::uint32_t j0,
                            std::uint32_t i1, std::uint32_t j1) const;
  // The pixels whose bilinear support meets the box [x0, x1] x [y0, y1]:
  // columns i0 to i1, rows j0 to j1 (row 0 at the top). Columns depend on
  // x only, rows on y only.
  void PixelsUnder(double x0, double y0, double x1, double y1,
                   std::uint32_t* i0, std::uint32_t* j0, std::uint32_t* i1,
                   std::uint32_t* j1) const;

  // The normalised value of pixel (i, j).
  float Pixel(std::uint32_t i, std::uint32_t j) const {
    return (*values_)[static_cast<std::size_t>(j) * width_ + i];
  }
  // All pixels, row-major from the top row.
  const float* pixels() const { return pixels_; }

  // The least and greatest pixel of each block of 2^k x 2^k pixels, for
  // k = 1, 2, ... up to the level of one block (element k - 1; level 0 is
  // the pixels themselves): what the variable-radius sampler bounds the
  // density over a box with, and Region::Classify a mask over a box of
  // more than 64 pixels. Built on the first call (thread-safe) in
  // O(pixels), then kept with the pixels, shared by every copy and WithRect
  // view, so runs, tiles and requests over one raster build it once. The
  // memory (BlockLevelsBytes) stays with the pixels for their lifetime.
  struct BlockLevel {
    std::uint32_t w = 0, h = 0;  // Blocks per row and column.
    std::vector<float> lo, hi;   // Row-major.
  };
  const std::vector<BlockLevel>& BlockLevels() const;
  // The bytes BlockLevels holds once built: 8 per block, about 2.7 per
  // pixel for a square raster, up to 8 for a one-pixel strip.
  static std::size_t BlockLevelsBytes(std::uint32_t width,
                                      std::uint32_t height);

 private:
  // Continuous pixel coordinates of world x and y (centres at integers),
  // clamped to the pixels.
  double PixelU(double x) const {
    const double u = (x - rect_.x0) * to_col_ - 0.5;
    const double max_u = width_ - 1.0;
    return u < 0 ? 0 : (u > max_u ? max_u : u);
  }
  double PixelV(double y) const {
    const double v = (rect_.y1 - y) * to_row_ - 0.5;
    const double max_v = height_ - 1.0;
    return v < 0 ? 0 : (v > max_v ? max_v : v);
  }
  // The bilinear interpolation at clamped pixel coordinates (u, v).
  double Bilinear(double u, double v) const {
    const auto i0 = static_cast<std::uint32_t>(u);
    const auto j0 = static_cast<std::uint32_t>(v);
    const std::uint32_t i1 = i0 + 1 < width_ ? i0 + 1 : width_ - 1;
    const std::uint32_t j1 = j0 + 1 < height_ ? j0 + 1 : height_ - 1;
    const double fu = u - i0;
    const double fv = v - j0;
    const float* row0 = pixels_ + static_cast<std::size_t>(j0) * width_;
    const float* row1 = pixels_ + static_cast<std::size_t>(j1) * width_;
    const double top = row0[i0] + fu * (row0[i1] - row0[i0]);
    const double bottom = row1[i0] + fu * (row1[i1] - row1[i0]);
    return top + fv * (bottom - top);
  }

  Raster(std::uint32_t width, std::uint32_t height, const RasterRect& rect,
         std::vector<float> values);

  std::uint32_t width_;
  std::uint32_t height_;
  RasterRect rect_;
  double to_col_;  // Pixels per world unit, x.
  double to_row_;  // Pixels per world unit, y.
  std::shared_ptr<const std::vector<float>> values_;  // Shared by copies.
  const float* pixels_;  // values_->data(), which copies share.
  struct Blocks;
  std::shared_ptr<Blocks> blocks_;  // BlockLevels, shared by copies.
};

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_RASTER_H_
