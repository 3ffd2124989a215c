// scatter: the command-line client of scatterd.
//
//   scatter run JOB.json [--server=ADDR | --local] [--format=csv|jsonl|ply|raw]
//                        [--out=FILE] [--seed=N] [--report] [--timeout=DUR]
//   scatter health [--server=ADDR]
//
// Errors are one line on stderr and a non-zero exit code.

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/job.h"
#include "client/local.h"
#include "client/output.h"
#include "sampler/quality.h"
#include "server/convert.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "scatterd address, host:port");
ABSL_FLAG(bool, local, false, "run the sampler in this process, with no server");
ABSL_FLAG(std::string, format, "csv", "output format: csv, jsonl, ply or raw");
ABSL_FLAG(std::string, out, "-", "output file; - is stdout");
ABSL_FLAG(std::string, seed, "", "override the job's seed (a uint64)");
ABSL_FLAG(bool, report, false,
          "print points per layer, smallest distance over the allowed one, "
          "coverage, rho and speed on stderr");
ABSL_FLAG(absl::Duration, timeout, absl::ZeroDuration(), "call deadline; 0 = none");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA file of the server (enables TLS)");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM client key (mutual TLS)");
ABSL_FLAG(std::string, tls_server_name, "", "name to check in the server's certificate");

namespace scatter::client {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "scatter: %s\n", message.c_str());
  return 1;
}

int Fail(const absl::Status& status) {
  return Fail(status.code() == absl::StatusCode::kUnavailable ||
                      status.code() == absl::StatusCode::kNotFound
                  ? std::string(status.message())
                  : absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                                 status.message()));
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

absl::StatusOr<std::unique_ptr<Client>> ConnectFromFlags() {
  ClientOptions options;
  options.address = absl::GetFlag(FLAGS_server);
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  for (const auto& [flag, out] :
       {std::pair{absl::GetFlag(FLAGS_tls_ca), &options.tls_ca_pem},
        std::pair{absl::GetFlag(FLAGS_tls_cert), &options.tls_cert_pem},
        std::pair{absl::GetFlag(FLAGS_tls_key), &options.tls_key_pem}}) {
    if (flag.empty()) continue;
    absl::StatusOr<std::string> pem = ReadText(flag);
    if (!pem.ok()) return pem.status();
    *out = *std::move(pem);
  }
  return Client::Connect(options);
}

// Points per layer kept for --report.
struct LayerPoints {
  std::vector<double> coords;
  double radius_lo = 1e300, radius_hi = 0;
};

void Report(const v1::ScatterRequest& request, const v1::Summary& summary,
            const std::map<std::uint32_t, LayerPoints>& layers, int dims,
            double seconds) {
  std::fprintf(stderr, "report: %llu points in %.3f s (%.2f M points/s)\n",
               static_cast<unsigned long long>(summary.total_points()), seconds,
               static_cast<double>(summary.total_points()) / seconds / 1e6);
  // The region, as the sampler sees it, for coverage and rho.
  server::RasterCache cache(std::size_t{1} << 40);
  server::Limits limits;
  limits.max_points = ~std::uint64_t{0} / 2;
  absl::StatusOr<server::ScatterJob> job = server::ToJob(request, limits, cache);
  bool first = true;
  for (const v1::LayerCount& count : summary.layers()) {
    auto it = layers.find(count.layer());
    std::fprintf(stderr, "  layer %u: %llu points", count.layer(),
                 static_cast<unsigned long long>(count.points()));
    if (it == layers.end() || it->second.coords.empty()) {
      std::fprintf(stderr, "\n");
      first = false;
      continue;
    }
    const LayerPoints& p = it->second;
    if (p.radius_hi > 0 && p.radius_lo == p.radius_hi) {
      const double r = p.radius_lo;
      auto distance = sampler::CheckMinDistance(p.coords, dims, r);
      if (distance.ok()) {
        std::fprintf(stderr, ", smallest distance %.9f x spacing (%llu pairs closer)",
                     distance->min_ratio,
                     static_cast<unsigned long long>(distance->violations));
      }
      // Coverage by the layer's own points means maximality for the first
      // layer only: later ones also leave room to earlier layers' objects.
      if (job.ok() && first) {
        constexpr std::uint64_t kProbes = 1'000'000;
        auto coverage = sampler::MeasureCoverage(p.coords, job->region, r, kProbes,
                                                 0x5ca77e55u);
        if (coverage.ok() && coverage->probes > 0) {
          const double measure = job->region.bounds().Measure() *
                                 static_cast<double>(coverage->probes) / kProbes;
          std::fprintf(stderr, ", coverage %.6f (%llu of %llu probes uncovered), rho %.4f",
                       1 - coverage->uncovered_fraction(),
                       static_cast<unsigned long long>(coverage->uncovered),
                       static_cast<unsigned long long>(coverage->probes),
                       sampler::RelativeRadius(count.points(), measure, dims, r));
        }
      }
    } else if (p.radius_hi > 0) {
      std::fprintf(stderr, ", radius %.6g to %.6g (variable)", p.radius_lo, p.radius_hi);
    }
    std::fprintf(stderr, "\n");
    first = false;
  }
}

