// Tiled placement of large reads: the output is assembled tile by tile in a cache-sized buffer from
// the blocks already in memory, then stored row by row (docs/design/read-path.md "Tiles"). Layer: core.
#pragma once

#include <cstddef>
#include <vector>

#include "hzorder/block_copy.hpp"
#include "hzorder/hz_space.hpp"
#include "util/thread_pool.hpp"

namespace hzio::core {

// A block ready to place: its samples, its runs of the wanted levels, and the bounds of their points.
struct PlacedBlock {
  const std::byte* data = nullptr;
  std::vector<hzorder::Run> runs;
  Point lo, hi;  // per axis: first coordinate, last coordinate + 1
};

// Local. A PlacedBlock over `data` (the block's samples in the layout the runs describe).
PlacedBlock make_placed_block(std::vector<hzorder::Run> runs, const std::byte* data);

// The value of samples that no block provides (a missing block), when the read must set them.
struct TileFill {
  bool needed = false;
  DType dtype;
  double value = 0;
};

// Local; runs on `pool`. Fills `view` (the grid of `box` at `level`) with the samples of `placed`,
// whose data must stay valid meanwhile. The grid is cut into aligned tiles of about 512 KiB
// (HzSpace::tile_extent). Each tile is assembled in a per-thread buffer: every block part inside
// an aligned tile is one contiguous index range, walked in order, so the blocks are read
// sequentially and the stores hit the cache. Then the tile is stored into `view` row by row, with
// streaming stores when its rows are whole cache lines. Every sample of the grid must come from a
// block of `placed` or from `fill`.
void place_in_tiles(const hzorder::HzSpace& space, int level, const std::vector<PlacedBlock>& placed, const Box& box,
                    const hzorder::ArrayView& view, const TileFill& fill, util::ThreadPool& pool);

}  // namespace hzio::core
