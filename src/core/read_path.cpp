// Reading a box at a level: find the blocks of the wanted levels, decode each once, place its samples
// (docs/design/read-path.md).
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "core/dataset_impl.hpp"
#include "core/read_ahead.hpp"
#include "core/window_assembly.hpp"
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

}  // namespace

std::vector<Run> Dataset::Impl::runs_to_place(uint64_t block, Layout layout, int min_level, int level) const {
  std::vector<Run> runs = space_->block_runs(block, layout);
  if (block != 0) return runs;
  if (layout == Layout::kRowMajor) {
    if (level >= space_->bits_per_block()) return runs;
    return {subsample(runs[0], space_->resolution_spacing(level))};
  }
  std::vector<Run> keep;
  for (const Run& r : runs) {
    const int h = hzorder::HzSpace::level_of(r.first);
    if (h >= min_level && h <= level) keep.push_back(r);
  }
  return keep;
}

namespace {

// Whether the blocks look cached: the first, middle and last page of each block (of an even sample of
// at most about 4096 blocks) are in the page cache. Asking mincore about every page of the files' spans
// is a visible part of the CPU time of a warm collective read (it looks pages up one by one;
// bench/read_bench.py part (b), warm). A block evicted between
// the probed pages is still read correctly, through page faults, like a page evicted after the check.
bool blocks_resident(const std::vector<core::Span>& blocks) {
  constexpr size_t kMaxBlocks = 4096;
  const size_t step = (blocks.size() + kMaxBlocks - 1) / kMaxBlocks;
  for (size_t i = 0; i < blocks.size(); i += std::max<size_t>(step, 1)) {
    const core::Span& s = blocks[i];
    if (s.end <= s.begin) continue;
    for (uint64_t at : {s.begin, s.begin + (s.end - s.begin) / 2, s.end - 1})
      if (!s.file->resident(at, 1)) return false;
  }
  return true;
}

// The sample indices [first, last) of a block that `runs` place inside `box` (first == last: none).
// Each run's luts grow with the coordinates, so its samples in the box lie between those at the box's
// low and high corners.
std::pair<uint64_t, uint64_t> index_range_in_box(const std::vector<Run>& runs, const Box& box) {
  uint64_t first = UINT64_MAX, last = 0;
  for (const Run& r : runs) {
    Point lo, hi;
    if (!hzorder::run_range_in_box(r, box, lo, hi)) continue;
    const auto at = [&](const Point& p) {
      return r.first + r.luts->axis[2][static_cast<size_t>(p[2])] + r.luts->axis[1][static_cast<size_t>(p[1])] +
             r.luts->axis[0][static_cast<size_t>(p[0])];
    };
    first = std::min(first, at(lo));
    last = std::max(last, at(Point{hi[0] - 1, hi[1] - 1, hi[2] - 1}) + 1);
  }
  return first < last ? std::make_pair(first, last) : std::make_pair(uint64_t{0}, uint64_t{0});
}

// Reads whose spans add up to less than this get plain hints from the calling thread: a thread of its
// own pays only for larger reads (bench/read_bench.py, cold reads of boxes and levels).
constexpr uint64_t kPrefetchThreadBytes = uint64_t{32} << 20;

}  // namespace

// The blocks a read needs, located: every sample of its grid belongs to one of them.
struct LocatedBlocks {
  std::vector<uint64_t> blocks;
  std::vector<std::optional<core::BlockLocation>> where;  // empty: missing (or block 0 kept by `keep`)
  int64_t missing = 0;
  std::vector<core::Span> spans;  // per file: from its first to its last needed byte
  uint64_t needed_bytes = 0;      // stored payload bytes of the present blocks
  ReadReport io;                  // header tables read while locating
  uint64_t generation = 0;        // DataFiles::generation() before locating: the read cache's key
};

void Dataset::Impl::place_block(uint64_t block, Layout layout, const std::byte* data, const Box& box, int level,
                                int min_level, const hzorder::ArrayView& view, uint64_t first_index) const {
  for (Run r : runs_to_place(block, layout, min_level, level)) {
    // Indices relative to `data`. A run starting before first_index wraps around in unsigned arithmetic,
    // and its samples inside the box (at first_index or later) come back to their places.
    r.first -= first_index;
    hzorder::copy_run(r, box, const_cast<std::byte*>(data), view, hzorder::Direction::kBlockToArray);
  }
}

