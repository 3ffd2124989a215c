// service_load: end-to-end load test of scatterd. In one run it measures
//
//   1. the sampler alone: points/s of the dense 2D request run in this
//      process with a sink that only counts (the same ScatterJob the server
//      builds from the request, through server/convert.h);
//   2. points/s delivered to a separate client: this program starts scatterd
//      as a child process on a free loopback port and streams the same
//      request from it, once with every field and once without yaw, scale
//      and radius;
//   3. the latency of a small (~1 000 point) request, many calls on one
//      channel, after a warm-up.
//
// The machine this runs on is shared and noisy, so the streaming figures are
// repeated (--repetitions), interleaved, and the summary gives medians and
// the per-repetition ratio of delivered to in-process points/s.
//
// The program stops by itself: every call has a deadline, the child gets
// SIGTERM at the end, and a watchdog (--timeout) kills both processes if
// anything hangs. The exit status is non-zero on any RPC error, on points
// that differ between the service and the in-process run, or when scatterd
// does not start or stop cleanly. See bench/README.md, "Service load".

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "sampler/layers.h"
#include "scatter/v1/scatter.grpc.pb.h"
#include "server/convert.h"
#include "server/raster_cache.h"

ABSL_FLAG(std::string, scatterd, "",
          "path of the scatterd binary; empty means ../server/scatterd next "
          "to this program's directory (the build tree's layout)");
ABSL_FLAG(std::string, scatterd_log, "/dev/null",
          "file that receives scatterd's stderr (its log, at info level as "
          "deployed); /dev/null keeps the terminal quiet");
ABSL_FLAG(std::uint64_t, points, 10'000'000,
          "about how many points the large request makes; sets its spacing");
ABSL_FLAG(std::uint64_t, small_points, 1000,
          "about how many points the latency request makes");
ABSL_FLAG(int, repetitions, 3,
          "rounds of (in-process, all fields, omitted fields) on the large "
          "request; the summary gives medians");
ABSL_FLAG(int, latency_calls, 1000, "timed small calls, one after another");
ABSL_FLAG(int, warmup_calls, 100, "untimed small calls before the timed ones");
ABSL_FLAG(std::uint32_t, batch_size, 0,
          "ScatterRequest.batch_size (0: the server's default, 4096)");
ABSL_FLAG(std::uint64_t, seed, 1, "ScatterRequest.seed");
ABSL_FLAG(absl::Duration, stream_deadline, absl::Seconds(120),
          "deadline of one large streaming call");
ABSL_FLAG(absl::Duration, call_deadline, absl::Seconds(10),
          "deadline of one small call");
ABSL_FLAG(absl::Duration, timeout, absl::Minutes(10),
          "watchdog: the whole run, after which both processes are killed");

namespace scatter::bench {
namespace {

// The dense method's packing in 2D: about 0.87 / r^2 points per unit area
// (rho ~0.87 at the server's default k = 12 with gap filling).
constexpr double kDensePointsPerUnitArea = 0.87;
constexpr std::uint32_t kLayerId = 1;

// The child's pid for the watchdog, which may fire on any thread.
std::atomic<pid_t> child_for_watchdog{0};
static_assert(std::atomic<pid_t>::is_always_lock_free,
              "the watchdog reads the pid from a signal handler");

void OnWatchdog(int) {
  static constexpr char kMessage[] =
      "service_load: --timeout reached; killing scatterd and exiting\n";
  const pid_t child = child_for_watchdog.load();
  if (child > 0) kill(child, SIGKILL);
  // Nothing to do if stderr is gone; the exit status still says it.
  [[maybe_unused]] const ssize_t ignored =
      write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  _exit(3);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// CPU seconds (user + system) this process has used, all threads.
double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The directory of the running executable, from /proc (argv[0] may be a
// bare name found on PATH).
std::string ExecutableDir() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  const std::string path(buffer, static_cast<std::size_t>(n));
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// scatterd as a child process listening on a free loopback port. The
// destructor stops a child that Stop() did not, killing it after 5 s.
class ChildServer {
 public:
  // Starts `path --address=127.0.0.1:0 --metrics_address=` and waits (at most
  // `startup`) for the "port N metrics_port M" line on its stdout.
  static absl::StatusOr<std::unique_ptr<ChildServer>> Start(
      const std::string& path, const std::string& log_path,
      absl::Duration startup) {
    if (access(path.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat(
          "scatterd: ", path, " is not executable (", std::strerror(errno),
          "); build the scatterd target or pass --scatterd"));
    }
    const int log_fd =
        open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--scatterd_log: cannot open ", log_path, ": ",
                       std::strerror(errno)));
    }
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(log_fd);
      return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
    }
    // Everything the child needs is built before fork: after it, only
    // async-signal-safe calls are allowed.
    std::vector<std::string> args = {path, "--address=127.0.0.1:0",
                                     "--metrics_address="};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();

