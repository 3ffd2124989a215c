// `scatter tiles` end to end (DESIGN.md: Seamless tiles, guarantee 1): a
// tile computed alone, in another process, is the same file as the same
// tile computed in a block, in row order or shuffled, on both sides of the
// origin, and from a live scatterd; shards of an area add up to the area.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "client/output.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/version.h"
#include "tests/client/cli_test_util.h"
#include "tests/server/scatterd_process.h"

namespace scatter::client {
namespace {

using server::testing::CommandResult;
using server::testing::Scatterd;
using ::testing::HasSubstr;
using testing::kExamples;
using ::testing::Not;
using testing::Scatter;
using testing::Slurp;
using testing::Temp;

// A small world (R = 1, T = 16: quick under sanitizers) whose first layer's
// spacing follows a density PNG given by file, over [-64, 64]^2: 8 x 8
// tiles around the origin.
std::string WorldJob() {
  const std::string path = Temp("world.json");
  std::ofstream(path) << R"({
    "world": {
      "seed": "31",
      "tileSize": 16,
      "layers": [
        {"id": 1, "radiusMin": 0.7, "radiusMax": 1, "footprint": 0.3},
        {"id": 2, "spacing": 0.8, "footprint": 0.2}
      ]
    },
    "rasterFiles": [
      {"target": "layers[0].density", "path": ")" +
                             kExamples + R"(/forest_density.png",
       "x0": -64, "y0": -64, "x1": 64, "y1": 64}
    ]
  })";
  return path;
}

// File name -> contents, for every file in `dir` (hidden ones too: a
// leftover temporary file is a failure).
// The tile files in `dir` by name (not the export's manifest,
// scatter-export.json: ManifestTest checks it).
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name == "scatter-export.json") continue;
    out[name] = Slurp(dir + "/" + name);
  }
  closedir(d);
  return out;
}

std::set<std::string> TileNames(std::int64_t x0, std::int64_t x1,
                                std::int64_t y0, std::int64_t y1,
                                const char* ext = "csv") {
  std::set<std::string> names;
  for (std::int64_t y = y0; y < y1; ++y) {
    for (std::int64_t x = x0; x < x1; ++x) {
      names.insert(absl::StrCat("tile_", x, "_", y, ".", ext));
    }
  }
  return names;
}

std::set<std::string> Keys(const std::map<std::string, std::string>& files) {
  std::set<std::string> keys;
  for (const auto& [name, bytes] : files) keys.insert(name);
  return keys;
}

// An 8 x 8 block astride the origin, once for the whole test program.
const std::map<std::string, std::string>& Block() {
  static const auto* block = [] {
    const std::string dir = Temp("block");
    CommandResult run = Scatter(
        {"tiles", WorldJob(), "--tiles=-4:4,-4:4", "--local", "--out=" + dir});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.err, HasSubstr("scatter: 64 tiles"));
    return new std::map<std::string, std::string>(Files(dir));
  }();
  return *block;
}

TEST(TilesCliTest, BlockHasEveryTileOnceAndOnlyThem) {
  const auto& block = Block();
  EXPECT_EQ(Keys(block), TileNames(-4, 4, -4, 4));
  for (const auto& [name, bytes] : block) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(absl::StartsWith(bytes, "x,y,layer,radius,id,yaw,scale\n"));
    EXPECT_GT(std::count(bytes.begin(), bytes.end(), '\n'), 100);
  }
}

