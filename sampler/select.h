#ifndef SCATTER_SAMPLER_SELECT_H_
#define SCATTER_SAMPLER_SELECT_H_

// Internal: choices between two values without a branch, for the places
// where the condition is a coin flip. GCC turns `c ? x : y` on doubles, and
// `a && b` or `a || b` on comparisons, into branches, and a branch on
// random data mispredicts about as often as the data flips (the shell draw
// of a classic candidate: 41 % of its draws miss). These give the same
// values as the plain expressions.

#include <cstdint>
#include <cstring>

namespace scatter::sampler::internal {

// `take_x ? x : y`, by bit masks.
inline double SelectDouble(bool take_x, double x, double y) {
  const std::uint64_t mask =
      std::uint64_t{0} - static_cast<std::uint64_t>(take_x);
  std::uint64_t bx, by;
  std::memcpy(&bx, &x, sizeof bx);
  std::memcpy(&by, &y, sizeof by);
  const std::uint64_t bits = (bx & mask) | (by & ~mask);
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// `b`, hidden from the optimiser, so that a test of a value built from
// several comparisons stays one branch instead of one per comparison.
inline bool Opaque(bool b) {
  unsigned v = static_cast<unsigned>(b);
#if defined(__GNUC__) || defined(__clang__)
  asm("" : "+r"(v));
#endif
  return v != 0;
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_SELECT_H_
