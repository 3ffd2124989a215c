#ifndef SCATTER_CLIENT_CLIENT_H_
#define SCATTER_CLIENT_CLIENT_H_

// The C++ client library: connect to scatterd (plain or TLS), run a scatter
// and receive its batches as they arrive, cancel, set deadlines, upload
// rasters once and refer to them by digest.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "scatter/v1/scatter.grpc.pb.h"

namespace scatter::client {

inline constexpr std::size_t kDefaultRememberedRasterBytes = std::size_t{1}
                                                             << 30;

// Pixel bytes per PutRaster message. Every message must fit the server's
// max request size; scatterd takes no less than twice this
// (server::kMinRequestBytes).
inline constexpr std::size_t kUploadChunkBytes = std::size_t{256} << 10;

struct ClientOptions {
  std::string address = "127.0.0.1:50051";  // host:port
  // TLS: the PEM CA bundle that signed the server's certificate. Empty
  // means plaintext.
  std::string tls_ca_pem;
  // Mutual TLS: this client's PEM certificate chain and key.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // Check the server's certificate for this name instead of the address's
  // host.
  std::string tls_server_name;
  // Pixel bytes of uploaded rasters kept to upload again or send inline
  // when a server has lost them (see Client::Scatter), the most recently
  // uploaded first. An older raster is forgotten, and a server that lost it
  // then answers NOT_FOUND.
  std::size_t remembered_raster_bytes = kDefaultRememberedRasterBytes;
  // While a call waits, the client pings the server after keepalive_time
  // without a frame from it, and ends the call UNAVAILABLE when no answer
  // comes within keepalive_timeout: a server that froze, or a connection
  // the network dropped without a word, otherwise held the call forever.
  // scatterd takes pings 10 s apart or more.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
};

// How one call runs.
struct CallOptions {
  // Zero: no deadline. One deadline for the whole call, the uploads and
  // resends of a lost raster (see Client::Scatter) included.
  absl::Duration timeout = absl::ZeroDuration();
  // Polled every kCancelPoll while the call runs, from a thread of the
  // client's (so it must be safe to call from another thread: an atomic
  // flag, say), and between batches, upload chunks and before each upload
  // or resend of a lost raster; true cancels the call at once, even while
  // the server computes what it sends first.
  std::function<bool()> cancelled;
};

// How often a call polls CallOptions::cancelled while it waits.
inline constexpr absl::Duration kCancelPoll = absl::Milliseconds(20);

// Receives each PointBatch as it arrives; returning false cancels the call.
using BatchHandler = std::function<bool(const v1::PointBatch&)>;

// Receives each part of each tile as it arrives (never the summary);
// returning false cancels the call.
using TileHandler = std::function<bool(const v1::TileResponse&)>;

// True when `status` ended a Scatter call at the request's own cap:
// RESOURCE_EXHAUSTED after exactly request.max_points() points (not 0)
// reached the handler. Those are the run's first max_points points, what
// the caller asked for, so the call succeeded. A server cap below the
// request's ends the stream with fewer points and is still an error; one
// equal to it sends the same points as the request's own would.
bool StoppedAtOwnCap(const absl::Status& status,
                     const v1::ScatterRequest& request, std::uint64_t received);

class Client {
 public:
  // Builds the channel; it connects lazily, on the first call. Calls go
  // round robin over every address `options.address` resolves to
  // ("dns:///scatterd.scatter.svc.cluster.local:50051", "ipv4:A,B").
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const ClientOptions& options);
  // Over an existing channel (in-process, tests). `pinned`, when given,
  // reaches the same servers but sends every call to one of them (gRPC's
  // pick_first): the resends of a lost raster go there (see Scatter).
  explicit Client(
      std::shared_ptr<grpc::Channel> channel, std::string address = "",
      std::size_t remembered_raster_bytes = kDefaultRememberedRasterBytes,
      std::shared_ptr<grpc::Channel> pinned = nullptr);