// --seed replaces the world's seed (it was dropped silently and no test
// noticed; found by the mutation review).
// Not on a terminal (a batch Job's log), progress comes as whole lines
// every --log_every; the log of an export said nothing until its end,
// hours later (found by a review helper).
TEST(TilesCliTest, ALogGetsAProgressLineEveryLogEvery) {
  CommandResult run =
      Scatter({"tiles", WorldJob(), "--tiles=-4:4,-4:4", "--local",
               "--log_every=1ns", "--out=" + Temp("logged")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("scatter: 1 of 64 tiles, "));
  EXPECT_THAT(run.err, HasSubstr("scatter: 64 of 64 tiles, "));
  // At the default, a minute, a run of seconds logs only its summary.
  run = Scatter({"tiles", WorldJob(), "--tiles=-4:4,-4:4", "--local",
                 "--out=" + Temp("logged_default")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, Not(HasSubstr(" of 64 tiles")));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  run = Scatter({"tiles", WorldJob(), "--tiles=0:1,0:1", "--local",
                 "--log_every=-1s", "--out=" + Temp("logged_negative")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err,
            "scatter: --log_every: must be >= 0 (0 for no progress lines), got "
            "-1s\n");
  run = Scatter(
      {"run", WorldJob(), "--local", "--log_every=1s", "--out=/dev/null"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("--log_every: only `scatter tiles` takes it"));
}

// An export directory says which world its tiles are of
// (scatter-export.json). Another world's export into it is refused before
// any tile is replaced: tiles of two seeds ended side by side, their
// points an eighth of the spacing apart across a border (found by a
// review helper). The same world may come back: other tiles, another
// shard, --local or a server alike.
TEST(TilesCliTest, AnExportDirectoryHoldsTheTilesOfOneWorld) {
  Scatterd scatterd({});
  ASSERT_GT(scatterd.port(), 0);
  const std::string dir = Temp("one_world");
  CommandResult run = Scatter(
      {"tiles", WorldJob(), "--tiles=0:2,0:2", "--local", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string manifest = Slurp(dir + "/scatter-export.json");
  EXPECT_THAT(manifest,
              ::testing::MatchesRegex(
                  "\\{\"world\": \"[0-9a-f]{16}\", \"seed\": \"[0-9]+\", "
                  "\"algorithmVersion\": [0-9]+\\}\n"));
  run = Scatter({"tiles", WorldJob(), "--tiles=2:3,0:2",
                 absl::StrCat("--server=127.0.0.1:", scatterd.port()),
                 "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Slurp(dir + "/scatter-export.json"), manifest);
  // The same world with a batch size (delivery only) and its algorithm
  // version named (the current one, as 0 means) carries on the export.
  const std::string named = Temp("one_world_named.json");
  std::ofstream(named) << absl::StrReplaceAll(
      Slurp(WorldJob()),
      {{"\"seed\": \"31\",",
        absl::StrCat("\"seed\": \"31\", \"batchSize\": 100, ",
                     "\"algorithmVersion\": ", sampler::kAlgorithmVersion,
                     ",")}});
  ASSERT_NE(Slurp(named), Slurp(WorldJob()));
  run = Scatter({"tiles", named, "--tiles=3:4,0:1", "--local", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Slurp(dir + "/scatter-export.json"), manifest);
  const auto before = Files(dir);
  EXPECT_EQ(before.size(), 7u);
  run = Scatter({"tiles", WorldJob(), "--tiles=0:3,0:3", "--local", "--seed=12",
                 "--out=" + dir});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err,
              HasSubstr(absl::StrCat("scatter: --out: ", dir,
                                     " holds the tiles of another world (")));
  EXPECT_THAT(
      run.err,
      HasSubstr("export into another directory, or empty this one first"));
  EXPECT_EQ(Files(dir), before);
  EXPECT_EQ(Slurp(dir + "/scatter-export.json"), manifest);
  // A run refused before its first tile (here its plan is too big)
  // writes no manifest, and leaves no directory.
  const std::string huge = Temp("one_world_huge.json");
  std::ofstream(huge) << R"({"world": {"seed": "1", "tileSize": 1e10,
      "layers": [{"id": 1, "spacing": 1}], "tiles": [{"x": "0", "y": "0"}]}})";
  const std::string refused = Temp("one_world_refused");
  run = Scatter({"tiles", huge, "--local", "--out=" + refused});
  EXPECT_EQ(run.exit_code, 1);
  struct stat info;
  EXPECT_NE(stat(refused.c_str(), &info), 0);
}

// --skip_existing resumes an export: the tiles whose files are there are
// left out (a retried pod recomputed its whole band, under a Job deadline
// that counts every retry; found by a review helper), but only where the
// manifest says the files are this world's.
TEST(TilesCliTest, SkipExistingLeavesOutTheTilesThereAlready) {
  const std::string dir = Temp("resumed");
  CommandResult run = Scatter(
      {"tiles", WorldJob(), "--tiles=0:3,0:2", "--local", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto whole = Files(dir);
  ASSERT_EQ(whole.size(), 6u);
  auto inode = [&](const std::string& name) {
    struct stat info;
    return stat((dir + "/" + name).c_str(), &info) == 0 ? info.st_ino : 0;
  };
  const auto kept_inode = inode("tile_0_0.csv");
  ASSERT_EQ(unlink((dir + "/tile_1_0.csv").c_str()), 0);
  ASSERT_EQ(unlink((dir + "/tile_2_1.csv").c_str()), 0);
  run = Scatter({"tiles", WorldJob(), "--tiles=0:3,0:2", "--local",
                 "--skip_existing", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("scatter: 2 tiles, "));
  EXPECT_THAT(run.err, HasSubstr("; 4 tiles there already, left out\n"));
  EXPECT_EQ(Files(dir), whole);
  EXPECT_EQ(inode("tile_0_0.csv"), kept_inode)
      << "a tile there already was rewritten";
  // Every tile there: nothing to make.
  run = Scatter({"tiles", WorldJob(), "--tiles=0:3,0:2", "--local",
                 "--skip_existing", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("scatter: 0 tiles, 0 points"));
  // Without a manifest the files may be another world's: all are made.
  ASSERT_EQ(unlink((dir + "/scatter-export.json").c_str()), 0);
  run = Scatter({"tiles", WorldJob(), "--tiles=0:3,0:2", "--local",
                 "--skip_existing", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("scatter: 6 tiles, "));
  EXPECT_NE(inode("tile_0_0.csv"), kept_inode);
  EXPECT_EQ(Files(dir), whole);
  run = Scatter(
      {"run", WorldJob(), "--local", "--skip_existing", "--out=/dev/null"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err,
              HasSubstr("--skip_existing: only `scatter tiles` takes it"));
}

TEST(TilesCliTest, TheSeedFlagReplacesTheWorldsSeed) {
  auto world = [](const char* seed) {
    const std::string path = Temp(absl::StrCat("seed_world_", seed, ".json"));
    std::ofstream(path) << R"({"world": {"seed": ")" << seed
                        << R"(", "tileSize": 16,
        "layers": [{"id": 1, "spacing": 1}]}})";
    return path;
  };
  auto tiles = [](const std::string& job, const std::string& name,
                  const std::vector<std::string>& more) {
    const std::string dir = Temp(name);
    std::vector<std::string> args = {"tiles", job, "--local", "--tiles=0:2,0:1",
                                     "--out=" + dir};
    args.insert(args.end(), more.begin(), more.end());
    const auto result = Scatter(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return Files(dir);
  };
  const auto seven = tiles(world("7"), "seed_7", {});
  const auto eight = tiles(world("8"), "seed_8", {});
  const auto seven_as_eight = tiles(world("7"), "seed_7_as_8", {"--seed=8"});
  ASSERT_EQ(seven.size(), 2u);
  EXPECT_NE(seven, eight);
  EXPECT_EQ(seven_as_eight, eight);
}

TEST(TilesCliTest, TileAloneEqualsTheTileInABlockInRowOrderAndShuffled) {
  const auto& block = Block();
  // The block again as a shuffled list of its 64 tiles.
  std::vector<std::string> list;
  for (std::int64_t y = -4; y < 4; ++y) {
    for (std::int64_t x = -4; x < 4; ++x)
      list.push_back(absl::StrCat(x, ",", y));
  }
  std::mt19937 shuffle(7);
  std::shuffle(list.begin(), list.end(), shuffle);
  std::string joined;
  for (const std::string& t : list)
    absl::StrAppend(&joined, joined.empty() ? "" : ";", t);
  const std::string shuffled_dir = Temp("shuffled");
  CommandResult shuffled =
      Scatter({"tiles", WorldJob(), "--tiles=" + joined, "--local",
               "--threads=2", "--out=" + shuffled_dir});
  ASSERT_EQ(shuffled.exit_code, 0) << shuffled.err;
  const auto again = Files(shuffled_dir);
  ASSERT_EQ(Keys(again), Keys(block));
  for (const auto& [name, bytes] : block) {
    EXPECT_TRUE(again.at(name) == bytes) << name << " differs when shuffled";
  }

  // A corner and tiles in each quadrant around the origin, each alone in
  // a process of its own.
  for (const auto& [x, y] :
       {std::pair{-4, -4}, {-1, -1}, {0, -1}, {-1, 0}, {0, 0}, {3, 2}}) {
    SCOPED_TRACE(absl::StrCat("tile ", x, ", ", y));
    const std::string dir = Temp(absl::StrCat("alone_", x, "_", y));
    CommandResult alone =
        Scatter({"tiles", WorldJob(), absl::StrCat("--tiles=", x, ",", y),
                 "--local", "--threads=1", "--out=" + dir});
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    const auto files = Files(dir);
    const std::string name = absl::StrCat("tile_", x, "_", y, ".csv");
    ASSERT_EQ(Keys(files), std::set<std::string>{name});
    EXPECT_TRUE(files.at(name) == block.at(name)) << "differs alone";
  }
}

TEST(TilesCliTest, LiveServerWritesTheSameBytesAsLocal) {
  Scatterd scatterd({});
  ASSERT_GT(scatterd.port(), 0);
  const std::string server =
      absl::StrCat("--server=127.0.0.1:", scatterd.port());
  const std::string dir = Temp("served");
  // Several calls of 10 tiles: the raster is uploaded once and named by
  // digest.
  CommandResult served =
      Scatter({"tiles", WorldJob(), "--tiles=-4:4,-4:4", server,
               "--tiles_per_call=10", "--out=" + dir});
  ASSERT_EQ(served.exit_code, 0) << served.err;
  const auto files = Files(dir);
  const auto& block = Block();
  ASSERT_EQ(Keys(files), Keys(block));
  for (const auto& [name, bytes] : block) {
    EXPECT_TRUE(files.at(name) == bytes) << name << " differs from the server";
  }
  // Other formats carry the same points.
  const std::string raw_dir = Temp("served_raw");
  CommandResult raw = Scatter({"tiles", WorldJob(), "--tiles=-1:1,0:1", server,
                               "--format=raw", "--out=" + raw_dir});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_EQ(Keys(Files(raw_dir)), TileNames(-1, 1, 0, 1, "raw"));
  for (const char* tile : {"tile_-1_0", "tile_0_0"}) {
    auto from_raw =
        ReadPoints(Format::kRaw, absl::StrCat(raw_dir, "/", tile, ".raw"));
    auto from_csv = ReadPoints(Format::kCsv,
                               absl::StrCat(Temp("block"), "/", tile, ".csv"));
    ASSERT_TRUE(from_raw.ok() && from_csv.ok());
    EXPECT_EQ(from_raw->SerializeAsString(), from_csv->SerializeAsString())
        << tile;
  }
}

TEST(TilesCliTest, FourShardsAddUpToTheAreaEachTileOnce) {
  // 5 x 3 = 15 tiles astride the origin: bands of 3 or 4, not whole rows.
  const std::string area = "--tiles=-2:3,-1:2";
  const std::string whole_dir = Temp("whole");
  CommandResult whole =
      Scatter({"tiles", WorldJob(), area, "--local", "--out=" + whole_dir});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const auto single = Files(whole_dir);
  ASSERT_EQ(Keys(single), TileNames(-2, 3, -1, 2));

  std::map<std::string, std::string> joined;
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(absl::StrCat("shard ", i));
    const std::string dir = Temp(absl::StrCat("shard_", i));
    CommandResult shard =
        Scatter({"tiles", WorldJob(), area, absl::StrCat("--shard=", i, "/4"),
                 "--local", "--out=" + dir});
    ASSERT_EQ(shard.exit_code, 0) << shard.err;
    const auto files = Files(dir);
    EXPECT_GE(files.size(), 3u);
    EXPECT_LE(files.size(), 4u);
    for (const auto& [name, bytes] : files) {
      EXPECT_TRUE(joined.emplace(name, bytes).second)
          << name << " is in two shards";
    }
  }
  ASSERT_EQ(Keys(joined), Keys(single));
  for (const auto& [name, bytes] : single) {
    EXPECT_TRUE(joined.at(name) == bytes) << name << " differs in its shard";
  }
  // A retried shard rewrites the same bytes in place: a tile file spoiled
  // and one removed since the first try come back whole.
  const std::string dir = Temp("shard_2");
  const auto before = Files(dir);
  ASSERT_GE(before.size(), 2u);
  const std::string spoiled = before.begin()->first;
  const std::string removed = std::next(before.begin())->first;
  std::ofstream(dir + "/" + spoiled, std::ios::trunc) << "junk";
  ASSERT_EQ(std::remove((dir + "/" + removed).c_str()), 0);
  CommandResult retry = Scatter(
      {"tiles", WorldJob(), area, "--shard=2/4", "--local", "--out=" + dir});
  ASSERT_EQ(retry.exit_code, 0) << retry.err;
  const auto after = Files(dir);
  EXPECT_EQ(Keys(after), Keys(before));
  for (const auto& [name, bytes] : after) {
    EXPECT_TRUE(single.at(name) == bytes) << name;
  }
}

// More shards than tiles: some bands are empty, and an empty band is
// done at once, with no files, locally as against a server.
TEST(TilesCliTest, AnEmptyShardWritesNothingAndSucceeds) {
  Scatterd scatterd({});
  const std::string server = absl::StrCat("--server=127.0.0.1:", scatterd.port());
  for (const std::string& where : {std::string("--local"), server}) {
    SCOPED_TRACE(where);
    const std::string dir = Temp("empty_band" + std::to_string(where.size()));
    CommandResult shard = Scatter({"tiles", WorldJob(), "--tiles=0:2,0:1",
                                   "--shard=0/3", where, "--out=" + dir});
    EXPECT_EQ(shard.exit_code, 0) << shard.err;
    EXPECT_THAT(shard.err, HasSubstr("0 tiles, 0 points"));
    EXPECT_TRUE(Files(dir).empty());
  }
}

TEST(TilesCliTest, ErrorsAreOneLineAndNonZero) {
  const std::string world = WorldJob();
  const std::string out = "--out=" + Temp("errors");
  auto write = [](const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
    return path;
  };
  const std::string small_tile = write(
      Temp("small_tile.json"),
      R"({"world": {"tileSize": 5, "layers": [{"id": 1, "spacing": 1}]}})");
  const std::string empty = write(Temp("empty.json"), "{}");
  const std::string both = write(
      Temp("both.json"),
      R"({"request": {"layers": [{"spacing": 1}]}, "world": {"layers": [{"spacing": 1}]}})");
  // A raster by digest lives in a server's cache; --local has none.
  const std::string by_digest = write(
      Temp("by_digest.json"),
      absl::StrCat(R"({"world": {"layers": [{"id": 1, "radiusMin": 1,
                                             "radiusMax": 2, "density": {
                       "digest": ")",
                   std::string(64, 'a'), R"(", "x1": 10, "y1": 10}}]}})"));
  // The job's own list, as --tiles: one file, and the count said 3 tiles.
  const std::string listed_twice =
      write(Temp("listed_twice.json"),
            R"({"world": {"layers": [{"spacing": 1}], "tileSize": 20,
          "tiles": [{"x": 0, "y": 0}, {"x": 1}, {"x": 0, "y": 0}]}})");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"tiles", listed_twice, "--local", out},
       listed_twice + ": world.tiles[2]: tile 0,0 is listed twice (also as "
                      "world.tiles[0])"},
      {{"tiles", by_digest, "--tiles=0:1,0:1", "--local", out},
       "INVALID_ARGUMENT: layers[0].density.digest: a --local run has no "
       "raster cache"},
      {{"tiles", world, "--tiles=1:2", "--local", out},
       "--tiles: expected x0:x1,y0:y1"},
      {{"tiles", world, "--tiles=a,b", "--local", out}, "--tiles: expected"},
      // One file, and the count said 2 tiles.
      {{"tiles", world, "--tiles=0,0;1,0;0,0", "--local", out},
       "--tiles: tile 0,0 is listed twice in \"0,0;1,0;0,0\""},
      {{"tiles", world, "--local", out}, "--tiles: which tiles?"},
      {{"tiles", world, "--tiles=0,0", "--shard=0/2", "--local", out},
       "--shard: needs a rectangle"},
      {{"tiles", world, "--tiles=0:4,0:4", "--shard=4/4", "--local", out},
       "--shard: shard must be i/n with 0 <= i < n, got 4/4"},
      {{"tiles", world, "--tiles=0:4,0:4", "--shard=x", "--local", out},
       "--shard: expected i/n"},
      {{"tiles", world, "--tiles=0:100000,0:1000", "--local", out},
       "--tiles: 100000000 tiles, over 16777216 for one run"},
      // Tiles past the index range, or a rectangle over 2^31 tiles: no
      // shards or split reach them, so the hints to use --shard or more
      // shards led nowhere ("use more shards", then "over 2^31").
      {{"tiles", world, "--tiles=-9223372036854775808:9223372036854775807,0:9",
        "--shard=0/2", "--local", out},
       "--tiles: x0 must be in [-2^31, 2^31) (the tile index range), got "
       "-9223372036854775808"},
      {{"tiles", world, "--tiles=-4294967296:4294967296,0:1", "--local", out},
       "--tiles: x0 must be in [-2^31, 2^31) (the tile index range), got "
       "-4294967296"},
      {{"tiles", world, "--tiles=-4294967296:4294967296,0:1", "--shard=0/2000",
        "--local", out},
       "--tiles: x0 must be in [-2^31, 2^31) (the tile index range), got "
       "-4294967296"},
      // The list's tiles too: the server's own field name came back
      // ("tiles[0].x"), as a server error.
      {{"tiles", world, "--tiles=0,0;2147483648,0", "--local", out},
       "--tiles: tile 2147483648,0: x must be in [-2^31, 2^31) (the tile "
       "index range), got 2147483648"},
      {{"tiles", world, "--tiles=0,-2147483649", "--local", out},
       "--tiles: tile 0,-2147483649: y must be in [-2^31, 2^31)"},
      {{"tiles", world, "--tiles=0:1,0:2147483649", "--local", out},
       "--tiles: y1 must be in [-2^31, 2^31] (the tile index range), got "
       "2147483649"},
      {{"tiles", world, "--tiles=-2147483648:2147483648,0:2", "--local", out},
       "--tiles: tile rectangle holds 4294967296 x 2 tiles, over 2^31, "
       "however many shards share it: split it into rectangles of their own"},
      {{"tiles", world, "--tiles=-2147483648:2147483648,0:2",
        "--shard=0/100000", "--local", out},
       "--tiles: tile rectangle holds 4294967296 x 2 tiles, over 2^31"},
      // Under 2^31, more shards do help.
      {{"tiles", world, "--tiles=0:65536,0:32768", "--shard=0/2", "--local",
        out},
       "--shard: bands of up to 1073741824 tiles, over 16777216 for one run: "
       "use more shards"},
      // One band of 4097 x 4096 tiles: one row over the 2^24 a run takes.
      {{"tiles", world, "--tiles=0:4097,0:4096", "--shard=0/1", "--local", out},
       "--shard: bands of up to 16781312 tiles, over 16777216 for one run"},
      {{"tiles", world, "--tiles=0:1,0:1", "--local"},
       "--out: `scatter tiles` writes"},
      {{"tiles", world, "--tiles=1:0,0:1", "--local", out},
       "--tiles: x1 must be > x0 (half-open), got x0 = 1, x1 = 0"},
      {{"tiles", small_tile, "--tiles=0:1,0:1", "--local", out},
       "INVALID_ARGUMENT: tile_size: must be finite and in [10 * r_max, "
       "1e+150] = [10, 1e+150]"},
      {{"tiles", kExamples + "/three_layers.json", "--tiles=0:1,0:1", "--local",
        out},
       "no \"world\" to tile"},
      {{"run", kExamples + "/world_woodland.json", "--local"},
       "use `scatter tiles`"},
      // It was told "layers: at least one layer is required".
      {{"run", empty, "--local"}, empty + ": no \"request\" to run"},
      {{"tiles", both, "--tiles=0:1,0:1", "--local", out},
       "a request or a world, not both"},
      {{"tiles", world, "--tiles=0:1,0:1", "--server=127.0.0.1:1", out},
       "cannot reach scatterd at 127.0.0.1:1"},
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--out=/proc/nope"},
       "cannot create the directory /proc/nope"},
      // Taken and ignored: no report and no picture, and exit 0.
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--report", out},
       "--report: only `scatter run` reports; `scatter tiles` writes tile "
       "files"},
      {{"tiles", world, "--tiles=0:1,0:1", "--local",
        "--preview=" + Temp("tiles_preview.png"), out},
       "--preview: only `scatter run` draws a preview"},
      // Taken and ignored: a --local run makes no calls, and tiles draw
      // no picture.
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--tiles_per_call=10",
        out},
       "--tiles_per_call: only `scatter tiles` against a server takes it; a "
       "--local run serves every tile in one go"},
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--preview_size=300",
        out},
       "--preview_size: only `scatter run` draws a preview"},
      // Flags of a --local run: against a server they did nothing, while
      // scatterd has flags of the same names that size its own.
      {{"tiles", world, "--tiles=0:1,0:1", "--server=127.0.0.1:1",
        "--threads=8", out},
       "--threads: only `scatter tiles --local` takes it; against a server, "
       "scatterd's own --threads sets that"},
      {{"tiles", world, "--tiles=0:1,0:1", "--server=127.0.0.1:1",
        "--tile_cache_bytes=1000000", out},
       "--tile_cache_bytes: only `scatter tiles --local` takes it; against a "
       "server, scatterd's own --tile_cache_bytes sets that"},
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--threads=-3", out},
       "--threads: must be in [0, 1024] (0 = one per CPU the process may use), "
       "got -3"},
      // Tens of thousands of threads are more than the process can start:
      // std::thread threw and the run died of std::terminate.
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--threads=40000", out},
       "--threads: must be in [0, 1024] (0 = one per CPU the process may use), "
       "got 40000"},
      // A tile whose generators pass the budget names the flag, as
      // scatterd's error names its own; --local said only "the tile cache
      // budget of 1000 bytes".
      // (2000: under 1024 is refused before any tile.)
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--tile_cache_bytes=2000",
        out},
       "RESOURCE_EXHAUSTED: tile (0, 0): the generators it needs"},
      {{"tiles", world, "--tiles=0:1,0:1", "--local", "--tile_cache_bytes=2000",
        out},
       "over the tile cache budget (--tile_cache_bytes) of 2000 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.args[0], " ", c.args[1], " ",
                              c.args.size() > 2 ? c.args[2] : ""));
    CommandResult result = Scatter(c.args);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_THAT(result.err, HasSubstr(c.message));
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
        << result.err;
  }
}

