// scatter: the command-line client of scatterd (usage: main() below).
//
// Errors are one line on stderr and a non-zero exit code.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/job.h"
#include "client/local.h"
#include "client/output.h"
#include "client/preview.h"
#include "client/report.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "grpc/support/log.h"
#include "sampler/rng.h"
#include "sampler/tiles.h"
#include "sampler/version.h"
#include "server/command_line.h"
#include "server/server.h"

constexpr char kDefaultServer[] = "127.0.0.1:50051";
ABSL_FLAG(std::string, server, kDefaultServer,
          "scatterd address, host:port (an IPv6 host in brackets, "
          "[::1]:50051), or unix:PATH");
ABSL_FLAG(bool, local, false, "run the sampler in this process, with no server");
ABSL_FLAG(std::string, format, "csv", "output format: csv, jsonl, ply or raw");
ABSL_FLAG(std::string, out, "-",
          "run: output file, - is stdout; tiles: the directory for the tile "
          "files, which it needs (it refuses -)");
ABSL_FLAG(std::string, tiles, "",
          "tiles: which tiles, a rectangle x0:x1,y0:y1 (half-open, e.g. -4:4,-4:4) "
          "or a list x,y;x,y;...; empty = the job's tiles or rect");
ABSL_FLAG(std::string, shard, "",
          "tiles: i/n exports only band i (0-based) of n compact bands of the "
          "rectangle (blocks about as square as N / n tiles allow)");
ABSL_FLAG(int, threads, 0,
          "tiles --local: generator threads, 0 to 1024; 0 = one per CPU the process may use");
constexpr std::uint64_t kDefaultTileCacheBytes = std::uint64_t{512} << 20;
ABSL_FLAG(
    std::uint64_t, tile_cache_bytes, kDefaultTileCacheBytes,
    "tiles --local: bytes of finished tile generators kept while serving, "
    "and the most the run keeps alive at once");
constexpr int kDefaultTilesPerCall = 4096;
ABSL_FLAG(int, tiles_per_call, kDefaultTilesPerCall,
          "tiles against a server: tiles asked for per call at most");
ABSL_FLAG(std::string, seed, "", "override the job's seed (a uint64)");
ABSL_FLAG(bool, skip_existing, false,
          "scatter tiles: leave out the tiles whose files --out holds already "
          "(of the same world: its scatter-export.json says so); a retried "
          "shard resumes where it stopped");
ABSL_FLAG(absl::Duration, log_every, absl::Minutes(1),
          "scatter tiles with stderr not a terminal (a batch Job's log): a "
          "progress line this often (tiles of the total, points, seconds); "
          "0 for none");
ABSL_FLAG(
    bool, report, false,
    "run: print points per layer, smallest distance over the allowed one, "
    "coverage, rho and speed on stderr");
ABSL_FLAG(std::string, preview, "",
          "run: also write a picture of the result to this PNG (- for "
          "stdout, with --out a file)");
constexpr int kDefaultPreviewSize = 1024;
ABSL_FLAG(int, preview_size, kDefaultPreviewSize,
          "run: pixels on the preview's longer side");
ABSL_FLAG(absl::Duration, timeout, absl::ZeroDuration(),
          "deadline of each call (raster uploads too), or of a --local run; "
          "0 = none (health: 5s)");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA file of the server (enables TLS)");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM client key (mutual TLS)");
ABSL_FLAG(std::string, tls_server_name, "", "name to check in the server's certificate");

namespace scatter::client {
namespace {

// gRPC's own log lines, dropped: errors are one line, ours, and gRPC's
// came first ("E1127 ... ssl_transport_security.cc ... Handshake failed"
// before "scatter: cannot reach scatterd at ...: ... certificate verify
// failed"); the status carries the reason. An assertion's line is kept:
// gRPC aborts after it. main() installs this unless GRPC_VERBOSITY is set.
void QuietGrpcLog(gpr_log_func_args* args) {
  if (absl::StartsWith(args->message, "assertion failed")) {
    std::fprintf(stderr, "scatter: gRPC %s:%d: %s\n", args->file, args->line,
                 args->message);
  }
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "scatter: %s\n", message.c_str());
  return 1;
}

int Fail(const absl::Status& status) {
  std::string message =
      status.code() == absl::StatusCode::kUnavailable ||
              status.code() == absl::StatusCode::kNotFound
          ? std::string(status.message())
          : absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                         status.message());
  // A plaintext client at a TLS server, or one without the certificate a
  // mutual-TLS server asks for, hears only "Socket closed"; a refused
  // connection or a name that does not resolve is not about TLS.
  if (status.code() == absl::StatusCode::kUnavailable &&
      absl::StartsWith(status.message(), "cannot reach scatterd at ") &&
      absl::StrContains(status.message(), "Socket closed")) {
    if (absl::GetFlag(FLAGS_tls_ca).empty()) {
      absl::StrAppend(&message, " (if scatterd serves TLS, give --tls_ca)");
    } else if (absl::GetFlag(FLAGS_tls_cert).empty()) {
      absl::StrAppend(&message,
                      " (if scatterd asks for a client certificate, give "
                      "--tls_cert and --tls_key)");
    }
  }
  return Fail(message);
}

// A failed connect: a bad TLS flag is named as flags are, without a code.
int FailConnect(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument
             ? Fail(std::string(status.message()))
             : Fail(status);
}

// The contents of the file named by --`flag`.
absl::StatusOr<std::string> ReadFlagFile(const std::string& flag,
                                         const std::string& path) {
  absl::StatusOr<std::string> text = server::ReadWholeFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", text.status().message()));
  }
  return text;
}

// A PEM certificate file named by --`flag`, checked as scatterd checks its
// own (server::CheckPemCertificate).
absl::StatusOr<std::string> ReadPemCertificate(const std::string& flag,
                                               const std::string& path) {
  absl::StatusOr<std::string> pem = ReadFlagFile(flag, path);
  if (!pem.ok()) return pem;
  if (!server::CheckPemCertificate(flag, *pem).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": ", path, " holds no PEM CERTIFICATE block"));
  }
  return pem;
}

