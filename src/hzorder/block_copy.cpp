// The sample-moving kernels of HZ encode and decode (docs/design/hz-kernels.md explains the tables).
#include "hzorder/block_copy.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace hzio::hzorder {
namespace {

struct Plan {
  Point lo, hi;           // run index range inside the clip
  Point array_start;      // array index of run index lo
  Point array_step;       // array index step per run index step
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
      std::byte* brow = block + static_cast<size_t>(p.first + p.lut[2][z] + p.lut[1][y]) * S;
      for (int64_t x = 0; x < nx; ++x) {
        std::byte* bs = brow + static_cast<size_t>(lx[x]) * S;
        std::byte* as = arow + static_cast<size_t>(x * sx) * S;
        if constexpr (D == Direction::kArrayToBlock) std::memcpy(bs, as, S);
        else std::memcpy(as, bs, S);
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
      std::byte* brow = block + static_cast<size_t>(p.first + p.lut[2][z] + p.lut[1][y]) * s;
      if (rows_contiguous) {
        std::byte* bs = brow + static_cast<size_t>(p.lut[0][p.lo[0]]) * s;
        if constexpr (D == Direction::kArrayToBlock) std::memcpy(bs, arow, static_cast<size_t>(nx) * s);
        else std::memcpy(arow, bs, static_cast<size_t>(nx) * s);
        continue;
      }
      for (int64_t x = 0; x < nx; ++x) {
        std::byte* bs = brow + static_cast<size_t>(p.lut[0][p.lo[0] + x]) * s;
        std::byte* as = arow + static_cast<size_t>(x * p.array_step[0]) * s;
        if constexpr (D == Direction::kArrayToBlock) std::memcpy(bs, as, s);
        else std::memcpy(as, bs, s);
      }
    }
  }
}

// Encoding a whole HZ run: walk the block in index order and gather from the array through per-index-bit byte
// weights, split into a 64-entry table for the low bits (a small neighbourhood, cache-resident)
// and a table for the high bits. Sequential on the block side, local on the array side.
template <size_t S>
void copy_hz_whole(const Run& run, const Plan& p, std::byte* block, const ArrayView& a) {
  const auto& bits = run.luts->index_bits;
  const int nbits = static_cast<int>(bits.size());
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
  std::byte* base = a.data + (p.array_start[2] * plane + p.array_start[1] * row + p.array_start[0]) * static_cast<int64_t>(S);
  std::byte* b = block + run.first * S;
  // When x is one of the two lowest index bits and adjacent in the array, every 4 block samples are
  // 2 neighbours in x from each of 2 rows: two 2-sample loads and a shuffle (x, then the other axis)
  // or two 2-sample copies (x lowest) instead of 4 single-sample copies.
  const bool x_contiguous = (S == 4 || S == 8) && nbits >= 2 && p.array_step[0] == 1;
  const auto is_x_step = [&](int j) { return bits[j].first == 0 && bits[j].second == 0; };
  const bool x_second = x_contiguous && is_x_step(1) && bits[0].first != 0;
  const bool x_first = x_contiguous && is_x_step(0) && bits[1].first != 0;
  const int64_t other = nbits >= 2 ? (x_second ? weight(0) : weight(1)) : 0;  // byte step to the second row
  int64_t hi_off = 0;
  for (int64_t h = 0; h < hi_n; ++h) {
    if (h) {  // the high-bit offset, summed over the set bits of h (a few adds per 64 samples)
      hi_off = 0;
      for (int64_t v = h; v; v &= v - 1) hi_off += weight(lo_bits + __builtin_ctzll(static_cast<unsigned long long>(v)));
    }
    std::byte* arr = base + hi_off;
    if (x_second) {
      for (int64_t i = 0; i < lo_n; i += 4, b += 4 * S) {
        const std::byte* r0 = arr + lo_off[i];
        if constexpr (S == 4) {
          const __m128 r0x = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(r0)));
          const __m128 r1x = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(r0 + other)));
          _mm_storeu_ps(reinterpret_cast<float*>(b), _mm_unpacklo_ps(r0x, r1x));
        } else if constexpr (S == 8) {
          const __m128d r0x = _mm_loadu_pd(reinterpret_cast<const double*>(r0));
          const __m128d r1x = _mm_loadu_pd(reinterpret_cast<const double*>(r0 + other));
          _mm_storeu_pd(reinterpret_cast<double*>(b), _mm_unpacklo_pd(r0x, r1x));
          _mm_storeu_pd(reinterpret_cast<double*>(b + 16), _mm_unpackhi_pd(r0x, r1x));
        }
      }
    } else if (x_first) {
      for (int64_t i = 0; i < lo_n; i += 4, b += 4 * S) {
        const std::byte* r0 = arr + lo_off[i];
        std::memcpy(b, r0, 2 * S);
        std::memcpy(b + 2 * S, r0 + other, 2 * S);
      }
    } else {
      for (int64_t i = 0; i < lo_n; ++i, b += S) std::memcpy(b, arr + lo_off[i], S);
    }
  }
}

