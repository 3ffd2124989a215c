#include "sampler/quality.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sampler/rng.h"

namespace scatter::sampler {
namespace {

// Cells are this much wider than the reach they must cover. Cell indices are
// computed in double, and without slack a pair just under the reach apart
// could round into cells two apart and never be compared.
constexpr double kCellSlack = 0x1.0p-20;
// At most this many cells per axis, so that the rounding error of an index,
// about 2^26 * 4 ulp, stays far below the slack above. A sparse set with a
// tiny radius gets wider cells instead: slower, never wrong.
constexpr double kMaxCellsPerAxis = 0x1.0p26;

absl::Status CheckDimsAndRadius(int dims, double radius) {
  if (dims != 2 && dims != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("dims must be 2 or 3, got ", dims));
  }
  if (!std::isfinite(radius) || !(radius > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius must be finite and > 0, got ", radius));
  }
  return absl::OkStatus();
}

absl::Status CheckCoords(absl::Span<const double> coords, int dims) {
  if (coords.size() % static_cast<std::size_t>(dims) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("coords.size() must be a multiple of dims (", dims,
                     "), got ", coords.size()));
  }
  return absl::OkStatus();
}

bool AllFinite(const double* p, int dims) {
  for (int a = 0; a < dims; ++a) {
    if (!std::isfinite(p[a])) return false;
  }
  return true;
}

// A uniform grid over a fixed point set, stored as one array sorted by cell
// (a counting sort, so building is O(N)). Any two points, or a query and a
// point, less than `reach` apart lie in the same or adjacent cells. When the
// bounding box holds few enough cells for the point count the cells are
// indexed densely, so the three cells of a row are one contiguous range;
// otherwise cells are hashed into about 2N buckets and a visit may also see
// unrelated points, which callers filter by distance anyway.
template <int kDims>
class PointGrid {
 public:
  // `points` holds finite coordinates, kDims per point. Every point and
  // every later query lies within [lo, hi] on each axis.
  PointGrid(const std::vector<double>& points, const std::array<double, 3>& lo,
            const std::array<double, 3>& hi, double reach) {
    const std::size_t n = points.size() / kDims;
    double max_span = 0;
    for (int a = 0; a < kDims; ++a) {
      max_span = std::max(max_span, hi[a] - lo[a]);
    }
    const double cell =
        std::max(reach * (1 + kCellSlack), max_span / kMaxCellsPerAxis);
    // An infinite cell (huge radius or span) puts everything in cell 0.
    inv_cell_ = std::isfinite(cell) ? 1 / cell : 0;
    double total_cells = 1;
    for (int a = 0; a < kDims; ++a) {
      origin_[a] = lo[a];
      // Loose for now (the cell size keeps indices below this), so that the
      // count of cells comes out of the same arithmetic as every lookup.
      last_[a] = static_cast<std::int64_t>(kMaxCellsPerAxis) + 1;
      last_[a] = Coord(hi[a], a);
      total_cells *= static_cast<double>(last_[a] + 1);
    }
    single_cell_ = total_cells == 1;
    // Dense indexing costs one counter per cell; beyond a few per point the
    // grid is mostly empty and hashing is cheaper.
    dense_ = total_cells <= 4.0 * static_cast<double>(n) + 4096;
    std::size_t buckets;
    if (dense_) {
      buckets = static_cast<std::size_t>(total_cells);
    } else {
      buckets = 1024;
      while (buckets < 2 * n) buckets *= 2;
      mask_ = buckets - 1;
    }

    std::vector<std::size_t> bucket_of(n);
    start_.assign(buckets + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::array<std::int64_t, 3> c = {0, 0, 0};
      for (int a = 0; a < kDims; ++a) c[a] = Coord(points[i * kDims + a], a);
      bucket_of[i] = Bucket(c);
      ++start_[bucket_of[i] + 1];
    }
    for (std::size_t b = 0; b < buckets; ++b) start_[b + 1] += start_[b];
    std::vector<std::size_t> next(start_.begin(), start_.end() - 1);
    sorted_.resize(points.size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t dst = next[bucket_of[i]]++;
      for (int a = 0; a < kDims; ++a) {
        sorted_[dst * kDims + a] = points[i * kDims + a];
      }
    }
  }

