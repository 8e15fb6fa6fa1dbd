// The sample-moving kernels of HZ ordering, array to block and back (docs/design/hz-kernels.md explains the tables).
#include "hzorder/block_copy.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace hzio::hzorder {
namespace {

struct Plan {
  Point lo, hi;       // run index range inside the clip
  Point array_start;  // array index of run index lo
  Point array_step;   // array index step per run index step
  const uint32_t* lut[kMaxDims];
  uint64_t first;
};

template <size_t S, Direction D>
void copy_fixed(const Plan& p, std::byte* block, const ArrayView& a) {
  const int64_t row = a.grid.count[0];
  const int64_t plane = row * a.grid.count[1];
  const int64_t sx = p.array_step[0];
  const uint32_t* lx = p.lut[0] + p.lo[0];
  const int64_t nx = p.hi[0] - p.lo[0];
  for (int64_t z = p.lo[2]; z < p.hi[2]; ++z) {
    const int64_t az = p.array_start[2] + (z - p.lo[2]) * p.array_step[2];
    for (int64_t y = p.lo[1]; y < p.hi[1]; ++y) {
      const int64_t ay = p.array_start[1] + (y - p.lo[1]) * p.array_step[1];
      std::byte* arow = a.data + static_cast<size_t>(az * plane + ay * row + p.array_start[0]) * S;
      // Indices are summed before they become pointers: a row's first index may lie before the block's
      // bytes (a read that holds a block from some index on: read_path.cpp place_block).
      const uint64_t brow = p.first + p.lut[2][z] + p.lut[1][y];
      for (int64_t x = 0; x < nx; ++x) {
        std::byte* bs = block + static_cast<size_t>(brow + lx[x]) * S;
        std::byte* as = arow + static_cast<size_t>(x * sx) * S;
        if constexpr (D == Direction::kArrayToBlock)
          std::memcpy(bs, as, S);
        else
          std::memcpy(as, bs, S);
      }
    }
  }
}

template <Direction D>
void copy_any(const Plan& p, std::byte* block, const ArrayView& a, size_t s, bool rows_contiguous) {
  const int64_t row = a.grid.count[0];
  const int64_t plane = row * a.grid.count[1];
  const int64_t nx = p.hi[0] - p.lo[0];
  for (int64_t z = p.lo[2]; z < p.hi[2]; ++z) {
    const int64_t az = p.array_start[2] + (z - p.lo[2]) * p.array_step[2];
    for (int64_t y = p.lo[1]; y < p.hi[1]; ++y) {
      const int64_t ay = p.array_start[1] + (y - p.lo[1]) * p.array_step[1];
      std::byte* arow = a.data + static_cast<size_t>(az * plane + ay * row + p.array_start[0]) * s;
      const uint64_t brow = p.first + p.lut[2][z] + p.lut[1][y];  // summed before it becomes a pointer
      if (rows_contiguous) {
        std::byte* bs = block + static_cast<size_t>(brow + p.lut[0][p.lo[0]]) * s;
        if constexpr (D == Direction::kArrayToBlock)
          std::memcpy(bs, arow, static_cast<size_t>(nx) * s);
        else
          std::memcpy(arow, bs, static_cast<size_t>(nx) * s);
        continue;
      }
      for (int64_t x = 0; x < nx; ++x) {
        std::byte* bs = block + static_cast<size_t>(brow + p.lut[0][p.lo[0] + x]) * s;
        std::byte* as = arow + static_cast<size_t>(x * p.array_step[0]) * s;
        if constexpr (D == Direction::kArrayToBlock)
          std::memcpy(bs, as, s);
        else
          std::memcpy(as, bs, s);
      }
    }
  }
}

// Walking an aligned part of an HZ run in index order: 2^nbits samples at consecutive block indices,
// whose index bit j (j < nbits) moves the array position by a fixed byte weight. The weights are
// split into a 64-entry table for the low bits (a small neighbourhood, cache-resident) and a sum over
// the high bits. Sequential on the block side, local on the array side: the encoder uses it with the
// array in memory, windowed reads with an array (the window) in cache.
template <size_t S, Direction D>
void copy_hz_walk(const Run& run, const Plan& p, int nbits, std::byte* block, const ArrayView& a) {
  const auto& bits = run.luts->index_bits;
  const int64_t row = a.grid.count[0], plane = row * a.grid.count[1];
  const int64_t unit[kMaxDims] = {p.array_step[0] * static_cast<int64_t>(S),
                                  p.array_step[1] * row * static_cast<int64_t>(S),
                                  p.array_step[2] * plane * static_cast<int64_t>(S)};
  auto weight = [&](int j) { return unit[bits[j].first] << bits[j].second; };
  const int lo_bits = std::min(nbits, 6);
  int64_t lo_off[64];
  lo_off[0] = 0;
  for (int64_t i = 1; i < (int64_t{1} << lo_bits); ++i) {
    const int j = __builtin_ctzll(static_cast<unsigned long long>(i));
    lo_off[i] = lo_off[i & (i - 1)] + weight(j);
  }
  const int64_t lo_n = int64_t{1} << lo_bits;
  const int64_t hi_n = int64_t{1} << (nbits - lo_bits);
  std::byte* base =
      a.data + (p.array_start[2] * plane + p.array_start[1] * row + p.array_start[0]) * static_cast<int64_t>(S);
  std::byte* b = block + (p.first + p.lut[0][p.lo[0]] + p.lut[1][p.lo[1]] + p.lut[2][p.lo[2]]) * S;
  // When x is one of the two lowest index bits and adjacent in the array, every 4 block samples are
  // 2 neighbours in x from each of 2 rows: a shuffle and two 2-sample moves (x second, the other axis
  // first) or two 2-sample copies (x first) instead of 4 single-sample copies.
  const bool x_contiguous = (S == 4 || S == 8) && nbits >= 2 && p.array_step[0] == 1;
  const auto is_x_step = [&](int j) { return bits[j].first == 0 && bits[j].second == 0; };
  const bool x_second = x_contiguous && is_x_step(1) && bits[0].first != 0;
  const bool x_first = x_contiguous && is_x_step(0) && bits[1].first != 0;
  const int64_t other = nbits >= 2 ? (x_second ? weight(0) : weight(1)) : 0;  // byte step to the second row
  int64_t hi_off = 0;
  for (int64_t h = 0; h < hi_n; ++h) {
    if (h) {  // the high-bit offset, summed over the set bits of h (a few adds per 64 samples)
      hi_off = 0;
      for (int64_t v = h; v; v &= v - 1)
        hi_off += weight(lo_bits + __builtin_ctzll(static_cast<unsigned long long>(v)));
    }
    std::byte* arr = base + hi_off;
    if (x_second) {
      // Block samples (x0 r0) (x0 r1) (x1 r0) (x1 r1): rows r0 and r1 each hold the pair x0 x1.
      for (int64_t i = 0; i < lo_n; i += 4, b += 4 * S) {
        std::byte* r0 = arr + lo_off[i];
        if constexpr (S == 4 && D == Direction::kArrayToBlock) {
          // 8-byte loads that allow any alignment (float arrays are 4-byte aligned).
          const __m128 r0x = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r0)));
          const __m128 r1x = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r0 + other)));
          _mm_storeu_ps(reinterpret_cast<float*>(b), _mm_unpacklo_ps(r0x, r1x));
        } else if constexpr (S == 4) {
          const __m128 v = _mm_loadu_ps(reinterpret_cast<const float*>(b));
          const __m128 rows = _mm_shuffle_ps(v, v, _MM_SHUFFLE(3, 1, 2, 0));
          _mm_storel_pi(reinterpret_cast<__m64*>(r0), rows);
          _mm_storeh_pi(reinterpret_cast<__m64*>(r0 + other), rows);
        } else if constexpr (S == 8 && D == Direction::kArrayToBlock) {
          const __m128d r0x = _mm_loadu_pd(reinterpret_cast<const double*>(r0));
          const __m128d r1x = _mm_loadu_pd(reinterpret_cast<const double*>(r0 + other));
          _mm_storeu_pd(reinterpret_cast<double*>(b), _mm_unpacklo_pd(r0x, r1x));
          _mm_storeu_pd(reinterpret_cast<double*>(b + 16), _mm_unpackhi_pd(r0x, r1x));
        } else if constexpr (S == 8) {
          const __m128d v01 = _mm_loadu_pd(reinterpret_cast<const double*>(b));
          const __m128d v23 = _mm_loadu_pd(reinterpret_cast<const double*>(b + 16));
          _mm_storeu_pd(reinterpret_cast<double*>(r0), _mm_unpacklo_pd(v01, v23));
          _mm_storeu_pd(reinterpret_cast<double*>(r0 + other), _mm_unpackhi_pd(v01, v23));
        }
      }
    } else if (x_first) {
      for (int64_t i = 0; i < lo_n; i += 4, b += 4 * S) {
        std::byte* r0 = arr + lo_off[i];
        if constexpr (D == Direction::kArrayToBlock) {
          std::memcpy(b, r0, 2 * S);
          std::memcpy(b + 2 * S, r0 + other, 2 * S);
        } else {
          std::memcpy(r0, b, 2 * S);
          std::memcpy(r0 + other, b + 2 * S, 2 * S);
        }
      }
    } else {
      for (int64_t i = 0; i < lo_n; ++i, b += S) {
        if constexpr (D == Direction::kArrayToBlock)
          std::memcpy(b, arr + lo_off[i], S);
        else
          std::memcpy(arr + lo_off[i], b, S);
      }
    }
  }
}

