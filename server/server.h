#ifndef SCATTER_SERVER_SERVER_H_
#define SCATTER_SERVER_SERVER_H_

// scatterd as a library: the gRPC server with the Scatter service, health,
// reflection, keepalive, TLS, Prometheus metrics and graceful shutdown.
// main() parses flags into ServerOptions and calls this.

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "server/service.h"
#include "spdlog/logger.h"

namespace scatter::server {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free one (see port()). A unix
  // socket is unix:PATH (or unix-abstract:NAME). Empty listens nowhere
  // (in-process channels only).
  std::string address = "127.0.0.1:50051";
  // host:port of the Prometheus /metrics endpoint; port 0 picks one, empty
  // turns it off.
  std::string metrics_address = "127.0.0.1:9464";
  ServiceOptions service;
  // TLS: PEM server certificate chain and key. Both empty = plaintext.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // PEM CA bundle; when set, clients must present a certificate it signed.
  std::string tls_client_ca_pem;
  // The files the PEM fields above were read from (scatterd's --tls_*
  // flags), or empty. When given, the server watches them: a certificate,
  // key or CA renewed on disk (cert-manager, a Secret's volume) is served
  // from the next handshake, within tls_reload_interval, with no restart.
  // Each read is checked as Start() checks the PEM fields (certificates
  // that parse, the key of the first one): material that fails, or a file
  // that cannot be read, is logged at error and the last good material
  // stays in use. The PEM fields hold what the caller read at start, which
  // is served first. The files must be regular files (a pipe cannot be
  // read again).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // How often the files are looked at: whole seconds, at least 1 s.
  absl::Duration tls_reload_interval = absl::Minutes(1);
  // Largest request message accepted (inline rasters and polygons), at
  // least kMinRequestBytes (PutRaster chunks must fit). gRPC refuses a
  // bigger message with RESOURCE_EXHAUSTED "Received message larger than
  // max" before any handler sees it.
  int max_request_bytes = 64 << 20;
  // HTTP/2 keepalive: ping an idle connection this often and drop it when
  // the ack does not come within the timeout.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // Answer gRPC server reflection. Off by default: a reflection stream is a
  // synchronous one that holds a handler thread for as long as the client
  // keeps it open, outside max_streams and max_call_duration, so 50 idle
  // ones left none for Scatter calls ("Server Threadpool Exhausted") while
  // health said SERVING. (gRPC's plugin is process-wide: once one server
  // of the process turns it on, every later one answers it.)
  bool reflection = false;
  // Connections are closed this long after they open (after in-flight calls
  // finish, within max_connection_age_grace, or max_call_duration and 5 s
  // when that is longer) so clients re-resolve and new replicas get
  // traffic.
  absl::Duration max_connection_age = absl::Minutes(10);
  absl::Duration max_connection_age_grace = absl::Minutes(30);
  // Shutdown: how long in-flight calls may finish before they are stopped
  // with UNAVAILABLE.
  absl::Duration grace_period = absl::Seconds(10);
  // Shutdown: how long a drain keeps its connections open, health saying
  // NOT_SERVING and new calls refused with UNAVAILABLE, before it tells
  // clients to go (HTTP/2 GOAWAY) and stops listening, while the calls in
  // flight run on to the end of grace_period. Clients that watch health
  // leave at once; the others (pick_first, one address, a ClusterIP
  // Service) were refused for the whole grace period, and now reconnect
  // elsewhere after this notice.
  absl::Duration drain_notice = absl::Seconds(1);
  std::shared_ptr<spdlog::logger> logger;  // nullptr: spdlog's default.
};

// InvalidArgument when a limit or duration is out of range: a count or size
// that must be positive is not (max_request_bytes: is under
// kMinRequestBytes), a duration is negative, or one gRPC takes
// in milliseconds (keepalive, max_connection_age) is under 1ms; or when the
// address is not unix:PATH or host:port with a port in [0, 65535] (see
// CheckAddressPort), or the metrics address not host:port with such a
// port. The message starts with the option's name, which is
// also scatterd's flag name ("max_streams must be in [1, 10000], got 0").
absl::Status CheckOptions(const ServerOptions& options);

