// scatterd as a process: the port line, SIGTERM with a stream in flight.

#include "tests/server/scatterd_process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "civetweb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/version.h"
#include "tests/server/tls_util.h"

namespace scatter::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The whole file; empty when it cannot be read.
std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

TEST(ScatterdTest, ServesAndPrintsItsPort) {
  const std::string log =
      absl::StrCat(::testing::TempDir(), "/scatterd_tcp_", getpid(), ".log");
  Scatterd scatterd({}, log);
  ASSERT_GT(scatterd.port(), 0);
  EXPECT_EQ(scatterd.line(),
            absl::StrCat("port ", scatterd.port(), " metrics_port 0"));
  const Received got = Collect(*scatterd.Stub(), BoxRequest(100, 2));
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GT(got.size(), 1500u);
  scatterd.Signal(SIGTERM);
  const int status = scatterd.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_THAT(ReadAll(log),
              HasSubstr(absl::StrCat(
                  "scatterd listening on 127.0.0.1:", scatterd.port(),
                  " (plaintext), metrics off, "
                  "algorithm_version ")));
}

// A port in use: the line names the flag, as the README says refusals do
// (it was "UNAVAILABLE: cannot listen on ..." after gRPC's own dump).
TEST(ScatterdTest, AnAddressInUseIsNamedByItsFlag) {
  const std::string log =
      absl::StrCat(::testing::TempDir(), "/scatterd_in_use_", getpid(), ".log");
  Scatterd first({}, log);
  ASSERT_GT(first.port(), 0);
  const std::string address = absl::StrCat("127.0.0.1:", first.port());
  const CommandResult got =
      RunCommand({SCATTERD_PATH, "--address=" + address, "--metrics_address="},
                 absl::Seconds(10));
  EXPECT_EQ(got.exit_code, 1) << got.err;
  EXPECT_THAT(got.err, HasSubstr("--address: cannot listen on " + address +
                                 " (address in use, or not host:port?)"));
  EXPECT_EQ(got.out, "");
  // gRPC's own line ("E1127 ... chttp2_server.cc:1045] UNKNOWN:No address
  // added ... Address already in use ...") came first, on stderr itself:
  // it goes through scatterd's log now, as a debug line.
  EXPECT_EQ(std::count(got.err.begin(), got.err.end(), '\n'), 1) << got.err;
  EXPECT_THAT(got.err, Not(HasSubstr("chttp2_server.cc")));
  const CommandResult debug =
      RunCommand({SCATTERD_PATH, "--address=" + address,
                  "--metrics_address=", "--log_level=debug"},
                 absl::Seconds(10));
  EXPECT_EQ(debug.exit_code, 1) << debug.err;
  EXPECT_THAT(debug.err, HasSubstr("[debug] grpc chttp2_server.cc:"));
  EXPECT_THAT(debug.err, HasSubstr("Address already in use"));
  first.Signal(SIGTERM);
  first.Wait();
}

// A unix socket has no port: gRPC reports 1 for it, which scatterd used to
// log ("listening on unix:1") and print ("port 1").
TEST(ScatterdTest, ServesOnAUnixSocketAndNamesIt) {
  const std::string base =
      absl::StrCat(::testing::TempDir(), "/scatterd_unix_", getpid());
  const std::string address = absl::StrCat("unix:", base, ".sock");
  Scatterd scatterd({"--address=" + address}, base + ".log");
  EXPECT_EQ(scatterd.port(), 0);
  EXPECT_EQ(scatterd.line(),
            absl::StrCat("address ", address, " metrics_port 0"));
  auto stub = v1::ScatterService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  const Received got = Collect(*stub, BoxRequest(100, 2));
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GT(got.size(), 1500u);
  scatterd.Signal(SIGTERM);
  const int status = scatterd.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string log = ReadAll(base + ".log");
  EXPECT_THAT(log, HasSubstr(absl::StrCat("scatterd listening on ", address,
                                          " (plaintext)")));
  EXPECT_THAT(log, Not(HasSubstr("unix:1")));
  unlink((base + ".sock").c_str());
}

