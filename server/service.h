#ifndef SCATTER_SERVER_SERVICE_H_
#define SCATTER_SERVER_SERVICE_H_

// The gRPC face of the sampler: converts, checks limits, runs the sampler
// on its own thread a few batches ahead of the network, and streams. Tiled
// worlds share one generator cache and one thread pool across requests.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "sampler/tiles.h"
#include "scatter/v1/scatter.grpc.pb.h"
#include "server/convert.h"
#include "server/raster_cache.h"
#include "spdlog/logger.h"

namespace scatter::server {

// The least tile_cache_bytes CheckOptions takes, and `scatter tiles
// --local` its --tile_cache_bytes: a call keeps the generators it reads
// within that budget, so 0 does not turn the cache off. 1024 only rules out
// the absurd; what one tile needs depends on the request, which says so.
inline constexpr std::size_t kMinTileCacheBytes = 1024;

// PutRaster: the pixel bytes scatter's clients put in one chunk, and the
// least max_request_bytes CheckOptions takes, which such a chunk and the
// rest of its message fit with room to spare. gRPC refuses a message over
// max_request_bytes before scatterd sees it, so a server that took less
// would refuse every upload of more than a few pixels.
inline constexpr std::size_t kUploadChunkBytes = std::size_t{256} << 10;
inline constexpr int kMinRequestBytes = 512 << 10;

struct ServiceOptions {
  Limits limits;
  // Scatter, ScatterTiles and PutRaster calls running at once; more get
  // RESOURCE_EXHAUSTED naming max_streams.
  int max_streams = 16;
  // Batches the sampler may run ahead of the writer.
  std::size_t queue_batches = 4;
  // A call still running after this long ends with DEADLINE_EXCEEDED (a
  // client that stopped reading, or stopped sending an upload, without
  // cancelling holds no slot for ever).
  absl::Duration max_call_duration = absl::Minutes(30);
  // Raster bytes kept for reference by digest: decoded pixels and the
  // block bounds variable-radius runs keep with them (RasterCache).
  std::size_t raster_cache_bytes = std::size_t{1} << 30;
  // PutRaster: bytes received per upload at most.
  std::size_t max_upload_bytes = std::size_t{256} << 20;
  // The server's max_request_bytes (ServerOptions), which gRPC enforces
  // before a handler sees a message; only named in messages. 0: unknown.
  int max_request_bytes = 0;
  // ScatterTiles: bytes of finished tile generators kept for later
  // requests (least recently used out). It must hold the generators one
  // tile needs (up to 37 in 2D), and a sweep's frontier to cost about 1.5
  // generators per tile. It is also the most generator bytes one call
  // keeps alive at once (sampler::TileWorld::Serve): a call serves fewer
  // tiles a round where they would pass it, and a tile whose generators
  // would, alone, is refused naming it. So 0 does not turn the cache off
  // (CheckOptions asks for at least kMinTileCacheBytes).
  std::size_t tile_cache_bytes = std::size_t{512} << 20;
  // ScatterTiles: threads computing generators, shared by every request
  // (each request's handler thread works too). 0 means one per CPU the
  // process may use (sampler::AllowedCpus).
  int threads = 0;
  // Memory all running calls may hold at once: sampling memory by their
  // estimates (sampler::EstimatedRunBytes of each layer, and the points a
  // layered run keeps for the layers after it; ScatterTiles: one
  // generator's per pool thread), taken before they allocate, and for
  // ScatterTiles the tile generators the call keeps alive, by their bytes
  // as it makes them (at most tile_cache_bytes a call; counted whole, even
  // those the cache holds too), and for PutRaster the bytes it has
  // received, as its buffer grows. A call that would go over gets
  // RESOURCE_EXHAUSTED naming memory_budget_bytes (ScatterTiles: before
  // any work, or at once when its generators would pass it, where Serve
  // first tries fewer tiles a round): one request cannot take the memory
  // every other call needs. The caches above are budgeted apart.
  std::uint64_t memory_budget_bytes = std::uint64_t{8} << 30;
  // Starts the threads a call runs besides its handler thread: its
  // watchdog, and a stream's producer. Empty: std::thread. When the
  // process cannot start another thread, std::thread throws
  // std::system_error and the call ends with RESOURCE_EXHAUSTED naming the
  // cause; tests set a starter that throws it to fail as such a process
  // would.
  std::function<std::thread(std::function<void()>)> start_thread;
};

// Counters a test or an operator can read directly.
struct ServiceStats {
  std::atomic<int> in_flight{0};
  // Largest (batches produced - batches written) seen on any stream.
  std::atomic<std::uint64_t> max_backlog{0};
  std::atomic<std::uint64_t> points_sent{0};
  std::atomic<std::uint64_t> tiles_sent{0};
};

// What one ScatterTiles call did, for its log line.
struct TilesTally {
  std::size_t tiles_asked = 0;
  std::uint64_t tiles_sent = 0;
  std::uint64_t points_sent = 0;
  std::uint64_t generators_computed = 0;
  // The most bytes of tile generators it kept alive at once.
  std::size_t generators_held = 0;
};

// The server stopping: a flag that pool threads poll without a lock, and
// an event that call watchdogs wait on (through mu, with conditions of
// their own) instead of polling it.
class StopSignal {
 public:
  void Raise() {
    absl::MutexLock lock(&mu);
    raised_locked_ = true;
    raised_.store(true);
  }
  bool raised() const { return raised_.load(std::memory_order_relaxed); }
  bool raised_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return raised_locked_;
  }