bool dispatch_whole(const Run& run, const Plan& p, std::byte* block, const ArrayView& a) {
  switch (a.sample_bytes) {
    case 1: copy_hz_whole<1>(run, p, block, a); return true;
    case 2: copy_hz_whole<2>(run, p, block, a); return true;
    case 4: copy_hz_whole<4>(run, p, block, a); return true;
    case 8: copy_hz_whole<8>(run, p, block, a); return true;
    case 12: copy_hz_whole<12>(run, p, block, a); return true;
    case 16: copy_hz_whole<16>(run, p, block, a); return true;
    default: return false;
  }
}

template <Direction D>
void dispatch(const Plan& p, std::byte* block, const ArrayView& a, bool rows_contiguous) {
  if (rows_contiguous) return copy_any<D>(p, block, a, a.sample_bytes, true);
  switch (a.sample_bytes) {
    case 1: return copy_fixed<1, D>(p, block, a);
    case 2: return copy_fixed<2, D>(p, block, a);
    case 4: return copy_fixed<4, D>(p, block, a);
    case 8: return copy_fixed<8, D>(p, block, a);
    case 12: return copy_fixed<12, D>(p, block, a);
    case 16: return copy_fixed<16, D>(p, block, a);
    default: return copy_any<D>(p, block, a, a.sample_bytes, false);
  }
}

}  // namespace

int64_t copy_run(const Run& run, const Box& clip, std::byte* block, const ArrayView& array, Direction direction) {
  Plan p;
  if (!run_range_in_box(run, clip, p.lo, p.hi)) return 0;
  for (int a = 0; a < kMaxDims; ++a) {
    p.array_start[a] = (run.p0[a] + p.lo[a] * run.delta[a] - array.grid.origin[a]) / array.grid.spacing[a];
    p.array_step[a] = run.delta[a] / array.grid.spacing[a];
    p.lut[a] = run.luts->axis[a].data();
  }
  p.first = run.first;
  // Stores should be sequential and loads scattered: encoding walks the block in index order and
  // gathers from the array; decoding walks the array rows and gathers from the (cache-resident) block.
  const bool whole = direction == Direction::kArrayToBlock && !run.luts->index_bits.empty() &&
                     p.lo == Point{0, 0, 0} && p.hi == run.ns;
  if (whole && dispatch_whole(run, p, block, array)) return run.ns[0] * run.ns[1] * run.ns[2];
  const bool rows_contiguous = run.luts->x_is_identity && p.array_step[0] == 1;
  if (direction == Direction::kArrayToBlock) dispatch<Direction::kArrayToBlock>(p, block, array, rows_contiguous);
  else dispatch<Direction::kBlockToArray>(p, block, array, rows_contiguous);
  return (p.hi[0] - p.lo[0]) * (p.hi[1] - p.lo[1]) * (p.hi[2] - p.lo[2]);
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
    case Scalar::kInt8: return fill_as<int8_t>(out, n, value);
    case Scalar::kUint8: return fill_as<uint8_t>(out, n, value);
    case Scalar::kInt16: return fill_as<int16_t>(out, n, value);
    case Scalar::kUint16: return fill_as<uint16_t>(out, n, value);
    case Scalar::kInt32: return fill_as<int32_t>(out, n, value);
    case Scalar::kUint32: return fill_as<uint32_t>(out, n, value);
    case Scalar::kInt64: return fill_as<int64_t>(out, n, value);
    case Scalar::kUint64: return fill_as<uint64_t>(out, n, value);
    case Scalar::kFloat32: return fill_as<float>(out, n, value);
    case Scalar::kFloat64: return fill_as<double>(out, n, value);
  }
}

}  // namespace hzio::hzorder
