// HZ address math (docs/format.md "HZ order", "Levels as grids", "Blocks").
#include "hzorder/hz_space.hpp"

#include <deque>

#include <algorithm>
#include <bit>
#include <mutex>

#include "util/fork_guard.hpp"

namespace hzio::hzorder {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

}  // namespace

HzSpace::HzSpace(const format::Bitmask& bitmask, int bits_per_block)
    : bitmask_(bitmask), maxh_(bitmask.max_level()), bpb_(bits_per_block) {
  // Bit s of the interleaved address (as hz_to_point forms it) is the next coordinate bit of the axis
  // the bitmask names at position maxh - s.
  extract_.resize(static_cast<size_t>((maxh_ + 7) / 8 * kMaxDims));
  std::array<int, kMaxDims> used{0, 0, 0};
  for (int s = 0; s < maxh_; ++s) {
    const int a = bitmask_.axis_at(maxh_ - s);
    const uint64_t bit = uint64_t{1} << used[a]++;
    auto& table = extract_[static_cast<size_t>(s / 8 * kMaxDims + a)];
    for (int v = 0; v < 256; ++v)
      if ((v >> (s % 8)) & 1) table[static_cast<size_t>(v)] |= bit;
  }
}

uint64_t HzSpace::point_to_hz(const Point& p) const {
  Point rem = p;
  uint64_t z = 0;
  for (int s = 0; s < maxh_; ++s) {
    int a = bitmask_.axis_at(maxh_ - s);
    z |= static_cast<uint64_t>(rem[a] & 1) << s;
    rem[a] >>= 1;
  }
  uint64_t top = z | (uint64_t{1} << maxh_);
  return top >> (std::countr_zero(top) + 1);
}

Point HzSpace::hz_to_point(uint64_t hz) const {
  Point p{0, 0, 0};
  if (hz == 0) return p;
  int h = level_of(hz);
  const uint64_t z = (((hz << 1) | 1) << (maxh_ - h)) & ((uint64_t{1} << maxh_) - 1);
  for (size_t k = 0; k * kMaxDims < extract_.size() && (z >> (8 * k)) != 0; ++k) {
    const size_t v = (z >> (8 * k)) & 0xff;
    for (int a = 0; a < kMaxDims; ++a) p[a] |= static_cast<int64_t>(extract_[k * kMaxDims + static_cast<size_t>(a)][v]);
  }
  return p;
}

int HzSpace::level_of(uint64_t hz) { return hz == 0 ? 0 : 64 - std::countl_zero(hz); }

int HzSpace::level_of_block(uint64_t block) const {
  return block == 0 ? bpb_ : bpb_ + 1 + (63 - std::countl_zero(block));
}

Point HzSpace::count_bits(int from, int to) const {
  Point c{0, 0, 0};
  for (int k = std::max(from, 1); k <= std::min(to, maxh_); ++k) ++c[bitmask_.axis_at(k)];
  return c;
}

Point HzSpace::resolution_spacing(int level) const {
  Point c = count_bits(level + 1, maxh_);
  return {int64_t{1} << c[0], int64_t{1} << c[1], int64_t{1} << c[2]};
}

Point HzSpace::window_extent(int level, int window_bits) const {
  window_bits = std::clamp(window_bits, 0, level);
  const Point c = count_bits(level - window_bits + 1, level);
  return {int64_t{1} << c[0], int64_t{1} << c[1], int64_t{1} << c[2]};
}

Point HzSpace::level_delta(int level) const {
  Point c = count_bits(level, maxh_);
  return {int64_t{1} << c[0], int64_t{1} << c[1], int64_t{1} << c[2]};
}

SampleGrid HzSpace::grid_in_box(const Box& box, int level) const {
  SampleGrid g;
  g.spacing = resolution_spacing(level);
  for (int a = 0; a < kMaxDims; ++a) {
    g.origin[a] = ceil_div(box.lo[a], g.spacing[a]) * g.spacing[a];
    g.count[a] = box.hi[a] > g.origin[a] ? ceil_div(box.hi[a] - g.origin[a], g.spacing[a]) : 0;
  }
  return g;
}