// scatterd with `flags`, its log at `log`, a stream in flight on it that
// runs for seconds (one message read), then SIGTERM.
struct DrainingStream {
  DrainingStream(const std::string& name, std::vector<std::string> flags)
      : log(absl::StrCat(::testing::TempDir(), "/scatterd_", name, "_",
                         getpid())),
        scatterd(std::move(flags), log),
        stub(scatterd.Stub()),
        reader(stub->Scatter(&context, LongRequest())) {
    EXPECT_GT(scatterd.port(), 0);
    v1::ScatterResponse response;
    EXPECT_TRUE(reader->Read(&response));
    scatterd.Signal(SIGTERM);
  }
  const std::string log;
  Scatterd scatterd;
  std::unique_ptr<v1::ScatterService::Stub> stub;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::ScatterResponse>> reader;
};

// Reads a stream to its end: the drain stopped it, and said so.
void ExpectStoppedByTheDrain(grpc::ClientReader<v1::ScatterResponse>& reader) {
  v1::ScatterResponse response;
  while (reader.Read(&response)) {
  }
  const grpc::Status status = reader.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("server shutting down after"));
}

TEST(ScatterdTest, SigtermEndsAStreamInFlightWithAStatus) {
  DrainingStream draining("sigterm", {"--grace_period=300ms"});
  Scatterd& scatterd = draining.scatterd;
  auto& stub = draining.stub;
  auto& reader = draining.reader;
  v1::ScatterResponse response;
  absl::SleepFor(absl::Milliseconds(100));
  // Draining: a new call is turned away, not queued.
  const Received late = Collect(*stub, BoxRequest(1, 0.1));
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  std::size_t messages = 1;
  while (reader->Read(&response)) ++messages;
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("server shutting down after"));
  EXPECT_GT(messages, 1u);
  const absl::Time stopped = absl::Now();
  const int exit = scatterd.Wait();
  EXPECT_TRUE(WIFEXITED(exit) && WEXITSTATUS(exit) == 0);
  EXPECT_LT(absl::Now() - stopped, absl::Seconds(2)) << "slow to exit";
  // The drained call's line names its client (it said peer=unknown).
  EXPECT_THAT(ReadAll(draining.log), HasSubstr("Scatter peer=ipv4:127.0.0.1:"));
}

