#include "server/server.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "civetweb.h"
#include "grpc/grpc.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "server/command_line.h"
#include "server/convert.h"
#include "server/raster_cache.h"
#include "spdlog/spdlog.h"

namespace scatter::server {
namespace {

int Millis(absl::Duration d) {
  return static_cast<int>(std::min<std::int64_t>(absl::ToInt64Milliseconds(d),
                                                 std::int64_t{1} << 30));
}

template <typename T>
absl::Status AtLeast(const char* name, T value, T least,
                     const char* note = "") {
  if (value >= least) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be >= ", least, note, ", got ", value));
}

template <typename T>
absl::Status InRange(const char* name, T value, T least, T most,
                     const char* note = "") {
  if (value >= least && value <= most) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      name, " must be in [", least, ", ", most, "]", note, ", got ", value));
}

absl::Status Positive(const char* name, absl::Duration value) {
  if (value > absl::ZeroDuration()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be > 0, got ", absl::FormatDuration(value)));
}

// Durations gRPC takes in whole milliseconds (Millis() above): a positive
// one under a millisecond would reach it as 0 (a max_connection_age of 0
// sends every connection GOAWAY as it opens).
absl::Status WholeMillis(const char* name, absl::Duration value) {
  if (value >= absl::Milliseconds(1)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name,
                   " must be > 0 and at least 1ms (gRPC counts it in "
                   "milliseconds), got ",
                   absl::FormatDuration(value)));
}

absl::Status NotNegative(const char* name, absl::Duration value) {
  if (value >= absl::ZeroDuration()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be >= 0, got ", absl::FormatDuration(value)));
}

// The first certificate in `pem`, or nullptr.
X509* ReadCertificate(absl::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  return cert;
}

// Each stream runs three threads: its gRPC handler thread, its watchdog
// and its producer (an upload two). 10 000 streams are 30 000 threads,
// about what Linux lets one process have by default (pid_max 32768;
// vm.max_map_count 65530, two maps a thread stack), where 100 000 promised
// what no default system starts. Past what the system gives, a call is
// refused with RESOURCE_EXHAUSTED naming it (StartThread in service.cc).
constexpr int kMostStreams = 10'000;
// Tile generator threads: each is a real thread, started with the server.
constexpr int kMostThreads = 1024;

// gRPC reads a host with two or more colons and no brackets as an IPv6
// address with no port: scatterd --address=::1 listened on port 443, not
// port 1, and "::1:50051" is no address at all. A target with a scheme
// ("dns:///", "ipv4:", "vsock:") starts with letters other than hex digits, or
// has a slash or brackets, and is left to gRPC.
bool IsBareIpv6(absl::string_view address) {
  if (std::count(address.begin(), address.end(), ':') < 2) return false;
  if (address.find_first_of("[]/") != absl::string_view::npos) return false;
  const absl::string_view first = address.substr(0, address.find(':'));
  return first.size() <= 4 &&
         std::all_of(first.begin(), first.end(), absl::ascii_isxdigit);
}

// Whether `port` is a TCP port: digits, at most 65535 (gRPC reads a larger
// one modulo 2^16, 99999 as 34463).
bool IsPort(absl::string_view port) {
  std::uint32_t value = 0;
  return !port.empty() && port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), absl::ascii_isdigit) &&
         absl::SimpleAtoi(port, &value) && value <= 65535;
}

bool IsIpv6(absl::string_view host) {
  // A zone ("fe80::1%eth0") is gRPC's to check, but holds no colon: in
  // "fe80::1%eth0:50051" a port follows it.
  const std::size_t zone = host.find('%');
  if (zone != absl::string_view::npos &&
      host.find(':', zone) != absl::string_view::npos) {
    return false;
  }
  const std::string address(host.substr(0, zone));
  in6_addr parsed;
  return inet_pton(AF_INET6, address.c_str(), &parsed) == 1;
}