absl::StatusOr<std::unique_ptr<Client>> ConnectFromFlags() {
  ClientOptions options;
  options.address = absl::GetFlag(FLAGS_server);
  // gRPC would dial a port past 65535 modulo 2^16: another server, or none
  // ("cannot reach" naming a port nobody typed). Without a port it dials
  // 443, which a TLS front end may well be.
  const absl::Status address = server::CheckAddressPort(
      "--server", options.address, /*port_required=*/false);
  if (!address.ok()) return address;
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  const std::string ca = absl::GetFlag(FLAGS_tls_ca);
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  // Half a TLS setup would otherwise connect in plaintext, or fail later
  // as a connection problem.
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError(
        cert.empty() ? "--tls_key: needs --tls_cert (mutual TLS takes both)"
                     : "--tls_cert: needs --tls_key (mutual TLS takes both)");
  }
  if (ca.empty() && (!cert.empty() || !absl::GetFlag(FLAGS_tls_server_name).empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        cert.empty() ? "--tls_server_name" : "--tls_cert and --tls_key",
        ": need --tls_ca, which turns TLS on"));
  }
  if (!ca.empty()) {
    absl::StatusOr<std::string> pem = ReadPemCertificate("tls_ca", ca);
    if (!pem.ok()) return pem.status();
    options.tls_ca_pem = *std::move(pem);
  }
  if (!cert.empty()) {
    absl::StatusOr<std::string> pem = ReadPemCertificate("tls_cert", cert);
    if (!pem.ok()) return pem.status();
    options.tls_cert_pem = *std::move(pem);
    pem = ReadFlagFile("tls_key", key);
    if (!pem.ok()) return pem.status();
    // A PEM key that belongs to the certificate (server::CheckPemKey).
    const absl::Status key_ok =
        server::CheckPemKey("--tls_key " + key, *pem, options.tls_cert_pem);
    if (!key_ok.ok()) return key_ok;
    options.tls_key_pem = *std::move(pem);
  }
  return Client::Connect(options);
}

// Checks --timeout: 0 (no deadline) or at least the millisecond a
// deadline is counted in; an infinite one means no deadline. Returns 0, or
// the exit code of the one-line error.
int CheckTimeoutFlag() {
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  if (timeout == absl::InfiniteDuration()) {
    absl::SetFlag(&FLAGS_timeout, absl::ZeroDuration());
    return 0;
  }
  if (timeout == absl::ZeroDuration() || timeout >= absl::Milliseconds(1)) {
    return 0;
  }
  return Fail(absl::StrCat("--timeout: must be 0 (no deadline) or at least 1ms, got ",
                           absl::FormatDuration(timeout)));
}

// --timeout as call options: each call (uploads included) gets it.
CallOptions CallFromFlags() {
  CallOptions call;
  call.timeout = absl::GetFlag(FLAGS_timeout);
  return call;
}

// A call's failure with how far the run got (`done`, " after 12 points"),
// where that helps: a connection lost mid-call, and a call that --timeout
// ended, which the library says as "scatterd at ADDR: deadline passed"
// and which is said as a --local run says it, naming the timeout
// (`timeout`, "--timeout=500ms") and the server. Other statuses are
// returned as they are.
absl::Status WithProgress(const absl::Status& status, const Client& client,
                          const std::string& timeout, const std::string& done) {
  if (status.code() == absl::StatusCode::kUnavailable &&
      absl::StartsWith(status.message(), "lost the connection to scatterd")) {
    return absl::UnavailableError(absl::StrCat(status.message(), done));
  }
  if (status.code() != absl::StatusCode::kDeadlineExceeded ||
      !absl::EndsWith(status.message(),
                      absl::StrCat("scatterd at ", client.address(),
                                   ": deadline passed"))) {
    return status;
  }
  return absl::DeadlineExceededError(absl::StrCat(
      timeout, " passed waiting for scatterd at ", client.address(), done));
}

// --timeout as typed: "--timeout=500ms".
std::string TimeoutFlag() {
  return absl::StrCat("--timeout=",
                      absl::FormatDuration(absl::GetFlag(FLAGS_timeout)));
}

// No client for a local run.
absl::StatusOr<std::unique_ptr<Client>> ConnectUnlessLocal(bool local) {
  if (local) return std::unique_ptr<Client>();
  return ConnectFromFlags();
}

// --seed: nothing when not given.
absl::StatusOr<std::optional<std::uint64_t>> SeedFlag() {
  const std::string seed = absl::GetFlag(FLAGS_seed);
  if (seed.empty()) return std::nullopt;
  std::uint64_t value = 0;
  if (!absl::SimpleAtoi(seed, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--seed: expected an unsigned 64-bit integer, got \"", seed, "\""));
  }
  return value;
}

// Whether the command line names flag `name` (--name, -name, --name=...,
// or --noname for a bool), before a "--" that ends the flags. Abseil of
// this Debian keeps CommandLineFlag::IsSpecifiedOnCommandLine private.
bool Given(int argc, char** argv, absl::string_view name) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "-")) continue;
    absl::ConsumePrefix(&arg, "-");
    arg = arg.substr(0, arg.find('='));
    if (arg == name || (absl::ConsumePrefix(&arg, "no") && arg == name)) {
      return true;
    }
  }
  return false;
}

// The command line main() was given, for GivenFlag.
int g_argc = 0;
char** g_argv = nullptr;

// Whether the command line names flag `name`, even at its default value:
// a flag refused where it has no use is refused as typed ("--local
// --server=127.0.0.1:50051" was taken, "...:50052" refused).
bool GivenFlag(absl::string_view name) { return Given(g_argc, g_argv, name); }

// --threads and --tile_cache_bytes size a `scatter tiles --local` run's
// pool and cache. Anywhere else they changed nothing, silently; against a
// server they read as scatterd's flags of the same names, which size its
// own.
absl::Status CheckTilesLocalFlags(bool against_server) {
  for (const auto& [flag, given] :
       {std::pair{"threads", GivenFlag("threads")},
        std::pair{"tile_cache_bytes", GivenFlag("tile_cache_bytes")}}) {
    if (!given) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": only `scatter tiles --local` takes it; ",
        against_server ? absl::StrCat("against a server, scatterd's own --",
                                      flag, " sets that")
                       : std::string("`scatter run` has no use for it")));
  }
  return absl::OkStatus();
}

// A --local run makes no calls: --server and the --tls_* flags would
// change nothing, silently.
absl::Status CheckNoServerFlags() {
  for (const auto& [flag, given] :
       {std::pair{"server", GivenFlag("server")},
        std::pair{"tls_ca", !absl::GetFlag(FLAGS_tls_ca).empty()},
        std::pair{"tls_cert", !absl::GetFlag(FLAGS_tls_cert).empty()},
        std::pair{"tls_key", !absl::GetFlag(FLAGS_tls_key).empty()},
        std::pair{"tls_server_name",
                  !absl::GetFlag(FLAGS_tls_server_name).empty()}}) {
    if (!given) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": a --local run makes no calls to a server; drop --", flag,
        " or --local"));
  }
  return absl::OkStatus();
}

