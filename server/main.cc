// scatterd: the Scatter gRPC service. Runs with no configuration: listens
// on 127.0.0.1:50051, metrics on 127.0.0.1:9464. SIGTERM or SIGINT drains
// and stops it.

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grpc/support/log.h"
#include "sampler/cpus.h"
#include "sampler/simd.h"
#include "sampler/version.h"
#include "server/command_line.h"
#include "server/server.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50051",
          "host:port to serve gRPC on, port 0 picks a free port, an IPv6 "
          "host in brackets ([::1]:50051); or a unix socket, unix:PATH");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9464",
          "host:port of the Prometheus /metrics endpoint (0.0.0.0:PORT for "
          "every interface); empty turns it off");
ABSL_FLAG(int, max_streams, 16,
          "Scatter, ScatterTiles and PutRaster calls running at once, 1 to "
          "10000 (each runs up to three threads)");
ABSL_FLAG(std::uint64_t, max_points, 200'000'000,
          "points per request: estimated before sampling, and a hard cap");
ABSL_FLAG(std::uint64_t, max_raster_bytes, std::uint64_t{256} << 20,
          "decoded bytes of one raster (4 per pixel)");
ABSL_FLAG(std::uint64_t, raster_cache_bytes, std::uint64_t{1} << 30,
          "raster bytes kept for reference by digest (decoded pixels, 4 "
          "each, and their block bounds, about 2.7 more per pixel); at "
          "least what the largest square raster --max_raster_bytes "
          "accepts takes (about 1.67 --max_raster_bytes)");
ABSL_FLAG(std::uint64_t, max_tiles_per_request, 10'000,
          "tiles one ScatterTiles call may ask for");
ABSL_FLAG(std::uint64_t, tile_cache_bytes, std::uint64_t{512} << 20,
          "bytes of finished tile generators kept for later ScatterTiles "
          "calls, and the most one call keeps alive at once; at least 1024 "
          "(0 does not turn the cache off: it is refused)");
ABSL_FLAG(std::uint64_t, max_grid_bytes, std::uint64_t{8} << 30,
          "sampling grid bytes of one layer of one request (tile generators: "
          "of one generator)");
ABSL_FLAG(std::uint64_t, memory_budget_bytes, std::uint64_t{8} << 30,
          "memory all running calls may hold at once: sampling memory by "
          "their estimates, the tile generators ScatterTiles calls keep "
          "alive and the bytes PutRaster uploads have received, by their "
          "bytes; a call that would go over is refused (the "
          "caches are budgeted apart)");
ABSL_FLAG(int, threads, 0,
          "threads computing tile generators, shared by all calls, 0 to 1024; "
          "0 = one per CPU the process may use (its CPU affinity and its "
          "cgroup's CPU quota, rounded up)");
ABSL_FLAG(int, max_request_bytes, 64 << 20,
          "largest request message accepted, at least 524288 (PutRaster "
          "sends rasters in chunks of 256 KiB, which must fit); a Scatter "
          "or ScatterTiles request over it (a raster inline, a huge "
          "polygon) gets RESOURCE_EXHAUSTED: upload rasters with PutRaster "
          "instead");
ABSL_FLAG(absl::Duration, max_call_duration, absl::Minutes(30),
          "calls still running after this end with DEADLINE_EXCEEDED");
ABSL_FLAG(absl::Duration, grace_period, absl::Seconds(10),
          "on SIGTERM, how long in-flight calls may finish");
ABSL_FLAG(absl::Duration, drain_notice, absl::Seconds(1),
          "on SIGTERM, how long connections stay open, health NOT_SERVING "
          "and new calls refused, before clients are told to go (GOAWAY) "
          "and reconnect elsewhere; in-flight calls run on");
ABSL_FLAG(absl::Duration, max_connection_age, absl::Minutes(10),
          "close connections this long after they open (after their calls "
          "finish), so clients re-resolve and reach new replicas");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(30),
          "ping idle connections this often; drop them when pings go unanswered");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain file (enables TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key file");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA file: when set, clients must present a certificate it signed");
ABSL_FLAG(absl::Duration, tls_reload_interval, absl::Minutes(1),
          "how often the --tls_* files are read again: a certificate renewed "
          "on disk is served from the next handshake, with no restart "
          "(whole seconds, 1s to 24h)");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error, critical or off (any case)");