Status Dataset::Impl::read_box(const Box& box, int level, int min_level, int field, int64_t time, std::byte* out,
                               ReadReport* report, DecodedBlocks* keep, bool fill_default) {
  HZIO_RETURN_IF_ERROR(flush_dirty());
  const core::FieldCoding& fc = coding_[field];
  const hzorder::ArrayView view{out, space_->grid_in_box(box, level), fc.dtype.bytes()};
  // A plain read of a read-only dataset, small enough to keep whole: a box read again is one copy of a
  // result kept by Dataset::read_box (keep_result).
  const auto out_bytes = static_cast<size_t>(view.grid.sample_count()) * fc.dtype.bytes();
  const bool plain = !keep && min_level == 0 && fill_default && !options_.writable && out_bytes <= results_.largest();
  if (plain && results_.copy_out({files_->generation(), field, time, level, box}, out, out_bytes)) {
    if (report) report->assembly = kResultCacheAssembly;
    return Status::ok();
  }
  LocatedBlocks plan;
  plan.blocks = space_->blocks_of_box(box, min_level, level);
  // Locate every block first: missing blocks decide whether defaults are needed at all, and the
  // payload spans can be read ahead.
  plan.where.resize(plan.blocks.size());
  plan.generation = files_->generation();
  files_->prefetch_headers(time, plan.blocks, false, field);
  std::map<const io::Readable*, size_t> span_of;
  for (size_t i = 0; i < plan.blocks.size(); ++i) {
    if (keep && plan.blocks[i] == 0 && keep->blocks.count(0)) continue;
    HZIO_ASSIGN_OR_RETURN(plan.where[i], files_->locate(field, time, plan.blocks[i], &plan.io));
    if (!plan.where[i]) {
      ++plan.missing;
      continue;
    }
    const uint64_t begin = plan.where[i]->entry.offset, end = begin + plan.where[i]->entry.size;
    plan.needed_bytes += plan.where[i]->entry.size;
    auto [it, fresh] = span_of.try_emplace(plan.where[i]->file.get(), plan.spans.size());
    if (fresh) {
      plan.spans.push_back({plan.where[i]->file.get(), begin, end});
    } else {
      core::Span& sp = plan.spans[it->second];
      sp.begin = std::min(sp.begin, begin);
      sp.end = std::max(sp.end, end);
    }
  }
  // Windows serve large reads whose present blocks can all be placed from their files' mappings (block 0
  // of a progressive read, cached decoded in `keep`, goes block by block).
  bool windows = static_cast<uint64_t>(view.grid.sample_count()) * fc.dtype.bytes() >= core::kWindowedReadBytes;
  for (size_t i = 0; i < plan.blocks.size() && windows; ++i)
    windows = !(keep && plan.blocks[i] == 0) && (!plan.where[i] || mapped(*plan.where[i], field));
  // A window starts from the output where samples no block provides must keep their values: samples of
  // levels below min_level, and those of missing blocks when defaults are not filled.
  core::WindowFill fill{core::WindowFill::Start::kBlocksOnly, fc.dtype, fc.default_value};
  if (min_level > 0 || (plan.missing > 0 && !fill_default))
    fill.start = core::WindowFill::Start::kOutput;
  else if (plan.missing > 0)
    fill.start = core::WindowFill::Start::kDefault;
  Status s = windows ? read_in_windows(plan, box, level, min_level, field, view, fill)
                     : read_block_by_block(plan, box, level, min_level, field, view, keep, fill_default);
  if (report) {
    report->files_opened += plan.io.files_opened;
    report->bytes_read += plan.io.bytes_read;
    report->blocks_read += plan.io.blocks_read;
    report->blocks_missing += plan.missing;
    report->min_bytes += plan.io.min_bytes;
    report->assembly = windows ? "windows" : "blocks";
  }
  return s;
}

void Dataset::Impl::keep_result(const core::ResultCache::Key& key, const std::byte* out, size_t bytes) {
  if (options_.writable || bytes > results_.largest() || files_->generation() != key.generation) return;
  try {
    results_.put(key, out, bytes);
  } catch (const std::bad_alloc&) {  // the read stands; it is just not kept
  }
}

bool Dataset::Impl::raw_committed(const core::BlockLocation& w, int field) const {
  return w.committed && format::codec_code_of(w.entry.flags) == 0 && w.entry.size == block_bytes(field);
}

bool Dataset::Impl::mapped(const core::BlockLocation& w, int field) const {
  // A raw block of a committed file can be placed straight from the page cache (one pass, no copy).
  return raw_committed(w, field) && w.file->map_readonly() &&
         w.entry.offset + block_bytes(field) <= w.file->mapped_bytes();
}

