#include "sampler/raster.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <mutex>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace scatter::sampler {
namespace {

absl::Status CheckRect(const RasterRect& r) {
  if (!std::isfinite(r.x0) || !std::isfinite(r.y0) || !std::isfinite(r.x1) ||
      !std::isfinite(r.y1) || !(r.x0 < r.x1) || !(r.y0 < r.y1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rect must be finite with x0 < x1 and y0 < y1, got (",
                     r.x0, ", ", r.y0, ") to (", r.x1, ", ", r.y1, ")"));
  }
  // Pixels per unit (up to 2^32 pixels over the extent) must be a finite
  // number, and the extent itself one.
  constexpr double kLeast = 0x1p32 / std::numeric_limits<double>::max();
  const double w = r.x1 - r.x0, h = r.y1 - r.y0;
  if (!std::isfinite(w) || !std::isfinite(h) || !(w > kLeast) ||
      !(h > kLeast)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rect must be wider and taller than ", kLeast,
        " and its extent a finite number, got ", w, " x ", h));
  }
  return absl::OkStatus();
}

// width * height * bytes_per_pixel against max_bytes, without overflow.
absl::Status CheckSize(std::uint32_t width, std::uint32_t height,
                       std::size_t bytes_per_pixel, std::size_t max_bytes) {
  if (width == 0 || height == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a raster needs width and height > 0, got ", width, " x ", height));
  }
  // width * height fits in 64 bits; compare it with max_bytes / bpp rather
  // than multiply again.
  const std::uint64_t pixels = static_cast<std::uint64_t>(width) * height;
  if (pixels > max_bytes / bytes_per_pixel) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a ", width, " x ", height, " raster of ", bytes_per_pixel,
                     "-byte pixels is over the limit max_bytes = ", max_bytes));
  }
  return absl::OkStatus();
}

// libpng reports errors by longjmp; this carries the message out.
struct PngState {
  absl::Span<const std::uint8_t> data;
  std::size_t pos = 0;
  char message[200] = {0};
};

void PngError(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > state->data.size() - state->pos) {
    png_error(png, "truncated PNG data");
  }
  std::memcpy(out, state->data.data() + state->pos, n);
  state->pos += n;
}

// The header: size and pixel format. Separate from decoding so the pixel
// buffer is allocated (after the size checks) outside any setjmp scope.
bool ReadPngHeader(png_structp png, png_infop info, png_uint_32* width,
                   png_uint_32* height, int* depth, int* color, int* passes) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  int interlace = 0;
  png_get_IHDR(png, info, width, height, depth, color, &interlace, nullptr,
               nullptr);
  *passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool ReadPngRows(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

// ReadPngRows keeping nothing: every row of every pass read into `row`.
bool SkimPngRows(png_structp png, png_uint_32 height, int passes,
                 png_bytep row) {
  if (setjmp(png_jmpbuf(png))) return false;
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 j = 0; j < height; ++j) png_read_row(png, row, nullptr);
  }
  png_read_end(png, nullptr);
  return true;
}

}  // namespace

struct Raster::Blocks {
  std::once_flag built;
  std::vector<BlockLevel> levels;
};

Raster::Raster(std::uint32_t width, std::uint32_t height,
               const RasterRect& rect, std::vector<float> values)
    : width_(width),
      height_(height),
      rect_(rect),
      to_col_(width / (rect.x1 - rect.x0)),
      to_row_(height / (rect.y1 - rect.y0)),
      values_(std::make_shared<const std::vector<float>>(std::move(values))),
      pixels_(values_->data()),
      blocks_(std::make_shared<Blocks>()) {}