// A client that does not watch health (gRPC's default pick_first, here
// over two addresses) stays on its connection: while a stream kept the
// first server draining, every new call of that client was refused for
// the whole grace period. After --drain_notice the draining server sends
// GOAWAY and stops listening, so the client's next call reconnects and
// reaches the second server, while the stream in flight runs on.
TEST(ScatterdTest, AfterTheDrainNoticeClientsReconnectElsewhere) {
  const std::string log =
      absl::StrCat(::testing::TempDir(), "/scatterd_notice_", getpid());
  Scatterd draining({"--grace_period=60s", "--drain_notice=300ms"}, log);
  Scatterd other({}, log + "_other");
  ASSERT_GT(draining.port(), 0);
  ASSERT_GT(other.port(), 0);
  // pick_first takes the first address that connects: the draining one.
  auto channel =
      grpc::CreateChannel(absl::StrCat("ipv4:127.0.0.1:", draining.port(),
                                       ",127.0.0.1:", other.port()),
                          grpc::InsecureChannelCredentials());
  auto stub = v1::ScatterService::NewStub(channel);
  grpc::ClientContext context;
  auto reader = stub->Scatter(&context, LongRequest());
  v1::ScatterResponse response;
  ASSERT_TRUE(reader->Read(&response));
  draining.Signal(SIGTERM);
  absl::SleepFor(absl::Milliseconds(100));
  // Within the notice: refused, as before.
  const Received early = Collect(*stub, BoxRequest(10, 1));
  EXPECT_EQ(early.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(early.status.error_message(), HasSubstr("server shutting down"));
  // After it: served by the other server (a call may race the GOAWAY
  // and be refused; the next one reconnects).
  absl::SleepFor(absl::Milliseconds(500));
  Received late;
  for (int attempt = 0; attempt < 20; ++attempt) {
    late = Collect(*stub, BoxRequest(10, 1));
    if (late.status.ok()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(late.status.ok()) << late.status.error_message();
  EXPECT_GT(late.size(), 10u);
  // The stream in flight on the draining server still runs.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(reader->Read(&response)) << i;
  // No new connection reaches the draining server.
  const Received direct = Collect(*draining.Stub(), BoxRequest(10, 1));
  EXPECT_EQ(direct.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(ReadAll(log),
              HasSubstr("drain notice over: clients told to go (GOAWAY)"));
  // A second signal ends the grace period; the stream ends with a status.
  draining.Signal(SIGTERM);
  ExpectStoppedByTheDrain(*reader);
  const int exit = draining.Wait();
  EXPECT_TRUE(WIFEXITED(exit) && WEXITSTATUS(exit) == 0) << exit;
}

// scatterd with `flags` on 127.0.0.1:0; one that starts anyway is killed
// after a few seconds.
CommandResult RunScatterd(std::vector<std::string> flags) {
  std::vector<std::string> args = {SCATTERD_PATH, "--address=127.0.0.1:0",
                                   "--metrics_address="};
  args.insert(args.end(), flags.begin(), flags.end());
  return RunCommand(args, absl::Seconds(3));
}

TEST(ScatterdTest, UnknownLogLevelIsRefusedNamingTheFlag) {
  const CommandResult got = RunScatterd({"--log_level=verbose"});
  EXPECT_EQ(got.exit_code, 2) << got.err;
  EXPECT_THAT(got.err, HasSubstr("--log_level must be trace, debug, info"));
  EXPECT_THAT(got.err, HasSubstr("got 'verbose'"));
  EXPECT_EQ(got.out, "");
}

// A second SIGTERM or SIGINT ends the grace period: with --grace_period=inf
// the first alone would wait for the stream to finish (seconds here; a
// SIGKILL was the only way out).
TEST(ScatterdTest, ASecondSignalEndsTheGracePeriod) {
  DrainingStream draining("second_signal", {"--grace_period=inf"});
  Scatterd& scatterd = draining.scatterd;
  auto& reader = draining.reader;
  absl::SleepFor(absl::Milliseconds(300));
  scatterd.Signal(SIGINT);
  const absl::Time second = absl::Now();
  ExpectStoppedByTheDrain(*reader);
  const int exit = scatterd.Wait();
  EXPECT_TRUE(WIFEXITED(exit) && WEXITSTATUS(exit) == 0) << exit;
  EXPECT_LT(absl::Now() - second, absl::Seconds(3)) << "slow to exit";
  EXPECT_THAT(ReadAll(draining.log),
              HasSubstr("signal 2 again, ending the grace period"));
}

// SIGHUP's default action ended scatterd at once, with no drain and no
// line in its log; it is said and ignored (a drain's second-signal thread
// ignores it the same way: WaitForStop).
TEST(ScatterdTest, SighupIsLoggedAndIgnored) {
  const std::string log =
      absl::StrCat(::testing::TempDir(), "/scatterd_sighup_", getpid());
  Scatterd scatterd({}, log);
  ASSERT_GT(scatterd.port(), 0);
  scatterd.Signal(SIGHUP);
  absl::SleepFor(absl::Milliseconds(200));
  const Received got = Collect(*scatterd.Stub(), BoxRequest(1, 0.1));
  EXPECT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GT(got.size(), 50u);
  EXPECT_THAT(ReadAll(log), HasSubstr("SIGHUP ignored: SIGTERM or SIGINT "
                                      "drains and stops; nothing reloads"));
  scatterd.Signal(SIGTERM);
  const int exit = scatterd.Wait();
  EXPECT_TRUE(WIFEXITED(exit) && WEXITSTATUS(exit) == 0) << exit;
}

// A refused start says why whatever --log_level is: critical and off hid
// every reason (a crash-looping pod with an empty log).
TEST(ScatterdTest, AtAnyLogLevelARefusedStartSaysWhy) {
  for (const std::string level : {"critical", "off"}) {
    const CommandResult got =
        RunScatterd({"--log_level=" + level, "--max_streams=0"});
    EXPECT_EQ(got.exit_code, 2) << level;
    EXPECT_THAT(got.err, HasSubstr("--max_streams must be in [1,")) << level;
  }
  // Past the start, the level holds: no "listening" line at off.
  const std::string log =
      absl::StrCat(::testing::TempDir(), "/scatterd_quiet_", getpid());
  {
    Scatterd scatterd({"--log_level=off"}, log);
    EXPECT_GT(scatterd.port(), 0);
    scatterd.Signal(SIGTERM);
    scatterd.Wait();
  }
  EXPECT_EQ(ReadAll(log), "");
}

// A unix socket's path: an empty one was bound as an abstract socket of
// gRPC's naming that nobody could dial, and one too long for sockaddr_un
// failed as if the address were in use.
TEST(ScatterdTest, AUnixSocketPathEmptyOrTooLongIsRefused) {
  const CommandResult empty = RunScatterd({"--address=unix:"});
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_THAT(empty.err,
              HasSubstr("--address must be unix:PATH with a PATH of 1 to 107 "
                        "bytes, got unix: (no path)"));
  const CommandResult long_path = RunScatterd(
      {absl::StrCat("--address=unix:/tmp/", std::string(110, 'a'))});
  EXPECT_EQ(long_path.exit_code, 2) << long_path.err;
  EXPECT_THAT(long_path.err, HasSubstr("(115 bytes)"));
  // It said "(address in use, or not host:port?)" (found by a review
  // helper).
  const CommandResult no_dir =
      RunScatterd({"--address=unix:/nonexistent_scatter_dir/sock"});
  EXPECT_NE(no_dir.exit_code, 0);
  EXPECT_THAT(no_dir.err,
              HasSubstr("address: cannot listen on "
                        "unix:/nonexistent_scatter_dir/sock: its directory "
                        "/nonexistent_scatter_dir: No such file or directory"));
  // So did a file at the path, which stays as it was.
  const std::string file =
      absl::StrCat(::testing::TempDir(), "/scatterd_not_a_socket_", getpid());
  std::ofstream(file) << "precious\n";
  const CommandResult on_file = RunScatterd({"--address=unix:" + file});
  EXPECT_NE(on_file.exit_code, 0);
  EXPECT_THAT(on_file.err, HasSubstr(absl::StrCat(
                               "address: cannot listen on unix:", file, ": ",
                               file, " exists and is not a socket")));
  std::ifstream kept(file);
  std::string line;
  std::getline(kept, line);
  EXPECT_EQ(line, "precious");
}

// gRPC removes what is at a unix socket's path before binding: a second
// scatterd took a running one's socket and, when it went, left the first
// unreachable. Now it is refused as a port in use is; a stale socket file
// (its server gone) is taken over.
TEST(ScatterdTest, ALiveUnixSocketIsInUse) {
  const std::string base =
      absl::StrCat(::testing::TempDir(), "/scatterd_taken_", getpid());
  const std::string address = absl::StrCat("unix:", base, ".sock");
  {
    Scatterd first({"--address=" + address}, base + ".log");
    const CommandResult second = RunCommand(
        {SCATTERD_PATH, "--address=" + address, "--metrics_address="},
        absl::Seconds(5));
    EXPECT_EQ(second.exit_code, 1) << second.err;
    EXPECT_THAT(second.err,
                HasSubstr(absl::StrCat("--address: cannot listen on ", address,
                                       ": a server is listening there")));
    // The first still serves.
    auto stub = v1::ScatterService::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    EXPECT_TRUE(Collect(*stub, BoxRequest(10, 1)).status.ok());
    first.Signal(SIGKILL);  // Leaves its socket file behind.
    first.Wait();
  }
  Scatterd again({"--address=" + address}, base + ".log");
  EXPECT_EQ(again.line(), absl::StrCat("address ", address, " metrics_port 0"));
  unlink((base + ".sock").c_str());
}

TEST(ScatterdTest, LogLevelIsAcceptedInUpperCase) {
  Scatterd scatterd({"--log_level=DEBUG"});
  EXPECT_GT(scatterd.port(), 0);
}

TEST(ScatterdTest, ARasterCacheThatCannotHoldTheLargestRasterIsRefused) {
  // As large as the largest raster's pixels, but not their block bounds:
  // every raster of 1000 x 1000 would be refused on every call.
  const CommandResult got = RunScatterd(
      {"--max_raster_bytes=4000000", "--raster_cache_bytes=4000000"});
  EXPECT_EQ(got.exit_code, 2) << got.err;
  EXPECT_THAT(got.err, HasSubstr("--raster_cache_bytes must be >= 6667672, "
                                 "what a 1000 x 1000 raster"));
}

TEST(ScatterdTest, OutOfRangeLimitFlagsAreRefusedNamingTheFlag) {
  for (const auto& [flag, message] : {
           std::pair{"--max_streams=0", "--max_streams must be in [1, "},
           std::pair{"--max_streams=-3", "--max_streams must be in [1, "},
           // Three threads each: 30 000 at the bound, about what Linux
           // gives a process by default.
           std::pair{"--max_streams=10001",
                     "--max_streams must be in [1, 10000], got 10001"},
           std::pair{"--max_call_duration=0s",
                     "--max_call_duration must be > 0"},
           std::pair{"--max_call_duration=-1s",
                     "--max_call_duration must be > 0"},
           std::pair{"--max_points=0", "--max_points must be >= 1, got 0"},
           // PutRaster's chunks of 256 KiB must fit: below that, gRPC
           // refused every upload but a tiny one before scatterd saw it.
           std::pair{"--max_request_bytes=0",
                     "--max_request_bytes must be >= 524288 (PutRaster"},
           std::pair{"--max_request_bytes=-5",
                     "--max_request_bytes must be >= 524288"},
           std::pair{"--max_request_bytes=524287",
                     "--max_request_bytes must be >= 524288 (PutRaster "
                     "uploads come in messages of up to 256 KiB of pixels "
                     "and their header), got 524287"},
           std::pair{"--grace_period=-1s", "--grace_period must be >= 0"},
           std::pair{"--drain_notice=-2s", "--drain_notice must be >= 0"},
           std::pair{"--max_tiles_per_request=0",
                     "--max_tiles_per_request must be >= 1"},
           std::pair{"--threads=-1", "--threads must be in [0, 1024]"},
           std::pair{"--threads=5000", "--threads must be in [0, 1024]"},
           std::pair{"--memory_budget_bytes=0",
                     "--memory_budget_bytes must be >= 1024"},
           std::pair{"--max_grid_bytes=5", "--max_grid_bytes must be >= 1024"},
           // A call keeps its generators within the tile cache: 0 refused
           // every ScatterTiles call.
           std::pair{"--tile_cache_bytes=0",
                     "--tile_cache_bytes must be >= 1024 (ScatterTiles calls "
                     "keep the tile generators they read within it; there is "
                     "no running without it), got 0"},
           std::pair{"--keepalive_time=0s", "--keepalive_time must be > 0"},
           // gRPC takes these in whole milliseconds: 500us would be 0, and
           // a max_connection_age of 0 closes every connection at once.
           std::pair{"--max_connection_age=500us",
                     "--max_connection_age must be > 0 and at least 1ms"},
           std::pair{"--keepalive_time=999us",
                     "--keepalive_time must be > 0 and at least 1ms"},
           std::pair{"--raster_cache_bytes=1000",
                     "--raster_cache_bytes must be >= 447392424, what a "
                     "8192 x 8192 raster"},
       }) {
    SCOPED_TRACE(flag);
    const CommandResult got = RunScatterd({flag});
    EXPECT_EQ(got.exit_code, 2) << got.err;
    EXPECT_THAT(got.err, HasSubstr(message));
    // One line: the error, nothing about listening.
    EXPECT_EQ(std::count(got.err.begin(), got.err.end(), '\n'), 1) << got.err;
  }
}

// gRPC reads a port past 65535 modulo 2^16 and a missing one as 443:
// --address=127.0.0.1:99999 served on port 34463, and --address=127.0.0.1
// on 443, both as if nothing were wrong.
TEST(ScatterdTest, AnAddressWithoutAPortInRangeIsRefusedNamingTheFlag) {
  for (const std::string address :
       {"127.0.0.1:99999", "[::1]:70000", "127.0.0.1:0065536", "127.0.0.1",
        "127.0.0.1:", "[::1]",
        // Empty: scatterd listened nowhere and said "port 0".
        ""}) {
    SCOPED_TRACE(address);
    const CommandResult got = RunScatterd({"--address=" + address});
    EXPECT_EQ(got.exit_code, 2) << got.err;
    EXPECT_THAT(got.err,
                HasSubstr("--address must be host:port with a port in [0, "
                          "65535] (0 picks a free port) or unix:PATH, got " +
                          address));
    EXPECT_EQ(got.out, "");
  }
}

// gRPC reads an IPv6 address without brackets as a host with no port:
// --address=::1 listened on port 443 ("listening on ::443"), as if port 1
// had been asked for.
TEST(ScatterdTest, ABareIpv6AddressIsRefusedSuggestingBrackets) {
  for (const auto& [address, suggested] : {
           std::pair{"::1", "[::1]:PORT"},
           std::pair{"::", "[::]:PORT"},
           std::pair{"fe80::1%eth0", "[fe80::1%eth0]:PORT"},
           // Not an address: 50051 is more than a group.
           std::pair{"::1:50051", "[::1]:50051"},
           // The port after a zone: it was "[fe80::1%eth0:50051]:PORT".
           std::pair{"fe80::1%eth0:50051", "[fe80::1%eth0]:50051"},
       }) {
    SCOPED_TRACE(address);
    const CommandResult got =
        RunScatterd({absl::StrCat("--address=", address)});
    EXPECT_EQ(got.exit_code, 2) << got.err;
    EXPECT_THAT(got.err, HasSubstr(absl::StrCat(
                             "--address must be host:port with an IPv6 host in "
                             "brackets, as ",
                             suggested, " (0 picks a free port), got ", address,
                             ", which gRPC reads as a host without a port")));
    EXPECT_EQ(got.out, "");
  }
  // Client targets with a scheme keep their colons.
  for (const char* target :
       {"dns:///[::1]:50051", "ipv4:127.0.0.1:50051", "ipv6:[::1]:50051",
        "vsock:3:50051", "localhost:50051", "[fe80::1%eth0]:50051"}) {
    EXPECT_TRUE(CheckAddressPort("--server", target, false).ok()) << target;
  }
}

// A process whose address space cannot hold the stacks of --threads
// threads: the pool's std::thread threw while some workers ran, and
// scatterd died of std::terminate (exit 134) instead of saying why. It is
// refused as the other flags are, exit 2 (it was 1, as for a port that
// cannot be bound, with the code's name before the flag's).
TEST(ScatterdTest, TileThreadsTheSystemCannotStartAreRefusedNamingTheFlag) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers reserve more address space than the limit";
#endif
  // 1 GiB of address space: 1023 stacks of 8 MiB do not fit.
  const CommandResult got =
      RunCommand({"/bin/sh", "-c",
                  "ulimit -s 8192 && ulimit -v 1048576 && "
                  "exec \"$0\" \"$@\"",
                  SCATTERD_PATH, "--address=127.0.0.1:0",
                  "--metrics_address=", "--threads=1024"},
                 absl::Seconds(10));
  EXPECT_EQ(got.exit_code, 2) << got.err;
  EXPECT_THAT(got.err, HasSubstr("] --threads=1024: cannot start 1023 worker "
                                 "threads ("));
  EXPECT_THAT(got.err, HasSubstr("; ask for fewer"));
  EXPECT_EQ(got.out, "");
}

// The metrics endpoint (civetweb) refused these only after the gRPC server
// was up, with exit 1 and "UNAVAILABLE: cannot serve metrics on ...: null
// context when constructing CivetServer. Possible problem binding to
// port"; a bare port served every interface, logged as "metrics on 0:N".
TEST(ScatterdTest, AMetricsAddressThatIsNotHostPortIsRefusedNamingTheFlag) {
  for (const std::string address :
       {"127.0.0.1", "127.0.0.1:99999", "127.0.0.1:http", "::1",
        "unix:/tmp/metrics.sock", "0", ":9464"}) {
    SCOPED_TRACE(address);
    const CommandResult got =
        RunCommand({SCATTERD_PATH, "--address=127.0.0.1:0",
                    "--metrics_address=" + address},
                   absl::Seconds(3));
    EXPECT_EQ(got.exit_code, 2) << got.err;
    EXPECT_THAT(got.err,
                HasSubstr("--metrics_address must be host:port with a port in "
                          "[0, 65535] (0 picks a free port; 0.0.0.0:PORT "
                          "serves every interface), or empty for no metrics, "
                          "got " +
                          address));
    EXPECT_EQ(got.out, "");
  }
  for (const char* good : {"127.0.0.1:0", "localhost:9464", "0.0.0.0:9464"}) {
    ServerOptions options;
    options.metrics_address = good;
    EXPECT_TRUE(CheckOptions(options).ok()) << good;
  }
}

// civetweb serves IPv6 only when built with it, and Debian's is not: a
// bracketed host passed the check and failed once gRPC was up, with "null
// context when constructing CivetServer".
TEST(ScatterdTest, AnIpv6MetricsAddressIsRefusedWhenCivetwebHasNoIpv6) {
  ServerOptions options;
  options.metrics_address = "[::1]:0";
  const absl::Status checked = CheckOptions(options);
  if (mg_check_feature(8) != 0) {
    EXPECT_TRUE(checked.ok()) << checked;
    GTEST_SKIP() << "this civetweb serves IPv6";
  }
  EXPECT_EQ(checked.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(checked.message()),
              HasSubstr("metrics_address: this build's HTTP server (civetweb) "
                        "has no IPv6; give an IPv4 host (0.0.0.0:PORT serves "
                        "every interface), got [::1]:0"));
  const CommandResult got = RunCommand(
      {SCATTERD_PATH, "--address=127.0.0.1:0", "--metrics_address=[::1]:0"},
      absl::Seconds(3));
  EXPECT_EQ(got.exit_code, 2) << got.err;
  EXPECT_THAT(got.err,
              HasSubstr("--metrics_address: this build's HTTP server"));
  EXPECT_EQ(got.out, "");
}

// A certificate from a pipe (--tls_cert=<(...)) is read once and served:
// gRPC's file watcher read the path again and aborted scatterd at start
// (found by a review helper). Regular files are the ones watched.
TEST(ScatterdTest, TlsFromAPipeIsServedWithoutReload) {
  const Pem pem = SelfSigned();
  const std::string base =
      absl::StrCat(::testing::TempDir(), "/tls_pipe_", getpid());
  const std::string fifo = base + ".crt";
  const std::string key = base + ".key";
  std::ofstream(key) << pem.key;
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << pem.cert; });
  const std::string log = base + ".log";
  Scatterd scatterd({"--tls_cert=" + fifo, "--tls_key=" + key}, log);
  writer.join();
  ASSERT_GT(scatterd.port(), 0) << ReadAll(log);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem.cert;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto stub = v1::ScatterService::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", scatterd.port()),
                                grpc::SslCredentials(ssl), args));
  const Received got = Collect(*stub, BoxRequest(1, 0.1));
  EXPECT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_THAT(ReadAll(log), HasSubstr("is not a regular file: the TLS "
                                      "material read now is served until "
                                      "scatterd restarts"));
  scatterd.Signal(SIGTERM);
  const int exit = scatterd.Wait();
  EXPECT_TRUE(WIFEXITED(exit) && WEXITSTATUS(exit) == 0) << exit;
  for (const std::string& path : {fifo, key, log}) std::remove(path.c_str());
}

