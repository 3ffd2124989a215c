#include "client/report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/local.h"
#include "sampler/quality.h"
#include "server/convert.h"

namespace scatter::client {
namespace {

// The 21-bit cell coordinates of a hash grid packed in one key (they wrap:
// far cells may share a key, which the exact distance tests sort out).
std::uint64_t PackCell(std::int64_t i, std::int64_t j, std::int64_t k) {
  return (static_cast<std::uint64_t>(i) & 0x1fffff) |
         ((static_cast<std::uint64_t>(j) & 0x1fffff) << 21) |
         ((static_cast<std::uint64_t>(k) & 0x1fffff) << 42);
}

// Discs in hash grids, one per power of two of their reach, each with
// cells of that power, so a query looks at the 3^dims cells around it in
// each grid. (One grid with the largest reach as its cell put thousands of
// small points in each cell beside one large obstacle: a report took 90 s
// for a run of 0.2 s.) A disc is a point of the layer measured (reach:
// its radius), or something that blocks it: an obstacle or an earlier
// layer's point (reach: the clearance, apart from the footprint of the
// layer's point where that is per point, which `adds` says to add).
// A density layer's own points also cover a place closer than its own
// local radius (the rule is max(r(p), r_s)): for that they are kept in
// grids of every power from their reach's up to most_local's, and a query
// of local radius L looks in the finest one of cells over L. (Kept at
// most_local alone, with a ratio of 50 a cell held thousands: 34 s.)
class DiscGrid {
 public:
  enum Kind { kOwn, kBlocker, kBlockerAddsFootprint };
  // Queries pass a local radius up to most_local and a footprint up to
  // most_footprint.
  DiscGrid(int dims, double most_local, double most_footprint)
      : dims_(dims), most_local_(most_local), most_footprint_(most_footprint) {}
  void Add(const double* c, double reach, Kind kind) {
    const Disc d{{c[0], c[1], dims_ == 3 ? c[2] : 0}, reach, kind};
    if (kind == kOwn && most_local_ > 0) {
      for (int e = Exponent(reach); e <= Exponent(most_local_); ++e) {
        Insert(&within_[e], e, d);
      }
    }
    // The most it can reach for any query, apart from the local radius.
    const double most =
        kind == kBlockerAddsFootprint ? reach + most_footprint_ : reach;
    if (!(most > 0)) return;  // Covers nothing.
    const int e = Exponent(most);
    Insert(&levels_[e], e, d);
  }
  // Whether p is within some disc's reach, for a point at p of local
  // radius `local` (own points cover it when closer than max(local, their
  // radius): the variable-radius rule) and footprint `footprint` (added to
  // the blockers' reach that take it).
  bool Covers(const double* p, double local = 0, double footprint = 0) const {
    if (local > 0) {
      auto finest = within_.upper_bound(Exponent(local) - 1);
      if (finest != within_.end() &&
          Any(finest->second, p, [local](const Disc&) { return local; })) {
        return true;
      }
    }
    for (const auto& [exponent, level] : levels_) {
      if (Any(level, p, [footprint](const Disc& d) {
            return d.kind == kBlockerAddsFootprint ? d.reach + footprint
                                                   : d.reach;
          })) {
        return true;
      }
    }
    return false;
  }