template <Direction D>
bool dispatch_walk(const Run& run, const Plan& p, int nbits, std::byte* block, const ArrayView& a) {
  switch (a.sample_bytes) {
    case 1:
      copy_hz_walk<1, D>(run, p, nbits, block, a);
      return true;
    case 2:
      copy_hz_walk<2, D>(run, p, nbits, block, a);
      return true;
    case 4:
      copy_hz_walk<4, D>(run, p, nbits, block, a);
      return true;
    case 8:
      copy_hz_walk<8, D>(run, p, nbits, block, a);
      return true;
    case 12:
      copy_hz_walk<12, D>(run, p, nbits, block, a);
      return true;
    case 16:
      copy_hz_walk<16, D>(run, p, nbits, block, a);
      return true;
    default:
      return false;
  }
}

// The number of index bits of the part [p.lo, p.hi) of `run` if that part is one contiguous range of
// block indices: 2^k_a samples along each axis a, starting at a multiple of 2^k_a, and the lowest
// index bits carrying exactly those k_a low coordinate bits of every axis. -1 otherwise.
int aligned_part_bits(const Run& run, const Plan& p) {
  const auto& bits = run.luts->index_bits;
  int k[kMaxDims], nbits = 0;
  for (int a = 0; a < kMaxDims; ++a) {
    const int64_t n = p.hi[a] - p.lo[a];
    if ((n & (n - 1)) != 0 || p.lo[a] % n != 0) return -1;
    k[a] = __builtin_ctzll(static_cast<unsigned long long>(n));
    nbits += k[a];
  }
  if (nbits == 0) return 0;  // one sample (row-major runs have no index bits to walk otherwise)
  if (nbits > static_cast<int>(bits.size())) return -1;
  int seen[kMaxDims] = {0, 0, 0};
  for (int j = 0; j < nbits; ++j) ++seen[bits[j].first];
  for (int a = 0; a < kMaxDims; ++a)
    if (seen[a] != k[a]) return -1;
  return nbits;
}

