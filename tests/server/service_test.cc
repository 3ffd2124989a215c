// The Scatter service end to end: in-process and over loopback TCP.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "sampler/quality.h"
#include "sampler/region.h"
#include "sampler/version.h"
#include "server/convert.h"
#include "server/raster_cache.h"
#include "tests/server/service_test_util.h"

namespace scatter::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

void ExpectMinDistance(const Received& got, double spacing) {
  auto report = sampler::CheckMinDistance(got.coords, got.dims, spacing);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_GE(report->min_ratio, 1.0);
}

// ~1 M points: dense packing gives about 0.87 / r^2 per unit area.
constexpr double kMillionSpacing = 0.00093;

TEST(ServiceTest, MillionPointsArriveCompleteInProcessAndOverTcp) {
  LoopbackServer server;
  for (const bool tcp : {false, true}) {
    SCOPED_TRACE(tcp ? "tcp" : "in-process");
    auto stub = tcp ? server.TcpStub() : server.InProcessStub();
    const Received got = Collect(*stub, BoxRequest(1, kMillionSpacing));
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_GT(got.size(), 950'000u);
    ASSERT_TRUE(got.has_summary);
    EXPECT_EQ(got.summary.total_points(), got.size());
    ASSERT_EQ(got.summary.layers_size(), 1);
    EXPECT_EQ(got.summary.layers(0).points(), got.size());
    EXPECT_EQ(got.summary.algorithm_version(), sampler::kAlgorithmVersion);
    EXPECT_EQ(got.coords.size(), 2 * got.size());
    EXPECT_EQ(got.radius.size(), got.size());
    EXPECT_EQ(got.layer.size(), got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(got.coords[2 * i] >= 0 && got.coords[2 * i] < 1 &&
                  got.coords[2 * i + 1] >= 0 && got.coords[2 * i + 1] < 1);
      ASSERT_EQ(got.radius[i], kMillionSpacing);
      ASSERT_EQ(got.layer[i], 1u);
    }
    ExpectMinDistance(got, kMillionSpacing);
  }
}

TEST(ServiceTest, SameRequestSamePointsOnBothTransports) {
  LoopbackServer server;
  const auto request = BoxRequest(10, 0.1, 42);
  const Received a = Collect(*server.InProcessStub(), request);
  const Received b = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(a.status.ok() && b.status.ok());
  EXPECT_EQ(a.coords, b.coords);
  EXPECT_EQ(a.id, b.id);
  const Received c = Collect(*server.TcpStub(), BoxRequest(10, 0.1, 43));
  EXPECT_NE(a.coords, c.coords);
}

TEST(ServiceTest, LayersRegionsAndFieldsTravel) {
  LoopbackServer server;
  v1::ScatterRequest request;
  request.set_seed(3);
  v1::Polygons* polygons = request.mutable_region()->mutable_polygons();
  // A 100 m square with a 40 m square lake.
  v1::Ring* outer = polygons->add_rings();
  for (double v : {0, 0, 100, 0, 100, 100, 0, 100}) outer->add_xy(v);
  v1::Ring* lake = polygons->add_rings();
  for (double v : {30, 30, 70, 30, 70, 70, 30, 70}) lake->add_xy(v);
  v1::Layer* trees = request.add_layers();
  trees->set_id(10);
  trees->set_spacing(8);
  trees->set_footprint(2);
  v1::Layer* grass = request.add_layers();
  grass->set_id(20);
  grass->set_spacing(1);
  grass->set_footprint(0.2);
  request.mutable_fields()->set_omit_yaw(true);
  const Received got = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_EQ(got.summary.layers_size(), 2);
  EXPECT_EQ(got.summary.layers(0).layer(), 10u);  // Larger spacing first.
  EXPECT_GT(got.summary.layers(0).points(), 50u);
  EXPECT_GT(got.summary.layers(1).points(), 5000u);
  EXPECT_TRUE(got.yaw.empty());
  EXPECT_EQ(got.scale.size(), got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double x = got.coords[2 * i], y = got.coords[2 * i + 1];
    ASSERT_FALSE(x > 30 && x < 70 && y > 30 && y < 70) << "in the lake";
    if (got.layer[i] == 20) continue;
    for (std::size_t j = 0; j < got.size(); ++j) {
      if (got.layer[j] != 20) continue;
      const double dx = got.coords[2 * j] - x, dy = got.coords[2 * j + 1] - y;
      ASSERT_GE(dx * dx + dy * dy, 2.2 * 2.2) << "grass in a trunk";
    }
  }
}

// Obstacle.z is "ignored in 2D", as the proto says: any value, NaN too,
// gives the points of z = 0. It was refused ("obstacles[0]: coordinates
// must be finite").
TEST(ServiceTest, AnObstaclesZIsIgnoredIn2D) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  v1::ScatterRequest request = BoxRequest(10, 0.5);
  v1::Obstacle* obstacle = request.add_obstacles();
  obstacle->set_x(5);
  obstacle->set_y(5);
  obstacle->set_radius(2);
  const Received flat = Collect(*stub, request);
  ASSERT_TRUE(flat.status.ok()) << flat.status.error_message();
  for (double z : {double{NAN}, double{INFINITY}, -3.0}) {
    SCOPED_TRACE(z);
    request.mutable_obstacles(0)->set_z(z);
    const Received got = Collect(*stub, request);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_EQ(got.coords, flat.coords);
  }
}

// A spline's default tolerance is 1/100 of the request's smallest length:
// a jittered grid's cell_size is one. It counted only Poisson spacings and
// fell back to 1, so a spline 0.01 wide under a grid of cell 1e-4 was
// flattened to the square through its control points.
TEST(ServiceTest, ASplineIsFlattenedAtItsJitteredGridsScale) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  std::vector<std::size_t> counts;
  for (double scale : {1.0, 0.01}) {
    SCOPED_TRACE(scale);
    v1::ScatterRequest request;
    request.set_seed(5);
    v1::Spline* spline =
        request.mutable_region()->mutable_polygons()->add_splines();
    for (double v : {0, 0, 1, 0, 1, 1, 0, 1}) spline->add_xy(v * scale);
    v1::Layer* layer = request.add_layers();
    layer->set_method(v1::METHOD_JITTERED_GRID);
    layer->set_cell_size(scale / 100);
    const Received got = Collect(*stub, request);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    counts.push_back(got.size());
  }
  // The same shape at both scales, in cells of the same share of it: the
  // Catmull-Rom curve bulges past the square (10 000 cells) by about a
  // third.
  EXPECT_GT(counts[0], 12'000u);
  EXPECT_NEAR(static_cast<double>(counts[1]), static_cast<double>(counts[0]),
              0.01 * static_cast<double>(counts[0]));
}

// With a density raster a layer's `spacing` is ignored, as the proto says;
// the default spline tolerance still took 1/100 of it, and a leftover
// spacing of 1e-9 failed the request (a spline flattened within 1e-11
// needs more than max_polygon_vertices).
TEST(ServiceTest, ADensityLayersIgnoredSpacingLeavesTheSplineAlone) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  v1::ScatterRequest request;
  request.set_seed(2);
  v1::Spline* spline =
      request.mutable_region()->mutable_polygons()->add_splines();
  for (double v : {0, 0, 100, 0, 100, 100, 0, 100}) spline->add_xy(v);
  v1::Layer* layer = request.add_layers();
  layer->set_radius_min(1);
  layer->set_radius_max(2);
  SetU8Raster(layer->mutable_density(), 1, 1, "\x80", 100, 100);
  const Received without = Collect(*stub, request);
  ASSERT_TRUE(without.status.ok()) << without.status.error_message();
  layer->set_spacing(1e-9);
  const Received with = Collect(*stub, request);
  ASSERT_TRUE(with.status.ok()) << with.status.error_message();
  EXPECT_GT(with.size(), 1000u);
  EXPECT_EQ(with.coords, without.coords);
}

// At debug level the log says what each call holds against the memory
// budget; at info (the default) it does not.
TEST(ServiceTest, DebugLogSaysWhatACallHolds) {
  for (const auto level : {spdlog::level::debug, spdlog::level::info}) {
    LoopbackServer server(LoopbackServer::DefaultOptions(), level);
    const Received got = Collect(*server.TcpStub(), BoxRequest(1, 0.05));
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    const std::string log = server.log();
    const bool said =
        log.find("admitted: the request holds about ") != std::string::npos;
    EXPECT_EQ(said, level == spdlog::level::debug) << log;
  }
}