  absl::Mutex mu;

 private:
  bool raised_locked_ ABSL_GUARDED_BY(mu) = false;
  std::atomic<bool> raised_{false};
};

class ScatterServiceImpl final : public v1::ScatterService::Service {
 public:
  ScatterServiceImpl(const ServiceOptions& options,
                     std::shared_ptr<spdlog::logger> logger,
                     prometheus::Registry& registry);

  grpc::Status Scatter(grpc::ServerContext* context,
                       const v1::ScatterRequest* request,
                       grpc::ServerWriter<v1::ScatterResponse>* writer) override;
  grpc::Status PutRaster(grpc::ServerContext* context,
                         grpc::ServerReader<v1::RasterChunk>* reader,
                         v1::RasterRef* response) override;
  grpc::Status ScatterTiles(grpc::ServerContext* context,
                            const v1::ScatterTilesRequest* request,
                            grpc::ServerWriter<v1::TileResponse>* writer) override;

  // Logs the refused calls left out of the log since its last line of
  // their kind (Record), so that none goes unsaid at shutdown.
  void FlushRefusalLog();
  // Draining: new calls get UNAVAILABLE "server shutting down".
  void StartDraining() { draining_.store(true); }
  // Stops running samplers and uploads; their calls end with UNAVAILABLE.
  // Returns once every call's handler has returned (a second at most: a
  // call blocked on a client is cut off within kWriteGrace), so their
  // statuses are on their way before the server closes its connections.
  void StopInFlight();

  const ServiceStats& stats() const { return stats_; }
  RasterCache& rasters() { return rasters_; }
  sampler::GeneratorCache& tile_cache() { return tile_cache_; }
  // The tile generator threads; its status() says when they could not
  // start.
  const sampler::ThreadPool& pool() const { return pool_; }
  sampler::ThreadPool& pool() { return pool_; }