  std::size_t size() const { return sorted_.size() / kDims; }
  const double* point(std::size_t i) const { return &sorted_[i * kDims]; }
  // True when every point is in one cell, so a visit sees all of them.
  bool single_cell() const { return single_cell_; }

  // Calls visit(begin, end) on disjoint index ranges of sorted points that
  // together hold every point in the cells around `p`, the cell of `p`
  // first, since that is where a cover is most likely. Stops and returns true
  // as soon as `visit` does.
  template <typename Visit>
  bool VisitNeighbours(const double* p, Visit&& visit) const {
    std::array<std::int64_t, 3> c = {0, 0, 0};
    for (int a = 0; a < kDims; ++a) c[a] = Coord(p[a], a);
    // Offsets on the axes after x, own row first.
    static constexpr int kOrder[3] = {0, -1, 1};
    const int z_steps = kDims == 3 ? 3 : 1;
    if (dense_) {
      const std::int64_t x0 = std::max<std::int64_t>(c[0] - 1, 0);
      const std::int64_t x1 = std::min(c[0] + 1, last_[0]);
      for (int iz = 0; iz < z_steps; ++iz) {
        const std::int64_t z = c[2] + kOrder[iz];
        if (z < 0 || z > last_[2]) continue;
        for (int iy = 0; iy < 3; ++iy) {
          const std::int64_t y = c[1] + kOrder[iy];
          if (y < 0 || y > last_[1]) continue;
          const std::size_t row = static_cast<std::size_t>(
              (z * (last_[1] + 1) + y) * (last_[0] + 1));
          const std::size_t begin = start_[row + static_cast<std::size_t>(x0)];
          const std::size_t end =
              start_[row + static_cast<std::size_t>(x1) + 1];
          if (begin < end && visit(begin, end)) return true;
        }
      }
      return false;
    }
    // Hashed: neighbouring cells may share a bucket, and visiting it twice
    // would count its pairs twice.
    std::array<std::size_t, 27> seen;
    int num_seen = 0;
    for (int iz = 0; iz < z_steps; ++iz) {
      for (int iy = 0; iy < 3; ++iy) {
        for (int ix = 0; ix < 3; ++ix) {
          const std::array<std::int64_t, 3> n = {
              c[0] + kOrder[ix], c[1] + kOrder[iy], c[2] + kOrder[iz]};
          bool outside = false;
          for (int a = 0; a < kDims; ++a) {
            outside = outside || n[a] < 0 || n[a] > last_[a];
          }
          if (outside) continue;
          const std::size_t b = Bucket(n);
          if (std::find(seen.begin(), seen.begin() + num_seen, b) !=
              seen.begin() + num_seen) {
            continue;
          }
          seen[static_cast<std::size_t>(num_seen++)] = b;
          if (start_[b] < start_[b + 1] && visit(start_[b], start_[b + 1])) {
            return true;
          }
        }
      }
    }
    return false;
  }

 private:
  // Clamping keeps rounding at the edges (and NaN from infinite spans) inside
  // the grid; it only merges cells, which keeps close pairs adjacent.
  std::int64_t Coord(double v, int axis) const {
    double q = (v - origin_[axis]) * inv_cell_;
    if (!(q >= 0)) q = 0;
    const double last = static_cast<double>(last_[axis]);
    if (q > last) q = last;
    return static_cast<std::int64_t>(q);
  }

  std::size_t Bucket(const std::array<std::int64_t, 3>& c) const {
    if (dense_) {
      return static_cast<std::size_t>(
          (c[2] * (last_[1] + 1) + c[1]) * (last_[0] + 1) + c[0]);
    }
    const std::uint64_t key =
        static_cast<std::uint64_t>(c[0]) +
        static_cast<std::uint64_t>(c[1]) * 0x9e3779b97f4a7c15ULL +
        static_cast<std::uint64_t>(c[2]) * 0xc2b2ae3d27d4eb4fULL;
    return static_cast<std::size_t>(Mix64(key)) & mask_;
  }

