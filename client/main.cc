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
#include "client/preview.h"
#include "client/report.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "scatterd address, host:port");
ABSL_FLAG(bool, local, false, "run the sampler in this process, with no server");
ABSL_FLAG(std::string, format, "csv", "output format: csv, jsonl, ply or raw");
ABSL_FLAG(std::string, out, "-", "output file; - is stdout");
ABSL_FLAG(std::string, seed, "", "override the job's seed (a uint64)");
ABSL_FLAG(bool, report, false,
          "print points per layer, smallest distance over the allowed one, "
          "coverage, rho and speed on stderr");
ABSL_FLAG(std::string, preview, "", "also write a picture of the result to this PNG");
ABSL_FLAG(int, preview_size, 1024, "pixels on the preview's longer side");
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
  const bool report = absl::GetFlag(FLAGS_report);
  const std::string preview = absl::GetFlag(FLAGS_preview);
  // The rasters are read once: inline for a local run, the report and the
  // preview; uploaded from there for the server.
  absl::StatusOr<v1::ScatterRequest> inline_request = ResolveRasters(*job, base_dir);
  if (!inline_request.ok()) return Fail(inline_request.status());
  // Files need every per-point array.
  inline_request->clear_fields();
  const v1::ScatterRequest* request = &*inline_request;
  absl::StatusOr<v1::ScatterRequest> uploaded;
  if (!local) {
    uploaded = UploadRasters(*inline_request, *client);
    if (!uploaded.ok()) return Fail(uploaded.status());
    request = &*uploaded;
  }

  absl::StatusOr<std::unique_ptr<PointWriter>> writer =
      OpenWriter(*format, absl::GetFlag(FLAGS_out));
  if (!writer.ok()) return Fail(writer.status());

  const bool progress = isatty(STDERR_FILENO) == 1;
  v1::PointBatch kept;  // Every point, for --report.
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
    if (report || !preview.empty()) kept.MergeFrom(batch);
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
  if (!preview.empty()) {
    const absl::Status drawn = WritePreview(preview, *inline_request, kept,
                                            absl::GetFlag(FLAGS_preview_size));
    if (!drawn.ok()) return Fail(drawn);
  }
  if (report) {
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    absl::StatusOr<std::vector<LayerReport>> layers =
        MeasureRun(*inline_request, *summary, kept, 1'000'000);
    if (!layers.ok()) return Fail(layers.status());
    std::fputs(FormatReport(*layers, summary->total_points(), seconds).c_str(),
               stderr);
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
