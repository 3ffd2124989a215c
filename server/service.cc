#include "server/service.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "grpc/grpc.h"
#include "sampler/layers.h"
#include "sampler/simd.h"
#include "sampler/tiles.h"
#include "sampler/version.h"
#include "server/command_line.h"
#include "spdlog/fmt/fmt.h"

namespace scatter::server {
namespace {

// A sampler's message in the server's words: the limits it names are
// scatterd's flags here (SamplerOptions calls --max_grid_bytes
// max_memory_bytes; the tile cache is --tile_cache_bytes).
std::string ServerWords(absl::string_view message) {
  return absl::StrReplaceAll(
      message,
      {{"the limit max_memory_bytes = ", "the limit max_grid_bytes = "},
       {"the tile cache budget of ",
        "the tile cache budget (tile_cache_bytes) of "},
       // The server plans up to its max_points (convert.cc).
       {"the limit max_planned_points = ", "the limit max_points = "}});
}

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      ServerWords(status.message()));
}

// How a RESOURCE_EXHAUSTED of the server's load, not of the request, ends
// (the memory budget, a thread, memory itself), and the words of the one
// for a thread: OverloadReason tells them apart by these.
constexpr absl::string_view kRetryLater = "; retry later";
constexpr absl::string_view kThreadCannotStart = " thread cannot start (";

// The methods whose calls are counted (Record).
constexpr const char* kMethods[] = {"Scatter", "ScatterTiles", "PutRaster"};

// Call durations: a millisecond to max_call_duration's default, 30 min.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto* const kBuckets =
      new prometheus::Histogram::BucketBoundaries{0.001, 0.003, 0.01, 0.03, 0.1,
                                                  0.3,   1,     3,    10,   30,
                                                  100,   300,   1000, 1800};
  return *kBuckets;
}

const char* CodeName(grpc::StatusCode code) {
  static constexpr const char* kNames[] = {"OK",
                                           "CANCELLED",
                                           "UNKNOWN",
                                           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED",
                                           "NOT_FOUND",
                                           "ALREADY_EXISTS",
                                           "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION",
                                           "ABORTED",
                                           "OUT_OF_RANGE",
                                           "UNIMPLEMENTED",
                                           "INTERNAL",
                                           "UNAVAILABLE",
                                           "DATA_LOSS",
                                           "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "UNKNOWN";
}

// Messages between the sampler thread and the writer: the sampler blocks
// when `capacity` are waiting, so a slow client slows the sampler and the
// server never buffers a result.
template <typename Response>
class BatchQueue {
 public:
  using Message = std::unique_ptr<Response>;

  explicit BatchQueue(std::size_t capacity) : capacity_(capacity) {}

  // Waits for room; false once the consumer has gone, or when `give_up`
  // turns true while waiting (checked every 10 ms).
  template <typename GiveUp>
  bool Push(Message message, GiveUp give_up) {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return consumer_gone_ || items_.size() < capacity_;
    };
    while (
        !mu_.AwaitWithTimeout(absl::Condition(&room), absl::Milliseconds(10))) {
      if (give_up()) return false;
    }
    if (consumer_gone_) return false;
    items_.push_back(std::move(message));
    ++produced_;
    return true;
  }

  // A message to fill: a recycled one (its arrays keep their capacity, so
  // a long stream allocates nothing per batch) or a new one.
  Message Take() {
    absl::MutexLock lock(&mu_);
    if (spare_.empty()) return std::make_unique<Response>();
    Message message = std::move(spare_.back());
    spare_.pop_back();
    return message;
  }
  void Recycle(Message message) {
    absl::MutexLock lock(&mu_);
    if (spare_.size() < capacity_ + 2) spare_.push_back(std::move(message));
  }

  enum class Got { kItem, kTimeout, kDone };
  Got Pop(absl::Duration timeout, Message* out) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return producer_done_ || !items_.empty();
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
      return Got::kTimeout;
    }
    if (items_.empty()) return Got::kDone;
    *out = std::move(items_.front());
    items_.pop_front();
    return Got::kItem;
  }

  void ProducerDone() {
    absl::MutexLock lock(&mu_);
    producer_done_ = true;
  }
  void ConsumerGone() {
    absl::MutexLock lock(&mu_);
    consumer_gone_ = true;
    items_.clear();
  }
  std::uint64_t produced() {
    absl::MutexLock lock(&mu_);
    return produced_;
  }

 private:
  const std::size_t capacity_;
  absl::Mutex mu_;
  std::deque<Message> items_ ABSL_GUARDED_BY(mu_);
  std::vector<Message> spare_ ABSL_GUARDED_BY(mu_);
  std::uint64_t produced_ ABSL_GUARDED_BY(mu_) = 0;
  bool producer_done_ ABSL_GUARDED_BY(mu_) = false;
  bool consumer_gone_ ABSL_GUARDED_BY(mu_) = false;
};

// The first n points of `batch` into `message`, reusing its arrays.
std::unique_ptr<v1::ScatterResponse> Pack(
    const sampler::PointBatch& batch, std::size_t n, const v1::Fields& fields,
    std::unique_ptr<v1::ScatterResponse> message) {
  v1::PointBatch* points = message->mutable_points();
  points->Clear();
  PackBatch(batch, n, fields, points);
  return message;
}

void RaiseMax(std::atomic<std::uint64_t>& target, std::uint64_t value) {
  std::uint64_t seen = target.load();
  while (value > seen && !target.compare_exchange_weak(seen, value)) {
  }
}

prometheus::Counter& NewCounter(prometheus::Registry& registry,
                                const char* name, const char* help) {
  return prometheus::BuildCounter()
      .Name(name)
      .Help(help)
      .Register(registry)
      .Add({});
}

prometheus::Gauge& NewGauge(prometheus::Registry& registry, const char* name,
                            const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add(
      {});
}

// Starts `body` on a thread of its own into *out. A process at its limit of
// threads (RLIMIT_NPROC, kernel.threads-max, pid_max, or vm.max_map_count
// for their stacks) cannot start one: std::thread throws std::system_error,
// which out of a handler would end the process. The call gets
// RESOURCE_EXHAUSTED naming the cause instead.
grpc::Status StartThread(const ServiceOptions& options, const char* what,
                         std::function<void()> body, std::thread* out) {
  try {
    *out = options.start_thread ? options.start_thread(std::move(body))
                                : std::thread(std::move(body));
  } catch (const std::system_error& e) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("the call's ", what, kThreadCannotStart, e.what(),
                     "); the process is at a system limit of threads "
                     "(max_streams = ",
                     options.max_streams, " calls run up to three each)",
                     kRetryLater));
  }
  return grpc::Status::OK;
}

