#include "client/client.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace scatter::client {
namespace {

// Round robin over the addresses whose health is SERVING (gRPC's
// client-side health checking, which needs round robin's policy in the
// service config too).
constexpr char kBalancedServiceConfig[] =
    R"({"loadBalancingConfig": [{"round_robin": {}}],
        "healthCheckConfig": {"serviceName": "scatter.v1.ScatterService"}})";

// Taken once per call: the upload and resends of a lost raster run within
// the caller's timeout, not each within a fresh one.
absl::Time CallDeadline(const CallOptions& call) {
  // absl's time saturates: an infinite timeout is InfiniteFuture, where
  // now() + milliseconds would overflow.
  return call.timeout > absl::ZeroDuration() ? absl::Now() + call.timeout
                                             : absl::InfiniteFuture();
}

void ApplyDeadline(absl::Time deadline, grpc::ClientContext* context) {
  if (deadline != absl::InfiniteFuture()) {
    context->set_deadline(absl::ToChronoTime(deadline));
  }
}

bool Cancelled(const std::function<bool()>& cancelled) {
  return cancelled && cancelled();
}

// Polls `cancelled` every kCancelPoll on a thread of its own while it
// lives, and cancels `context` when it says so: a call waits in Read() or
// Write() while the server computes (a cold tile's generators took 13 s
// to its first part), where the caller's code does not run.
class CancelWatch {
 public:
  CancelWatch(const std::function<bool()>& cancelled,
              grpc::ClientContext* context) {
    if (!cancelled) return;
    thread_ = std::thread([this, &cancelled, context] {
      absl::MutexLock lock(&mu_);
      while (!mu_.AwaitWithTimeout(absl::Condition(&done_), kCancelPoll)) {
        if (cancelled()) {
          fired_ = true;
          context->TryCancel();
          return;
        }
      }
    });
  }
  CancelWatch(const CancelWatch&) = delete;
  CancelWatch& operator=(const CancelWatch&) = delete;
  ~CancelWatch() { Stop(); }

  // Stops polling; true when the watch cancelled the call.
  bool Stop() {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
    }
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&mu_);
    return fired_;
  }

 private:
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// A raster the request names by digest, and the field that names it.
struct NamedDigest {
  std::string field;
  std::string digest;
};

void AddDigest(std::string field, const v1::RasterInput& input,
               std::vector<NamedDigest>* digests) {
  if (input.source_case() != v1::RasterInput::kDigest) return;
  // One upload per raster, however many fields name it.
  for (const NamedDigest& named : *digests) {
    if (named.digest == input.digest()) return;
  }
  digests->push_back({std::move(field), input.digest()});
}

// Every raster the request's region (none when null) and layers name by
// digest, once each, with the first field that names it.
std::vector<NamedDigest> NamedDigests(
    const v1::Region* region,
    const google::protobuf::RepeatedPtrField<v1::Layer>& layers) {
  std::vector<NamedDigest> named;
  if (region != nullptr && region->has_mask()) {
    AddDigest("region.mask", region->mask(), &named);
  }
  for (int i = 0; i < layers.size(); ++i) {
    if (layers[i].has_density()) {
      AddDigest(absl::StrCat("layers[", i, "].density"), layers[i].density(),
                &named);
    }
  }
  return named;
}

void InlineOne(v1::RasterInput* input,
               const absl::flat_hash_map<std::string, v1::RasterData>& known,
               bool* changed) {
  if (input->source_case() != v1::RasterInput::kDigest) return;
  auto it = known.find(input->digest());
  if (it == known.end()) return;
  *input->mutable_data() = it->second;
  *changed = true;
}

// The sizes in gRPC's words for a message over the receiver's limit,
// "Received message larger than max (1048588 vs. 1048576)"; false when
// `message` is not those words.
bool ParseTooLarge(const std::string& message, std::uint64_t* size,
                   std::uint64_t* limit) {
  constexpr absl::string_view kWords = "Received message larger than max (";
  const std::size_t at = absl::string_view(message).find(kWords);
  if (at == std::string::npos) return false;
  const std::vector<absl::string_view> sizes =
      absl::StrSplit(absl::string_view(message).substr(at + kWords.size()),
                     absl::MaxSplits(absl::ByAnyChar(" )"), 3));
  return sizes.size() >= 3 && sizes[1] == "vs." &&
         absl::SimpleAtoi(sizes[0], size) && absl::SimpleAtoi(sizes[2], limit);
}

}  // namespace

