#include "sampler/raster.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/rng.h"
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
  // A rectangle whose extent or pixels per unit is not a finite number:
  // sampling it would give NaN, or cast inf to an index.
  for (const RasterRect& rect : {RasterRect{0, 0, 1e-310, 1},
                                 RasterRect{-1.7e308, 0, 1.7e308, 1}}) {
    const absl::Status status =
        Raster::FromRaw(RasterFormat::kU8, 2, 2, four, rect, kLimit).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("rect must be wider and taller than"),
              std::string::npos)
        << status;
  }
  // The least extent allowed still samples to numbers.
  auto narrow = Raster::FromRaw(RasterFormat::kU8, 2, 2, four,
                                {0, 0, 1e-280, 1}, kLimit);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_TRUE(std::isfinite(narrow->Sample(5e-281, 0.5)));
  EXPECT_TRUE(std::isfinite(narrow->Sample(1e300, 0.5)));
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

// CheckPng and CheckRaw say what FromPng and FromRaw would, keeping no
// pixels: interlaced files too (read row by row, every pass).
TEST(RasterTest, ChecksAnswerAsDecodingWould) {
  std::vector<std::uint16_t> values(37 * 23);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = (k * 7) % 256;
  const std::vector<std::uint8_t> plain =
      EncodePng(37, 23, 8, PNG_COLOR_TYPE_GRAY, values);
  const std::vector<std::uint8_t> interlaced =
      EncodePng(37, 23, 8, PNG_COLOR_TYPE_GRAY, values, PNG_INTERLACE_ADAM7);
  ASSERT_NE(plain, interlaced);
  absl::StatusOr<Raster> a = Raster::FromPng(plain, kUnit, kLimit);
  absl::StatusOr<Raster> b = Raster::FromPng(interlaced, kUnit, kLimit);
  ASSERT_TRUE(a.ok() && b.ok());
  for (std::uint32_t k = 0; k < 37 * 23; ++k) {
    EXPECT_EQ(a->Pixel(k % 37, k / 37), b->Pixel(k % 37, k / 37)) << k;
  }
  std::vector<std::vector<std::uint8_t>> pngs = {plain, interlaced};
  for (const auto& png : std::vector<std::vector<std::uint8_t>>(pngs)) {
    pngs.emplace_back(png.begin(), png.end() - 30);  // Cut in the pixels.
    pngs.emplace_back(png.begin(), png.begin() + 40);
  }
  pngs.push_back(
      EncodePng(4, 4, 8, PNG_COLOR_TYPE_RGB, std::vector<std::uint16_t>(16)));
  for (std::size_t i = 0; i < pngs.size(); ++i) {
    for (const std::size_t limit : {kLimit, std::size_t{100}}) {
      const absl::Status decoded =
          Raster::FromPng(pngs[i], kUnit, limit).status();
      EXPECT_EQ(Raster::CheckPng(pngs[i], limit), decoded) << i << " " << limit;
      if (i < 2 && limit == kLimit) {
        EXPECT_TRUE(decoded.ok()) << i;
      }
      if (i >= 2) {
        EXPECT_FALSE(decoded.ok()) << i;
      }
    }
  }
  std::vector<std::uint8_t> f32(4 * 6, 0);
  const float nan = std::nanf("");
  std::memcpy(&f32[4 * 5], &nan, 4);
  for (const auto& [format, width, height, bytes] :
       {std::tuple{RasterFormat::kU8, 3u, 2u, std::vector<std::uint8_t>(6)},
        std::tuple{RasterFormat::kU8, 3u, 2u, std::vector<std::uint8_t>(5)},
        std::tuple{RasterFormat::kU16, 3u, 1u, std::vector<std::uint8_t>(6)},
        std::tuple{RasterFormat::kF32, 3u, 2u, f32},
        std::tuple{RasterFormat::kF32, 3u, 1u,
                   std::vector<std::uint8_t>(f32.begin(), f32.begin() + 12)}}) {
    EXPECT_EQ(
        Raster::CheckRaw(format, width, height, bytes, kLimit),
        Raster::FromRaw(format, width, height, bytes, kUnit, kLimit).status());
  }
  EXPECT_EQ(Raster::CheckRaw(RasterFormat::kF32, 3, 2, f32, kLimit).message(),
            "pixel 2, 1 is NaN");
}