grpc::Status CheckVersion(std::uint32_t asked) {
  if (asked == 0 || asked == sampler::kAlgorithmVersion)
    return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      absl::StrCat("algorithm_version: this server implements version ",
                   sampler::kAlgorithmVersion, " only, asked for ", asked));
}

// When a call's work must stop: the client cancelled or went away, its
// deadline passed, the server's max_call_duration passed, or the server is
// stopping. ShouldStop() is safe from any thread (atomics and the clock), so
// it can be the stop predicate of pool threads.
//
// Past max_call_duration (or once the server stops) the work stops and the
// handler returns its status: DEADLINE_EXCEEDED (UNAVAILABLE). A handler
// blocked in a Write to a client that stopped reading, or in a Read from a
// client that stopped sending, cannot return; so a watchdog thread cuts the
// call off with that status when the handler has not returned `grace` later.
class CallControl {
 public:
  // How long a Write in progress when the call must stop may take before
  // the call is cut off: a slow reader gets the handler's status (which
  // says what was sent), one that stopped reading does not hold a handler
  // thread for ever.
  static constexpr absl::Duration kWriteGrace = absl::Milliseconds(500);

  CallControl(grpc::ServerContext* context, absl::Time start,
              absl::Duration max_call_duration, StopSignal& stopping,
              absl::Duration grace)
      : context_(context),
        // The client's deadline is checked by the sampler itself too, so it
        // stops at its next poll rather than when the writer next looks.
        deadline_(absl::FromChrono(context->deadline())),
        max_call_duration_(max_call_duration),
        give_up_at_(start + max_call_duration),
        grace_(grace),
        stopping_(stopping) {}
  // Starts the watchdog; RESOURCE_EXHAUSTED when no thread can be started
  // (StartThread), and the call must end at once with that status.
  grpc::Status Start(const ServiceOptions& options) {
    return StartThread(
        options, "watchdog", [this] { Watch(); }, &watchdog_);
  }
  // The handler is returning: the watchdog stands down.
  ~CallControl() {
    {
      absl::MutexLock lock(&stopping_.mu);
      finished_ = true;
    }
    if (watchdog_.joinable()) watchdog_.join();
  }
  CallControl(const CallControl&) = delete;
  CallControl& operator=(const CallControl&) = delete;

  bool ShouldStop() {
    return stop_.load(std::memory_order_relaxed) ||
           stopping_.raised() || Expired() ||
           absl::Now() >= deadline_;
  }
  // The writer saw the client go.
  void ClientGone() { stop_.store(true); }
  bool timed_out() const { return timed_out_.load(); }
  // The client's deadline has passed (the work may have stopped for it
  // before gRPC noticed).
  bool past_deadline() const { return absl::Now() >= deadline_; }
  bool stopping() const { return stopping_.raised(); }
  // The watchdog cut the call off: the client has its status already.
  bool cut_off() const { return cut_off_.load(); }

 private:
  bool Expired() {
    if (absl::Now() < give_up_at_) return false;
    timed_out_.store(true);
    return true;
  }

  // Sleeps until the handler returns, the server stops or
  // max_call_duration passes; then gives the handler `grace` to return
  // before cutting the call off.
  void Watch() {
    absl::Time cut_at;
    bool stopping = false;
    {
      absl::MutexLock lock(&stopping_.mu);
      auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(stopping_.mu) {
        return finished_ || stopping_.raised_locked();
      };
      stopping_.mu.AwaitWithDeadline(absl::Condition(&settled), give_up_at_);
      if (finished_) return;
      stopping = stopping_.raised_locked();
      // The handler stops at its next look even when the work is done.
      if (!stopping) timed_out_.store(true);
      cut_at = (stopping ? absl::Now() : give_up_at_) + grace_;
      auto finished = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(stopping_.mu) {
        return finished_;
      };
      if (stopping_.mu.AwaitWithDeadline(absl::Condition(&finished), cut_at)) {
        return;
      }
    }
    if (stopping) {
      CutOff(GRPC_STATUS_UNAVAILABLE, "server shutting down; retry elsewhere");
    } else {
      CutOff(GRPC_STATUS_DEADLINE_EXCEEDED,
             absl::StrCat("max_call_duration = ",
                          absl::FormatDuration(max_call_duration_),
                          " reached"));
    }
  }

  // Ends the call with `code`, unblocking the handler's Read or Write.
  // TryCancel() would do the same but tell the client CANCELLED.
  void CutOff(grpc_status_code code, const std::string& message) {
    cut_off_.store(true);
    grpc_call_cancel_with_status(context_->c_call(), code, message.c_str(),
                                 nullptr);
  }

  grpc::ServerContext* const context_;
  const absl::Time deadline_;
  const absl::Duration max_call_duration_;
  const absl::Time give_up_at_;
  const absl::Duration grace_;
  StopSignal& stopping_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> timed_out_{false};
  std::atomic<bool> cut_off_{false};
  bool finished_ ABSL_GUARDED_BY(stopping_.mu) = false;
  std::thread watchdog_;  // Started by Start(), once the rest is built.
};

// A producer's work (sampling, or serving tiles, and packing messages),
// with an exception out of it made its status: out of a thread's body it
// would end the process (std::terminate). The sampler and the packing
// allocate as they go, so std::bad_alloc is the one to expect.
absl::Status Guarded(absl::FunctionRef<absl::Status()> work) {
  try {
    return work();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory (std::bad_alloc): the process could not allocate what "
        "the call needed (memory_budget_bytes counts estimates, not what the "
        "system has left)",
        kRetryLater, " or ask for less"));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("the call's producer threw an exception: ", e.what()));
  } catch (...) {
    return absl::InternalError(
        "the call's producer threw an exception that is not a std::exception");
  }
}

// A call's producer thread, joined on every way out of the handler: a
// std::thread destroyed while joinable ends the process (std::terminate).
// Leaving before Join() (an exception between the start and the join),
// the producer is told to stop first, so the join does not wait out its
// run. Declared after everything the producer's body reads, so it is
// joined before those go.
template <typename Response>
class ProducerThread {
 public:
  ProducerThread(BatchQueue<Response>& queue, CallControl& control)
      : queue_(queue), control_(control) {}
  ProducerThread(const ProducerThread&) = delete;
  ProducerThread& operator=(const ProducerThread&) = delete;
  ~ProducerThread() {
    if (!thread_.joinable()) return;
    control_.ClientGone();
    queue_.ConsumerGone();
    thread_.join();
  }

  // RESOURCE_EXHAUSTED when no thread can be started (StartThread).
  grpc::Status Start(const ServiceOptions& options,
                     std::function<void()> body) {
    return StartThread(options, "producer", std::move(body), &thread_);
  }
  // Waits for the producer, which has called ProducerDone().
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  BatchQueue<Response>& queue_;
  CallControl& control_;
  std::thread thread_;
};

