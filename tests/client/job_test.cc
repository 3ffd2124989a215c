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

// Rasters are decoded when the request runs, so their errors come back
// naming the field; the user wrote a file.
TEST(JobTest, RasterErrorsNameTheFileThatFillsTheField) {
  const v1::Job job = JobFromJson(R"({
      "request": {"layers": [{"spacing": 1}]},
      "rasterFiles": [
        {"target": "region.mask", "path": "first.png"},
        {"target": "layers[0].density", "path": "/maps/density.png"},
        {"target": "region.mask", "path": "mask.png"}]})");
  // The last file for a target is the one in place.
  absl::Status named = NameRasterFile(
      job, "jobs",
      absl::InvalidArgumentError("region.mask.data: not a PNG file"));
  EXPECT_EQ(named.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(named.message(),
            "rasterFiles[2] (jobs/mask.png): region.mask.data: not a PNG file");
  named = NameRasterFile(
      job, "jobs", absl::NotFoundError("layers[0].density.digest: no raster"));
  EXPECT_EQ(named.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(named.message(),
            "rasterFiles[1] (/maps/density.png): layers[0].density.digest: "
            "no raster");
  named = NameRasterFile(
      job, "", absl::InvalidArgumentError("region.mask: chunks: bad CRC"));
  EXPECT_EQ(named.message(),
            "rasterFiles[2] (mask.png): region.mask: chunks: bad CRC");
  // Other fields, even ones that start alike, are left as they are.
  for (const char* message :
       {"region.mask_threshold: must be in [0, 1]",
        "layers[0].spacing: must be finite and > 0",
        "layers[1].density.data: not a PNG file", "max_points = 200000000"}) {
    const absl::Status status = absl::InvalidArgumentError(message);
    EXPECT_EQ(NameRasterFile(job, "jobs", status), status);
  }
  // So are failed calls, whatever their message says: the connection or
  // the deadline is at fault, not the file.
  for (const absl::StatusCode code :
       {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
        absl::StatusCode::kCancelled, absl::StatusCode::kUnauthenticated,
        absl::StatusCode::kPermissionDenied}) {
    const absl::Status status(code, "layers[0].density: Deadline Exceeded");
    EXPECT_EQ(NameRasterFile(job, "jobs", status), status);
  }
}

}  // namespace
}  // namespace scatter::client