// An empty rectangle is named by where it came from (the flag, or the
// job's world.rect), not by the request field the server would name, and
// is refused before the output directory is made.
// A process whose address space cannot hold the stacks of --threads
// threads: std::thread threw while some workers ran, and the run died of
// std::terminate instead of saying why.
TEST(TilesCliTest, ThreadsTheSystemCannotStartAreRefusedNamingTheFlag) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers reserve more address space than the limit";
#endif
  // 1 GiB of address space: 1023 stacks of 8 MiB do not fit.
  const CommandResult got = server::testing::RunCommand(
      {"/bin/sh", "-c",
       "ulimit -s 8192 && ulimit -v 1048576 && "
       "exec \"$0\" \"$@\"",
       SCATTER_PATH, "tiles", WorldJob(), "--tiles=0:1,0:1", "--local",
       "--threads=1024", "--out=" + Temp("no_threads")});
  EXPECT_EQ(got.exit_code, 1) << got.err;
  EXPECT_THAT(got.err, HasSubstr("RESOURCE_EXHAUSTED: --threads=1024: cannot "
                                 "start 1023 worker threads ("));
  EXPECT_EQ(std::count(got.err.begin(), got.err.end(), '\n'), 1) << got.err;
}

// scatterd refuses a --tile_cache_bytes under 1024 at start; a --local
// run took it, made the output directory and failed on the first tile
// ("RESOURCE_EXHAUSTED: tile (0, 0): ... over the tile cache budget
// (--tile_cache_bytes) of 0 bytes").
TEST(TilesCliTest, ATileCacheUnder1024IsRefusedAtTheStartNamingTheFlag) {
  for (const std::string bytes : {"0", "1023"}) {
    SCOPED_TRACE(bytes);
    const std::string out = Temp("no_cache_" + bytes);
    const CommandResult got =
        Scatter({"tiles", WorldJob(), "--tiles=0:1,0:1", "--local",
                 "--tile_cache_bytes=" + bytes, "--out=" + out});
    EXPECT_EQ(got.exit_code, 1) << got.err;
    EXPECT_EQ(got.err,
              "scatter: --tile_cache_bytes: must be >= 1024 (the run keeps "
              "the tile generators it reads within it; there is no running "
              "without it), got " +
                  bytes + "\n");
    EXPECT_FALSE(std::filesystem::exists(out)) << out;
  }
  // The least it takes runs (and refuses the tile for its budget).
  const CommandResult least =
      Scatter({"tiles", WorldJob(), "--tiles=0:1,0:1", "--local",
               "--tile_cache_bytes=1024", "--out=" + Temp("least_cache")});
  EXPECT_THAT(least.err, HasSubstr("over the tile cache budget "
                                   "(--tile_cache_bytes) of 1024 bytes"));
}