// Writes queued messages until the producer is done. When the call is
// cancelled or a write fails, tells the producer to stop and drops what is
// queued. Calls written(message) after each write; true when the client
// went away.
template <typename Response, typename Written>
bool WriteQueued(grpc::ServerContext* context,
                 grpc::ServerWriter<Response>* writer,
                 BatchQueue<Response>& queue, CallControl& control,
                 std::atomic<std::uint64_t>& max_backlog, Written written) {
  std::uint64_t count = 0;
  bool client_gone = false;
  for (;;) {
    // Past max_call_duration what is queued is dropped and the producer
    // stops; the call ends with its status, not a cancellation.
    if (control.timed_out()) queue.ConsumerGone();
    typename BatchQueue<Response>::Message message;
    const auto got = queue.Pop(absl::Milliseconds(5), &message);
    if (got == BatchQueue<Response>::Got::kDone) break;
    if (got == BatchQueue<Response>::Got::kTimeout) {
      if (context->IsCancelled()) {
        client_gone = true;
        control.ClientGone();
        queue.ConsumerGone();
      }
      continue;
    }
    if (!writer->Write(*message)) {
      client_gone = true;
      control.ClientGone();
      queue.ConsumerGone();
      continue;
    }
    ++count;
    written(*message);
    queue.Recycle(std::move(message));
    RaiseMax(max_backlog, queue.produced() - count);
  }
  return client_gone;
}

// The status of a stream that stopped early, or OK when it did not; `sent`
// says what had been sent ("12 points").
grpc::Status Interrupted(const CallControl& control, bool client_gone,
                         grpc::ServerContext* context,
                         absl::Duration max_call_duration,
                         const std::string& sent) {
  if (control.timed_out()) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        absl::StrCat("max_call_duration = ",
                                     absl::FormatDuration(max_call_duration),
                                     " reached after ", sent, " sent"));
  }
  if (control.past_deadline()) {
    return grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("the call's deadline passed after ", sent, " sent"));
  }
  // The server is stopping (the watchdog cuts a call off for nothing
  // else once max_call_duration is ruled out).
  if (control.stopping() || control.cut_off()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("server shutting down after ", sent,
                                     " sent; retry elsewhere"));
  }
  if (client_gone || context->IsCancelled()) {
    return grpc::Status(
        grpc::StatusCode::CANCELLED,
        absl::StrCat("cancelled by the client after ", sent, " sent"));
  }
  return grpc::Status::OK;
}