template <Direction D>
void dispatch(const Plan& p, std::byte* block, const ArrayView& a, bool rows_contiguous) {
  if (rows_contiguous) return copy_any<D>(p, block, a, a.sample_bytes, true);
  switch (a.sample_bytes) {
    case 1:
      return copy_fixed<1, D>(p, block, a);
    case 2:
      return copy_fixed<2, D>(p, block, a);
    case 4:
      return copy_fixed<4, D>(p, block, a);
    case 8:
      return copy_fixed<8, D>(p, block, a);
    case 12:
      return copy_fixed<12, D>(p, block, a);
    case 16:
      return copy_fixed<16, D>(p, block, a);
    default:
      return copy_any<D>(p, block, a, a.sample_bytes, false);
  }
}

}  // namespace

namespace {

// The plan of copying the part of `run` inside `clip`; false when no sample of the run is inside.
bool make_plan(const Run& run, const Box& clip, const ArrayView& array, Plan& p) {
  if (!run_range_in_box(run, clip, p.lo, p.hi)) return false;
  for (int a = 0; a < kMaxDims; ++a) {
    p.array_start[a] = (run.p0[a] + p.lo[a] * run.delta[a] - array.grid.origin[a]) / array.grid.spacing[a];
    p.array_step[a] = run.delta[a] / array.grid.spacing[a];
    p.lut[a] = run.luts->axis[a].data();
  }
  p.first = run.first;
  return true;
}

int64_t sample_count(const Plan& p) { return (p.hi[0] - p.lo[0]) * (p.hi[1] - p.lo[1]) * (p.hi[2] - p.lo[2]); }

// Encoding from an array too large for the caches gathers each sample from a row of its own, scattered
// over planes megabytes apart, and waits on memory for most of them. When the block-order walk will run,
// copying the array rows through the part's samples into a dense row buffer first reads the same lines
// row by row, sequentially, and the walk then gathers from the buffer in the cache: about 1.5 times
// faster for a 512^3 float32 array, no slower for smaller ones (bench/hz_kernel_bench.cpp;
// docs/design/hz-kernels.md "Row buffers"). The buffer holds whole rows: it is worth it while the samples
// of a row are at most every second one (kRowsMaxStep), and it stays in the L2 cache (kRowsBytes).
// Arrays from kRowsArrayBytes on are the ones the caches cannot hold.
constexpr uint64_t kRowsArrayBytes = uint64_t{16} << 20;
constexpr size_t kRowsBytes = size_t{1} << 20;
constexpr int64_t kRowsMaxStep = 2;
constexpr int64_t kRowsMinSamples = 4096;
static_assert(kRowsBytes < kRowsArrayBytes, "a row buffer must not take the row-buffer path itself");

// The sample sizes dispatch_walk instantiates the walk for.
bool walk_handles(size_t sample_bytes) {
  return sample_bytes == 1 || sample_bytes == 2 || sample_bytes == 4 || sample_bytes == 8 || sample_bytes == 12 ||
         sample_bytes == 16;
}

// The grid of the plan's part in a row buffer: the array's rows (x spacing kept) through the part's
// samples, from the part's first sample to its last along x. Returns false when a buffer does not pay.
bool rows_grid(const Plan& p, const Run& run, const ArrayView& a, SampleGrid& rows) {
  if (static_cast<uint64_t>(a.grid.sample_count()) * a.sample_bytes < kRowsArrayBytes) return false;
  if (p.array_step[0] > kRowsMaxStep || sample_count(p) < kRowsMinSamples) return false;
  for (int ax = 0; ax < kMaxDims; ++ax) {
    rows.origin[ax] = run.p0[ax] + p.lo[ax] * run.delta[ax];
    rows.spacing[ax] = ax == 0 ? a.grid.spacing[0] : run.delta[ax];
    rows.count[ax] = ax == 0 ? (p.hi[0] - p.lo[0] - 1) * p.array_step[0] + 1 : p.hi[ax] - p.lo[ax];
  }
  return static_cast<size_t>(rows.sample_count()) * a.sample_bytes <= kRowsBytes;
}

// Copies the rows of `rows` out of the array into `out` (dense, x fastest).
void fill_rows(const Plan& p, const ArrayView& a, const SampleGrid& rows, std::byte* out) {
  const int64_t row = a.grid.count[0], plane = row * a.grid.count[1];
  const size_t row_bytes = static_cast<size_t>(rows.count[0]) * a.sample_bytes;
  for (int64_t k = 0; k < rows.count[2]; ++k) {
    const int64_t az = p.array_start[2] + k * p.array_step[2];
    for (int64_t j = 0; j < rows.count[1]; ++j, out += row_bytes) {
      const int64_t ay = p.array_start[1] + j * p.array_step[1];
      std::memcpy(out, a.data + static_cast<size_t>(az * plane + ay * row + p.array_start[0]) * a.sample_bytes,
                  row_bytes);
    }
  }
}

// Encodes an aligned part of `nbits` index bits through a row buffer, when one pays. The buffer is the
// calling thread's (pool workers and callers alike), allocated on its first use and kept until it exits.
bool encode_through_rows(const Run& run, const Box& clip, const Plan& p, int nbits, std::byte* block,
                         const ArrayView& array) {
  SampleGrid rows;
  if (nbits <= 0 || !walk_handles(array.sample_bytes) || !rows_grid(p, run, array, rows)) return false;
  thread_local std::vector<std::byte> buffer;
  buffer.resize(kRowsBytes);
  fill_rows(p, array, rows, buffer.data());
  const ArrayView view{buffer.data(), rows, array.sample_bytes};
  Plan q;  // the same part, located in the buffer
  make_plan(run, clip, view, q);
  return dispatch_walk<Direction::kArrayToBlock>(run, q, nbits, block, view);
}

}  // namespace

