#include "sampler/obstacles.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sampler/box_distance.h"

namespace scatter::sampler::internal {
namespace {

// As the Poisson sampler: accept only when the squared distance is at least
// clearance^2 * (1 + 2^-40), so rounding never lets a point inside.
constexpr double kSlack = 0x1.0p-40;

}  // namespace

ObstacleIndex::ObstacleIndex(const std::vector<Obstacle>& obstacles,
                             double footprint, int dims, double max_extra,
                             double own_radius, double max_own, const Box* grid,
                             const Box* area)
    : dims_(dims) {
  if (obstacles.empty()) return;
  double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL};
  double hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  // Room for all: a layered run passes millions (every earlier layer's
  // point), and growth by doubling held up to twice as much.
  centers_.reserve(3 * obstacles.size());
  clearance_.reserve(obstacles.size());
  limit2_.reserve(obstacles.size());
  takes_extra_.reserve(obstacles.size());
  takes_own_.reserve(obstacles.size());
  std::vector<double> reaches;  // Per obstacle kept, for the index.
  reaches.reserve(obstacles.size());
  for (const Obstacle& o : obstacles) {
    if (o.same_layer && grid != nullptr && grid->Contains(o.center.data())) {
      for (int a = 0; a < 3; ++a) same_centers_.push_back(o.center[a]);
      same_radius_.push_back(o.radius);
      same_wake_.push_back(o.wake_generation);
      continue;
    }
    // Same layer: max(radius, own), fixed when the run's radius is.
    const bool own = o.same_layer && !(own_radius > 0);
    const bool fixed = o.radius_is_clearance || o.same_layer;
    const double c = o.same_layer ? std::max(o.radius, own_radius)
                     : fixed      ? o.radius
                                  : o.radius + footprint;
    // How far the obstacle can reach with a point's own footprint added, or
    // with its own radius.
    const double reach = own ? std::max(c, max_own) : fixed ? c : c + max_extra;
    if (area != nullptr) {
      // Past the area by more than its reach (and a margin far above any
      // rounding of these sums): no place of the area is within it.
      bool misses = false;
      for (int a = 0; a < dims; ++a) {
        const double margin = reach * 1e-6 + 1e-300;
        misses |= o.center[a] + reach + margin < area->min(a) ||
                  o.center[a] - reach - margin > area->max(a);
      }
      if (misses) continue;
    }
    for (int a = 0; a < dims; ++a) {
      centers_.push_back(o.center[a]);
      lo[a] = std::min(lo[a], o.center[a] - reach);
      hi[a] = std::max(hi[a], o.center[a] + reach);
    }
    for (int a = dims; a < 3; ++a) centers_.push_back(0);
    clearance_.push_back(c);
    limit2_.push_back(c * c * (1 + kSlack));
    takes_extra_.push_back(fixed ? 0 : 1);
    takes_own_.push_back(own ? 1 : 0);
    takes_own_radius_ |= own;
    reaches.push_back(reach);
  }
  if (clearance_.empty()) return;
  // Obstacles of very different reach get grids of their own, by powers of
  // two of the reach over the cells the obstacles' number asks for. One
  // grid with cells as wide as the largest reach (one obstacle of 75 among
  // 100 000 of 0.1) listed thousands of obstacles in each cell, and every
  // query read them all: a run of 1.3 s took 72 s.
  double volume = 1;
  for (int a = 0; a < dims; ++a) volume *= std::max(hi[a] - lo[a], 1e-300);
  const double base =
      std::max(std::pow(volume / (4.0 * static_cast<double>(clearance_.size())),
                        1.0 / dims),
               1e-300);
  // Level 0: reach up to the base cell; level l: up to base 2^l (a reach
  // too large for a double, the last level). In order of reach.
  std::map<int, std::vector<std::uint32_t>> by_level;
  for (std::size_t k = 0; k < reaches.size(); ++k) {
    int l = 0;
    if (reaches[k] > base) {
      const double octaves = std::ceil(std::log2(reaches[k] / base));
      l = std::isfinite(octaves) ? static_cast<int>(std::min(octaves, 4096.0))
                                 : 4097;
    }
    by_level[l].push_back(static_cast<std::uint32_t>(k));
  }
  levels_.resize(by_level.size());
  std::size_t l = 0;
  for (const auto& [octave, members] : by_level) {
    BuildLevel(members, reaches, &levels_[l++]);
  }
}

