// Tests for windowed assembly (window_assembly.hpp): placing blocks window by window gives the array that
// placing them block by block with copy_run gives, and the one per-sample HZ addressing predicts.
#include "core/window_assembly.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "core/block_oracle_test_util.hpp"

namespace hzio::core {
namespace {

using hzorder::HzSpace;
using hzorder::Run;
using Bytes = std::vector<std::byte>;

// A sample's bytes, from its hz address alone: what the test stores in blocks and expects back.
void sample_of(uint64_t hz, size_t sample_bytes, std::byte* out) {
  const uint64_t h = (hz + 1) * 0x9E3779B97F4A7C15ull;
  for (size_t k = 0; k < sample_bytes; ++k) out[k] = std::byte((h >> (8 * (k % 8) + k / 8)) & 0xFF);
}

// The default value as the dtype stores it, converted here rather than by fill_samples.
Bytes value_bytes(DType dtype, double v) {
  Bytes b(dtype.bytes());
  const auto put = [&](auto x) { std::memcpy(b.data(), &x, sizeof x); };
  switch (dtype.scalar) {
    case Scalar::kUint8:
      put(static_cast<uint8_t>(v));
      break;
    case Scalar::kFloat32:
      put(static_cast<float>(v));
      break;
    case Scalar::kFloat64:
      put(v);
      break;
    default:
      ADD_FAILURE() << "dtype not used by these tests";
  }
  return b;
}

using testing::row_major_index;

struct Case {
  std::string bitmask;
  int bpb = 0;
  Box box;
  int level = 0;
  DType dtype;
  Layout layout = Layout::kHzOrder;
  WindowFill::Start start = WindowFill::Start::kBlocksOnly;
  bool several_windows = true;  // the grid is large enough for more than one window

  std::string name() const {
    return bitmask + " bpb " + std::to_string(bpb) + " box " + box.to_string() + " level " + std::to_string(level) +
           " " + dtype.to_string() + (layout == Layout::kRowMajor ? " rowmajor" : " hzorder") + " start " +
           std::to_string(static_cast<int>(start));
  }
};

constexpr double kDefault = 7;
constexpr std::byte kUntouched{0xA5};

// Everything one case needs: the space, the read grid, the blocks (some missing unless every sample must
// come from a block) and their PlacedBlocks.
struct Scene {
  explicit Scene(const Case& c) : space(format::Bitmask::parse(c.bitmask).value(), c.bpb), sb(c.dtype.bytes()) {
    grid = space.grid_in_box(c.box, c.level);
    // The blocks the read needs: those of the grid's samples.
    std::set<uint64_t> needed;
    for_each_sample([&](size_t, const Point& p) { needed.insert(space.point_to_hz(p) >> c.bpb); });
    const uint64_t n = uint64_t{1} << c.bpb;
    for (uint64_t b : needed) {
      if (c.start != WindowFill::Start::kBlocksOnly && b % 5 == 2) {
        missing.insert(b);
        continue;
      }
      Bytes data(n * sb);
      const std::vector<uint64_t> at =
          c.layout == Layout::kRowMajor ? row_major_index(space, b) : std::vector<uint64_t>{};
      for (uint64_t i = 0; i < n; ++i) sample_of((b << c.bpb) + i, sb, &data[(at.empty() ? i : at[i]) * sb]);
      std::vector<Run> runs = space.block_runs(b, c.layout);
      // Block 0 in HZ order holds levels 0..bpb, one run each: a coarse read keeps its levels only.
      if (b == 0 && c.layout == Layout::kHzOrder)
        std::erase_if(runs, [&](const Run& r) { return HzSpace::level_of(r.first) > c.level; });
      blocks.push_back(b);
      storage.push_back(std::move(data));
      placed.push_back(make_placed_block(std::move(runs), storage.back().data()));
    }
  }