TEST(TilesCliTest, AnEmptyRectangleIsRefusedBeforeAnythingIsMade) {
  Scatterd scatterd({});
  const std::string server =
      absl::StrCat("--server=127.0.0.1:", scatterd.port());
  const std::string world = WorldJob();
  const std::string own_rect = Temp("empty_rect.json");
  std::ofstream(own_rect) << R"({"world": {"tileSize": 12,
      "layers": [{"id": 4, "spacing": 1}],
      "rect": {"x0": "0", "x1": "3", "y0": "5", "y1": "5"}}})";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{world, "--tiles=2:0,0:2", "--local"},
       "--tiles: x1 must be > x0 (half-open), got x0 = 2, x1 = 0"},
      {{world, "--tiles=2:0,0:2", server},
       "--tiles: x1 must be > x0 (half-open), got x0 = 2, x1 = 0"},
      {{world, "--tiles=0:2,3:3", "--local"},
       "--tiles: y1 must be > y0 (half-open), got y0 = 3, y1 = 3"},
      {{world, "--tiles=2:0,0:2", "--shard=0/2", "--local"},
       "--tiles: x1 must be > x0 (half-open), got x0 = 2, x1 = 0"},
      {{own_rect, "--local"},
       own_rect + ": world.rect: y1 must be > y0 (half-open), got y0 = 5, "
                  "y1 = 5"},
  };
  int n = 0;
  for (Case c : cases) {
    SCOPED_TRACE(absl::StrJoin(c.args, " "));
    const std::string dir = Temp(absl::StrCat("empty_rect_", n++));
    c.args.insert(c.args.begin(), "tiles");
    c.args.push_back("--out=" + dir);
    const CommandResult result = Scatter(c.args);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_EQ(result.err, absl::StrCat("scatter: ", c.message, "\n"));
    EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " was made";
  }
}