// What scatterd says at start when the memory its options let it hold
// under load (both caches, the sampling budget, and max_streams requests
// of max_request_bytes arriving, as deploy/validate counts them) is over
// 90 % of `limit_bytes`, its container's memory limit: it would be killed
// for memory before it refused a call. Empty when it fits, or when there
// is no limit (0).
std::string MemoryOverLimit(const ServerOptions& options,
                            std::uint64_t limit_bytes);

// InvalidArgument naming `what` when `address` (not unix: or
// unix-abstract:) ends in a port of digits past 65535, which gRPC would
// read modulo 2^16 (99999 is port 34463); with `port_required`, also when
// it has no port, which gRPC would read as 443 (without, only when it is
// empty, or an IPv6 host in brackets, which gRPC dials on port 0); and
// when it is an IPv6 address without brackets ("::1", "fe80::1:50051"),
// which gRPC reads as a host with no port, whatever follows its last
// colon. Other forms (schemes such as dns:///) are left to gRPC.
absl::Status CheckAddressPort(absl::string_view what, absl::string_view address,
                              bool port_required);

// TLS material, checked before it reaches gRPC (which would only fail to
// listen). InvalidArgument naming `what` ("tls_cert_pem", or a flag and its
// file) unless `pem` holds a PEM certificate.
absl::Status CheckPemCertificate(absl::string_view what, absl::string_view pem);
// InvalidArgument naming `what` unless `key_pem` is an unencrypted PEM
// private key for the first certificate in `cert_pem`.
absl::Status CheckPemKey(absl::string_view what, absl::string_view key_pem,
                         absl::string_view cert_pem);
// A whole TLS setup: the certificate chain, its key, and the client CA
// when `ca_pem` is not empty; the first that fails, named as `names` say
// ("tls_cert_pem", "--tls_cert=FILE", a file's path).
struct TlsNames {
  absl::string_view cert, key, ca;
};
absl::Status CheckTlsMaterial(const TlsNames& names, absl::string_view cert_pem,
                              absl::string_view key_pem,
                              absl::string_view ca_pem);

// The health service reports this name (and "") as SERVING until shutdown.
inline constexpr char kServiceName[] = "scatter.v1.ScatterService";

class ScatterServer {
 public:
  // Starts serving. InvalidArgument for options CheckOptions() refuses or
  // bad TLS material,
  // Unavailable when the port cannot be bound, ResourceExhausted naming
  // threads when the tile generator threads cannot be started.
  static absl::StatusOr<std::unique_ptr<ScatterServer>> Start(
      ServerOptions options);
  ~ScatterServer();

  // The TCP port listened on (the one picked for port 0); 0 for a unix
  // socket, or when listening nowhere.
  int port() const { return port_; }
  // Where clients reach it: host:port with the port picked
  // ("127.0.0.1:43211"), or the unix socket as given ("unix:/run/s.sock");
  // empty when listening nowhere.
  const std::string& listening_address() const { return listening_address_; }
  int metrics_port() const { return metrics_port_; }
  std::shared_ptr<grpc::Channel> InProcessChannel();

  // Graceful shutdown, as on SIGTERM: health NOT_SERVING and new calls
  // UNAVAILABLE; after drain_notice, GOAWAY and no listening; in-flight
  // calls get grace_period to finish, then their samplers stop and their
  // streams end with UNAVAILABLE. Idempotent.
  void Shutdown();
  // Ends a Shutdown's grace period now (a second SIGTERM): its in-flight
  // calls stop as when the period runs out. Any thread may call it.
  void EndGrace() { grace_ended_.store(true); }

  const ServiceStats& stats() const { return service_->stats(); }
  ScatterServiceImpl& service() { return *service_; }

 private:
  ScatterServer() = default;

  ServerOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<ScatterServiceImpl> service_;
  // When the TLS files are watched. Before server_, so that it outlives
  // the server's certificate watcher, which reads its memory files.
  class TlsFiles;
  std::unique_ptr<TlsFiles> tls_files_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string listening_address_;
  int metrics_port_ = 0;
  bool shut_down_ = false;
  std::atomic<bool> grace_ended_{false};
};

}  // namespace scatter::server

#endif  // SCATTER_SERVER_SERVER_H_
