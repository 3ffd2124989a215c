#ifndef SCATTER_SAMPLER_RNG_H_
#define SCATTER_SAMPLER_RNG_H_

// Counter-based random numbers. Every value is a pure function of a key and
// a counter, so a stream never depends on how many draws another code path
// made, on threads, or on the order requests arrive in.

#include <cstdint>
#include <cstring>

namespace scatter::sampler {

// What a stream is used for. Part of every key, so two uses never share
// numbers. Values are part of the algorithm: never renumber, only append.
enum class Purpose : std::uint64_t {
  kCandidates = 1,  // Poisson candidates around an active point.
  kGapFill = 2,     // Locations tried while filling uncovered cells.
  kUniform = 3,     // Uniform random method.
  kJitter = 4,      // Jittered grid method.
  kPointId = 5,     // Stable point ids.
  kAttributes = 6,  // Per-point attributes (yaw, scale), keyed by point id.
  // Tiled worlds (sampler/tiles.h): the pass that fills a tile's border
  // draws its own candidates and gap places; the soft border's keep draws.
  kBorderCandidates = 7,
  kBorderGapFill = 8,
  kTileKeep = 9,
  kTileFronts = 10,  // Where a tile's fronts from opposite sides meet.
};

// SplitMix64's finaliser: a bijection on 64 bits with full avalanche.
inline constexpr std::uint64_t Mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Folds `value` into the key `key`. Not commutative: Combine(Combine(k, a), b)
// and Combine(Combine(k, b), a) differ, so key fields keep their roles.
inline constexpr std::uint64_t Combine(std::uint64_t key, std::uint64_t value) {
  return Mix64(key ^ Mix64(value + 0x9e3779b97f4a7c15ULL));
}

// The root of every stream: (seed, layer, tile, purpose), as DESIGN.md's
// per-tile seeds require. A run that is not tiled uses tile (0, 0).
struct StreamKey {
  std::uint64_t seed = 0;
  std::uint32_t layer = 0;
  std::int64_t tile_x = 0;
  std::int64_t tile_y = 0;
  Purpose purpose = Purpose::kCandidates;

  // The key of an untiled run's stream, the common case.
  static std::uint64_t Of(std::uint64_t seed, std::uint32_t layer,
                          Purpose purpose) {
    StreamKey key;
    key.seed = seed;
    key.layer = layer;
    key.purpose = purpose;
    return key.Hash();
  }

  // The key of a tile's stream.
  static std::uint64_t OfTile(std::uint64_t seed, std::uint32_t layer,
                              std::int64_t tile_x, std::int64_t tile_y,
                              Purpose purpose) {
    StreamKey key;
    key.seed = seed;
    key.layer = layer;
    key.tile_x = tile_x;
    key.tile_y = tile_y;
    key.purpose = purpose;
    return key.Hash();
  }

  std::uint64_t Hash() const {
    std::uint64_t k = Combine(0x5ca77e5ca77e0001ULL, seed);
    k = Combine(k, layer);
    k = Combine(k, static_cast<std::uint64_t>(tile_x));
    k = Combine(k, static_cast<std::uint64_t>(tile_y));
    return Combine(k, static_cast<std::uint64_t>(purpose));
  }
};

// An endless sequence of 64-bit values for one key: value t is wyrand's
// output for the state key + (block + t + 1) * increment: the 128-bit
// product of the state and the state xor a constant, folded to 64 bits.
// wyrand passes BigCrush and PractRand, and as a pure function of a counter
// it costs one multiply per draw. `block` lets one key serve several
// independent sub-streams (give them blocks 2^32 apart).
class CounterRng {
  __extension__ typedef unsigned __int128 U128;

 public:
  static constexpr std::uint64_t kIncrement = 0xa0761d6478bd642fULL;

  explicit constexpr CounterRng(std::uint64_t key, std::uint64_t block = 0)
      : state_(key + block * kIncrement) {}

  std::uint64_t Next() {
    state_ += kIncrement;
    const U128 m = static_cast<U128>(state_) *
                   static_cast<U128>(state_ ^ 0xe7037ed1a0b428dbULL);
    return static_cast<std::uint64_t>(m) ^ static_cast<std::uint64_t>(m >> 64);
  }

  // Uniform in [0, 1) with 53 random bits. std:: distributions differ between
  // standard libraries, which would break same-seed-same-points, so the bits
  // are mapped by hand.
  double Uniform01() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Two values uniform in [-1, 1) with 32 random bits each, from one draw.
  void SignedPair(double* a, double* b) {
    const std::uint64_t bits = Next();
    *a = static_cast<double>(static_cast<std::int32_t>(bits >> 32)) * 0x1.0p-31;
    *b = static_cast<double>(static_cast<std::int32_t>(bits & 0xffffffffu)) *
         0x1.0p-31;
  }

  // Uniform in [-1, 1) with 54 random bits; the integer is exact in a double.
  double UniformSigned() {
    const std::int64_t v =
        static_cast<std::int64_t>(Next() >> 10) - (std::int64_t{1} << 53);
    return static_cast<double>(v) * 0x1.0p-53;
  }

 private:
  std::uint64_t state_;
};

// The raw bits of a double, for ids keyed by coordinates.
inline std::uint64_t DoubleBits(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_RNG_H_