TEST(TilesCliTest, TheJobsOwnTilesServeWithoutTheFlag) {
  const std::string job = Temp("own_tiles.json");
  std::ofstream(job) << R"({"world": {"seed": "3", "tileSize": 12,
      "layers": [{"id": 4, "spacing": 1}], "tiles": [{"x": "2", "y": "-5"}]}})";
  const std::string dir = Temp("own_tiles");
  CommandResult run = Scatter({"tiles", job, "--local", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Keys(Files(dir)), std::set<std::string>{"tile_2_-5.csv"});
}

// A world with both its own tiles and its own rect is refused the same
// way however it is run. --local refused it, but --shard (and calls split
// against a server) turned the rect into a list added to the tiles, so
// every shard exported the listed tiles too: tiles in two shards.
TEST(TilesCliTest, AWorldWithTilesAndARectIsRefusedShardedOrNot) {
  Scatterd scatterd({});
  const std::string server =
      absl::StrCat("--server=127.0.0.1:", scatterd.port());
  const std::string job = Temp("tiles_and_rect.json");
  std::ofstream(job) << R"({"world": {"seed": "3", "tileSize": 12,
      "layers": [{"id": 4, "spacing": 1}],
      "tiles": [{"x": "2", "y": "-5"}],
      "rect": {"x0": "0", "x1": "2", "y0": "0", "y1": "2"}}})";
  int n = 0;
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--local"},
        {"--local", "--shard=0/1"},
        {"--local", "--shard=1/2"},
        {server},
        {server, "--shard=0/2"},
        {server, "--tiles_per_call=1"}}) {
    SCOPED_TRACE(absl::StrJoin(flags, " "));
    const std::string dir = Temp(absl::StrCat("tiles_and_rect_", n++));
    std::vector<std::string> args = {"tiles", job, "--out=" + dir};
    args.insert(args.end(), flags.begin(), flags.end());
    const CommandResult result = Scatter(args);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.err,
              absl::StrCat("scatter: ", job,
                           ": world: give tiles or rect, not both\n"));
    EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " was made";
  }
  // --tiles replaces both: the shards of its rectangle are the tiles once.
  std::set<std::string> joined;
  for (int i = 0; i < 2; ++i) {
    const std::string dir = Temp(absl::StrCat("tiles_and_rect_flag_", i));
    const CommandResult shard =
        Scatter({"tiles", job, "--tiles=0:3,0:1", "--local",
                 absl::StrCat("--shard=", i, "/2"), "--out=" + dir});
    ASSERT_EQ(shard.exit_code, 0) << shard.err;
    for (const std::string& name : Keys(Files(dir))) {
      EXPECT_TRUE(joined.insert(name).second) << name << " is in two shards";
    }
  }
  EXPECT_EQ(joined, TileNames(0, 3, 0, 1));
}

