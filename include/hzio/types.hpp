// Value types shared by the public API: sample dtypes, points and boxes, sample grids, layouts.
// Coordinates are x first (axis 0 = x, the fastest-varying axis in memory), as in the IDX format.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hzio/status.hpp"

namespace hzio {

// The engine handles 1-, 2- and 3-D datasets; unused trailing axes have extent 1.
inline constexpr int kMaxDims = 3;

using Point = std::array<int64_t, kMaxDims>;

// A half-open box [lo, hi) in sample coordinates, x first. Unused axes are [0, 1). Its members are Local.
struct Box {
  Point lo{0, 0, 0};
  Point hi{1, 1, 1};

  int64_t extent(int axis) const { return hi[axis] - lo[axis]; }
  bool empty() const { return hi[0] <= lo[0] || hi[1] <= lo[1] || hi[2] <= lo[2]; }
  int64_t sample_count() const { return empty() ? 0 : extent(0) * extent(1) * extent(2); }
  bool contains(const Box& other) const;
  Box intersect(const Box& other) const;
  std::string to_string() const;
};

// The scalar kinds of a field's samples, spelled in the .idx text as int8 ... float64.
enum class Scalar : uint8_t { kInt8, kUint8, kInt16, kUint16, kInt32, kUint32, kInt64, kUint64, kFloat32, kFloat64 };

// A sample type: a scalar and a component count (1 for scalars, 3 for `float32[3]`). Its members are
// Local.
struct DType {
  Scalar scalar = Scalar::kUint8;
  int components = 1;

  size_t scalar_bytes() const;
  size_t bytes() const { return scalar_bytes() * static_cast<size_t>(components); }
  bool is_float() const { return scalar == Scalar::kFloat32 || scalar == Scalar::kFloat64; }
  // Canonical text: "float32" or "float32[3]".
  std::string to_string() const;
  // Local. Parses "float32", "FLOAT32", "float32[3]", "3*float32" (PIDX). Errors: kFormat.
  static Result<DType> parse(std::string_view text);
  bool operator==(const DType&) const = default;
};

// Sample order inside a stored block (the IDX block-header flag 0x10 says which).
enum class Layout : uint8_t { kHzOrder, kRowMajor };

// The flags word of a stored block (docs/format.md "Block header"): its low nibble is the codec's code,
// bit 0x10 says the samples are in row-major order.
inline constexpr uint32_t kBlockFlagCodecMask = 0x0F;
inline constexpr uint32_t kBlockFlagRowMajor = 0x10;

// The samples of one resolution level inside a box: origin + i * spacing for 0 <= i < count, x first.
// Arrays that hold such a grid are x-fastest (C order [z][y][x]). Its members are Local.
struct SampleGrid {
  Point origin{0, 0, 0};
  Point spacing{1, 1, 1};
  Point count{0, 0, 0};

  int64_t sample_count() const { return count[0] * count[1] * count[2]; }
};

// How a collective read moves data: every rank reads its own blocks, or each data file is read by one
// rank that sends decoded blocks to the ranks that asked for them. kAuto picks two-phase across nodes
// when requests share blocks (ParallelDataset::read_box).
enum class ReadMethod { kAuto, kIndependent, kTwoPhase };

// Counters every read fills in: what it touched and the least it could have touched.
struct ReadReport {
  int64_t files_opened = 0;
  int64_t blocks_read = 0;     // blocks whose payload was read from disk
  int64_t blocks_missing = 0;  // needed blocks absent from the dataset (read as the default value)
  int64_t bytes_read = 0;      // payload and header bytes read from disk
  int64_t min_bytes = 0;       // stored payload bytes of the blocks the read needed
  // A dataset on a web server: the requests its storage sent while the read ran (header tables,
  // sidecars, blocks, retries) and the body bytes they brought (read-ahead included); 0 for local files.
  int64_t requests = 0;
  int64_t bytes_received = 0;
  std::string method = "independent";
  // How samples reached the output: "blocks" (each block placed in turn) or "windows" (large reads of
  // blocks held in memory, assembled window by window; docs/design/read-path.md "Windows").
  std::string assembly = "blocks";
};

}  // namespace hzio
