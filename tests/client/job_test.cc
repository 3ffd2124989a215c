// Job files: where their raster files are read from, and how errors name
// them.

#include "client/job.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace scatter::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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
        {"target": "layers[0].density", "path": "/maps/density.png"},
        {"target": "region.mask", "path": "mask.png"}]})");
  absl::Status named = NameRasterFile(
      job, "jobs",
      absl::InvalidArgumentError("region.mask.data: not a PNG file"));
  EXPECT_EQ(named.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(named.message(),
            "rasterFiles[1] (jobs/mask.png): region.mask.data: not a PNG file");
  named = NameRasterFile(
      job, "jobs", absl::NotFoundError("layers[0].density.digest: no raster"));
  EXPECT_EQ(named.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(named.message(),
            "rasterFiles[0] (/maps/density.png): layers[0].density.digest: "
            "no raster");
  named = NameRasterFile(
      job, "", absl::InvalidArgumentError("region.mask: chunks: bad CRC"));
  EXPECT_EQ(named.message(),
            "rasterFiles[1] (mask.png): region.mask: chunks: bad CRC");
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

// Two files for one field, or a file for a field the request fills
// itself: the first was dropped without a word (found by a review helper:
// of two masks only the second applied).
TEST(JobTest, AFieldFilledTwiceIsRefusedNamingBothEntries) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/job_test_mask_", getpid(), ".raw");
  std::ofstream(path, std::ios::binary) << std::string(4, '\xff');
  const v1::Job twice = JobFromJson(absl::StrCat(
      R"({"request": {"layers": [{"spacing": 1}]},
          "rasterFiles": [
            {"target": "region.mask", "path": ")",
      path,
      R"(", "format": "RASTER_FORMAT_U8", "width": 2, "height": 2},
            {"target": "layers[0].density", "path": ")",
      path,
      R"(", "format": "RASTER_FORMAT_U8", "width": 2, "height": 2},
            {"target": "region.mask", "path": ")",
      path, R"(", "format": "RASTER_FORMAT_U8", "width": 2, "height": 2}]})"));
  absl::StatusOr<v1::ScatterRequest> request = ResolveRasters(twice, "");
  EXPECT_EQ(request.status(),
            absl::InvalidArgumentError(
                "rasterFiles[2].target: region.mask is filled by "
                "rasterFiles[0] already; give each raster field one file"));
  const v1::Job both = JobFromJson(absl::StrCat(
      R"({"request": {"layers": [{"spacing": 1,
            "density": {"digest": "abc"}}]},
          "rasterFiles": [
            {"target": "layers[0].density", "path": ")",
      path, R"(", "format": "RASTER_FORMAT_U8", "width": 2, "height": 2}]})"));
  request = ResolveRasters(both, "");
  EXPECT_EQ(request.status(),
            absl::InvalidArgumentError(
                "rasterFiles[0].target: the job's request sets "
                "layers[0].density itself (data or digest); give it one or "
                "the other"));
  // One file for two fields is fine.
  v1::Job shared = twice;
  shared.mutable_raster_files()->RemoveLast();
  EXPECT_TRUE(ResolveRasters(shared, "").ok());
  unlink(path.c_str());
}

// A job file with these bytes, in the test's temporary directory.
std::string WriteJob(const std::string& name, const std::string& bytes) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/job_test_",
                                        getpid(), "_", name, ".json");
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The parser shows the text around a syntax error with a caret under it;
// the one-line error kept only its reason ("Expected , or ] after array
// value."), with no way to find the place in a long file.
TEST(JobTest, SyntaxErrorsSayTheLineAndColumn) {
  const std::string missing_comma = WriteJob("missing_comma", R"({
  "request": {
    "seed": "4",
    "layers": [
      {"id": 1, "spacing": 2},
      {"id": 2, "spacing": 1}
      {"id": 3, "spacing": 0.5}
    ]
  }
})");
  absl::StatusOr<v1::Job> job = LoadJob(missing_comma);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(),
            missing_comma +
                ": not a scatter job: line 7, column 7: Expected , or ] after "
                "array value.");

  // Columns count characters: "ê" is two bytes.
  const std::string accented = WriteJob(
      "accented",
      "{\"rasterFiles\": [{\"path\": \"for\xC3\xAAt.png\" \"x1\": 1}]}");
  job = LoadJob(accented);
  EXPECT_EQ(job.status().message(),
            accented +
                ": not a scatter job: line 1, column 39: Expected , or } after "
                "key:value pair.");

  // Lines alike but for the error: the place is the line that has it.
  const std::string repeated = WriteJob("repeated", R"({"request": {"layers": [
  {"id": 1, "spacing": 2, "footprint": 1, "maxAttempts": 3},
  {"id": 2, "spacing": 2, "footprint": 1, "maxAttempts": 3},
  {"id": 3, "spacing": 2, "footprint": 1 "maxAttempts": 3}]}})");
  job = LoadJob(repeated);
  EXPECT_EQ(job.status().message(),
            repeated +
                ": not a scatter job: line 4, column 42: Expected , or } after "
                "key:value pair.");

  // The bytes the parser shows around the error (20 either side) stand
  // three times: in a string, around a good "10", and at the error, the
  // last "10". The place is the first whose prefix fails the same way.
  const std::string spaces(30, ' ');
  const std::string around =
      absl::StrCat(std::string(20, ' '), "10", std::string(18, ' '));
  const std::string recurring_text = absl::StrCat(
      R"({"rasterFiles": [{"target": "region.mask", "path": ")", around,
      R"("}], "request": {"region": {"box": {"min": [0, 0], "max": [10,)",
      spaces, "10", spaces, "10", spaces, "]}}}}");
  const std::string recurring = WriteJob("recurring", recurring_text);
  job = LoadJob(recurring);
  EXPECT_EQ(job.status().message(),
            absl::StrCat(recurring, ": not a scatter job: line 1, column ",
                         recurring_text.rfind("10") + 1,
                         ": Expected , or ] after array value."));

  // A file that ends early: the place is its end.
  const std::string cut = WriteJob("cut", "{\n  \"request\": {");
  job = LoadJob(cut);
  EXPECT_THAT(job.status().message(),
              HasSubstr(": not a scatter job: line 2, column 15: Unexpected "
                        "end of string."));

  // A field's error names its path; there is no place to add.
  const std::string unknown =
      WriteJob("unknown", R"({"request": {"sead": "4"}})");
  job = LoadJob(unknown);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(), HasSubstr("sead"));
  EXPECT_THAT(job.status().message(), Not(HasSubstr("line ")));
}

