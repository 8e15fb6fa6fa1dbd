// Windowed assembly of large reads (see window_assembly.hpp and docs/design/read-path.md "Windows").
#include "core/window_assembly.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>

namespace hzio::core {
namespace {

using hzorder::Run;

// Windows of about 1 MiB, the size of a core's L2 cache: the window buffer stays in cache while its
// blocks are copied in. Smaller windows add per-window work and cut blocks into more parts, larger ones
// no longer fit, and decoding each window straight into the output (no buffer) loses the cache
// altogether. The size was chosen with warm full reads, one process and z slabs over 4 ranks
// (bench/read_bench.py parts (a) and (b)).
constexpr size_t kWindowBytes = size_t{1} << 20;

int64_t window_count(const WindowPlan& t) { return t.count[0] * t.count[1] * t.count[2]; }

// Window k's coordinates in the window grid.
Point window_coords(const WindowPlan& t, int64_t k) {
  return {k % t.count[0], k / t.count[0] % t.count[1], k / t.count[0] / t.count[1]};
}

}  // namespace

PlacedBlock make_placed_block(std::vector<Run> runs, const std::byte* data) {
  PlacedBlock p{data, std::move(runs), {}, {}};
  for (int a = 0; a < kMaxDims; ++a) {
    p.lo[a] = INT64_MAX;
    p.hi[a] = INT64_MIN;
  }
  for (const Run& r : p.runs)
    for (int a = 0; a < kMaxDims; ++a) {
      p.lo[a] = std::min(p.lo[a], r.p0[a]);
      p.hi[a] = std::max(p.hi[a], r.p0[a] + (r.ns[a] - 1) * r.delta[a] + 1);
    }
  return p;
}

WindowPlan plan_windows(const hzorder::HzSpace& space, int level, const std::vector<PlacedBlock>& placed,
                        const Box& box, const SampleGrid& g, size_t sample_bytes) {
  WindowPlan t;
  t.extent = space.window_extent(level, std::bit_width(std::max<size_t>(1, kWindowBytes / sample_bytes)) - 1);
  for (int a = 0; a < kMaxDims; ++a) {
    t.offset[a] = (g.origin[a] / g.spacing[a]) % t.extent[a];
    t.count[a] = (t.offset[a] + g.count[a] - 1) / t.extent[a] + 1;
  }
  t.blocks.resize(static_cast<size_t>(window_count(t)));
  for (size_t i = 0; i < placed.size(); ++i) {
    const PlacedBlock& p = placed[i];
    if (p.runs.empty()) continue;
    Point lo, hi;  // window index range
    bool inside = true;
    for (int a = 0; a < kMaxDims && inside; ++a) {
      // The grid indices of the block's bounds within the box.
      const int64_t from = std::max(p.lo[a], box.lo[a]) - g.origin[a], to = std::min(p.hi[a], box.hi[a]) - g.origin[a];
      const int64_t i_lo = std::max<int64_t>(0, (from + g.spacing[a] - 1) / g.spacing[a]);
      const int64_t i_hi = std::min<int64_t>(g.count[a], (to + g.spacing[a] - 1) / g.spacing[a]);
      inside = to > from && i_hi > i_lo;
      lo[a] = (i_lo + t.offset[a]) / t.extent[a];
      hi[a] = (i_hi - 1 + t.offset[a]) / t.extent[a] + 1;
    }
    if (!inside) continue;
    for (int64_t z = lo[2]; z < hi[2]; ++z)
      for (int64_t y = lo[1]; y < hi[1]; ++y)
        for (int64_t x = lo[0]; x < hi[0]; ++x)
          t.blocks[static_cast<size_t>((z * t.count[1] + y) * t.count[0] + x)].push_back(static_cast<uint32_t>(i));
  }
  // Windows in the HZ order of their last samples: these are samples of the read's level (the window's
  // bits all set), and among samples of one level HZ order is the order of the data files. (First
  // samples would not do: with the window's bits clear they belong to coarser levels, in level order.)
  std::vector<std::pair<uint64_t, uint32_t>> keyed(t.blocks.size());
  for (size_t k = 0; k < keyed.size(); ++k) {
    const Point c = window_coords(t, static_cast<int64_t>(k));
    Point last;
    for (int a = 0; a < kMaxDims; ++a)
      last[a] = g.origin[a] + ((c[a] + 1) * t.extent[a] - t.offset[a] - 1) * g.spacing[a];
    keyed[k] = {space.point_to_hz(last), static_cast<uint32_t>(k)};
  }
  std::sort(keyed.begin(), keyed.end());
  t.order.reserve(keyed.size());
  for (const auto& [hz, k] : keyed) t.order.push_back(k);
  t.first_use.assign(placed.size(), UINT32_MAX);
  for (uint32_t n = 0; n < t.order.size(); ++n)
    for (uint32_t i : t.blocks[t.order[n]]) t.first_use[i] = std::min(t.first_use[i], n);
  return t;
}

void assemble_windows(const WindowPlan& plan, const std::vector<PlacedBlock>& placed, const hzorder::ArrayView& view,
                      const WindowFill& fill, util::ThreadPool& pool,
                      const std::function<bool(const std::vector<uint32_t>&)>& ready) {
  const SampleGrid& g = view.grid;
  const size_t sb = view.sample_bytes;
  pool.parallel_for(plan.order.size(), [&](size_t n) {
    const uint32_t k = plan.order[n];
    if (ready && !ready(plan.blocks[k])) return;
    const Point c = window_coords(plan, k);
    Point first;
    hzorder::ArrayView window{nullptr, g, sb};
    Box clip;
    for (int a = 0; a < kMaxDims; ++a) {
      first[a] = std::max<int64_t>(0, c[a] * plan.extent[a] - plan.offset[a]);
      window.grid.count[a] = std::min(g.count[a], (c[a] + 1) * plan.extent[a] - plan.offset[a]) - first[a];
      window.grid.origin[a] = g.origin[a] + first[a] * g.spacing[a];
      clip.lo[a] = window.grid.origin[a];
      clip.hi[a] = window.grid.origin[a] + (window.grid.count[a] - 1) * g.spacing[a] + 1;
    }
    thread_local std::vector<std::byte> buffer;
    const size_t samples = static_cast<size_t>(window.grid.sample_count());
    buffer.resize(samples * sb);
    window.data = buffer.data();
    const size_t row_bytes = static_cast<size_t>(window.grid.count[0]) * sb,
                 out_row = static_cast<size_t>(g.count[0]) * sb;
    const auto out_at = [&](int64_t z, int64_t y) {
      return view.data + static_cast<size_t>(((first[2] + z) * g.count[1] + first[1] + y) * g.count[0] + first[0]) * sb;
    };
    if (fill.start == WindowFill::Start::kDefault) hzorder::fill_samples(window.data, samples, fill.dtype, fill.value);
    if (fill.start == WindowFill::Start::kOutput)
      for (int64_t z = 0; z < window.grid.count[2]; ++z)
        for (int64_t y = 0; y < window.grid.count[1]; ++y)
          std::memcpy(window.data + static_cast<size_t>(z * window.grid.count[1] + y) * row_bytes, out_at(z, y),
                      row_bytes);
    for (uint32_t i : plan.blocks[k]) {
      std::byte* data = const_cast<std::byte*>(placed[i].data);
      for (const Run& r : placed[i].runs)
        if (hzorder::copy_run_in_block_order(r, clip, data, window, hzorder::Direction::kBlockToArray) < 0)
          hzorder::copy_run(r, clip, data, window, hzorder::Direction::kBlockToArray);
    }
    for (int64_t z = 0; z < window.grid.count[2]; ++z) {
      hzorder::copy_rows_streaming(out_at(z, 0), out_row,
                                   window.data + static_cast<size_t>(z * window.grid.count[1]) * row_bytes, row_bytes,
                                   window.grid.count[1]);
    }
  });
}

}  // namespace hzio::core
