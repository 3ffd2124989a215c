// ScatterTiles end to end over an in-process channel: parts, bounds, the
// same points as sampler::TileWorld::Serve in this process, errors with
// their codes and field paths, the world cache key, and cancellation.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/tiles.h"
#include "sampler/version.h"
#include "server/convert.h"
#include "tests/server/service_test_util.h"

namespace scatter::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kSlowdown = SCATTER_TEST_SLOWDOWN;
constexpr double kTile = 16;

// Two layers with R = 1 (the spacing of layer 1) on the unbounded plane:
// small enough for sanitizer builds.
v1::ScatterTilesRequest World() {
  v1::ScatterTilesRequest request;
  request.set_seed(17);
  request.set_tile_size(kTile);
  v1::Layer* big = request.add_layers();
  big->set_id(1);
  big->set_spacing(1);
  big->set_footprint(0.3);
  v1::Layer* small = request.add_layers();
  small->set_id(2);
  small->set_spacing(0.5);
  small->set_footprint(0.2);
  return request;
}

v1::ScatterTilesRequest Rect(v1::ScatterTilesRequest request, std::int64_t x0,
                             std::int64_t x1, std::int64_t y0,
                             std::int64_t y1) {
  v1::TileRange* rect = request.mutable_rect();
  rect->set_x0(x0);
  rect->set_x1(x1);
  rect->set_y0(y0);
  rect->set_y1(y1);
  return request;
}

// One tile as received: its parts concatenated.
struct Tile {
  sampler::TileCoord coord;
  std::vector<std::uint32_t> parts;  // Part numbers in arrival order.
  int last_parts = 0;
  int dims = 0;
  std::vector<double> coords, radius, yaw, scale;
  std::vector<std::uint32_t> layer;
  std::vector<std::uint64_t> id;
};

struct TilesReceived {
  grpc::Status status;
  std::vector<Tile> tiles;  // In arrival order.
  std::size_t messages = 0;
  bool has_summary = false;
  v1::TilesSummary summary;
};

