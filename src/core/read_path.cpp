// Reading a box at a level: find the blocks of the wanted levels, decode each once, place its samples
// (docs/design/read-path.md).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "core/dataset_impl.hpp"
#include "core/read_ahead.hpp"
#include "core/tiled_placement.hpp"
#include "hzorder/block_copy.hpp"

namespace hzio {
namespace {

using hzorder::Run;

// A row-major block 0 holds the whole resolution-bpb grid; a coarser read takes every step-th sample.
Run subsample(const Run& r, const Point& spacing) {
  Run out = r;
  auto luts = std::make_shared<hzorder::AxisLuts>();
  for (int a = 0; a < kMaxDims; ++a) {
    const int64_t step = std::max<int64_t>(1, spacing[a] / r.delta[a]);
    out.delta[a] = r.delta[a] * step;
    out.ns[a] = (r.ns[a] + step - 1) / step;
    for (int64_t c = 0; c < out.ns[a]; ++c) luts->axis[a].push_back(r.luts->axis[a][static_cast<size_t>(c * step)]);
  }
  luts->x_is_identity = r.luts->x_is_identity && out.delta[0] == r.delta[0];
  out.luts = luts;
  return out;
}

// The runs of a decoded block that hold samples of levels [min_level, level].
std::vector<Run> runs_to_place(const hzorder::HzSpace& space, uint64_t block, Layout layout, int min_level, int level) {
  std::vector<Run> runs = space.block_runs(block, layout);
  if (block != 0) return runs;
  if (layout == Layout::kRowMajor) {
    if (level >= space.bits_per_block()) return runs;
    return {subsample(runs[0], space.resolution_spacing(level))};
  }
  std::vector<Run> keep;
  for (const Run& r : runs) {
    const int h = hzorder::HzSpace::level_of(r.first);
    if (h >= min_level && h <= level) keep.push_back(r);
  }
  return keep;
}

// Whether every byte of the spans is in the page cache.
bool resident(const std::vector<core::Span>& spans) {
  for (const core::Span& s : spans)
    if (!s.file->resident(s.begin, s.end - s.begin)) return false;
  return true;
}

// Reads whose spans add up to less than this get plain hints from the calling thread.
constexpr uint64_t kPrefetchThreadBytes = uint64_t{32} << 20;

// Outputs at least this large are placed tile by tile when all their blocks can be placed from memory
// (core/tiled_placement.hpp). Smaller ones go block by block, which needs no per-tile bookkeeping.
constexpr uint64_t kTiledReadBytes = uint64_t{8} << 20;

}  // namespace

void Dataset::Impl::place_block(uint64_t block, Layout layout, const std::byte* data, const Box& box, int level,
                                int min_level, const hzorder::ArrayView& view) const {
  for (const Run& r : runs_to_place(*space_, block, layout, min_level, level)) {
    hzorder::copy_run(r, box, const_cast<std::byte*>(data), view, hzorder::Direction::kBlockToArray);
  }
}

Status Dataset::Impl::read_box(const Box& box, int level, int min_level, int field, int64_t time, std::byte* out,
                               ReadReport* report, DecodedBlocks* keep, bool fill_default) {
  HZIO_RETURN_IF_ERROR(flush_dirty());
  const core::FieldCoding& fc = coding_[field];
  const size_t bytes = block_bytes(field);
  const hzorder::ArrayView view{out, space_->grid_in_box(box, level), fc.dtype.bytes()};
  const std::vector<uint64_t> blocks = blocks_for(box, min_level, level);

  // Locate every block first: missing blocks decide whether defaults are needed at all (every sample
  // of the grid belongs to one of these blocks), and the payload spans can be prefetched.
  ReadReport io;
  std::vector<std::optional<core::BlockLocation>> where(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (keep && blocks[i] == 0 && keep->blocks.count(0)) continue;
    HZIO_ASSIGN_OR_RETURN(where[i], files_->locate(field, time, blocks[i], &io));
  }
  int64_t missing = 0;
  std::vector<core::Span> spans;  // one per file, in the order the blocks first use them
  std::map<const io::File*, size_t> span_of;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!where[i]) {
      missing += !(keep && blocks[i] == 0 && keep->blocks.count(0));
      continue;
    }
    const uint64_t begin = where[i]->entry.offset, end = begin + where[i]->entry.size;
    auto [it, fresh] = span_of.try_emplace(where[i]->file.get(), spans.size());
    if (fresh) {
      spans.push_back({where[i]->file.get(), begin, end});
    } else {
      core::Span& s = spans[it->second];
      s.begin = std::min(s.begin, begin);
      s.end = std::max(s.end, end);
    }
  }
  uint64_t span_bytes = 0, needed_bytes = 0;
  for (const core::Span& s : spans) span_bytes += s.end - s.begin;
  for (const auto& w : where)
    if (w) needed_bytes += w->entry.size;
  std::vector<core::Span> streamed;
  // Only dense reads are streamed: when the blocks are a small part of their files' spans (a slab of a
  // collective read, whose neighbours' blocks lie in between), the kernel's own readahead, which reads
  // through the gaps in large requests, measured faster.
  if (span_bytes >= kPrefetchThreadBytes && 2 * needed_bytes >= span_bytes) {
    for (const auto& w : where)
      if (w) streamed.push_back({w->file.get(), w->entry.offset, w->entry.offset + w->entry.size});
  } else {
    for (const core::Span& s : spans)  // small scattered reads: one hint per file
      if (s.end - s.begin >= (uint64_t{1} << 20)) s.file->advise_willneed(s.begin, s.end - s.begin);
  }
  // A raw block of a committed file can be placed straight from the page cache (one pass, no copy).
  const auto mapped = [&](size_t i) {
    return where[i] && where[i]->committed && (where[i]->entry.flags & 0xF) == 0 && where[i]->entry.size == bytes &&
           !(keep && blocks[i] == 0) && where[i]->file->map_readonly() &&
           where[i]->entry.offset + bytes <= where[i]->file->mapped_bytes();
  };
  const auto layout_of = [&](size_t i) {
    return (where[i]->entry.flags & format::kFlagRowMajor) ? Layout::kRowMajor : Layout::kHzOrder;
  };
  // Tiles write every sample of the grid, so they serve reads of all levels with defaults filled.
  const bool whole_grid = min_level == 0 && (missing == 0 || fill_default);
  if (!keep && whole_grid && static_cast<uint64_t>(view.grid.sample_count()) * fc.dtype.bytes() >= kTiledReadBytes) {
    bool all_mapped = true;
    for (size_t i = 0; i < blocks.size() && all_mapped; ++i) all_mapped = !where[i] || mapped(i);
    if (all_mapped) {
      std::vector<core::PlacedBlock> placed;
      std::vector<size_t> index_of;  // placed -> planned block
      for (size_t i = 0; i < blocks.size(); ++i) {
        if (!where[i]) continue;
        placed.push_back(core::make_placed_block(runs_to_place(*space_, blocks[i], layout_of(i), min_level, level),
                                                 where[i]->file->map_readonly() + where[i]->entry.offset));
        index_of.push_back(i);
        io.bytes_read += where[i]->entry.size;
      }
      const core::TilePlan plan = core::plan_tiles(*space_, level, placed, box, view.grid, fc.dtype.bytes());
      const core::TileFill fill{missing > 0, fc.dtype, fc.default_value};
      if (streamed.empty() || resident(spans)) {
        core::place_in_tiles(plan, placed, view, fill, pool_);
      } else {
        // A dense read from the disk: tiles wait for their blocks, loaded file by file as tiles need them.
        std::vector<core::Span> placed_spans;
        for (size_t i : index_of) placed_spans.push_back({where[i]->file.get(), where[i]->entry.offset, where[i]->entry.offset + where[i]->entry.size});
        core::BlockLoader loader(std::move(placed_spans), plan.first_use);
        core::place_in_tiles(plan, placed, view, fill, pool_, [&](const std::vector<uint32_t>& b) { return loader.wait_for(b); });
        HZIO_RETURN_IF_ERROR(loader.status());
      }
      if (report) {
        report->files_opened += io.files_opened;
        report->bytes_read += io.bytes_read;
        report->blocks_read += static_cast<int64_t>(placed.size());
        report->blocks_missing += missing;
        report->min_bytes += io.bytes_read;
        report->placement = "tiles";
      }
      return Status::ok();
    }
  }
  if (fill_default && missing > 0) {
    hzorder::fill_samples(out, static_cast<size_t>(view.grid.sample_count()), fc.dtype, fc.default_value);
  }
  // Requests of up to 64 MiB: a cold 512^3 read took 0.43-0.57 s with them, 0.50-0.65 s with 4 MiB.
  core::Prefetcher prefetcher(std::move(streamed), uint64_t{64} << 20);

  std::mutex mutex;
  Status first_error;
  std::atomic<int64_t> read{0}, min_bytes{0};
  pool_.parallel_for(blocks.size(), [&](size_t i) {
    const uint64_t b = blocks[i];
    thread_local std::vector<std::byte> scratch, buffer;
    ReadReport mine;
    const std::byte* data = nullptr;
    Layout layout = Layout::kHzOrder;
    Status s;
    if (keep && b == 0 && keep->blocks.count(0)) {
      layout = keep->blocks[0].first;
      data = keep->blocks[0].second.data();
    } else if (mapped(i)) {
      layout = layout_of(i);
      data = where[i]->file->map_readonly() + where[i]->entry.offset;
      mine.bytes_read += where[i]->entry.size;
      read += 1;
      min_bytes += where[i]->entry.size;
    } else if (where[i]) {
      buffer.resize(bytes);
      auto l = core::load_block(*where[i], fc, *space_, idx_.ndim, b, scratch, buffer, &mine);
      read += 1;
      min_bytes += where[i]->entry.size;
      if (l.is_ok()) {
        layout = l.value();
        data = buffer.data();
        if (keep && b == 0) {
          std::lock_guard lock(mutex);
          keep->blocks[0] = {layout, buffer};
        }
      } else {
        s = l.status();
      }
    }
    if (s.is_ok() && data) place_block(b, layout, data, box, level, min_level, view);
    std::lock_guard lock(mutex);
    io.bytes_read += mine.bytes_read;
    if (!s.is_ok() && first_error.is_ok()) first_error = s;
  });
  if (report) {
    report->files_opened += io.files_opened;
    report->bytes_read += io.bytes_read;
    report->blocks_read += read;
    report->blocks_missing += missing;
    report->min_bytes += min_bytes;
  }
  return first_error;
}

}  // namespace hzio
