#include "sampler/box.h"

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace scatter::sampler {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Expects InvalidArgument with a message that names the box.
void ExpectInvalidBox(int dims, const Vec& min, const Vec& max) {
  absl::StatusOr<Box> box = Box::Create(dims, min, max);
  ASSERT_FALSE(box.ok()) << "dims " << dims << " min (" << min[0] << ", "
                         << min[1] << ", " << min[2] << ") max (" << max[0]
                         << ", " << max[1] << ", " << max[2] << ")";
  EXPECT_EQ(box.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(box.status().message(), "box"))
      << box.status().message();
}

TEST(BoxTest, UnitSquareAndUnitCubeAreValid) {
  absl::StatusOr<Box> square = Box::Create(2, {0, 0, 0}, {1, 1, 0});
  ASSERT_TRUE(square.ok()) << square.status();
  EXPECT_EQ(square->dims(), 2);
  absl::StatusOr<Box> cube = Box::Create(3, {0, 0, 0}, {1, 1, 1});
  ASSERT_TRUE(cube.ok()) << cube.status();
  EXPECT_EQ(cube->dims(), 3);
}

TEST(BoxTest, DimsOtherThanTwoOrThreeAreInvalidArgument) {
  for (int dims : {-1, 0, 1, 4}) {
    absl::StatusOr<Box> box = Box::Create(dims, {0, 0, 0}, {1, 1, 1});
    ASSERT_FALSE(box.ok()) << "dims " << dims;
    EXPECT_EQ(box.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(box.status().message(), "dims"))
        << box.status().message();
  }
}

TEST(BoxTest, NaNCoordinateIsInvalidArgument) {
  for (int axis = 0; axis < 3; ++axis) {
    Vec min = {0, 0, 0};
    Vec max = {1, 1, 1};
    min[axis] = kNaN;
    ExpectInvalidBox(3, min, max);
    min[axis] = 0;
    max[axis] = kNaN;
    ExpectInvalidBox(3, min, max);
  }
}

TEST(BoxTest, InfiniteCoordinateIsInvalidArgument) {
  for (int axis = 0; axis < 3; ++axis) {
    Vec min = {0, 0, 0};
    Vec max = {1, 1, 1};
    min[axis] = -kInf;
    ExpectInvalidBox(3, min, max);
    min[axis] = 0;
    max[axis] = kInf;
    ExpectInvalidBox(3, min, max);
  }
}

TEST(BoxTest, InvertedBoxIsInvalidArgument) {
  for (int axis = 0; axis < 3; ++axis) {
    Vec min = {0, 0, 0};
    Vec max = {1, 1, 1};
    min[axis] = 2;
    ExpectInvalidBox(3, min, max);
  }
  ExpectInvalidBox(2, {1, 0, 0}, {0, 1, 0});
  ExpectInvalidBox(2, {0, 1, 0}, {1, 0, 0});
}

TEST(BoxTest, EmptyBoxIsInvalidArgument) {
  ExpectInvalidBox(2, {0, 0, 0}, {0, 1, 0});
  ExpectInvalidBox(2, {0, 0.5, 0}, {1, 0.5, 0});
  ExpectInvalidBox(3, {0, 0, 1}, {1, 1, 1});
  ExpectInvalidBox(3, {0, 0, -0.0}, {1, 1, 0.0});
}

TEST(BoxTest, ExtentThatOverflowsADoubleIsInvalidArgument) {
  const double big = std::numeric_limits<double>::max();
  ExpectInvalidBox(2, {-big, 0, 0}, {big, 1, 0});
}

TEST(BoxTest, TwoDimensionalBoxIgnoresZ) {
  absl::StatusOr<Box> box = Box::Create(2, {0, 0, kNaN}, {1, 1, -kInf});
  ASSERT_TRUE(box.ok()) << box.status();
  const double p[2] = {0.5, 0.5};
  EXPECT_TRUE(box->Contains(p));
  EXPECT_EQ(box->Measure(), 1.0);
}

TEST(BoxTest, AccessorsReturnTheCorners) {
  absl::StatusOr<Box> box = Box::Create(3, {-1, 2, -3}, {4, 5.5, 6});
  ASSERT_TRUE(box.ok()) << box.status();
  EXPECT_EQ(box->min(0), -1);
  EXPECT_EQ(box->min(1), 2);
  EXPECT_EQ(box->min(2), -3);
  EXPECT_EQ(box->max(0), 4);
  EXPECT_EQ(box->max(1), 5.5);
  EXPECT_EQ(box->max(2), 6);
  EXPECT_EQ(box->extent(0), 5);
  EXPECT_EQ(box->extent(1), 3.5);
  EXPECT_EQ(box->extent(2), 9);
}

TEST(BoxTest, MeasureIsAreaIn2DAndVolumeIn3D) {
  absl::StatusOr<Box> rect = Box::Create(2, {-1, 2, 0}, {3, 2.5, 0});
  ASSERT_TRUE(rect.ok()) << rect.status();
  EXPECT_EQ(rect->Measure(), 2.0);
  absl::StatusOr<Box> cuboid = Box::Create(3, {0, 0, -1}, {2, 3, 3});
  ASSERT_TRUE(cuboid.ok()) << cuboid.status();
  EXPECT_EQ(cuboid->Measure(), 24.0);
}

TEST(BoxTest, ContainsIncludesMinAndExcludesMax) {
  absl::StatusOr<Box> box = Box::Create(2, {0, 0, 0}, {1, 2, 0});
  ASSERT_TRUE(box.ok()) << box.status();
  const double below_one = std::nextafter(1.0, 0.0);
  const double below_two = std::nextafter(2.0, 0.0);
  const double inside[][2] = {
      {0, 0}, {0.5, 1}, {below_one, below_two}, {0, below_two}, {-0.0, 0}};
  for (const auto& p : inside) {
    EXPECT_TRUE(box->Contains(p)) << p[0] << ", " << p[1];
  }
  const double outside[][2] = {{1, 0},
                               {0, 2},
                               {1, 2},
                               {-1e-300, 0},
                               {0, std::nextafter(0.0, -1.0)},
                               {kNaN, 0.5},
                               {0.5, kNaN},
                               {kInf, 0.5},
                               {-kInf, 0.5}};
  for (const auto& p : outside) {
    EXPECT_FALSE(box->Contains(p)) << p[0] << ", " << p[1];
  }
}

TEST(BoxTest, ContainsChecksZOnlyIn3D) {
  absl::StatusOr<Box> cube = Box::Create(3, {0, 0, 0}, {1, 1, 1});
  ASSERT_TRUE(cube.ok()) << cube.status();
  const double in[3] = {0.5, 0.5, 0};
  const double on_top[3] = {0.5, 0.5, 1};
  const double below[3] = {0.5, 0.5, -0.5};
  EXPECT_TRUE(cube->Contains(in));
  EXPECT_FALSE(cube->Contains(on_top));
  EXPECT_FALSE(cube->Contains(below));
}

}  // namespace
}  // namespace scatter::sampler