TilesReceived CollectTiles(v1::ScatterService::Stub& stub,
                           const v1::ScatterTilesRequest& request) {
  grpc::ClientContext context;
  TilesReceived out;
  auto reader = stub.ScatterTiles(&context, request);
  v1::TileResponse response;
  while (reader->Read(&response)) {
    ++out.messages;
    if (response.has_summary()) {
      EXPECT_FALSE(out.has_summary) << "two summaries";
      out.has_summary = true;
      out.summary = response.summary();
      continue;
    }
    EXPECT_FALSE(out.has_summary) << "a part after the summary";
    const sampler::TileCoord coord{response.tile().x(), response.tile().y()};
    // A tile's parts come one after the other: a new tile starts at part 0.
    if (response.part() == 0)
      out.tiles.push_back(Tile{coord, {}, 0, 0, {}, {}, {}, {}, {}, {}});
    if (out.tiles.empty()) {
      ADD_FAILURE() << "the stream starts with part " << response.part();
      break;
    }
    Tile& tile = out.tiles.back();
    EXPECT_EQ(tile.coord, coord) << "parts of two tiles interleave";
    EXPECT_EQ(tile.last_parts, 0) << "a part after the last part";
    tile.parts.push_back(response.part());
    tile.last_parts += response.last_part() ? 1 : 0;
    const v1::PointBatch& p = response.points();
    tile.dims = static_cast<int>(p.dims());
    tile.coords.insert(tile.coords.end(), p.coords().begin(), p.coords().end());
    tile.radius.insert(tile.radius.end(), p.radius().begin(), p.radius().end());
    tile.layer.insert(tile.layer.end(), p.layer().begin(), p.layer().end());
    tile.id.insert(tile.id.end(), p.id().begin(), p.id().end());
    tile.yaw.insert(tile.yaw.end(), p.yaw().begin(), p.yaw().end());
    tile.scale.insert(tile.scale.end(), p.scale().begin(), p.scale().end());
  }
  out.status = reader->Finish();
  return out;
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The tiles served by TileWorld::Serve in this process, with a cache and a
// pool of its own.
std::vector<sampler::TilePoints> ServeHere(
    const v1::ScatterTilesRequest& request) {
  RasterCache rasters(std::size_t{1} << 30);
  absl::StatusOr<TilesJob> job = ToTilesJob(request, Limits(), rasters);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return {};
  auto world = sampler::TileWorld::Create(job->world);
  EXPECT_TRUE(world.ok()) << world.status();
  if (!world.ok()) return {};
  sampler::GeneratorCache cache(std::size_t{256} << 20);
  sampler::ThreadPool pool(1);
  std::vector<sampler::TilePoints> tiles;
  const absl::Status served = (*world)->Serve(
      job->tiles, &cache, &pool,
      [&](const sampler::TilePoints& t) {
        tiles.push_back(t);
        return true;
      },
      [] { return false; });
  EXPECT_TRUE(served.ok()) << served;
  return tiles;
}

TEST(TilesServiceTest, TilesArriveInPartsInsideTheirBoundsAsServedLocally) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  v1::ScatterTilesRequest request = Rect(World(), -2, 2, -1, 2);
  request.set_batch_size(100);  // Several parts per tile.
  const TilesReceived got = CollectTiles(*stub, request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_EQ(got.tiles.size(), 12u);
  ASSERT_TRUE(got.has_summary);
  EXPECT_EQ(got.summary.tiles(), 12u);
  EXPECT_EQ(got.summary.algorithm_version(), sampler::kAlgorithmVersion);
  EXPECT_EQ(got.summary.tile_size(), kTile);
  EXPECT_GT(got.summary.generators_computed(), 12u);

  const std::vector<sampler::TilePoints> here = ServeHere(request);
  ASSERT_EQ(here.size(), got.tiles.size());
  std::uint64_t total = 0;
  std::map<std::uint32_t, std::uint64_t> per_layer;
  for (std::size_t k = 0; k < got.tiles.size(); ++k) {
    const Tile& tile = got.tiles[k];
    SCOPED_TRACE(absl::StrCat("tile ", tile.coord.x, ", ", tile.coord.y));
    // Row by row: y, then x.
    EXPECT_EQ(tile.coord,
              (sampler::TileCoord{-2 + static_cast<std::int64_t>(k % 4),
                                  -1 + static_cast<std::int64_t>(k / 4)}));
    EXPECT_EQ(tile.last_parts, 1);
    for (std::size_t i = 0; i < tile.parts.size(); ++i)
      EXPECT_EQ(tile.parts[i], i);
    const std::size_t n = tile.id.size();
    EXPECT_GT(n, 100u);
    EXPECT_EQ(tile.parts.size(), (n + 99) / 100);
    ASSERT_EQ(tile.dims, 2);
    const double x0 = static_cast<double>(tile.coord.x) * kTile;
    const double y0 = static_cast<double>(tile.coord.y) * kTile;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = tile.coords[2 * i], y = tile.coords[2 * i + 1];
      ASSERT_TRUE(x >= x0 && x < x0 + kTile && y >= y0 && y < y0 + kTile)
          << "point " << i << " at " << x << ", " << y;
    }
    total += n;
    for (std::uint32_t layer : tile.layer) ++per_layer[layer];

    const sampler::GeneratedPoints& want = here[k].points;
    EXPECT_EQ(here[k].tile, tile.coord);
    EXPECT_TRUE(SameBits(tile.coords, want.coords));
    EXPECT_TRUE(SameBits(tile.radius, want.radius));
    EXPECT_TRUE(SameBits(tile.layer, want.layer));
    EXPECT_TRUE(SameBits(tile.id, want.id));
    EXPECT_TRUE(SameBits(tile.yaw, want.yaw));
    EXPECT_TRUE(SameBits(tile.scale, want.scale));
  }
  EXPECT_EQ(got.summary.total_points(), total);
  ASSERT_EQ(got.summary.layers_size(), 2);
  EXPECT_EQ(got.summary.layers(0).layer(), 1u);  // Placement order.
  for (const v1::LayerCount& count : got.summary.layers()) {
    EXPECT_EQ(count.points(), per_layer[count.layer()]);
  }
  EXPECT_THAT(server.log(), HasSubstr("ScatterTiles peer="));
  EXPECT_THAT(server.log(), HasSubstr("tiles=12/12"));
}