Status Dataset::Impl::read_in_windows(LocatedBlocks& plan, const Box& box, int level, int min_level, int field,
                                      const hzorder::ArrayView& view, const core::WindowFill& fill) {
  const core::FieldCoding& fc = coding_[field];
  std::vector<core::PlacedBlock> placed;
  std::vector<core::Span> placed_spans;
  for (size_t i = 0; i < plan.blocks.size(); ++i) {
    if (!plan.where[i]) continue;
    const core::BlockLocation& w = *plan.where[i];
    placed.push_back(
        core::make_placed_block(runs_to_place(plan.blocks[i], format::layout_of(w.entry.flags), min_level, level),
                                w.file->map_readonly() + w.entry.offset));
    placed_spans.push_back({w.file.get(), w.entry.offset, w.entry.offset + w.entry.size});
  }
  plan.io.bytes_read += plan.needed_bytes;
  plan.io.min_bytes += plan.needed_bytes;
  plan.io.blocks_read += static_cast<int64_t>(placed.size());
  const core::WindowPlan windows = core::plan_windows(*space_, level, placed, box, view.grid, fc.dtype.bytes());
  if (blocks_resident(placed_spans)) {
    core::assemble_windows(windows, placed, view, fill, pool_);
  } else {
    // From the disk: windows wait for their blocks, loaded file by file as the windows need them.
    core::BlockLoader loader(std::move(placed_spans), windows.first_use);
    core::assemble_windows(windows, placed, view, fill, pool_,
                           [&](const std::vector<uint32_t>& b) { return loader.wait_for(b); });
    HZIO_RETURN_IF_ERROR(loader.status());
  }
  // The checksums are checked once the blocks are in the page cache, where hashing them is cheap; the
  // output is not the caller's until they hold.
  std::mutex mutex;
  Status first_error;
  pool_.parallel_for(plan.blocks.size(), [&](size_t i) {
    if (!plan.where[i]) return;
    const core::BlockLocation& w = *plan.where[i];
    const Status s = files_->check_payload(w, {w.file->map_readonly() + w.entry.offset, w.entry.size});
    std::lock_guard lock(mutex);
    if (!s.is_ok() && first_error.is_ok()) first_error = s;
  });
  return first_error;
}

