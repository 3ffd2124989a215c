#ifndef SCATTER_TESTS_SAMPLER_PNG_ENCODE_H_
#define SCATTER_TESTS_SAMPLER_PNG_ENCODE_H_

// Test rasters as PNG files, written with libpng (raster and service tests).

#include <png.h>

#include <cstdint>
#include <vector>

namespace scatter::test {

// An in-memory PNG of the given pixels (row-major from the top), written
// with libpng: gray at 8 or 16 bits, or RGB at 8 for the wrong-type case;
// interlaced (Adam7) on request.
inline std::vector<std::uint8_t> EncodePng(
    std::uint32_t width, std::uint32_t height, int depth, int color,
    const std::vector<std::uint16_t>& values,
    int interlace = PNG_INTERLACE_NONE) {
  std::vector<std::uint8_t> out;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, png_size_t n) {
        auto* v = static_cast<std::vector<std::uint8_t>*>(png_get_io_ptr(p));
        v->insert(v->end(), data, data + n);
      },
      nullptr);
  png_set_IHDR(png, info, width, height, depth, color, interlace,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  // Every row once a pass; libpng takes each pass's pixels from it.
  const int passes =
      interlace == PNG_INTERLACE_NONE ? 1 : png_set_interlace_handling(png);
  const int channels = color == PNG_COLOR_TYPE_RGB ? 3 : 1;
  const int bytes = depth / 8;
  std::vector<std::uint8_t> row(width * channels * bytes);
  for (std::uint32_t k = 0; k < passes * height; ++k) {
    const std::uint32_t j = k % height;
    for (std::uint32_t i = 0; i < width; ++i) {
      const std::uint16_t v = values[j * width + i];
      for (int c = 0; c < channels; ++c) {
        std::uint8_t* px = &row[(i * channels + c) * bytes];
        if (bytes == 2) {
          px[0] = static_cast<std::uint8_t>(v >> 8);  // PNG is big-endian.
          px[1] = static_cast<std::uint8_t>(v & 0xff);
        } else {
          px[0] = static_cast<std::uint8_t>(v);
        }
      }
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

}  // namespace scatter::test

#endif  // SCATTER_TESTS_SAMPLER_PNG_ENCODE_H_