int Run(const std::string& job_path) {
  // Flags of `scatter tiles` alone: taken silently, the whole region was
  // sampled instead of the tiles asked for.
  if (!absl::GetFlag(FLAGS_tiles).empty()) {
    return Fail(
        "--tiles: only `scatter tiles` takes tiles; `scatter run` fills the "
        "request's region");
  }
  if (!absl::GetFlag(FLAGS_shard).empty()) {
    return Fail("--shard: only `scatter tiles` takes shards");
  }
  const absl::Status tiles_local =
      CheckTilesLocalFlags(/*against_server=*/false);
  if (!tiles_local.ok()) return Fail(std::string(tiles_local.message()));
  // Taken silently too: a run makes one call, and draws at the default
  // size when a --preview is given.
  if (GivenFlag("tiles_per_call")) {
    return Fail(
        "--tiles_per_call: only `scatter tiles` against a server takes it; "
        "`scatter run` makes one call");
  }
  if (GivenFlag("log_every")) {
    return Fail("--log_every: only `scatter tiles` takes it");
  }
  if (GivenFlag("skip_existing")) {
    return Fail("--skip_existing: only `scatter tiles` takes it");
  }
  if (absl::GetFlag(FLAGS_preview).empty() && GivenFlag("preview_size")) {
    return Fail(
        "--preview_size: sizes the --preview picture; give --preview too");
  }
  absl::StatusOr<v1::Job> job = LoadJob(job_path);
  if (!job.ok()) return Fail(std::string(job.status().message()));
  if (job->has_world() && !job->has_request()) {
    return Fail(absl::StrCat(job_path, ": a tiled world, not a request: use `scatter tiles`"));
  }
  // As `scatter tiles` says it of a world (an empty job was told "layers:
  // at least one layer is required"; found by a review helper).
  if (!job->has_request()) {
    return Fail(absl::StrCat(job_path,
                             ": no \"request\" to run (`scatter run` needs a "
                             "job with a request, `scatter tiles` one with a "
                             "world)"));
  }
  absl::StatusOr<std::optional<std::uint64_t>> seed = SeedFlag();
  if (!seed.ok()) return Fail(std::string(seed.status().message()));
  if (seed->has_value()) job->mutable_request()->set_seed(**seed);
  absl::StatusOr<Format> format = ParseFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return Fail(std::string(format.status().message()));
  // (It was said to name a directory.)
  if (absl::GetFlag(FLAGS_out).empty()) {
    return Fail("--out: empty; give a file, or - for stdout");
  }
  const std::string base_dir = JobDir(job_path);

  const bool local = absl::GetFlag(FLAGS_local);
  if (local) {
    const absl::Status no_server = CheckNoServerFlags();
    if (!no_server.ok()) return Fail(std::string(no_server.message()));
  }
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectUnlessLocal(local);
  if (!client.ok()) return FailConnect(client.status());
  const bool report = absl::GetFlag(FLAGS_report);
  // "-" is stdout, as for --out (it wrote a file named "-").
  const std::string preview = absl::GetFlag(FLAGS_preview) == "-"
                                  ? std::string("/dev/stdout")
                                  : absl::GetFlag(FLAGS_preview);
  if (!preview.empty()) {
    const absl::Status size_ok = CheckPreviewSize(absl::GetFlag(FLAGS_preview_size));
    if (!size_ok.ok()) return Fail(std::string(size_ok.message()));
    // The picture comes after --out is replaced: a place it cannot be
    // written must fail the run before that.
    const absl::Status writable = CheckPreviewWritable(preview);
    if (!writable.ok()) return Fail(std::string(writable.message()));
    // Nor may it replace the points (found by a review helper: --out=x.png
    // --preview=x.png left the picture and exited 0).
    // (/dev/null for both is fine; one pipe or terminal for both is not.)
    // Nor through a link not made yet, or stdout redirected to it.
    const std::string out = absl::GetFlag(FLAGS_out);
    if (WriteOneFile(out.empty() ? "-" : out, preview)) {
      return Fail(absl::StrCat("--preview: ", preview,
                               " is the file --out writes the points to; "
                               "give the picture another name"));
    }
  }
  // The rasters are read once: inline for a local run, the report and the
  // preview; uploaded from there for the server.
  absl::StatusOr<v1::ScatterRequest> inline_request = ResolveRasters(*job, base_dir);
  if (!inline_request.ok()) return Fail(inline_request.status());
  // The picture and the report are made here, after the run: a raster the
  // job names by digest lives only in the server's cache. Said before the
  // run, not after --out is replaced (found by a review helper).
  if (!local && (report || !preview.empty())) {
    const absl::Status here =
        CheckNoDigests(inline_request->region(), inline_request->layers(),
                       absl::StrCat(!preview.empty() ? "--preview" : "--report",
                                    " (made in this process, after the run)"));
    if (!here.ok()) return Fail(here);
  }
  // Files need every per-point array.
  inline_request->clear_fields();
  const v1::ScatterRequest* request = &*inline_request;
  absl::StatusOr<v1::ScatterRequest> uploaded;
  if (!local) {
    uploaded = UploadRasters(*inline_request, **client, CallFromFlags());
    if (!uploaded.ok()) {
      return Fail(NameRasterFile(
          *job, base_dir,
          WithProgress(uploaded.status(), **client, TimeoutFlag(),
                       " while uploading the job's rasters")));
    }
    request = &*uploaded;
  }

  // A sphere or a 3D box makes 3D points; every other region 2D.
  const v1::Region& region = request->region();
  const int run_dims =
      region.has_sphere() || (region.has_box() && region.box().min_size() == 3) ? 3
                                                                               : 2;
  absl::StatusOr<std::unique_ptr<PointWriter>> writer =
      OpenWriter(*format, absl::GetFlag(FLAGS_out), run_dims);
  // A flag's error, named as flags are: without a code.
  if (!writer.ok()) return Fail(std::string(writer.status().message()));

  const bool progress = isatty(STDERR_FILENO) == 1;
  v1::PointBatch kept;  // Every point, for --report.
  int dims = 2;
  std::uint64_t points = 0;
  absl::Status write_status;
  const absl::Time start = absl::Now();
  absl::Time shown = start;
  bool on_screen = false;  // A progress line is on the terminal.
  auto draw = [&] {
    shown = absl::Now();
    on_screen = true;
    const double s = absl::ToDoubleSeconds(shown - start);
    std::fprintf(stderr, "\r%llu points, %.2f M points/s, %.1f s   ",
                 static_cast<unsigned long long>(points),
                 static_cast<double>(points) / s / 1e6, s);
  };
  auto handler = [&](const v1::PointBatch& batch) {
    write_status = (*writer)->Write(batch);
    if (!write_status.ok()) return false;
    dims = static_cast<int>(batch.dims());
    points += static_cast<std::uint64_t>(batch.id_size());
    if (report || !preview.empty()) kept.MergeFrom(batch);
    if (progress && absl::Now() - shown > absl::Milliseconds(250)) draw();
    return true;
  };
  absl::StatusOr<v1::Summary> summary =
      local ? RunLocal(*request, handler, absl::GetFlag(FLAGS_timeout))
            : (*client)->Scatter(*request, handler, CallFromFlags());
  // The line ends on the final count: it kept the count of up to 250 ms
  // before (806 912 of 870 093 points), and a run too short to draw it
  // left a blank line.
  if (on_screen) {
    draw();
    std::fprintf(stderr, "\n");
  }
  if (!write_status.ok()) return Fail(write_status);
  // The job's own max_points ends the stream without a summary; the file
  // then holds the points it asked for. The server's limits still fail.
  const bool capped =
      !summary.ok() && StoppedAtOwnCap(summary.status(), *request, points);
  if (!summary.ok() && !capped) {
    return Fail(NameRasterFile(
        *job, base_dir,
        local ? summary.status()
              : WithProgress(summary.status(), **client, TimeoutFlag(),
                             absl::StrCat(" after ", points, " points"))));
  }
  const absl::Status finished = (*writer)->Finish();
  if (!finished.ok()) return Fail(finished);
  // The run's time for --report: the points and the file, not the preview
  // drawn after them (seconds at --preview_size=8192, against milliseconds
  // of sampling).
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (capped) {
    std::fprintf(stderr, "scatter: stopped at the job's max_points = %llu\n",
                 static_cast<unsigned long long>(points));
  }
  if (!preview.empty()) {
    const absl::Status drawn = WritePreview(preview, *inline_request, kept,
                                            absl::GetFlag(FLAGS_preview_size));
    if (!drawn.ok()) return Fail(drawn);
  }
  if (report) {
    if (capped) summary = SummaryFromPoints(*inline_request, kept);
    if (!summary.ok()) return Fail(summary.status());
    absl::StatusOr<std::vector<LayerReport>> layers =
        MeasureRun(*inline_request, *summary, kept, 1'000'000);
    if (!layers.ok()) return Fail(layers.status());
    std::fputs(FormatReport(*layers, summary->total_points(), seconds).c_str(),
               stderr);
  }
  return 0;
}