Status Dataset::Impl::read_block_by_block(LocatedBlocks& plan, const Box& box, int level, int min_level, int field,
                                          const hzorder::ArrayView& view, DecodedBlocks* keep, bool fill_default) {
  const core::FieldCoding& fc = coding_[field];
  const size_t bytes = block_bytes(field);
  if (fill_default && plan.missing > 0) {
    hzorder::fill_samples(view.data, static_cast<size_t>(view.grid.sample_count()), fc.dtype, fc.default_value);
  }
  // Only dense reads are streamed: when the blocks are a small part of their files' spans (a slab of a
  // collective read, whose neighbours' blocks lie in between), the kernel's own readahead, which reads
  // through the gaps in large requests, is faster (bench/read_bench.py part (b) times slab reads).
  uint64_t span_bytes = 0;
  for (const core::Span& sp : plan.spans) span_bytes += sp.end - sp.begin;
  // Per block, the payload bytes [first, second) the read uses: all, unless a small read narrows them.
  std::vector<std::pair<uint64_t, uint64_t>> partial(plan.blocks.size());
  for (size_t i = 0; i < plan.blocks.size(); ++i)
    if (plan.where[i]) partial[i] = {0, plan.where[i]->entry.size};
  std::vector<core::Span> streamed;
  // A small read takes its raw blocks' bytes with pread into buffers instead of placing them from the
  // files' mappings. A first touch of a mapping costs about as much in page faults as the copy, and
  // unmapping touched pages at close costs more; mapping the files after a first read made a second
  // read of a box slower and only a third one faster (bench/small_read_bench.py and a 64^3 box read
  // three times between an open and a close).
  bool small = false;
  if (span_bytes >= kPrefetchThreadBytes && 2 * plan.needed_bytes >= span_bytes) {
    for (const auto& w : plan.where)
      if (w) streamed.push_back({w->file.get(), w->entry.offset, w->entry.offset + w->entry.size});
  } else if (plan.needed_bytes >= kPrefetchThreadBytes) {
    for (const core::Span& sp : plan.spans)  // large scattered reads: one hint per file
      if (sp.end - sp.begin >= (uint64_t{1} << 20)) sp.file->advise_willneed(sp.begin, sp.end - sp.begin);
  } else {
    small = true;
    // Small reads: every block asked for at once, and only the blocks. A hint over a file's span would
    // also read the gaps between them: several times the box's bytes for a small box at full resolution,
    // whose blocks lie far apart in files that hold whole levels (bench/small_read_bench.py). Of a raw
    // block, only the bytes between the first and last sample the box takes
    // (widened to whole checksum parts, which are checked) are asked for and read, unless the read
    // cache holds them: a coarse block spans far more than a small box.
    std::vector<core::Span> ranges;
    for (size_t i = 0; i < plan.blocks.size(); ++i) {
      const auto& w = plan.where[i];
      if (!w) continue;
      if (!(keep && plan.blocks[i] == 0) && raw_committed(*w, field)) {
        const size_t sb = fc.dtype.bytes();
        const auto [first, last] =
            index_range_in_box(runs_to_place(plan.blocks[i], format::layout_of(w->entry.flags), min_level, level), box);
        const auto [begin, end] = files_->checked_range(*w, first * sb, last * sb);
        // Parts of a whole number of samples (always, for sidecars hzio writes); a foreign sidecar's
        // finer parts would not let the read place samples from `begin`: the whole payload then.
        partial[i] =
            begin % sb == 0 ? std::make_pair(begin, end) : std::make_pair(uint64_t{0}, uint64_t{w->entry.size});
        if (read_cache_.find(plan.generation, w->file.get(), w->entry.offset, partial[i].first, partial[i].second))
          continue;  // in memory: nothing to ask the disk for
      }
      ranges.push_back({w->file.get(), w->entry.offset + partial[i].first, w->entry.offset + partial[i].second});
    }
    core::hint_ranges(std::move(ranges), false);
  }
  core::Prefetcher prefetcher(std::move(streamed));

  std::mutex mutex;
  Status first_error;
  std::atomic<int64_t> read{0}, min_bytes{0};
  pool_.parallel_for(plan.blocks.size(), [&](size_t i) {
    const uint64_t b = plan.blocks[i];
    const std::optional<core::BlockLocation>& w = plan.where[i];
    thread_local std::vector<std::byte> scratch, buffer;
    ReadReport mine;
    const std::byte* data = nullptr;
    uint64_t first_index = 0;                            // the sample index data[0] holds
    std::shared_ptr<const core::ReadCache::Bytes> held;  // data's owner for bytes from the read cache
    Layout layout = Layout::kHzOrder;
    Status s;
    if (keep && b == 0 && keep->blocks.count(0)) {
      layout = keep->blocks[0].first;
      data = keep->blocks[0].second.data();
    } else if (w && small && !(keep && b == 0) && raw_committed(*w, field)) {
      // Only the bytes [begin, end) are read (or found in the read cache), and only those are placed.
      layout = format::layout_of(w->entry.flags);
      const auto [begin, end] = partial[i];
      held = read_cache_.find(plan.generation, w->file.get(), w->entry.offset, begin, end);
      if (!held) {
        auto fresh = core::ReadCache::make_bytes(begin, end);
        s = w->file->read_at(w->entry.offset + begin, fresh->bytes());
        if (s.is_ok()) s = files_->check_range_bytes(*w, begin, end, fresh->bytes());
        if (s.is_ok()) read_cache_.put(plan.generation, w->file.get(), w->entry.offset, fresh);
        mine.bytes_read += static_cast<int64_t>(end - begin);
        held = std::move(fresh);
      }
      data = held->data;
      first_index = held->begin / fc.dtype.bytes();
      read += 1;
      min_bytes += static_cast<int64_t>(end - begin);
    } else if (w && !(keep && b == 0) && mapped(*w, field)) {
      layout = format::layout_of(w->entry.flags);
      const auto [begin, end] = partial[i];
      data = w->file->map_readonly() + w->entry.offset;
      s = files_->check_payload_range(*w, begin, end, {data, w->entry.size});
      mine.bytes_read += static_cast<int64_t>(end - begin);
      read += 1;
      min_bytes += static_cast<int64_t>(end - begin);
    } else if (w) {
      buffer.resize(bytes);
      auto l = core::load_block(*files_, *w, fc, *space_, idx_.ndim, b, scratch, buffer, &mine);
      read += 1;
      min_bytes += w->entry.size;
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
    if (s.is_ok() && data) place_block(b, layout, data, box, level, min_level, view, first_index);
    std::lock_guard lock(mutex);
    plan.io.bytes_read += mine.bytes_read;
    if (!s.is_ok() && first_error.is_ok()) first_error = s;
  });
  plan.io.blocks_read += read;
  plan.io.min_bytes += min_bytes;
  return first_error;
}

}  // namespace hzio
