#include "sampler/raster.h"

#include <png.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/sampler/png_encode.h"

namespace scatter::sampler {
namespace {

using test::EncodePng;

constexpr std::size_t kLimit = 1 << 20;
const RasterRect kUnit = {0, 0, 1, 1};

TEST(RasterTest, RawU8PixelsSampleAtTheirCentres) {
  // 2 x 2, top row first: 0 64 / 128 255.
  const std::vector<std::uint8_t> bytes = {0, 64, 128, 255};
  absl::StatusOr<Raster> r =
      Raster::FromRaw(RasterFormat::kU8, 2, 2, bytes, kUnit, kLimit);
  ASSERT_TRUE(r.ok()) << r.status();
  // Pixel (0, 0) is top-left: centre (0.25, 0.75).
  EXPECT_NEAR(r->Sample(0.25, 0.75), 0.0f, 1e-7);
  EXPECT_NEAR(r->Sample(0.75, 0.75), 64 / 255.0f, 1e-7);
  EXPECT_NEAR(r->Sample(0.25, 0.25), 128 / 255.0f, 1e-7);
  EXPECT_NEAR(r->Sample(0.75, 0.25), 1.0f, 1e-7);
  // Bilinear in between, and the edge value continues outside.
  EXPECT_NEAR(r->Sample(0.5, 0.5), (0 + 64 + 128 + 255) / 4.0 / 255, 1e-6);
  EXPECT_NEAR(r->Sample(-5, 10), 0.0f, 1e-7);
  EXPECT_NEAR(r->Sample(5, -10), 1.0f, 1e-7);
  EXPECT_TRUE(r->Covers(0.5, 0.5));
  EXPECT_FALSE(r->Covers(1.5, 0.5));
}

TEST(RasterTest, RawU16AndF32Normalise) {
  const std::vector<std::uint8_t> u16 = {0xff, 0xff, 0x00, 0x80};  // LE.
  absl::StatusOr<Raster> a =
      Raster::FromRaw(RasterFormat::kU16, 2, 1, u16, kUnit, kLimit);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FLOAT_EQ(a->Pixel(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(a->Pixel(1, 0), 32768 / 65535.0f);
  std::vector<std::uint8_t> f32(8);
  const float values[2] = {0.25f, 7.0f};  // 7 clamps to 1.
  std::memcpy(f32.data(), values, 8);     // Little-endian here.
  absl::StatusOr<Raster> b =
      Raster::FromRaw(RasterFormat::kF32, 2, 1, f32, kUnit, kLimit);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FLOAT_EQ(b->Pixel(0, 0), 0.25f);
  EXPECT_FLOAT_EQ(b->Pixel(1, 0), 1.0f);
}

TEST(RasterTest, BadRawInputsGiveTheRightCode) {
  const std::vector<std::uint8_t> four = {1, 2, 3, 4};
  EXPECT_EQ(Raster::FromRaw(RasterFormat::kU8, 3, 2, four, kUnit, kLimit)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);  // 6 bytes needed.
  EXPECT_EQ(Raster::FromRaw(RasterFormat::kU8, 0, 4, {}, kUnit, kLimit)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Raster::FromRaw(RasterFormat::kU8, 2, 2, four, {1, 0, 0, 1}, kLimit)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);  // Inverted rectangle.
  EXPECT_EQ(
      Raster::FromRaw(RasterFormat::kU8, 2, 2, four, kUnit, 3).status().code(),
      absl::StatusCode::kResourceExhausted);
  // Huge dimensions are refused before any allocation or overflow.
  EXPECT_EQ(Raster::FromRaw(RasterFormat::kF32, 0xffffffffu, 0xffffffffu, four,
                            kUnit, kLimit)
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
  std::vector<std::uint8_t> nan(4);
  const float n = std::nanf("");
  std::memcpy(nan.data(), &n, 4);
  EXPECT_EQ(Raster::FromRaw(RasterFormat::kF32, 1, 1, nan, kUnit, kLimit)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RasterTest, PngGrayRoundTripsAt8And16Bits) {
  const std::vector<std::uint16_t> v8 = {0, 10, 200, 255, 128, 7};
  absl::StatusOr<Raster> a = Raster::FromPng(
      EncodePng(3, 2, 8, PNG_COLOR_TYPE_GRAY, v8), kUnit, kLimit);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->width(), 3u);
  ASSERT_EQ(a->height(), 2u);
  for (std::uint32_t k = 0; k < 6; ++k) {
    EXPECT_FLOAT_EQ(a->Pixel(k % 3, k / 3), v8[k] / 255.0f);
  }
  const std::vector<std::uint16_t> v16 = {0, 1, 65535, 40000};
  absl::StatusOr<Raster> b = Raster::FromPng(
      EncodePng(2, 2, 16, PNG_COLOR_TYPE_GRAY, v16), kUnit, kLimit);
  ASSERT_TRUE(b.ok()) << b.status();
  for (std::uint32_t k = 0; k < 4; ++k) {
    EXPECT_FLOAT_EQ(b->Pixel(k % 2, k / 2), v16[k] / 65535.0f);
  }
}

TEST(RasterTest, BadPngsGiveTheRightCode) {
  const std::vector<std::uint16_t> values(64 * 64, 100);
  const std::vector<std::uint8_t> good =
      EncodePng(64, 64, 8, PNG_COLOR_TYPE_GRAY, values);
  // Truncated in the pixel data.
  std::vector<std::uint8_t> cut(good.begin(), good.begin() + good.size() / 2);
  absl::StatusOr<Raster> truncated = Raster::FromPng(cut, kUnit, kLimit);
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos)
      << truncated.status();
  // Corrupt: the signature survives, the rest is garbage.
  std::vector<std::uint8_t> corrupt(good.begin(), good.begin() + 8);
  corrupt.resize(200, 0x5a);
  EXPECT_EQ(Raster::FromPng(corrupt, kUnit, kLimit).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Not a PNG at all.
  const std::vector<std::uint8_t> text = {'h', 'e', 'l', 'l',
                                          'o', '!', '!', '!'};
  EXPECT_EQ(Raster::FromPng(text, kUnit, kLimit).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Colour instead of gray.
  EXPECT_EQ(Raster::FromPng(EncodePng(4, 4, 8, PNG_COLOR_TYPE_RGB,
                                      std::vector<std::uint16_t>(16, 1)),
                            kUnit, kLimit)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Over the byte limit: refused after the header, before the pixels.
  EXPECT_EQ(Raster::FromPng(good, kUnit, 64 * 64 - 1).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace scatter::sampler