TEST(RasterTest, BlockLevelsHoldEachBlocksLeastAndGreatestPixel) {
  // Odd sizes, so the last block of a row or column is partial.
  constexpr std::uint32_t kW = 37, kH = 21;
  std::vector<std::uint8_t> bytes(kW * kH);
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    bytes[k] = static_cast<std::uint8_t>((k * 7919 + 13) % 251);
  }
  absl::StatusOr<Raster> r =
      Raster::FromRaw(RasterFormat::kU8, kW, kH, bytes, kUnit, kLimit);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<Raster::BlockLevel>& levels = r->BlockLevels();
  // 37 x 21 -> 19 x 11 -> 10 x 6 -> 5 x 3 -> 3 x 2 -> 2 x 1 -> 1 x 1.
  ASSERT_EQ(levels.size(), 6u);
  std::size_t bytes_held = 0;
  for (std::size_t l = 0; l < levels.size(); ++l) {
    const Raster::BlockLevel& level = levels[l];
    const std::uint32_t side = 2u << l;  // Pixels per block side.
    ASSERT_EQ(level.w, (kW + side - 1) / side) << "level " << l + 1;
    ASSERT_EQ(level.h, (kH + side - 1) / side) << "level " << l + 1;
    bytes_held += (level.lo.size() + level.hi.size()) * sizeof(float);
    for (std::uint32_t bj = 0; bj < level.h; ++bj) {
      for (std::uint32_t bi = 0; bi < level.w; ++bi) {
        float lo = 2, hi = -1;
        for (std::uint32_t j = bj * side; j < std::min(kH, (bj + 1) * side);
             ++j) {
          for (std::uint32_t i = bi * side; i < std::min(kW, (bi + 1) * side);
               ++i) {
            lo = std::min(lo, r->Pixel(i, j));
            hi = std::max(hi, r->Pixel(i, j));
          }
        }
        EXPECT_EQ(level.lo[bj * level.w + bi], lo) << l << " " << bi << bj;
        EXPECT_EQ(level.hi[bj * level.w + bi], hi) << l << " " << bi << bj;
      }
    }
  }
  EXPECT_EQ(Raster::BlockLevelsBytes(kW, kH), bytes_held);
}

// Greatest bounds Sample() over a box from above, and never by more than
// the blocks that cover the box's pixels hold: one bright pixel in a dark
// 300 x 200 raster is seen by the boxes that reach it and by none whose
// blocks (2 x 2 at most, wider than the box's span) miss it.
TEST(RasterTest, GreatestHoldsEverySampleOfTheBoxFromAbove) {
  constexpr std::uint32_t kW = 300, kH = 200;
  std::vector<std::uint8_t> bytes(kW * kH, 0);
  bytes[120 * kW + 170] = 255;  // Column 170, row 120 from the top.
  const RasterRect rect{0, 0, 300, 200};
  absl::StatusOr<Raster> r =
      Raster::FromRaw(RasterFormat::kU8, kW, kH, bytes, rect, kLimit);
  ASSERT_TRUE(r.ok()) << r.status();
  // The pixel's centre is at (170.5, 200 - 120.5).
  EXPECT_EQ(r->Greatest(170, 79, 171, 80), 1);
  EXPECT_EQ(r->Greatest(0, 0, 300, 200), 1);
  EXPECT_EQ(r->Greatest(100.2, 60.7, 180.9, 140.1), 1);
  EXPECT_EQ(r->Greatest(0, 0, 100, 40), 0);
  EXPECT_EQ(r->Greatest(260, 0, 300, 40), 0);
  // Random boxes: at least every sample in them.
  CounterRng rng(5);
  for (int k = 0; k < 2000; ++k) {
    const double x0 = rng.Uniform01() * 300, y0 = rng.Uniform01() * 200;
    const double x1 = x0 + rng.Uniform01() * 40, y1 = y0 + rng.Uniform01() * 40;
    const double greatest = r->Greatest(x0, y0, x1, y1);
    for (int s = 0; s < 20; ++s) {
      const double x = x0 + rng.Uniform01() * (x1 - x0);
      const double y = y0 + rng.Uniform01() * (y1 - y0);
      ASSERT_LE(r->Sample(x, y), greatest) << x << " " << y;
    }
  }
}