TEST(TilesServiceTest, ListInAnyOrderGivesTheSameTilesAndTheCacheIsReused) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  const TilesReceived block = CollectTiles(*stub, Rect(World(), 0, 3, 0, 2));
  ASSERT_TRUE(block.status.ok()) << block.status.error_message();
  v1::ScatterTilesRequest list = World();
  // Backwards, with a repeat, and a bigger batch: the same tiles.
  for (auto [x, y] : {std::pair{2, 1}, {0, 0}, {1, 1}, {0, 0}}) {
    v1::TileCoord* t = list.add_tiles();
    t->set_x(x);
    t->set_y(y);
  }
  list.set_batch_size(5000);
  const TilesReceived again = CollectTiles(*stub, list);
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  ASSERT_EQ(again.tiles.size(), 4u);
  EXPECT_EQ(again.summary.generators_computed(), 0u) << "the cache holds them";
  for (const Tile& tile : again.tiles) {
    const Tile& same =
        block.tiles[static_cast<std::size_t>(tile.coord.y * 3 + tile.coord.x)];
    ASSERT_EQ(same.coord, tile.coord);
    EXPECT_TRUE(SameBits(tile.coords, same.coords));
    EXPECT_TRUE(SameBits(tile.id, same.id));
  }
}

// Every pool thread may run a generator at once: the call holds one
// generator's estimate per thread from the start, and a budget below that
// refuses it. Then it holds the generators it keeps alive, by their bytes
// as they are made: a budget with no room for them refuses the call as
// soon as they would pass it.
TEST(TilesServiceTest,
     MemoryBudgetCountsAGeneratorPerThreadAndTheGeneratorsHeld) {
  const v1::ScatterTilesRequest request = Rect(World(), 0, 2, 0, 2);
  RasterCache cache(1 << 20);
  absl::StatusOr<TilesJob> job = ToTilesJob(request, Limits(), cache);
  ASSERT_TRUE(job.ok()) << job.status();
  auto world = sampler::TileWorld::Create(job->world);
  ASSERT_TRUE(world.ok()) << world.status();
  const double generator = GeneratorBytes(*job, **world);
  // Tiles of 16 grown by 5 on each side: a dense grid over 26 x 26.
  EXPECT_GT(generator, 26 * 26 / (0.5 * 0.5 / 2) * 8);
  EXPECT_LT(generator, 1e6);
  // A generator is one layer's: the larger layer's bytes, not both
  // layers' together.
  const sampler::Box area = (*world)->WidestGeneratorArea();
  EXPECT_EQ(
      generator,
      std::max(sampler::MostRunBytes(area, job->world.layers[0].options),
               sampler::MostRunBytes(area, job->world.layers[1].options)));
  // What serving these tiles keeps alive at once, here.
  sampler::GeneratorCache generators(std::size_t{512} << 20);
  sampler::ThreadPool pool(2);
  ASSERT_TRUE((*world)
                  ->Serve(
                      job->tiles, &generators, &pool,
                      [](const sampler::TilePoints&) { return true; },
                      [] { return false; })
                  .ok());
  const double held = static_cast<double>((*world)->peak_held_bytes());
  EXPECT_GT(held, generator);

  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.threads = 2;  // The pool: 1 worker and the handler.
  options.service.memory_budget_bytes =
      static_cast<std::uint64_t>(1.5 * generator);
  {
    LoopbackServer server(options);
    const TilesReceived got = CollectTiles(*server.TcpStub(), request);
    EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(got.status.error_message(),
                HasSubstr(absl::StrCat(
                    "the tiles would hold about ",
                    static_cast<std::uint64_t>(2 * generator),
                    " bytes of sampling memory, over the limit "
                    "memory_budget_bytes")));
    EXPECT_TRUE(got.tiles.empty());
  }
  options.service.memory_budget_bytes =
      static_cast<std::uint64_t>(2 * generator + 1000);
  {
    LoopbackServer server(options);
    const TilesReceived got = CollectTiles(*server.TcpStub(), request);
    EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(got.status.error_message(),
                HasSubstr("tile (0, 0): the tiles would hold about "));
    EXPECT_THAT(got.status.error_message(),
                HasSubstr(" of tile generators kept alive), over the limit "
                          "memory_budget_bytes = "));
    EXPECT_THAT(got.status.error_message(),
                HasSubstr("(after 0 tiles (0 points) sent)"));
    EXPECT_TRUE(got.tiles.empty());
  }
  // Room for both (what a pool of two held here, and as much again for
  // the threads finishing in another order): served.
  options.service.memory_budget_bytes =
      static_cast<std::uint64_t>(2 * generator + 2 * held);
  {
    LoopbackServer server(options);
    const TilesReceived got = CollectTiles(*server.TcpStub(), request);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_EQ(got.tiles.size(), 4u);
    EXPECT_THAT(server.log(), HasSubstr(" held_bytes="));
  }
  // The same tiles in a request of 10 000 far obstacles, whose message
  // the call holds too, and a budget with room for the message and the
  // sampling memory but not the generators as well: over the limit, on a
  // server running nothing else. (It said "other running calls hold" the
  // call's own message, and "retry later", which could never pass.)
  v1::ScatterTilesRequest padded = request;
  for (int i = 0; i < 10000; ++i) {
    v1::Obstacle* obstacle = padded.add_obstacles();
    obstacle->set_x(1e5 + i);
    obstacle->set_y(1e5);
    obstacle->set_radius(0.1);
  }
  // What the call holds for its message (HoldMessage).
  const double message_bytes =
      static_cast<double>(padded.ByteSizeLong()) +
      padded.obstacles_size() * (kParsedObstacleBytes + kObstacleBytes);
  options.service.memory_budget_bytes =
      static_cast<std::uint64_t>(2 * generator + message_bytes + 1000);
  LoopbackServer server(options);
  const TilesReceived got = CollectTiles(*server.TcpStub(), padded);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(got.status.error_message(),
              HasSubstr(" of its request message, over the limit "
                        "memory_budget_bytes = "));
  EXPECT_THAT(got.status.error_message(), Not(HasSubstr("retry later")));
}