  template <class Fn>
  void for_each_sample(Fn fn) const {
    size_t k = 0;
    for (int64_t z = 0; z < grid.count[2]; ++z)
      for (int64_t y = 0; y < grid.count[1]; ++y)
        for (int64_t x = 0; x < grid.count[0]; ++x, ++k)
          fn(k, Point{grid.origin[0] + x * grid.spacing[0], grid.origin[1] + y * grid.spacing[1],
                      grid.origin[2] + z * grid.spacing[2]});
  }

  // The expected array: each sample from its hz address, or the default where its block is missing,
  // or kUntouched where the output's bytes are to be kept.
  Bytes brute_force(const Case& c) const {
    Bytes out(static_cast<size_t>(grid.sample_count()) * sb);
    const Bytes fill = value_bytes(c.dtype, kDefault);
    for_each_sample([&](size_t k, const Point& p) {
      const uint64_t hz = space.point_to_hz(p);
      if (!missing.count(hz >> c.bpb))
        sample_of(hz, sb, &out[k * sb]);
      else if (c.start == WindowFill::Start::kDefault)
        std::memcpy(&out[k * sb], fill.data(), sb);
      else
        std::fill_n(&out[k * sb], sb, kUntouched);
    });
    return out;
  }

  // The window holding grid sample k, as the plan's doc defines windows.
  size_t window_of(const WindowPlan& plan, size_t k) const {
    const Point i{static_cast<int64_t>(k) % grid.count[0], static_cast<int64_t>(k) / grid.count[0] % grid.count[1],
                  static_cast<int64_t>(k) / grid.count[0] / grid.count[1]};
    Point w;
    for (int a = 0; a < kMaxDims; ++a) w[a] = (i[a] + plan.offset[a]) / plan.extent[a];
    return static_cast<size_t>((w[2] * plan.count[1] + w[1]) * plan.count[0] + w[0]);
  }

