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
#include "tests/server/scatterd_process.h"


namespace scatter::server::testing {
namespace {

using ::testing::HasSubstr;

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
  auto reader = stub->Scatter(&context, LongRequest());
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
