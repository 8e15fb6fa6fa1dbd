// Block statistics kernels. Reductions are written as (v < m ? v : m) per lane so that compilers emit
// packed min/max without fast-math; NaN samples never become a min or max.
#include "stats/block_stats.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace hzio::stats {
namespace {

template <class T>
double down(T v) {
  const double d = static_cast<double>(v);
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
    if (d > static_cast<double>(std::numeric_limits<T>::lowest()) && static_cast<T>(d) > v)
      return std::nextafter(d, -INFINITY);
  }
  return d;
}

template <class T>
double up(T v) {
  const double d = static_cast<double>(v);
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
    if (d < static_cast<double>(std::numeric_limits<T>::max()) && static_cast<T>(d) < v)
      return std::nextafter(d, INFINITY);
  }
  return d;
}

// Explicit SIMD min/max for the common case (one component, no padding, float or double): GCC vector
// types, with an AVX2 clone picked at load time on CPUs that have it. (v < m ? v : m) is what the min
// instructions compute, so NaN samples never win.
template <class V, class T>
inline void minmax_vec(const T* v, uint64_t n, T& lo, T& hi) {
  constexpr uint64_t kW = sizeof(V) / sizeof(T);
  // Four independent accumulator pairs: one pair would chain every min on the previous one's latency.
  V mn[4], mx[4];
  for (int k = 0; k < 4; ++k)
    for (uint64_t l = 0; l < kW; ++l) {
      mn[k][l] = std::numeric_limits<T>::infinity();
      mx[k][l] = -std::numeric_limits<T>::infinity();
    }
  uint64_t i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
    for (int k = 0; k < 4; ++k) {
      V a;
      std::memcpy(&a, v + i + k * kW, sizeof a);
      mn[k] = a < mn[k] ? a : mn[k];
      mx[k] = a > mx[k] ? a : mx[k];
    }
  }
  for (int k = 0; k < 4; ++k)
    for (uint64_t l = 0; l < kW; ++l) {
      lo = mn[k][l] < lo ? mn[k][l] : lo;
      hi = mx[k][l] > hi ? mx[k][l] : hi;
    }
  for (; i < n; ++i) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
}

typedef float F8 __attribute__((vector_size(32)));
typedef double D4 __attribute__((vector_size(32)));

__attribute__((target_clones("avx2", "default"))) void minmax_f32(const float* v, uint64_t n, float& lo, float& hi) {
  minmax_vec<F8>(v, n, lo, hi);
}

__attribute__((target_clones("avx2", "default"))) void minmax_f64(const double* v, uint64_t n, double& lo, double& hi) {
  minmax_vec<D4>(v, n, lo, hi);
}

// Min/max of component c over indices [begin, end) where mask (if any) is set.
template <class T>
void reduce(const T* v, int comps, int c, uint64_t begin, uint64_t end, const std::vector<char>* mask,
            RangeStats& out) {
  constexpr int kLanes = 8;
  T mn[kLanes], mx[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    mn[l] = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    mx[l] =
        std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (!mask && comps == 1) {
      T lo = std::numeric_limits<T>::infinity(), hi = -std::numeric_limits<T>::infinity();
      if constexpr (std::is_same_v<T, float>)
        minmax_f32(v + begin, end - begin, lo, hi);
      else
        minmax_f64(v + begin, end - begin, lo, hi);
      out.min[c] = lo;
      out.max[c] = hi;
      return;
    }
  }
  uint64_t i = begin;
  if (!mask && comps == 1) {
    for (; i + kLanes <= end; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const T x = v[i + l];
        mn[l] = x < mn[l] ? x : mn[l];
        mx[l] = x > mx[l] ? x : mx[l];
      }
  }
  for (; i < end; ++i) {
    if (mask && !(*mask)[i]) continue;
    const T x = v[i * comps + c];
    mn[0] = x < mn[0] ? x : mn[0];
    mx[0] = x > mx[0] ? x : mx[0];
  }
  T a = mn[0], b = mx[0];
  for (int l = 1; l < kLanes; ++l) {
    a = mn[l] < a ? mn[l] : a;
    b = mx[l] > b ? mx[l] : b;
  }
  out.min[c] = down(a);
  out.max[c] = up(b);
}

template <class T>
void range_stats(const std::byte* data, int comps, uint64_t begin, uint64_t end, const std::vector<char>* mask,
                 RangeStats& out) {
  const T* v = reinterpret_cast<const T*>(data);
  out.min.assign(static_cast<size_t>(comps), 0);
  out.max.assign(static_cast<size_t>(comps), 0);
  out.count = 0;
  if (mask) {
    for (uint64_t i = begin; i < end; ++i) out.count += (*mask)[i] != 0;
  } else {
    out.count = end - begin;
  }
  if (out.count == 0) return;
  for (int c = 0; c < comps; ++c) reduce(v, comps, c, begin, end, mask, out);
}

