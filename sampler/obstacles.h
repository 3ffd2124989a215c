#ifndef SCATTER_SAMPLER_OBSTACLES_H_
#define SCATTER_SAMPLER_OBSTACLES_H_

// Internal: obstacles indexed for the questions every method asks — is this
// place too close to one, and does one cover or reach this box?

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sampler/sampler.h"

namespace scatter::sampler::internal {

// The Poisson runs keep same-layer obstacles dormant until a new point lands
// within this many radii (of the larger of the two) of one; then it grows
// like an active point. Measured on tile borders (dense, 40 seeds): 2 leaves
// an 11 % dip in the density 1 r inside the later tile, 3 leaves 8 %, 5 is
// no better than 3.
inline constexpr double kWakeRadius = 3;
// A woken point of a dense run (either engine) tries this many times the
// run's k directions: it grows into the irregular gaps of a pattern that is
// not its own, where the run's own k miss most openings. On tile borders, with
// tiles growing from their lower neighbours' edges (tiles.cc, FrontWakes;
// 30 seeds, 4 x 4 blocks of 64 r), the largest on-axis power at m / T over
// its bound (untiled mean + 3 sigma) was: 1x 0.104 against 0.071 (m = 6),
// 2x none over (0.071 against 0.078 at m = 8 the closest), 3x 0.112
// against 0.082 (m = 1): too few directions leave the border thin, too
// many pack it.
inline constexpr int kWokenDirections = 2;

// The generations of a Poisson run's first-in, first-out growth, and the
// same-layer points that wake on a schedule (Obstacle::wake_generation).
// `Item` names a dormant point in the run's grid. A generation is the
// points made by the visits of the one before, so the queue's entries
// [head, end of generation) are the rest of the current one.
template <class Item>
class WakeSchedule {
 public:
  void Add(std::int64_t wake, Item item) { items_.push_back({wake, item}); }
  bool empty() const { return items_.empty(); }

  // Starts the growth at the earliest wake generation: wake(item) for each
  // item due (it appends the point to the queue, if still dormant); the
  // queue then holds `size` entries.
  template <class Wake, class Size>
  void Start(Wake wake, Size size) {
    std::stable_sort(items_.begin(), items_.end(),
                     [](const Entry& a, const Entry& b) { return a.wake < b.wake; });
    generation_ = items_.front().wake;
    WakeDue(wake);
    generation_end_ = size();
  }

  // Call before taking the queue's entry at `head`. When a generation ends
  // there, the next begins, and the points due by then wake; with nothing
  // left in the queue, growth goes on from the next scheduled point.
  // Returns false when the queue is empty and nothing is scheduled.
  template <class Wake, class Size>
  bool Next(std::size_t head, Wake wake, Size size) {
    if (head != generation_end_) return true;
    ++generation_;
    if (head == size() && next_ < items_.size()) {
      generation_ = std::max(generation_, items_[next_].wake);
    }
    WakeDue(wake);
    generation_end_ = size();
    return head != generation_end_;
  }

  // The queue dropped its first n entries (all of them before head).
  void Dropped(std::size_t n) { generation_end_ -= n; }

 private:
  struct Entry {
    std::int64_t wake;
    Item item;
  };
  template <class Wake>
  void WakeDue(Wake wake) {
    while (next_ < items_.size() && items_[next_].wake <= generation_) {
      wake(items_[next_++].item);
    }
  }

  std::vector<Entry> items_;
  std::size_t next_ = 0;
  std::int64_t generation_ = 0;
  std::size_t generation_end_ = 0;
};

// Calls f(i) for every set bit i in [begin, end) of `bits`, in order, a
// word at a time (dormant points are rare, so most words are 0).
template <class F>
void ForEachSetBit(const std::uint64_t* bits, std::uint64_t begin,
                   std::uint64_t end, F f) {
  for (std::uint64_t w = begin >> 6; w <= (end - 1) >> 6 && begin < end; ++w) {
    std::uint64_t word = bits[w];
    if (word == 0) continue;
    const std::uint64_t base = w << 6;
    if (base < begin) word &= ~std::uint64_t{0} << (begin - base);
    if (end - base < 64) word &= (std::uint64_t{1} << (end - base)) - 1;
    while (word != 0) {
      f(base + static_cast<std::uint64_t>(__builtin_ctzll(word)));
      word &= word - 1;
    }
  }
}

class ObstacleIndex {
 public:
  // Clearance of obstacle k: obstacles[k].radius + footprint (just the
  // radius when radius_is_clearance). Obstacles arrive validated.
  // `max_extra` >= 0: the largest per-point footprint the *Extra queries
  // below will add to those clearances (variable radius: r(x) / 2).
  // Same-layer obstacles keep max(radius, r) from a point of radius r: with
  // `own_radius` > 0 (a constant-radius run) that is fixed here; with 0 the
  // *Extra queries take each point's own radius, up to `max_own`.
  // With `grid` set (a Poisson run's grid bounds), same-layer obstacles
  // inside it are left out of the index: the run keeps them in its grid, as
  // points (see ForEachSameLayer).
  // With `area` set (the region's bounds), obstacles that cannot reach it
  // are left out too: a run places nothing outside it, and one obstacle far
  // away would stretch the index's grid over the distance, crowding the
  // others into a few cells that every query then reads.
  ObstacleIndex(const std::vector<Obstacle>& obstacles, double footprint,
                int dims, double max_extra = 0, double own_radius = 0,
                double max_own = 0, const Box* grid = nullptr,
                const Box* area = nullptr);