// What a bare IPv6 `address` likely meant, in brackets: "[::1]:PORT" for
// "::1", "[::1]:50051" for "::1:50051" (not an address: 50051 is more
// than a group).
std::string Bracketed(absl::string_view address) {
  if (IsIpv6(address)) return absl::StrCat("[", address, "]:PORT");
  const std::size_t colon = address.rfind(':');
  const absl::string_view port = address.substr(colon + 1);
  if (!port.empty() &&
      std::all_of(port.begin(), port.end(), absl::ascii_isdigit) &&
      IsIpv6(address.substr(0, colon))) {
    return absl::StrCat("[", address.substr(0, colon), "]:", port);
  }
  return "[HOST]:PORT";
}

// mg_check_feature's bit for IPv6 (civetweb.h: "8  support IPv6").
constexpr unsigned kCivetwebIpv6 = 8;

// The metrics endpoint is HTTP on TCP (civetweb's listening_ports):
// host:port with a port of digits. civetweb refused anything else only
// once the gRPC server was up, saying "null context when constructing
// CivetServer. Possible problem binding to port", and took a bare port as
// one on every interface.
absl::Status CheckMetricsAddress(absl::string_view address) {
  const std::size_t colon = address.rfind(':');
  const absl::string_view port = colon == absl::string_view::npos
                                     ? absl::string_view()
                                     : address.substr(colon + 1);
  if (colon != absl::string_view::npos && colon > 0 && !IsBareIpv6(address) &&
      IsPort(port)) {
    // civetweb serves IPv6 only when built with it, and Debian's is not:
    // such an address passed here and failed once gRPC was up, with
    // "null context ... Possible problem binding to port".
    if (absl::StartsWith(address, "[") &&
        mg_check_feature(kCivetwebIpv6) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics_address: this build's HTTP server (civetweb) has no IPv6; "
          "give an IPv4 host (0.0.0.0:PORT serves every interface), got ",
          address));
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "metrics_address must be host:port with a port in [0, 65535] (0 picks "
      "a free port; 0.0.0.0:PORT serves every interface), or empty for no "
      "metrics, got ",
      address));
}

// Whether a process accepts connections on the unix socket at `path`.
bool SomeoneListensAt(absl::string_view path) {
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof address.sun_path) return false;
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool answered = connect(fd, reinterpret_cast<const sockaddr*>(&address),
                                sizeof address) == 0;
  close(fd);
  return answered;
}

}  // namespace

absl::Status CheckAddressPort(absl::string_view what, absl::string_view address,
                              bool port_required) {
  for (const absl::string_view scheme : {"unix:", "unix-abstract:"}) {
    absl::string_view path = address;
    if (!absl::ConsumePrefix(&path, scheme)) continue;
    // gRPC binds an empty path to an abstract socket of its own naming,
    // which nobody can dial; one longer than sockaddr_un holds fails to
    // bind as if the address were in use.
    constexpr std::size_t kMostPath = sizeof(sockaddr_un{}.sun_path) - 1;
    if (path.empty() || path.size() > kMostPath) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " must be ", scheme, "PATH with a PATH of 1 to ", kMostPath,
          " bytes, got ", address,
          path.empty() ? " (no path)"
                       : absl::StrCat(" (", path.size(), " bytes)")));
    }
    return absl::OkStatus();
  }
  if (IsBareIpv6(address)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be host:port with an IPv6 host in brackets, as ",
        Bracketed(address), port_required ? " (0 picks a free port)" : "",
        ", got ", address, ", which gRPC reads as a host without a port"));
  }
  // The port follows the last colon, unless that colon is inside an IPv6
  // host in brackets ("[::1]").
  const std::size_t colon = address.rfind(':');
  const absl::string_view port =
      colon == absl::string_view::npos || absl::EndsWith(address, "]")
          ? absl::string_view()
          : address.substr(colon + 1);
  // A port of digits past 65535; other forms are left to gRPC.
  const bool out_of_range =
      !port.empty() &&
      std::all_of(port.begin(), port.end(), absl::ascii_isdigit) &&
      !IsPort(port);
  // Where a port may be left out, gRPC (1.51) dials an IPv6 host in
  // brackets without one on port 0, not 443 as other hosts, and an empty
  // target fails with a log of its own and "Failed to create secure client
  // channel".
  const bool bracketed = absl::EndsWith(address, "]");
  // So is an IPv4 address without one (a hostname gets 443), also after
  // a scheme ("dns:///127.0.0.1", whose last colon is the scheme's).
  absl::string_view host = address;
  for (absl::string_view scheme : {"dns:///", "ipv4:"}) {
    if (absl::ConsumePrefix(&host, scheme)) break;
  }
  in_addr ipv4{};
  const bool bare_ipv4 =
      host.find(':') == absl::string_view::npos &&
      inet_pton(AF_INET, std::string(host).c_str(), &ipv4) == 1;
  // And a colon with no port after it ("127.0.0.1:"): gRPC dials port 0.
  const bool empty_port = absl::EndsWith(address, ":");
  if (out_of_range || address.empty() || bare_ipv4 || empty_port ||
      ((port_required || bracketed) && port.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be host:port with a port in [0, 65535]",
                     port_required ? " (0 picks a free port)" : "",
                     " or unix:PATH, got ", address.empty() ? "\"\"" : address,
                     empty_port ? ", with no port after the colon"
                     : !port_required && (bracketed || bare_ipv4)
                         ? ", which gRPC dials on port 0"
                         : ""));
  }
  return absl::OkStatus();
}