void ObstacleIndex::BuildLevel(const std::vector<std::uint32_t>& members,
                               const std::vector<double>& reach, Level* level) {
  const int dims = dims_;
  double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL};
  double hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  double max_reach = 0;
  for (std::uint32_t k : members) {
    for (int a = 0; a < dims; ++a) {
      lo[a] = std::min(lo[a], centers_[k * 3 + a] - reach[k]);
      hi[a] = std::max(hi[a], centers_[k * 3 + a] + reach[k]);
    }
    max_reach = std::max(max_reach, reach[k]);
  }
  // Cells about the largest reach of the level, but no more than ~4 per
  // obstacle.
  double volume = 1;
  for (int a = 0; a < dims; ++a) volume *= std::max(hi[a] - lo[a], 1e-300);
  const double cells_wanted = 4.0 * static_cast<double>(members.size());
  double cell = std::max(
      {max_reach, std::pow(volume / cells_wanted, 1.0 / dims), 1e-300});
  // Extents that underflow the volume (obstacles far apart on one axis,
  // with clearances near 0) would ask for billions of cells: widen the
  // cells until there are at most 8 per obstacle (64 at least). Cells stay
  // at least the largest reach, so an obstacle meets at most 3 a side.
  const double most_cells = std::max(64.0, 2 * cells_wanted);
  auto cells_for = [&](double side) {
    double n = 1;
    for (int a = 0; a < dims; ++a) {
      n *= std::max(1.0, std::ceil((hi[a] - lo[a]) / side));
    }
    return n;
  };
  while (std::isfinite(cell) && cells_for(cell) > most_cells) cell *= 2;
  bool finite = std::isfinite(cell);
  for (int a = 0; a < dims; ++a) finite &= std::isfinite(hi[a] - lo[a]);
  std::size_t cells = 1;
  if (!finite) {
    // A reach or extent too large for a double (an obstacle of radius
    // 1e308): one cell holds the level.
    level->one_cell = true;
  } else {
    level->inv_cell = 1 / cell;
    for (int a = 0; a < dims; ++a) {
      level->origin[a] = lo[a];
      level->n[a] = std::max<std::int64_t>(
          1, static_cast<std::int64_t>(
                 std::ceil((hi[a] - lo[a]) * level->inv_cell)));
      cells *= static_cast<std::size_t>(level->n[a]);
    }
  }
  // Each obstacle's cells, visited twice: to count them per cell, then to
  // list the obstacles in index order (a list of (cell, obstacle) pairs
  // cost up to 144 bytes an obstacle at its peak).
  auto for_each_cell = [&](auto&& visit) {
    for (std::uint32_t k : members) {
      double b0[3], b1[3];
      for (int a = 0; a < dims; ++a) {
        b0[a] = centers_[k * 3 + a] - reach[k];
        b1[a] = centers_[k * 3 + a] + reach[k];
      }
      std::int64_t c0[3], c1[3];
      if (!CellRange(*level, b0, b1, c0, c1)) continue;
      for (std::int64_t z = c0[2]; z <= c1[2]; ++z) {
        for (std::int64_t y = c0[1]; y <= c1[1]; ++y) {
          for (std::int64_t x = c0[0]; x <= c1[0]; ++x) {
            visit(static_cast<std::size_t>((z * level->n[1] + y) * level->n[0] +
                                           x),
                  k);
          }
        }
      }
    }
  };
  std::vector<std::uint32_t>& begin = level->begin;
  begin.assign(cells + 1, 0);
  for_each_cell(
      [&](std::size_t cell_id, std::uint32_t) { ++begin[cell_id + 1]; });
  for (std::size_t c = 0; c < cells; ++c) begin[c + 1] += begin[c];
  level->index.resize(begin[cells]);
  // Each cell's next free slot, kept in begin (shifted down a cell) and
  // put back by the fill: cell c's slots end where c + 1's begin.
  for_each_cell([&](std::size_t cell_id, std::uint32_t k) {
    level->index[begin[cell_id]++] = k;
  });
  for (std::size_t c = cells; c > 0; --c) begin[c] = begin[c - 1];
  begin[0] = 0;
}