TEST(ScatterdTest, TlsFilesThatAreNotPemAreNamed) {
  const std::string junk =
      absl::StrCat(::testing::TempDir(), "/junk_", getpid(), ".pem");
  {
    std::ofstream out(junk);
    out << "not a certificate\n";
  }
  const CommandResult got =
      RunScatterd({"--tls_cert=" + junk, "--tls_key=" + junk});
  EXPECT_EQ(got.exit_code, 2) << got.err;
  EXPECT_THAT(got.err,
              HasSubstr("--tls_cert=" + junk + ": no PEM certificate in it"));
  EXPECT_THAT(got.err, Not(HasSubstr("address in use")));
  std::remove(junk.c_str());
}

// A TLS flag naming a directory: an ifstream over it opens, and its first
// read threw std::ios_base::failure, which aborted scatterd (exit 134).
TEST(ScatterdTest, TlsFilesThatAreDirectoriesAreNamed) {
  const std::string directory = ::testing::TempDir();
  const CommandResult got =
      RunScatterd({"--tls_cert=" + directory, "--tls_key=" + directory});
  EXPECT_EQ(got.exit_code, 2) << got.err;
  EXPECT_THAT(got.err, HasSubstr("--tls_cert: cannot read " + directory +
                                 ": is a directory"));
}