// A --local world too big to plan names what a --local run keeps, not
// the library's max_planned_points, which no flag sets (found by a review
// helper).
TEST(TilesCliTest, ALocalPlanTooBigNamesNoLimitTheUserCannotSet) {
  const std::string job = Temp("huge_tile.json");
  std::ofstream(job) << R"({"world": {"seed": "1", "tileSize": 1e10,
      "layers": [{"id": 1, "spacing": 1}], "tiles": [{"x": "0", "y": "0"}]}})";
  const CommandResult run =
      Scatter({"tiles", job, "--local", "--out=" + Temp("huge_tile_out")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("over the most points a --local run plans "
                                 "for one tile's generators, "));
  EXPECT_THAT(run.err, Not(HasSubstr("max_planned_points")));
}

// A call whose tiles could hold more points than the server's max_points
// is refused before any tile; the message now says how to get under it.
TEST(TilesCliTest, ACallTooBigForTheServerSaysToAskForFewerTilesPerCall) {
  // A tile could hold about 160 points, and the generators one tile needs
  // fewer than 40000: 256 tiles are too many for one call, 16 are not.
  Scatterd scatterd({"--max_points=40000"});
  ASSERT_GT(scatterd.port(), 0);
  const std::string server =
      absl::StrCat("--server=127.0.0.1:", scatterd.port());
  // A one-layer world of spacing 1 and this tile side, in a job file.
  auto world = [](int tile_size) {
    const std::string job =
        Temp(absl::StrCat("one_layer_", tile_size, ".json"));
    std::ofstream(job) << R"({"world": {"seed": "5", "tileSize": )" << tile_size
                       << R"(, "layers": [{"id": 1, "spacing": 1}]}})";
    return job;
  };
  const std::string job = world(16);
  const CommandResult big = Scatter({"tiles", job, "--tiles=-8:8,-8:8", server,
                                     "--out=" + Temp("too_big_call")});
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_THAT(big.err, HasSubstr("RESOURCE_EXHAUSTED: the tiles could hold "));
  EXPECT_THAT(big.err, HasSubstr("over the limit max_points = 40000"));
  EXPECT_THAT(big.err, HasSubstr("; this call asked for 256 tiles: ask for "
                                 "fewer a call with --tiles_per_call"));
  EXPECT_EQ(std::count(big.err.begin(), big.err.end(), '\n'), 1) << big.err;

  const std::string dir = Temp("small_calls");
  const CommandResult small =
      Scatter({"tiles", job, "--tiles=-8:8,-8:8", server, "--tiles_per_call=16",
               "--out=" + dir});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(Keys(Files(dir)), TileNames(-8, 8, -8, 8));

  // One tile alone over the limit (tiles of 1024, some 1.2 M points):
  // fewer tiles a call cannot help, and the message does not say they
  // would.
  const CommandResult one = Scatter({"tiles", world(1024), "--tiles=0:2,0:1",
                                     server, "--out=" + Temp("one_too_big")});
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_THAT(one.err, HasSubstr("(the first 1 of the 2 tiles alone"));
  EXPECT_THAT(one.err, Not(HasSubstr("--tiles_per_call")));
}