// A rectangle "x0:x1,y0:y1" or a list "x,y;x,y;..." into the request.
// Of the request's list of tiles, the first one listed again: (where it
// was first, where again), or nullopt. A tile listed twice would be sent
// twice (the server sends repeats), written once and counted twice.
std::optional<std::pair<int, int>> RepeatedTile(
    const v1::ScatterTilesRequest& request) {
  std::map<std::pair<std::int64_t, std::int64_t>, int> first;
  for (int i = 0; i < request.tiles_size(); ++i) {
    const v1::TileCoord& t = request.tiles(i);
    const auto [at, added] = first.try_emplace({t.x(), t.y()}, i);
    if (!added) return std::pair{at->second, i};
  }
  return std::nullopt;
}

absl::Status ParseTiles(const std::string& text, v1::ScatterTilesRequest* request) {
  const absl::Status bad = absl::InvalidArgumentError(absl::StrCat(
      "--tiles: expected x0:x1,y0:y1 (half-open) or x,y;x,y;..., got \"", text,
      "\""));
  request->clear_tiles();
  request->clear_rect();
  if (absl::StrContains(text, ':')) {
    const std::vector<std::string> axes = absl::StrSplit(text, ',');
    std::int64_t v[4];
    if (axes.size() != 2) return bad;
    for (int a = 0; a < 2; ++a) {
      const std::vector<std::string> ends = absl::StrSplit(axes[a], ':');
      if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &v[2 * a]) ||
          !absl::SimpleAtoi(ends[1], &v[2 * a + 1])) {
        return bad;
      }
    }
    v1::TileRange* rect = request->mutable_rect();
    rect->set_x0(v[0]);
    rect->set_x1(v[1]);
    rect->set_y0(v[2]);
    rect->set_y1(v[3]);
    return absl::OkStatus();
  }
  for (const absl::string_view tile : absl::StrSplit(text, ';', absl::SkipEmpty())) {
    const std::vector<std::string> xy = absl::StrSplit(tile, ',');
    std::int64_t x = 0, y = 0;
    if (xy.size() != 2 || !absl::SimpleAtoi(xy[0], &x) || !absl::SimpleAtoi(xy[1], &y)) {
      return bad;
    }
    v1::TileCoord* coord = request->add_tiles();
    coord->set_x(x);
    coord->set_y(y);
  }
  if (request->tiles_size() == 0) return bad;
  if (const auto repeated = RepeatedTile(*request)) {
    const v1::TileCoord& t = request->tiles(repeated->second);
    return absl::InvalidArgumentError(
        absl::StrCat("--tiles: tile ", t.x(), ",", t.y(),
                     " is listed twice in \"", text, "\""));
  }
  return absl::OkStatus();
}

// Tiles one run of `scatter tiles` lists at most (16 bytes each).
constexpr std::uint64_t kMaxRunTiles = std::uint64_t{1} << 24;

// Tiles in a rectangle: 0 when it is empty, UINT64_MAX past 64 bits.
std::uint64_t RectTiles(const v1::TileRange& r) {
  if (r.x1() <= r.x0() || r.y1() <= r.y0()) return 0;
  // Unsigned differences cannot overflow.
  const std::uint64_t w = static_cast<std::uint64_t>(r.x1()) - static_cast<std::uint64_t>(r.x0());
  const std::uint64_t h = static_cast<std::uint64_t>(r.y1()) - static_cast<std::uint64_t>(r.y0());
  return w > std::numeric_limits<std::uint64_t>::max() / h
             ? std::numeric_limits<std::uint64_t>::max()
             : w * h;
}

// The tiles a request asks for: its rectangle's or its list's.
std::uint64_t RequestTiles(const v1::ScatterTilesRequest& request) {
  return request.has_rect() ? RectTiles(request.rect())
                            : static_cast<std::uint64_t>(request.tiles_size());
}

// InvalidArgument naming `what` (the flag, or the job's field) when the
// half-open rectangle holds no tile. Checked before the output directory
// is made; the server would name the request's rect.x1 or rect.y1.
absl::Status CheckRectNotEmpty(const v1::TileRange& r,
                               const std::string& what) {
  for (const auto& [axis, lo, hi] :
       {std::tuple{"x", r.x0(), r.x1()}, std::tuple{"y", r.y0(), r.y1()}}) {
    if (hi <= lo) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": ", axis, "1 must be > ", axis, "0 (half-open), got ", axis,
          "0 = ", lo, ", ", axis, "1 = ", hi));
    }
  }
  return absl::OkStatus();
}

// Tile indices are in [-2^31, 2^31), as scatterd and sampler::ShardTiles
// take them (a rectangle's x1 and y1 up to 2^31).
constexpr std::int64_t kTileIndexLimit = std::int64_t{1} << 31;
// Tiles a rectangle may hold, however many shards share it.
constexpr std::uint64_t kMaxRectTiles = std::uint64_t{1} << 31;

// InvalidArgument naming `what` when a corner of the rectangle is outside
// the tile index range.
absl::Status CheckRectIndices(const v1::TileRange& r, const std::string& what) {
  for (const auto& [name, v, hi] :
       {std::tuple{"x0", r.x0(), kTileIndexLimit - 1},
        std::tuple{"x1", r.x1(), kTileIndexLimit},
        std::tuple{"y0", r.y0(), kTileIndexLimit - 1},
        std::tuple{"y1", r.y1(), kTileIndexLimit}}) {
    if (v < -kTileIndexLimit || v > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", name, " must be in [-2^31, 2^31",
                       hi == kTileIndexLimit ? "]" : ")",
                       " (the tile index range), got ", v));
    }
  }
  return absl::OkStatus();
}