 private:
  // Runs `stream` unless the server is draining (UNAVAILABLE) or
  // max_streams calls are running (RESOURCE_EXHAUSTED); *refusal names
  // which of the two refused it ("draining", "max_streams"), and stays as
  // it was (nullptr) when `stream` ran.
  grpc::Status Admit(absl::FunctionRef<grpc::Status()> stream,
                     const char** refusal);
  grpc::Status Stream(grpc::ServerContext* context,
                      const v1::ScatterRequest& request,
                      grpc::ServerWriter<v1::ScatterResponse>* writer,
                      std::uint64_t* points_sent);
  grpc::Status StreamTiles(grpc::ServerContext* context,
                           const v1::ScatterTilesRequest& request,
                           grpc::ServerWriter<v1::TileResponse>* writer,
                           TilesTally* tally);
  grpc::Status Upload(grpc::ServerContext* context,
                      grpc::ServerReader<v1::RasterChunk>* reader,
                      v1::RasterRef* response, std::size_t* bytes);
  // Adds the generators `world` computed since the tally last counted
  // them to the metric, and sets the tile cache's gauge.
  void CountGenerators(const sampler::TileWorld& world, TilesTally* tally);
  // Counts a finished call in the metrics and writes its log line
  // (`line`, made only when written): at error for INTERNAL, UNKNOWN and
  // DATA_LOSS (a fault of scatterd's), info otherwise. A call turned away
  // for the server's load (Admit's `refusal`, or a RESOURCE_EXHAUSTED
  // saying "retry later": the memory budget, threads) is counted apart,
  // not timed (an instant refusal is no latency), and logged at most once
  // a second per method and reason: under overload every refused call
  // wrote a line (13 417 lines, 2.9 MB in 8 s).
  void Record(const char* method, const grpc::Status& status,
              absl::Duration elapsed, const char* refusal,
              absl::FunctionRef<std::string()> line);

  // Estimated bytes a running call holds against memory_budget_bytes,
  // given back when it ends.
  class MemoryHold {
   public:
    MemoryHold() = default;
    MemoryHold(const MemoryHold&) = delete;
    MemoryHold& operator=(const MemoryHold&) = delete;
    ~MemoryHold();

   private:
    friend class ScatterServiceImpl;
    ScatterServiceImpl* service_ = nullptr;
    double bytes_ = 0;
  };
  // Takes `bytes` (what `what` needs, for the message: bytes of `kind`)
  // from the budget into *hold, or says RESOURCE_EXHAUSTED naming
  // memory_budget_bytes.
  // A *hold that holds bytes already is set to `bytes` instead, at once.
  // `own`: what the call holds in another hold (its message), which a
  // refusal does not count among other calls'.
  grpc::Status HoldMemory(double bytes, const char* what, MemoryHold* hold,
                          const char* kind = "sampling memory",
                          const MemoryHold* own = nullptr);
  // Holds the bytes of a call's request message (its inline rasters, rings
  // and all, and its `obstacles` parsed) for the call, as HoldMemory does,
  // before anything is made of it.
  grpc::Status HoldMessage(const google::protobuf::Message& request,
                           int obstacles, MemoryHold* hold);
  // HoldMemory for a polygon index about to be built (ToJob asks), beside
  // the call's `message` hold.
  absl::Status HoldIndex(double bytes, MemoryHold* hold,
                         const MemoryHold& message);
  // Sets *hold, which HoldMemory took, to `bytes`: at once when that is
  // less; when more, only if the budget has room, else returns false with
  // the hold as it was and *others set to what the other running calls
  // hold (without `own`, the same call's request message, when given).
  bool ResizeMemory(double bytes, MemoryHold* hold, double* others,
                    const MemoryHold* own = nullptr);

  const ServiceOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  RasterCache rasters_;
  sampler::GeneratorCache tile_cache_;
  sampler::ThreadPool pool_;
  ServiceStats stats_;
  std::atomic<bool> draining_{false};
  StopSignal stopping_;
  absl::Mutex memory_mu_;
  double memory_held_ ABSL_GUARDED_BY(memory_mu_) = 0;

  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Counter& points_;
  prometheus::Gauge& in_flight_gauge_;
  prometheus::Gauge& cache_bytes_;
  prometheus::Family<prometheus::Histogram>& seconds_;
  prometheus::Family<prometheus::Counter>& refused_;
  // Refused calls' log lines, per method and reason: when the last went
  // out and how many were left out since.
  struct RefusalLog {
    absl::Time last = absl::InfinitePast();
    std::uint64_t left_out = 0;
  };
  absl::Mutex refusal_log_mu_;
  absl::flat_hash_map<std::pair<std::string, std::string>, RefusalLog>
      refusal_log_ ABSL_GUARDED_BY(refusal_log_mu_);
  prometheus::Counter& tiles_;
  prometheus::Counter& generators_;
  prometheus::Gauge& tile_cache_bytes_;
  prometheus::Gauge& memory_held_gauge_;
};

}  // namespace scatter::server

#endif  // SCATTER_SERVER_SERVICE_H_