int64_t copy_run(const Run& run, const Box& clip, std::byte* block, const ArrayView& array, Direction direction) {
  constexpr uint64_t kWalkDecodeBytes = uint64_t{16} << 20;
  Plan p;
  if (!make_plan(run, clip, array, p)) return 0;
  // Stores should be sequential and loads scattered: encoding walks the block in index order and
  // gathers from the array; decoding walks the array rows and gathers from the (cache-resident) block.
  // Decoding walks the block too when the array is small enough to stay in the caches while the
  // block's samples scatter into it (bench/hz_kernel_bench.cpp: faster up to 128^3, slower at 256^3).
  const bool walk = direction == Direction::kArrayToBlock ||
                    static_cast<uint64_t>(array.grid.sample_count()) * array.sample_bytes <= kWalkDecodeBytes;
  if (walk) {
    const int nbits = aligned_part_bits(run, p);
    if (direction == Direction::kArrayToBlock && encode_through_rows(run, clip, p, nbits, block, array))
      return sample_count(p);
    if (nbits >= 0 &&
        (direction == Direction::kArrayToBlock ? dispatch_walk<Direction::kArrayToBlock>(run, p, nbits, block, array)
                                               : dispatch_walk<Direction::kBlockToArray>(run, p, nbits, block, array)))
      return sample_count(p);
  }
  const bool rows_contiguous = run.luts->x_is_identity && p.array_step[0] == 1;
  if (direction == Direction::kArrayToBlock)
    dispatch<Direction::kArrayToBlock>(p, block, array, rows_contiguous);
  else
    dispatch<Direction::kBlockToArray>(p, block, array, rows_contiguous);
  return sample_count(p);
}