namespace {

// The mutex of every space's table caches (hz_cache_, rm_cache_).
std::mutex& luts_mutex() {
  static std::mutex mutex;
  static const bool registered = (util::hold_across_fork(mutex), true);
  (void)registered;
  return mutex;
}

}  // namespace

std::shared_ptr<const HzSpace> HzSpace::shared(const format::Bitmask& bitmask, int bits_per_block) {
  constexpr size_t kKept = 8;
  static std::mutex mutex;
  static const bool registered = (util::hold_across_fork(mutex), true);
  (void)registered;
  static std::deque<std::shared_ptr<const HzSpace>> kept;  // most recently asked for last
  std::lock_guard lock(mutex);
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    if ((*it)->bpb_ == bits_per_block && (*it)->bitmask_.text() == bitmask.text()) {
      auto space = *it;
      kept.erase(it);
      kept.push_back(space);
      return space;
    }
  }
  auto space = std::make_shared<const HzSpace>(bitmask, bits_per_block);
  kept.push_back(space);
  if (kept.size() > kKept) kept.pop_front();
  return space;
}

std::shared_ptr<const AxisLuts> HzSpace::hz_luts(int top, int nbits) const {
  std::lock_guard lock(luts_mutex());
  auto& slot = hz_cache_[{top, nbits}];
  if (slot) return slot;
  auto luts = std::make_shared<AxisLuts>();
  std::array<std::vector<int>, kMaxDims> bits;  // index bit positions per axis, least significant first
  for (int j = 0; j < nbits; ++j) {
    const int axis = bitmask_.axis_at(top - 1 - j);
    luts->index_bits.emplace_back(static_cast<uint8_t>(axis), static_cast<uint8_t>(bits[axis].size()));
    bits[axis].push_back(j);
  }
  for (int a = 0; a < kMaxDims; ++a) {
    auto& lut = luts->axis[a];
    lut.resize(size_t{1} << bits[a].size());
    for (size_t c = 0; c < lut.size(); ++c) {
      uint32_t v = 0;
      for (size_t b = 0; b < bits[a].size(); ++b) v |= static_cast<uint32_t>((c >> b) & 1) << bits[a][b];
      lut[c] = v;
    }
  }
  luts->x_is_identity = luts->axis[0].size() <= 1;
  slot = luts;
  return slot;
}

std::shared_ptr<const AxisLuts> HzSpace::row_major_luts(const Point& ns) const {
  std::lock_guard lock(luts_mutex());
  auto& slot = rm_cache_[ns];
  if (slot) return slot;
  auto luts = std::make_shared<AxisLuts>();
  uint32_t stride = 1;
  for (int a = 0; a < kMaxDims; ++a) {
    luts->axis[a].resize(static_cast<size_t>(ns[a]));
    for (int64_t c = 0; c < ns[a]; ++c) luts->axis[a][static_cast<size_t>(c)] = static_cast<uint32_t>(c) * stride;
    stride *= static_cast<uint32_t>(ns[a]);
  }
  luts->x_is_identity = true;
  slot = luts;
  return slot;
}

Run HzSpace::level_run(int level) const {
  Run r;
  if (level == 0) {
    r.luts = hz_luts(0, 0);
    return r;
  }
  r.first = uint64_t{1} << (level - 1);
  r.delta = level_delta(level);
  r.p0[bitmask_.axis_at(level)] = r.delta[bitmask_.axis_at(level)] / 2;
  Point c = count_bits(1, level - 1);
  for (int a = 0; a < kMaxDims; ++a) r.ns[a] = int64_t{1} << c[a];
  r.luts = hz_luts(level, level - 1);
  return r;
}