// Whether the read that ended a client stream failed rather than met the
// client's end of the stream; ServerReader::Read() is false for both. A
// message over max_request_bytes fails it: gRPC refuses the message before
// the handler sees it, answers the client RESOURCE_EXHAUSTED and cancels
// the call. The handler then took an upload cut short for a whole one
// ("an upload needs at least one chunk", INVALID_ARGUMENT). The cancel can
// reach IsCancelled() a moment after the read failed, so this waits for it
// a little: it is asked only about an upload that is no raster, whose call
// fails either way.
bool ReadFailed(grpc::ServerContext* context) {
  if (grpc_call_failed_before_recv_message(context->c_call()) != 0) {
    return true;
  }
  const absl::Time until = absl::Now() + absl::Milliseconds(200);
  while (!context->IsCancelled()) {
    if (absl::Now() >= until) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// The status of a call whose request could not be made into a job: when
// the call had to stop while it was converted (a polygon's index takes
// seconds for millions of vertices), why it stopped, as Interrupted says;
// otherwise the conversion's own error.
grpc::Status Unprepared(const CallControl& control,
                        grpc::ServerContext* context,
                        const absl::Status& status,
                        absl::Duration max_call_duration) {
  if (absl::IsCancelled(status)) {
    const grpc::Status interrupted = Interrupted(
        control, /*client_gone=*/false, context, max_call_duration, "0 points");
    if (!interrupted.ok()) return interrupted;
  }
  return ToGrpc(status);
}

// Points in a PointBatch, whichever arrays it carries.
std::uint64_t PointCount(const v1::PointBatch& points) {
  if (points.layer_size() > 0)
    return static_cast<std::uint64_t>(points.layer_size());
  return points.dims() == 0
             ? 0
             : static_cast<std::uint64_t>(points.coords_size()) / points.dims();
}

}  // namespace

ScatterServiceImpl::ScatterServiceImpl(const ServiceOptions& options,
                                       std::shared_ptr<spdlog::logger> logger,
                                       prometheus::Registry& registry)
    : options_(options),
      logger_(std::move(logger)),
      rasters_(options.raster_cache_bytes),
      tile_cache_(options.tile_cache_bytes),
      pool_(options.threads),
      requests_(prometheus::BuildCounter()
                    .Name("scatter_requests_total")
                    .Help("Finished calls by method and status code")
                    .Register(registry)),
      points_(NewCounter(registry, "scatter_points_sent_total",
                         "Points written to Scatter and ScatterTiles streams")),
      in_flight_gauge_(
          NewGauge(registry, "scatter_streams_in_flight",
                   "Scatter, ScatterTiles and PutRaster calls running now")),
      cache_bytes_(NewGauge(registry, "scatter_raster_cache_bytes",
                            "Raster bytes (decoded pixels and block bounds) "
                            "held for digests")),
      seconds_(prometheus::BuildHistogram()
                   .Name("scatter_request_duration_seconds")
                   .Help("Duration of the calls admitted (not those refused "
                         "at once: scatter_requests_refused_total), by "
                         "method, request to status")
                   .Register(registry)),
      refused_(prometheus::BuildCounter()
                   .Name("scatter_requests_refused_total")
                   .Help("Calls turned away for the server's load, not "
                         "their request, by method and reason: max_streams, "
                         "memory_budget (running calls hold it) or threads "
                         "(RESOURCE_EXHAUSTED, '...; retry later'), or "
                         "draining (UNAVAILABLE); also counted in "
                         "scatter_requests_total, not timed")
                   .Register(registry)),
      tiles_(NewCounter(registry, "scatter_tiles_sent_total",
                        "Tiles written to ScatterTiles streams")),
      generators_(
          NewCounter(registry, "scatter_tile_generators_computed_total",
                     "Tile generators computed (not found in the cache)")),
      tile_cache_bytes_(NewGauge(registry, "scatter_tile_cache_bytes",
                                 "Bytes of tile generators held for reuse")),
      memory_held_gauge_(NewGauge(
          registry, "scatter_memory_held_bytes",
          "Memory running calls hold against memory_budget_bytes: sampling "
          "memory by their estimates, the tile generators ScatterTiles "
          "calls keep alive and the buffers of PutRaster uploads, by their "
          "bytes (estimates are fractional; the gauge shows whole bytes)")) {
  // What runs, for dashboards and alerts across a rolling update: the
  // release, the algorithm version the points belong to, the SIMD level.
  prometheus::BuildGauge()
      .Name("scatter_build_info")
      .Help(
          "Always 1; the labels say the release, algorithm_version and "
          "SIMD level this scatterd runs")
      .Register(registry)
      .Add({{"version", ScatterVersion()},
            {"algorithm_version", absl::StrCat(sampler::kAlgorithmVersion)},
            {"simd", sampler::SimdLevelName(sampler::ResolveSimdLevel(
                         sampler::SimdLevel::kBest))}})
      .Set(1);
  // The configured limits, so that dashboards and alerts compute saturation
  // (scatter_streams_in_flight over max_streams, scatter_memory_held_bytes
  // over memory_budget_bytes) without copying the flags.
  auto& limits = prometheus::BuildGauge()
                     .Name("scatter_limit")
                     .Help(
                         "The configured limits by name: max_streams (calls), "
                         "memory_budget_bytes, raster_cache_bytes, "
                         "tile_cache_bytes")
                     .Register(registry);
  limits.Add({{"name", "max_streams"}})
      .Set(static_cast<double>(options.max_streams));
  limits.Add({{"name", "memory_budget_bytes"}})
      .Set(static_cast<double>(options.memory_budget_bytes));
  limits.Add({{"name", "raster_cache_bytes"}})
      .Set(static_cast<double>(options.raster_cache_bytes));
  limits.Add({{"name", "tile_cache_bytes"}})
      .Set(static_cast<double>(options.tile_cache_bytes));
  // Every method's series exist from the start, at 0, so that rate() and
  // absent() work before the first call of each kind.
  for (const char* method : kMethods) {
    requests_.Add({{"method", method}, {"code", "OK"}});
    seconds_.Add({{"method", method}}, DurationBuckets());
    for (const char* reason :
         {"max_streams", "memory_budget", "threads", "draining"}) {
      refused_.Add({{"method", method}, {"reason", reason}});
    }
  }
}

grpc::Status ScatterServiceImpl::HoldMessage(
    const google::protobuf::Message& request, int obstacles, MemoryHold* hold) {
  // gRPC has received and parsed the message by now: what holding it
  // bounds is the rest of the call. Calls that each sent a big raster
  // inline went on to decode it and sample beside the others' messages,
  // none of which the budget counted (16 calls with a 63 MB mask reached
  // 1.2 GB resident under a 384 MB budget). Its obstacles, many times
  // their wire bytes once parsed, are held here for the whole call, parsed
  // and as the runs hold them: ToTilesJob and TileWorld::Create copy them
  // before any later hold (2^20 of them took 232 MB more there).
  return HoldMemory(static_cast<double>(request.ByteSizeLong()) +
                        obstacles * (kParsedObstacleBytes + kObstacleBytes),
                    "the request message", hold, "memory");
}

grpc::Status ScatterServiceImpl::HoldMemory(double bytes, const char* what,
                                            MemoryHold* hold, const char* kind,
                                            const MemoryHold* own) {
  const double budget = static_cast<double>(options_.memory_budget_bytes);
  // What the call holds already apart from *hold (its request message):
  // with it over the budget, no retry can pass, and others hold none of
  // it (the message said "running calls hold" the call's own message and
  // "retry later").
  const double mine = own != nullptr ? own->bytes_ : 0;
  // Compared in double: a NaN or huge estimate is refused too.
  if (!(bytes + mine <= budget)) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat(
            what, " would hold about ", WholeFigure(bytes), " bytes of ", kind,
            bytes <= budget ? absl::StrCat(" beside the ", WholeFigure(mine),
                                           " of its request message")
                            : "",
            ", over the limit memory_budget_bytes = ",
            options_.memory_budget_bytes));
  }
  absl::MutexLock lock(&memory_mu_);
  // A hold that holds bytes already is replaced, at once: what it held is
  // never given back for another call to take first.
  const double before = hold->service_ != nullptr ? hold->bytes_ : 0;
  const double others = std::max(0.0, memory_held_ - before - mine);
  if (others + mine + bytes > budget) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat(what, " would hold about ", WholeFigure(bytes),
                     " bytes of ", kind, " and running calls hold ",
                     WholeFigure(others), " of memory_budget_bytes = ",
                     options_.memory_budget_bytes, kRetryLater));
  }
  memory_held_ += bytes - before;
  memory_held_gauge_.Set(std::round(memory_held_));
  logger_->debug(
      "admitted: {} holds about {} bytes of {}; running calls hold {} of "
      "memory_budget_bytes = {}",
      what, WholeFigure(bytes), kind, WholeFigure(memory_held_),
      options_.memory_budget_bytes);
  hold->service_ = this;
  hold->bytes_ = bytes;
  return grpc::Status::OK;
}

absl::Status ScatterServiceImpl::HoldIndex(double bytes, MemoryHold* hold,
                                           const MemoryHold& message) {
  const grpc::Status held =
      HoldMemory(bytes, "the polygon index", hold, "memory", &message);
  if (held.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(held.error_code()),
                      held.error_message());
}

bool ScatterServiceImpl::ResizeMemory(double bytes, MemoryHold* hold,
                                      double* others, const MemoryHold* own) {
  absl::MutexLock lock(&memory_mu_);
  const double rest = std::max(0.0, memory_held_ - hold->bytes_);
  if (bytes > hold->bytes_ &&
      !(rest + bytes <= static_cast<double>(options_.memory_budget_bytes))) {
    // Not the call's own request message, which others do not hold.
    *others = std::max(0.0, rest - (own != nullptr ? own->bytes_ : 0));
    return false;
  }
  memory_held_ = rest + bytes;
  hold->bytes_ = bytes;
  memory_held_gauge_.Set(std::round(memory_held_));
  return true;
}

ScatterServiceImpl::MemoryHold::~MemoryHold() {
  if (service_ == nullptr) return;
  absl::MutexLock lock(&service_->memory_mu_);
  service_->memory_held_ -= bytes_;
  // Sums of doubles need not return to 0 exactly.
  if (service_->memory_held_ < 1) service_->memory_held_ = 0;
  service_->memory_held_gauge_.Set(std::round(service_->memory_held_));
}

void ScatterServiceImpl::CountGenerators(const sampler::TileWorld& world,
                                         TilesTally* tally) {
  const std::uint64_t computed = world.generated();
  generators_.Increment(
      static_cast<double>(computed - tally->generators_computed));
  tally->generators_computed = computed;
  tile_cache_bytes_.Set(static_cast<double>(tile_cache_.stats().bytes));
}