    const pid_t pid = fork();
    if (pid < 0) {
      close(log_fd);
      close(out[0]);
      close(out[1]);
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    }
    if (pid == 0) {
      // If this program dies, however it dies, scatterd follows.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(126);
      dup2(out[1], STDOUT_FILENO);  // dup2 drops O_CLOEXEC on the copy.
      dup2(log_fd, STDERR_FILENO);
      execv(path.c_str(), argv.data());
      _exit(127);
    }
    close(log_fd);
    close(out[1]);
    child_for_watchdog.store(pid);
    std::unique_ptr<ChildServer> child(new ChildServer(pid, out[0]));
    absl::Status read = child->ReadPorts(startup);
    if (!read.ok()) return read;
    return child;
  }

  ~ChildServer() {
    // Only on an early return: the run has failed already, so how the child
    // ends does not matter, only that it does.
    Stop(absl::Seconds(5)).IgnoreError();
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // CPU seconds (user + system) the child has used so far, all threads.
  double CpuSeconds() const {
    std::ifstream in(absl::StrCat("/proc/", pid_, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    // Fields after the parenthesised command name, which may hold spaces:
    // state is field 3 and utime, stime are fields 14 and 15.
    const std::size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) return 0;
    unsigned long long utime = 0, stime = 0;  // NOLINT(runtime/int): scanf.
    if (std::sscanf(stat.c_str() + close_paren + 1,
                    " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                    &utime, &stime) != 2) {
      return 0;
    }
    return static_cast<double>(utime + stime) /
           static_cast<double>(sysconf(_SC_CLK_TCK));
  }

  // SIGTERM, then waits up to `timeout` for a clean exit (scatterd drains
  // for its own grace period first); SIGKILL after that. OK only when it
  // exited with status 0.
  absl::Status Stop(absl::Duration timeout) {
    if (pid_ <= 0) return absl::OkStatus();
    int status = 0;
    // A child that is already gone did not get our SIGTERM: say so, as its
    // wait status would otherwise look like a bad shutdown.
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      child_for_watchdog.store(0);
      return absl::InternalError(
          absl::StrCat("scatterd died before the end of the run (",
                       DescribeWaitStatus(status), ")"));
    }
    kill(pid_, SIGTERM);
    const absl::Time give_up = absl::Now() + timeout;
    pid_t done = 0;
    while ((done = waitpid(pid_, &status, WNOHANG)) == 0 &&
           absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (done == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = 0;
    child_for_watchdog.store(0);
    if (done == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("scatterd did not exit within ",
                       absl::FormatDuration(timeout), " of SIGTERM; killed"));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::InternalError(absl::StrCat(
          "scatterd ended badly after SIGTERM: ", DescribeWaitStatus(status)));
    }
    return absl::OkStatus();
  }

 private:
  ChildServer(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}

  static std::string DescribeWaitStatus(int status) {
    if (WIFEXITED(status))
      return absl::StrCat("exit status ", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
    return absl::StrCat("wait status ", status);
  }

  absl::Status ReadPorts(absl::Duration timeout) {
    const absl::Time give_up = absl::Now() + timeout;
    std::string line;
    while (line.empty() || line.back() != '\n') {
      const absl::Duration left = give_up - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError(absl::StrCat(
            "scatterd printed no port line within ",
            absl::FormatDuration(timeout), " (got \"", line, "\")"));
      }
      pollfd fd = {stdout_fd_, POLLIN, 0};
      const int ready =
          poll(&fd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;  // Timed out: the loop reports it.
      char c = 0;
      const ssize_t n = read(stdout_fd_, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = 0;
        child_for_watchdog.store(0);
        return absl::UnavailableError(
            absl::StrCat("scatterd closed stdout before printing its ports (",
                         DescribeWaitStatus(status), "); see --scatterd_log"));
      }
      line.push_back(c);
    }
    int metrics_port = 0;
    if (std::sscanf(line.c_str(), "port %d metrics_port %d", &port_,
                    &metrics_port) != 2 ||
        port_ <= 0) {
      return absl::InternalError(
          absl::StrCat("scatterd: unexpected port line \"", line, "\""));
    }
    return absl::OkStatus();
  }

  pid_t pid_ = 0;
  int stdout_fd_ = -1;
  int port_ = 0;
};

// One dense Poisson layer filling the unit square with about `points`
// points.
v1::ScatterRequest DenseRequest(std::uint64_t points, std::uint64_t seed,
                                std::uint32_t batch_size,
                                const v1::Fields& fields) {
  v1::ScatterRequest request;
  request.set_seed(seed);
  request.set_batch_size(batch_size);
  v1::Box* box = request.mutable_region()->mutable_box();
  box->add_min(0);
  box->add_min(0);
  box->add_max(1);
  box->add_max(1);
  v1::Layer* layer = request.add_layers();
  layer->set_id(kLayerId);
  layer->set_method(v1::METHOD_POISSON_DENSE);
  layer->set_spacing(
      std::sqrt(kDensePointsPerUnitArea / static_cast<double>(points)));
  *request.mutable_fields() = fields;
  return request;
}

// What one run of a request produced and how long it took.
struct RunResult {
  std::uint64_t points = 0;
  // Wrapping sum of the point ids: the same points give the same sum,
  // whichever side counted them.
  std::uint64_t id_sum = 0;
  double seconds = 0;  // Request start to the summary (or return).
  double first_batch_seconds = 0;
  double server_seconds = 0;        // Summary.elapsed_seconds.
  double wire_bytes_per_point = 0;  // Of the first batch message.
  // CPU seconds of this process over the run (the in-process sampler, or
  // the client) and of scatterd.
  double own_cpu_seconds = 0;
  double server_cpu_seconds = 0;

  double points_per_second() const {
    return seconds > 0 ? static_cast<double>(points) / seconds : 0;
  }
};

// Runs `request` in this process: the ScatterJob the service would build
// (server/convert.h, the server's default limits), sampled by the same
// LayeredSampler into a sink that only counts the points and sums their ids,
// as the client does. The time starts before the request is converted, as
// the service's does.
absl::StatusOr<RunResult> RunInProcess(const v1::ScatterRequest& request) {
  RunResult result;
  const double cpu_start = OwnCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  server::RasterCache rasters(0);  // The request names no raster.
  absl::StatusOr<server::ScatterJob> job =
      server::ToJob(request, server::Limits(), rasters);
  if (!job.ok()) return job.status();
  absl::StatusOr<sampler::LayeredSampler> run = sampler::LayeredSampler::Create(
      job->region, job->layers, job->shared, job->overrides);
  if (!run.ok()) return run.status();
  const absl::Status status = run->Run([&](const sampler::PointBatch& batch) {
    if (result.points == 0) result.first_batch_seconds = SecondsSince(start);
    result.points += batch.size();
    for (std::uint64_t id : batch.id) result.id_sum += id;
    return true;
  });
  result.seconds = SecondsSince(start);
  result.own_cpu_seconds = OwnCpuSeconds() - cpu_start;
  if (!status.ok()) return status;
  return result;
}

// Checks that the arrays of one PointBatch describe the same points, and
// that the arrays the request omitted are empty. Returns the point count.
absl::StatusOr<std::size_t> CheckBatch(const v1::PointBatch& batch,
                                       const v1::Fields& fields) {
  if (batch.dims() != 2) {
    return absl::DataLossError(
        absl::StrCat("batch dims ", batch.dims(), ", want 2"));
  }
  if (batch.coords_size() % 2 != 0) {
    return absl::DataLossError(absl::StrCat(
        "batch coords hold ", batch.coords_size(), " values, odd"));
  }
  const int n = batch.coords_size() / 2;
  const struct {
    const char* name;
    int size;
    bool omitted;
  } arrays[] = {
      {"radius", batch.radius_size(), fields.omit_radius()},
      {"layer", batch.layer_size(), fields.omit_layer()},
      {"id", batch.id_size(), fields.omit_id()},
      {"yaw", batch.yaw_size(), fields.omit_yaw()},
      {"scale", batch.scale_size(), fields.omit_scale()},
  };
  for (const auto& array : arrays) {
    const int want = array.omitted ? 0 : n;
    if (array.size != want) {
      return absl::DataLossError(absl::StrCat("batch of ", n, " points has ",
                                              array.size, " ", array.name,
                                              " values, want ", want));
    }
  }
  return static_cast<std::size_t>(n);
}

// Streams `request` from the server and checks every batch and the summary.
// Any status but OK is an error.
absl::StatusOr<RunResult> RunRemote(v1::ScatterService::Stub& stub,
                                    const v1::ScatterRequest& request,
                                    absl::Duration deadline,
                                    const ChildServer* server_process) {
  RunResult result;
  const double cpu_start = OwnCpuSeconds();
  const double server_cpu_start =
      server_process != nullptr ? server_process->CpuSeconds() : 0;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<grpc::ClientReader<v1::ScatterResponse>> reader =
      stub.Scatter(&context, request);
  // One message reused for every read: its arrays keep their capacity, so
  // parsing a batch allocates nothing after the first.
  v1::ScatterResponse response;
  bool have_summary = false;
  absl::Status problem;
  while (reader->Read(&response)) {
    if (response.has_summary()) {
      result.seconds = SecondsSince(start);
      result.server_seconds = response.summary().elapsed_seconds();
      if (response.summary().total_points() != result.points) {
        problem = absl::DataLossError(
            absl::StrCat("summary says ", response.summary().total_points(),
                         " points, the stream carried ", result.points));
      }
      have_summary = true;
      continue;
    }
    if (!response.has_points() || have_summary) {
      problem = absl::DataLossError("a message after the summary, or empty");
      continue;
    }
    absl::StatusOr<std::size_t> n =
        CheckBatch(response.points(), request.fields());
    if (!n.ok()) {
      problem = n.status();
      continue;
    }
    if (result.points == 0) {
      result.first_batch_seconds = SecondsSince(start);
      result.wire_bytes_per_point =
          static_cast<double>(response.ByteSizeLong()) /
          static_cast<double>(std::max<std::size_t>(*n, 1));
    }
    result.points += *n;
    for (std::uint64_t id : response.points().id()) result.id_sum += id;
  }
  const grpc::Status status = reader->Finish();
  result.own_cpu_seconds = OwnCpuSeconds() - cpu_start;
  if (server_process != nullptr) {
    result.server_cpu_seconds = server_process->CpuSeconds() - server_cpu_start;
  }
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("Scatter RPC failed after ", result.points,
                                     " points: ", status.error_message()));
  }
  if (!problem.ok()) return problem;
  if (!have_summary)
    return absl::DataLossError("the stream ended without a summary");
  return result;
}

// The delivered run must carry exactly the points of the in-process run: the
// request and seed are the same, and so must the points be, bit for bit.
absl::Status SamePoints(const RunResult& local, const RunResult& remote,
                        bool remote_has_ids) {
  if (local.points != remote.points) {
    return absl::DataLossError(
        absl::StrCat("in-process run made ", local.points,
                     " points, the service sent ", remote.points));
  }
  if (remote_has_ids && local.id_sum != remote.id_sum) {
    return absl::DataLossError(
        "the service sent different point ids than the in-process run made");
  }
  return absl::OkStatus();
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid]
                                : (values[mid - 1] + values[mid]) / 2;
}

// Nearest-rank percentile of sorted values, q in (0, 1].
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(
      std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1];
}