// --shard=i/n: the request's rectangle becomes the list of band i's tiles.
absl::Status ApplyShard(const std::string& text, v1::ScatterTilesRequest* request) {
  const std::vector<std::string> parts = absl::StrSplit(text, '/');
  int i = 0, n = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &i) ||
      !absl::SimpleAtoi(parts[1], &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard: expected i/n (e.g. 0/4), got \"", text, "\""));
  }
  if (!request->has_rect()) {
    return absl::InvalidArgumentError(
        "--shard: needs a rectangle of tiles (--tiles=x0:x1,y0:y1 or the job's rect)");
  }
  // The band replaces the rectangle: tiles already listed would be in
  // every band (TilesRequest refuses a world with both).
  if (request->tiles_size() > 0) {
    return absl::InvalidArgumentError("--shard: give tiles or rect, not both");
  }
  const v1::TileRange rect = request->rect();
  if (n >= 1) {
    // The largest band: the tiles over n, rounded up (no overflow near
    // 2^64). Exactly kMaxRunTiles is allowed, as --tiles allows it.
    const std::uint64_t tiles = RectTiles(rect);
    const auto shards = static_cast<std::uint64_t>(n);
    const std::uint64_t band = tiles / shards + (tiles % shards != 0 ? 1 : 0);
    if (band > kMaxRunTiles) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--shard: bands of up to ", band, " tiles, over ", kMaxRunTiles,
          " for one run: use more shards"));
    }
  }
  absl::StatusOr<std::vector<sampler::TileCoord>> band =
      sampler::ShardTiles(rect.x0(), rect.x1(), rect.y0(), rect.y1(), i, n);
  if (!band.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--shard: ", band.status().message()));
  }
  request->clear_rect();
  for (const sampler::TileCoord& t : *band) {
    v1::TileCoord* coord = request->add_tiles();
    coord->set_x(t.x);
    coord->set_y(t.y);
  }
  return absl::OkStatus();
}

// The world of the job loaded from `job_path`, with the flags applied:
// --seed, --tiles, --shard. Errors name the file or the flag.
absl::StatusOr<v1::ScatterTilesRequest> TilesRequest(
    const std::string& job_path, const v1::Job& job) {
  if (!job.has_world()) {
    return absl::InvalidArgumentError(
        absl::StrCat(job_path, ": no \"world\" to tile (`scatter tiles` needs a job ",
                     "with a world, `scatter run` one with a request)"));
  }
  absl::StatusOr<v1::ScatterTilesRequest> request =
      ResolveWorldRasters(job, JobDir(job_path));
  if (!request.ok()) return request.status();
  // Files need every per-point array.
  request->clear_fields();
  absl::StatusOr<std::optional<std::uint64_t>> seed = SeedFlag();
  if (!seed.ok()) return seed.status();
  if (seed->has_value()) request->set_seed(**seed);
  const std::string tiles = absl::GetFlag(FLAGS_tiles);
  if (!tiles.empty()) {
    const absl::Status parsed = ParseTiles(tiles, &*request);
    if (!parsed.ok()) return parsed;
  }
  if (!request->has_rect() && request->tiles_size() == 0) {
    return absl::InvalidArgumentError(
        "--tiles: which tiles? give x0:x1,y0:y1 or x,y;..., or put them in the "
        "job's world");
  }
  // As the server refuses it (--tiles replaces both). Checked before
  // --shard, which turns the rect into a list of tiles: added to the job's
  // own, they were exported by every shard.
  if (request->has_rect() && request->tiles_size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(job_path, ": world: give tiles or rect, not both"));
  }
  // A tile the job lists twice, as one --tiles lists twice (found by a
  // review helper).
  if (const auto repeated =
          tiles.empty() ? RepeatedTile(*request) : std::nullopt) {
    const auto [first, again] = *repeated;
    const v1::TileCoord& t = request->tiles(again);
    return absl::InvalidArgumentError(absl::StrCat(
        job_path, ": world.tiles[", again, "]: tile ", t.x(), ",", t.y(),
        " is listed twice (also as world.tiles[", first, "])"));
  }
  // As a rectangle's corners are checked below: the server named its own
  // field ("tiles[0].x: must be in ..."), not the flag or the job's.
  for (int i = 0; i < request->tiles_size(); ++i) {
    const v1::TileCoord& t = request->tiles(i);
    for (const auto& [axis, v] :
         {std::pair{"x", t.x()}, std::pair{"y", t.y()}}) {
      if (v < -kTileIndexLimit || v >= kTileIndexLimit) {
        return absl::InvalidArgumentError(absl::StrCat(
            tiles.empty() ? absl::StrCat(job_path, ": world.tiles[", i, "]")
                          : absl::StrCat("--tiles: tile ", t.x(), ",", t.y()),
            ": ", axis,
            " must be in [-2^31, 2^31) (the tile index range), got ", v));
      }
    }
  }
  if (request->has_rect()) {
    const std::string what =
        tiles.empty() ? absl::StrCat(job_path, ": world.rect") : "--tiles";
    const absl::Status nonempty = CheckRectNotEmpty(request->rect(), what);
    if (!nonempty.ok()) return nonempty;
    // Before the counts: no shard or split reaches a tile past the index
    // range, and --shard cannot cut a rectangle over 2^31 tiles, so the
    // hints below (more shards, --shard) would lead nowhere.
    const absl::Status in_range = CheckRectIndices(request->rect(), what);
    if (!in_range.ok()) return in_range;
    if (RectTiles(request->rect()) > kMaxRectTiles) {
      const v1::TileRange& r = request->rect();
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": tile rectangle holds ", r.x1() - r.x0(), " x ",
          r.y1() - r.y0(), " tiles, over 2^31, however many shards share it: ",
          "split it into rectangles of their own"));
    }
  }
  const std::string shard = absl::GetFlag(FLAGS_shard);
  if (!shard.empty()) {
    const absl::Status sharded = ApplyShard(shard, &*request);
    if (!sharded.ok()) return sharded;
  }
  if (request->has_rect() && RectTiles(request->rect()) > kMaxRunTiles) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tiles: ", RectTiles(request->rect()), " tiles, over ", kMaxRunTiles,
        " for one run: split them with --shard"));
  }
  return request;
}

// The file in an export directory that says which world its tiles are of:
// a directory that held another world's tiles took a new export over them
// silently, and mixed the two (tiles of two seeds side by side, points an
// eighth of the spacing apart across their border; found by a review
// helper).
constexpr char kManifestName[] = "scatter-export.json";

