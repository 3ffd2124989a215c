#ifndef SCATTER_TESTS_SERVER_SCATTERD_PROCESS_H_
#define SCATTER_TESTS_SERVER_SCATTERD_PROCESS_H_

// scatterd started as a child process for tests (SCATTERD_PATH is set by
// CMake), and a way to run other commands and collect their output.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/server/service_test_util.h"

extern char** environ;

namespace scatter::server::testing {

// scatterd on 127.0.0.1:0 (unless `flags` give another --address), its
// stdout read for the port line. Its log goes to `log_path` when given.
class Scatterd {
 public:
  explicit Scatterd(std::vector<std::string> flags,
                    const std::string& log_path = "") {
    int out[2];
    if (pipe(out) != 0) std::abort();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    if (!log_path.empty()) {
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO,
                                       log_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
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
    char line[4096];
    if (std::fgets(line, sizeof(line), stdout_) != nullptr) {
      line_ = line;
      if (!line_.empty() && line_.back() == '\n') line_.pop_back();
    }
    if (std::sscanf(line_.c_str(), "port %d", &port_) != 1) port_ = 0;
  }
  ~Scatterd() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    std::fclose(stdout_);
  }
  int port() const { return port_; }
  // The first line scatterd printed on stdout, without its newline.
  const std::string& line() const { return line_; }
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
  std::string line_;
  FILE* stdout_ = nullptr;
};

// Runs a command to completion, or kills it after `limit` (exit_code is
// then 128 + SIGKILL); its stdout and stderr are collected.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline CommandResult RunCommand(std::vector<std::string> args,
                                absl::Duration limit = absl::Seconds(300)) {
  static int serial = 0;
  const std::string base = absl::StrCat(::testing::TempDir(), "/cmd_", getpid(), "_",
                                        serial++);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, (base + ".out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (base + ".err").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  CommandResult result;
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    const absl::Time give_up = absl::Now() + limit;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (absl::Now() > give_up) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in),
                       std::istreambuf_iterator<char>());
  };
  result.out = slurp(base + ".out");
  result.err = slurp(base + ".err");
  return result;
}

}  // namespace scatter::server::testing

#endif  // SCATTER_TESTS_SERVER_SCATTERD_PROCESS_H_