  // Whether the index holds nothing (the run may still hold same-layer
  // points: ForEachSameLayer).
  bool empty() const { return centers_.empty(); }
  // Whether some same-layer obstacle is left to the run (ForEachSameLayer).
  bool HasSameLayer() const { return !same_radius_.empty(); }
  // Whether some clearance grows with the point's own radius, so only the
  // *Extra queries answer right.
  bool takes_own_radius() const { return takes_own_radius_; }

  // Whether p is closer to some obstacle than its clearance (with the
  // sampler's distance slack, so the true distance is never below it).
  bool TooClose(const double* p) const;

  // For the box [lo, hi]: whether one obstacle's clearance holds all of it
  // (*inside), and whether any reaches into it (*reaches).
  void Classify(const double* lo, const double* hi, bool* inside,
                bool* reaches) const;

  // Classify's *inside alone, from the obstacles listed in one cell: one
  // that holds the box reaches its low corner, so that corner's cell lists
  // it (Classify walks every cell the box meets).
  bool Holds(const double* lo, const double* hi) const;

  // The same for a point with its own footprint `extra` (0 to max_extra),
  // added to every clearance but those given as radius_is_clearance, and
  // its own radius `own` (0 to max_own), which same-layer clearances grow
  // to.
  bool TooCloseExtra(const double* p, double extra, double own = 0) const;
  // Classify with footprints between extra_lo (for *inside) and extra_hi
  // (for *reaches) and own radii between own_lo and own_hi likewise, all
  // conservative.
  void ClassifyExtra(const double* lo, const double* hi, double extra_lo,
                     double extra_hi, bool* inside, bool* reaches,
                     double own_lo = 0, double own_hi = 0) const;

  // Calls f(center, clearance) for every obstacle while it returns true;
  // false when it returned false.
  template <class F>
  bool ForEach(F f) const {
    for (std::size_t k = 0; k < clearance_.size(); ++k) {
      if (!f(&centers_[k * 3], clearance_[k])) return false;
    }
    return true;
  }

  // Calls f(center, radius, wake_generation) for every same-layer obstacle
  // left out of the index because it lies in the grid bounds, in the order
  // given: the run must hold each of them itself.
  template <class F>
  void ForEachSameLayer(F f) const {
    for (std::size_t k = 0; k < same_radius_.size(); ++k) {
      f(&same_centers_[k * 3], same_radius_[k], same_wake_[k]);
    }
  }

 private:
  // A grid of the obstacles of about one reach: each listed in every cell
  // its reach meets, cells at least as wide as the largest of them.
  struct Level {
    bool one_cell = false;  // Extents too large to divide: all in cell 0.
    double origin[3] = {0, 0, 0};
    double inv_cell = 1;
    std::int64_t n[3] = {1, 1, 1};
    std::vector<std::uint32_t> begin;  // Per cell, into index.
    std::vector<std::uint32_t> index;
  };
  // The grid of obstacles `members` (their reaches in `reach`), into level.
  void BuildLevel(const std::vector<std::uint32_t>& members,
                  const std::vector<double>& reach, Level* level);
  // Cells of `level` overlapping [lo, hi], clamped; false when none.
  bool CellRange(const Level& level, const double* lo, const double* hi,
                 std::int64_t* c0, std::int64_t* c1) const;
  // Whether f(obstacle) is true for one listed in a cell that [lo, hi]
  // meets, in some level; stops at the first.
  template <class F>
  bool AnyInBox(const double* lo, const double* hi, F&& f) const;

  int dims_;
  std::vector<double> centers_;       // 3 per obstacle.
  std::vector<double> clearance_;     // radius + footprint.
  std::vector<double> limit2_;        // clearance^2 * (1 + slack).
  std::vector<double> takes_extra_;   // 1, or 0 when radius_is_clearance.
  std::vector<double> takes_own_;     // 1 for a same-layer point, else 0.
  std::vector<double> same_centers_;  // Left to the run: 3 per point.
  std::vector<double> same_radius_;
  std::vector<std::int32_t> same_wake_;
  bool takes_own_radius_ = false;
  std::vector<Level> levels_;
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_OBSTACLES_H_