  HzSpace space;
  size_t sb;
  SampleGrid grid;
  std::set<uint64_t> missing;
  std::vector<uint64_t> blocks;
  std::vector<Bytes> storage;
  std::vector<PlacedBlock> placed;
};

size_t first_difference(const Bytes& a, const Bytes& b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

void check_plan(const Case& c, const Scene& s, const WindowPlan& plan) {
  // Windows of 2^floor(log2(1 MiB / sample bytes)) samples, aligned to the grid's origin 0.
  const int bits = std::bit_width((size_t{1} << 20) / s.sb) - 1;
  if (c.level >= bits) {
    EXPECT_EQ(plan.extent[0] * plan.extent[1] * plan.extent[2], int64_t{1} << bits);
  }
  for (int a = 0; a < kMaxDims; ++a) {
    EXPECT_EQ(plan.offset[a], s.grid.origin[a] / s.grid.spacing[a] % plan.extent[a]) << a;
    EXPECT_EQ(plan.count[a], (plan.offset[a] + s.grid.count[a] + plan.extent[a] - 1) / plan.extent[a]) << a;
  }
  const size_t windows = static_cast<size_t>(plan.count[0] * plan.count[1] * plan.count[2]);
  if (c.several_windows) {
    EXPECT_GT(windows, 1u);
  }
  ASSERT_EQ(plan.blocks.size(), windows);
  std::vector<uint32_t> sorted = plan.order;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted.size(), windows);
  for (size_t k = 0; k < windows; ++k) ASSERT_EQ(sorted[k], k) << "order is not a permutation of the windows";
  // Every sample's block is listed in the window holding the sample.
  std::map<uint64_t, uint32_t> index_of;
  for (size_t i = 0; i < s.blocks.size(); ++i) index_of[s.blocks[i]] = static_cast<uint32_t>(i);
  std::vector<std::set<uint32_t>> wanted(windows);
  s.for_each_sample([&](size_t k, const Point& p) {
    auto it = index_of.find(s.space.point_to_hz(p) >> c.bpb);
    if (it != index_of.end()) wanted[s.window_of(plan, k)].insert(it->second);
  });
  for (size_t w = 0; w < windows; ++w) {
    const std::set<uint32_t> listed(plan.blocks[w].begin(), plan.blocks[w].end());
    for (uint32_t i : wanted[w]) ASSERT_TRUE(listed.count(i)) << "window " << w << " lacks block " << s.blocks[i];
  }
  // first_use: the first processing step whose window lists the block.
  ASSERT_EQ(plan.first_use.size(), s.placed.size());
  for (size_t i = 0; i < s.placed.size(); ++i) {
    uint32_t first = UINT32_MAX;
    for (uint32_t n = 0; n < plan.order.size() && first == UINT32_MAX; ++n)
      if (std::count(plan.blocks[plan.order[n]].begin(), plan.blocks[plan.order[n]].end(), i)) first = n;
    EXPECT_EQ(plan.first_use[i], first) << "block " << s.blocks[i];
  }
}

void check_case(const Case& c) {
  SCOPED_TRACE(c.name());
  const Scene s(c);
  // Missing blocks exactly when the fill can stand in for them.
  ASSERT_EQ(s.missing.empty(), c.start == WindowFill::Start::kBlocksOnly);
  const Bytes expected = s.brute_force(c);
  const WindowPlan plan = plan_windows(s.space, c.level, s.placed, c.box, s.grid, s.sb);
  check_plan(c, s, plan);

  Bytes windowed(expected.size(), kUntouched);
  util::ThreadPool pool(2);
  assemble_windows(plan, s.placed, {windowed.data(), s.grid, s.sb}, {c.start, c.dtype, kDefault}, pool);
  EXPECT_EQ(first_difference(windowed, expected), expected.size()) << "windowed assembly differs (byte index)";

  // Block by block: each run of each block copied with copy_run, clipped to the box.
  Bytes by_block(expected.size(), kUntouched);
  if (c.start == WindowFill::Start::kDefault)
    hzorder::fill_samples(by_block.data(), static_cast<size_t>(s.grid.sample_count()), c.dtype, kDefault);
  const hzorder::ArrayView view{by_block.data(), s.grid, s.sb};
  for (const PlacedBlock& p : s.placed)
    for (const Run& r : p.runs)
      hzorder::copy_run(r, c.box, const_cast<std::byte*>(p.data), view, hzorder::Direction::kBlockToArray);
  EXPECT_EQ(first_difference(by_block, expected), expected.size()) << "block by block placement differs";
  EXPECT_EQ(first_difference(windowed, by_block), expected.size());
}

const DType kU8{Scalar::kUint8, 1}, kF32{Scalar::kFloat32, 1}, kF64{Scalar::kFloat64, 1};

// 256 x 128 x 128, 2^22 samples: uint8 windows hold 2^20 of them.
const std::string k3dU8 = "V0012012012012012012012";
// 1024 x 1024, 2^20 samples: float32 windows hold 2^18.
const std::string k2dF32 = "V01010101010101010101";
// 128 x 64 x 64, 2^19 samples: float64 windows hold 2^17.
const std::string k3dF64 = "V0012012012012012012";

TEST(WindowAssembly, UnalignedBoxesAtFullResolutionEqualBlockByBlockPlacementAndHzAddressing) {
  check_case({k3dU8, 12, {{3, 5, 9}, {250, 121, 127}}, 22, kU8, Layout::kHzOrder});
  check_case({k2dF32, 10, {{7, 3, 0}, {1000, 1021, 1}}, 20, kF32, Layout::kHzOrder});
  check_case({k3dF64, 9, {{1, 2, 3}, {127, 61, 64}}, 19, kF64, Layout::kHzOrder});
}

TEST(WindowAssembly, CoarseLevelsTakeOnlyTheirSamplesFromEveryBlock) {
  check_case({k3dU8, 12, {{1, 2, 3}, {255, 127, 128}}, 21, kU8, Layout::kHzOrder});
  check_case({k2dF32, 10, {{5, 9, 0}, {1023, 1000, 1}}, 19, kF32, Layout::kHzOrder});
  check_case({k3dF64, 9, {{3, 0, 1}, {128, 63, 62}}, 18, kF64, Layout::kHzOrder});
  // Coarser than block 0's levels: only some runs of block 0, in one window.
  check_case({k3dF64, 9, {{3, 0, 1}, {128, 63, 62}}, 6, kF64, Layout::kHzOrder, WindowFill::Start::kBlocksOnly, false});
}

TEST(WindowAssembly, RowMajorBlocksPlaceLikeHzOrderBlocks) {
  check_case({k2dF32, 10, {{7, 3, 0}, {1000, 1021, 1}}, 20, kF32, Layout::kRowMajor});
  check_case({k3dF64, 9, {{3, 0, 1}, {128, 63, 62}}, 18, kF64, Layout::kRowMajor});
}

TEST(WindowAssembly, SamplesOfMissingBlocksTakeTheDefaultValue) {
  check_case({k3dU8, 12, {{3, 5, 9}, {250, 121, 127}}, 22, kU8, Layout::kHzOrder, WindowFill::Start::kDefault});
  check_case({k2dF32, 10, {{5, 9, 0}, {1023, 1000, 1}}, 19, kF32, Layout::kRowMajor, WindowFill::Start::kDefault});
  check_case({k3dF64, 9, {{1, 2, 3}, {127, 61, 64}}, 19, kF64, Layout::kHzOrder, WindowFill::Start::kDefault});
}

TEST(WindowAssembly, WindowsStartingFromTheOutputKeepItsSamplesWhereBlocksAreMissing) {
  check_case({k2dF32, 10, {{7, 3, 0}, {1000, 1021, 1}}, 20, kF32, Layout::kHzOrder, WindowFill::Start::kOutput});
  check_case({k3dF64, 9, {{3, 0, 1}, {128, 63, 62}}, 18, kF64, Layout::kRowMajor, WindowFill::Start::kOutput});
}

TEST(WindowAssembly, AWindowWhoseBlocksAreNotReadyIsLeftUntouched) {
  const Case c{k3dF64, 9, {{1, 2, 3}, {127, 61, 64}}, 19, kF64, Layout::kHzOrder};
  const Scene s(c);
  const WindowPlan plan = plan_windows(s.space, c.level, s.placed, c.box, s.grid, s.sb);
  // Refuse the windows that need one block in the middle of the plan.
  const uint32_t refused = static_cast<uint32_t>(s.placed.size() / 2);
  std::atomic<size_t> calls{0};
  Bytes out(static_cast<size_t>(s.grid.sample_count()) * s.sb, kUntouched);
  util::ThreadPool pool(2);
  assemble_windows(plan, s.placed, {out.data(), s.grid, s.sb}, {c.start, c.dtype, kDefault}, pool,
                   [&](const std::vector<uint32_t>& blocks) {
                     ++calls;
                     return std::find(blocks.begin(), blocks.end(), refused) == blocks.end();
                   });
  EXPECT_EQ(calls.load(), plan.blocks.size());
  Bytes expected = s.brute_force(c);
  size_t skipped = 0;
  s.for_each_sample([&](size_t k, const Point&) {
    const auto& listed = plan.blocks[s.window_of(plan, k)];
    if (std::find(listed.begin(), listed.end(), refused) == listed.end()) return;
    std::fill_n(&expected[k * s.sb], s.sb, kUntouched);
    ++skipped;
  });
  EXPECT_GT(skipped, 0u);
  EXPECT_LT(skipped, static_cast<size_t>(s.grid.sample_count()));
  EXPECT_EQ(first_difference(out, expected), expected.size());
}

}  // namespace
}  // namespace hzio::core