int64_t copy_run_in_block_order(const Run& run, const Box& clip, std::byte* block, const ArrayView& array,
                                Direction direction) {
  Plan p;
  if (!make_plan(run, clip, array, p)) return 0;
  const int nbits = aligned_part_bits(run, p);
  if (nbits < 0) return -1;
  const bool done = direction == Direction::kArrayToBlock
                        ? dispatch_walk<Direction::kArrayToBlock>(run, p, nbits, block, array)
                        : dispatch_walk<Direction::kBlockToArray>(run, p, nbits, block, array);
  return done ? sample_count(p) : -1;
}

void copy_rows_streaming(std::byte* dst, size_t dst_stride, const std::byte* src, size_t row_bytes, int64_t rows) {
#if defined(__SSE2__)
  const bool lines = reinterpret_cast<uintptr_t>(dst) % 64 == 0 && dst_stride % 64 == 0 && row_bytes % 64 == 0;
  if (lines) {
    for (int64_t r = 0; r < rows; ++r, dst += dst_stride, src += row_bytes) {
      for (size_t i = 0; i < row_bytes; i += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), v);
      }
    }
    _mm_sfence();  // streaming stores are weakly ordered: make them visible before returning
    return;
  }
#endif
  for (int64_t r = 0; r < rows; ++r, dst += dst_stride, src += row_bytes) std::memcpy(dst, src, row_bytes);
}

namespace {
template <class T>
void fill_as(std::byte* out, size_t n, double v) {
  T t = static_cast<T>(v);
  for (size_t i = 0; i < n; ++i) std::memcpy(out + i * sizeof(T), &t, sizeof(T));
}
}  // namespace

void fill_samples(std::byte* out, size_t count, DType dtype, double value) {
  const size_t n = count * static_cast<size_t>(dtype.components);
  if (value == 0) {
    std::memset(out, 0, n * dtype.scalar_bytes());
    return;
  }
  switch (dtype.scalar) {
    case Scalar::kInt8:
      return fill_as<int8_t>(out, n, value);
    case Scalar::kUint8:
      return fill_as<uint8_t>(out, n, value);
    case Scalar::kInt16:
      return fill_as<int16_t>(out, n, value);
    case Scalar::kUint16:
      return fill_as<uint16_t>(out, n, value);
    case Scalar::kInt32:
      return fill_as<int32_t>(out, n, value);
    case Scalar::kUint32:
      return fill_as<uint32_t>(out, n, value);
    case Scalar::kInt64:
      return fill_as<int64_t>(out, n, value);
    case Scalar::kUint64:
      return fill_as<uint64_t>(out, n, value);
    case Scalar::kFloat32:
      return fill_as<float>(out, n, value);
    case Scalar::kFloat64:
      return fill_as<double>(out, n, value);
  }
}

}  // namespace hzio::hzorder
