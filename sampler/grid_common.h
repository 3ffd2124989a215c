#ifndef SCATTER_SAMPLER_GRID_COMMON_H_
#define SCATTER_SAMPLER_GRID_COMMON_H_

// Internal: the constants and small helpers both Poisson engines (constant
// radius, poisson_impl.h; variable radius, variable_poisson_impl.h) build
// their grids and gap searches with. Included before those headers set the
// AVX2 target, so these are baseline code in every translation unit.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "sampler/huge_pages.h"

// For a lambda the hot loop calls per stored point: GCC otherwise may
// call it, and its prologue costs as much as its body.
#if defined(__GNUC__) || defined(__clang__)
#define SCATTER_INLINE_LAMBDA __attribute__((always_inline))
#else
#define SCATTER_INLINE_LAMBDA
#endif

namespace scatter::sampler::internal {

// Two points are accepted only when their computed squared distance is at
// least r^2 * (1 + kDistanceSlack) (with variable radius, r = max(r_a,
// r_b)). Rounding in a squared distance is a few parts in 2^53, so the true
// distance is then >= r, and a checker with more precision never finds a
// pair closer than r.
inline constexpr double kDistanceSlack = 0x1.0p-40;
// Cells are this much smaller than r / sqrt(D) so that two points at
// distance >= r can never share one, even after rounding in the cell index.
inline constexpr double kCellShrink = 1 - 1e-6;
// Neighbourhood bounds are widened by this factor so that rounding can only
// make a gathered list longer, never drop a point that matters.
inline constexpr double kBoundSlack = 1 + 1e-6;
// The step of the doubles at the box [lo, hi]'s largest coordinate: how
// far apart representable coordinates are there, at most.
inline double CoordinateStep(const double* lo, const double* hi, int dims) {
  double m = 0;
  for (int a = 0; a < dims; ++a) {
    m = std::max(m, std::max(std::abs(lo[a]), std::abs(hi[a])));
  }
  return std::nextafter(m, HUGE_VAL) - m;
}
// Candidates and the bounds of a neighbourhood are computed in the box's
// coordinates, so each may round by a CoordinateStep: a few parts in 2^53
// of the largest coordinate, which far from the origin is more than
// kBoundSlack of r. Bounds are widened by this much too (four such steps),
// absolute. Sampler::Create refuses boxes whose coordinates reach
// r * 2^43, where a step passes r / 1024.
inline double CoordinateSlack(const double* lo, const double* hi, int dims) {
  return 4 * CoordinateStep(lo, hi, dims);
}
// Poll the stop predicate after this many candidates (gap-fill cells: an
// eighth of it).
inline constexpr std::uint64_t kPollEvery = 4096;
// Makes `v` n copies of `value`, kFillChunkBytes at a time, polling `stop`
// between chunks: a big grid takes seconds to fault in (a 5.4 GB one took
// over 30 s on a test guest), and a caller's deadline or cancellation must
// not wait for it. False when `stop` said stop (v is then partly filled).
inline constexpr std::size_t kFillChunkBytes = std::size_t{16} << 20;
template <class Vector, class Stop>
bool FillPolling(Vector* v, std::size_t n,
                 const typename Vector::value_type& value, const Stop& stop) {
  constexpr std::size_t kChunk =
      kFillChunkBytes / sizeof(typename Vector::value_type);
  v->clear();
  v->reserve(n);
  while (v->size() < n) {
    v->insert(v->end(), std::min(kChunk, n - v->size()), value);
    if (v->size() < n && stop()) return false;
  }
  return true;
}

// A run's large array (grids, occupancy and marks): written whole from
// operator new (Fill, a HugePageVector), or zeros from AllocateZeroed
// (Zeroed), where a page costs nothing until the run touches it: a region
// much smaller than its bounds (a road across a map), or a fine level of
// the variable-radius grid where the radii are big, leaves most of it
// untouched, and the parts that will be touched densely can take huge
// pages (AdviseHugePages).
template <class T>
class RunArray {
 public:
  // n copies of `value`, as FillPolling; false when `stop` said stop.
  template <class Stop>
  bool Fill(std::size_t n, const T& value, const Stop& stop) {
    zeroed_.reset();
    const bool filled = FillPolling(&vector_, n, value, stop);
    data_ = vector_.data();
    return filled;
  }
  // n zeros (value-initialised T). With `guard`, its pages stay closed
  // until Open opens them (AllocateZeroed).
  void Zeroed(std::size_t n, bool guard) {
    vector_ = HugePageVector<T>();
    const std::size_t bytes = n * sizeof(T);
    zeroed_ = std::unique_ptr<T, Free>(
        static_cast<T*>(AllocateZeroed(bytes, guard)), Free{bytes});
    data_ = zeroed_.get();
    guarded_ = guard;
  }
  // Opens elements [begin, end) of a guarded array; nothing otherwise.
  void Open(std::size_t begin, std::size_t end) {
    if (!guarded_) return;
    OpenZeroed(zeroed_.get(), zeroed_.get_deleter().bytes, begin * sizeof(T),
               end * sizeof(T));
  }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  // The bytes of a zeroed array.
  std::size_t bytes() const { return zeroed_.get_deleter().bytes; }
  // Asks for huge pages over the whole huge pages in bytes [begin, end) of
  // a zeroed array.
  void AdviseHugePages(std::size_t begin, std::size_t end) {
    internal::AdviseHugePages(reinterpret_cast<char*>(zeroed_.get()) + begin,
                              end - begin);
  }

