// The HZ encode/decode kernel: moves the samples of a block run between the block buffer (HZ or
// row-major order) and a dense x-fastest array. Layer: hzorder. Hot path; no allocation.
#pragma once

#include <cstddef>

#include "hzio/types.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio::hzorder {

// A dense array (x fastest) holding the grid points origin + k * spacing for 0 <= k < count.
struct ArrayView {
  std::byte* data = nullptr;
  SampleGrid grid;
  size_t sample_bytes = 0;
};

enum class Direction { kArrayToBlock, kBlockToArray };

// Local, thread-safe for disjoint outputs. Copies every sample of `run` that lies inside `clip`
// between `block` (indexed by run.first + lut) and `array`. The array grid must contain those points:
// its spacing divides run.delta and its origin lies on the run's grid (true for a read at a level at
// least the run's, and for any write at full resolution). Returns the number of samples copied.
int64_t copy_run(const Run& run, const Box& clip, std::byte* block, const ArrayView& array, Direction direction);

// Local. Fills `count` samples at `out` with `value` converted to `dtype` (every component).
void fill_samples(std::byte* out, size_t count, DType dtype, double value);

}  // namespace hzio::hzorder