// Each Fields option leaves out its array, and only it: the others carry
// one value a point, the same values as with every array sent.
TEST(ServiceTest, FieldsOmitExactlyTheArraysAsked) {
  LoopbackServer server;
  v1::ScatterRequest request = BoxRequest(20, 1);
  request.mutable_layers(0)->set_scale_min(0.5);
  request.mutable_layers(0)->set_scale_max(2);
  const Received all = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(all.status.ok()) << all.status.error_message();
  const std::size_t n = all.size();
  ASSERT_GT(n, 200u);
  ASSERT_EQ(all.radius.size(), n);
  ASSERT_EQ(all.layer.size(), n);
  ASSERT_EQ(all.id.size(), n);
  ASSERT_EQ(all.yaw.size(), n);
  ASSERT_EQ(all.scale.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_GE(all.yaw[i], 0);
    ASSERT_LT(all.yaw[i], 2 * std::acos(-1.0));
    ASSERT_GE(all.scale[i], 0.5);
    ASSERT_LE(all.scale[i], 2);
  }
  // Spread over the range, not one end of it (a server that sent
  // scale_min as both ends passed the bounds above).
  EXPECT_LT(*std::min_element(all.scale.begin(), all.scale.end()), 0.6);
  EXPECT_GT(*std::max_element(all.scale.begin(), all.scale.end()), 1.9);
  for (int omit = 0; omit < 5; ++omit) {
    SCOPED_TRACE(absl::StrCat("omitting field ", omit));
    v1::ScatterRequest r = request;
    v1::Fields* fields = r.mutable_fields();
    fields->set_omit_radius(omit == 0);
    fields->set_omit_layer(omit == 1);
    fields->set_omit_id(omit == 2);
    fields->set_omit_yaw(omit == 3);
    fields->set_omit_scale(omit == 4);
    const Received got = Collect(*server.TcpStub(), r);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_EQ(got.coords, all.coords);
    EXPECT_EQ(got.radius, omit == 0 ? std::vector<double>{} : all.radius);
    EXPECT_EQ(got.layer, omit == 1 ? std::vector<std::uint32_t>{} : all.layer);
    EXPECT_EQ(got.id, omit == 2 ? std::vector<std::uint64_t>{} : all.id);
    EXPECT_EQ(got.yaw, omit == 3 ? std::vector<double>{} : all.yaw);
    EXPECT_EQ(got.scale, omit == 4 ? std::vector<double>{} : all.scale);
  }
}

TEST(ServiceTest, DensityRasterGivesVariableRadius) {
  LoopbackServer server;
  v1::ScatterRequest request = BoxRequest(10, 0);
  v1::Layer* layer = request.mutable_layers(0);
  layer->clear_spacing();
  layer->set_radius_min(0.05);
  layer->set_radius_max(0.2);
  // 2 x 1 pixels: dark west half, bright east half.
  SetU8Raster(layer->mutable_density(), 2, 1, std::string("\x00\xff", 2), 10,
              10);
  const Received got = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  std::size_t west = 0, east = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double x = got.coords[2 * i];
    ASSERT_GE(got.radius[i], 0.05);
    ASSERT_LE(got.radius[i], 0.2);
    // Pixel centres at x = 2.5 and 7.5; clamped beyond them.
    if (x < 2.5) {
      ASSERT_EQ(got.radius[i], 0.2);
      ++west;
    } else if (x > 7.5) {
      ASSERT_EQ(got.radius[i], 0.05);
      ++east;
    }
  }
  // Points per area go as 1 / r^2: 16 times as many in the bright strip.
  EXPECT_NEAR(static_cast<double>(east) / static_cast<double>(west), 16, 3);
  // Exact minimum distance with the larger radius of each pair.
  auto report = sampler::CheckMinDistanceVariable(got.coords, got.radius, 2);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
}

struct BadCase {
  const char* name;
  void (*edit)(v1::ScatterRequest*);
  grpc::StatusCode code;
  const char* message;  // A substring the status must carry.
};

// The 64 x 64 box at 2^50, where doubles are 0.25 apart, and layer 0 of
// `method` with no spacing.
void FarBoxLayer(v1::ScatterRequest* r, v1::Method method) {
  v1::Box* box = r->mutable_region()->mutable_box();
  for (int a = 0; a < 2; ++a) {
    box->set_min(a, std::ldexp(1.0, 50));
    box->set_max(a, std::ldexp(1.0, 50) + 64);
  }
  r->mutable_layers(0)->clear_spacing();
  r->mutable_layers(0)->set_method(method);
}

