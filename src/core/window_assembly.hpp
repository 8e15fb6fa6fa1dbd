// Windowed assembly of large reads: the output is assembled window by window in a cache-sized buffer from
// the blocks already in memory, then stored row by row (docs/design/read-path.md "Windows"). Layer: core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "hzorder/block_copy.hpp"
#include "hzorder/hz_space.hpp"
#include "util/thread_pool.hpp"

namespace hzio::core {

// Reads whose output has at least this many bytes, and whose blocks can all be placed from memory, are
// assembled window by window; smaller ones go block by block, with no per-window work, which is
// faster while the output still fits in the caches (bench/read_bench.py part (a), warm).
constexpr uint64_t kWindowedReadBytes = uint64_t{8} << 20;

// A block ready to place: its samples, its runs of the wanted levels, and the bounds of their points.
struct PlacedBlock {
  const std::byte* data = nullptr;
  std::vector<hzorder::Run> runs;
  Point lo, hi;  // per axis: first coordinate, last coordinate + 1
};

// Local. A PlacedBlock over `data` (the block's samples in the layout the runs describe).
PlacedBlock make_placed_block(std::vector<hzorder::Run> runs, const std::byte* data);

// How a window starts before its blocks are copied in: as is (every sample comes from a block), filled
// with the default value (samples of missing blocks take it), or with the output's current samples
// (kept where no block provides one: a progressive step keeps the coarser levels it placed before).
struct WindowFill {
  enum class Start { kBlocksOnly, kDefault, kOutput };
  Start start = Start::kBlocksOnly;
  DType dtype;
  double value = 0;
};

// The windows of a read grid and the blocks each needs (by index into the PlacedBlock list). The grid
// is cut into aligned windows of about 1 MiB (HzSpace::window_extent); per axis, window k covers grid
// indices [k * extent - offset, (k + 1) * extent - offset) clipped to [0, count), where offset aligns
// window boundaries to the grid's origin 0. Windows are processed in the HZ order of their last
// samples, so that every data file (each holding consecutive blocks of a few levels) is used front to
// back.
struct WindowPlan {
  Point extent, offset, count;                // per axis: samples per window, shift, number of windows
  std::vector<std::vector<uint32_t>> blocks;  // per window (x-fastest index), the blocks meeting it
  std::vector<uint32_t> order;                // window indices in processing order
  std::vector<uint32_t> first_use;            // per block, the first processing step using it
};

// Local. The windows of `grid` (the grid of `box` at `level`, samples of `sample_bytes`) and the blocks
// of `placed` whose bounds meet each.
WindowPlan plan_windows(const hzorder::HzSpace& space, int level, const std::vector<PlacedBlock>& placed,
                        const Box& box, const SampleGrid& grid, size_t sample_bytes);

// Local; runs on `pool`. Fills `view` (the grid of the plan) with the samples of `placed`, whose data
// must stay valid meanwhile. Each window is assembled in a per-thread buffer: every block part inside
// an aligned window is one contiguous index range, walked in order, so the blocks are read sequentially
// and the stores hit the cache. Then the window is stored into `view` row by row, with streaming stores
// when its rows are whole cache lines. With Start::kBlocksOnly, every sample of the grid must come
// from a block of `placed`. With `ready`, each window first calls ready(its block list) and is skipped if that
// returns false (the blocks could not be loaded; the caller reports the error).
void assemble_windows(const WindowPlan& plan, const std::vector<PlacedBlock>& placed, const hzorder::ArrayView& view,
                      const WindowFill& fill, util::ThreadPool& pool,
                      const std::function<bool(const std::vector<uint32_t>&)>& ready = {});

}  // namespace hzio::core