// Half a TLS setup exits 2 and names the flags, before any file is read
// (the paths need not exist).
TEST(ScatterdTest, HalfATlsSetupIsRefusedNamingTheFlags) {
  for (const auto& [flags, message] : {
           std::pair{std::vector<std::string>{"--tls_cert=cert.pem"},
                     "--tls_cert given without --tls_key"},
           std::pair{std::vector<std::string>{"--tls_key=key.pem"},
                     "--tls_key given without --tls_cert"},
           std::pair{std::vector<std::string>{"--tls_client_ca=ca.pem"},
                     "--tls_client_ca needs TLS"},
       }) {
    SCOPED_TRACE(flags[0]);
    const CommandResult got = RunScatterd(flags);
    EXPECT_EQ(got.exit_code, 2) << got.err;
    EXPECT_THAT(got.err, HasSubstr(message));
    EXPECT_THAT(got.err, Not(HasSubstr("listening")));
  }
}

TEST(ScatterdTest, HelpListsTheFlagsAndSucceeds) {
  const CommandResult got = RunCommand({SCATTERD_PATH, "--help"}, absl::Seconds(3));
  // A help request is not an error (Abseil 20220623 alone exits 1).
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_THAT(got.out, HasSubstr("--max_streams"));
  EXPECT_THAT(got.out, HasSubstr("--log_level"));
  EXPECT_THAT(got.out, Not(HasSubstr("No flags matched")));
}