void dispatch(Scalar s, const std::byte* d, int comps, uint64_t b, uint64_t e, const std::vector<char>* m,
              RangeStats& o) {
  switch (s) {
    case Scalar::kInt8:
      return range_stats<int8_t>(d, comps, b, e, m, o);
    case Scalar::kUint8:
      return range_stats<uint8_t>(d, comps, b, e, m, o);
    case Scalar::kInt16:
      return range_stats<int16_t>(d, comps, b, e, m, o);
    case Scalar::kUint16:
      return range_stats<uint16_t>(d, comps, b, e, m, o);
    case Scalar::kInt32:
      return range_stats<int32_t>(d, comps, b, e, m, o);
    case Scalar::kUint32:
      return range_stats<uint32_t>(d, comps, b, e, m, o);
    case Scalar::kInt64:
      return range_stats<int64_t>(d, comps, b, e, m, o);
    case Scalar::kUint64:
      return range_stats<uint64_t>(d, comps, b, e, m, o);
    case Scalar::kFloat32:
      return range_stats<float>(d, comps, b, e, m, o);
    case Scalar::kFloat64:
      return range_stats<double>(d, comps, b, e, m, o);
  }
}

}  // namespace

BlockStats compute_block_stats(const hzorder::HzSpace& space, uint64_t block, Layout layout,
                               std::span<const std::byte> data, DType dtype, const Box& dataset_box,
                               int sub_block_bits) {
  const uint64_t n = uint64_t{1} << space.bits_per_block();
  // Padding only exists in blocks that reach past the dataset box: mark their real samples.
  std::vector<char> mask;
  uint64_t real = 0;
  Point lo, hi;
  for (const auto& run : space.block_runs(block, layout)) {
    if (hzorder::run_range_in_box(run, dataset_box, lo, hi))
      real += static_cast<uint64_t>((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
  }
  if (real < n) {
    mask.assign(n, 0);
    for (const auto& run : space.block_runs(block, layout)) {
      if (!hzorder::run_range_in_box(run, dataset_box, lo, hi)) continue;
      for (int64_t z = lo[2]; z < hi[2]; ++z)
        for (int64_t y = lo[1]; y < hi[1]; ++y)
          for (int64_t x = lo[0]; x < hi[0]; ++x)
            mask[run.first + run.luts->axis[2][z] + run.luts->axis[1][y] + run.luts->axis[0][x]] = 1;
    }
  }
  const std::vector<char>* m = mask.empty() ? nullptr : &mask;
  // A block buffered for a direct write can sit at any byte offset, and the passes below load typed
  // samples: such a block is read from an aligned copy (heap memory suits every scalar type).
  thread_local std::vector<std::byte> aligned;
  if (reinterpret_cast<uintptr_t>(data.data()) % dtype.scalar_bytes() != 0) {
    aligned.assign(data.begin(), data.end());
    data = aligned;
  }
  BlockStats s;
  if (sub_block_bits <= 0) {
    dispatch(dtype.scalar, data.data(), dtype.components, 0, n, m, s.block);
    return s;
  }
  // One pass: the parts, then the block as their union (min and max are monotone, so this equals a pass
  // over the whole block, including all-NaN parts, which hold +inf / -inf and never win).
  const uint64_t parts = uint64_t{1} << sub_block_bits, len = n / parts;
  s.parts.resize(parts);
  for (uint64_t p = 0; p < parts; ++p)
    dispatch(dtype.scalar, data.data(), dtype.components, p * len, (p + 1) * len, m, s.parts[p]);
  const size_t comps = static_cast<size_t>(dtype.components);
  s.block.min.assign(comps, INFINITY);
  s.block.max.assign(comps, -INFINITY);
  for (const RangeStats& part : s.parts) {
    if (part.count == 0) continue;
    s.block.count += part.count;
    for (size_t c = 0; c < comps; ++c) {
      s.block.min[c] = part.min[c] < s.block.min[c] ? part.min[c] : s.block.min[c];
      s.block.max[c] = part.max[c] > s.block.max[c] ? part.max[c] : s.block.max[c];
    }
  }
  if (s.block.count == 0) s.block.min.assign(comps, 0), s.block.max.assign(comps, 0);
  return s;
}

bool may_contain(const RangeStats& s, int component, double lo, double hi) {
  if (s.count == kUnknown) return true;
  if (s.count == 0) return false;
  return s.max[static_cast<size_t>(component)] >= lo && s.min[static_cast<size_t>(component)] <= hi;
}

}  // namespace hzio::stats