// TLS files renewed on disk, served once checked. gRPC 1.51's file watcher
// alone served whatever it read: a key read without its certificate, or a
// file caught half written, failed every handshake until the next read
// (and a Secret holding a bad pair took every pod down together). So this
// reads the files every tls_reload_interval, checks them as Start() does,
// and copies a good set into memory files (memfd) that gRPC's watcher
// reads every second, by /proc/self/fd paths: it needs no writable
// directory (read-only root file systems). The watcher compares the files'
// modification times before and after each read, and reads again if they
// moved, so it never serves a key written after the certificate it read.
class ScatterServer::TlsFiles {
 public:
  static absl::StatusOr<std::unique_ptr<TlsFiles>> Start(
      const ServerOptions& options) {
    auto self = std::unique_ptr<TlsFiles>(new TlsFiles(options));
    for (int* fd : {&self->cert_fd_, &self->key_fd_, &self->ca_fd_}) {
      if (fd == &self->ca_fd_ && options.tls_client_ca_file.empty()) break;
      *fd = memfd_create("scatterd-tls", MFD_CLOEXEC);
      if (*fd < 0) {
        return absl::InternalError(absl::StrCat(
            "tls: cannot make a memory file for the TLS material: ",
            std::strerror(errno)));
      }
    }
    const absl::Status first = self->Publish(
        {options.tls_cert_pem, options.tls_key_pem, options.tls_client_ca_pem});
    if (!first.ok()) return first;
    self->thread_ = std::thread([raw = self.get()] { raw->Watch(); });
    return self;
  }
  ~TlsFiles() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    if (thread_.joinable()) thread_.join();
    for (int fd : {cert_fd_, key_fd_, ca_fd_}) {
      if (fd >= 0) close(fd);
    }
  }
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  static std::string PathOf(int fd) {
    return fd < 0 ? "" : absl::StrCat("/proc/self/fd/", fd);
  }
  std::string cert_path() const { return PathOf(cert_fd_); }
  std::string key_path() const { return PathOf(key_fd_); }
  std::string ca_path() const { return PathOf(ca_fd_); }

 private:
  struct Material {
    std::string cert, key, ca;
    bool operator==(const Material& o) const {
      return cert == o.cert && key == o.key && ca == o.ca;
    }
  };

  explicit TlsFiles(const ServerOptions& options)
      : options_(options), logger_(options.logger) {}

  // Rewrites the memory files with `m`, key last.
  absl::Status Publish(const Material& m) {
    for (const auto& [fd, text] :
         {std::pair{ca_fd_, &m.ca}, std::pair{cert_fd_, &m.cert},
          std::pair{key_fd_, &m.key}}) {
      if (fd < 0) continue;
      if (ftruncate(fd, 0) != 0 || pwrite(fd, text->data(), text->size(), 0) !=
                                       static_cast<ssize_t>(text->size())) {
        return absl::InternalError(
            absl::StrCat("tls: cannot write the TLS material to memory: ",
                         std::strerror(errno)));
      }
    }
    served_ = m;
    return absl::OkStatus();
  }

  // The files now, checked; an error naming the file that fails.
  absl::StatusOr<Material> Read() const {
    Material m;
    for (const auto& [path, out] :
         {std::pair{&options_.tls_cert_file, &m.cert},
          std::pair{&options_.tls_key_file, &m.key},
          std::pair{&options_.tls_client_ca_file, &m.ca}}) {
      if (path->empty()) continue;
      absl::StatusOr<std::string> text = ReadWholeFile(*path);
      if (!text.ok()) return text.status();
      *out = *std::move(text);
    }
    const absl::Status checked =
        CheckTlsMaterial({options_.tls_cert_file, options_.tls_key_file,
                          options_.tls_client_ca_file},
                         m.cert, m.key, m.ca);
    if (!checked.ok()) return checked;
    return m;
  }

  void Watch() {
    std::string refused;  // The last refusal logged: each is said once.
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        auto stopped = [this]()
                           ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
        if (mu_.AwaitWithTimeout(absl::Condition(&stopped),
                                 options_.tls_reload_interval)) {
          return;
        }
      }
      absl::StatusOr<Material> read = Read();
      if (!read.ok()) {
        const std::string why(read.status().message());
        if (why != refused) {
          logger_->error(
              "scatterd: TLS files not reloaded, the last good ones are "
              "served: {}",
              why);
          refused = why;
        }
        continue;
      }
      refused.clear();
      if (*read == served_) continue;
      const absl::Status published = Publish(*read);
      if (!published.ok()) {
        logger_->error("scatterd: {}", std::string(published.message()));
      } else {
        logger_->info(
            "scatterd: TLS files changed: served from the next handshake");
      }
    }
  }

  const ServerOptions options_;
  const std::shared_ptr<spdlog::logger> logger_;
  int cert_fd_ = -1;
  int key_fd_ = -1;
  int ca_fd_ = -1;
  Material served_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

