#include "client/report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sampler/quality.h"
#include "client/local.h"
#include "server/convert.h"

namespace scatter::client {
namespace {

// Discs in a uniform hash grid whose cell is the largest reach, so a query
// looks at the 3^dims cells around it. A disc is a point of the layer
// measured (reach: its radius), or something that blocks it: an obstacle
// or an earlier layer's point (reach: the clearance, apart from the
// footprint of the layer's point where that is per point, which `adds`
// says to add).
class DiscGrid {
 public:
  enum Kind { kOwn, kBlocker, kBlockerAddsFootprint };
  DiscGrid(int dims, double cell) : dims_(dims), cell_(cell) {}
  void Add(const double* c, double reach, Kind kind) {
    Disc d{{c[0], c[1], dims_ == 3 ? c[2] : 0}, reach, kind};
    cells_[Key(d.c)].push_back(d);
  }
  // Whether p is within some disc's reach, for a point at p of local
  // radius `local` (own points cover it when closer than max(local, their
  // radius): the variable-radius rule) and footprint `footprint` (added to
  // the blockers' reach that take it).
  bool Covers(const double* p, double local = 0, double footprint = 0) const {
    const std::int64_t i = Cell(p[0]), j = Cell(p[1]), k = dims_ == 3 ? Cell(p[2]) : 0;
    for (std::int64_t dk = dims_ == 3 ? -1 : 0; dk <= (dims_ == 3 ? 1 : 0); ++dk) {
      for (std::int64_t dj = -1; dj <= 1; ++dj) {
        for (std::int64_t di = -1; di <= 1; ++di) {
          auto it = cells_.find(Pack(i + di, j + dj, k + dk));
          if (it == cells_.end()) continue;
          for (const Disc& d : it->second) {
            double s = 0;
            for (int a = 0; a < dims_; ++a) s += (p[a] - d.c[a]) * (p[a] - d.c[a]);
            const double reach =
                d.kind == kOwn ? std::max(d.reach, local)
                : d.kind == kBlockerAddsFootprint ? d.reach + footprint
                                                  : d.reach;
            if (s < reach * reach) return true;
          }
        }
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
  std::int64_t Cell(double v) const {
    return static_cast<std::int64_t>(std::floor(v / cell_));
  }
  static std::uint64_t Pack(std::int64_t i, std::int64_t j, std::int64_t k) {
    return (static_cast<std::uint64_t>(i) & 0x1fffff) |
           ((static_cast<std::uint64_t>(j) & 0x1fffff) << 21) |
           ((static_cast<std::uint64_t>(k) & 0x1fffff) << 42);
  }
  std::uint64_t Key(const double* c) const {
    return Pack(Cell(c[0]), Cell(c[1]), dims_ == 3 ? Cell(c[2]) : 0);
  }
  int dims_;
  double cell_;
  absl::flat_hash_map<std::uint64_t, std::vector<Disc>> cells_;
};

// Smallest d / max(r_a, r_b) over pairs of one layer, exactly (long double).
void CheckPairs(const std::vector<std::size_t>& members, const v1::PointBatch& all,
                int dims, LayerReport* out) {
  const double cell = out->radius_max;
  absl::flat_hash_map<std::uint64_t, std::vector<std::size_t>> grid;
  auto key = [&](const double* c, int di, int dj, int dk) {
    auto cell_of = [&](double v) {
      return static_cast<std::int64_t>(std::floor(v / cell));
    };
    return (static_cast<std::uint64_t>(cell_of(c[0]) + di) & 0x1fffff) |
           ((static_cast<std::uint64_t>(cell_of(c[1]) + dj) & 0x1fffff) << 21) |
           ((static_cast<std::uint64_t>((dims == 3 ? cell_of(c[2]) : 0) + dk) &
             0x1fffff)
            << 42);
  };
  for (std::size_t m : members) grid[key(all.coords().data() + m * dims, 0, 0, 0)].push_back(m);
  double best = std::numeric_limits<double>::infinity();
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
            const long double r = std::max(all.radius(static_cast<int>(m)),
                                           all.radius(static_cast<int>(n)));
            if (s < r * r) ++out->violations;
            best = std::min(best, static_cast<double>(std::sqrt(s) / r));
          }
        }
      }
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
    // Everything that covers or blocks a place for this layer.
    double reach = report.radius_max;
    if (variable != nullptr) reach = std::max(reach, variable->radius_max);
    for (const Blocker& b : blocking) {
      reach = std::max(reach, b.reach + (b.kind == DiscGrid::kBlocker ? 0 : most_footprint));
    }
    DiscGrid grid(dims, reach);
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
      const double measure =
          box.Measure() * static_cast<double>(inside) / static_cast<double>(probes);
      report.rho = sampler::RelativeRadius(report.points, measure, dims,
                                           report.radius_min);
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
      absl::StrAppendFormat(&text,
                            ", smallest distance %.9f x allowed (%d pairs closer, "
                            "%d points within a clearance)",
                            r.min_ratio, r.violations, r.blocked);
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
