// HZ address math for one bitmask and block size: point <-> hz, levels, the sample grid of a level or
// block, and which blocks a box touches (docs/format.md "HZ order"). Layer: hzorder (no I/O).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "format/bitmask.hpp"
#include "hzio/types.hpp"

namespace hzio::hzorder {

// Per-axis index tables: the position of grid coordinate c along axis a inside a run is lut[a][c]
// (summed over axes). HZ order deposits the bits of c; row-major multiplies by the axis stride.
struct AxisLuts {
  std::array<std::vector<uint32_t>, kMaxDims> axis;
  bool x_is_identity = false;  // lut[0][c] == c: rows are contiguous
  // HZ order only: for index bit j, the axis and the coordinate bit it carries (empty for row-major).
  std::vector<std::pair<uint8_t, uint8_t>> index_bits;
};

// A run of consecutive sample indices inside a block whose points form a regular grid:
// index first + lut(i) holds point p0 + i * delta for 0 <= i < ns (per axis).
struct Run {
  uint64_t first = 0;
  Point p0{0, 0, 0};
  Point delta{1, 1, 1};
  Point ns{1, 1, 1};
  std::shared_ptr<const AxisLuts> luts;
};

class HzSpace {
 public:
  // Local. bits_per_block must be in [1, max_level] (or 0 when max_level is 0).
  HzSpace(const format::Bitmask& bitmask, int bits_per_block);
  // Local, thread-safe. The same, shared with the other users of this process of the same bitmask and
  // bits per block (the last few asked for), so that opening a dataset again finds its lookup tables
  // built (bench/small_read_bench.py, open + read of a small box).
  static std::shared_ptr<const HzSpace> shared(const format::Bitmask& bitmask, int bits_per_block);

  int max_level() const { return maxh_; }
  int bits_per_block() const { return bpb_; }
  const format::Bitmask& bitmask() const { return bitmask_; }
  uint64_t block_count() const { return uint64_t{1} << (maxh_ - bpb_); }

  // Local, thread-safe. The hz address of a point of the power-of-two box, and back.
  uint64_t point_to_hz(const Point& p) const;
  Point hz_to_point(uint64_t hz) const;
  // Local. The level of an address: 0 for hz 0, else its bit length.
  static int level_of(uint64_t hz);
  // Local. The level a block lies in: bpb for block 0 (levels 0..bpb), else bpb + 1 + floor(log2 b).
  int level_of_block(uint64_t block) const;

  // Local. Grid spacing of resolution H (levels 0..H together), per axis.
  Point resolution_spacing(int level) const;
  // Local. The resolution-H samples inside `box`: the grid a read of (box, H) returns.
  SampleGrid grid_in_box(const Box& box, int level) const;

  // Local. The extent, in samples of the resolution-H grid, of an aligned window of that grid holding
  // 2^window_bits samples: the region of bitmask positions (H - window_bits, H], the one whose samples of
  // every level are one contiguous range of each block they lie in. window_bits is clamped to [0, H].
  Point window_extent(int level, int window_bits) const;

  // Local, thread-safe. The runs making up a block in the given storage layout. Block 0 in HZ order
  // has one run per level 0..bpb; every other case is a single run.
  std::vector<Run> block_runs(uint64_t block, Layout layout) const;
  // Local, thread-safe. Appends to `out` the blocks of `level` holding at least one sample inside
  // `box`, ascending. Level 0..bpb means block 0, whose samples of levels [min_level, level] are tested.
  void blocks_in_box(const Box& box, int level, std::vector<uint64_t>& out, int min_level = 0) const;
  // Local, thread-safe. The block plan of a box: every block holding a sample of levels
  // [min_level, max_level] inside `box`, ascending; what reads, queries, progressive reads and writes
  // (one process and collective) touch.
  std::vector<uint64_t> blocks_of_box(const Box& box, int min_level, int max_level) const;

 private:
  // The per-axis deposit tables for index bits j in [0, nbits) that map to positions K = top - 1 - j.
  std::shared_ptr<const AxisLuts> hz_luts(int top, int nbits) const;
  std::shared_ptr<const AxisLuts> row_major_luts(const Point& ns) const;
  Point level_delta(int level) const;        // spacing of the samples of exactly level H
  Point count_bits(int from, int to) const;  // per axis, digits at positions [from, to]
  Run level_run(int level) const;            // level H >= 0 as one run (inside block 0)

  format::Bitmask bitmask_;
  int maxh_ = 0;
  int bpb_ = 0;
  // hz_to_point's bit extraction, a byte at a time: for byte k of the interleaved address and its value
  // v, the coordinate bits it holds per axis, at [k * kMaxDims + axis][v] (a table lookup instead of a
  // loop over every bit); as many bytes as the bitmask has levels.
  std::vector<std::array<uint64_t, 256>> extract_;
  // Guarded by one process-wide mutex (luts_mutex in hz_space.cpp), held across fork(): spaces are shared
  // by every dataset of the process (shared()), so a child forked while another thread built a table
  // would otherwise find the mutex locked forever.
  mutable std::map<std::pair<int, int>, std::shared_ptr<const AxisLuts>> hz_cache_;
  mutable std::map<Point, std::shared_ptr<const AxisLuts>> rm_cache_;
};

// Local. Whether grid p0 + i*delta (0 <= i < ns) has a sample in `box`; sets the index range per axis.
bool run_range_in_box(const Run& run, const Box& box, Point& lo, Point& hi);

}  // namespace hzio::hzorder