  std::array<double, 3> origin_ = {0, 0, 0};
  double inv_cell_ = 0;
  std::array<std::int64_t, 3> last_ = {0, 0, 0};  // Highest cell per axis.
  bool dense_ = true;
  bool single_cell_ = true;
  std::size_t mask_ = 0;
  std::vector<std::size_t> start_;  // Bucket b is [start_[b], start_[b+1]).
  std::vector<double> sorted_;
};

template <int kDims>
long double SquaredDistanceLong(const double* p, const double* q) {
  long double sum = 0;
  for (int a = 0; a < kDims; ++a) {
    const long double d =
        static_cast<long double>(p[a]) - static_cast<long double>(q[a]);
    sum += d * d;
  }
  return sum;
}

template <int kDims>
MinDistanceReport MinDistance(const std::vector<double>& points,
                              double radius) {
  MinDistanceReport report;
  report.min_ratio = std::numeric_limits<double>::infinity();
  if (points.size() < 2 * kDims) return report;

  std::array<double, 3> lo = {0, 0, 0};
  std::array<double, 3> hi = {0, 0, 0};
  for (int a = 0; a < kDims; ++a) lo[a] = hi[a] = points[a];
  for (std::size_t i = 0; i < points.size(); i += kDims) {
    for (int a = 0; a < kDims; ++a) {
      lo[a] = std::min(lo[a], points[i + a]);
      hi[a] = std::max(hi[a], points[i + a]);
    }
  }

  const long double radius2 = static_cast<long double>(radius) * radius;
  long double min_d2 = std::numeric_limits<long double>::infinity();
  // The first pass, reach = radius, sees every violating pair. If it finds
  // no pair within its reach, the closest pair is farther apart and was
  // possibly never compared, so widen the reach until one turns up. Each
  // pass is O(N): a cell no wider than twice the closest distance holds O(1)
  // points. Sampler output stops after the first pass.
  bool count_violations = true;
  for (double reach = radius;; reach *= 2, count_violations = false) {
    const PointGrid<kDims> grid(points, lo, hi, reach);
    for (std::size_t i = 0; i < grid.size(); ++i) {
      const double* p = grid.point(i);
      grid.VisitNeighbours(p, [&](std::size_t begin, std::size_t end) {
        // Each pair once: only partners later in the sorted order.
        for (std::size_t j = std::max(begin, i + 1); j < end; ++j) {
          const long double d2 = SquaredDistanceLong<kDims>(p, grid.point(j));
          if (count_violations && d2 < radius2) ++report.violations;
          min_d2 = std::min(min_d2, d2);
        }
        return false;
      });
    }
    const long double reach2 = static_cast<long double>(reach) * reach;
    if (min_d2 < reach2 || grid.single_cell() || !std::isfinite(reach * 2)) {
      break;
    }
  }

  // The ratio of squares keeps radii near the ends of the double range from
  // underflowing before the square root.
  report.min_ratio = std::sqrt(static_cast<double>(min_d2 / radius2));
  // A pair a hair inside the radius can round to exactly 1; keep the
  // documented ">= 1 means it holds" true.
  if (report.violations > 0 && report.min_ratio >= 1) {
    report.min_ratio = std::nextafter(1.0, 0.0);
  }
  return report;
}

template <int kDims>
CoverageReport Coverage(const std::vector<double>& points, const Region& region,
                        double radius, std::uint64_t probes,
                        std::uint64_t probe_seed) {
  const Box& box = region.bounds();
  std::array<double, 3> lo = {0, 0, 0};
  std::array<double, 3> hi = {0, 0, 0};
  for (int a = 0; a < kDims; ++a) {
    lo[a] = box.min(a);
    hi[a] = box.max(a);
  }
  for (std::size_t i = 0; i < points.size(); i += kDims) {
    for (int a = 0; a < kDims; ++a) {
      lo[a] = std::min(lo[a], points[i + a]);
      hi[a] = std::max(hi[a], points[i + a]);
    }
  }
  const PointGrid<kDims> grid(points, lo, hi, radius);

  // Keyed off the probe seed alone, with a tag ("probe") that no sampler
  // stream uses, so probes never replay the sampler's own numbers even when
  // probe_seed equals its seed.
  CounterRng rng(Combine(Mix64(probe_seed), 0x70726f6265ULL));
  const double radius2 = radius * radius;
  CoverageReport report;
  double p[kDims];
  for (std::uint64_t k = 0; k < probes; ++k) {
    for (int a = 0; a < kDims; ++a) {
      p[a] = box.min(a) + rng.Uniform01() * box.extent(a);
    }
    // Probes fall uniformly in the bounds; only those in the region count.
    if (!region.IsBox() && !region.Contains(p)) continue;
    ++report.probes;
    const bool covered =
        grid.VisitNeighbours(p, [&](std::size_t begin, std::size_t end) {
          for (std::size_t j = begin; j < end; ++j) {
            const double* q = grid.point(j);
            double d2 = 0;
            for (int a = 0; a < kDims; ++a) {
              const double d = p[a] - q[a];
              d2 += d * d;
            }
            if (d2 < radius2) return true;
          }
          return false;
        });
    if (!covered) ++report.uncovered;
  }
  return report;
}

// Points bucketed by radius band b (radii in [r0 2^b, r0 2^(b+1)), r0 the
// smallest radius), each band a list of (cell, point) sorted by cell, with
// cells of side r0 2^(b+1), at least any radius in the band. A query walks
// the rows of cells of each band within its reach, one binary search per
// row, so a big point over a band of small ones costs rows, not cells.
template <int kDims>
class BandIndex {
 public:
  BandIndex(const std::vector<double>& points,
            const std::vector<double>& radii) {
    const std::size_t n = radii.size();
    r0_ = std::numeric_limits<double>::infinity();
    for (double r : radii) r0_ = std::min(r0_, r);
    for (int a = 0; a < kDims; ++a) {
      origin_[a] = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < n; ++i) {
        origin_[a] = std::min(origin_[a], points[i * kDims + a]);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t b = 0;
      while (radii[i] >= std::ldexp(r0_, static_cast<int>(b) + 1)) ++b;
      if (b >= bands_.size()) bands_.resize(b + 1);
      Band& band = bands_[b];
      band.cell = std::ldexp(r0_, static_cast<int>(b) + 1);
      band.entries.push_back({CellOf(&points[i * kDims], band.cell), i});
    }
    for (Band& band : bands_) {
      std::sort(band.entries.begin(), band.entries.end());
    }
  }