// What decides a tile's bytes: the world (layers, region, obstacles,
// rasters, seed, tile size, algorithm version: the request without its
// tiles and rect, and without batch_size, which changes only the
// delivery), serialized deterministically and hashed (a 64-bit digest, to
// tell worlds apart, not against an adversary). algorithm_version 0 is the
// current one, so a job that names it makes the same world as one that
// leaves it out. (Both, and a batch_size added to resume an export, were
// refused as "another world", found by a review helper.)
std::string WorldDigest(const v1::ScatterTilesRequest& request) {
  v1::ScatterTilesRequest world = request;
  world.clear_tiles();
  world.clear_rect();
  world.clear_batch_size();
  if (world.algorithm_version() == sampler::kAlgorithmVersion) {
    world.clear_algorithm_version();
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    world.SerializeToCodedStream(&coded);
  }
  std::uint64_t h = sampler::Combine(0x5ca77e0e3790f7ULL, bytes.size());
  for (std::size_t at = 0; at < bytes.size(); at += 8) {
    std::uint64_t chunk = 0;
    std::memcpy(&chunk, bytes.data() + at,
                std::min<std::size_t>(8, bytes.size() - at));
    h = sampler::Combine(h, chunk);
  }
  return absl::StrCat(absl::Hex(h, absl::kZeroPad16));
}

std::string ManifestText(const v1::ScatterTilesRequest& request) {
  return absl::StrCat("{\"world\": \"", WorldDigest(request),
                      "\", \"seed\": \"", request.seed(),
                      "\", \"algorithmVersion\": ", sampler::kAlgorithmVersion,
                      "}\n");
}

// OK when `dir` holds no manifest or one of this export's world;
// FailedPrecondition naming both worlds otherwise.
absl::Status CheckManifest(const std::string& dir, const std::string& text) {
  const std::string path = absl::StrCat(dir, "/", kManifestName);
  std::string held;
  if (server::ReadWholeFile(path, &held) != nullptr) return absl::OkStatus();
  if (held == text) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--out: ", dir, " holds the tiles of another world (", path, ": ",
      absl::StripAsciiWhitespace(held),
      "; this export: ", absl::StripAsciiWhitespace(text),
      "): export into another directory, or empty this one first"));
}

// Writes the manifest whole (a temporary file renamed over it).
absl::Status WriteManifest(const std::string& dir, const std::string& text) {
  const std::string path = absl::StrCat(dir, "/", kManifestName);
  absl::StatusOr<std::string> temp = WritePathFor(path);
  if (!temp.ok()) return temp.status();
  std::FILE* file = std::fopen(temp->c_str(), "wb");
  bool written = file != nullptr &&
                 std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (file != nullptr) written = std::fclose(file) == 0 && written;
  if (!written) {
    const int error = errno;
    DiscardTemporary(*temp, path);
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
  }
  return CommitTemporary(*temp, path);
}

