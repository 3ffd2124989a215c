#ifndef SCATTER_SAMPLER_VERSION_H_
#define SCATTER_SAMPLER_VERSION_H_

#include <cstdint>

namespace scatter::sampler {

// The version of the point-generation algorithm. Same request, same seed and
// same version give bit-identical points on every machine. The golden digests
// in tests/sampler/ belong to this number: any change to what points come out
// (candidate order, key layout, gap filling) bumps it.
//  1: the first.
//  2: tiles grow from their lower neighbours' edges on a schedule, and a
//     woken point of a dense run tries 2k directions, not 3k (with a
//     density raster too, where it tried k); a tile generator makes one
//     layer, and reads the earlier layers of the tiles around. Tiled
//     output changed; an untiled run without same-layer obstacles gives
//     the points of 1.
//  3: a tile generator's soft border (the keep ramp) is 3 of its layer's
//     spacings wide, not 3 R. Tiles of worlds whose layers have different
//     spacings changed; one-layer worlds and untiled runs give the points
//     of 2.
//  4: dense packing in 3D steps over the icosahedron's vertices, randomly
//     turned, wherever it tries 12 directions (directions.h): every visit
//     with k = 12 (the default), and with k = 6 the visits of woken points,
//     which try 2k. Those runs changed, with a density raster too; 2D,
//     classic, and other 3D dense runs give the points of 3, except where
//     gap filling split a piece one ulp wide:
//     it could place a point exactly on the box's far side (outside the
//     half-open box) and now skips the empty half (gap_pieces.h, ChildBox).
//  5: with a density raster, where the pixels around a gap piece bound r
//     loosely (r_hi > 1.25 r_lo), the gap search bounds it by the
//     interpolation at the piece's corners and crossings when the piece
//     lies inside 2 x 2 bilinear patches (Raster::PatchBounds): more
//     pieces are free or covered earlier, so gap points land elsewhere.
//     Variable-radius runs over sharp or steep fields changed (of the
//     golden runs over smooth ones, some did, some did not). And a clearance override below the
//     later layer's footprint is kept exactly (it was clamped to that
//     footprint), and any override is an obstacle of exactly its
//     clearance c, no longer (c - footprint) + footprint, which may differ
//     by an ulp. Other constant-radius runs give the points of 4.
//  6: classic packing in 2D draws each candidate from one value of its
//     stream, with no rejection (UnitShellPoint2d: a direction from a table
//     of 2^12, turned by a fraction of a step, and a radius by square
//     root), where it drew from the square [-2, 2)^2 until a draw landed
//     in the annulus. Every classic 2D run changed (constant and variable
//     radius, layers, tiles). And a mask classifies a box over at most
//     2 x 2 bilinear patches by the interpolation (Raster::PatchBounds),
//     not by the pixels' bounds alone, so fewer gap pieces near its edges
//     are partial: masked runs may place gap points elsewhere. Other
//     dense and classic 3D runs give the points of 5.
//  7: gap filling in classic 2D constant-radius runs asks the Voronoi
//     vertices of the points around a cell whether some place of it is at
//     least r from all of them (BoxMayHoldPlace2d), and puts the point
//     where that distance peaks in the cell widened by a quarter cell
//     (FarthestPlace2d), moved to a random place of the disk there that is
//     as far, within the widened cell (up to 8 tries), repeating until the
//     cell has no such place. It split the cell down to pieces 1/64 of a
//     cell wide and took the first random place found. This holds for
//     cells whose widened box lies wholly inside the region and clear of
//     obstacles (other layers', and same-layer points outside the box such
//     as a neighbouring tile's; the others are still split): those are now
//     filled exactly, up to rounding. And where the split search tries up
//     to 4 random places in a piece the region's edge crosses (both
//     engines), the 4 are different places: the try's number was shifted
//     out of the stream's key, so each try drew the first one again.
//     Classic 2D runs changed (layers and tiles too), and runs in regions
//     whose gap search met such a piece; other dense, variable-radius and
//     3D runs give the points of 6.
//  8: with a density raster, the largest radius near a visiting point
//     (which bounds how far a dense candidate may move out, and what a
//     visit gathers) and near a gap-search block are tightened by the
//     interpolation where the pixels bound r loosely (as 5 did for gap
//     pieces). Within two pixels of a sharp edge the pixels alone said
//     r_max, so visits there gathered every point within r_max (a 0/1
//     raster at r_max / r_min = 100 took 22 s, 1 000 did not end). Dense
//     variable-radius runs over sharp or steep fields changed (candidates
//     past the tighter bound are dropped); classic runs, smooth fields and
//     every golden run give the points of 7.
//  9: uniform points in a region that is not a box are drawn in cells of
//     one size that meet the region (its bounds halved, level by level,
//     until 4 096 cells of a level meet it), not over its whole bounds,
//     which missed as often as the region was small in them (two triangles
//     316 apart: 450 points a second; under 6e-8 of the bounds none found).
//     Uniform runs in such regions changed; all others give the points of 8.
inline constexpr std::uint32_t kAlgorithmVersion = 9;

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_VERSION_H_