  // Calls visit(j) for every point j within reach(band cell side) of p in
  // each band (and some farther), until visit returns true.
  template <class Reach, class F>
  bool Visit(const double* p, Reach reach, F visit) const {
    for (const Band& band : bands_) {
      if (band.entries.empty()) continue;
      const double w = reach(band.cell);
      std::array<std::int64_t, 3> lo = {0, 0, 0}, hi = {0, 0, 0};
      for (int a = 0; a < kDims; ++a) {
        lo[a] = Coord(p[a] - w, a, band.cell);
        hi[a] = Coord(p[a] + w, a, band.cell);
      }
      for (std::int64_t z = lo[2]; z <= hi[2]; ++z) {
        for (std::int64_t y = lo[1]; y <= hi[1]; ++y) {
          const Entry first{{lo[0], y, z}, 0};
          const Entry last{{hi[0], y, z},
                           std::numeric_limits<std::size_t>::max()};
          auto it =
              std::lower_bound(band.entries.begin(), band.entries.end(), first);
          for (; it != band.entries.end() && !(last < *it); ++it) {
            if (visit(it->index)) return true;
          }
        }
      }
    }
    return false;
  }

 private:
  struct Entry {
    std::array<std::int64_t, 3> cell;  // Compared z, y, x.
    std::size_t index;
    bool operator<(const Entry& o) const {
      if (cell[2] != o.cell[2]) return cell[2] < o.cell[2];
      if (cell[1] != o.cell[1]) return cell[1] < o.cell[1];
      if (cell[0] != o.cell[0]) return cell[0] < o.cell[0];
      return index < o.index;
    }
  };
  struct Band {
    double cell = 0;
    std::vector<Entry> entries;
  };

  // Floor, clamped to a range no query leaves (far queries merge cells,
  // which only adds candidates that the caller filters by distance).
  std::int64_t Coord(double v, int a, double cell) const {
    double q = std::floor((v - origin_[a]) / cell);
    q = std::max(-0x1.0p40, std::min(0x1.0p40, q));
    return static_cast<std::int64_t>(q);
  }
  std::array<std::int64_t, 3> CellOf(const double* p, double cell) const {
    std::array<std::int64_t, 3> c = {0, 0, 0};
    for (int a = 0; a < kDims; ++a) c[a] = Coord(p[a], a, cell);
    return c;
  }