std::string MemoryOverLimit(const ServerOptions& options,
                            std::uint64_t limit_bytes) {
  const ServiceOptions& service = options.service;
  // In doubles: the flags go up to 2^64 each.
  const double requests = static_cast<double>(service.max_streams) *
                          static_cast<double>(options.max_request_bytes);
  const double sum = static_cast<double>(service.raster_cache_bytes) +
                     static_cast<double>(service.tile_cache_bytes) +
                     static_cast<double>(service.memory_budget_bytes) +
                     requests;
  if (limit_bytes == 0 || sum <= 0.9 * static_cast<double>(limit_bytes)) {
    return "";
  }
  return absl::StrFormat(
      "the memory flags add up to %.0f bytes (--raster_cache_bytes %d + "
      "--tile_cache_bytes %d + --memory_budget_bytes %d + --max_streams %d "
      "x --max_request_bytes %d), over 90 %% of this container's memory "
      "limit of %d bytes: under load scatterd would be killed for memory "
      "instead of refusing calls; lower them to fit (deploy/README.md, "
      "Memory)",
      sum, service.raster_cache_bytes, service.tile_cache_bytes,
      service.memory_budget_bytes, service.max_streams,
      options.max_request_bytes, limit_bytes);
}

absl::Status CheckOptions(const ServerOptions& options) {
  const ServiceOptions& service = options.service;
  const Limits& limits = service.limits;
  // Empty: no listening port (in-process channels only).
  if (!options.address.empty()) {
    absl::Status address =
        CheckAddressPort("address", options.address, /*port_required=*/true);
    if (!address.ok()) return address;
  }
  if (!options.metrics_address.empty()) {
    absl::Status metrics = CheckMetricsAddress(options.metrics_address);
    if (!metrics.ok()) return metrics;
  }
  for (const absl::Status& status : {
           InRange("max_streams", service.max_streams, 1, kMostStreams),
           InRange("threads", service.threads, 0, kMostThreads,
                   " (0: one per CPU the process may use)"),
           AtLeast<std::uint64_t>("max_points", limits.max_points, 1),
           AtLeast<std::size_t>("max_raster_bytes", limits.max_raster_bytes, 4),
           AtLeast<std::uint64_t>("max_grid_bytes", limits.max_grid_bytes,
                                  1024),
           AtLeast<std::uint64_t>("memory_budget_bytes",
                                  service.memory_budget_bytes, 1024),
           AtLeast<std::size_t>("max_tiles_per_request",
                                limits.max_tiles_per_request, 1),
           // Not a way to turn the cache off: a ScatterTiles call keeps the
           // generators it reads within this budget, so 0 refused every
           // call ("over the tile cache budget of 0 bytes"). Like the
           // floors above, 1024 only rules out the absurd: what one tile
           // needs depends on the request, which says so.
           AtLeast<std::size_t>("tile_cache_bytes", service.tile_cache_bytes,
                                kMinTileCacheBytes,
                                " (ScatterTiles calls keep the tile "
                                "generators they read within it; there is "
                                "no running without it)"),
           // gRPC refuses a message over it before scatterd sees it: below
           // the floor, the uploads meant for large rasters were refused
           // ("Received message larger than max") for any raster but a
           // tiny one.
           AtLeast("max_request_bytes", options.max_request_bytes,
                   kMinRequestBytes,
                   " (PutRaster uploads come in messages of up to 256 KiB "
                   "of pixels and their header)"),
           Positive("max_call_duration", service.max_call_duration),
           NotNegative("grace_period", options.grace_period),
           NotNegative("drain_notice", options.drain_notice),
           WholeMillis("keepalive_time", options.keepalive_time),
           WholeMillis("keepalive_timeout", options.keepalive_timeout),
           WholeMillis("max_connection_age", options.max_connection_age),
           NotNegative("max_connection_age_grace",
                       options.max_connection_age_grace),
       }) {
    if (!status.ok()) return status;
  }
  // The files are read on this period: whole seconds from 1 s to a day.
  if (options.tls_reload_interval < absl::Seconds(1) ||
      options.tls_reload_interval > absl::Hours(24) ||
      options.tls_reload_interval !=
          absl::Seconds(absl::ToInt64Seconds(options.tls_reload_interval))) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls_reload_interval must be whole seconds in [1s, 24h], "
                     "got ",
                     absl::FormatDuration(options.tls_reload_interval)));
  }
  // Every raster a call uses is held in the cache while the call runs, its
  // pixels decoded (up to max_raster_bytes, 4 per pixel) and their block
  // bounds (2/3 to 2 times as much again, by the raster's shape, which only
  // the call tells). The cache must hold the largest square raster
  // accepted, with its bounds (about 1.67 max_raster_bytes): one that
  // could not would refuse it on every call.
  // The side, at most 2^30 so that the sums below cannot overflow (past
  // that the check asks for max_raster_bytes itself), and exact: sqrt of a
  // double may round up.
  const std::uint64_t pixels = limits.max_raster_bytes / 4;
  std::uint64_t side = std::min<std::uint64_t>(
      static_cast<std::uint64_t>(std::sqrt(static_cast<double>(pixels))),
      std::uint64_t{1} << 30);
  while (side * side > pixels) --side;
  const std::uint64_t square = RasterCache::DecodedBytes(
      static_cast<std::uint32_t>(side), static_cast<std::uint32_t>(side));
  const std::uint64_t need =
      std::max<std::uint64_t>(square, limits.max_raster_bytes);
  if (service.raster_cache_bytes < need) {
    return absl::InvalidArgumentError(absl::StrCat(
        "raster_cache_bytes must be >= ", need, ", what a ", side, " x ", side,
        " raster (the largest square one max_raster_bytes = ",
        limits.max_raster_bytes,
        " accepts) takes with its block bounds: the cache holds the rasters "
        "calls use; got ",
        service.raster_cache_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckPemCertificate(absl::string_view what,
                                 absl::string_view pem) {
  X509* cert = ReadCertificate(pem);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no PEM certificate in it"));
  }
  X509_free(cert);
  return absl::OkStatus();
}

absl::Status CheckPemKey(absl::string_view what, absl::string_view key_pem,
                         absl::string_view cert_pem) {
  BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  // No passphrase: OpenSSL would otherwise ask for one on the terminal.
  EVP_PKEY* key = PEM_read_bio_PrivateKey(
      bio, nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": no PEM private key in it (or one behind a passphrase)"));
  }
  X509* cert = ReadCertificate(cert_pem);
  const bool matches =
      cert != nullptr && X509_check_private_key(cert, key) == 1;
  ERR_clear_error();
  X509_free(cert);
  EVP_PKEY_free(key);
  if (!matches) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the key does not belong to the certificate"));
  }
  return absl::OkStatus();
}