namespace {

// Why a RESOURCE_EXHAUSTED was of the server's load (kRetryLater): a
// thread that could not start, or memory (the budget's running calls, or
// the process's own); nullptr for one of the request's.
const char* OverloadReason(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED ||
      !absl::StrContains(status.error_message(), kRetryLater)) {
    return nullptr;
  }
  return absl::StrContains(status.error_message(), kThreadCannotStart)
             ? "threads"
             : "memory_budget";
}

}  // namespace

void ScatterServiceImpl::Record(const char* method, const grpc::Status& status,
                                absl::Duration elapsed, const char* refusal,
                                absl::FunctionRef<std::string()> line) {
  requests_.Add({{"method", method}, {"code", CodeName(status.error_code())}})
      .Increment();
  cache_bytes_.Set(static_cast<double>(rasters_.bytes()));
  tile_cache_bytes_.Set(static_cast<double>(tile_cache_.stats().bytes));
  if (refusal == nullptr) refusal = OverloadReason(status);
  if (refusal == nullptr) {
    seconds_.Add({{"method", method}}, DurationBuckets())
        .Observe(absl::ToDoubleSeconds(elapsed));
    const grpc::StatusCode code = status.error_code();
    const bool fault = code == grpc::StatusCode::INTERNAL ||
                       code == grpc::StatusCode::UNKNOWN ||
                       code == grpc::StatusCode::DATA_LOSS;
    logger_->log(fault ? spdlog::level::err : spdlog::level::info, "{}",
                 line());
    return;
  }
  refused_.Add({{"method", method}, {"reason", refusal}}).Increment();
  std::uint64_t left_out = 0;
  {
    absl::MutexLock lock(&refusal_log_mu_);
    RefusalLog& log = refusal_log_[{method, refusal}];
    const absl::Time now = absl::Now();
    if (now - log.last < absl::Seconds(1)) {
      ++log.left_out;
      return;
    }
    log.last = now;
    left_out = std::exchange(log.left_out, 0);
  }
  if (left_out == 0) {
    logger_->info("{}", line());
  } else {
    logger_->info(
        "{} ({} more {} calls refused for {} since the last such "
        "line; scatter_requests_refused_total counts them all)",
        line(), left_out, method, refusal);
  }
}

void ScatterServiceImpl::FlushRefusalLog() {
  absl::MutexLock lock(&refusal_log_mu_);
  for (auto& [kind, log] : refusal_log_) {
    if (log.left_out == 0) continue;
    logger_->info("{} more {} calls refused for {} since the last such line",
                  log.left_out, kind.first, kind.second);
    log.left_out = 0;
  }
}

grpc::Status ScatterServiceImpl::Admit(absl::FunctionRef<grpc::Status()> stream,
                                       const char** refusal) {
  if (draining_.load()) {
    *refusal = "draining";
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server shutting down");
  }
  if (stats_.in_flight.fetch_add(1) >= options_.max_streams) {
    stats_.in_flight.fetch_sub(1);
    *refusal = "max_streams";
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("concurrent streams: the limit max_streams = ",
                     options_.max_streams, " is reached; retry later"));
  }
  in_flight_gauge_.Increment();
  // gRPC answers an exception out of a handler with UNKNOWN and serves on:
  // the slot must come back then too, or max_streams of them would shut
  // out every later call.
  struct Release {
    ScatterServiceImpl* service;
    ~Release() {
      service->in_flight_gauge_.Decrement();
      service->stats_.in_flight.fetch_sub(1);
    }
  } release{this};
  return stream();
}

void ScatterServiceImpl::StopInFlight() {
  stopping_.Raise();
  // Every call's watchdog cuts it off if it has not returned within
  // kWriteGrace (an upload's at once). Waiting for that means each status
  // is queued before the server's shutdown sends GOAWAY: after that, gRPC
  // closes a connection as soon as its last stream closes, and a status
  // still queued is lost (the last client cut off read "Socket closed").
  // in_flight counts a call until its handler returns (Admit).
  const absl::Time give_up =
      absl::Now() + CallControl::kWriteGrace + absl::Milliseconds(500);
  while (stats_.in_flight.load() > 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(2));
  }
}

grpc::Status ScatterServiceImpl::Scatter(
    grpc::ServerContext* context, const v1::ScatterRequest* request,
    grpc::ServerWriter<v1::ScatterResponse>* writer) {
  const absl::Time start = absl::Now();
  // Read now: once the drain has cancelled the call, gRPC says "unknown".
  const std::string peer = context->peer();
  std::uint64_t sent = 0;
  const char* refusal = nullptr;
  const grpc::Status status =
      Admit([&] { return Stream(context, *request, writer, &sent); }, &refusal);
  const absl::Duration elapsed = absl::Now() - start;
  Record("Scatter", status, elapsed, refusal, [&] {
    return fmt::format(
        "Scatter peer={} layers={} seed={} points={} code={} "
        "elapsed_ms={:.1f}{}{}",
        peer, request->layers_size(), request->seed(), sent,
        CodeName(status.error_code()), absl::ToDoubleMilliseconds(elapsed),
        status.ok() ? "" : " message=", status.error_message());
  });
  return status;
}