bool ObstacleIndex::CellRange(const Level& level, const double* lo,
                              const double* hi, std::int64_t* c0,
                              std::int64_t* c1) const {
  for (int a = 0; a < 3; ++a) c0[a] = c1[a] = 0;
  if (level.one_cell) return true;
  for (int a = 0; a < dims_; ++a) {
    const double f0 = (lo[a] - level.origin[a]) * level.inv_cell;
    const double f1 = (hi[a] - level.origin[a]) * level.inv_cell;
    const auto last = static_cast<double>(level.n[a] - 1);
    if (f1 < 0 || f0 >= static_cast<double>(level.n[a])) return false;
    // Clamped in double before the cast (a box may reach far past the
    // grid); NaN keeps the whole range.
    c0[a] = f0 > 0 ? static_cast<std::int64_t>(std::min(f0, last)) : 0;
    c1[a] = f1 < last ? (f1 > 0 ? static_cast<std::int64_t>(f1) : 0)
                      : level.n[a] - 1;
  }
  return true;
}

template <class F>
bool ObstacleIndex::AnyInBox(const double* lo, const double* hi, F&& f) const {
  for (const Level& level : levels_) {
    std::int64_t c0[3], c1[3];
    if (!CellRange(level, lo, hi, c0, c1)) continue;
    for (std::int64_t z = c0[2]; z <= c1[2]; ++z) {
      for (std::int64_t y = c0[1]; y <= c1[1]; ++y) {
        for (std::int64_t x = c0[0]; x <= c1[0]; ++x) {
          const auto cell =
              static_cast<std::size_t>((z * level.n[1] + y) * level.n[0] + x);
          for (std::uint32_t k = level.begin[cell]; k < level.begin[cell + 1];
               ++k) {
            if (f(level.index[k])) return true;
          }
        }
      }
    }
  }
  return false;
}

bool ObstacleIndex::TooClose(const double* p) const {
  if (empty()) return false;
  return AnyInBox(p, p, [&](std::uint32_t o) {
    double d2 = 0;
    for (int a = 0; a < dims_; ++a) {
      const double d = p[a] - centers_[o * 3 + a];
      d2 += d * d;
    }
    return d2 < limit2_[o];
  });
}

void ObstacleIndex::Classify(const double* lo, const double* hi, bool* inside,
                             bool* reaches) const {
  *inside = false;
  *reaches = false;
  if (empty()) return;
  AnyInBox(lo, hi, [&](std::uint32_t o) {
    const double* c = &centers_[o * 3];
    if (NearestDistance2(c, lo, hi, dims_) < limit2_[o]) *reaches = true;
    *inside = FarthestDistance2(c, lo, hi, dims_) < limit2_[o];
    return *inside;
  });
}

bool ObstacleIndex::Holds(const double* lo, const double* hi) const {
  if (empty()) return false;
  // One that holds the box reaches its low corner, so that corner's cell
  // lists it, in its level.
  return AnyInBox(lo, lo, [&](std::uint32_t o) {
    return FarthestDistance2(&centers_[o * 3], lo, hi, dims_) < limit2_[o];
  });
}

bool ObstacleIndex::TooCloseExtra(const double* p, double extra,
                                  double own) const {
  if (empty()) return false;
  return AnyInBox(p, p, [&](std::uint32_t o) {
    double d2 = 0;
    for (int a = 0; a < dims_; ++a) {
      const double d = p[a] - centers_[o * 3 + a];
      d2 += d * d;
    }
    const double c =
        std::max(clearance_[o] + takes_extra_[o] * extra, takes_own_[o] * own);
    return d2 < c * c * (1 + kSlack);
  });
}

void ObstacleIndex::ClassifyExtra(const double* lo, const double* hi,
                                  double extra_lo, double extra_hi,
                                  bool* inside, bool* reaches, double own_lo,
                                  double own_hi) const {
  *inside = false;
  *reaches = false;
  if (empty()) return;
  AnyInBox(lo, hi, [&](std::uint32_t o) {
    const double* c = &centers_[o * 3];
    const double c_lo = std::max(clearance_[o] + takes_extra_[o] * extra_lo,
                                 takes_own_[o] * own_lo);
    const double c_hi = std::max(clearance_[o] + takes_extra_[o] * extra_hi,
                                 takes_own_[o] * own_hi);
    if (NearestDistance2(c, lo, hi, dims_) < c_hi * c_hi * (1 + kSlack)) {
      *reaches = true;
    }
    // Held whole only if held with the smallest footprint, shrunk so
    // rounding never claims a box that pokes out.
    *inside = FarthestDistance2(c, lo, hi, dims_) < c_lo * c_lo * (1 - 1e-9);
    return *inside;
  });
}

}  // namespace scatter::sampler::internal