 private:
  struct Disc {
    double c[3];
    double reach;
    Kind kind;
  };
  struct Level {
    double cell = 0;
    absl::flat_hash_map<std::uint64_t, std::vector<Disc>> cells;
  };
  // 2^Exponent(x) > x.
  static int Exponent(double x) {
    int exponent = 0;
    std::frexp(x, &exponent);
    return exponent;
  }
  void Insert(Level* level, int exponent, const Disc& d) {
    level->cell = std::ldexp(1.0, exponent);
    level->cells[Key(level->cell, d.c, 0, 0, 0)].push_back(d);
  }
  // Whether a disc in the 3^dims cells around p is closer to it than
  // reach(disc), which is at most the level's cell.
  template <class Reach>
  bool Any(const Level& level, const double* p, Reach reach_of) const {
    for (int dk = dims_ == 3 ? -1 : 0; dk <= (dims_ == 3 ? 1 : 0); ++dk) {
      for (int dj = -1; dj <= 1; ++dj) {
        for (int di = -1; di <= 1; ++di) {
          auto it = level.cells.find(Key(level.cell, p, di, dj, dk));
          if (it == level.cells.end()) continue;
          for (const Disc& d : it->second) {
            double s = 0;
            for (int a = 0; a < dims_; ++a) {
              s += (p[a] - d.c[a]) * (p[a] - d.c[a]);
            }
            const double reach = reach_of(d);
            if (s < reach * reach) return true;
          }
        }
      }
    }
    return false;
  }
  std::uint64_t Key(double cell, const double* c, int di, int dj,
                    int dk) const {
    auto at = [cell](double v) {
      return static_cast<std::int64_t>(std::floor(v / cell));
    };
    return PackCell(at(c[0]) + di, at(c[1]) + dj,
                    (dims_ == 3 ? at(c[2]) : 0) + dk);
  }
  int dims_;
  double most_local_;
  double most_footprint_;
  std::map<int, Level> levels_;
  // Own points by the powers of two their local-radius queries use.
  std::map<int, Level> within_;
};

// Pairs of one layer closer than `cell`, each once: f(m, n, squared
// distance).
template <class F>
void ForEachPairWithin(const std::vector<std::size_t>& members,
                       const v1::PointBatch& all, int dims, double cell, F f) {
  auto key = [&](const double* c, int di, int dj, int dk) {
    auto at = [cell](double v) {
      return static_cast<std::int64_t>(std::floor(v / cell));
    };
    return PackCell(at(c[0]) + di, at(c[1]) + dj,
                    (dims == 3 ? at(c[2]) : 0) + dk);
  };
  absl::flat_hash_map<std::uint64_t, std::vector<std::size_t>> grid;
  for (std::size_t m : members) {
    grid[key(all.coords().data() + m * dims, 0, 0, 0)].push_back(m);
  }
  for (std::size_t m : members) {
    const double* a = all.coords().data() + m * dims;
    for (int dk = dims == 3 ? -1 : 0; dk <= (dims == 3 ? 1 : 0); ++dk) {
      for (int dj = -1; dj <= 1; ++dj) {
        for (int di = -1; di <= 1; ++di) {
          auto it = grid.find(key(a, di, dj, dk));
          if (it == grid.end()) continue;
          for (std::size_t n : it->second) {
            if (n <= m) continue;
            const double* b = all.coords().data() + n * dims;
            long double s = 0;
            for (int d = 0; d < dims; ++d) {
              const long double x = static_cast<long double>(a[d]) - b[d];
              s += x * x;
            }
            f(m, n, s);
          }
        }
      }
    }
  }
}

// Smallest d / max(r_a, r_b) over pairs of one layer, exactly (long double),
// and the pairs closer than max(r_a, r_b); NaN for a single point.
void CheckPairs(const std::vector<std::size_t>& members,
                const v1::PointBatch& all, int dims, LayerReport* out) {
  if (members.size() < 2) {
    out->min_ratio = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  // Each point in a grid per power of two of kReach times its radius, with
  // cells of that power; a pair is taken from its point of smaller radius
  // (the lower index of equal ones), which looks in the other's grid,
  // where every pair closer than kReach max(r_a, r_b) is in the 3^dims
  // cells around. (One grid with cells of radius_max held thousands of
  // small points a cell with a density raster: 22 s for 106 000 points.)
  // So the smallest ratio found is exact when it is at most kReach, which
  // a Poisson layer's is (about 1).
  constexpr double kReach = 1.25;
  struct Grid {
    double cell = 0;
    absl::flat_hash_map<std::uint64_t, std::vector<std::size_t>> cells;
  };
  auto key = [dims](double cell, const double* c, int di, int dj, int dk) {
    auto at = [cell](double v) {
      return static_cast<std::int64_t>(std::floor(v / cell));
    };
    return PackCell(at(c[0]) + di, at(c[1]) + dj,
                    (dims == 3 ? at(c[2]) : 0) + dk);
  };
  auto radius = [&all](std::size_t i) {
    return all.radius(static_cast<int>(i));
  };
  auto exponent_of = [](double r) {
    int exponent = 0;
    std::frexp(r * kReach, &exponent);  // 2^exponent > r kReach.
    return exponent;
  };
  std::map<int, Grid> grids;
  for (std::size_t m : members) {
    const int e = exponent_of(radius(m));
    Grid& grid = grids[e];
    grid.cell = std::ldexp(1.0, e);
    grid.cells[key(grid.cell, all.coords().data() + m * dims, 0, 0, 0)]
        .push_back(m);
  }
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t m : members) {
    const double* a = all.coords().data() + m * dims;
    const double r_a = radius(m);
    // Points of larger radius are in this grid or a coarser one.
    for (auto g = grids.lower_bound(exponent_of(r_a)); g != grids.end(); ++g) {
      const Grid& grid = g->second;
      for (int dk = dims == 3 ? -1 : 0; dk <= (dims == 3 ? 1 : 0); ++dk) {
        for (int dj = -1; dj <= 1; ++dj) {
          for (int di = -1; di <= 1; ++di) {
            auto it = grid.cells.find(key(grid.cell, a, di, dj, dk));
            if (it == grid.cells.end()) continue;
            for (std::size_t n : it->second) {
              const double r_b = radius(n);
              if (n == m || r_b < r_a || (r_b == r_a && n < m)) continue;
              const double* b = all.coords().data() + n * dims;
              long double s = 0;
              for (int d = 0; d < dims; ++d) {
                const long double x = static_cast<long double>(a[d]) - b[d];
                s += x * x;
              }
              const long double r = r_b;
              if (s < r * r) ++out->violations;
              best = std::min(best, static_cast<double>(std::sqrt(s) / r));
            }
          }
        }
      }
    }
  }
  // No pair that near (a sparse layer, islands apart; it printed inf):
  // every pair closer than a cell of one grid is seen, and a pair's ratio
  // is at least its distance over radius_max, so the cell doubles until
  // the smallest ratio is at most cell / radius_max.
  for (double cell = 2 * kReach * out->radius_max;
       !(best <= kReach) && std::isfinite(cell); cell *= 2) {
    double found = std::numeric_limits<double>::infinity();
    ForEachPairWithin(members, all, dims, cell,
                      [&](std::size_t m, std::size_t n, long double s) {
                        const long double r = std::max(radius(m), radius(n));
                        found = std::min(found,
                                         static_cast<double>(std::sqrt(s) / r));
                      });
    if (found <= cell / out->radius_max) {
      best = found;
      break;
    }
  }
  out->min_ratio = best;
}

}  // namespace

absl::StatusOr<std::vector<LayerReport>> MeasureRun(
    const v1::ScatterRequest& request, const v1::Summary& summary,
    const v1::PointBatch& points, std::uint64_t probes) {
  absl::StatusOr<server::ScatterJob> job = LocalJob(request);
  if (!job.ok()) return job.status();
  const sampler::Region& region = job->region;
  const int dims = region.dims();

  // Footprints by layer id, as the sampler resolves them. A density layer
  // with footprint 0 has one per point, half its radius there (per_point;
  // footprint then 0).
  absl::flat_hash_map<std::uint32_t, double> footprint;
  absl::flat_hash_map<std::uint32_t, bool> per_point;
  for (const sampler::LayerSpec& spec : job->layers) {
    const sampler::SamplerOptions& o = spec.options;
    double f = o.footprint;
    per_point[spec.layer] = f == 0 && o.density != nullptr;
    if (f == 0 && o.density == nullptr) {
      f = o.method == sampler::Method::kJitteredGrid ? o.cell_size / 2
          : o.method == sampler::Method::kUniform   ? 0
                                                     : o.radius / 2;
    }
    footprint[spec.layer] = f;
  }
  // Point i's footprint.
  auto footprint_of = [&](int i) {
    const std::uint32_t layer = points.layer(i);
    return per_point[layer] ? points.radius(i) / 2 : footprint[layer];
  };
  // The override between layers a and b, if any.
  auto override_of = [&](std::uint32_t a, std::uint32_t b) -> const double* {
    for (const sampler::ClearanceOverride& c : job->overrides) {
      if ((c.a == a && c.b == b) || (c.a == b && c.b == a)) return &c.clearance;
    }
    return nullptr;
  };

  const int n = points.id_size();
  std::vector<LayerReport> out;
  std::vector<std::uint32_t> earlier;
  for (const v1::LayerCount& count : summary.layers()) {
    LayerReport report;
    report.layer = count.layer();
    std::vector<std::size_t> members;
    report.radius_min = std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
      if (points.layer(i) != report.layer) continue;
      members.push_back(static_cast<std::size_t>(i));
      report.radius_min = std::min(report.radius_min, points.radius(i));
      report.radius_max = std::max(report.radius_max, points.radius(i));
    }
    report.points = members.size();
    if (members.empty() || report.radius_max <= 0) {
      out.push_back(report);
      earlier.push_back(report.layer);
      continue;
    }
    CheckPairs(members, points, dims, &report);

    // What blocks the layer: obstacles and earlier layers' points, each
    // with the clearance this layer keeps from it (an override, or the two
    // footprints; this layer's own is added per point where it is one).
    // No point of the layer may lie within one.
    const double f = footprint[report.layer];
    const bool own_per_point = per_point[report.layer];
    const DiscGrid::Kind adds =
        own_per_point ? DiscGrid::kBlockerAddsFootprint : DiscGrid::kBlocker;
    // A density layer's local radius r(p), for coverage by max(r(p), r_s).
    const sampler::SamplerOptions* variable = nullptr;
    for (const sampler::LayerSpec& spec : job->layers) {
      if (spec.layer == report.layer && spec.options.density != nullptr) {
        variable = &spec.options;
      }
    }
    const double most_footprint = own_per_point ? variable->radius_max / 2 : 0;
    struct Blocker {
      const double* c;
      double reach;
      DiscGrid::Kind kind;
    };
    std::vector<Blocker> blocking;
    for (const sampler::Obstacle& o : job->shared.obstacles) {
      blocking.push_back({o.center.data(), o.radius + f, adds});
    }
    for (std::uint32_t e : earlier) {
      const double* fixed = override_of(e, report.layer);
      for (int i = 0; i < n; ++i) {
        if (points.layer(i) != e) continue;
        const double* c = points.coords().data() + i * dims;
        if (fixed != nullptr) {
          // The sampler keeps exactly the override from the point, also
          // one below the layer's own footprint.
          blocking.push_back({c, *fixed, DiscGrid::kBlocker});
        } else {
          blocking.push_back({c, footprint_of(i) + f, adds});
        }
      }
    }
    DiscGrid grid(dims, variable != nullptr ? variable->radius_max : 0,
                  most_footprint);
    for (const Blocker& b : blocking) grid.Add(b.c, b.reach, b.kind);
    for (std::size_t m : members) {
      report.blocked += grid.Covers(points.coords().data() + m * dims, 0,
                                    footprint_of(static_cast<int>(m)));
    }
    for (std::size_t m : members) {
      grid.Add(points.coords().data() + m * dims, points.radius(static_cast<int>(m)),
               DiscGrid::kOwn);
    }
    std::mt19937_64 random(0x5ca77e55u + report.layer);
    const sampler::Box& box = region.bounds();
    std::uint64_t inside = 0;
    for (std::uint64_t p = 0; p < probes; ++p) {
      double q[3] = {0, 0, 0};
      for (int d = 0; d < dims; ++d) {
        const double u = static_cast<double>(random() >> 11) * 0x1.0p-53;
        q[d] = box.min(d) + u * box.extent(d);
      }
      if (!region.Contains(q)) continue;
      ++inside;
      double local = 0;
      if (variable != nullptr) {
        const double bright = std::clamp(variable->density->Sample(q[0], q[1]), 0.0, 1.0);
        local = variable->radius_min + (variable->radius_max - variable->radius_min) *
                                           (1 - bright);
      }
      if (!grid.Covers(q, local, own_per_point ? local / 2 : f)) ++report.uncovered;
    }
    report.probes = inside;
    if (report.radius_min == report.radius_max && probes > 0) {
      // In units of the bounds' longest side: the measure itself leaves
      // the doubles at extreme scales (a 3D box of side 1e-110 gave rho
      // inf, one of side 1e150 none).
      double side = 0;
      for (int d = 0; d < dims; ++d) side = std::max(side, box.extent(d));
      double measure =
          static_cast<double>(inside) / static_cast<double>(probes);
      for (int d = 0; d < dims; ++d) measure *= box.extent(d) / side;
      report.rho = sampler::RelativeRadius(report.points, measure, dims,
                                           report.radius_min / side);
    }
    out.push_back(report);
    earlier.push_back(report.layer);
  }
  return out;
}