bool StoppedAtOwnCap(const absl::Status& status,
                     const v1::ScatterRequest& request,
                     std::uint64_t received) {
  // Counted, not read from the message. The server's own limits end a
  // stream before the request's cap: max_streams and the memory budget
  // before any point, its max_points (when lower) after fewer points. A
  // stream that ends otherwise after exactly max_points points has sent the
  // points the cap would have.
  return status.code() == absl::StatusCode::kResourceExhausted &&
         request.max_points() != 0 && received == request.max_points();
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const ClientOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  // Keepalive pings while calls wait (not on an idle channel), and however
  // long the client itself sends nothing: a Scatter stream sends only its
  // request, and gRPC's default stops pinging after two pings without
  // data.
  args.SetInt(
      GRPC_ARG_KEEPALIVE_TIME_MS,
      static_cast<int>(absl::ToInt64Milliseconds(options.keepalive_time)));
  args.SetInt(
      GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
      static_cast<int>(absl::ToInt64Milliseconds(options.keepalive_timeout)));
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  if (options.tls_ca_pem.empty()) {
    if (!options.tls_cert_pem.empty()) {
      return absl::InvalidArgumentError(
          "tls: a client certificate needs the server's CA (TLS) as well");
    }
    credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_ca_pem;
    ssl.pem_cert_chain = options.tls_cert_pem;
    ssl.pem_private_key = options.tls_key_pem;
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_server_name);
    }
  }
  // (Set on copies: ChannelArguments adds a second value rather than
  // replace the first, and the first wins.)
  grpc::ChannelArguments balanced = args;
  // Per call over every address the target resolves to (a headless
  // Service's pods, "ipv4:A,B"), as deploy/README.md says clients
  // balance: gRPC's default, pick_first, sent every call to the first.
  balanced.SetLoadBalancingPolicyName("round_robin");
  // And only over the servers whose health says SERVING: a draining
  // scatterd turns NOT_SERVING at once, but keeps its connections for its
  // grace period, and round robin sent it every other new call, refused
  // (found by a review helper). gRPC watches the health of each address
  // (grpc.health.v1 Watch); a server without the health service counts
  // as healthy.
  balanced.SetServiceConfigJSON(kBalancedServiceConfig);
  auto channel =
      grpc::CreateCustomChannel(options.address, credentials, balanced);
  // The same servers, every call to one of them: an upload and the call
  // that names it must meet on one replica, which round robin over two
  // never did (the upload went to one, the call to the other, every time).
  // It connects only if a raster is ever lost.
  grpc::ChannelArguments one = args;
  one.SetLoadBalancingPolicyName("pick_first");
  auto pinned = grpc::CreateCustomChannel(options.address, credentials, one);
  if (channel == nullptr || pinned == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot make a channel to ", options.address));
  }
  return std::make_unique<Client>(std::move(channel), options.address,
                                  options.remembered_raster_bytes,
                                  std::move(pinned));
}

Client::Client(std::shared_ptr<grpc::Channel> channel, std::string address,
               std::size_t remembered_raster_bytes,
               std::shared_ptr<grpc::Channel> pinned)
    : channel_(std::move(channel)),
      pinned_channel_(pinned != nullptr ? std::move(pinned) : channel_),
      address_(std::move(address)),
      stub_(v1::ScatterService::NewStub(channel_)),
      pinned_stub_(v1::ScatterService::NewStub(pinned_channel_)),
      remembered_raster_bytes_(remembered_raster_bytes) {}

