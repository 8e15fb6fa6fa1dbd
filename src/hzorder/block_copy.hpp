// The HZ copy kernel: moves the samples of a block run between the block buffer (HZ or
// row-major order) and a dense x-fastest array. Layer: hzorder. Hot path; no allocation per call.
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
// Encoding from an array of 16 MiB or more may go through a 1 MiB row buffer that the calling thread
// allocates on first use and keeps until it exits (docs/design/hz-kernels.md "Row buffers").
int64_t copy_run(const Run& run, const Box& clip, std::byte* block, const ArrayView& array, Direction direction);

// Local, thread-safe for disjoint outputs. The same copy as copy_run, walking the block in index order
// (sequential on the block side, scattered on the array side), which pays when the array is in cache,
// as a window of a read is. Possible only for an HZ-order run whose samples inside `clip` are one
// contiguous range of block indices (an aligned part, such as the part of a block inside an aligned
// window, or a whole run): returns the number of samples copied, or -1, copying nothing, otherwise.
int64_t copy_run_in_block_order(const Run& run, const Box& clip, std::byte* block, const ArrayView& array,
                                Direction direction);

// Local, thread-safe for disjoint destinations. Copies `rows` rows of `row_bytes` from dense `src` to
// rows `dst_stride` bytes apart at `dst`, all visible to other threads on return.
// When every destination row starts on a 64-byte line and spans whole lines, uses streaming stores:
// lines are written without first being read, and the output does not evict the caches.
void copy_rows_streaming(std::byte* dst, size_t dst_stride, const std::byte* src, size_t row_bytes, int64_t rows);

// Local. Fills `count` samples at `out` with `value` converted to `dtype` (every component).
void fill_samples(std::byte* out, size_t count, DType dtype, double value);

}  // namespace hzio::hzorder