// A tile whose generators cannot be alive at once within tile_cache_bytes
// is refused naming the flag, as soon as they would pass it: not after
// every one is made (a cold tile of these two layers needs well over a
// hundred).
TEST(TilesServiceTest, ATileCacheTooSmallForOneTileIsRefusedEarly) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.tile_cache_bytes = 100'000;
  LoopbackServer server(options);
  const TilesReceived got =
      CollectTiles(*server.InProcessStub(), Rect(World(), 0, 2, 0, 1));
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(got.status.error_message(),
              HasSubstr("tile (0, 0): the generators it needs alive at once"));
  EXPECT_THAT(got.status.error_message(),
              HasSubstr("over the tile cache budget (tile_cache_bytes) of "
                        "100000 bytes"));
  EXPECT_TRUE(got.tiles.empty());
  const std::string log = server.log();
  const std::size_t at = log.find(" generated=");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_LT(std::stoi(log.substr(at + 11)), 40) << log;
}

// As ServiceTest's ACallThatCannotStartItsThreadsIsRefusedAndTheServerLivesOn:
// a ScatterTiles call whose producer thread cannot start (std::thread
// throws in a process at its limit of threads) is refused, not the end of
// scatterd.
TEST(TilesServiceTest, ACallThatCannotStartItsProducerIsRefused) {
  auto starts = std::make_shared<std::atomic<int>>(1);  // The watchdog only.
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.start_thread = LimitedThreadStarts(starts);
  LoopbackServer server(options);
  const TilesReceived refused =
      CollectTiles(*server.InProcessStub(), Rect(World(), 0, 1, 0, 1));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.status.error_message(),
              HasSubstr("the call's producer thread cannot start ("));
  EXPECT_TRUE(refused.tiles.empty());
  starts->store(-1);
  const TilesReceived served =
      CollectTiles(*server.InProcessStub(), Rect(World(), 0, 1, 0, 1));
  EXPECT_TRUE(served.status.ok()) << served.status.error_message();
  EXPECT_EQ(served.tiles.size(), 1u);
}