grpc::Status ScatterServiceImpl::Stream(
    grpc::ServerContext* context, const v1::ScatterRequest& request,
    grpc::ServerWriter<v1::ScatterResponse>* writer, std::uint64_t* sent) {
  const absl::Time start = absl::Now();
  const grpc::Status version = CheckVersion(request.algorithm_version());
  if (!version.ok()) return version;
  CallControl control(context, start, options_.max_call_duration, stopping_,
                      CallControl::kWriteGrace);
  const grpc::Status watched = control.Start(options_);
  if (!watched.ok()) return watched;
  auto should_stop = [&] { return control.ShouldStop(); };
  MemoryHold message_memory;
  const grpc::Status message_held =
      HoldMessage(request, request.obstacles_size(), &message_memory);
  if (!message_held.ok()) return message_held;
  // The polygon index's edges while it is built, then the estimate (which
  // counts the index as built) in their place.
  MemoryHold memory;
  absl::StatusOr<ScatterJob> job = ToJob(
      request, options_.limits, rasters_,
      [&] { return should_stop() || context->IsCancelled(); },
      [&](double bytes) { return HoldIndex(bytes, &memory, message_memory); });
  // Inline rasters went into the cache.
  cache_bytes_.Set(static_cast<double>(rasters_.bytes()));
  if (!job.ok()) {
    return Unprepared(control, context, job.status(),
                      options_.max_call_duration);
  }
  const grpc::Status held =
      HoldMemory(job->estimated_bytes, "the request", &memory,
                 "sampling memory", &message_memory);
  if (!held.ok()) return held;
  absl::StatusOr<sampler::LayeredSampler> run = sampler::LayeredSampler::Create(
      job->region, job->layers, job->shared, job->overrides);
  if (!run.ok()) return ToGrpc(run.status());
  BatchQueue<v1::ScatterResponse> queue(options_.queue_batches);
  bool cap_hit = false;
  std::uint64_t queued_points = 0;
  std::vector<std::uint64_t> per_layer;
  const std::vector<std::uint32_t> order = run->Order();
  per_layer.assign(order.size(), 0);
  absl::Status sampled;
  const std::uint64_t cap = job->point_cap;
  const v1::Fields fields = request.fields();

  auto produce = [&] {
    sampled = Guarded([&] {
      return run->Run(
          [&](const sampler::PointBatch& batch) {
            std::size_t n = batch.size();
            if (queued_points + n > cap) {
              n = static_cast<std::size_t>(cap - queued_points);
              cap_hit = true;
            }
            if (n > 0) {
              // A batch comes from one layer's run.
              const auto at =
                  std::find(order.begin(), order.end(), batch.layer[0]);
              per_layer[static_cast<std::size_t>(at - order.begin())] += n;
              queued_points += n;
              if (!queue.Push(Pack(batch, n, fields, queue.Take()),
                              should_stop)) {
                return false;
              }
            }
            return !cap_hit;
          },
          should_stop);
    });
    queue.ProducerDone();
  };
  ProducerThread<v1::ScatterResponse> producer(queue, control);
  const grpc::Status producing = producer.Start(options_, produce);
  if (!producing.ok()) return producing;
  const bool client_gone =
      WriteQueued(context, writer, queue, control, stats_.max_backlog,
                  [&](const v1::ScatterResponse& message) {
                    const std::uint64_t n = PointCount(message.points());
                    *sent += n;
                    points_.Increment(static_cast<double>(n));
                    stats_.points_sent.fetch_add(n);
                  });
  producer.Join();

  const grpc::Status interrupted =
      Interrupted(control, client_gone, context, options_.max_call_duration,
                  absl::StrCat(*sent, " points"));
  if (!interrupted.ok()) return interrupted;
  if (cap_hit) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("point cap reached: ", *sent,
                     " points sent; the limit is max_points = ", cap,
                     request.max_points() != 0 && request.max_points() == cap
                         ? " (the request's own)"
                         : " (the server's)"));
  }
  if (!sampled.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(sampled.code()),
                        absl::StrCat(ServerWords(sampled.message()), " (after ",
                                     *sent, " points sent)"));
  }

  v1::ScatterResponse last;
  v1::Summary* summary = last.mutable_summary();
  for (std::size_t i = 0; i < order.size(); ++i) {
    v1::LayerCount* count = summary->add_layers();
    count->set_layer(order[i]);
    count->set_points(per_layer[i]);
  }
  summary->set_total_points(*sent);
  summary->set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  summary->set_algorithm_version(sampler::kAlgorithmVersion);
  if (!writer->Write(last)) {
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        "the client went away before the summary");
  }
  return grpc::Status::OK;
}

grpc::Status ScatterServiceImpl::ScatterTiles(
    grpc::ServerContext* context, const v1::ScatterTilesRequest* request,
    grpc::ServerWriter<v1::TileResponse>* writer) {
  const absl::Time start = absl::Now();
  const std::string peer = context->peer();  // As Scatter reads it.
  TilesTally tally;
  const char* refusal = nullptr;
  const grpc::Status status = Admit(
      [&] { return StreamTiles(context, *request, writer, &tally); }, &refusal);
  const absl::Duration elapsed = absl::Now() - start;
  Record("ScatterTiles", status, elapsed, refusal, [&] {
    return fmt::format(
        "ScatterTiles peer={} layers={} seed={} tiles={}/{} points={} "
        "generated={} held_bytes={} code={} elapsed_ms={:.1f}{}{}",
        peer, request->layers_size(), request->seed(), tally.tiles_sent,
        tally.tiles_asked, tally.points_sent, tally.generators_computed,
        tally.generators_held, CodeName(status.error_code()),
        absl::ToDoubleMilliseconds(elapsed),
        status.ok() ? "" : " message=", status.error_message());
  });
  return status;
}