int Run(const std::string& job_path) {
  absl::StatusOr<v1::Job> job = LoadJob(job_path);
  if (!job.ok()) return Fail(std::string(job.status().message()));
  const std::string seed = absl::GetFlag(FLAGS_seed);
  if (!seed.empty()) {
    std::uint64_t value = 0;
    if (!absl::SimpleAtoi(seed, &value)) {
      return Fail(absl::StrCat("--seed: expected an unsigned 64-bit integer, got \"",
                               seed, "\""));
    }
    job->mutable_request()->set_seed(value);
  }
  absl::StatusOr<Format> format = ParseFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return Fail(std::string(format.status().message()));
  const std::size_t slash = job_path.rfind('/');
  const std::string base_dir =
      slash == std::string::npos ? "" : job_path.substr(0, slash);

  const bool local = absl::GetFlag(FLAGS_local);
  std::unique_ptr<Client> client;
  if (!local) {
    absl::StatusOr<std::unique_ptr<Client>> connected = ConnectFromFlags();
    if (!connected.ok()) return Fail(connected.status());
    client = *std::move(connected);
  }
  absl::StatusOr<v1::ScatterRequest> request =
      ResolveRasters(*job, base_dir, client.get());
  if (!request.ok()) return Fail(request.status());
  // Files need every per-point array.
  request->clear_fields();

  absl::StatusOr<std::unique_ptr<PointWriter>> writer =
      OpenWriter(*format, absl::GetFlag(FLAGS_out));
  if (!writer.ok()) return Fail(writer.status());

  const bool report = absl::GetFlag(FLAGS_report);
  const bool progress = isatty(STDERR_FILENO) == 1;
  std::map<std::uint32_t, LayerPoints> kept;
  int dims = 2;
  std::uint64_t points = 0;
  absl::Status write_status;
  const absl::Time start = absl::Now();
  absl::Time shown = start;
  auto handler = [&](const v1::PointBatch& batch) {
    write_status = (*writer)->Write(batch);
    if (!write_status.ok()) return false;
    dims = static_cast<int>(batch.dims());
    points += static_cast<std::uint64_t>(batch.id_size());
    if (report) {
      for (int i = 0; i < batch.id_size(); ++i) {
        LayerPoints& p = kept[batch.layer(i)];
        p.coords.insert(p.coords.end(), batch.coords().begin() + i * dims,
                        batch.coords().begin() + (i + 1) * dims);
        p.radius_lo = std::min(p.radius_lo, batch.radius(i));
        p.radius_hi = std::max(p.radius_hi, batch.radius(i));
      }
    }
    if (progress && absl::Now() - shown > absl::Milliseconds(250)) {
      shown = absl::Now();
      const double s = absl::ToDoubleSeconds(shown - start);
      std::fprintf(stderr, "\r%llu points, %.2f M points/s, %.1f s   ",
                   static_cast<unsigned long long>(points),
                   static_cast<double>(points) / s / 1e6, s);
    }
    return true;
  };
  CallOptions call;
  call.timeout = absl::GetFlag(FLAGS_timeout);
  absl::StatusOr<v1::Summary> summary =
      local ? RunLocal(*request, handler) : client->Scatter(*request, handler, call);
  if (progress) std::fprintf(stderr, "\n");
  if (!write_status.ok()) return Fail(write_status);
  if (!summary.ok()) return Fail(summary.status());
  const absl::Status finished = (*writer)->Finish();
  if (!finished.ok()) return Fail(finished);
  if (report) {
    absl::StatusOr<v1::ScatterRequest> inline_request =
        local ? request : ResolveRasters(*job, base_dir, nullptr);
    Report(inline_request.ok() ? *inline_request : *request, *summary, kept, dims,
           absl::ToDoubleSeconds(absl::Now() - start));
  }
  return 0;
}

int Health() {
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectFromFlags();
  if (!client.ok()) return Fail(client.status());
  const absl::Status status = (*client)->Health();
  if (!status.ok()) return Fail(status);
  std::printf("SERVING\n");
  return 0;
}

}  // namespace
}  // namespace scatter::client

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the Scatter client.\n"
      "  scatter run JOB.json [--server=ADDR | --local] [--format=csv|jsonl|ply|raw]\n"
      "                       [--out=FILE] [--seed=N] [--report] [--timeout=30s]\n"
      "  scatter health [--server=ADDR]");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() == 3 && std::string(args[1]) == "run") {
    return scatter::client::Run(args[2]);
  }
  if (args.size() == 2 && std::string(args[1]) == "health") {
    return scatter::client::Health();
  }
  std::fprintf(stderr, "scatter: expected `run JOB.json` or `health`; see --help\n");
  return 2;
}