// A key given twice in one object is refused, naming it and its place:
// the parser took the last value, and lists added up (two "layers" lists
// ran all their layers; two "request"s merged into a box of 4 values).
TEST(JobTest, AKeyGivenTwiceIsRefusedNamingIt) {
  const struct {
    const char* name;
    const char* text;
    const char* message;
  } cases[] = {
      {"seed_twice", R"({"request": {"seed": "1", "seed": "2"}})",
       "line 1, column 27: request.seed is given twice"},
      {"layers_twice",
       "{\"request\": {\"layers\": [{\"id\": 1, \"spacing\": 1}],\n"
       "  \"layers\": [{\"id\": 2, \"spacing\": 2}]}}",
       "line 2, column 3: request.layers is given twice"},
      // One field by its two names.
      {"two_names", R"({"request": {"maxPoints": "5", "max_points": "6"}})",
       "request.max_points is given twice (also as maxPoints)"},
      {"in_a_list",
       R"({"request": {"layers": [{"id": 1}, {"id": 2, "spacing": 1, "id": 3}]}})",
       "request.layers[1].id is given twice"},
      {"escaped", R"({"request": {"seed": "1", "s\u0065ed": "2"}})",
       "request.s\\u0065ed is given twice (also as seed)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = WriteJob(c.name, c.text);
    const absl::StatusOr<v1::Job> job = LoadJob(path);
    EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(job.status().message(),
                HasSubstr(path + ": not a scatter job: "));
    EXPECT_THAT(job.status().message(), HasSubstr(c.message));
  }
  // The same keys in different objects, and strings that look like keys,
  // are fine.
  const std::string fine =
      WriteJob("fine",
               R"({"request": {"seed": "1", "layers": [{"id": 1, "spacing": 1},
          {"id": 2, "spacing": 2}], "region": {"box": {"min": [0, 0],
          "max": [1, 1]}}}, "rasterFiles": [{"path": "\"seed\": \",",
          "target": "region.mask", "x1": 1, "y1": 1}]})");
  const absl::StatusOr<v1::Job> job = LoadJob(fine);
  EXPECT_TRUE(job.ok()) << job.status();
}

// A UTF-8 byte order mark, which some editors write, is skipped (the
// parser said "Expected a value."); UTF-16 is refused saying so.
TEST(JobTest, AByteOrderMarkIsSkippedAndUtf16IsRefusedSayingSo) {
  const std::string text =
      R"({"request": {"seed": "9", "layers": [{"spacing": 1}]}})";
  absl::StatusOr<v1::Job> job = LoadJob(WriteJob("bom", "\xEF\xBB\xBF" + text));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->request().seed(), 9u);
  EXPECT_EQ(job->request().layers(0).spacing(), 1);

  // Positions count from after the mark.
  job = LoadJob(WriteJob("bom_bad", "\xEF\xBB\xBF{\"request\" 1}"));
  EXPECT_THAT(job.status().message(),
              HasSubstr("not a scatter job: line 1, column 12: Expected :"));

  const std::string utf16 = WriteJob("utf16", std::string("\xFF\xFE{\0}\0", 6));
  job = LoadJob(utf16);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(),
            utf16 +
                ": not a scatter job: the file is UTF-16 (it starts with a "
                "UTF-16 byte order mark); save it as UTF-8");
}

}  // namespace
}  // namespace scatter::client