grpc::Status ScatterServiceImpl::StreamTiles(
    grpc::ServerContext* context, const v1::ScatterTilesRequest& request,
    grpc::ServerWriter<v1::TileResponse>* writer, TilesTally* tally) {
  const absl::Time start = absl::Now();
  const grpc::Status version = CheckVersion(request.algorithm_version());
  if (!version.ok()) return version;
  CallControl control(context, start, options_.max_call_duration, stopping_,
                      CallControl::kWriteGrace);
  const grpc::Status watched = control.Start(options_);
  if (!watched.ok()) return watched;
  // Pool threads poll this too: atomics and the clock only.
  auto should_stop = [&] { return control.ShouldStop(); };
  MemoryHold message_memory;
  const grpc::Status message_held =
      HoldMessage(request, request.obstacles_size(), &message_memory);
  if (!message_held.ok()) return message_held;
  // The polygon index's edges while it is built, then the call's sampling
  // memory (which counts the index as built) in their place.
  MemoryHold memory;
  absl::StatusOr<TilesJob> job = ToTilesJob(
      request, options_.limits, rasters_,
      [&] { return should_stop() || context->IsCancelled(); },
      [&](double bytes) { return HoldIndex(bytes, &memory, message_memory); });
  // Inline rasters went into the cache.
  cache_bytes_.Set(static_cast<double>(rasters_.bytes()));
  if (!job.ok()) {
    return Unprepared(control, context, job.status(),
                      options_.max_call_duration);
  }
  // Set as soon as the request converts, before its estimate and the
  // memory budget can refuse it: the log said tiles=0/0 of a call refused
  // for its estimate. (A request that does not convert logs 0.)
  tally->tiles_asked = job->tiles.size();
  absl::StatusOr<std::shared_ptr<const sampler::TileWorld>> world =
      sampler::TileWorld::Create(job->world);
  if (!world.ok()) return ToGrpc(world.status());
  const absl::Status estimate =
      CheckTilesEstimate(*job, **world, options_.limits);
  if (!estimate.ok()) return ToGrpc(estimate);
  // What the call holds against memory_budget_bytes: from the start, one
  // generator's sampling memory by estimate for each of the pool's threads
  // and this one (each runs a generator at a time), and as Serve makes
  // them, the bytes of the tile generators it keeps alive (those it still
  // reads, and the points of those being made: Serve asks before they
  // grow, and keeps them within tile_cache_bytes). The caches are
  // budgeted apart; a generator the cache holds too is counted all the
  // same, since the call keeps it alive if the cache lets it go.
  // And what the world holds once: its region's polygon index (which the
  // call did not count at all). Its obstacles are held with the message.
  const double sampling =
      GeneratorBytes(*job, **world) * pool_.threads() +
      (job->world.region.has_value()
           ? static_cast<double>(job->world.region->IndexBytes())
           : 0);
  const grpc::Status held = HoldMemory(sampling, "the tiles", &memory,
                                       "sampling memory", &message_memory);
  if (!held.ok()) return held;
  // As HoldMemory: past the budget with the call's own request message is
  // over the limit, not a matter of other calls (that said "other running
  // calls hold" the call's own message and "retry later" on an idle
  // server; found by a review helper).
  auto hold_generators = [&](std::size_t generators) {
    const double bytes = sampling + static_cast<double>(generators);
    double others = 0;
    if (ResizeMemory(bytes, &memory, &others, &message_memory)) {
      return absl::OkStatus();
    }
    const double budget = static_cast<double>(options_.memory_budget_bytes);
    const double mine = message_memory.bytes_;
    return absl::ResourceExhaustedError(absl::StrCat(
        "the tiles would hold about ", WholeFigure(bytes), " bytes (",
        WholeFigure(sampling), " of sampling memory and ", generators,
        " of tile generators kept alive)",
        !(bytes + mine <= budget)
            ? absl::StrCat(mine > 0 && bytes <= budget
                               ? absl::StrCat(" beside the ", WholeFigure(mine),
                                              " of its request message")
                               : "",
                           ", over the limit memory_budget_bytes = ",
                           options_.memory_budget_bytes)
            : absl::StrCat(" and other running calls hold ",
                           WholeFigure(others), " of memory_budget_bytes = ",
                           options_.memory_budget_bytes, kRetryLater)));
  };

  BatchQueue<v1::TileResponse> queue(options_.queue_batches);
  const std::vector<std::uint32_t>& order = (*world)->layer_order();
  std::vector<std::uint64_t> per_layer(order.size(), 0);
  bool cap_hit = false;
  std::uint64_t queued_points = 0;
  const std::uint64_t cap = job->point_cap;
  const v1::Fields fields = request.fields();
  absl::Status served;

  auto produce = [&] {
    served = Guarded([&] {
      return (*world)->Serve(
          job->tiles, &tile_cache_, &pool_,
          [&](const sampler::TilePoints& tile) {
            // Tiles are never cut: the cap ends the stream between tiles.
            const std::size_t n = tile.points.size();
            if (queued_points + n > cap) {
              cap_hit = true;
              return false;
            }
            queued_points += n;
            for (std::uint32_t layer : tile.points.layer) {
              const auto at = std::find(order.begin(), order.end(), layer);
              ++per_layer[static_cast<std::size_t>(at - order.begin())];
            }
            const std::size_t parts = TileParts(n, job->batch_size);
            for (std::size_t part = 0; part < parts; ++part) {
              auto message = queue.Take();
              PackTilePart(tile, part, job->batch_size, fields, message.get());
              if (!queue.Push(std::move(message), should_stop)) return false;
            }
            return true;
          },
          should_stop, hold_generators);
    });
    queue.ProducerDone();
  };
  ProducerThread<v1::TileResponse> producer(queue, control);
  const grpc::Status producing = producer.Start(options_, produce);
  if (!producing.ok()) return producing;
  const bool client_gone =
      WriteQueued(context, writer, queue, control, stats_.max_backlog,
                  [&](const v1::TileResponse& message) {
                    const std::uint64_t n = PointCount(message.points());
                    tally->points_sent += n;
                    points_.Increment(static_cast<double>(n));
                    stats_.points_sent.fetch_add(n);
                    if (message.last_part()) {
                      ++tally->tiles_sent;
                      tiles_.Increment();
                      stats_.tiles_sent.fetch_add(1);
                      // As tiles go, not only when the call ends: a long
                      // call showed 0 generators and an empty cache.
                      CountGenerators(**world, tally);
                    }
                  });
  producer.Join();
  CountGenerators(**world, tally);
  tally->generators_held = (*world)->peak_held_bytes();

  const std::string sent = absl::StrCat(tally->tiles_sent, " tiles (",
                                        tally->points_sent, " points)");
  const grpc::Status interrupted = Interrupted(
      control, client_gone, context, options_.max_call_duration, sent);
  if (!interrupted.ok()) return interrupted;
  if (cap_hit) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("point cap reached after ", sent,
                     "; the next tile would pass the limit max_points = ", cap,
                     " (the server's); ask for fewer tiles per call"));
  }
  if (!served.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(served.code()),
                        absl::StrCat(ServerWords(served.message()), " (after ",
                                     sent, " sent)"));
  }

  v1::TileResponse last;
  v1::TilesSummary* summary = last.mutable_summary();
  summary->set_tiles(tally->tiles_sent);
  summary->set_total_points(tally->points_sent);
  summary->set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  summary->set_algorithm_version(sampler::kAlgorithmVersion);
  summary->set_generators_computed(tally->generators_computed);
  summary->set_tile_size((*world)->tile_size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    v1::LayerCount* count = summary->add_layers();
    count->set_layer(order[i]);
    count->set_points(per_layer[i]);
  }
  if (!writer->Write(last)) {
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        "the client went away before the summary");
  }
  return grpc::Status::OK;
}

