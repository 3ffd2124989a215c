#ifndef SCATTER_TESTS_CLIENT_CLI_TEST_UTIL_H_
#define SCATTER_TESTS_CLIENT_CLI_TEST_UTIL_H_

// Shared pieces of the `scatter` command tests: temporary paths, whole
// files, and the command run as a child process (SCATTER_PATH and
// SCATTER_EXAMPLES_DIR are set by CMake).

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/scatterd_process.h"

namespace scatter::client::testing {

inline const std::string kExamples = SCATTER_EXAMPLES_DIR;

// A path in the test's temporary directory, unique to this process.
inline std::string Temp(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/cli_", getpid(), "_", name);
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

// Runs `scatter` with these arguments to completion.
inline server::testing::CommandResult Scatter(std::vector<std::string> args) {
  args.insert(args.begin(), SCATTER_PATH);
  return server::testing::RunCommand(args);
}

}  // namespace scatter::client::testing

#endif  // SCATTER_TESTS_CLIENT_CLI_TEST_UTIL_H_
