// Job files: where their raster files are read from, and how errors name
// them.

#include "client/job.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace scatter::client {
namespace {

using ::testing::HasSubstr;

v1::Job JobFromJson(const std::string& json) {
  v1::Job job;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &job).ok())
      << json;
  return job;
}

// A mask at `path`, which nothing writes.
v1::Job MaskJob(const std::string& path) {
  return JobFromJson(absl::StrCat(
      R"({"request": {"region": {"box": {"min": [0, 0], "max": [1, 1]}},
                      "layers": [{"spacing": 0.1}]},
          "rasterFiles": [{"target": "region.mask", "path": ")",
      path, R"(", "x1": 1, "y1": 1}]})"));
}

TEST(JobTest, RasterPathsAreTakenFromTheJobFilesDirectory) {
  EXPECT_EQ(JobDir("a.json"), "");
  EXPECT_EQ(JobDir("jobs/a.json"), "jobs");
  EXPECT_EQ(JobDir("./a.json"), ".");
  EXPECT_EQ(JobDir("/srv/jobs/a.json"), "/srv/jobs");
  // Not "", which would read them from the current directory.
  EXPECT_EQ(JobDir("/a.json"), "/");
}

TEST(JobTest, AJobAtTheRootReadsItsRastersFromTheRoot) {
  const std::string name = absl::StrCat("scatter_job_test_", getpid(), ".png");
  absl::StatusOr<v1::ScatterRequest> request =
      ResolveRasters(MaskJob(name), JobDir("/job.json"));
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      request.status().message(),
      HasSubstr(absl::StrCat("raster file /", name, " cannot be read")));

  request = ResolveRasters(MaskJob(name), JobDir("jobs/job.json"));
  ASSERT_FALSE(request.ok());
  EXPECT_THAT(request.status().message(),
              HasSubstr(absl::StrCat("raster file jobs/", name, " cannot")));
}

}  // namespace
}  // namespace scatter::client