std::string FormatReport(const std::vector<LayerReport>& layers,
                         std::uint64_t total, double seconds) {
  std::string text = absl::StrFormat("report: %d points in %.3f s (%.2f M points/s)\n",
                                     total, seconds,
                                     static_cast<double>(total) / seconds / 1e6);
  for (const LayerReport& r : layers) {
    absl::StrAppendFormat(&text, "  layer %d: %d points", r.layer, r.points);
    if (r.radius_max > 0 && r.points > 0) {
      if (r.radius_min == r.radius_max) {
        absl::StrAppendFormat(&text, ", spacing %g", r.radius_min);
      } else {
        absl::StrAppendFormat(&text, ", spacing %g to %g", r.radius_min, r.radius_max);
      }
      if (std::isnan(r.min_ratio)) {
        absl::StrAppendFormat(
            &text, ", no pair to measure (%d points within a clearance)",
            r.blocked);
      } else {
        absl::StrAppendFormat(
            &text,
            ", smallest distance %.9f x allowed (%d pairs closer, "
            "%d points within a clearance)",
            r.min_ratio, r.violations, r.blocked);
      }
      absl::StrAppendFormat(&text, ", coverage %.7f (%d of %d probes uncovered)",
                            r.probes == 0 ? 0.0
                                          : 1 - static_cast<double>(r.uncovered) /
                                                    static_cast<double>(r.probes),
                            r.uncovered, r.probes);
      if (r.rho > 0) absl::StrAppendFormat(&text, ", rho %.4f", r.rho);
    }
    text += "\n";
  }
  return text;
}

}  // namespace scatter::client