// GeneratorBytes is held once per pool thread for any generator of the
// call, so it must bound the brightest place the density raster has, not
// the place around tile (0, 0) it happens to read. Here the raster is
// dark (radius_max = 5) over tile (0, 0) and bright (radius_min = 0.5)
// from x = 1500 on; the generators of tile (5, 0) sample where it is
// bright.
TEST(TilesServiceTest, GeneratorBytesBoundsTheBrightestGeneratorOfTheRaster) {
  v1::ScatterTilesRequest request;
  request.set_seed(5);
  v1::Layer* layer = request.add_layers();
  layer->set_id(1);
  layer->set_radius_min(0.5);
  layer->set_radius_max(5);
  SetU8Raster(layer->mutable_density(), 2, 1, std::string("\x00\xff", 2), 2000,
              10);
  v1::TileCoord* tile = request.add_tiles();
  tile->set_x(5);
  tile->set_y(0);
  RasterCache rasters(1 << 20);
  absl::StatusOr<TilesJob> job = ToTilesJob(request, Limits(), rasters);
  ASSERT_TRUE(job.ok()) << job.status();
  auto world = sampler::TileWorld::Create(job->world);
  ASSERT_TRUE(world.ok()) << world.status();
  ASSERT_EQ((*world)->tile_size(), 320);  // 64 R, R = radius_max.
  // Tile (5, 0) grown by 5 R: [1575, 1945] x [-25, 345], all bright.
  absl::StatusOr<sampler::Box> bright =
      sampler::Box::Create(2, {1575, -25, 0}, {1945, 345, 0});
  ASSERT_TRUE(bright.ok()) << bright.status();
  const double brightest =
      sampler::EstimatedRunBytes(*bright, job->world.layers[0].options);
  const double bytes = GeneratorBytes(*job, **world);
  std::printf("GeneratorBytes %.0f, the bright generator's estimate %.0f\n",
              bytes, brightest);
  EXPECT_GE(bytes, brightest * (1 - 1e-12));  // Summed differently.
  // The bound is the brightest pixel's, not radius_min's everywhere at
  // worst: a raster at most half bright holds fewer.
  SetU8Raster(request.mutable_layers(0)->mutable_density(), 2, 1,
              std::string("\x00\x80", 2), 2000, 10);
  absl::StatusOr<TilesJob> dimmer = ToTilesJob(request, Limits(), rasters);
  ASSERT_TRUE(dimmer.ok()) << dimmer.status();
  auto dim_world = sampler::TileWorld::Create(dimmer->world);
  ASSERT_TRUE(dim_world.ok()) << dim_world.status();
  EXPECT_LT(GeneratorBytes(*dimmer, **dim_world), bytes);
}

// A world over a small polygon: the point limit and the memory held are
// judged by what the region covers of each tile, not by whole tiles. The
// nine tiles here count 13 302 points whole (and were refused over
// max_points = 2500), and each generator was held at the bytes of a whole
// grown tile (refused within 1.5 times that); the triangle's share is a
// few hundred points. A region as large as the tiles is still refused.
TEST(TilesServiceTest, ASmallRegionIsJudgedByItsShareOfEachTile) {
  v1::ScatterTilesRequest request = Rect(World(), 0, 3, 0, 3);
  v1::Ring* ring = request.mutable_region()->mutable_polygons()->add_rings();
  for (double v : {12.0, 13.0, 21.0, 15.0, 15.0, 22.0}) ring->add_xy(v);

  RasterCache rasters(1 << 20);
  absl::StatusOr<TilesJob> job = ToTilesJob(request, Limits(), rasters);
  ASSERT_TRUE(job.ok()) << job.status();
  auto world = sampler::TileWorld::Create(job->world);
  ASSERT_TRUE(world.ok()) << world.status();
  double bound = 0;
  for (const sampler::TileCoord& t : job->tiles) {
    bound += (*world)->MostServedPoints(t);
  }
  EXPECT_LT(bound, 1000);
  absl::StatusOr<TilesJob> plain_job =
      ToTilesJob(Rect(World(), 0, 3, 0, 3), Limits(), rasters);
  ASSERT_TRUE(plain_job.ok()) << plain_job.status();
  auto plain = sampler::TileWorld::Create(plain_job->world);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const double whole = GeneratorBytes(*plain_job, **plain);
  const double small = GeneratorBytes(*job, **world);
  EXPECT_LT(small, whole / 4);

  ServerOptions options = LoopbackServer::DefaultOptions();
  // The generators the triangle's tiles need plan 2018 points (with r / 2
  // more on each side of their areas).
  options.service.limits.max_points = 2500;
  options.service.threads = 2;
  options.service.memory_budget_bytes = static_cast<std::uint64_t>(1.5 * whole);
  LoopbackServer server(options);
  const TilesReceived got = CollectTiles(*server.InProcessStub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_EQ(got.tiles.size(), 9u);
  absl::StatusOr<sampler::Region> triangle =
      sampler::Region::Polygons({sampler::Ring{{12, 13}, {21, 15}, {15, 22}}});
  ASSERT_TRUE(triangle.ok()) << triangle.status();
  std::size_t total = 0;
  for (const Tile& tile : got.tiles) {
    const std::size_t n = tile.id.size();
    EXPECT_LE(static_cast<double>(n), (*world)->MostServedPoints(tile.coord));
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(triangle->Contains(&tile.coords[2 * i]));
    }
    total += n;
  }
  EXPECT_GT(total, 50u);
  EXPECT_EQ(got.summary.total_points(), total);

  // The region as large as the tiles: refused, before any work.
  v1::ScatterTilesRequest big = Rect(World(), 0, 3, 0, 3);
  v1::Box* box = big.mutable_region()->mutable_box();
  for (double v : {0.0, 0.0}) box->add_min(v);
  for (double v : {48.0, 48.0}) box->add_max(v);
  const TilesReceived refused = CollectTiles(*server.InProcessStub(), big);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The sum stops past the limit, so it is the first tiles' and the
  // message says so (it gave their sum as the 9 tiles').
  EXPECT_THAT(refused.status.error_message(),
              HasSubstr("the tiles could hold at least 3182 points (the first "
                        "2 of the 9 tiles alone, at 2 / (sqrt(3) r^2) per "
                        "unit area over each tile within the region's bounds, "
                        "with r / 2 more on each side, per layer), over the "
                        "limit max_points = 2500"));
  EXPECT_EQ(refused.messages, 0u);
  // The log counts the tiles asked for, though none was sent (it said
  // tiles=0/0).
  EXPECT_THAT(server.log(), HasSubstr("tiles=0/9 "));
}