// --skip_existing: drops from `request` the tiles whose files `dir` holds
// (a rectangle becomes its list of tiles, row by row), and returns how
// many. Only over a manifest of this world (CheckManifest passed, and one
// exists): files without one may be another world's. A tile file is whole
// or absent (each is renamed into place when whole), so one that exists
// is the tile.
absl::StatusOr<std::uint64_t> SkipExisting(const std::string& dir,
                                           Format format,
                                           v1::ScatterTilesRequest* request) {
  struct stat info;
  if (stat(absl::StrCat(dir, "/", kManifestName).c_str(), &info) != 0) return 0;
  if (request->has_rect()) {
    const absl::Status listed = ApplyShard("0/1", request);
    if (!listed.ok()) return listed;
  }
  v1::ScatterTilesRequest kept = *request;
  kept.clear_tiles();
  std::uint64_t skipped = 0;
  for (const v1::TileCoord& t : request->tiles()) {
    const std::string file =
        absl::StrCat(dir, "/", TileFileName(t.x(), t.y(), format));
    if (stat(file.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      ++skipped;
    } else {
      *kept.add_tiles() = t;
    }
  }
  *request = std::move(kept);
  return skipped;
}

// The directories `dir` and its parents that do not exist yet, outermost
// first: those TileFiles::Open will make.
std::vector<std::string> MissingDirectories(const std::string& dir) {
  std::vector<std::string> missing;
  for (std::size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string prefix = dir.substr(0, at);
    struct stat info;
    if (stat(prefix.c_str(), &info) != 0 && errno == ENOENT) {
      missing.push_back(prefix);
    }
    if (at == std::string::npos) break;
  }
  return missing;
}

// The request as calls of at most `per_call` tiles, in order: each a
// contiguous run of tiles, so the server's cache serves their shared
// neighbours.
std::vector<v1::ScatterTilesRequest> SplitCalls(v1::ScatterTilesRequest request,
                                                int per_call) {
  // An empty rectangle goes as it is: the server names the problem.
  if (request.has_rect() && (RectTiles(request.rect()) <= static_cast<std::uint64_t>(per_call) ||
                             !ApplyShard("0/1", &request).ok())) {
    return {request};
  }
  std::vector<v1::ScatterTilesRequest> calls;
  v1::ScatterTilesRequest rest = request;
  rest.clear_tiles();
  for (int at = 0; at < request.tiles_size(); at += per_call) {
    v1::ScatterTilesRequest& one = calls.emplace_back(rest);
    const int end = std::min(request.tiles_size(), at + per_call);
    for (int k = at; k < end; ++k) *one.add_tiles() = request.tiles(k);
  }
  return calls;
}

// The server refuses a call of more tiles than its max_tiles_per_request,
// or whose tiles could hold more points than its max_points, before
// serving any of them: the message says how to make the calls smaller
// (one tile a call cannot be).
absl::Status HintTilesPerCall(const absl::Status& status,
                              const v1::ScatterTilesRequest& call) {
  const std::uint64_t tiles = RequestTiles(call);
  if (status.code() != absl::StatusCode::kResourceExhausted || tiles <= 1) {
    return status;
  }
  constexpr absl::string_view kTileLimit =
      "over the limit max_tiles_per_request = ";
  const std::size_t limit_at = status.message().find(kTileLimit);
  absl::string_view digits;
  if (limit_at != absl::string_view::npos) {
    digits = status.message().substr(limit_at + kTileLimit.size());
    digits = digits.substr(0, digits.find_first_not_of("0123456789"));
  }
  std::uint64_t most = 0;
  if (absl::SimpleAtoi(digits, &most) && most >= 1 && most < tiles) {
    return absl::Status(
        status.code(),
        absl::StrCat(status.message(), "; this call asked for ", tiles,
                     " tiles: ask for fewer a call with --tiles_per_call=",
                     std::min<std::uint64_t>(
                         most, static_cast<std::uint64_t>(
                                   std::numeric_limits<int>::max()))));
  }
  // Where the first tile alone is over the limit (the server says "the
  // first 1 of the N tiles alone"), fewer tiles a call cannot help.
  if (!absl::StrContains(status.message(), "the tiles could hold ") ||
      absl::StrContains(status.message(), "(the first 1 of the ")) {
    return status;
  }
  // A tile alone may still be over the limit by the generators it needs
  // (a tile reads its neighbours: the server's next refusal says so).
  return absl::Status(
      status.code(),
      absl::StrCat(status.message(), "; this call asked for ", tiles,
                   " tiles: ask for fewer a call with --tiles_per_call (if "
                   "one a call is refused too, its generators are over the "
                   "limit: use a smaller world tileSize)"));
}

int Tiles(const std::string& job_path) {
  // Flags of `scatter run` alone: taken silently, they left the user
  // waiting for a report or a picture that never came.
  if (absl::GetFlag(FLAGS_report)) {
    return Fail(
        "--report: only `scatter run` reports; `scatter tiles` writes tile "
        "files");
  }
  if (!absl::GetFlag(FLAGS_preview).empty()) {
    return Fail("--preview: only `scatter run` draws a preview");
  }
  if (GivenFlag("preview_size")) {
    return Fail("--preview_size: only `scatter run` draws a preview");
  }
  if (!absl::GetFlag(FLAGS_local)) {
    const absl::Status tiles_local =
        CheckTilesLocalFlags(/*against_server=*/true);
    if (!tiles_local.ok()) return Fail(std::string(tiles_local.message()));
  } else if (GivenFlag("tiles_per_call")) {
    return Fail(
        "--tiles_per_call: only `scatter tiles` against a server takes it; a "
        "--local run serves every tile in one go");
  }
  absl::StatusOr<v1::Job> job = LoadJob(job_path);
  if (!job.ok()) return Fail(std::string(job.status().message()));
  absl::StatusOr<v1::ScatterTilesRequest> request =
      TilesRequest(job_path, *job);
  if (!request.ok()) {
    return request.status().code() == absl::StatusCode::kInvalidArgument
               ? Fail(std::string(request.status().message()))
               : Fail(request.status());
  }
  absl::StatusOr<Format> format = ParseFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return Fail(std::string(format.status().message()));
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty() || out == "-") {
    return Fail("--out: `scatter tiles` writes one file per tile: name a directory");
  }
  const int per_call = absl::GetFlag(FLAGS_tiles_per_call);
  if (per_call < 1) {
    return Fail(absl::StrCat("--tiles_per_call: must be >= 1, got ", per_call));
  }
  const absl::Duration log_every = absl::GetFlag(FLAGS_log_every);
  if (log_every < absl::ZeroDuration()) {
    return Fail(
        absl::StrCat("--log_every: must be >= 0 (0 for no progress "
                     "lines), got ",
                     absl::FormatDuration(log_every)));
  }
  // As scatterd's --threads: tens of thousands are more than a process can
  // start, and std::thread would throw.
  constexpr int kMostThreads = 1024;
  if (absl::GetFlag(FLAGS_threads) < 0 ||
      absl::GetFlag(FLAGS_threads) > kMostThreads) {
    return Fail(absl::StrCat("--threads: must be in [0, ", kMostThreads,
                             "] (0 = one per CPU the process may use), got ",
                             absl::GetFlag(FLAGS_threads)));
  }

  // As scatterd's --tile_cache_bytes: the run keeps the generators it
  // reads within the cache, so 0 (or a few bytes) failed on every tile,
  // after the output directory was made.
  if (absl::GetFlag(FLAGS_local) &&
      absl::GetFlag(FLAGS_tile_cache_bytes) < server::kMinTileCacheBytes) {
    return Fail(absl::StrCat(
        "--tile_cache_bytes: must be >= ", server::kMinTileCacheBytes,
        " (the run keeps the tile generators it reads within it; there is "
        "no running without it), got ",
        absl::GetFlag(FLAGS_tile_cache_bytes)));
  }

  const bool local = absl::GetFlag(FLAGS_local);
  if (local) {
    const absl::Status no_server = CheckNoServerFlags();
    if (!no_server.ok()) return Fail(std::string(no_server.message()));
  }
  // Another world's tiles in --out: refused before any is replaced. The
  // manifest is of the world with its rasters inline (as --local and a
  // server make the same tiles), and is written with the first tile (a
  // run refused before it leaves the directory as it was).
  const std::string manifest = ManifestText(*request);
  const absl::Status same_world = CheckManifest(out, manifest);
  if (!same_world.ok()) return Fail(std::string(same_world.message()));
  bool manifest_written = false;
  std::uint64_t skipped = 0;
  if (absl::GetFlag(FLAGS_skip_existing)) {
    absl::StatusOr<std::uint64_t> left_out =
        SkipExisting(out, *format, &*request);
    if (!left_out.ok()) return Fail(std::string(left_out.status().message()));
    skipped = *left_out;
  }
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectUnlessLocal(local);
  if (!client.ok()) return FailConnect(client.status());
  if (!local) {
    absl::StatusOr<v1::ScatterTilesRequest> uploaded =
        UploadRasters(*request, **client, CallFromFlags());
    if (!uploaded.ok()) {
      return Fail(NameRasterFile(
          *job, JobDir(job_path),
          WithProgress(uploaded.status(), **client, TimeoutFlag(),
                       " while uploading the job's rasters")));
    }
    request = *std::move(uploaded);
  }
  // The directories Open makes: a run refused before its first tile (an
  // algorithm_version the server does not have, a raster it cannot
  // decode) removes them again, as if it had not started.
  const std::vector<std::string> made = MissingDirectories(out);
  absl::StatusOr<std::unique_ptr<TileFiles>> files = TileFiles::Open(*format, out);
  if (!files.ok()) return Fail(files.status());
  auto fail = [&](const absl::Status& failed) {
    if ((*files)->tiles_written() == 0) {
      files->reset();  // Removes a tile file left half written.
      for (auto dir = made.rbegin(); dir != made.rend(); ++dir) {
        rmdir(dir->c_str());  // Only while empty.
      }
    }
    return Fail(failed);
  };

  const bool progress = isatty(STDERR_FILENO) == 1;
  // Not on a terminal (a Job's log, a file), a whole line every
  // --log_every: `kubectl logs` of an export said nothing for hours.
  const bool log_progress = !progress && log_every > absl::ZeroDuration();
  const std::uint64_t total_tiles = RequestTiles(*request);
  std::uint64_t points = 0, generated = 0;
  absl::Status write_status;
  const absl::Time start = absl::Now();
  absl::Time shown = start;
  absl::Time logged = start;
  bool on_screen = false;  // A progress line is on the terminal.
  auto draw = [&] {
    shown = absl::Now();
    on_screen = true;
    std::fprintf(stderr, "\r%llu tiles, %llu points, %.1f s   ",
                 static_cast<unsigned long long>((*files)->tiles_written()),
                 static_cast<unsigned long long>(points),
                 absl::ToDoubleSeconds(shown - start));
  };
  auto handler = [&](const v1::TileResponse& part) {
    write_status = (*files)->Write(part);
    if (!write_status.ok()) return false;
    if (!manifest_written && (*files)->tiles_written() > 0) {
      write_status = WriteManifest(out, manifest);
      if (!write_status.ok()) return false;
      manifest_written = true;
    }
    points += static_cast<std::uint64_t>(part.points().id_size());
    if (progress && absl::Now() - shown > absl::Milliseconds(250)) draw();
    if (log_progress && absl::Now() - logged >= log_every) {
      logged = absl::Now();
      std::fprintf(stderr, "scatter: %llu of %llu tiles, %llu points, %.0f s\n",
                   static_cast<unsigned long long>((*files)->tiles_written()),
                   static_cast<unsigned long long>(total_tiles),
                   static_cast<unsigned long long>(points),
                   absl::ToDoubleSeconds(logged - start));
    }
    return true;
  };
  absl::Status status;
  if (local && !request->has_rect() && request->tiles_size() == 0) {
    // An empty band (--shard=i/n with more shards than tiles): nothing to
    // make, as against a server.
  } else if (local) {
    LocalTilesOptions options;
    options.threads = absl::GetFlag(FLAGS_threads);
    options.cache_bytes = absl::GetFlag(FLAGS_tile_cache_bytes);
    options.timeout = absl::GetFlag(FLAGS_timeout);
    absl::StatusOr<v1::TilesSummary> summary = RunTilesLocal(*request, options, handler);
    status = summary.status();
    if (summary.ok()) generated = summary->generators_computed();
    // The budget is this run's flag: name it, as scatterd names its own.
    status =
        absl::Status(status.code(),
                     absl::StrReplaceAll(
                         status.message(),
                         {{"the tile cache budget of ",
                           "the tile cache budget (--tile_cache_bytes) of "}}));
  } else {
    const CallOptions call = CallFromFlags();
    bool earlier = false;  // A call before this one succeeded.
    for (const v1::ScatterTilesRequest& one : SplitCalls(*std::move(request), per_call)) {
      absl::StatusOr<v1::TilesSummary> summary = (*client)->ScatterTiles(one, handler, call);
      status = HintTilesPerCall(summary.status(), one);
      if (!summary.ok()) {
        // The server counts what this call sent ("after 0 tiles (0 points)
        // sent"), not what the calls before it wrote (found by a review
        // helper).
        if (earlier && !status.ok()) {
          status = absl::Status(
              status.code(), absl::StrCat(status.message(), " (in this call; ",
                                          (*files)->tiles_written(), " tiles, ",
                                          points, " points written in all)"));
        }
        break;
      }
      earlier = true;
      generated += summary->generators_computed();
    }
  }
  // Ends on the final count, as `run`'s line does.
  if (on_screen) {
    draw();
    std::fprintf(stderr, "\n");
  }
  if (!write_status.ok()) return fail(write_status);
  if (!local) {
    status = WithProgress(
        status, **client, TimeoutFlag(),
        absl::StrCat(" after ", (*files)->tiles_written(), " tiles"));
  }
  if (!status.ok()) return fail(NameRasterFile(*job, JobDir(job_path), status));
  const std::string left_out =
      skipped > 0
          ? absl::StrCat("; ", skipped, " tiles there already, left out")
          : "";
  std::fprintf(
      stderr,
      "scatter: %llu tiles, %llu points in %s in %.2f s (%llu generators "
      "computed)%s\n",
      static_cast<unsigned long long>((*files)->tiles_written()),
      static_cast<unsigned long long>(points), out.c_str(),
      absl::ToDoubleSeconds(absl::Now() - start),
      static_cast<unsigned long long>(generated), left_out.c_str());
  return 0;
}