const BadCase kBadCases[] = {
    {"no layers", [](v1::ScatterRequest* r) { r->clear_layers(); },
     grpc::StatusCode::INVALID_ARGUMENT, "layers: at least one layer"},
    {"negative spacing",
     [](v1::ScatterRequest* r) { r->mutable_layers(0)->set_spacing(-1); },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].spacing"},
    {"NaN spacing",
     [](v1::ScatterRequest* r) { r->mutable_layers(0)->set_spacing(NAN); },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].spacing"},
    // Squared, it would be inf: every pair cleared it, and a run in a box
    // of 1e200 streamed points without end.
    {"huge spacing",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->mutable_box()->set_max(0, 1e200);
       r->mutable_region()->mutable_box()->set_max(1, 1e200);
       r->mutable_layers(0)->set_spacing(1e199);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].spacing: must be in [1e-150, 1e+150] (distances are compared "
     "squared), got 1e+199"},
    {"tiny radius_max",
     [](v1::ScatterRequest* r) {
       auto* density = r->mutable_layers(0)->mutable_density();
       density->set_digest(std::string(64, 'b'));
       r->mutable_layers(0)->set_radius_min(1e-160);
       r->mutable_layers(0)->set_radius_max(1e-155);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].radius_min: must be in"},
    // Area and density both overflow; their ratio does not. The estimate
    // once read "nan points".
    {"huge box and spacing",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->mutable_box()->set_max(0, 1e200);
       r->mutable_region()->mutable_box()->set_max(1, 1e200);
       r->mutable_layers(0)->set_spacing(1e150);
     },
     grpc::StatusCode::RESOURCE_EXHAUSTED,
     "the request could make 1.1547e+100 points"},
    // Checked only with a raster, they were dropped without one (found
    // by a review helper).
    {"radius bounds without a density raster",
     [](v1::ScatterRequest* r) {
       r->mutable_layers(0)->set_radius_min(3);
       r->mutable_layers(0)->set_radius_max(2);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].radius_min: bounds a variable radius, which needs a density "
     "raster (layers[0].density); a constant one is layers[0].spacing"},
    // Out of range, it set the spline's default tolerance first: the
    // request was refused for needing too many vertices (found by a
    // review helper).
    {"tiny spacing with a spline region",
     [](v1::ScatterRequest* r) {
       v1::Spline* spline =
           r->mutable_region()->mutable_polygons()->add_splines();
       for (double v : {0.0, 0.0, 10.0, 0.0, 10.0, 10.0, 0.0, 10.0}) {
         spline->add_xy(v);
       }
       r->mutable_layers(0)->set_spacing(1e-300);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].spacing: must be in"},
    // At 2^50 doubles are 0.25 apart: a cell of 0.5 holds four places,
    // and 16 384 uniform points in 64 x 64 took 14 516 (found by a review
    // helper). Refused as a spacing that small is.
    {"jittered cells finer than the coordinates",
     [](v1::ScatterRequest* r) {
       FarBoxLayer(r, v1::METHOD_JITTERED_GRID);
       r->mutable_layers(0)->set_cell_size(0.5);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].cell_size: must be at least 256 in this region"},
    {"uniform points finer than the coordinates",
     [](v1::ScatterRequest* r) {
       FarBoxLayer(r, v1::METHOD_UNIFORM);
       r->mutable_layers(0)->set_count(16384);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].count: gives a mean spacing of 0.5 in this region, where "
     "doubles are 0.25 apart"},
    {"mask threshold NaN without a mask",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->set_mask_threshold(NAN);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.mask_threshold: must be in [0, 1], got nan"},
    {"too many attempts",
     [](v1::ScatterRequest* r) {
       r->mutable_layers(0)->set_max_attempts(5000);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].max_attempts"},
    {"repeated layer id",
     [](v1::ScatterRequest* r) { *r->add_layers() = r->layers(0); },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[1].id"},
    {"density without radius_min",
     [](v1::ScatterRequest* r) {
       auto* density = r->mutable_layers(0)->mutable_density();
       density->set_digest(std::string(64, 'b'));
       r->mutable_layers(0)->set_radius_max(1);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].radius_min"},
    {"density on a jittered grid",
     [](v1::ScatterRequest* r) {
       r->mutable_layers(0)->set_method(v1::METHOD_JITTERED_GRID);
       r->mutable_layers(0)->set_cell_size(0.1);
       r->mutable_layers(0)->mutable_density()->set_digest(std::string(64, 'b'));
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].density: variable radius needs"},
    // Half a cell is the default footprint, which squared overflowed: the
    // error named `footprint` (which the request never set), without the
    // layer's path, and only once the run had started.
    {"huge jittered cell",
     [](v1::ScatterRequest* r) {
       r->mutable_layers(0)->set_method(v1::METHOD_JITTERED_GRID);
       r->mutable_layers(0)->set_cell_size(1e300);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].cell_size: must be > 0 and at most 2e+150"},
    // Doubles there are 0.125 apart, so a spacing under 128 cannot be
    // sampled; the sampler's refusal named its own `radius`.
    {"far region",
     [](v1::ScatterRequest* r) {
       for (int a = 0; a < 2; ++a) {
         r->mutable_region()->mutable_box()->set_min(a, 1e15);
         r->mutable_region()->mutable_box()->set_max(a, 1e15 + 100);
       }
       r->mutable_layers(0)->set_spacing(1);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].spacing: must be at least 128 in this region"},
    {"no region", [](v1::ScatterRequest* r) { r->clear_region(); },
     grpc::StatusCode::INVALID_ARGUMENT, "region: needs one of"},
    // A mask alone: the message said only that a shape was missing.
    {"mask without a shape",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->clear_box();
       r->mutable_region()->mutable_mask()->set_digest(std::string(64, 'c'));
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region: needs one of box, circle, sphere or polygons for its mask to "
     "lie on: give a box around the mask's world rectangle"},
    {"inverted box",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->mutable_box()->set_max(0, -1);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "region.box"},
    {"box of 1 value",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->mutable_box()->mutable_min()->RemoveLast();
     },
     grpc::StatusCode::INVALID_ARGUMENT, "region.box.min"},
    {"circle radius 0",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->mutable_circle()->set_radius(0);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "region.circle"},
    // Splines alone are a region: "rings must hold at least one ring" sent
    // the user to add a ring.
    {"polygons with neither rings nor splines",
     [](v1::ScatterRequest* r) { r->mutable_region()->mutable_polygons(); },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons: rings or splines must hold at least one outline"},
    {"odd ring",
     [](v1::ScatterRequest* r) {
       auto* ring = r->mutable_region()->mutable_polygons()->add_rings();
       for (double v : {0, 0, 1, 0, 1}) ring->add_xy(v);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "region.polygons.rings[0].xy"},
    // Named by the value's index in xy: "rings[0][2]" (a vertex) read as
    // xy[2], and a spline said "points[2]", a field it does not have.
    {"ring with a NaN coordinate",
     [](v1::ScatterRequest* r) {
       auto* ring = r->mutable_region()->mutable_polygons()->add_rings();
       for (double v : {0.0, 0.0, 1.0, 0.0, double{NAN}, 1.0}) ring->add_xy(v);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.rings[0].xy[4]: must be finite, got nan"},
    {"spline with an infinite coordinate",
     [](v1::ScatterRequest* r) {
       auto* spline = r->mutable_region()->mutable_polygons()->add_splines();
       for (double v : {0.0, 0.0, 1.0, 0.0, 1.0, double{INFINITY}}) {
         spline->add_xy(v);
       }
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.splines[0].xy[5]: must be finite, got inf"},
    // Past 2^500 the flattening's products overflowed and the spline was
    // refused as too fine for the vertex limit (RESOURCE_EXHAUSTED).
    {"spline with a coordinate past 2^500",
     [](v1::ScatterRequest* r) {
       auto* spline = r->mutable_region()->mutable_polygons()->add_splines();
       for (double v : {0.0, 0.0, 1e155, 0.0, 0.0, 1.0}) spline->add_xy(v);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.splines[0].xy[2]: must be within +-2^500"},
    {"degenerate ring",
     [](v1::ScatterRequest* r) {
       auto* ring = r->mutable_region()->mutable_polygons()->add_rings();
       for (double v : {0, 0, 1, 1, 2, 2}) ring->add_xy(v);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.rings[0]: a ring must"},
    {"short spline",
     [](v1::ScatterRequest* r) {
       auto* polygons = r->mutable_region()->mutable_polygons();
       auto* ring = polygons->add_rings();
       for (double v : {0, 0, 1, 0, 1, 1}) ring->add_xy(v);
       // One spline of two control points (the loop once made four
       // splines of one value each, refused for the odd count instead).
       auto* spline = polygons->add_splines();
       for (double v : {0, 0, 1, 0}) spline->add_xy(v);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.splines[0].xy: a closed spline needs at least 3 "
     "control points, got 2"},
    // "points" is the sampler's name for what the request calls xy.
    {"Bezier spline of 4 control points",
     [](v1::ScatterRequest* r) {
       auto* spline = r->mutable_region()->mutable_polygons()->add_splines();
       spline->set_kind(v1::SPLINE_KIND_BEZIER);
       for (double v : {0, 0, 1, 0, 1, 1, 0, 1}) spline->add_xy(v);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.splines[0].xy: a closed Bezier spline needs a multiple "
     "of 3 points"},
    // The sampler named its own parameter, max_vertices, with what was left
    // of the limit after the rings (4 194 300 here), not the limit.
    {"spline too fine for the vertex limit",
     [](v1::ScatterRequest* r) {
       auto* polygons = r->mutable_region()->mutable_polygons();
       auto* ring = polygons->add_rings();
       for (double v : {0, 0, 1, 0, 1, 1, 0, 1}) ring->add_xy(v);
       auto* spline = polygons->add_splines();
       for (double v : {0, 0, 1, 0, 1, 1}) spline->add_xy(v);
       polygons->set_spline_tolerance(1e-300);
     },
     grpc::StatusCode::RESOURCE_EXHAUSTED,
     "region.polygons.splines[0]: flattened within spline_tolerance = "
     "1e-300 it needs more than the 4194300 vertices left of the limit "
     "max_polygon_vertices = 4194304"},
    {"ring with an unknown fill rule",
     [](v1::ScatterRequest* r) {
       auto* polygons = r->mutable_region()->mutable_polygons();
       auto* ring = polygons->add_rings();
       for (double v : {0, 0, 1, 0, 1, 1}) ring->add_xy(v);
       polygons->set_fill_rule(static_cast<v1::FillRule>(5));
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.fill_rule: unknown fill rule 5"},
    {"spline of an unknown kind",
     [](v1::ScatterRequest* r) {
       auto* spline = r->mutable_region()->mutable_polygons()->add_splines();
       for (double v : {0, 0, 1, 0, 1, 1}) spline->add_xy(v);
       spline->set_kind(static_cast<v1::SplineKind>(7));
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.polygons.splines[0].kind: unknown spline kind 7"},
    {"obstacle at x = inf",
     [](v1::ScatterRequest* r) {
       r->add_obstacles()->set_radius(1);
       r->add_obstacles()->set_x(INFINITY);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "obstacles[1].x: must be finite, got inf"},
    {"obstacle at z = NaN in 3D",
     [](v1::ScatterRequest* r) {
       r->mutable_region()->mutable_box()->add_min(0);
       r->mutable_region()->mutable_box()->add_max(1);
       r->add_obstacles()->set_z(NAN);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "obstacles[0].z: must be finite, got nan"},
    {"negative obstacle",
     [](v1::ScatterRequest* r) { r->add_obstacles()->set_radius(-2); },
     grpc::StatusCode::INVALID_ARGUMENT, "obstacles[0].radius"},
    {"obstacle whose clearance squares past the doubles",
     [](v1::ScatterRequest* r) { r->add_obstacles()->set_radius(2e155); },
     grpc::StatusCode::INVALID_ARGUMENT,
     "obstacles[0].radius: must be in [0, 1e+150]"},
    {"footprint whose square leaves the doubles",
     [](v1::ScatterRequest* r) { r->mutable_layers(0)->set_footprint(1e151); },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].footprint: must be in [0, 1e+150]"},
    {"clearance to unknown layer",
     [](v1::ScatterRequest* r) {
       auto* c = r->add_clearances();
       c->set_layer_a(1);
       c->set_layer_b(99);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "clearances[0].layer_b"},
    {"clearance of a layer with itself",
     [](v1::ScatterRequest* r) {
       auto* c = r->add_clearances();
       c->set_layer_a(1);
       c->set_layer_b(1);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "clearances[0].layer_b: a clearance is between two layers"},
    {"one pair given two clearances",
     [](v1::ScatterRequest* r) {
       r->add_layers()->set_id(2);
       r->mutable_layers(1)->set_spacing(0.01);
       for (const auto& [a, b] : {std::pair{1u, 2u}, std::pair{2u, 1u}}) {
         auto* c = r->add_clearances();
         c->set_layer_a(a);
         c->set_layer_b(b);
         c->set_clearance(0.1);
       }
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "clearances[1]: layers 2 and 1 already have a clearance (clearances[0])"},
    {"scale_max below scale_min",
     [](v1::ScatterRequest* r) {
       r->mutable_layers(0)->set_scale_min(1);
       r->mutable_layers(0)->set_scale_max(0.5);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].scale_max"},
    {"NaN scale_min",
     [](v1::ScatterRequest* r) {
       r->mutable_layers(0)->set_scale_min(std::nan(""));
       r->mutable_layers(0)->set_scale_max(1);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "layers[0].scale_min"},
    {"raster size mismatch",
     [](v1::ScatterRequest* r) {
       auto* mask = r->mutable_region()->mutable_mask();
       mask->mutable_data()->set_format(v1::RASTER_FORMAT_U8);
       mask->mutable_data()->set_width(4);
       mask->mutable_data()->set_height(4);
       mask->mutable_data()->set_pixels(std::string(15, '\xff'));
       mask->set_x1(1);
       mask->set_y1(1);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "region.mask.data"},
    {"corrupt png",
     [](v1::ScatterRequest* r) {
       auto* mask = r->mutable_region()->mutable_mask();
       mask->mutable_data()->set_format(v1::RASTER_FORMAT_PNG);
       mask->mutable_data()->set_pixels("\x89PNG\r\n\x1a\n garbage");
       mask->set_x1(1);
       mask->set_y1(1);
     },
     grpc::StatusCode::INVALID_ARGUMENT, "region.mask.data"},
    {"unknown digest",
     [](v1::ScatterRequest* r) {
       auto* mask = r->mutable_region()->mutable_mask();
       mask->set_digest(std::string(64, 'a'));
       mask->set_x1(1);
       mask->set_y1(1);
     },
     grpc::StatusCode::NOT_FOUND, "digest: no raster aaaaaaaaaaaaaaaa"},
    // Not a digest PutRaster could have returned: no server holds it, and
    // NOT_FOUND ("never uploaded here, or evicted") sent callers to upload
    // again or to another replica, where it failed the same way.
    {"digest that is not 64 hex digits",
     [](v1::ScatterRequest* r) {
       auto* mask = r->mutable_region()->mutable_mask();
       mask->set_digest("abc");
       mask->set_x1(1);
       mask->set_y1(1);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "region.mask.digest: must be 64 lower-case hex digits (a "
     "RasterRef.digest from PutRaster), got 3 characters"},
    {"digest in upper case",
     [](v1::ScatterRequest* r) {
       auto* density = r->mutable_layers(0)->mutable_density();
       density->set_digest(std::string(64, 'B'));
       density->set_x1(1);
       density->set_y1(1);
       r->mutable_layers(0)->set_radius_min(0.01);
       r->mutable_layers(0)->set_radius_max(0.02);
     },
     grpc::StatusCode::INVALID_ARGUMENT,
     "layers[0].density.digest: must be 64 lower-case hex digits (a "
     "RasterRef.digest from PutRaster), got \"BBBB"},
    {"unimplemented version",
     [](v1::ScatterRequest* r) { r->set_algorithm_version(999); },
     grpc::StatusCode::FAILED_PRECONDITION, "algorithm_version"},
    {"too many points",
     [](v1::ScatterRequest* r) { r->mutable_layers(0)->set_spacing(1e-6); },
     grpc::StatusCode::RESOURCE_EXHAUSTED, "max_points = 200000000"},
};

TEST(ServiceTest, EveryBadInputGetsItsCodeAndNamesTheField) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  for (const BadCase& bad : kBadCases) {
    SCOPED_TRACE(bad.name);
    v1::ScatterRequest request = BoxRequest(1, 0.01);
    if (std::string(bad.name).find("ring") != std::string::npos ||
        std::string(bad.name).find("spline") != std::string::npos ||
        std::string(bad.name).find("circle") != std::string::npos) {
      request.mutable_region()->clear_box();
    }
    bad.edit(&request);
    const Received got = Collect(*stub, request);
    EXPECT_EQ(got.status.error_code(), bad.code) << got.status.error_message();
    EXPECT_THAT(got.status.error_message(), HasSubstr(bad.message));
    EXPECT_EQ(got.size(), 0u);
  }
}

TEST(ServiceTest, HardCapEndsTheStreamAfterTheCountedPoints) {
  LoopbackServer server;
  v1::ScatterRequest request = BoxRequest(1, 0.003);  // ~97 000 points.
  request.set_max_points(10'000);
  request.set_batch_size(3000);
  const Received got = Collect(*server.TcpStub(), request);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(got.status.error_message(), HasSubstr("10000 points sent"));
  EXPECT_THAT(got.status.error_message(), HasSubstr("max_points = 10000"));
  EXPECT_EQ(got.size(), 10'000u);
  EXPECT_FALSE(got.has_summary);
}

// A cap under a batch ends the run at the cap, not after a whole batch:
// here each point takes thousands of draws (the obstacle leaves four thin
// corners of the box), and 10 points take well under a second where 4 096
// took minutes, so the call ran into its deadline after 0 points.
TEST(ServiceTest, ACapUnderABatchEndsTheRunAtTheCap) {
  LoopbackServer server;
  v1::ScatterRequest request = BoxRequest(100, 0);
  v1::Obstacle* obstacle = request.add_obstacles();
  obstacle->set_x(50);
  obstacle->set_y(50);
  obstacle->set_radius(70.65);
  v1::Layer* layer = request.mutable_layers(0);
  layer->set_method(v1::METHOD_UNIFORM);
  layer->set_spacing(0);
  layer->set_count(1'000'000);
  request.set_max_points(10);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  const Received got = Collect(*server.TcpStub(), request, &context);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << got.status.error_message();
  EXPECT_THAT(got.status.error_message(), HasSubstr("(the request's own)"));
  EXPECT_EQ(got.size(), 10u);
}

// The server's max_points is judged on the estimate, an upper bound (the
// densest packing), before any sampling. The stream also stops at the
// limit while running, but no request's real count passes its estimate,
// so that cap is a safety net no test can reach.
TEST(ServiceTest, ServerPointLimitRefusesAnEstimateOverItAndServesOneUnder) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.limits.max_points = 50'000;
  LoopbackServer server(options);
  // 2 / (sqrt(3) r^2) = 128 300 points could fit: refused.
  Received got = Collect(*server.InProcessStub(), BoxRequest(1, 0.003));
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(got.status.error_message(), HasSubstr("max_points = 50000"));
  EXPECT_EQ(got.size(), 0u);
  // The same with the request's own cap below the limit: it cannot reach
  // the limit, so it runs, and ends at its cap (it was refused).
  v1::ScatterRequest capped = BoxRequest(1, 0.003);
  capped.set_max_points(10);
  got = Collect(*server.InProcessStub(), capped);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(got.status.error_message(), Not(HasSubstr("could make")));
  EXPECT_EQ(got.size(), 10u);
  // A cap over the limit does not lift it.
  capped.set_max_points(60'000);
  got = Collect(*server.InProcessStub(), capped);
  EXPECT_THAT(got.status.error_message(), HasSubstr("could make"));
  EXPECT_EQ(got.size(), 0u);
  // 32 075 could fit: served whole.
  got = Collect(*server.InProcessStub(), BoxRequest(1, 0.006));
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GT(got.size(), 20'000u);
  EXPECT_LT(got.size(), 32'075u);
  EXPECT_EQ(got.summary.total_points(), got.size());
}

// A uniform count or a jittered grid's cells past what one run makes,
// with the request's own cap (so past the estimate), is said of the
// layer's field: it was "over the limit max_points = 17592186040320", a
// bound neither the server's flag nor the request set.
TEST(ServiceTest, CountsPastWhatOneRunMakesNameTheirField) {
  LoopbackServer server;
  for (const bool uniform : {true, false}) {
    v1::ScatterRequest request = BoxRequest(1, 0.1);
    request.set_max_points(10);
    v1::Layer* layer = request.mutable_layers(0);
    layer->set_spacing(0);
    if (uniform) {
      layer->set_method(v1::METHOD_UNIFORM);
      layer->set_count(20'000'000'000'000);
    } else {
      layer->set_method(v1::METHOD_JITTERED_GRID);
      layer->set_cell_size(1 / std::sqrt(2e13));
    }
    SCOPED_TRACE(uniform ? "uniform" : "jittered grid");
    const Received got = Collect(*server.InProcessStub(), request);
    EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(
        got.status.error_message(),
        HasSubstr(uniform ? "layers[0].count: gives 20000000000000 points"
                          : "layers[0].cell_size: gives"));
    EXPECT_THAT(got.status.error_message(),
                HasSubstr("more than one run makes (17592186040320"));
    EXPECT_THAT(got.status.error_message(), Not(HasSubstr("limit max_points")));
    // Within it, the request's cap ends the run.
    if (uniform) {
      layer->set_count(1'000'000'000'000);
    } else {
      layer->set_cell_size(1e-6);
    }
    const Received capped = Collect(*server.InProcessStub(), request);
    EXPECT_EQ(capped.size(), 10u) << capped.status.error_message();
  }
}

TEST(ServiceTest, EstimatesPast2To64AreGivenAsFiguresWithTheirMethodsRule) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  struct Case {
    const char* name;
    v1::ScatterRequest request;
    std::vector<std::string> message;
  };
  std::vector<Case> cases;
  // The smallest spacing allowed, over a box of side 1e10.
  cases.push_back({"tiny spacing",
                   BoxRequest(1e10, 1e-150),
                   {"could make more than 1.8e308 points",
                    "2 / (sqrt(3) r^2) per unit area, with r / 2 more on each "
                    "side, for Poisson layers"}});
  {
    v1::ScatterRequest r = BoxRequest(1, 0.1);
    r.mutable_layers(0)->set_method(v1::METHOD_UNIFORM);
    r.mutable_layers(0)->set_count(~std::uint64_t{0});
    cases.push_back({"uniform count near 2^64",
                     r,
                     {"could make 1.84467e+19 points",
                      "summed over layers: count for uniform layers)"}});
  }
  {
    v1::ScatterRequest r = BoxRequest(1, 0.1);
    r.mutable_layers(0)->set_method(v1::METHOD_JITTERED_GRID);
    r.mutable_layers(0)->set_cell_size(1e-12);
    cases.push_back({"tiny grid cells",
                     r,
                     {"could make 1e+24 points",
                      "one per cell (cell_size^2), with a cell more on each "
                      "axis, for jittered-grid layers)"}});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Received got = Collect(*stub, c.request);
    EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    for (const std::string& part : c.message) {
      EXPECT_THAT(got.status.error_message(), HasSubstr(part));
    }
    EXPECT_THAT(got.status.error_message(),
                HasSubstr("over the limit max_points = 200000000"));
    if (c.request.layers(0).method() != v1::METHOD_POISSON_DENSE) {
      EXPECT_THAT(got.status.error_message(), Not(HasSubstr("Poisson")));
    }
  }
}

TEST(ServiceTest, ConcurrencyLimitRefusesTheExtraStream) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.max_streams = 1;
  LoopbackServer server(options);
  auto stub = server.TcpStub();
  grpc::ClientContext context;
  auto reader = stub->Scatter(&context, LongRequest());
  v1::ScatterResponse response;
  ASSERT_TRUE(reader->Read(&response));
  const Received second = Collect(*stub, BoxRequest(1, 0.1));
  EXPECT_EQ(second.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(second.status.error_message(), HasSubstr("max_streams = 1"));
  context.TryCancel();
  reader->Finish();
  WaitIdle(server.server(), absl::Seconds(5));
  EXPECT_TRUE(Collect(*stub, BoxRequest(1, 0.1)).status.ok());
}

// A process at its limit of threads cannot start a call's watchdog or
// producer: std::thread throws std::system_error, which out of a handler
// ended scatterd (std::terminate). The call is refused naming the cause,
// its slot and memory are given back, and the server serves on.
TEST(ServiceTest, ACallThatCannotStartItsThreadsIsRefusedAndTheServerLivesOn) {
  auto starts = std::make_shared<std::atomic<int>>(-1);
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.max_streams = 1;
  options.service.start_thread = LimitedThreadStarts(starts);
  LoopbackServer server(options);
  auto stub = server.TcpStub();
  // None starts (the watchdog fails), or the watchdog only.
  for (const auto& [allowed, thread] :
       {std::pair{0, "watchdog"}, std::pair{1, "producer"}}) {
    SCOPED_TRACE(thread);
    starts->store(allowed);
    const Received got = Collect(*stub, BoxRequest(1, 0.1));
    EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(got.status.error_message(),
                HasSubstr(absl::StrCat("the call's ", thread,
                                       " thread cannot start (")));
    EXPECT_THAT(got.status.error_message(), HasSubstr("max_streams = 1"));
    EXPECT_EQ(got.size(), 0u);
  }
  // An upload runs a watchdog too.
  starts->store(0);
  {
    grpc::ClientContext context;
    v1::RasterRef ref;
    auto writer = stub->PutRaster(&context, &ref);
    v1::RasterChunk chunk;
    chunk.set_format(v1::RASTER_FORMAT_U8);
    chunk.set_width(1);
    chunk.set_height(1);
    chunk.set_pixels("x");
    writer->Write(chunk);  // False if the server has answered already.
    writer->WritesDone();
    const grpc::Status status = writer->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(),
                HasSubstr("the call's watchdog thread cannot start"));
  }
  starts->store(-1);
  WaitIdle(server.server(), absl::Seconds(5));
  EXPECT_EQ(server.server().stats().in_flight.load(), 0);
  const Received served = Collect(*stub, BoxRequest(1, 0.1));
  EXPECT_TRUE(served.status.ok()) << served.status.error_message();
  EXPECT_GT(served.size(), 0u);
  EXPECT_THAT(server.log(), HasSubstr("message=the call's "));
}

// gRPC answers an exception out of a handler with UNKNOWN and serves on;
// the call's max_streams slot used to stay taken, so max_streams such
// calls refused every later one for good.
TEST(ServiceTest, AnExceptionOutOfAHandlerGivesItsSlotBack) {
  auto throws = std::make_shared<std::atomic<bool>>(true);
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.max_streams = 1;
  options.service.start_thread = [throws](std::function<void()> body) {
    if (throws->load()) throw std::runtime_error("not a thread limit");
    return std::thread(std::move(body));
  };
  LoopbackServer server(options);
  auto stub = server.TcpStub();
  for (int call = 0; call < 2; ++call) {
    EXPECT_EQ(Collect(*stub, BoxRequest(1, 0.1)).status.error_code(),
              grpc::StatusCode::UNKNOWN);
  }
  EXPECT_EQ(server.server().stats().in_flight.load(), 0);
  throws->store(false);
  EXPECT_TRUE(Collect(*stub, BoxRequest(1, 0.1)).status.ok());
}

// The bytes the service holds for `request` while it runs.
double EstimatedBytes(const v1::ScatterRequest& request) {
  RasterCache cache(1 << 20);
  absl::StatusOr<ScatterJob> job = ToJob(request, Limits(), cache);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? job->estimated_bytes : 0;
}

TEST(ServiceTest, MemoryBudgetRefusesARequestOverItNamingIt) {
  // A grid of about 2 M cells at 19 bytes each (the unit square at
  // r = 0.001, 2D dense: coordinates, cover marks and taken marks) against
  // a 16 MiB budget.
  const double needed = EstimatedBytes(BoxRequest(1, 0.001));
  ASSERT_GT(needed, 30e6);
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.memory_budget_bytes = 16 << 20;
  LoopbackServer server(options);
  const Received big = Collect(*server.TcpStub(), BoxRequest(1, 0.001));
  EXPECT_EQ(big.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(big.status.error_message(),
              HasSubstr(absl::StrCat("the request would hold about ",
                                     static_cast<std::uint64_t>(needed),
                                     " bytes of sampling memory, over the "
                                     "limit memory_budget_bytes = 16777216")));
  EXPECT_EQ(big.size(), 0u);
  EXPECT_TRUE(Collect(*server.TcpStub(), BoxRequest(1, 0.01)).status.ok());
}

// Obstacles cost many times their wire bytes (an empty one is 2): the
// parsed message, the shared list, each layer run's copy and its index.
// 2^20 of them in a request of 2 MB took 330 MB (1.7 GB with 16 layers,
// which each copied them) under a 16 MiB budget (found by a review helper).
TEST(ServiceTest, MemoryBudgetCountsTheObstacles) {
  v1::ScatterRequest request = BoxRequest(10, 1);
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.memory_budget_bytes = 4 << 20;
  LoopbackServer server(options);
  // Held with the message, for the whole call, parsed and as the run
  // holds them: 20 000 empty ones are 40 kB on the wire and 5.8 MB held.
  for (int i = 0; i < 20000; ++i) request.add_obstacles();
  ASSERT_LT(request.ByteSizeLong(), 1u << 20);
  const Received message = Collect(*server.TcpStub(), request);
  EXPECT_EQ(message.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(message.status.error_message(),
              HasSubstr(absl::StrCat(
                  "the request message would hold about ",
                  static_cast<std::uint64_t>(
                      static_cast<double>(request.ByteSizeLong()) +
                      20000 * (kParsedObstacleBytes + kObstacleBytes)),
                  " bytes of memory, over the limit memory_budget_bytes = "
                  "4194304")));
  // Once, not again in the estimate.
  EXPECT_EQ(EstimatedBytes(request), EstimatedBytes(BoxRequest(10, 1)));
  while (request.obstacles_size() > 1000) {
    request.mutable_obstacles()->RemoveLast();
  }
  EXPECT_TRUE(Collect(*server.TcpStub(), request).status.ok());
}

// A layered run keeps every layer's points but the last placed one's: the
// estimate counts them.
TEST(ServiceTest, MemoryEstimateCountsThePointsKeptForLaterLayers) {
  v1::ScatterRequest two = BoxRequest(1, 0.01);
  v1::Layer* small = two.add_layers();
  small->set_id(2);
  small->set_spacing(0.005);
  const double one_big = EstimatedBytes(BoxRequest(1, 0.01));
  v1::ScatterRequest alone = BoxRequest(1, 0.005);
  const double one_small = EstimatedBytes(alone);
  // The spacing-0.01 layer is placed first: its estimated points (at most
  // 2 / (sqrt(3) r^2) over the square grown by r, 11 547 * 1.01^2 = 11 780)
  // are kept, at kKeptPointBytes each.
  const double kept = EstimatedBytes(two) - one_big - one_small;
  EXPECT_GT(kept, 5000 * kKeptPointBytes);
  EXPECT_LE(kept, 11780 * kKeptPointBytes);
  // The request's own cap bounds them: it refused a job of 10 points for
  // 0.8 GB of kept points (found by a review helper).
  two.set_max_points(10);
  EXPECT_LE(EstimatedBytes(two), one_big + one_small + 10 * kKeptPointBytes);
}

// A uniform layer has no spacing and is placed last, whatever its options'
// radius (unused, 1 by default): the Poisson layer's points are the kept
// ones. The estimate took the Poisson layer, whose radius was the smaller,
// for the last and counted none: a review helper's 100 x 100 box at spacing
// 0.05 was estimated at 153 MB and peaked at 1 062 MB.
TEST(ServiceTest, MemoryEstimateCountsThePointsKeptForALastUniformLayer) {
  v1::ScatterRequest two = BoxRequest(1, 0.01);
  v1::Layer* uniform = two.add_layers();
  uniform->set_id(2);
  uniform->set_method(v1::METHOD_UNIFORM);
  uniform->set_count(1);
  v1::ScatterRequest alone = two;
  alone.mutable_layers()->RemoveLast();
  const double kept = EstimatedBytes(two) - EstimatedBytes(alone);
  EXPECT_GT(kept, 5000 * kKeptPointBytes);
  EXPECT_LE(kept, 11781 * kKeptPointBytes);
}

// The point estimate bounds what a run makes, so a request under
// max_points is never cut off midway. Over the region alone it did not:
// a strip 1300 x 0.3 at spacing 1 was estimated at 450 points and made
// 1254, a slab 40 x 40 x 0.2 at 453 made 1427, and a 3 x 3 square at
// spacing 1 made more than its 10.4 for some seeds (found by a review
// helper). Each side grows by r / 2 (a jittered grid's by a cell).
TEST(ServiceTest, PointEstimateBoundsThinAndSmallRegions) {
  auto box = [](std::vector<double> max, double spacing, std::uint64_t seed) {
    v1::ScatterRequest request = BoxRequest(1, spacing, seed);
    v1::Box* b = request.mutable_region()->mutable_box();
    b->clear_min();
    b->clear_max();
    for (double v : max) {
      b->add_min(0);
      b->add_max(v);
    }
    return request;
  };
  std::vector<v1::ScatterRequest> requests = {
      box({1300, 0.3}, 1, 7), box({40, 40, 0.2}, 1, 7), box({0.3, 900}, 1, 9)};
  v1::ScatterRequest grid = box({0.3, 500}, 1, 7);
  grid.mutable_layers(0)->set_method(v1::METHOD_JITTERED_GRID);
  grid.mutable_layers(0)->set_cell_size(1);
  requests.push_back(grid);
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    for (auto method : {v1::METHOD_POISSON_DENSE, v1::METHOD_POISSON_CLASSIC}) {
      v1::ScatterRequest small = box({3, 3}, 1, seed);
      small.mutable_layers(0)->set_method(method);
      requests.push_back(small);
    }
  }
  LoopbackServer server;
  auto stub = server.InProcessStub();
  for (const v1::ScatterRequest& request : requests) {
    SCOPED_TRACE(request.ShortDebugString());
    RasterCache cache(1 << 20);
    absl::StatusOr<ScatterJob> job = ToJob(request, Limits(), cache);
    ASSERT_TRUE(job.ok()) << job.status();
    const Received got = Collect(*stub, request);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_GE(job->estimated_points, static_cast<double>(got.size()));
  }
}

// A density raster bright everywhere but under the places the estimate
// read (the corners and middles of its 64 x 64 cells): read there, it said
// 18 919 points, and the run made 904 720 (found by a review helper). The
// estimate now takes each cell's brightest pixel.
TEST(ServiceTest, PointEstimateSeesARasterBrightBetweenItsCells) {
  constexpr int kSide = 1280;  // Pixels of 0.05 over [0, 64]^2.
  std::string pixels(kSide * kSide, '\xff');
  // Dark around every multiple of 0.25 along both axes.
  auto dark = [](int m) { return m % 5 == 4 || m % 5 == 0; };
  for (int j = 0; j < kSide; ++j) {
    for (int i = 0; i < kSide; ++i) {
      if (dark(i) && dark(kSide - 1 - j)) pixels[j * kSide + i] = 0;
    }
  }
  v1::ScatterRequest request = BoxRequest(64, 1);
  v1::Layer* layer = request.mutable_layers(0);
  layer->clear_spacing();
  layer->set_radius_min(0.05);
  layer->set_radius_max(0.5);
  v1::RasterInput* density = layer->mutable_density();
  density->set_x1(64);
  density->set_y1(64);
  v1::RasterData* data = density->mutable_data();
  data->set_format(v1::RASTER_FORMAT_U8);
  data->set_width(kSide);
  data->set_height(kSide);
  data->set_pixels(pixels);
  RasterCache cache(std::size_t{1} << 30);
  absl::StatusOr<ScatterJob> job = ToJob(request, Limits(), cache);
  ASSERT_TRUE(job.ok()) << job.status();
  // Where bright, r = r_min: 2 / (sqrt(3) r^2) = 462 a unit area, over 84 %
  // of 64^2.
  EXPECT_GT(job->estimated_points, 0.84 * 462 * 64 * 64);
}

// A polygon's index lives as long as the call: the estimate counts it,
// over the grids a box of the same bounds would need.
TEST(ServiceTest, MemoryEstimateCountsThePolygonIndex) {
  // A 4 000-vertex ring around the unit square's centre: its bounds are
  // [0.1, 0.9]^2, a box of which needs the same grid.
  sampler::Ring ring;
  v1::ScatterRequest polygon = BoxRequest(1, 0.01);
  v1::Ring* xy = polygon.mutable_region()->mutable_polygons()->add_rings();
  const int n = 4000;
  for (int k = 0; k < n; ++k) {
    const double t = 2 * M_PI * k / n;
    const double r = k % 2 == 0 ? 0.4 : 0.35;
    const double x = 0.5 + r * std::cos(t), y = 0.5 + r * std::sin(t);
    ring.push_back({x, y});
    xy->add_xy(x);
    xy->add_xy(y);
  }
  absl::StatusOr<sampler::Region> region = sampler::Region::Polygons({ring});
  ASSERT_TRUE(region.ok()) << region.status();
  v1::ScatterRequest box = BoxRequest(1, 0.01);
  v1::Box* bounds = box.mutable_region()->mutable_box();
  for (int a = 0; a < 2; ++a) {
    bounds->set_min(a, region->bounds().min(a));
    bounds->set_max(a, region->bounds().max(a));
  }
  ASSERT_GT(region->IndexBytes(), n * 32u);
  EXPECT_EQ(EstimatedBytes(polygon) - EstimatedBytes(box),
            static_cast<double>(region->IndexBytes()));
}

// The polygon index is held before it is built, by its vertex count: a
// request of 166 bytes (a spline of 8 points at a fine tolerance) built
// hundreds of MB of index before its estimate refused it, and ScatterTiles
// never counted the index (found by a review helper).
TEST(ServiceTest, APolygonIndexIsHeldBeforeItIsBuilt) {
  auto spline_request = [](double tolerance) {
    v1::ScatterRequest request = BoxRequest(1, 1);
    v1::Polygons* polygons = request.mutable_region()->mutable_polygons();
    v1::Spline* spline = polygons->add_splines();
    for (int k = 0; k < 8; ++k) {
      const double t = 2 * M_PI * k / 8;
      spline->add_xy(100 * std::cos(t));
      spline->add_xy(100 * std::sin(t));
    }
    polygons->set_spline_tolerance(tolerance);
    return request;
  };
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.memory_budget_bytes = 4 << 20;
  LoopbackServer server(options);
  // A ring of radius 100 within 1e-9: hundreds of thousands of vertices,
  // whose edges alone (kIndexBytesPerVertex) pass 4 MiB.
  const Received fine = Collect(*server.TcpStub(), spline_request(1e-9));
  EXPECT_EQ(fine.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(fine.status.error_message(),
              HasSubstr("the polygon index would hold about"));
  EXPECT_THAT(fine.status.error_message(),
              HasSubstr("over the limit memory_budget_bytes = 4194304"));
  EXPECT_THAT(server.log(), Not(HasSubstr("admitted: the request holds")));
  // A coarser one is held as built, and served.
  const Received coarse = Collect(*server.TcpStub(), spline_request(1e-2));
  EXPECT_TRUE(coarse.status.ok()) << coarse.status.error_message();
  EXPECT_GT(coarse.size(), 10000u);
}

// Two calls that each fit the budget but not together: the second is
// refused while the first runs, and served once it has ended.
TEST(ServiceTest, MemoryBudgetIsSharedByRunningCalls) {
  const double long_bytes = EstimatedBytes(LongRequest());
  const v1::ScatterRequest second_request = BoxRequest(1, 0.002);
  const double second_bytes = EstimatedBytes(second_request);
  ASSERT_LT(second_bytes, long_bytes);
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.memory_budget_bytes =
      static_cast<std::uint64_t>(long_bytes + second_bytes / 2);
  LoopbackServer server(options);
  auto stub = server.TcpStub();
  grpc::ClientContext context;
  auto reader = stub->Scatter(&context, LongRequest());
  v1::ScatterResponse response;
  ASSERT_TRUE(reader->Read(&response));
  const Received second = Collect(*stub, second_request);
  EXPECT_EQ(second.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(second.status.error_message(),
              HasSubstr("bytes of sampling memory and running calls hold"));
  EXPECT_THAT(second.status.error_message(), HasSubstr("retry later"));
  context.TryCancel();
  reader->Finish();
  WaitIdle(server.server(), absl::Seconds(5));
  EXPECT_TRUE(Collect(*stub, second_request).status.ok());
}

TEST(ServiceTest, ShutdownEndsAStreamInFlightWithAStatus) {
  LoopbackServer server;
  auto stub = server.TcpStub();
  grpc::ClientContext context;
  auto reader = stub->Scatter(&context, LongRequest());
  v1::ScatterResponse response;
  ASSERT_TRUE(reader->Read(&response));
  std::thread stopper([&] { server.server().Shutdown(); });
  // While draining, health says NOT_SERVING for the server and the
  // service (a readiness probe takes the pod out of the Service by it),
  // and new calls are turned away. Nothing tested the first: the server
  // went on saying SERVING without it, and every test passed.
  auto health = grpc::health::v1::Health::NewStub(server.TcpChannel());
  auto health_of = [&health](const std::string& service) {
    grpc::ClientContext check;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse answer;
    const grpc::Status status = health->Check(&check, request, &answer);
    return status.ok() ? answer.status()
                       : grpc::health::v1::HealthCheckResponse::UNKNOWN;
  };
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (health_of("") == grpc::health::v1::HealthCheckResponse::SERVING &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  for (const std::string service : {"", kServiceName}) {
    EXPECT_EQ(health_of(service),
              grpc::health::v1::HealthCheckResponse::NOT_SERVING)
        << "service '" << service << "'";
  }
  const Received late = Collect(*stub, BoxRequest(1, 0.1));
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  while (reader->Read(&response)) {
  }
  const grpc::Status status = reader->Finish();
  stopper.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
  EXPECT_THAT(status.error_message(), HasSubstr("points sent"));
}

TEST(ServiceTest, ASecondServerOnAPortInUseDoesNotStart) {
  LoopbackServer first;
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.address = first.target();
  auto second = ScatterServer::Start(options);
  ASSERT_FALSE(second.ok()) << "a second server bound " << options.address;
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("address in use"));
  // The first server still has its port to itself.
  EXPECT_TRUE(Collect(*first.TcpStub(), BoxRequest(1, 0.1)).status.ok());
}

// Reflection is asked from Python (python_client_test.py): the C++ reflection
// messages live inside grpc++_reflection.
TEST(ServiceTest, HealthAnswers) {
  LoopbackServer server;
  auto channel = server.TcpChannel();
  auto health = grpc::health::v1::Health::NewStub(channel);
  for (const std::string service : {"", kServiceName}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health->Check(&context, request, &response).ok());
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
}

TEST(ServiceTest, LogLineNamesTheCallAndItsOutcome) {
  LoopbackServer server;
  const Received got = Collect(*server.TcpStub(), BoxRequest(1, 0.05, 11));
  ASSERT_TRUE(got.status.ok());
  Collect(*server.TcpStub(), BoxRequest(1, -1));
  const std::string log = server.log();
  EXPECT_THAT(log, HasSubstr(absl::StrCat("Scatter peer=ipv4:127.0.0.1:")));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("seed=11 points=", got.size(),
                                          " code=OK")));
  EXPECT_THAT(log, HasSubstr("code=INVALID_ARGUMENT"));
  EXPECT_THAT(log, HasSubstr("message=layers[0].spacing"));
}

// Threads a ServiceOptions::start_thread started, and those whose body has
// returned.
struct ThreadCounts {
  std::atomic<int> started{0};
  std::atomic<int> returned{0};
};

std::function<std::thread(std::function<void()>)> CountedThreads(
    std::shared_ptr<ThreadCounts> counts) {
  return [counts](std::function<void()> body) {
    ++counts->started;
    return std::thread([counts, body = std::move(body)] {
      body();
      ++counts->returned;
    });
  };
}

// The consumer leaving first (the client cancels after a few messages)
// while the producer is still sampling, or blocked on the full queue: the
// producer stops, is joined before the handler returns, and the server's
// one slot serves the next calls whole.
TEST(ServiceTest, AConsumerStoppingEarlyJoinsTheProducerAndTheServerServesOn) {
  auto counts = std::make_shared<ThreadCounts>();
  ServerOptions options = LoopbackServer::DefaultOptions();
  // A producer still running would hold the only slot.
  options.service.max_streams = 1;
  options.service.start_thread = CountedThreads(counts);
  LoopbackServer server(options);
  auto stub = server.InProcessStub();
  {
    // Seconds of sampling; the queue holds 4 batches of 256 points.
    grpc::ClientContext context;
    auto reader = stub->Scatter(&context, LongRequest());
    v1::ScatterResponse response;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader->Read(&response));
    EXPECT_EQ(server.server().stats().in_flight.load(), 1);
    context.TryCancel();
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  WaitIdle(server.server(), absl::Seconds(5));
  {
    // 64 tiles of about 250 points in parts of 32: hundreds of messages,
    // and the queue holds 4.
    v1::ScatterTilesRequest request;
    request.set_seed(3);
    request.set_tile_size(16);
    request.set_batch_size(32);
    request.add_layers()->set_spacing(1);
    request.mutable_rect()->set_x0(0);
    request.mutable_rect()->set_x1(8);
    request.mutable_rect()->set_y0(0);
    request.mutable_rect()->set_y1(8);
    grpc::ClientContext context;
    auto reader = stub->ScatterTiles(&context, request);
    v1::TileResponse response;
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(reader->Read(&response));
    EXPECT_EQ(server.server().stats().in_flight.load(), 1);
    context.TryCancel();
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  WaitIdle(server.server(), absl::Seconds(5));
  EXPECT_EQ(server.server().stats().in_flight.load(), 0);
  // A watchdog and a producer per call, each joined: every body returned.
  EXPECT_EQ(counts->started.load(), 4);
  EXPECT_EQ(counts->returned.load(), 4);
  EXPECT_LT(server.server().stats().tiles_sent.load(), 64u);
  // A call's log line comes after in_flight falls: wait for both.
  auto cancelled = [&] {
    const std::string log = server.log();
    std::size_t n = 0;
    for (std::size_t at = log.find("code=CANCELLED"); at != std::string::npos;
         at = log.find("code=CANCELLED", at + 1)) {
      ++n;
    }
    return n;
  };
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (cancelled() < 2 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(cancelled(), 2u) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("Scatter peer="));
  EXPECT_THAT(server.log(), HasSubstr("ScatterTiles peer="));

  const Received next = Collect(*stub, BoxRequest(10, 0.5));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  ASSERT_TRUE(next.has_summary);
  EXPECT_EQ(next.summary.total_points(), next.size());
  EXPECT_GT(next.size(), 0u);
  v1::ScatterTilesRequest one;
  one.set_seed(3);
  one.set_tile_size(16);
  one.add_layers()->set_spacing(1);
  v1::TileCoord* tile = one.add_tiles();
  tile->set_x(5);
  tile->set_y(5);
  grpc::ClientContext context;
  auto reader = stub->ScatterTiles(&context, one);
  v1::TileResponse response;
  bool summary = false;
  std::uint64_t points = 0;
  while (reader->Read(&response)) {
    points += static_cast<std::uint64_t>(response.points().id_size());
    if (response.has_summary()) {
      summary = true;
      EXPECT_EQ(response.summary().tiles(), 1u);
      EXPECT_EQ(response.summary().total_points(), points);
    }
  }
  const grpc::Status tiled = reader->Finish();
  EXPECT_TRUE(tiled.ok()) << tiled.error_message();
  EXPECT_TRUE(summary);
  EXPECT_GT(points, 0u);
  EXPECT_EQ(counts->started.load(), 8);
  WaitIdle(server.server(), absl::Seconds(5));
  EXPECT_EQ(counts->returned.load(), 8);
}

// How request fields reach the sampler, which the mutation review found no
// test held: a fixed scale (scale_min == scale_max, as the rule <= allows),
// a 3D obstacle's z, the default spline tolerance, a run that makes
// exactly max_points points, and the clamp on batch_size.
TEST(ServiceTest, AFixedScaleIsEveryPointsScale) {
  LoopbackServer server;
  v1::ScatterRequest request = BoxRequest(20, 1);
  request.mutable_layers(0)->set_scale_min(2);
  request.mutable_layers(0)->set_scale_max(2);
  const Received got = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_GT(got.size(), 200u);
  ASSERT_EQ(got.scale.size(), got.size());
  for (double scale : got.scale) ASSERT_EQ(scale, 2);
}

TEST(ServiceTest, A3dObstacleKeepsItsHeight) {
  LoopbackServer server;
  v1::ScatterRequest request;
  request.set_seed(4);
  v1::Box* box = request.mutable_region()->mutable_box();
  for (int a = 0; a < 3; ++a) {
    box->add_min(0);
    box->add_max(10);
  }
  request.add_layers()->set_spacing(1);  // Footprint 0.5.
  v1::Obstacle* obstacle = request.add_obstacles();
  obstacle->set_x(5);
  obstacle->set_y(5);
  obstacle->set_z(9);
  obstacle->set_radius(2);
  const Received got = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_EQ(got.dims, 3);
  ASSERT_GT(got.size(), 500u);
  double nearest = 1e300;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double dx = got.coords[3 * i] - 5;
    const double dy = got.coords[3 * i + 1] - 5;
    const double dz = got.coords[3 * i + 2] - 9;
    nearest = std::min(nearest, std::sqrt(dx * dx + dy * dy + dz * dz));
  }
  // Clear of the obstacle, and filled up to it: maximal around it.
  EXPECT_GE(nearest, 2.5);
  EXPECT_LT(nearest, 3.5);
}

TEST(ServiceTest, SplinesAreFlattenedToAHundredthOfTheSpacingByDefault) {
  LoopbackServer server;
  v1::ScatterRequest request;
  request.set_seed(5);
  v1::Spline* spline =
      request.mutable_region()->mutable_polygons()->add_splines();
  for (double v : {0.0, 0.0, 40.0, 0.0, 40.0, 40.0, 0.0, 40.0}) {
    spline->add_xy(v);
  }
  request.add_layers()->set_spacing(1);
  const Received by_default = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(by_default.status.ok()) << by_default.status.error_message();
  ASSERT_GT(by_default.size(), 500u);
  for (double tolerance : {0.01, 0.1}) {
    v1::ScatterRequest given = request;
    given.mutable_region()->mutable_polygons()->set_spline_tolerance(tolerance);
    const Received got = Collect(*server.TcpStub(), given);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    if (tolerance == 0.01) {
      EXPECT_EQ(got.coords, by_default.coords);
    } else {
      EXPECT_NE(got.coords, by_default.coords);
    }
  }
}

TEST(ServiceTest, ARunOfExactlyMaxPointsEndsWithItsSummary) {
  LoopbackServer server;
  v1::ScatterRequest request = BoxRequest(20, 1);
  request.mutable_layers(0)->set_method(v1::METHOD_UNIFORM);
  request.mutable_layers(0)->set_count(100);
  request.set_max_points(100);
  const Received all = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(all.status.ok()) << all.status.error_message();
  EXPECT_EQ(all.size(), 100u);
  EXPECT_TRUE(all.has_summary);
  request.set_max_points(99);
  const Received capped = Collect(*server.TcpStub(), request);
  EXPECT_EQ(capped.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(capped.size(), 99u);
}

TEST(ServiceTest, AHugeBatchSizeIsClampedUnderAMebibyte) {
  LoopbackServer server;
  v1::ScatterRequest request;
  request.set_seed(6);
  v1::Box* box = request.mutable_region()->mutable_box();
  for (int a = 0; a < 3; ++a) {
    box->add_min(0);
    box->add_max(40);
  }
  request.add_layers()->set_spacing(1);
  request.set_batch_size(1'000'000);
  grpc::ClientContext context;
  auto reader = server.TcpStub()->Scatter(&context, request);
  v1::ScatterResponse response;
  std::size_t points = 0, largest = 0;
  while (reader->Read(&response)) {
    largest = std::max(largest, response.ByteSizeLong());
    points += static_cast<std::size_t>(response.points().id_size());
  }
  const grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_GT(points, 40'000u);
  EXPECT_LE(largest, std::size_t{1} << 20);
}

}  // namespace
}  // namespace scatter::server::testing
