// A call's producer thread, or a tile pool thread, running out of memory:
// std::bad_alloc out of the sampler or the tile server must end that call
// with a status, not the process. This binary replaces the global operator
// new (tests/failing_new.h) so that a test can make one allocation on one
// thread fail.

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/failing_new.h"
#include "tests/server/service_test_util.h"

namespace scatter::server::testing {
namespace {

using ::scatter::testing::allocations_before_failure;
using ::scatter::testing::pool_worker;
using ::scatter::testing::pool_worker_fails;
using ::testing::HasSubstr;

// A ServiceOptions::start_thread whose producer threads, while `*armed`,
// fail their first allocation. Each Scatter and ScatterTiles call starts
// its watchdog and then its producer, so every second thread is a
// producer (the tests make no uploads, which start a watchdog alone).
std::function<std::thread(std::function<void()>)> ProducersOutOfMemory(
    std::shared_ptr<std::atomic<bool>> armed) {
  auto started = std::make_shared<std::atomic<int>>(0);
  return [armed, started](std::function<void()> body) {
    const bool producer = started->fetch_add(1) % 2 == 1;
    const bool fail = producer && armed->load();
    return std::thread([fail, body = std::move(body)] {
      if (fail) allocations_before_failure = 0;
      body();
    });
  };
}

// One tile of a two-layer world on the unbounded plane.
v1::ScatterTilesRequest OneTile() {
  v1::ScatterTilesRequest request;
  request.set_seed(17);
  request.set_tile_size(16);
  v1::Layer* layer = request.add_layers();
  layer->set_id(1);
  layer->set_spacing(1);
  v1::TileCoord* tile = request.add_tiles();
  tile->set_x(0);
  tile->set_y(0);
  return request;
}

// The status of a ScatterTiles call and the points it sent.
std::pair<grpc::Status, std::size_t> CollectTilesStatus(
    v1::ScatterService::Stub& stub, const v1::ScatterTilesRequest& request) {
  grpc::ClientContext context;
  auto reader = stub.ScatterTiles(&context, request);
  v1::TileResponse response;
  std::size_t points = 0;
  while (reader->Read(&response)) {
    points += static_cast<std::size_t>(response.points().id_size());
  }
  return {reader->Finish(), points};
}

// std::bad_alloc out of a producer's body ended scatterd: an exception
// leaving a std::thread's function calls std::terminate. The call ends
// with RESOURCE_EXHAUSTED saying so, its slot and memory come back, and
// the server serves on.
TEST(ServiceOutOfMemoryTest, AProducerOutOfMemoryEndsItsCallNotTheServer) {
  auto armed = std::make_shared<std::atomic<bool>>(true);
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.max_streams = 1;
  options.service.start_thread = ProducersOutOfMemory(armed);
  LoopbackServer server(options);
  auto stub = server.InProcessStub();

  const Received scattered = Collect(*stub, BoxRequest(10, 0.5));
  EXPECT_EQ(scattered.status.error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(scattered.status.error_message(),
              HasSubstr("out of memory (std::bad_alloc): the process could "
                        "not allocate what the call needed"));
  EXPECT_THAT(scattered.status.error_message(),
              HasSubstr("(after 0 points sent)"));
  EXPECT_FALSE(scattered.has_summary);

  const auto [tiles_status, tiles_points] =
      CollectTilesStatus(*stub, OneTile());
  EXPECT_EQ(tiles_status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(tiles_status.error_message(),
              HasSubstr("out of memory (std::bad_alloc)"));
  EXPECT_EQ(tiles_points, 0u);

  armed->store(false);
  WaitIdle(server.server(), absl::Seconds(5));
  EXPECT_EQ(server.server().stats().in_flight.load(), 0);
  const Received served = Collect(*stub, BoxRequest(10, 0.5));
  EXPECT_TRUE(served.status.ok()) << served.status.error_message();
  EXPECT_GT(served.size(), 0u);
  const auto [tiled, points] = CollectTilesStatus(*stub, OneTile());
  EXPECT_TRUE(tiled.ok()) << tiled.error_message();
  EXPECT_GT(points, 0u);
  EXPECT_THAT(server.log(),
              HasSubstr("message=out of memory (std::bad_alloc)"));
}

// Marks the worker threads of `pool` (pool_worker) and returns how
// many: one index of a ParallelFor each, all waiting until every thread
// runs one.
int TagPoolWorkers(sampler::ThreadPool& pool) {
  const int threads = pool.threads();
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> arrived{0}, tagged{0};
  pool.ParallelFor(static_cast<std::size_t>(threads), [&](std::size_t) {
    ++arrived;
    while (arrived.load() < threads) std::this_thread::yield();
    if (std::this_thread::get_id() != caller) {
      pool_worker = true;
      ++tagged;
    }
  });
  return tagged.load();
}

// std::bad_alloc on a tile pool thread, in a generator, ended scatterd
// (out of a std::thread, std::terminate); the producer's own were already
// a status. The call ends with RESOURCE_EXHAUSTED, and the server serves
// the same tiles next.
TEST(ServiceOutOfMemoryTest,
     ATilePoolThreadOutOfMemoryEndsItsCallNotTheServer) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.max_streams = 1;
  options.service.threads = 3;
  LoopbackServer server(options);
  ASSERT_EQ(TagPoolWorkers(server.server().service().pool()), 2);
  auto stub = server.InProcessStub();
  // 2 x 2 tiles: 16 generators and the lower neighbours they read, so the
  // workers have some to make.
  v1::ScatterTilesRequest request = OneTile();
  for (const auto& [x, y] : {std::pair{1, 0}, {0, 1}, {1, 1}}) {
    v1::TileCoord* tile = request.add_tiles();
    tile->set_x(x);
    tile->set_y(y);
  }

  pool_worker_fails = true;
  const grpc::Status failed = CollectTilesStatus(*stub, request).first;
  EXPECT_FALSE(pool_worker_fails.load()) << "no pool worker allocated";
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << failed.error_message();
  EXPECT_THAT(failed.error_message(),
              HasSubstr("out of memory (std::bad_alloc): the process could "
                        "not allocate what the call needed"));

  pool_worker_fails = false;
  WaitIdle(server.server(), absl::Seconds(5));
  EXPECT_EQ(server.server().stats().in_flight.load(), 0);
  const std::uint64_t tiles_before = server.server().stats().tiles_sent.load();
  const auto [served, points] = CollectTilesStatus(*stub, request);
  EXPECT_TRUE(served.ok()) << served.error_message();
  EXPECT_GT(points, 0u);
  EXPECT_EQ(server.server().stats().tiles_sent.load() - tiles_before, 4u);
  EXPECT_THAT(server.log(),
              HasSubstr("message=out of memory (std::bad_alloc)"));
}

}  // namespace
}  // namespace scatter::server::testing