// scatterd's --max_tiles_per_request under --tiles_per_call refused every
// call, and the message said which limit but not which flag gets under it.
TEST(TilesCliTest, ACallOverTheServersTileLimitSaysWhichTilesPerCallFits) {
  Scatterd scatterd({"--max_tiles_per_request=3"});
  ASSERT_GT(scatterd.port(), 0);
  const std::string server =
      absl::StrCat("--server=127.0.0.1:", scatterd.port());
  const std::string job = Temp("tile_limit.json");
  std::ofstream(job) << R"({"world": {"seed": "5", "tileSize": 16,
      "layers": [{"id": 1, "spacing": 1}]}})";
  for (const std::string tiles :
       {"--tiles=0:4,0:4", "--tiles=0,0;1,0;2,0;3,0"}) {
    SCOPED_TRACE(tiles);
    const CommandResult big = Scatter(
        {"tiles", job, tiles, server, "--out=" + Temp("over_tile_limit")});
    EXPECT_EQ(big.exit_code, 1);
    EXPECT_THAT(big.err, HasSubstr("over the limit max_tiles_per_request = 3; "
                                   "this call asked for "));
    EXPECT_THAT(
        big.err,
        HasSubstr(" tiles: ask for fewer a call with --tiles_per_call=3"));
    EXPECT_EQ(std::count(big.err.begin(), big.err.end(), '\n'), 1) << big.err;
  }
  const std::string dir = Temp("under_tile_limit");
  const CommandResult fits = Scatter({"tiles", job, "--tiles=0:4,0:4", server,
                                      "--tiles_per_call=3", "--out=" + dir});
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(Keys(Files(dir)), TileNames(0, 4, 0, 4));
}

