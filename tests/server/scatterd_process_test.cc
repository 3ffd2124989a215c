// scatterd as a process: the port line, SIGTERM with a stream in flight.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/service_test_util.h"

extern char** environ;

namespace scatter::server::testing {
namespace {

using ::testing::HasSubstr;

// scatterd on 127.0.0.1:0, its stdout read for the port line.
class Scatterd {
 public:
  explicit Scatterd(std::vector<std::string> flags) {
    int out[2];
    if (pipe(out) != 0) std::abort();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> args = {SCATTERD_PATH, "--address=127.0.0.1:0",
                                     "--metrics_address="};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, SCATTERD_PATH, &actions, nullptr, argv.data(),
                    environ) != 0) {
      std::abort();
    }
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    stdout_ = fdopen(out[0], "r");
    if (std::fscanf(stdout_, "port %d", &port_) != 1) port_ = 0;
  }
  ~Scatterd() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    std::fclose(stdout_);
  }
  int port() const { return port_; }
  void Signal(int signal) { kill(pid_, signal); }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    return status;
  }
  std::unique_ptr<v1::ScatterService::Stub> Stub() const {
    return v1::ScatterService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  FILE* stdout_ = nullptr;
};

TEST(ScatterdTest, ServesAndPrintsItsPort) {
  Scatterd scatterd({});
  ASSERT_GT(scatterd.port(), 0);
  const Received got = Collect(*scatterd.Stub(), BoxRequest(100, 2));
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GT(got.size(), 1500u);
  scatterd.Signal(SIGTERM);
  const int status = scatterd.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(ScatterdTest, SigtermEndsAStreamInFlightWithAStatus) {
  Scatterd scatterd({"--grace_period=300ms"});
  ASSERT_GT(scatterd.port(), 0);
  auto stub = scatterd.Stub();
  grpc::ClientContext context;
  // Runs for seconds: far past the grace period.
  auto reader = stub->Scatter(&context, BoxRequest(1, 0.0002));
  v1::ScatterResponse response;
  ASSERT_TRUE(reader->Read(&response));
  scatterd.Signal(SIGTERM);
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
}

}  // namespace
}  // namespace scatter::server::testing