grpc::Status ScatterServiceImpl::Upload(
    grpc::ServerContext* context, grpc::ServerReader<v1::RasterChunk>* reader,
    v1::RasterRef* response, std::size_t* bytes) {
  const absl::Time start = absl::Now();
  // No grace: a Read from a client that stopped sending ends only when the
  // watchdog cuts the call off, so a stalled upload holds its slot and its
  // buffer no longer than max_call_duration.
  CallControl control(context, start, options_.max_call_duration, stopping_,
                      absl::ZeroDuration());
  const grpc::Status watched = control.Start(options_);
  if (!watched.ok()) return watched;
  // The bytes received are held against memory_budget_bytes as they grow:
  // max_streams uploads of max_upload_bytes each were memory no budget
  // counted, enough to have the process killed for want of it.
  MemoryHold memory;
  grpc::Status status = HoldMemory(0, "the upload", &memory);
  v1::RasterChunk chunk;
  std::string pixels;
  v1::RasterFormat format = v1::RASTER_FORMAT_UNSPECIFIED;
  std::uint32_t width = 0, height = 0;
  bool first = true;
  bool size_checked = false;
  std::size_t index = 0;
  bool read_ended = false;
  while (status.ok() && !control.ShouldStop()) {
    if (!reader->Read(&chunk)) {
      read_ended = true;
      break;
    }
    if (first) {
      format = chunk.format();
      width = chunk.width();
      height = chunk.height();
      first = false;
      // The format before the bytes: a large upload of no format was told
      // it passed max_raster_bytes, so a client would shrink it.
      const absl::Status known = KnownFormat("chunks[0]", format);
      if (!known.ok()) {
        status = ToGrpc(known);
        break;
      }
    } else if ((chunk.format() != v1::RASTER_FORMAT_UNSPECIFIED &&
                chunk.format() != format) ||
               (chunk.width() != 0 && chunk.width() != width) ||
               (chunk.height() != 0 && chunk.height() != height)) {
      // Ignoring them would store another raster than the client meant.
      status = grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("chunks[", index,
                       "]: format, width and height belong to the first "
                       "chunk; a later one leaves them unset or equal "
                       "(the first said ",
                       v1::RasterFormat_Name(format), " ", width, " x ",
                       height, ", this one ",
                       v1::RasterFormat_Name(chunk.format()), " ",
                       chunk.width(), " x ", chunk.height(), ")"));
      break;
    }
    if (!size_checked) {
      // The decoded size before the bytes: a raw raster's is in the first
      // chunk, a PNG's in its header (its first 24 bytes). It was checked
      // once all had come, so a raster far too large for the server was
      // received and held whole first (found by a review helper).
      std::string head = pixels.substr(0, 24);
      head.append(chunk.pixels(), 0, 24 - head.size());
      if (format != v1::RASTER_FORMAT_PNG || head.size() == 24) {
        size_checked = true;
        const absl::Status fits =
            CheckDecodedSize(absl::StrCat("chunks[", index, "]"), format, width,
                             height, head, options_.limits.max_raster_bytes);
        if (!fits.ok()) {
          status = ToGrpc(fits);
          break;
        }
      }
    }
    if (pixels.size() + chunk.pixels().size() > options_.max_upload_bytes) {
      // scatterd sets the upload limit from --max_raster_bytes.
      status = grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("chunks[", index, "].pixels: the upload passes ",
                       pixels.size() + chunk.pixels().size(),
                       " pixel bytes, over the limit max_raster_bytes = ",
                       options_.max_upload_bytes));
      break;
    }
    const std::size_t need = pixels.size() + chunk.pixels().size();
    if (need > pixels.capacity()) {
      // The bytes move to a new buffer of exactly the size held: doubled
      // as append would, within the upload limit, or only what they need
      // when the doubling does not fit the budget. (A fresh string's
      // reserve allocates what it is asked; reserve on a full one may
      // round up to twice its capacity, past what was held.) While they
      // move, the old buffer and the new are both held.
      // (The empty string's buffer is inside it, no allocation.)
      const std::size_t old_capacity = pixels.empty() ? 0 : pixels.capacity();
      std::size_t grown = std::min(std::max(need, 2 * pixels.capacity()),
                                   std::max(need, options_.max_upload_bytes));
      double others = 0;
      bool held = ResizeMemory(static_cast<double>(old_capacity + grown),
                               &memory, &others);
      if (!held && grown > need) {
        grown = need;
        held = ResizeMemory(static_cast<double>(old_capacity + grown), &memory,
                            &others);
      }
      if (!held) {
        const std::size_t hold = old_capacity + grown;
        status = grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            absl::StrCat(
                "chunks[", index, "].pixels: the upload would hold ", hold,
                " bytes while its buffer grows to ", grown,
                hold > options_.memory_budget_bytes
                    ? absl::StrCat(", over the limit memory_budget_bytes = ",
                                   options_.memory_budget_bytes)
                    : absl::StrCat(", and running calls hold ",
                                   WholeFigure(others),
                                   " of memory_budget_bytes = ",
                                   options_.memory_budget_bytes, kRetryLater)));
        break;
      }
      {
        std::string bigger;
        bigger.reserve(grown);
        bigger.append(pixels);
        pixels.swap(bigger);
      }
      // Less than is held: always granted.
      ResizeMemory(static_cast<double>(pixels.capacity()), &memory, &others);
    }
    ++index;
    pixels.append(chunk.pixels());
  }
  // A cancelled upload is one the client cancelled, or one gRPC cut off
  // for a chunk over max_request_bytes: it refuses such a message before
  // the handler sees it, tells the client RESOURCE_EXHAUSTED and cancels
  // the call, and the handler cannot tell which.
  auto interrupted = [&] {
    const grpc::Status why = Interrupted(
        control, /*client_gone=*/false, context, options_.max_call_duration,
        absl::StrCat(pixels.size(), " pixel bytes"));
    if (why.error_code() != grpc::StatusCode::CANCELLED) return why;
    return grpc::Status(
        grpc::StatusCode::CANCELLED,
        absl::StrCat(
            "chunks[", index, "]: the upload ended after ", index,
            " chunks and ", pixels.size(),
            " pixel bytes: the client cancelled it, or gRPC refused chunks[",
            index,
            "] for passing max_request_bytes = ", options_.max_request_bytes,
            " (the client was told RESOURCE_EXHAUSTED)"));
  };
  if (status.ok()) status = interrupted();
  // An upload that is no raster (no chunk, too few bytes for its size, a
  // PNG cut short) may be one whose read failed, which the status names.
  auto cut_short = [&] {
    if (!read_ended || !ReadFailed(context)) return grpc::Status::OK;
    return interrupted();
  };
  if (status.ok() && first) {
    status = cut_short();
    if (status.ok()) {
      status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "chunks: an upload needs at least one chunk");
    }
  }
  if (status.ok()) {
    absl::StatusOr<RasterCache::Entry> entry =
        rasters_.Put("chunks", format, width, height, pixels,
                     options_.limits.max_raster_bytes);
    if (!entry.ok()) {
      status = cut_short();
      if (status.ok()) status = ToGrpc(entry.status());
    } else {
      response->set_digest(entry->digest);
      response->set_pixel_bytes(pixels.size());
      response->set_width(entry->raster->width());
      response->set_height(entry->raster->height());
    }
  }
  *bytes = pixels.size();
  return status;
}

grpc::Status ScatterServiceImpl::PutRaster(
    grpc::ServerContext* context, grpc::ServerReader<v1::RasterChunk>* reader,
    v1::RasterRef* response) {
  const absl::Time start = absl::Now();
  const std::string peer = context->peer();  // As Scatter reads it.
  std::size_t bytes = 0;
  const char* refusal = nullptr;
  // An upload holds a handler thread and up to max_upload_bytes while it
  // runs, so it counts against max_streams like a stream.
  const grpc::Status status = Admit(
      [&] { return Upload(context, reader, response, &bytes); }, &refusal);
  const absl::Duration elapsed = absl::Now() - start;
  Record("PutRaster", status, elapsed, refusal, [&] {
    return fmt::format(
        "PutRaster peer={} bytes={} code={} elapsed_ms={:.1f}{}{}", peer, bytes,
        CodeName(status.error_code()), absl::ToDoubleMilliseconds(elapsed),
        status.ok() ? " digest=" : " message=",
        status.ok() ? response->digest() : status.error_message());
  });
  return status;
}

}  // namespace scatter::server