absl::Status CheckTlsMaterial(const TlsNames& names, absl::string_view cert_pem,
                              absl::string_view key_pem,
                              absl::string_view ca_pem) {
  absl::Status status = CheckPemCertificate(names.cert, cert_pem);
  if (status.ok()) status = CheckPemKey(names.key, key_pem, cert_pem);
  if (status.ok() && !ca_pem.empty()) {
    status = CheckPemCertificate(names.ca, ca_pem);
  }
  return status;
}

absl::StatusOr<std::unique_ptr<ScatterServer>> ScatterServer::Start(
    ServerOptions options) {
  absl::Status checked = CheckOptions(options);
  if (!checked.ok()) return checked;
  std::unique_ptr<ScatterServer> self(new ScatterServer());
  if (options.logger == nullptr) options.logger = spdlog::default_logger();
  // gRPC removes whatever is at a unix socket's path before it binds: a
  // second scatterd took the first one's socket, and left it unreachable
  // when it went. A socket someone answers on is in use; a stale one (its
  // server gone) may be taken.
  if (absl::string_view path = options.address;
      absl::ConsumePrefix(&path, "unix:") && SomeoneListensAt(path)) {
    return absl::UnavailableError(
        absl::StrCat("address: cannot listen on ", options.address,
                     ": a server is listening there"));
  }
  // A socket in a directory that is missing or not writable failed to
  // bind as "(address in use, or not host:port?)".
  if (absl::string_view path = options.address;
      absl::ConsumePrefix(&path, "unix:")) {
    const std::size_t slash = path.rfind('/');
    const std::string dir =
        slash == absl::string_view::npos
            ? "."
            : std::string(slash == 0 ? "/" : path.substr(0, slash));
    struct stat info;
    const char* why = nullptr;
    if (stat(dir.c_str(), &info) != 0) {
      why = std::strerror(errno);
    } else if (!S_ISDIR(info.st_mode)) {
      why = "not a directory";
    } else if (access(dir.c_str(), W_OK | X_OK) != 0) {
      why = std::strerror(errno);
    }
    if (why != nullptr) {
      return absl::UnavailableError(
          absl::StrCat("address: cannot listen on ", options.address,
                       ": its directory ", dir, ": ", why));
    }
    // Something other than a socket at the path (a file, a directory) is
    // not ours to replace, and gRPC cannot bind over it: it failed as
    // "(address in use, or not host:port?)" (found by a review helper).
    if (lstat(std::string(path).c_str(), &info) == 0 &&
        !S_ISSOCK(info.st_mode)) {
      return absl::UnavailableError(
          absl::StrCat("address: cannot listen on ", options.address, ": ",
                       path, " exists and is not a socket",
                       S_ISDIR(info.st_mode) ? " (a directory)" : ""));
    }
  }
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "tls: a certificate needs its key and a key its certificate");
  }
  if (!options.tls_client_ca_pem.empty() && options.tls_cert_pem.empty()) {
    // Without a certificate the server would listen in plaintext and ask
    // no client for the certificate this CA is meant to check.
    return absl::InvalidArgumentError(
        "tls_client_ca_pem: client certificates need TLS; give tls_cert_pem "
        "and tls_key_pem too");
  }
  // Files watched must be the ones the PEM fields came from: a file for
  // material that is not there would be served later, unchecked.
  for (const auto& [file, file_name, pem, pem_name] :
       {std::tuple{&options.tls_cert_file, "tls_cert_file",
                   &options.tls_cert_pem, "tls_cert_pem"},
        std::tuple{&options.tls_key_file, "tls_key_file", &options.tls_key_pem,
                   "tls_key_pem"},
        std::tuple{&options.tls_client_ca_file, "tls_client_ca_file",
                   &options.tls_client_ca_pem, "tls_client_ca_pem"}}) {
    if (!file->empty() && pem->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          file_name, ": give the file's contents in ", pem_name, " too"));
    }
  }
  if (!options.tls_cert_file.empty() &&
      (options.tls_key_file.empty() || options.tls_client_ca_file.empty() !=
                                           options.tls_client_ca_pem.empty())) {
    return absl::InvalidArgumentError(
        "tls_cert_file: watching the certificate needs the key's file, and "
        "the client CA's file when there is a client CA");
  }
  if (options.tls_cert_file.empty() &&
      !(options.tls_key_file.empty() && options.tls_client_ca_file.empty())) {
    return absl::InvalidArgumentError(
        "tls_key_file, tls_client_ca_file: watched only with tls_cert_file");
  }
  if (!options.tls_cert_pem.empty()) {
    const absl::Status tls = CheckTlsMaterial(
        {"tls_cert_pem", "tls_key_pem", "tls_client_ca_pem"},
        options.tls_cert_pem, options.tls_key_pem, options.tls_client_ca_pem);
    if (!tls.ok()) return tls;
  }
  options.service.max_request_bytes = options.max_request_bytes;
  self->options_ = options;
  self->registry_ = std::make_shared<prometheus::Registry>();
  self->service_ = std::make_unique<ScatterServiceImpl>(
      options.service, options.logger, *self->registry_);
  // Served by the handler threads alone, a --threads the system cannot
  // start would pass for one it could.
  const absl::Status started =
      CheckThreadsStarted(self->service_->pool(), options.service.threads);
  if (!started.ok()) return started;

  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) {
    // gRPC's reflection library registers its plugin, for every server the
    // process builds after, when it loads (a static initializer): linked
    // in, it answered on every scatterd, --reflection or not. So it loads
    // here, only when asked for; it stays loaded.
    if (dlopen(SCATTER_GRPC_REFLECTION_LIBRARY, RTLD_NOW | RTLD_GLOBAL) ==
        nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("reflection: cannot load gRPC's reflection library ",
                       SCATTER_GRPC_REFLECTION_LIBRARY, ": ", dlerror()));
    }
    // gRPC's own health service serves grpc.health.v1.Health without
    // its descriptors: reflection listed the service and then answered
    // "Symbol not found" for it, and a tool that resolves methods by
    // reflection (grpcurl) could not call it. The generated health code,
    // linked by this reference, puts them in the pool reflection reads.
    (void)grpc::health::v1::HealthCheckRequest::descriptor();
  }
  grpc::ServerBuilder builder;
  int selected_port = 0;
  if (!options.address.empty()) {
    std::shared_ptr<grpc::ServerCredentials> credentials;
    const grpc_ssl_client_certificate_request_type client_certificates =
        options.tls_client_ca_pem.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    if (options.tls_cert_pem.empty()) {
      credentials = grpc::InsecureServerCredentials();
    } else if (!options.tls_cert_file.empty()) {
      // The checked copies (TlsFiles), looked at every second.
      absl::StatusOr<std::unique_ptr<TlsFiles>> files =
          TlsFiles::Start(options);
      if (!files.ok()) return files.status();
      self->tls_files_ = *std::move(files);
      auto watcher =
          std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
              self->tls_files_->key_path(), self->tls_files_->cert_path(),
              self->tls_files_->ca_path(), 1);
      grpc::experimental::TlsServerCredentialsOptions tls(watcher);
      tls.watch_identity_key_cert_pairs();
      if (!options.tls_client_ca_file.empty()) tls.watch_root_certs();
      tls.set_cert_request_type(client_certificates);
      credentials = grpc::experimental::TlsServerCredentials(tls);
    } else {
      grpc::SslServerCredentialsOptions ssl(client_certificates);
      ssl.pem_root_certs = options.tls_client_ca_pem;
      ssl.pem_key_cert_pairs.push_back(
          {options.tls_key_pem, options.tls_cert_pem});
      credentials = grpc::SslServerCredentials(ssl);
    }
    builder.AddListeningPort(options.address, credentials, &selected_port);
  }
  builder.RegisterService(self->service_.get());
  // gRPC sets SO_REUSEPORT by default, so a second scatterd on a port in use
  // would start and share (or steal) the first one's connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             Millis(options.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             Millis(options.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                             Millis(options.max_connection_age));
  // A call that starts just before its connection's age is up may run for
  // max_call_duration: the grace covers that (and the watchdog's cut-off
  // after it), so the call ends with the service's own status, never by
  // the connection closing under it.
  builder.AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
      Millis(std::max(options.max_connection_age_grace,
                      options.service.max_call_duration + absl::Seconds(5))));
  // Sync server threads wake this often when idle, so stopping (which joins
  // them) takes a fraction of a second instead of their default 10 s.
  builder.SetSyncServerOption(
      grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 100);
  // Each Scatter stream holds a handler thread while it runs.
  grpc::ResourceQuota quota("scatterd");
  quota.SetMaxThreads(2 * options.service.max_streams + 16);
  builder.SetResourceQuota(quota);

  self->server_ = builder.BuildAndStart();
  if (self->server_ == nullptr ||
      (!options.address.empty() && selected_port == 0)) {
    return absl::UnavailableError(
        absl::StrCat("address: cannot listen on ", options.address,
                     " (address in use, or not host:port?)"));
  }
  // gRPC reports a bound unix socket as port 1: it has no port, and its
  // address is the one given.
  if (absl::StartsWith(options.address, "unix:") ||
      absl::StartsWith(options.address, "unix-abstract:")) {
    self->listening_address_ = options.address;
  } else if (!options.address.empty()) {
    self->port_ = selected_port;
    self->listening_address_ =
        absl::StrCat(options.address.substr(0, options.address.rfind(':')), ":",
                     selected_port);
  }
  self->server_->GetHealthCheckService()->SetServingStatus(true);
  self->server_->GetHealthCheckService()->SetServingStatus(kServiceName, true);

  if (!options.metrics_address.empty()) {
    try {
      self->exposer_ =
          std::make_unique<prometheus::Exposer>(options.metrics_address);
    } catch (const std::exception& e) {
      self->server_->Shutdown();
      return absl::UnavailableError(absl::StrCat(
          "metrics_address: cannot serve metrics on ", options.metrics_address,
          " (address in use?): ", e.what()));
    }
    // civetweb serves a handler's path as a prefix: "/metrics" answered
    // /metricsx and /metrics/anything too. "$" anchors its pattern, and
    // every other path gets civetweb's 404 (it has no document root).
    self->exposer_->RegisterCollectable(self->registry_, "/metrics$");
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
  const absl::Time start = absl::Now();
  const absl::Time until = start + options_.grace_period;
  const absl::Time notice_ends = start + options_.drain_notice;
  // The drain notice's end: gRPC core's shutdown sends GOAWAY on every
  // connection and closes the listeners, and lets the calls in flight run
  // (grpc::Server::Shutdown would block until they end). It is idempotent:
  // the Shutdown below adds its own notification and the deadline.
  grpc_completion_queue* goaway_queue = nullptr;
  int goaway_tag = 0;
  while (service_->stats().in_flight.load() > 0 && absl::Now() < until &&
         !grace_ended_.load()) {
    if (goaway_queue == nullptr && absl::Now() >= notice_ends) {
      goaway_queue = grpc_completion_queue_create_for_next(nullptr);
      grpc_server_shutdown_and_notify(server_->c_server(), goaway_queue,
                                      &goaway_tag);
      options_.logger->info(
          "scatterd: drain notice over: clients told to go (GOAWAY), no "
          "new connections; {} calls run on",
          service_->stats().in_flight.load());
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  // Past the grace period running samplers stop and their streams end with
  // UNAVAILABLE. StopInFlight returns once every handler has (a second at
  // most: those blocked on their clients are cut off), and a second's more
  // lets the statuses go out to clients that read slowly.
  service_->StopInFlight();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  if (goaway_queue != nullptr) {
    // Its notification came with the Shutdown's: every call has ended.
    grpc_completion_queue_shutdown(goaway_queue);
    while (grpc_completion_queue_next(
               goaway_queue, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr)
               .type != GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(goaway_queue);
  }
  service_->FlushRefusalLog();
}

ScatterServer::~ScatterServer() {
  if (server_ != nullptr) Shutdown();
}

}  // namespace scatter::server
