#include "server/server.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "spdlog/spdlog.h"

namespace scatter::server {
namespace {

int Millis(absl::Duration d) {
  return static_cast<int>(std::min<std::int64_t>(absl::ToInt64Milliseconds(d),
                                                 std::int64_t{1} << 30));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ScatterServer>> ScatterServer::Start(
    ServerOptions options) {
  std::unique_ptr<ScatterServer> self(new ScatterServer());
  if (options.logger == nullptr) options.logger = spdlog::default_logger();
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "tls: a certificate needs its key and a key its certificate");
  }
  self->options_ = options;
  self->registry_ = std::make_shared<prometheus::Registry>();
  self->service_ = std::make_unique<ScatterServiceImpl>(
      options.service, options.logger, *self->registry_);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!options.address.empty()) {
    std::shared_ptr<grpc::ServerCredentials> credentials;
    if (options.tls_cert_pem.empty()) {
      credentials = grpc::InsecureServerCredentials();
    } else {
      grpc::SslServerCredentialsOptions ssl(
          options.tls_client_ca_pem.empty()
              ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      ssl.pem_root_certs = options.tls_client_ca_pem;
      ssl.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
      credentials = grpc::SslServerCredentials(ssl);
    }
    builder.AddListeningPort(options.address, credentials, &self->port_);
  }
  builder.RegisterService(self->service_.get());
  // gRPC sets SO_REUSEPORT by default, so a second scatterd on a port in use
  // would start and share (or steal) the first one's connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Millis(options.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             Millis(options.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             10000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                             Millis(options.max_connection_age));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                             Millis(options.max_connection_age_grace));
  // Sync server threads wake this often when idle, so stopping (which joins
  // them) takes a fraction of a second instead of their default 10 s.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC,
                              100);
  // Each Scatter stream holds a handler thread while it runs.
  grpc::ResourceQuota quota("scatterd");
  quota.SetMaxThreads(2 * options.service.max_streams + 16);
  builder.SetResourceQuota(quota);

  self->server_ = builder.BuildAndStart();
  if (self->server_ == nullptr || (!options.address.empty() && self->port_ == 0)) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.address,
                     " (address in use, or not host:port?)"));
  }
  self->server_->GetHealthCheckService()->SetServingStatus(true);
  self->server_->GetHealthCheckService()->SetServingStatus(kServiceName, true);

  if (!options.metrics_address.empty()) {
    try {
      self->exposer_ = std::make_unique<prometheus::Exposer>(options.metrics_address);
    } catch (const std::exception& e) {
      self->server_->Shutdown();
      return absl::UnavailableError(absl::StrCat(
          "cannot serve metrics on ", options.metrics_address, ": ", e.what()));
    }
    self->exposer_->RegisterCollectable(self->registry_);
    const std::vector<int> ports = self->exposer_->GetListeningPorts();
    if (!ports.empty()) self->metrics_port_ = ports.front();
  }
  return self;
}

std::shared_ptr<grpc::Channel> ScatterServer::InProcessChannel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return server_->InProcessChannel(args);
}

void ScatterServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  server_->GetHealthCheckService()->SetServingStatus(false);
  service_->StartDraining();
  const absl::Time until = absl::Now() + options_.grace_period;
  while (service_->stats().in_flight.load() > 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  // Past the grace period running samplers stop and their streams end with
  // UNAVAILABLE; a second's more lets those statuses go out.
  service_->StopInFlight();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
}

ScatterServer::~ScatterServer() {
  if (server_ != nullptr) Shutdown();
}

}  // namespace scatter::server