// An export of several calls that fails in a later one says what all the
// calls wrote, not only the server's count for the failing call ("after 0
// tiles (0 points) sent" while 10 whole tiles were on disk).
TEST(TilesCliTest, ALaterCallsFailureSaysWhatTheExportWrote) {
  Scatterd scatterd({"--grace_period=0s"});
  ASSERT_GT(scatterd.port(), 0);
  const std::string dir = Temp("later_call");
  const std::string err = Temp("later_call.err");
  std::vector<std::string> args = {
      SCATTER_PATH,
      "tiles",
      kExamples + "/world_woodland.json",
      "--tiles=0:20,0:20",
      "--tiles_per_call=4",
      absl::StrCat("--server=127.0.0.1:", scatterd.port()),
      "--out=" + dir};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ),
            0);
  posix_spawn_file_actions_destroy(&actions);
  // Until the first calls' tiles are written.
  auto tiles = [&] {
    std::size_t n = 0;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      n += entry.path().filename().string().rfind("tile_", 0) == 0;
    }
    return n;
  };
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  while (tiles() < 8 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  scatterd.Signal(SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  const std::string message = Slurp(err);
  const std::size_t written = Files(dir).size();
  EXPECT_GE(written, 8u);
  EXPECT_THAT(message,
              HasSubstr(absl::StrCat("(in this call; ", written, " tiles, ")));
  EXPECT_THAT(message, HasSubstr(" points written in all)"));
}

// A raster file that two layers read (the woodland's density) was read
// and uploaded twice a run; the README says rasters are uploaded once.
TEST(TilesCliTest, ARasterFileOfTwoLayersIsUploadedOnce) {
  const std::string log = Temp("upload_once.log");
  Scatterd scatterd({}, log);
  ASSERT_GT(scatterd.port(), 0);
  const std::string dir = Temp("upload_once");
  const CommandResult run = Scatter(
      {"tiles", kExamples + "/world_woodland.json", "--tiles=0,0",
       absl::StrCat("--server=127.0.0.1:", scatterd.port()), "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Keys(Files(dir)), TileNames(0, 1, 0, 1));
  scatterd.Signal(SIGTERM);
  scatterd.Wait();
  const std::string text = Slurp(log);
  std::size_t uploads = 0;
  for (std::size_t at = text.find("PutRaster peer="); at != std::string::npos;
       at = text.find("PutRaster peer=", at + 1)) {
    ++uploads;
  }
  EXPECT_EQ(uploads, 1u) << text;
  EXPECT_THAT(text, HasSubstr("PutRaster peer="));
}

// A run refused before its first tile (here an algorithm_version no build
// has) made the output directory and its parents anyway, and left them.
TEST(TilesCliTest, ARefusedRunLeavesNoOutputDirectoryBehind) {
  Scatterd scatterd({});
  ASSERT_GT(scatterd.port(), 0);
  const std::string job = Temp("version_99.json");
  std::ofstream(job) << R"({"world": {"algorithmVersion": 99, "tileSize": 16,
      "layers": [{"id": 1, "spacing": 1}]}})";
  const std::string top = Temp("refused");
  const std::string out = top + "/a/b";
  for (const std::string& where :
       {std::string("--local"),
        absl::StrCat("--server=127.0.0.1:", scatterd.port())}) {
    SCOPED_TRACE(where);
    const CommandResult run =
        Scatter({"tiles", job, "--tiles=0:2,0:2", where, "--out=" + out});
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_THAT(run.err, HasSubstr("99"));
    EXPECT_FALSE(std::filesystem::exists(top)) << top << " was left";
  }
  // A directory that was there stays, with what it held.
  std::filesystem::create_directories(top);
  std::ofstream(top + "/keep.txt") << "mine";
  const CommandResult run =
      Scatter({"tiles", job, "--tiles=0:2,0:2", "--local", "--out=" + top});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Slurp(top + "/keep.txt"), "mine");
  // An accepted run makes it.
  const std::string made = Temp("accepted") + "/tiles";
  const CommandResult accepted =
      Scatter({"tiles", WorldJob(), "--tiles=0,0", "--local", "--out=" + made});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_EQ(Keys(Files(made)), TileNames(0, 1, 0, 1));
}

TEST(TilesCliTest, WoodlandExampleExportsATileOfItsWorld) {
  const std::string dir = Temp("woodland");
  // Its own rect is 8 x 8 tiles of 96 m; one of them here, to stay quick.
  CommandResult run =
      Scatter({"tiles", kExamples + "/world_woodland.json", "--tiles=1,0",
               "--local", "--format=ply", "--out=" + dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Keys(Files(dir)), TileNames(1, 2, 0, 1, "ply"));
  auto points = ReadPoints(Format::kPly, dir + "/tile_1_0.ply");
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_GT(points->id_size(), 500);
  std::set<std::uint32_t> layers(points->layer().begin(),
                                 points->layer().end());
  EXPECT_EQ(layers, (std::set<std::uint32_t>{1, 2}));
}

}  // namespace
}  // namespace scatter::client