absl::Status Client::FromGrpc(const grpc::Status& status, bool upload,
                              bool answered) const {
  if (status.ok()) return absl::OkStatus();
  std::string message = status.error_message();
  // The balanced channel's words when every server it reaches says it is
  // not serving (draining, as on SIGTERM): no call was sent.
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
      message.find("backend unhealthy") != std::string::npos) {
    return absl::UnavailableError(absl::StrCat(
        "scatterd at ", address_,
        " is not serving (its health says so: it may be shutting down)"));
  }
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
      message.find("shutting down") == std::string::npos) {
    // A server that answered and then went (killed, its node lost) was
    // reached: "cannot reach" and the TLS hints that go with it sent users
    // after the wrong cause. So was one that stopped answering pings.
    const bool lost =
        answered || message.find("keepalive") != std::string::npos;
    message = absl::StrCat(lost ? "lost the connection to scatterd at "
                                : "cannot reach scatterd at ",
                           address_, ": ", message);
  }
  // gRPC's words when the call's own deadline passed name neither the
  // server nor what ran out; scatterd's DEADLINE_EXCEEDED (its
  // max_call_duration) keeps its own.
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      message == "Deadline Exceeded") {
    message = absl::StrCat("scatterd at ", address_, ": deadline passed");
  }
  std::uint64_t size = 0, limit = 0;
  // gRPC's words, not scatterd's: it refuses the message before any
  // handler sees it. The channels Connect makes take responses of any
  // size, so the limit is the server's.
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      ParseTooLarge(message, &size, &limit)) {
    message =
        upload ? absl::StrCat(
                     "scatterd at ", address_, " refused an upload message of ",
                     size, " bytes, over its --max_request_bytes = ", limit,
                     ": a message carries up to ", kUploadChunkBytes,
                     " pixel bytes; raise --max_request_bytes to at least ",
                     2 * kUploadChunkBytes)
               : absl::StrCat(
                     "scatterd at ", address_, " refused a request of ", size,
                     " bytes, over its --max_request_bytes = ", limit,
                     ": upload rasters with PutRaster (a job's rasterFiles) "
                     "rather than inline, send fewer polygon vertices, or "
                     "raise --max_request_bytes");
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

absl::StatusOr<int> Client::UploadKnownDigests(
    v1::ScatterService::Stub& stub, const v1::Region* region,
    const google::protobuf::RepeatedPtrField<v1::Layer>& layers,
    absl::Time deadline, const std::function<bool()>& cancelled) {
  int uploaded = 0;
  for (const NamedDigest& one : NamedDigests(region, layers)) {
    v1::RasterData data;
    {
      absl::MutexLock lock(&mu_);
      auto known = uploaded_.find(one.digest);
      if (known == uploaded_.end()) continue;
      // A copy: Upload replaces the entry (it becomes the newest), and
      // another thread's PutRaster may drop it.
      data = known->second;
    }
    absl::StatusOr<v1::RasterRef> ref = Upload(stub, data, deadline, cancelled);
    if (!ref.ok()) {
      return absl::Status(
          ref.status().code(),
          absl::StrCat(one.field, ": uploading again the raster the server ",
                       "lost: ", ref.status().message()));
    }
    ++uploaded;
  }
  return uploaded;
}

bool Client::InlineKnownDigests(
    v1::Region* region, google::protobuf::RepeatedPtrField<v1::Layer>* layers) {
  absl::MutexLock lock(&mu_);
  bool changed = false;
  if (region != nullptr && region->has_mask()) {
    InlineOne(region->mutable_mask(), uploaded_, &changed);
  }
  for (v1::Layer& layer : *layers) {
    if (layer.has_density()) InlineOne(layer.mutable_density(), uploaded_, &changed);
  }
  return changed;
}

template <typename Request>
bool Client::NamesUploadedRaster(const Request& request) {
  const std::vector<NamedDigest> named = NamedDigests(
      request.has_region() ? &request.region() : nullptr, request.layers());
  absl::MutexLock lock(&mu_);
  return std::any_of(named.begin(), named.end(), [&](const NamedDigest& one) {
    return uploaded_.contains(one.digest);
  });
}

template <typename Request, typename Response, typename Summary, typename Open,
          typename Handle>
absl::StatusOr<Summary> Client::Stream(Request request, Open open, Handle handle,
                                       const CallOptions& call) {
  const absl::Time deadline = CallDeadline(call);
  bool uploaded_again = false;
  bool inlined = false;
  // Once a raster was lost, a request that names one this client uploaded
  // goes where the upload went.
  v1::ScatterService::Stub* stub = stub_.get();
  if (pinned_first_.load() && NamesUploadedRaster(request)) {
    stub = pinned_stub_.get();
  }
  // At most three calls: as asked, after uploading lost rasters again, and
  // with them inline. Each flag is set before its retry.
  for (;;) {
    if ((uploaded_again || inlined) && Cancelled(call.cancelled)) {
      return absl::CancelledError("cancelled by the caller");
    }
    grpc::ClientContext context;
    ApplyDeadline(deadline, &context);
    CancelWatch watch(call.cancelled, &context);
    std::unique_ptr<grpc::ClientReader<Response>> reader =
        open(*stub, &context, request);
    Response response;
    Summary summary;
    bool any = false;
    bool stopped = false;
    while (reader->Read(&response)) {
      any = true;
      if (response.has_summary()) {
        summary = response.summary();
        continue;
      }
      if ((call.cancelled && call.cancelled()) || !handle(response)) {
        context.TryCancel();
        stopped = true;
        break;
      }
    }
    if (stopped) {
      while (reader->Read(&response)) {
      }
    }
    const grpc::Status status = reader->Finish();
    // A call that had ended OK when the watch fired keeps its result.
    if (stopped || (watch.Stop() && !status.ok())) {
      return absl::CancelledError("cancelled by the caller");
    }
    if (status.error_code() == grpc::StatusCode::NOT_FOUND && !any &&
        !inlined) {
      // The server lost a raster we uploaded (or never had it). Uploading
      // it again comes first: a raster past the server's max request size,
      // which is what PutRaster is for, cannot be sent inline.
      if (Cancelled(call.cancelled)) {
        return absl::CancelledError("cancelled by the caller");
      }
      if (!uploaded_again) {
        uploaded_again = true;
        // The upload and the call again over the pinned channel: one
        // replica gets both.
        stub = pinned_stub_.get();
        absl::StatusOr<int> again = UploadKnownDigests(
            *stub, request.has_region() ? &request.region() : nullptr,
            request.layers(), deadline, call.cancelled);
        if (!again.ok()) return again.status();
        if (*again > 0) {
          pinned_first_.store(true);
          continue;
        }
      }
      // Still lost after the upload (a load balancer may have sent it to
      // another replica): inline, the raster goes with the request.
      // mutable_region() would add an empty region to a tiled world that
      // has none (the whole plane), which the server refuses.
      inlined = true;
      if (InlineKnownDigests(
              request.has_region() ? request.mutable_region() : nullptr,
              request.mutable_layers())) {
        continue;
      }
    }
    if (!status.ok()) return FromGrpc(status, /*upload=*/false, any);
    return summary;
  }
}

absl::StatusOr<v1::Summary> Client::Scatter(v1::ScatterRequest request,
                                            const BatchHandler& handler,
                                            const CallOptions& call) {
  return Stream<v1::ScatterRequest, v1::ScatterResponse, v1::Summary>(
      std::move(request),
      [&](v1::ScatterService::Stub& stub, grpc::ClientContext* context,
          const v1::ScatterRequest& r) { return stub.Scatter(context, r); },
      [&](const v1::ScatterResponse& response) {
        return handler(response.points());
      },
      call);
}

absl::StatusOr<v1::TilesSummary> Client::ScatterTiles(
    v1::ScatterTilesRequest request, const TileHandler& handler,
    const CallOptions& call) {
  return Stream<v1::ScatterTilesRequest, v1::TileResponse, v1::TilesSummary>(
      std::move(request),
      [&](v1::ScatterService::Stub& stub, grpc::ClientContext* context,
          const v1::ScatterTilesRequest& r) {
        return stub.ScatterTiles(context, r);
      },
      handler, call);
}

absl::StatusOr<v1::RasterRef> Client::PutRaster(const v1::RasterData& raster,
                                                const CallOptions& call) {
  return Upload(*stub_, raster, CallDeadline(call), call.cancelled);
}

absl::StatusOr<v1::RasterRef> Client::Upload(
    v1::ScatterService::Stub& stub, const v1::RasterData& raster,
    absl::Time deadline, const std::function<bool()>& cancelled) {
  grpc::ClientContext context;
  ApplyDeadline(deadline, &context);
  CancelWatch watch(cancelled, &context);
  v1::RasterRef ref;
  auto writer = stub.PutRaster(&context, &ref);
  const std::string& pixels = raster.pixels();
  std::size_t at = 0;
  do {
    if (Cancelled(cancelled)) {
      context.TryCancel();
      writer->Finish();
      return absl::CancelledError("cancelled by the caller");
    }
    v1::RasterChunk chunk;
    if (at == 0) {
      chunk.set_format(raster.format());
      chunk.set_width(raster.width());
      chunk.set_height(raster.height());
    }
    chunk.set_pixels(pixels.substr(at, kUploadChunkBytes));
    at += kUploadChunkBytes;
    if (!writer->Write(chunk)) break;
  } while (at < pixels.size());
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (watch.Stop() && !status.ok()) {
    return absl::CancelledError("cancelled by the caller");
  }
  if (!status.ok()) return FromGrpc(status, /*upload=*/true);
  absl::MutexLock lock(&mu_);
  // Uploaded again: it becomes the most recent.
  if (auto known = uploaded_.find(ref.digest()); known != uploaded_.end()) {
    uploaded_bytes_ -= known->second.pixels().size();
    uploaded_.erase(known);
    upload_order_.erase(
        std::find(upload_order_.begin(), upload_order_.end(), ref.digest()));
  }
  uploaded_[ref.digest()] = raster;
  upload_order_.push_back(ref.digest());
  uploaded_bytes_ += raster.pixels().size();
  // A tool that uploads a new map per edit would otherwise keep them all.
  while (uploaded_bytes_ > remembered_raster_bytes_) {
    auto oldest = uploaded_.find(upload_order_.front());
    uploaded_bytes_ -= oldest->second.pixels().size();
    uploaded_.erase(oldest);
    upload_order_.pop_front();
  }
  return ref;
}

std::size_t Client::remembered_raster_bytes() {
  absl::MutexLock lock(&mu_);
  return uploaded_bytes_;
}

absl::Status Client::Health(absl::Duration timeout) {
  // Not over the balanced channel: it sends no call to a server whose
  // health is not SERVING, and that is what this must report ("backend
  // unhealthy" said nothing of NOT_SERVING).
  auto health = grpc::health::v1::Health::NewStub(pinned_channel_);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("scatter.v1.ScatterService");
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health->Check(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat("scatterd at ", address_, " is not serving (",
                     grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                         response.status()),
                     ")"));
  }
  return absl::OkStatus();
}

}  // namespace scatter::client