// Over a raster of noise, boxes narrower than a pixel at every offset
// within one: Bounds and Greatest hold every sample of the box. A column
// or row missed at the box's edge (PixelsUnder without the half-pixel
// offset of the centres) passed the single-pixel test above; here every
// neighbour differs.
TEST(RasterTest, BoundsHoldEverySampleOfBoxesSmallerThanAPixel) {
  constexpr std::uint32_t kW = 40, kH = 30;
  CounterRng rng(11);
  std::vector<std::uint8_t> bytes(kW * kH);
  for (std::uint8_t& b : bytes) {
    b = static_cast<std::uint8_t>(rng.Uniform01() * 256);
  }
  absl::StatusOr<Raster> r =
      Raster::FromRaw(RasterFormat::kU8, kW, kH, bytes, {0, 0, 40, 30}, kLimit);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int k = 0; k < 4000; ++k) {
    const double x0 = rng.Uniform01() * 39, y0 = rng.Uniform01() * 29;
    const double x1 = x0 + rng.Uniform01() * 0.9;
    const double y1 = y0 + rng.Uniform01() * 0.9;
    double lo = 0, hi = 0;
    ASSERT_TRUE(r->Bounds(x0, y0, x1, y1, &lo, &hi));
    const double greatest = r->Greatest(x0, y0, x1, y1);
    for (int s = 0; s < 16; ++s) {
      const double x = x0 + (s % 4) / 3.0 * (x1 - x0);
      const double y = y0 + (s / 4) / 3.0 * (y1 - y0);
      const double v = r->Sample(x, y);
      ASSERT_GE(v, lo) << x << " " << y;
      ASSERT_LE(v, hi) << x << " " << y;
      ASSERT_LE(v, greatest) << x << " " << y;
    }
  }
}

TEST(RasterTest, PatchBoundsHoldEverySampleOfTheBoxAndAreTight) {
  // Random pixels with sharp jumps, over a rectangle that does not start at
  // the origin, and boxes from a thousandth of a pixel to three pixels
  // wide, some reaching past the rectangle (where the edge continues).
  constexpr std::uint32_t kW = 23, kH = 17;
  std::vector<std::uint8_t> bytes(kW * kH);
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    bytes[k] = static_cast<std::uint8_t>(
        (k * 2654435761u >> 7) % 3 == 0 ? 255 : (k * 37) % 200);
  }
  const RasterRect rect = {-3, 2, 8.5, 10.5};  // Pixels 0.5 wide.
  absl::StatusOr<Raster> r =
      Raster::FromRaw(RasterFormat::kU8, kW, kH, bytes, rect, kLimit);
  ASSERT_TRUE(r.ok()) << r.status();
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto uniform = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  int bounded = 0, refused = 0, tight = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const double side = 0.5 * std::pow(10.0, -3 + 3.5 * uniform());
    const double x0 = -4 + 14 * uniform(), y0 = 1 + 11 * uniform();
    const double x1 = x0 + side * (0.2 + uniform()), y1 = y0 + side;
    double lo = 0, hi = 0;
    if (!r->PatchBounds(x0, y0, x1, y1, &lo, &hi)) {
      ++refused;
      // Refused only for a box over more than 2 x 2 patches: wider than
      // a pixel along some axis.
      EXPECT_GT(std::max(x1 - x0, y1 - y0), 0.5) << trial;
      continue;
    }
    ++bounded;
    double seen_lo = 2, seen_hi = -1;
    for (int k = 0; k < 200; ++k) {
      const double v =
          r->Sample(x0 + (x1 - x0) * uniform(), y0 + (y1 - y0) * uniform());
      seen_lo = std::min(seen_lo, v);
      seen_hi = std::max(seen_hi, v);
      ASSERT_GE(v, lo) << "trial " << trial;
      ASSERT_LE(v, hi) << "trial " << trial;
    }
    // The corners are samples too, so the bounds are exact but for the
    // slack.
    EXPECT_LE(lo, seen_lo);
    tight += hi - lo < 0.1 && side < 0.005;
  }
  EXPECT_GT(bounded, 2000);
  EXPECT_GT(refused, 200);
  // Boxes a hundredth of a pixel wide mostly see a narrow range, where the
  // pixels' bounds over the same box span up to 0 to 1.
  EXPECT_GT(tight, 200);
}

TEST(RasterTest, CopiesAndViewsShareOneBuildOfTheBlockLevels) {
  const std::vector<std::uint8_t> bytes(64 * 64, 9);
  absl::StatusOr<Raster> r =
      Raster::FromRaw(RasterFormat::kU8, 64, 64, bytes, kUnit, kLimit);
  ASSERT_TRUE(r.ok()) << r.status();
  const Raster copy = *r;
  absl::StatusOr<Raster> view = r->WithRect({10, 10, 20, 30});
  ASSERT_TRUE(view.ok()) << view.status();
  const std::vector<Raster::BlockLevel>* first = &copy.BlockLevels();
  EXPECT_EQ(&r->BlockLevels(), first);
  EXPECT_EQ(&view->BlockLevels(), first);
  // A 1 x 1 raster has no level above its pixel.
  absl::StatusOr<Raster> one =
      Raster::FromRaw(RasterFormat::kU8, 1, 1,
                      absl::MakeConstSpan(bytes.data(), 1), kUnit, kLimit);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(one->BlockLevels().empty());
  EXPECT_EQ(Raster::BlockLevelsBytes(1, 1), 0u);
}

}  // namespace
}  // namespace scatter::sampler