std::vector<Run> HzSpace::block_runs(uint64_t block, Layout layout) const {
  std::vector<Run> runs;
  if (block == 0 && layout == Layout::kHzOrder) {
    for (int h = 0; h <= bpb_; ++h) runs.push_back(level_run(h));
    return runs;
  }
  Run r;
  const int h = level_of_block(block);
  if (block == 0) {  // row-major block 0: the whole resolution-bpb grid
    r.delta = resolution_spacing(bpb_);
    Point c = count_bits(1, bpb_);
    for (int a = 0; a < kMaxDims; ++a) r.ns[a] = int64_t{1} << c[a];
  } else {
    r.p0 = hz_to_point(block << bpb_);
    r.delta = level_delta(h);
    Point c = count_bits(h - bpb_, h - 1);
    for (int a = 0; a < kMaxDims; ++a) r.ns[a] = int64_t{1} << c[a];
  }
  r.luts = layout == Layout::kRowMajor ? row_major_luts(r.ns) : hz_luts(h, bpb_);
  runs.push_back(r);
  return runs;
}

bool run_range_in_box(const Run& run, const Box& box, Point& lo, Point& hi) {
  for (int a = 0; a < kMaxDims; ++a) {
    lo[a] = std::max<int64_t>(0, ceil_div(box.lo[a] - run.p0[a], run.delta[a]));
    hi[a] = std::min<int64_t>(run.ns[a], ceil_div(box.hi[a] - run.p0[a], run.delta[a]));
    if (hi[a] <= lo[a]) return false;
  }
  return true;
}

void HzSpace::blocks_in_box(const Box& box, int level, std::vector<uint64_t>& out, int min_level) const {
  Point lo, hi;
  if (level <= bpb_) {
    for (int h = std::max(0, min_level); h <= level; ++h) {
      if (run_range_in_box(level_run(h), box, lo, hi)) {
        out.push_back(0);
        return;
      }
    }
    return;
  }
  // Blocks of a level form a grid whose coordinates are the hz bits above the in-block index; per
  // axis, find the level's sample indices inside the box, then the blocks holding them.
  const Point delta = level_delta(level);
  Point offset{0, 0, 0};
  offset[bitmask_.axis_at(level)] = delta[bitmask_.axis_at(level)] / 2;
  const Point in_block = count_bits(level - bpb_, level - 1);
  const Point grid = count_bits(1, level - bpb_ - 1);
  for (int a = 0; a < kMaxDims; ++a) {
    const int64_t per_block = int64_t{1} << in_block[a];
    const int64_t k_lo = std::max<int64_t>(0, ceil_div(box.lo[a] - offset[a], delta[a]));
    const int64_t k_hi = std::min<int64_t>(per_block << grid[a], ceil_div(box.hi[a] - offset[a], delta[a]));
    if (k_hi <= k_lo) return;
    lo[a] = k_lo / per_block;
    hi[a] = (k_hi - 1) / per_block + 1;
  }
  // A block's id deposits its grid coordinates' bits at the positions the bitmask gives them (as
  // hz_luts does for in-block indices, but in 64 bits, and only for the coordinates in the box: a long
  // bitmask has more blocks per axis than a table could hold).
  const int nbits = level - bpb_ - 1;
  std::array<std::vector<int>, kMaxDims> positions;  // per axis, the id bit of each coordinate bit
  for (int j = 0; j < nbits; ++j) positions[bitmask_.axis_at(level - bpb_ - 1 - j)].push_back(j);
  std::array<std::vector<uint64_t>, kMaxDims> part;
  for (int a = 0; a < kMaxDims; ++a) {
    for (int64_t c = lo[a]; c < hi[a]; ++c) {
      uint64_t v = 0;
      for (size_t b = 0; b < positions[a].size(); ++b) v |= static_cast<uint64_t>((c >> b) & 1) << positions[a][b];
      part[a].push_back(v);
    }
  }
  const uint64_t base = uint64_t{1} << nbits;
  const size_t start = out.size();
  for (const uint64_t z : part[2])
    for (const uint64_t y : part[1])
      for (const uint64_t x : part[0]) out.push_back(base + z + y + x);
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
}

std::vector<uint64_t> HzSpace::blocks_of_box(const Box& box, int min_level, int max_level) const {
  std::vector<uint64_t> blocks;
  const int bpb = bits_per_block();
  if (min_level <= bpb) blocks_in_box(box, std::min(max_level, bpb), blocks, min_level);
  for (int h = std::max(bpb + 1, min_level); h <= max_level; ++h) blocks_in_box(box, h, blocks);
  return blocks;
}

}  // namespace hzio::hzorder