TEST(ScatterdTest, VersionNamesTheAlgorithmVersion) {
  const CommandResult got =
      RunCommand({SCATTERD_PATH, "--version"}, absl::Seconds(3));
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(got.out, absl::StrCat("scatterd (Scatter 0.1.0), algorithm_version ",
                                  sampler::kAlgorithmVersion, "\n"));
}

TEST(ScatterdTest, AnUnknownFlagFails) {
  const CommandResult got =
      RunCommand({SCATTERD_PATH, "--no_such_flag=1"}, absl::Seconds(3));
  EXPECT_NE(got.exit_code, 0);
  EXPECT_THAT(got.err, HasSubstr("no_such_flag"));
}

// A word among the flags was ignored: "--reflection false" turned
// reflection on (--reflection and a stray "false"), and an address given
// without --address left the server on the default one.
TEST(ScatterdTest, ArgumentsBesidesFlagsAreRefused) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--reflection", "false"},
        std::vector<std::string>{"127.0.0.1:0"}}) {
    SCOPED_TRACE(flags.back());
    const CommandResult got = RunScatterd(flags);
    EXPECT_EQ(got.exit_code, 2) << got.err;
    EXPECT_THAT(got.err,
                HasSubstr(absl::StrCat("scatterd takes no arguments besides "
                                       "flags, got '",
                                       flags.back(), "'")));
    EXPECT_THAT(got.err, Not(HasSubstr("listening")));
  }
}