  double r0_ = 0;
  std::array<double, 3> origin_ = {0, 0, 0};
  std::vector<Band> bands_;
};

template <int kDims>
MinDistanceReport MinDistanceVariable(const std::vector<double>& points,
                                      const std::vector<double>& radii) {
  MinDistanceReport report;
  report.min_ratio = std::numeric_limits<double>::infinity();
  const BandIndex<kDims> index(points, radii);
  long double min_ratio2 = std::numeric_limits<long double>::infinity();
  for (std::size_t i = 0; i < radii.size(); ++i) {
    const double* p = &points[i * kDims];
    const double ri = radii[i];
    // Pairs where r_i is the larger radius (ties: the lower index), within
    // 2 r_i: every conflicting pair is found once, from its larger point.
    index.Visit(
        p, [&](double) { return 2 * ri; },
        [&](std::size_t j) {
          const double rj = radii[j];
          if (j == i || rj > ri || (rj == ri && j < i)) return false;
          const long double d2 =
              SquaredDistanceLong<kDims>(p, &points[j * kDims]);
          const long double r2 = static_cast<long double>(ri) * ri;
          if (d2 < r2) ++report.violations;
          min_ratio2 = std::min(min_ratio2, d2 / r2);
          return false;
        });
  }
  if (min_ratio2 < 4) {
    report.min_ratio = std::sqrt(static_cast<double>(min_ratio2));
  }
  if (report.violations > 0 && report.min_ratio >= 1) {
    report.min_ratio = std::nextafter(1.0, 0.0);
  }
  return report;
}

template <int kDims>
CoverageReport CoverageVariable(
    const std::vector<double>& points, const std::vector<double>& radii,
    const Region& region, absl::FunctionRef<double(const double*)> radius_at,
    std::uint64_t probes, std::uint64_t probe_seed,
    absl::FunctionRef<bool(const double*)> skip) {
  const Box& box = region.bounds();
  const BandIndex<kDims> index(points, radii);
  CounterRng rng(Combine(Mix64(probe_seed), 0x70726f6265ULL));
  CoverageReport report;
  double p[kDims];
  for (std::uint64_t k = 0; k < probes; ++k) {
    for (int a = 0; a < kDims; ++a) {
      p[a] = box.min(a) + rng.Uniform01() * box.extent(a);
    }
    if (!region.IsBox() && !region.Contains(p)) continue;
    if (skip(p)) continue;
    ++report.probes;
    const double rp = radius_at(p);
    // A band's points have radius below its cell side.
    const bool covered = index.Visit(
        p, [&](double cell) { return std::max(rp, cell); },
        [&](std::size_t j) {
          const double* q = &points[j * kDims];
          double d2 = 0;
          for (int a = 0; a < kDims; ++a) {
            const double d = p[a] - q[a];
            d2 += d * d;
          }
          const double t = std::max(rp, radii[j]);
          return d2 < t * t;
        });
    if (!covered) ++report.uncovered;
  }
  return report;
}

absl::Status CheckRadii(absl::Span<const double> coords,
                        absl::Span<const double> radii, int dims) {
  if (dims != 2 && dims != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("dims must be 2 or 3, got ", dims));
  }
  absl::Status status = CheckCoords(coords, dims);
  if (!status.ok()) return status;
  if (radii.size() * static_cast<std::size_t>(dims) != coords.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("radii.size() must be coords.size() / dims (",
                     coords.size() / static_cast<std::size_t>(dims), "), got ",
                     radii.size()));
  }
  for (std::size_t i = 0; i < radii.size(); ++i) {
    if (!std::isfinite(radii[i]) || !(radii[i] > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "radii[", i, "] must be finite and > 0, got ", radii[i]));
    }
  }
  return absl::OkStatus();
}

// The finite points and their radii.
void FiniteOnly(absl::Span<const double> coords, absl::Span<const double> radii,
                int dims, std::vector<double>* points,
                std::vector<double>* kept) {
  for (std::size_t i = 0; i < radii.size(); ++i) {
    const double* p = &coords[i * static_cast<std::size_t>(dims)];
    if (!AllFinite(p, dims)) continue;
    points->insert(points->end(), p, p + dims);
    kept->push_back(radii[i]);
  }
}

}  // namespace

absl::StatusOr<MinDistanceReport> CheckMinDistanceVariable(
    absl::Span<const double> coords, absl::Span<const double> radii, int dims) {
  absl::Status status = CheckRadii(coords, radii, dims);
  if (!status.ok()) return status;
  std::vector<double> points, kept;
  FiniteOnly(coords, radii, dims, &points, &kept);
  return dims == 2 ? MinDistanceVariable<2>(points, kept)
                   : MinDistanceVariable<3>(points, kept);
}