void PrintRun(const char* name, const RunResult& r) {
  absl::PrintF("  %-30s %10u pts %7.3f s %7.2f M pts/s  first batch %6.1f ms",
               name, r.points, r.seconds, r.points_per_second() / 1e6,
               r.first_batch_seconds * 1e3);
  if (r.wire_bytes_per_point > 0) {
    absl::PrintF(
        "  %4.1f B/pt %6.0f MB/s  server %.3f s  cpu client %.2f s "
        "server %.2f s",
        r.wire_bytes_per_point,
        r.wire_bytes_per_point * r.points_per_second() / 1e6, r.server_seconds,
        r.own_cpu_seconds, r.server_cpu_seconds);
  } else {
    absl::PrintF("  cpu %.2f s", r.own_cpu_seconds);
  }
  absl::PrintF("\n");
  std::fflush(stdout);
}

int Fail(const absl::Status& status) {
  absl::FPrintF(stderr, "service_load: %s\n", status.ToString());
  return 1;
}

int Main() {
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  signal(SIGALRM, OnWatchdog);
  alarm(static_cast<unsigned>(
      std::max<std::int64_t>(1, absl::ToInt64Seconds(timeout))));

  const int repetitions = std::max(1, absl::GetFlag(FLAGS_repetitions));
  const int latency_calls = std::max(1, absl::GetFlag(FLAGS_latency_calls));
  const int warmup_calls = std::max(0, absl::GetFlag(FLAGS_warmup_calls));
  const absl::Duration stream_deadline = absl::GetFlag(FLAGS_stream_deadline);
  const absl::Duration call_deadline = absl::GetFlag(FLAGS_call_deadline);
  std::string scatterd = absl::GetFlag(FLAGS_scatterd);
  if (scatterd.empty()) scatterd = ExecutableDir() + "/../server/scatterd";

  v1::Fields all_fields;
  v1::Fields lean_fields;
  lean_fields.set_omit_yaw(true);
  lean_fields.set_omit_scale(true);
  lean_fields.set_omit_radius(true);
  const std::uint64_t seed = absl::GetFlag(FLAGS_seed);
  const std::uint32_t batch_size = absl::GetFlag(FLAGS_batch_size);
  const v1::ScatterRequest large_all =
      DenseRequest(absl::GetFlag(FLAGS_points), seed, batch_size, all_fields);
  const v1::ScatterRequest large_lean =
      DenseRequest(absl::GetFlag(FLAGS_points), seed, batch_size, lean_fields);
  const v1::ScatterRequest small = DenseRequest(
      absl::GetFlag(FLAGS_small_points), seed, batch_size, all_fields);

  absl::PrintF("service_load: scatterd %s\n", scatterd);
  absl::PrintF(
      "large request: dense Poisson, unit square, spacing %.6g, batch_size %u; "
      "small request: spacing %.6g\n",
      large_all.layers(0).spacing(), batch_size, small.layers(0).spacing());

  absl::StatusOr<std::unique_ptr<ChildServer>> server = ChildServer::Start(
      scatterd, absl::GetFlag(FLAGS_scatterd_log), absl::Seconds(30));
  if (!server.ok()) return Fail(server.status());
  absl::PrintF("scatterd pid %d on 127.0.0.1:%d\n", (*server)->pid(),
               (*server)->port());

  const std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                          grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(
          absl::ToChronoTime(absl::Now() + absl::Seconds(10)))) {
    return Fail(absl::UnavailableError("cannot connect to scatterd in 10 s"));
  }
  const std::unique_ptr<v1::ScatterService::Stub> stub =
      v1::ScatterService::NewStub(channel);

  // A few small calls so the first large one does not pay for connection
  // and thread start-up.
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<RunResult> warm =
        RunRemote(*stub, small, call_deadline, nullptr);
    if (!warm.ok()) return Fail(warm.status());
  }

  std::uint64_t large_points = 0;
  std::vector<double> local_rates, all_rates, lean_rates, all_ratios,
      lean_ratios;
  // CPU per point, which the neighbours' load disturbs less than wall time.
  std::vector<double> local_cpu, all_server_cpu, all_client_cpu,
      lean_server_cpu, lean_client_cpu;
  for (int rep = 1; rep <= repetitions; ++rep) {
    absl::PrintF("repetition %d of %d\n", rep, repetitions);
    absl::StatusOr<RunResult> local = RunInProcess(large_all);
    if (!local.ok()) return Fail(local.status());
    PrintRun("in-process sampler", *local);

    absl::StatusOr<RunResult> all =
        RunRemote(*stub, large_all, stream_deadline, server->get());
    if (!all.ok()) return Fail(all.status());
    PrintRun("delivered, all fields", *all);
    absl::Status same = SamePoints(*local, *all, /*remote_has_ids=*/true);
    if (!same.ok()) return Fail(same);

    absl::StatusOr<RunResult> lean =
        RunRemote(*stub, large_lean, stream_deadline, server->get());
    if (!lean.ok()) return Fail(lean.status());
    PrintRun("delivered, no yaw/scale/radius", *lean);
    same = SamePoints(*local, *lean, /*remote_has_ids=*/true);
    if (!same.ok()) return Fail(same);

    large_points = local->points;
    local_rates.push_back(local->points_per_second());
    all_rates.push_back(all->points_per_second());
    lean_rates.push_back(lean->points_per_second());
    all_ratios.push_back(all->points_per_second() / local->points_per_second());
    lean_ratios.push_back(lean->points_per_second() /
                          local->points_per_second());
    const double n = static_cast<double>(local->points);
    local_cpu.push_back(local->own_cpu_seconds * 1e9 / n);
    all_server_cpu.push_back(all->server_cpu_seconds * 1e9 / n);
    all_client_cpu.push_back(all->own_cpu_seconds * 1e9 / n);
    lean_server_cpu.push_back(lean->server_cpu_seconds * 1e9 / n);
    lean_client_cpu.push_back(lean->own_cpu_seconds * 1e9 / n);
  }

  absl::PrintF("latency: %d warm-up calls, then %d timed calls of ~%u points\n",
               warmup_calls, latency_calls, absl::GetFlag(FLAGS_small_points));
  std::fflush(stdout);
  std::uint64_t small_points = 0;
  std::vector<double> latencies_ms;
  // Summary.elapsed_seconds: the server's own part of each call.
  std::vector<double> server_ms;
  latencies_ms.reserve(static_cast<std::size_t>(latency_calls));
  server_ms.reserve(static_cast<std::size_t>(latency_calls));
  for (int i = 0; i < warmup_calls + latency_calls; ++i) {
    absl::StatusOr<RunResult> call =
        RunRemote(*stub, small, call_deadline, nullptr);
    if (!call.ok()) return Fail(call.status());
    if (small_points == 0) small_points = call->points;
    if (call->points != small_points) {
      return Fail(absl::DataLossError(
          absl::StrCat("small call ", i, " gave ", call->points,
                       " points, the first gave ", small_points)));
    }
    if (i >= warmup_calls) {
      latencies_ms.push_back(call->seconds * 1e3);
      server_ms.push_back(call->server_seconds * 1e3);
    }
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::sort(server_ms.begin(), server_ms.end());
  double latency_sum = 0;
  for (double ms : latencies_ms) latency_sum += ms;

  // The same small request sampled here: the floor under the call latency.
  std::vector<double> local_ms;
  local_ms.reserve(static_cast<std::size_t>(latency_calls));
  for (int i = 0; i < latency_calls; ++i) {
    absl::StatusOr<RunResult> run = RunInProcess(small);
    if (!run.ok()) return Fail(run.status());
    local_ms.push_back(run->seconds * 1e3);
  }
  std::sort(local_ms.begin(), local_ms.end());

  const absl::Status stopped = (*server)->Stop(absl::Seconds(20));
  if (!stopped.ok()) return Fail(stopped);

  const double local_rate = Median(local_rates);
  const double all_rate = Median(all_rates);
  const double lean_rate = Median(lean_rates);
  absl::PrintF("\nsummary (medians of %d repetitions, %u points per request)\n",
               repetitions, large_points);
  absl::PrintF("  in-process sampler               %7.2f M pts/s\n",
               local_rate / 1e6);
  absl::PrintF(
      "  delivered, all fields            %7.2f M pts/s  ratio %5.1f %%\n",
      all_rate / 1e6, 100 * Median(all_ratios));
  absl::PrintF(
      "  delivered, no yaw/scale/radius   %7.2f M pts/s  ratio %5.1f %%\n",
      lean_rate / 1e6, 100 * Median(lean_ratios));
  // Wall-time ratios favour the two-process run when other jobs share the
  // cores (the scheduler shares CPU per thread, and it has more threads), so
  // CPU per point is printed too: it shows what the service adds.
  absl::PrintF(
      "  cpu ns/pt: in-process %.0f; all fields: server %.0f (%+.0f %%), "
      "client %.0f; no yaw/scale/radius: server %.0f (%+.0f %%), client %.0f\n",
      Median(local_cpu), Median(all_server_cpu),
      100 * (Median(all_server_cpu) / Median(local_cpu) - 1),
      Median(all_client_cpu), Median(lean_server_cpu),
      100 * (Median(lean_server_cpu) / Median(local_cpu) - 1),
      Median(lean_client_cpu));
  absl::PrintF(
      "  latency, %u-point call (n = %d)  p50 %.3f ms  p90 %.3f ms  p99 %.3f "
      "ms  mean %.3f ms  max %.3f ms\n",
      small_points, latency_calls, Percentile(latencies_ms, 0.50),
      Percentile(latencies_ms, 0.90), Percentile(latencies_ms, 0.99),
      latency_sum / static_cast<double>(latencies_ms.size()),
      latencies_ms.back());
  absl::PrintF(
      "    of which in scatterd (Summary.elapsed_seconds): p50 %.3f ms  "
      "p99 %.3f ms\n",
      Percentile(server_ms, 0.50), Percentile(server_ms, 0.99));
  absl::PrintF(
      "    the same request in-process:                    p50 %.3f ms  "
      "p99 %.3f ms\n",
      Percentile(local_ms, 0.50), Percentile(local_ms, 0.99));
  absl::PrintF(
      "  target: delivered >= 3 M pts/s and >= 80 %% of in-process: "
      "all fields %s, no yaw/scale/radius %s\n",
      all_rate >= 3e6 && Median(all_ratios) >= 0.8 ? "met" : "NOT met",
      lean_rate >= 3e6 && Median(lean_ratios) >= 0.8 ? "met" : "NOT met");
  return 0;
}

}  // namespace
}  // namespace scatter::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "End-to-end load test of scatterd: in-process sampler points/s, points/s "
      "delivered to this process over loopback TCP, and small-call latency.\n"
      "Usage: service_load [--scatterd=path/to/scatterd] [flags]");
  absl::ParseCommandLine(argc, argv);
  return scatter::bench::Main();
}