// --only_check_args exited 0 once the flags parsed, before their values
// were checked: it passed values that the start then refused.
TEST(ScatterdTest, OnlyCheckArgsChecksTheValuesAndStartsNothing) {
  const CommandResult bad =
      RunScatterd({"--only_check_args", "--max_streams=0"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("--max_streams must be in [1, 10000], got 0"));
  const CommandResult half_tls =
      RunScatterd({"--only_check_args", "--tls_cert=/dev/null"});
  EXPECT_EQ(half_tls.exit_code, 2) << half_tls.err;
  EXPECT_THAT(half_tls.err, HasSubstr("--tls_cert and --tls_key go together"));
  const CommandResult good = RunScatterd({"--only_check_args"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.out, "");  // No "port N" line: nothing was started.
  EXPECT_THAT(good.err, Not(HasSubstr("listening")));
}

TEST(ScatterdTest, CheckOptionsNamesTheOptionAndTheRule) {
  EXPECT_TRUE(CheckOptions(ServerOptions()).ok());
  ServerOptions options;
  options.service.max_streams = 0;
  absl::Status status = CheckOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("max_streams must be in [1, "));
  options = ServerOptions();
  options.service.limits.max_points = 0;
  EXPECT_THAT(CheckOptions(options).message(),
              HasSubstr("max_points must be >= 1, got 0"));
  options = ServerOptions();
  options.grace_period = absl::Seconds(-1);
  EXPECT_THAT(CheckOptions(options).message(),
              HasSubstr("grace_period must be >= 0, got -1s"));
  options = ServerOptions();
  options.address = "localhost:65536";
  EXPECT_THAT(CheckOptions(options).message(),
              HasSubstr("address must be host:port with a port in [0, 65535]"));
  for (const char* good : {"localhost:65535", "[::1]:0", "unix:/tmp/s.sock",
                           "unix-abstract:scatter", ""}) {
    options.address = good;
    EXPECT_TRUE(CheckOptions(options).ok()) << good;
  }
  options.grace_period = absl::Seconds(-1);
  // Start() refuses them too.
  EXPECT_EQ(ScatterServer::Start(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace scatter::server::testing
