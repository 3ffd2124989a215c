// A --local run out of memory: std::bad_alloc out of the sampler, the tile
// server or the packing ends the run with RESOURCE_EXHAUSTED, as scatterd
// ends a call, so that `scatter` reports it and removes what it made,
// instead of dying of an uncaught exception (exit 134, a half-made output
// directory left behind). This binary replaces the global operator new
// (tests/failing_new.h) so that a test can make one allocation fail.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/local.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scatter/v1/scatter.pb.h"
#include "tests/failing_new.h"

namespace scatter::client {
namespace {

using ::scatter::testing::allocations_before_failure;
using ::scatter::testing::failing_allocation_bytes;
using ::testing::HasSubstr;

// What every --local run out of memory says first, before what to try.
constexpr absl::string_view kOutOfMemory =
    "out of memory (std::bad_alloc): this process could not allocate what the "
    "--local run needs; ";

// A dense layer of spacing 0.5 over [0, side]^2.
v1::ScatterRequest Box(double side) {
  v1::ScatterRequest request;
  request.set_seed(3);
  v1::Box* box = request.mutable_region()->mutable_box();
  for (int a = 0; a < 2; ++a) {
    box->add_min(0);
    box->add_max(side);
  }
  v1::Layer* layer = request.add_layers();
  layer->set_id(1);
  layer->set_spacing(0.5);
  return request;
}

// Tiles 0:3 x 0:2 of a world of spacing 0.5 and tile size 16.
v1::ScatterTilesRequest SixTiles() {
  v1::ScatterTilesRequest request;
  request.set_seed(3);
  request.set_tile_size(16);
  v1::Layer* layer = request.add_layers();
  layer->set_id(1);
  layer->set_spacing(0.5);
  for (int x = 0; x < 3; ++x) {
    for (int y = 0; y < 2; ++y) {
      v1::TileCoord* tile = request.add_tiles();
      tile->set_x(x);
      tile->set_y(y);
    }
  }
  return request;
}

TEST(LocalOutOfMemoryTest, ARunOutOfMemoryEndsWithAStatus) {
  // The first batch arms the failure: the next allocation on this thread,
  // in the sampler or the packing of a later batch, throws.
  int batches = 0;
  const absl::StatusOr<v1::Summary> failed =
      RunLocal(Box(200), [&](const v1::PointBatch&) {
        if (++batches == 1) allocations_before_failure = 0;
        return true;
      });
  allocations_before_failure = -1;
  ASSERT_FALSE(failed.ok()) << "no allocation after the first batch";
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(failed.status().message(),
              HasSubstr(absl::StrCat(kOutOfMemory, "ask for less")));
  EXPECT_GE(batches, 1);

  // The process goes on: the same run, with memory, succeeds.
  const absl::StatusOr<v1::Summary> served =
      RunLocal(Box(200), [](const v1::PointBatch&) { return true; });
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_GT(served->total_points(), 100000u);
}

TEST(LocalOutOfMemoryTest, ATilesRunOutOfMemoryEndsWithAStatus) {
  for (const int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    LocalTilesOptions options;
    options.threads = threads;
    // The first tile arms the failure: the next allocation on this thread,
    // serving or packing a later tile, throws.
    int tiles = 0;
    const absl::StatusOr<v1::TilesSummary> failed =
        RunTilesLocal(SixTiles(), options, [&](const v1::TileResponse&) {
          if (++tiles == 1) allocations_before_failure = 0;
          return true;
        });
    allocations_before_failure = -1;
    ASSERT_FALSE(failed.ok()) << "no allocation after the first tile";
    EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(failed.status().message(),
                HasSubstr(absl::StrCat(kOutOfMemory, "try ")));
    // One thread is not fewer.
    EXPECT_EQ(failed.status().message().find("fewer --threads") ==
                  absl::string_view::npos,
              threads == 1)
        << failed.status().message();

    const absl::StatusOr<v1::TilesSummary> served = RunTilesLocal(
        SixTiles(), options, [](const v1::TileResponse&) { return true; });
    ASSERT_TRUE(served.ok()) << served.status();
    EXPECT_EQ(served->tiles(), 6u);
  }
}

// A density raster of 1500 x 1500 pixels over the box [0, side]^2.
v1::RasterInput Density(double side) {
  v1::RasterInput input;
  v1::RasterData* data = input.mutable_data();
  data->set_format(v1::RASTER_FORMAT_U8);
  data->set_width(1500);
  data->set_height(1500);
  data->set_pixels(std::string(1500 * 1500, '\x80'));
  input.set_x1(side);
  input.set_y1(side);
  return input;
}

// Out of memory before the sampling starts, decoding a raster (a big
// allocation, as those that fail in a process at its limit; small ones
// fail too, but an Abseil hash set that a failed growth leaves behind
// cannot be destroyed, so they are not tried): a status too, so that the
// caller removes what it made (scatter tiles left its output directory).
TEST(LocalOutOfMemoryTest, ARasterTooBigForMemoryEndsWithAStatus) {
  // Made before the failure is armed: the test's own allocations.
  v1::ScatterRequest box = Box(20);
  v1::Layer* layer = box.mutable_layers(0);
  layer->clear_spacing();
  layer->set_radius_min(0.5);
  layer->set_radius_max(1);
  *layer->mutable_density() = Density(20);
  v1::ScatterTilesRequest six = SixTiles();
  *six.mutable_layers(0) = *layer;
  const BatchHandler take_batch = [](const v1::PointBatch&) { return true; };
  const TileHandler take_tile = [](const v1::TileResponse&) { return true; };
  LocalTilesOptions options;
  options.threads = 1;
  // The first allocation of a megabyte or more: the decoded pixels.
  failing_allocation_bytes = std::size_t{1} << 20;
  allocations_before_failure = 0;
  const absl::StatusOr<v1::Summary> run = RunLocal(box, take_batch);
  allocations_before_failure = 0;
  const absl::StatusOr<v1::TilesSummary> tiles =
      RunTilesLocal(six, options, take_tile);
  allocations_before_failure = -1;
  failing_allocation_bytes = 0;
  EXPECT_EQ(run.status().code(), absl::StatusCode::kResourceExhausted)
      << run.status();
  EXPECT_EQ(tiles.status().code(), absl::StatusCode::kResourceExhausted)
      << tiles.status();

  // With the memory, both run.
  EXPECT_TRUE(RunLocal(box, take_batch).ok());
  EXPECT_TRUE(RunTilesLocal(six, options, take_tile).ok());
}

}  // namespace
}  // namespace scatter::client