int Health(int argc, char** argv) {
  // Flags of `scatter run` and `scatter tiles`: taken silently, a health
  // check with --local asked the server anyway, and one with --out wrote
  // nothing there. Given at all, even at their defaults (--format=csv).
  for (const char* flag :
       {"local", "format", "out", "tiles", "shard", "threads",
        "tile_cache_bytes", "tiles_per_call", "seed", "report", "preview",
        "preview_size", "log_every", "skip_existing"}) {
    if (Given(argc, argv, flag)) {
      return Fail(absl::StrCat(
          "--", flag,
          ": `scatter health` has no use for it; it takes --server, "
          "--timeout and the --tls_ flags"));
    }
  }
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectFromFlags();
  if (!client.ok()) return FailConnect(client.status());
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  const absl::Status status = timeout > absl::ZeroDuration()
                                  ? (*client)->Health(timeout)
                                  : (*client)->Health();
  if (!status.ok()) {
    return Fail(WithProgress(status, **client,
                             timeout > absl::ZeroDuration()
                                 ? TimeoutFlag()
                                 : "5s (health's default --timeout)",
                             ""));
  }
  std::printf("SERVING\n");
  return 0;
}

}  // namespace
}  // namespace scatter::client

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the Scatter client.\n"
      "  scatter run JOB.json [--server=ADDR | --local] [--out=FILE]\n"
      "      [--format=csv|jsonl|ply|raw] [--seed=N] [--report]\n"
      "      [--preview=FILE.png [--preview_size=PIXELS]] [--timeout=DUR]\n"
      "  scatter tiles JOB.json --out=DIR\n"
      "      [--tiles=x0:x1,y0:y1 | --tiles='x,y;...'] [--shard=i/n]\n"
      "      [--server=ADDR [--tiles_per_call=N] |\n"
      "       --local [--threads=N] [--tile_cache_bytes=B]]\n"
      "      [--format=csv|jsonl|ply|raw] [--seed=N] [--timeout=DUR]\n"
      "  scatter health [--server=ADDR] [--timeout=DUR (default 5s)]\n"
      "  TLS against a server: --tls_ca=FILE [--tls_cert=FILE --tls_key=FILE]\n"
      "      [--tls_server_name=NAME]\n"
      "  --out defaults to -, stdout, which `scatter tiles` refuses: it needs\n"
      "  a directory. --tiles defaults to the job's own tiles or rect.");
  scatter::client::g_argc = argc;
  scatter::client::g_argv = argv;
  std::vector<char*> args =
      scatter::server::ParseCommandLine(argc, argv, "client/main.cc");
  if (const int bad = scatter::client::CheckTimeoutFlag(); bad != 0) return bad;
  // GRPC_VERBOSITY, gRPC's own variable, brings gRPC's log lines back.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function(scatter::client::QuietGrpcLog);
  }
  scatter::client::RemoveTemporariesOnSignals();
  // --local runs make their own std::bad_alloc a status (local.cc), so
  // that what they made is removed; this is for one anywhere else (reading
  // a huge job file), and for any other exception, one line as every
  // error.
  try {
    if (args.size() == 3 && std::string(args[1]) == "run") {
      return scatter::client::Run(args[2]);
    }
    if (args.size() == 3 && std::string(args[1]) == "tiles") {
      return scatter::client::Tiles(args[2]);
    }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "scatter: RESOURCE_EXHAUSTED: out of memory "
                 "(std::bad_alloc): the process could not allocate what the "
                 "command needs\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scatter: INTERNAL: unexpected exception: %s\n",
                 e.what());
    return 1;
  }
  if (args.size() == 2 && std::string(args[1]) == "health") {
    return scatter::client::Health(argc, argv);
  }
  std::fprintf(stderr,
               "scatter: expected `run JOB.json`, `tiles JOB.json` or `health`; "
               "see --help\n");
  return 2;
}