const std::vector<Raster::BlockLevel>& Raster::BlockLevels() const {
  std::call_once(blocks_->built, [this] {
    std::vector<BlockLevel>& levels = blocks_->levels;
    std::uint32_t w = width_, h = height_;
    while (w > 1 || h > 1) {
      const std::uint32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
      BlockLevel coarse;
      coarse.w = cw;
      coarse.h = ch;
      coarse.lo.assign(std::size_t{cw} * ch, 2.0f);
      coarse.hi.assign(std::size_t{cw} * ch, -1.0f);
      // From the pixels for level 1, else from the level below.
      const float* fine_lo = levels.empty() ? pixels_ : levels.back().lo.data();
      const float* fine_hi = levels.empty() ? pixels_ : levels.back().hi.data();
      for (std::uint32_t j = 0; j < h; ++j) {
        for (std::uint32_t i = 0; i < w; ++i) {
          const std::size_t f = std::size_t{j} * w + i;
          const std::size_t c = std::size_t{j / 2} * cw + i / 2;
          coarse.lo[c] = std::min(coarse.lo[c], fine_lo[f]);
          coarse.hi[c] = std::max(coarse.hi[c], fine_hi[f]);
        }
      }
      levels.push_back(std::move(coarse));
      w = cw;
      h = ch;
    }
  });
  return blocks_->levels;
}

std::size_t Raster::BlockLevelsBytes(std::uint32_t width,
                                     std::uint32_t height) {
  std::size_t bytes = 0;
  std::uint64_t w = width, h = height;
  while (w > 1 || h > 1) {
    w = (w + 1) / 2;
    h = (h + 1) / 2;
    bytes += 2 * sizeof(float) * w * h;
  }
  return bytes;
}

absl::StatusOr<Raster> Raster::WithRect(const RasterRect& rect) const {
  absl::Status status = CheckRect(rect);
  if (!status.ok()) return status;
  Raster copy = *this;
  copy.rect_ = rect;
  copy.to_col_ = width_ / (rect.x1 - rect.x0);
  copy.to_row_ = height_ / (rect.y1 - rect.y0);
  return copy;
}

namespace {

// Raw pixels' values into *values, or with values null only checked (the
// same errors: size, byte count, a NaN f32 pixel).
absl::Status ReadRaw(RasterFormat format, std::uint32_t width,
                     std::uint32_t height, absl::Span<const std::uint8_t> bytes,
                     std::size_t max_bytes, std::vector<float>* values) {
  const std::size_t bpp =
      format == RasterFormat::kU8 ? 1 : (format == RasterFormat::kU16 ? 2 : 4);
  absl::Status status = CheckSize(width, height, bpp, max_bytes);
  if (!status.ok()) return status;
  const std::size_t n = static_cast<std::size_t>(width) * height;
  if (bytes.size() != n * bpp) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", width, " x ", height, " raster of ", bpp, "-byte pixels needs ",
        n * bpp, " bytes, got ", bytes.size()));
  }
  if (values == nullptr && format != RasterFormat::kF32) return status;
  if (values != nullptr) values->resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint8_t* b = &bytes[k * bpp];
    float v = 0;
    switch (format) {
      case RasterFormat::kU8:
        v = static_cast<float>(b[0]) / 255.0f;
        break;
      case RasterFormat::kU16:
        v = static_cast<float>(b[0] | (b[1] << 8)) / 65535.0f;
        break;
      case RasterFormat::kF32: {
        const std::uint32_t bits = static_cast<std::uint32_t>(b[0]) |
                                   (static_cast<std::uint32_t>(b[1]) << 8) |
                                   (static_cast<std::uint32_t>(b[2]) << 16) |
                                   (static_cast<std::uint32_t>(b[3]) << 24);
        std::memcpy(&v, &bits, sizeof v);
        if (std::isnan(v)) {
          return absl::InvalidArgumentError(
              absl::StrCat("pixel ", k % width, ", ", k / width, " is NaN"));
        }
        v = std::clamp(v, 0.0f, 1.0f);
        break;
      }
    }
    if (values != nullptr) (*values)[k] = v;
  }
  return status;
}

}  // namespace

