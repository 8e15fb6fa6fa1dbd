// Reading a box at a level: find the blocks of the wanted levels, decode each once, place its samples
// (docs/design/read-path.md).
#include <atomic>
#include <mutex>

#include "core/dataset_impl.hpp"
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

}  // namespace

void Dataset::Impl::place_block(uint64_t block, Layout layout, const std::byte* data, const Box& box, int level,
                                int min_level, const hzorder::ArrayView& view) const {
  for (const Run& r : runs_to_place(*space_, block, layout, min_level, level)) {
    hzorder::copy_run(r, box, const_cast<std::byte*>(data), view, hzorder::Direction::kBlockToArray);
  }
}

Status Dataset::Impl::read_box(const Box& box, int level, int min_level, int field, int64_t time, std::byte* out,
                               ReadReport* report, DecodedBlocks* keep) {
  HZIO_RETURN_IF_ERROR(flush_dirty());
  const core::FieldCoding& fc = coding_[field];
  const size_t bytes = block_bytes(field);
  const hzorder::ArrayView view{out, space_->grid_in_box(box, level), fc.dtype.bytes()};
  const std::vector<uint64_t> blocks = blocks_for(box, min_level, level);

  std::mutex mutex;
  Status first_error;
  std::atomic<int64_t> read{0}, missing{0}, min_bytes{0};
  ReadReport io;  // header and payload bytes, merged under the mutex
  pool_.parallel_for(blocks.size(), [&](size_t i) {
    const uint64_t b = blocks[i];
    thread_local std::vector<std::byte> scratch, buffer;
    ReadReport mine;
    const std::vector<std::byte>* data = &buffer;
    Layout layout = Layout::kHzOrder;
    Status s;
    if (keep && b == 0 && keep->blocks.count(b)) {
      layout = keep->blocks[b].first;
      data = &keep->blocks[b].second;
    } else {
      auto where = files_->locate(field, time, b, &mine);
      if (where.is_ok() && !where.value()) {
        missing += 1;
      } else if (where.is_ok()) {
        buffer.resize(bytes);
        auto l = core::load_block(*where.value(), fc, *space_, idx_.ndim, b, scratch, buffer, &mine);
        read += 1;
        min_bytes += where.value()->entry.size;
        if (l.is_ok()) layout = l.value();
        else s = l.status();
      } else {
        s = where.status();
      }
      if (s.is_ok() && where.is_ok() && where.value() && keep && b == 0) {
        std::lock_guard lock(mutex);
        keep->blocks[b] = {layout, buffer};
      }
      if (s.is_ok() && (!where.is_ok() || !where.value())) data = nullptr;
    }
    if (s.is_ok() && data) place_block(b, layout, data->data(), box, level, min_level, view);
    std::lock_guard lock(mutex);
    io.files_opened += mine.files_opened;
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