TEST(TilesServiceTest, EmptyTileStillSendsOnePart) {
  LoopbackServer server;
  v1::ScatterTilesRequest request = World();
  v1::Box* box = request.mutable_region()->mutable_box();
  for (double v : {0.0, 0.0}) box->add_min(v);
  for (double v : {10.0, 10.0}) box->add_max(v);
  v1::TileCoord* far = request.add_tiles();
  far->set_x(5);
  far->set_y(-3);
  const TilesReceived got = CollectTiles(*server.InProcessStub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_EQ(got.tiles.size(), 1u);
  EXPECT_EQ(got.tiles[0].parts, std::vector<std::uint32_t>{0});
  EXPECT_EQ(got.tiles[0].last_parts, 1);
  EXPECT_EQ(got.tiles[0].dims, 2);
  EXPECT_TRUE(got.tiles[0].id.empty());
}

TEST(TilesServiceTest, ErrorsHaveTheirCodesAndNameTheField) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.limits.max_tiles_per_request = 10;
  LoopbackServer server(options);
  auto stub = server.InProcessStub();
  struct Case {
    const char* name;
    v1::ScatterTilesRequest request;
    grpc::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  {
    v1::ScatterTilesRequest r = Rect(World(), 0, 1, 0, 1);
    r.set_tile_size(5);
    cases.push_back({"small tile", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "tile_size: must be finite and in [10 * r_max, 1e+150] = "
                     "[10, 1e+150]"});
    r.set_tile_size(-1);
    cases.push_back({"negative tile", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "tile_size: must be"});
    // Its corners would overflow far from the origin: refused, where it
    // once aborted the server.
    v1::ScatterTilesRequest huge = World();
    huge.set_tile_size(1e300);
    huge.add_tiles()->set_x(2147483647);
    cases.push_back({"huge tile", huge, grpc::StatusCode::INVALID_ARGUMENT,
                     "tile_size: must be finite and in [10 * r_max, 1e+150]"});
  }
  cases.push_back(
      {"too many tiles", Rect(World(), 0, 4, 0, 4),
       grpc::StatusCode::RESOURCE_EXHAUSTED,
       "rect: 16 tiles, over the limit max_tiles_per_request = 10"});
  {
    // 2^32 x 2^32 tiles: the count does not fit in 64 bits.
    const std::int64_t most = std::int64_t{1} << 31;
    cases.push_back({"the whole plane", Rect(World(), -most, most, -most, most),
                     grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "rect: 4294967296 x 4294967296 tiles, over the limit "
                     "max_tiles_per_request = 10"});
    cases.push_back({"a full row", Rect(World(), -most, most, 0, 1),
                     grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "rect: 4294967296 tiles, over the limit "
                     "max_tiles_per_request = 10"});
  }
  {
    // 5.8e24 points in one tile, past 2^64: a figure, not 0.
    v1::ScatterTilesRequest r = Rect(World(), 0, 1, 0, 1);
    r.set_tile_size(1e12);
    cases.push_back({"a huge tile", r, grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "the tiles could hold 5.7735e+24 points"});
  }
  {
    v1::ScatterTilesRequest r = World();
    for (int i = 0; i < 11; ++i) r.add_tiles();
    cases.push_back(
        {"too long a list", r, grpc::StatusCode::RESOURCE_EXHAUSTED,
         "tiles: 11 tiles, over the limit max_tiles_per_request = 10"});
  }
  cases.push_back({"empty rect", Rect(World(), 3, 3, 0, 1),
                   grpc::StatusCode::INVALID_ARGUMENT,
                   "rect.x1: must be > rect.x0 = 3"});
  cases.push_back({"inverted rect", Rect(World(), 0, 1, 2, -2),
                   grpc::StatusCode::INVALID_ARGUMENT,
                   "rect.y1: must be > rect.y0 = 2"});
  cases.push_back({"no tiles", World(), grpc::StatusCode::INVALID_ARGUMENT,
                   "tiles: needs tiles or rect"});
  {
    v1::ScatterTilesRequest r = Rect(World(), 0, 1, 0, 1);
    r.add_tiles();
    cases.push_back({"both", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "rect: give tiles or rect, not both"});
  }
  {
    v1::ScatterTilesRequest r = World();
    r.add_tiles()->set_x(std::int64_t{1} << 40);
    cases.push_back({"far tile", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "tiles[0].x: must be in [-2^31, 2^31)"});
  }
  {
    v1::ScatterTilesRequest r = Rect(World(), 0, 1, 0, 1);
    v1::RasterInput* density = r.mutable_layers(0)->mutable_density();
    density->set_digest(std::string(64, 'e'));
    density->set_x1(10);
    density->set_y1(10);
    r.mutable_layers(0)->set_radius_min(0.5);
    r.mutable_layers(0)->set_radius_max(1);
    cases.push_back({"unknown digest", r, grpc::StatusCode::NOT_FOUND,
                     "layers[0].density.digest: no raster eeee"});
  }
  {
    v1::ScatterTilesRequest r = Rect(World(), 0, 1, 0, 1);
    r.set_algorithm_version(sampler::kAlgorithmVersion + 1);
    cases.push_back({"version", r, grpc::StatusCode::FAILED_PRECONDITION,
                     "algorithm_version: this server implements version"});
  }
  {
    v1::ScatterTilesRequest r = Rect(World(), 0, 1, 0, 1);
    r.mutable_layers(1)->set_method(v1::METHOD_UNIFORM);
    r.mutable_layers(1)->set_count(10);
    cases.push_back(
        {"uniform layer", r, grpc::StatusCode::INVALID_ARGUMENT,
         "layers[1].method: must be poisson_dense or poisson_classic"});
  }
  {
    // Spacing 0.001 in tiles of 16: 296 M points a tile at most.
    v1::ScatterTilesRequest r = Rect(World(), 0, 2, 0, 1);
    r.mutable_layers(1)->set_spacing(0.001);
    r.mutable_layers(1)->set_footprint(0.0005);
    cases.push_back({"too many points", r, grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "over the limit max_points = 200000000"});
  }
  {
    // 64 layers: the first is made over thousands of tiles around the one
    // asked for. Planning it once took 34 s, past any deadline; now the
    // plan's estimate passes max_points within milliseconds.
    v1::ScatterTilesRequest r;
    r.set_seed(17);
    r.add_tiles();
    for (int i = 0; i < 64; ++i) {
      v1::Layer* layer = r.add_layers();
      layer->set_id(static_cast<std::uint32_t>(i));
      layer->set_spacing(2 * std::pow(0.97, i));
    }
    cases.push_back({"64 layers", r, grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "(64 layers: each reads the layer before over the 3 x 3 "
                     "tiles around it)"});
  }
  {
    v1::ScatterTilesRequest r = Rect(World(), 0, 1, 0, 1);
    r.mutable_layers(0)->set_spacing(-1);
    cases.push_back({"bad spacing", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "layers[0].spacing: must be finite and > 0"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TilesReceived got = CollectTiles(*stub, c.request);
    EXPECT_EQ(got.status.error_code(), c.code) << got.status.error_message();
    EXPECT_THAT(got.status.error_message(), HasSubstr(c.message));
    EXPECT_EQ(got.messages, 0u);
  }
  // Nothing was generated for any of them.
  EXPECT_EQ(server.server().service().tile_cache().stats().entries, 0u);
}

TEST(TilesServiceTest, WorldKeyIgnoresTilesAndDeliveryAndNamesRastersByDigest) {
  v1::ScatterTilesRequest a = Rect(World(), 0, 2, 0, 2);
  v1::ScatterTilesRequest b = World();
  b.add_tiles()->set_x(7);
  b.set_batch_size(10);
  b.mutable_fields()->set_omit_yaw(true);
  b.set_algorithm_version(sampler::kAlgorithmVersion);
  EXPECT_EQ(WorldKey(a), WorldKey(b));
  EXPECT_EQ(WorldKey(a).size(), 64u);
  v1::ScatterTilesRequest c = a;
  c.set_seed(18);
  EXPECT_NE(WorldKey(a), WorldKey(c));
  c = a;
  c.set_tile_size(20);
  EXPECT_NE(WorldKey(a), WorldKey(c));

  // A raster inline and the same raster by digest: one world.
  v1::RasterData data;
  data.set_format(v1::RASTER_FORMAT_U8);
  data.set_width(2);
  data.set_height(2);
  data.set_pixels(std::string("\x00\x40\x80\xff", 4));
  v1::ScatterTilesRequest inline_raster = a;
  v1::RasterInput* density = inline_raster.mutable_layers(0)->mutable_density();
  *density->mutable_data() = data;
  density->set_x1(32);
  density->set_y1(32);
  v1::ScatterTilesRequest by_digest = inline_raster;
  by_digest.mutable_layers(0)->mutable_density()->set_digest(
      RasterDigest(data.format(), data.width(), data.height(), data.pixels()));
  EXPECT_EQ(WorldKey(inline_raster), WorldKey(by_digest));
  EXPECT_NE(WorldKey(inline_raster), WorldKey(a));

  // A PNG's size is its file's: inline with its size or with 0 x 0, and
  // by the digest PutRaster gives it (of 0 x 0), one world. With its size,
  // it was keyed apart, and every generator was made again.
  v1::RasterData png;
  png.set_format(v1::RASTER_FORMAT_PNG);
  png.set_pixels("\x89PNG bytes, not decoded for the key");
  png.set_width(4);
  png.set_height(4);
  v1::ScatterTilesRequest png_sized = inline_raster;
  *png_sized.mutable_layers(0)->mutable_density()->mutable_data() = png;
  v1::ScatterTilesRequest png_plain = png_sized;
  png_plain.mutable_layers(0)->mutable_density()->mutable_data()->set_width(0);
  png_plain.mutable_layers(0)->mutable_density()->mutable_data()->set_height(0);
  v1::ScatterTilesRequest png_digest = png_sized;
  png_digest.mutable_layers(0)->mutable_density()->set_digest(
      RasterDigest(v1::RASTER_FORMAT_PNG, 0, 0, png.pixels()));
  EXPECT_EQ(WorldKey(png_sized), WorldKey(png_plain));
  EXPECT_EQ(WorldKey(png_sized), WorldKey(png_digest));
  EXPECT_NE(WorldKey(png_sized), WorldKey(inline_raster));
}

TEST(TilesServiceTest, CancellingStopsTheWorkPromptly) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  grpc::ClientContext context;
  // 10 000 tiles: minutes of work.
  auto reader = stub->ScatterTiles(&context, Rect(World(), 0, 100, 0, 100));
  v1::TileResponse response;
  ASSERT_TRUE(reader->Read(&response));
  ASSERT_EQ(server.server().stats().in_flight.load(), 1);
  context.TryCancel();
  const absl::Duration took = WaitIdle(server.server(), absl::Seconds(10));
  EXPECT_LT(took, kSlowdown * absl::Milliseconds(300));
  EXPECT_EQ(server.server().stats().in_flight.load(), 0);
  // (The handler's log line may come after in_flight drops: not checked.)
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST(TilesServiceTest, DeadlineStopsTheWork) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(300));
  const absl::Time start = absl::Now();
  auto reader = stub->ScatterTiles(&context, Rect(World(), 0, 100, 0, 100));
  v1::TileResponse response;
  while (reader->Read(&response)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  WaitIdle(server.server(), absl::Seconds(10));
  EXPECT_LT(absl::Now() - start,
            absl::Milliseconds(300) + kSlowdown * absl::Milliseconds(300));
  EXPECT_EQ(server.server().stats().in_flight.load(), 0);
}

}  // namespace
}  // namespace scatter::server::testing