absl::StatusOr<CoverageReport> MeasureCoverageVariable(
    absl::Span<const double> coords, absl::Span<const double> radii,
    const Region& region, absl::FunctionRef<double(const double*)> radius_at,
    std::uint64_t probes, std::uint64_t probe_seed) {
  return MeasureCoverageVariable(coords, radii, region, radius_at, probes,
                                 probe_seed,
                                 [](const double*) { return false; });
}

absl::StatusOr<CoverageReport> MeasureCoverageVariable(
    absl::Span<const double> coords, absl::Span<const double> radii,
    const Region& region, absl::FunctionRef<double(const double*)> radius_at,
    std::uint64_t probes, std::uint64_t probe_seed,
    absl::FunctionRef<bool(const double*)> skip) {
  const int dims = region.dims();
  absl::Status status = CheckRadii(coords, radii, dims);
  if (!status.ok()) return status;
  std::vector<double> points, kept;
  FiniteOnly(coords, radii, dims, &points, &kept);
  return dims == 2 ? CoverageVariable<2>(points, kept, region, radius_at,
                                         probes, probe_seed, skip)
                   : CoverageVariable<3>(points, kept, region, radius_at,
                                         probes, probe_seed, skip);
}

absl::StatusOr<MinDistanceReport> CheckMinDistance(
    absl::Span<const double> coords, int dims, double radius) {
  absl::Status status = CheckDimsAndRadius(dims, radius);
  if (!status.ok()) return status;
  status = CheckCoords(coords, dims);
  if (!status.ok()) return status;

  // A NaN or infinite coordinate is never closer than the radius to anything
  // under the exact test (the difference is NaN or infinite), so leaving
  // such points out changes no count and keeps the grid finite.
  std::vector<double> points;
  points.reserve(coords.size());
  for (std::size_t i = 0; i < coords.size(); i += dims) {
    if (!AllFinite(&coords[i], dims)) continue;
    points.insert(points.end(), &coords[i], &coords[i] + dims);
  }
  return dims == 2 ? MinDistance<2>(points, radius)
                   : MinDistance<3>(points, radius);
}

absl::StatusOr<CoverageReport> MeasureCoverage(absl::Span<const double> coords,
                                               const Box& box, double radius,
                                               std::uint64_t probes,
                                               std::uint64_t probe_seed) {
  return MeasureCoverage(coords, Region::FromBox(box), radius, probes,
                         probe_seed);
}

absl::StatusOr<CoverageReport> MeasureCoverage(absl::Span<const double> coords,
                                               const Region& region,
                                               double radius,
                                               std::uint64_t probes,
                                               std::uint64_t probe_seed) {
  const Box& box = region.bounds();
  const int dims = box.dims();
  absl::Status status = CheckDimsAndRadius(dims, radius);
  if (!status.ok()) return status;
  status = CheckCoords(coords, dims);
  if (!status.ok()) return status;

  // Only samples within the radius of the box (per axis) can cover a probe;
  // the rest, and non-finite ones, would only stretch the grid. The margin is
  // doubled so rounding of the bounds can never drop a sample that covers.
  std::vector<double> points;
  points.reserve(coords.size());
  for (std::size_t i = 0; i < coords.size(); i += dims) {
    bool near = true;
    for (int a = 0; a < dims; ++a) {
      const double v = coords[i + a];
      near = near && v > box.min(a) - 2 * radius && v < box.max(a) + 2 * radius;
    }
    if (near) points.insert(points.end(), &coords[i], &coords[i] + dims);
  }
  return dims == 2 ? Coverage<2>(points, region, radius, probes, probe_seed)
                   : Coverage<3>(points, region, radius, probes, probe_seed);
}

double RelativeRadius(std::uint64_t n, double measure, int dims,
                      double radius) {
  assert(dims == 2 || dims == 3);
  if (n == 0) return 0;
  const double count = static_cast<double>(n);
  const double r_max = dims == 2
                           ? std::sqrt(2 * measure / (std::sqrt(3.0) * count))
                           : std::cbrt(std::sqrt(2.0) * measure / count);
  return radius / r_max;
}

}  // namespace scatter::sampler
