// Per-block statistics: per-component min and max and the count of real (non-padding) samples, for the
// whole block and optionally for 2^g equal index ranges of it (docs/format.md "hzio extensions").
// Layer: stats (depends on hzorder, format, util).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hzio/types.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio::stats {

// Sentinel count: statistics unknown (e.g. a block copied from a file written elsewhere).
inline constexpr uint64_t kUnknown = ~uint64_t{0};

// Stats of one index range of a block. min/max hold one value per component; doubles are rounded
// outward (min down, max up) when a 64-bit integer cannot be represented exactly.
struct RangeStats {
  uint64_t count = 0;
  std::vector<double> min, max;
};

struct BlockStats {
  RangeStats block;
  std::vector<RangeStats> parts;  // 2^sub_block_bits equal ranges of the block's storage order
};

// Local, thread-safe. Computes the stats of a decoded block (storage order `layout`). Samples outside
// `dataset_box` (padding) are left out. sub_block_bits may be 0 (no parts).
BlockStats compute_block_stats(const hzorder::HzSpace& space, uint64_t block, Layout layout,
                               std::span<const std::byte> data, DType dtype, const Box& dataset_box,
                               int sub_block_bits);

// Local. Whether some component range of `s` meets [lo, hi] (unknown stats always do).
bool may_contain(const RangeStats& s, int component, double lo, double hi);

}  // namespace hzio::stats