  // Runs the request, passing batches to `handler` in order. Returns the
  // summary, or the call's status as an absl::Status (code and message as
  // the server sent them; UNAVAILABLE says "cannot reach scatterd at ..."
  // when nothing came back, "lost the connection to scatterd at ..." when
  // the connection failed after the server had answered or stopped
  // answering keepalive pings;
  // a request over the server's max request size, which gRPC refuses
  // before scatterd sees it, is RESOURCE_EXHAUSTED naming that limit,
  // --max_request_bytes; a call past `call`'s timeout is DEADLINE_EXCEEDED
  // "scatterd at ADDR: deadline passed").
  // The request's own max_points ends the call with RESOURCE_EXHAUSTED and
  // no summary: StoppedAtOwnCap() tells it from the server's limits.
  // When a raster named by digest is unknown to the server (NOT_FOUND
  // before any response: an evicted cache, a restarted replica, or, with
  // several replicas, the upload went to another one) and this client
  // uploaded it and still remembers it, the client uploads every such
  // raster the request names again (PutRaster) and sends the request again
  // by digest, both over the pinned channel, so to one replica; later calls
  // that name an uploaded raster go there first too. Only if that is
  // NOT_FOUND as well is the request sent once more with those rasters
  // inline, which the server's max request size must allow. At most three
  // calls and one upload per raster, all within `call`'s deadline; a failed
  // upload ends the call with its code, its message naming the field.
  absl::StatusOr<v1::Summary> Scatter(v1::ScatterRequest request,
                                      const BatchHandler& handler,
                                      const CallOptions& call = {});

  // Runs a ScatterTiles request, passing every tile part to `handler` in
  // order, and returns the summary. Errors, and the upload and resends of a
  // raster the server lost, as Scatter.
  absl::StatusOr<v1::TilesSummary> ScatterTiles(v1::ScatterTilesRequest request,
                                                const TileHandler& handler,
                                                const CallOptions& call = {});

  // Uploads raster content in chunks of kUploadChunkBytes; returns the
  // server's digest, and
  // remembers the content for the upload and resends above (within
  // ClientOptions::remembered_raster_bytes).
  absl::StatusOr<v1::RasterRef> PutRaster(const v1::RasterData& raster,
                                          const CallOptions& call = {});

  // Pixel bytes remembered for the upload and resends now.
  std::size_t remembered_raster_bytes();

  // OK when the server's health service says SERVING for the Scatter
  // service. Errors as Scatter's.
  absl::Status Health(absl::Duration timeout = absl::Seconds(5));

  const std::string& address() const { return address_; }

 private:
  // `upload`: the status of a PutRaster call, whose messages are chunks;
  // `answered`: a response of the call had arrived.
  absl::Status FromGrpc(const grpc::Status& status, bool upload = false,
                        bool answered = false) const;
  // PutRaster with a deadline fixed by the caller (InfiniteFuture: none).
  absl::StatusOr<v1::RasterRef> Upload(v1::ScatterService::Stub& stub,
                                       const v1::RasterData& raster,
                                       absl::Time deadline,
                                       const std::function<bool()>& cancelled);
  // Uploads again every raster this client uploaded and remembers that the
  // request's region (none when null) or layers name by digest. Returns how
  // many, or the first failed upload's status with its field named.
  absl::StatusOr<int> UploadKnownDigests(
      v1::ScatterService::Stub& stub, const v1::Region* region,
      const google::protobuf::RepeatedPtrField<v1::Layer>& layers,
      absl::Time deadline, const std::function<bool()>& cancelled);
  // Replaces every digest this client uploaded, in the request's region
  // (none when null) and layers, with its data.
  bool InlineKnownDigests(v1::Region* region,
                          google::protobuf::RepeatedPtrField<v1::Layer>* layers);
  // Whether the request's region or layers name by digest a raster this
  // client uploaded and remembers.
  template <typename Request>
  bool NamesUploadedRaster(const Request& request);
  // One server-streaming call with the upload and resends of a lost
  // raster: `open(stub, context, request)` starts it, `handle` takes each
  // response that is not the summary.
  template <typename Request, typename Response, typename Summary,
            typename Open, typename Handle>
  absl::StatusOr<Summary> Stream(Request request, Open open, Handle handle,
                                 const CallOptions& call);

  std::shared_ptr<grpc::Channel> channel_;
  // The pinned channel (pick_first, no health checking), or channel_.
  std::shared_ptr<grpc::Channel> pinned_channel_;
  std::string address_;
  std::unique_ptr<v1::ScatterService::Stub> stub_;
  // Over the pinned channel (stub_'s own channel when none was given).
  std::unique_ptr<v1::ScatterService::Stub> pinned_stub_;
  // Set once a lost raster was recovered over the pinned channel: calls
  // that name uploaded rasters go there first from then on.
  std::atomic<bool> pinned_first_{false};
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, v1::RasterData> uploaded_ ABSL_GUARDED_BY(mu_);
  // uploaded_'s digests, oldest upload first, and their pixel bytes.
  std::deque<std::string> upload_order_ ABSL_GUARDED_BY(mu_);
  std::size_t uploaded_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  const std::size_t remembered_raster_bytes_;
};

}  // namespace scatter::client

#endif  // SCATTER_CLIENT_CLIENT_H_
