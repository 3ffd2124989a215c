#ifndef SCATTER_TESTS_SERVER_SERVICE_TEST_UTIL_H_
#define SCATTER_TESTS_SERVER_SERVICE_TEST_UTIL_H_

// Shared pieces of the service tests: a server on loopback with a captured
// log, requests, and a client that collects a whole stream.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "scatter/v1/scatter.grpc.pb.h"
#include "server/server.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/ostream_sink.h"

namespace scatter::server::testing {

// What a client received from one Scatter call.
struct Received {
  grpc::Status status;
  int dims = 0;
  std::vector<double> coords;
  std::vector<double> radius;
  std::vector<std::uint32_t> layer;
  std::vector<std::uint64_t> id;
  std::vector<double> yaw;
  std::vector<double> scale;
  std::size_t messages = 0;
  bool has_summary = false;
  v1::Summary summary;
  // Points received (coordinates always travel).
  std::size_t size() const {
    return dims > 0 ? coords.size() / static_cast<std::size_t>(dims) : 0;
  }
};

inline Received Collect(v1::ScatterService::Stub& stub,
                        const v1::ScatterRequest& request,
                        grpc::ClientContext* context = nullptr) {
  grpc::ClientContext own;
  if (context == nullptr) context = &own;
  Received out;
  auto reader = stub.Scatter(context, request);
  v1::ScatterResponse response;
  while (reader->Read(&response)) {
    ++out.messages;
    if (response.has_summary()) {
      out.has_summary = true;
      out.summary = response.summary();
      continue;
    }
    const v1::PointBatch& p = response.points();
    out.dims = static_cast<int>(p.dims());
    out.coords.insert(out.coords.end(), p.coords().begin(), p.coords().end());
    out.radius.insert(out.radius.end(), p.radius().begin(), p.radius().end());
    out.layer.insert(out.layer.end(), p.layer().begin(), p.layer().end());
    out.id.insert(out.id.end(), p.id().begin(), p.id().end());
    out.yaw.insert(out.yaw.end(), p.yaw().begin(), p.yaw().end());
    out.scale.insert(out.scale.end(), p.scale().begin(), p.scale().end());
  }
  out.status = reader->Finish();
  return out;
}

// Makes `input` an inline 8-bit raster of width x height pixels (row 0 at
// the top) over [0, x1] x [0, y1].
inline void SetU8Raster(v1::RasterInput* input, std::uint32_t width,
                        std::uint32_t height, std::string pixels, double x1,
                        double y1) {
  v1::RasterData* data = input->mutable_data();
  data->set_format(v1::RASTER_FORMAT_U8);
  data->set_width(width);
  data->set_height(height);
  data->set_pixels(std::move(pixels));
  input->set_x1(x1);
  input->set_y1(y1);
}

// A dense Poisson layer over a 2D box [0, side]^2.
inline v1::ScatterRequest BoxRequest(double side, double spacing,
                                     std::uint64_t seed = 7) {
  v1::ScatterRequest request;
  request.set_seed(seed);
  v1::Box* box = request.mutable_region()->mutable_box();
  box->add_min(0);
  box->add_min(0);
  box->add_max(side);
  box->add_max(side);
  v1::Layer* layer = request.add_layers();
  layer->set_id(1);
  layer->set_spacing(spacing);
  return request;
}

// A request that runs for many seconds (about 2 M classic points at 1024
// attempts each) with a small grid (~80 MB), so that freeing it costs
// little: what is timed is how fast the sampler lets go.
inline v1::ScatterRequest LongRequest() {
  v1::ScatterRequest request = BoxRequest(1, 0.0007);
  request.mutable_layers(0)->set_method(v1::METHOD_POISSON_CLASSIC);
  request.mutable_layers(0)->set_max_attempts(1024);
  request.set_batch_size(256);  // The first batch comes early, even at -O0.
  return request;
}

// A server on 127.0.0.1:0 whose log lines land in `log`.
class LoopbackServer {
 public:
  explicit LoopbackServer(
      ServerOptions options = DefaultOptions(),
      spdlog::level::level_enum log_level = spdlog::level::info) {
    options.logger = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    options.logger->set_level(log_level);
    auto started = ScatterServer::Start(std::move(options));
    if (!started.ok()) std::abort();
    server_ = *std::move(started);
  }

  static ServerOptions DefaultOptions() {
    ServerOptions options;
    options.address = "127.0.0.1:0";
    options.metrics_address = "";
    options.grace_period = absl::Milliseconds(200);
    return options;
  }

  std::string target() const {
    return "127.0.0.1:" + std::to_string(server_->port());
  }
  std::shared_ptr<grpc::Channel> TcpChannel() const {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    return grpc::CreateCustomChannel(target(), grpc::InsecureChannelCredentials(),
                                     args);
  }
  std::unique_ptr<v1::ScatterService::Stub> TcpStub() const {
    return v1::ScatterService::NewStub(TcpChannel());
  }
  std::unique_ptr<v1::ScatterService::Stub> InProcessStub() {
    return v1::ScatterService::NewStub(server_->InProcessChannel());
  }
  ScatterServer& server() { return *server_; }
  std::string log() const { return log_.str(); }

 private:
  std::ostringstream log_;  // Before server_: outlives the logger's use.
  std::unique_ptr<ScatterServer> server_;
};

// A ServiceOptions::start_thread that starts the next `*starts` threads
// and then fails, as std::thread does in a process at its limit of threads
// (std::system_error, EAGAIN); a negative count starts every one.
inline std::function<std::thread(std::function<void()>)> LimitedThreadStarts(
    std::shared_ptr<std::atomic<int>> starts) {
  return [starts](std::function<void()> body) {
    int left = starts->load();
    do {
      if (left == 0) {
        throw std::system_error(
            std::make_error_code(std::errc::resource_unavailable_try_again));
      }
    } while (left > 0 && !starts->compare_exchange_weak(left, left - 1));
    return std::thread(std::move(body));
  };
}

// Waits until no stream is in flight (or `limit` passes); returns how long
// that took.
inline absl::Duration WaitIdle(ScatterServer& server, absl::Duration limit) {
  const absl::Time start = absl::Now();
  while (server.stats().in_flight.load() > 0 && absl::Now() - start < limit) {
    absl::SleepFor(absl::Microseconds(200));
  }
  return absl::Now() - start;
}

}  // namespace scatter::server::testing

#endif  // SCATTER_TESTS_SERVER_SERVICE_TEST_UTIL_H_