 private:
  struct Free {
    std::size_t bytes = 0;
    void operator()(T* p) const { FreeZeroed(p, bytes); }
  };
  HugePageVector<T> vector_;
  std::unique_ptr<T, Free> zeroed_;
  T* data_ = nullptr;
  bool guarded_ = false;
};

// Gap filling splits a cell into 2^D children this many times at most
// (pieces 1/64 of a cell wide in 2D, 1/16 in 3D) before one random place
// decides a piece.
inline constexpr int kMaxGapDepth2d = 6;
inline constexpr int kMaxGapDepth3d = 4;
// Ids of the counter blocks inside one visit's stream: candidate i uses the
// counters from i << 32 on; gap-fill pieces likewise.
inline constexpr int kBlockShift = 32;

// Bits [start, start + len) of `bits`, 1 <= len <= 64, the lowest first.
// Two shifts, so that shift 0 takes nothing from the next word without a
// branch; likewise the mask for len 64. Reads the word after the last bit's
// word, so bit arrays keep a spare word.
inline std::uint64_t BitRun(const std::uint64_t* bits, std::uint64_t start,
                            unsigned len) {
  const std::uint64_t w = start >> 6;
  const unsigned shift = static_cast<unsigned>(start & 63);
  const std::uint64_t v =
      (bits[w] >> shift) | ((bits[w + 1] << 1) << (63 - shift));
  return v & ((std::uint64_t{2} << (len - 1)) - 1);
}

// v clamped to [-2^62, 2^62], NaN to -2^62: the floor and ceiling below
// are clipped to a grid by their callers, and a far value (a huge obstacle
// or radius, an inf) must not overflow the cast to int64, nor the +-1
// callers add.
inline double ClampForInt(double v) {
  constexpr double kLimit = 0x1p62;
  return v >= -kLimit ? (v <= kLimit ? v : kLimit) : -kLimit;
}
// Floor and ceiling as int64, of v clamped by ClampForInt.
inline std::int64_t FloorToInt(double v) {
  v = ClampForInt(v);
  const auto i = static_cast<std::int64_t>(v);
  return i - (static_cast<double>(i) > v);
}
inline std::int64_t CeilToInt(double v) {
  v = ClampForInt(v);
  const auto i = static_cast<std::int64_t>(v);
  return i + (static_cast<double>(i) < v);
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_GRID_COMMON_H_