ABSL_FLAG(bool, reflection, false,
          "answer gRPC server reflection (for grpcurl and the like); each open "
          "reflection stream holds a handler thread, of the 2 * max_streams + "
          "16 that Scatter calls need too");

namespace {

// Set once the server is up; see LogGrpc.
std::atomic<bool> g_serving{false};

// The next SIGTERM or SIGINT in `signals`. A SIGHUP on the way is logged and
// otherwise ignored: its default action ended scatterd at once, with no
// drain (a terminal closing, `kill -HUP` out of habit). TLS files need no
// signal: they are read again every `tls_reload_interval`.
int WaitForStop(const sigset_t& signals, absl::Duration tls_reload_interval,
                bool tls) {
  int signal = 0;
  while (sigwait(&signals, &signal) == 0 && signal == SIGHUP) {
    spdlog::info(
        "scatterd: SIGHUP ignored: SIGTERM or SIGINT drains and stops; {}",
        tls ? absl::StrCat("the TLS files are read again every ",
                           absl::FormatDuration(tls_reload_interval))
            : std::string("nothing reloads"));
  }
  return signal;
}

// gRPC's own log lines (gpr_log), through spdlog: they look like
// scatterd's and follow --log_level (GRPC_VERBOSITY still decides which
// gRPC writes at all: errors by default). gRPC wrote them to stderr
// itself, and while scatterd starts its error is the reason behind the
// one line scatterd gives next ("E1127 ... chttp2_server.cc ... Address
// already in use", then "--address: cannot listen on ..."): a debug line
// then, not a second error. Once serving, gRPC's errors (a client whose
// TLS handshake failed) are warnings.
void LogGrpc(gpr_log_func_args* args) {
  const char* slash = std::strrchr(args->file, '/');
  const char* file = slash == nullptr ? args->file : slash + 1;
  spdlog::level::level_enum level = spdlog::level::debug;
  if (args->severity == GPR_LOG_SEVERITY_INFO) level = spdlog::level::info;
  if (args->severity == GPR_LOG_SEVERITY_ERROR) {
    // gRPC aborts after an assertion's line.
    level = absl::StartsWith(args->message, "assertion failed")
                ? spdlog::level::critical
            : g_serving.load() ? spdlog::level::warn
                               : spdlog::level::debug;
  }
  spdlog::log(level, "grpc {}:{}: {}", file, args->line, args->message);
}

// After spdlog::shutdown() there is no logger to take gRPC's lines.
void DropGrpcLog(gpr_log_func_args*) {}

// spdlog's from_str() gives `off` for a name it does not know, which would
// silence the server over a typo, so the name is checked first.
bool ParseLogLevel(const std::string& name, spdlog::level::level_enum* out) {
  const std::string lower = absl::AsciiStrToLower(name);
  const spdlog::level::level_enum level = spdlog::level::from_str(lower);
  if (level == spdlog::level::off && lower != "off") return false;
  *out = level;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The Scatter gRPC service: Poisson-disk placement streamed to clients.\n"
      "Usage: scatterd [--address=127.0.0.1:50051] [flags]");
  bool only_check_args = false;
  const std::vector<char*> args = scatter::server::ParseCommandLine(
      argc, argv, "server/main.cc", &only_check_args);
  // Logs go to stderr; stdout carries only the line with the ports.
  spdlog::set_default_logger(spdlog::stderr_color_mt("scatterd"));
  spdlog::level::level_enum log_level = spdlog::level::info;
  if (!ParseLogLevel(absl::GetFlag(FLAGS_log_level), &log_level)) {
    spdlog::error(
        "--log_level must be trace, debug, info, warn, error, critical or off, "
        "got '{}'",
        absl::GetFlag(FLAGS_log_level));
    return 2;
  }
  // Until it serves, errors always show: a refused start is one line on
  // stderr whatever --log_level says (critical and off hid every reason a
  // pod would not start). Then the flag's level holds.
  spdlog::set_level(std::min(log_level, spdlog::level::err));
  gpr_set_log_function(LogGrpc);
  // scatterd takes flags only. A word among them was taken for nothing:
  // "--reflection false" is --reflection and a stray "false", so it turned
  // reflection on, and "scatterd 127.0.0.1:6000" served the default
  // address.
  if (args.size() > 1) {
    std::vector<std::string> extra(args.begin() + 1, args.end());
    spdlog::error(
        "scatterd takes no arguments besides flags, got '{}'; give a "
        "flag's value after '=' (--reflection=false, --address=HOST:PORT)",
        absl::StrJoin(extra, "' '"));
    return 2;
  }