absl::StatusOr<Raster> Raster::FromRaw(RasterFormat format, std::uint32_t width,
                                       std::uint32_t height,
                                       absl::Span<const std::uint8_t> bytes,
                                       const RasterRect& rect,
                                       std::size_t max_bytes) {
  absl::Status status = CheckRect(rect);
  if (!status.ok()) return status;
  std::vector<float> values;
  status = ReadRaw(format, width, height, bytes, max_bytes, &values);
  if (!status.ok()) return status;
  return Raster(width, height, rect, std::move(values));
}

absl::Status Raster::CheckRaw(RasterFormat format, std::uint32_t width,
                              std::uint32_t height,
                              absl::Span<const std::uint8_t> bytes,
                              std::size_t max_bytes) {
  return ReadRaw(format, width, height, bytes, max_bytes, nullptr);
}

namespace {

// An 8- or 16-bit grayscale PNG's pixels at its depth into *pixels, or
// with pixels null read through row by row and kept nowhere (the same
// checks and errors, the memory of one row).
absl::Status ReadPng(absl::Span<const std::uint8_t> bytes,
                     std::size_t max_bytes, std::vector<std::uint8_t>* pixels,
                     png_uint_32* width, png_uint_32* height, int* depth) {
  if (bytes.size() < 8 || png_sig_cmp(bytes.data(), 0, 8) != 0) {
    return absl::InvalidArgumentError("not a PNG file (bad signature)");
  }
  PngState state;
  state.data = bytes;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state,
                                           PngError, PngWarning);
  if (png == nullptr) return absl::InternalError("png_create_read_struct");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return absl::InternalError("png_create_info_struct");
  }
  // Limits before anything is decoded: libpng refuses larger headers and
  // chunks itself.
  png_set_user_limits(png, 1u << 24, 1u << 24);
  png_set_chunk_malloc_max(png, std::max<std::size_t>(max_bytes, 1 << 20));
  png_set_read_fn(png, &state, PngRead);

  int color = 0, passes = 1;
  std::vector<png_bytep> rows;
  absl::Status result;
  if (!ReadPngHeader(png, info, width, height, depth, &color, &passes)) {
    result = absl::InvalidArgumentError(
        absl::StrCat("corrupt or truncated PNG: ", state.message));
  } else if (color != PNG_COLOR_TYPE_GRAY || (*depth != 8 && *depth != 16)) {
    result = absl::InvalidArgumentError(absl::StrCat(
        "a raster PNG must be 8- or 16-bit grayscale, got colour type ", color,
        " at ", *depth, " bits"));
  } else {
    const std::size_t bpp = *depth == 16 ? 2 : 1;
    const std::size_t row_bytes = static_cast<std::size_t>(*width) * bpp;
    result = CheckSize(*width, *height, bpp, max_bytes);
    bool read = true;
    if (result.ok() && pixels != nullptr) {
      pixels->resize(row_bytes * *height);
      rows.resize(*height);
      for (png_uint_32 j = 0; j < *height; ++j) {
        rows[j] = &(*pixels)[static_cast<std::size_t>(j) * row_bytes];
      }
      read = ReadPngRows(png, rows.data());
    } else if (result.ok()) {
      std::vector<std::uint8_t> row(row_bytes);
      read = SkimPngRows(png, *height, passes, row.data());
    }
    if (!read) {
      result = absl::InvalidArgumentError(
          absl::StrCat("corrupt or truncated PNG: ", state.message));
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return result;
}

}  // namespace

absl::StatusOr<Raster> Raster::FromPng(absl::Span<const std::uint8_t> bytes,
                                       const RasterRect& rect,
                                       std::size_t max_bytes) {
  absl::Status status = CheckRect(rect);
  if (!status.ok()) return status;
  png_uint_32 width = 0, height = 0;
  int depth = 0;
  std::vector<std::uint8_t> pixels;
  status = ReadPng(bytes, max_bytes, &pixels, &width, &height, &depth);
  if (!status.ok()) return status;
  std::vector<float> values(static_cast<std::size_t>(width) * height);
  for (std::size_t k = 0; k < values.size(); ++k) {
    values[k] =
        depth == 16
            ? static_cast<float>((pixels[2 * k] << 8) | pixels[2 * k + 1]) /
                  65535.0f
            : static_cast<float>(pixels[k]) / 255.0f;
  }
  return Raster(width, height, rect, std::move(values));
}

absl::Status Raster::CheckPng(absl::Span<const std::uint8_t> bytes,
                              std::size_t max_bytes) {
  png_uint_32 width = 0, height = 0;
  int depth = 0;
  return ReadPng(bytes, max_bytes, nullptr, &width, &height, &depth);
}

void Raster::PixelsUnder(double x0, double y0, double x1, double y1,
                         std::uint32_t* i0, std::uint32_t* j0,
                         std::uint32_t* i1, std::uint32_t* j1) const {
  // Continuous pixel coordinates of the box's corners, clamped as Sample
  // clamps; the pixels around them hold every value in between.
  auto col = [&](double x) {
    const double u = (x - rect_.x0) * to_col_ - 0.5;
    return std::clamp(u, 0.0, width_ - 1.0);
  };
  auto row = [&](double y) {
    const double v = (rect_.y1 - y) * to_row_ - 0.5;
    return std::clamp(v, 0.0, height_ - 1.0);
  };
  *i0 = static_cast<std::uint32_t>(col(x0));
  *i1 = std::min(static_cast<std::uint32_t>(col(x1)) + 1, width_ - 1);
  *j0 = static_cast<std::uint32_t>(row(y1));
  *j1 = std::min(static_cast<std::uint32_t>(row(y0)) + 1, height_ - 1);
}

double Raster::Greatest(double x0, double y0, double x1, double y1) const {
  std::uint32_t i0, j0, i1, j1;
  PixelsUnder(x0, y0, x1, y1, &i0, &j0, &i1, &j1);
  return GreatestOverPixels(i0, j0, i1, j1);
}

double Raster::GreatestOverPixels(std::uint32_t i0, std::uint32_t j0,
                                  std::uint32_t i1, std::uint32_t j1) const {
  // Level k's blocks are 2^k pixels a side; pixel i lies in block i >> k.
  // The first level whose blocks exceed the span: at most 2 x 2 of them
  // (at every Sampler::Create with a density raster, so four reads a cell,
  // not sixteen: the estimate took 15 % of a tiled run).
  const std::vector<BlockLevel>& levels = BlockLevels();
  const std::uint32_t span = std::max(i1 - i0, j1 - j0);
  std::size_t k = 0;
  if (span > 1) {
    while (k < levels.size() && (span >> k) != 0) ++k;
  }
  float greatest = -1;
  for (std::uint32_t j = j0 >> k; j <= j1 >> k; ++j) {
    for (std::uint32_t i = i0 >> k; i <= i1 >> k; ++i) {
      greatest = std::max(
          greatest,
          k == 0 ? Pixel(i, j)
                 : levels[k - 1].hi[std::size_t{j} * levels[k - 1].w + i]);
    }
  }
  return greatest;
}

bool Raster::Bounds(double x0, double y0, double x1, double y1, double* lo,
                    double* hi, std::size_t max_pixels) const {
  std::uint32_t i0, j0, i1, j1;
  PixelsUnder(x0, y0, x1, y1, &i0, &j0, &i1, &j1);
  if (static_cast<std::size_t>(i1 - i0 + 1) * (j1 - j0 + 1) > max_pixels) {
    return false;
  }
  float mn = 2, mx = -1;
  for (std::uint32_t j = j0; j <= j1; ++j) {
    for (std::uint32_t i = i0; i <= i1; ++i) {
      mn = std::min(mn, Pixel(i, j));
      mx = std::max(mx, Pixel(i, j));
    }
  }
  *lo = mn;
  *hi = mx;
  return true;
}

}  // namespace scatter::sampler