  // Signals are taken by sigwait below, not by whichever thread they hit.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  scatter::server::ServerOptions options;
  options.address = absl::GetFlag(FLAGS_address);
  options.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  options.service.max_streams = absl::GetFlag(FLAGS_max_streams);
  options.service.limits.max_points = absl::GetFlag(FLAGS_max_points);
  options.service.limits.max_raster_bytes = absl::GetFlag(FLAGS_max_raster_bytes);
  options.service.max_upload_bytes = absl::GetFlag(FLAGS_max_raster_bytes);
  options.service.raster_cache_bytes = absl::GetFlag(FLAGS_raster_cache_bytes);
  options.service.limits.max_tiles_per_request =
      absl::GetFlag(FLAGS_max_tiles_per_request);
  options.service.tile_cache_bytes = absl::GetFlag(FLAGS_tile_cache_bytes);
  options.service.threads = absl::GetFlag(FLAGS_threads);
  options.service.limits.max_grid_bytes = absl::GetFlag(FLAGS_max_grid_bytes);
  options.service.memory_budget_bytes = absl::GetFlag(FLAGS_memory_budget_bytes);
  options.service.max_call_duration = absl::GetFlag(FLAGS_max_call_duration);
  options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  options.grace_period = absl::GetFlag(FLAGS_grace_period);
  options.drain_notice = absl::GetFlag(FLAGS_drain_notice);
  options.tls_reload_interval = absl::GetFlag(FLAGS_tls_reload_interval);
  options.max_connection_age = absl::GetFlag(FLAGS_max_connection_age);
  options.keepalive_time = absl::GetFlag(FLAGS_keepalive_time);
  options.reflection = absl::GetFlag(FLAGS_reflection);
  // ServerOptions reads an empty address as "in-process channels only":
  // scatterd started, said "listening on  (plaintext)" and "port 0", and
  // served nobody (an unset variable in --address=$(ADDRESS) does that).
  const absl::Status checked =
      options.address.empty()
          ? scatter::server::CheckAddressPort("address", options.address,
                                              /*port_required=*/true)
          : scatter::server::CheckOptions(options);
  if (!checked.ok()) {
    // The option names are the flag names.
    spdlog::error("--{}", std::string(checked.message()));
    return 2;
  }
  // Half a TLS setup would serve plaintext, or (a client CA alone) serve
  // without asking for the client certificates it names: refuse it.
  const bool has_cert = !absl::GetFlag(FLAGS_tls_cert).empty();
  const bool has_key = !absl::GetFlag(FLAGS_tls_key).empty();
  if (has_cert != has_key) {
    spdlog::error("--tls_cert and --tls_key go together: {} given without {}",
                  has_cert ? "--tls_cert" : "--tls_key",
                  has_cert ? "--tls_key" : "--tls_cert");
    return 2;
  }
  if (!absl::GetFlag(FLAGS_tls_client_ca).empty() && !has_cert) {
    spdlog::error(
        "--tls_client_ca needs TLS: give --tls_cert and --tls_key too");
    return 2;
  }
  for (const auto& [flag, path, out] :
       {std::tuple{"tls_cert", absl::GetFlag(FLAGS_tls_cert), &options.tls_cert_pem},
        std::tuple{"tls_key", absl::GetFlag(FLAGS_tls_key), &options.tls_key_pem},
        std::tuple{"tls_client_ca", absl::GetFlag(FLAGS_tls_client_ca),
                   &options.tls_client_ca_pem}}) {
    if (path.empty()) continue;
    absl::StatusOr<std::string> read = scatter::server::ReadWholeFile(path);
    if (!read.ok()) {
      spdlog::error("--{}: {}", flag, std::string(read.status().message()));
      return 2;
    }
    *out = *std::move(read);
  }
  // Watched from now on (ServerOptions::tls_cert_file), when every one is
  // a regular file: gRPC's watcher reads the paths again, and a pipe
  // (--tls_cert=<(...), /dev/stdin) read twice aborted scatterd at start.
  // Pipes serve what was read here, for good.
  bool watchable = has_cert;
  for (const std::string& path :
       {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
        absl::GetFlag(FLAGS_tls_client_ca)}) {
    struct stat info;
    if (!path.empty() &&
        (stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))) {
      watchable = false;
    }
  }
  if (watchable) {
    options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
    options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
    options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  } else if (has_cert) {
    spdlog::info(
        "scatterd: a --tls_* file is not a regular file: the TLS material "
        "read now is served until scatterd restarts (no reload)");
  }

  // gRPC would take bad files and then only fail to listen: name the file.
  if (has_cert) {
    const std::string cert =
        absl::StrCat("--tls_cert=", absl::GetFlag(FLAGS_tls_cert));
    const std::string key =
        absl::StrCat("--tls_key=", absl::GetFlag(FLAGS_tls_key));
    const std::string ca =
        absl::StrCat("--tls_client_ca=", absl::GetFlag(FLAGS_tls_client_ca));
    const absl::Status tls = scatter::server::CheckTlsMaterial(
        {cert, key, ca}, options.tls_cert_pem, options.tls_key_pem,
        options.tls_client_ca_pem);
    if (!tls.ok()) {
      spdlog::error("{}", std::string(tls.message()));
      return 2;
    }
  }

  // --only_check_args: the flags parsed and every value checked, as a
  // start would check them, without starting.
  if (only_check_args) return 0;

  // The image run with the default flags in a container limited to a few
  // GiB was killed for memory under load rather than refusing calls.
  const std::string over = scatter::server::MemoryOverLimit(
      options, scatter::sampler::CgroupMemoryLimit());
  if (!over.empty()) spdlog::warn("scatterd: {}", over);

  auto server = scatter::server::ScatterServer::Start(options);
  if (!server.ok()) {
    // Start is ResourceExhausted only for a --threads the system cannot
    // start: a flag refused, as those above are (exit 2, the message
    // naming it). It exited 1, as for a port that cannot be bound.
    if (absl::IsResourceExhausted(server.status())) {
      spdlog::error("{}", std::string(server.status().message()));
      return 2;
    }
    // Unavailable: a listener could not bind; its message begins with the
    // option's name, which is the flag's.
    if (absl::IsUnavailable(server.status())) {
      spdlog::error("--{}", std::string(server.status().message()));
      return 1;
    }
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  spdlog::info(
      "scatterd listening on {} ({}), {}, algorithm_version {}, SIMD {}",
      (*server)->listening_address(),
      options.tls_cert_pem.empty() ? "plaintext" : "TLS",
      options.metrics_address.empty()
          ? std::string("metrics off")
          : absl::StrCat("metrics on ",
                         options.metrics_address.substr(
                             0, options.metrics_address.rfind(':')),
                         ":", (*server)->metrics_port()),
      scatter::sampler::kAlgorithmVersion,
      scatter::sampler::SimdLevelName(scatter::sampler::ResolveSimdLevel(
          scatter::sampler::SimdLevel::kBest)));
  // One machine-readable line on stdout for tools that start scatterd on
  // port 0: "port N metrics_port M". A unix socket has no port: the line is
  // "address unix:PATH metrics_port M" instead.
  if ((*server)->port() == 0 && !(*server)->listening_address().empty()) {
    std::printf("address %s metrics_port %d\n",
                (*server)->listening_address().c_str(),
                (*server)->metrics_port());
  } else {
    std::printf("port %d metrics_port %d\n", (*server)->port(),
                (*server)->metrics_port());
  }
  std::fflush(stdout);
  spdlog::set_level(log_level);
  g_serving.store(true);

  const bool tls = !options.tls_cert_file.empty();
  const int signal = WaitForStop(signals, options.tls_reload_interval, tls);
  spdlog::info(
      "scatterd: signal {}, draining (grace {}; a second signal "
      "ends it)",
      signal, absl::FormatDuration(options.grace_period));
  // A second SIGTERM or SIGINT ends the grace period: the way to stop a
  // drain that --grace_period=inf, or a long one, would let run on.
  std::thread([&signals, interval = options.tls_reload_interval, tls,
               server = server->get()] {
    const int second = WaitForStop(signals, interval, tls);
    spdlog::warn("scatterd: signal {} again, ending the grace period", second);
    server->EndGrace();
  }).detach();
  (*server)->Shutdown();
  spdlog::info("scatterd: stopped");
  gpr_set_log_function(DropGrpcLog);
  // Flushed, not shut down: a second signal's thread may still log.
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  // Every call has ended with a status and the listeners are closed. Skip
  // gRPC's global teardown: in 1.51 it joins an executor thread that can sit
  // in a 10 s poll, which would hold a rolling update for nothing.
  std::_Exit(0);
}
