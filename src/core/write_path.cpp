// Writing a box: encode the blocks it covers whole, merge the ones it covers in part (docs/design/write-path.md).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "core/dataset_impl.hpp"
#include "hzorder/block_copy.hpp"
#include "stats/block_stats.hpp"
#include "util/clock.hpp"

namespace hzio {
namespace {

using hzorder::ArrayView;
using hzorder::Direction;
using hzorder::Run;

// Counts a block's samples inside `box` (exact, over its per-level runs).
int64_t samples_in(const hzorder::HzSpace& space, uint64_t block, const Box& box) {
  int64_t n = 0;
  Point lo, hi;
  for (const Run& r : space.block_runs(block, Layout::kHzOrder)) {
    if (hzorder::run_range_in_box(r, box, lo, hi)) n += (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
  }
  return n;
}

void copy_into_block(const hzorder::HzSpace& space, uint64_t block, Layout layout, const Box& box,
                     const ArrayView& src, std::byte* buffer) {
  for (const Run& r : space.block_runs(block, layout)) hzorder::copy_run(r, box, buffer, src, Direction::kArrayToBlock);
}

}  // namespace

std::vector<uint64_t> Dataset::Impl::blocks_for(const Box& box, int min_level, int max_level) const {
  std::vector<uint64_t> blocks;
  const int bpb = idx_.bits_per_block;
  if (min_level <= bpb) space_->blocks_in_box(box, std::min(max_level, bpb), blocks, min_level);
  for (int h = std::max(bpb + 1, min_level); h <= max_level; ++h) space_->blocks_in_box(box, h, blocks);
  return blocks;
}

Status Dataset::Impl::write_box(const Box& box, int field, int64_t time, const std::byte* data) {
  const core::FieldCoding& fc = coding_[field];
  const size_t bytes = block_bytes(field);
  const int64_t per_block = idx_.samples_per_block();
  Point extent{box.extent(0), box.extent(1), box.extent(2)};
  const ArrayView src{const_cast<std::byte*>(data), {box.lo, {1, 1, 1}, extent}, fc.dtype.bytes()};
  const std::vector<uint64_t> blocks = blocks_for(box, 0, idx_.bitmask.max_level());
  if (time != 0 || (idx_.time.declared && !idx_.time.template_text.empty())) {
    if (!idx_.time.contains(time)) new_times_.insert(time);
  }

  // Batches bound the memory of encoded blocks. Inside a batch: classify the blocks, reserve file space
  // for raw blocks in block order (which keeps the data file canonical), then encode on the pool; raw
  // blocks are written by the workers at their reserved offsets, compressed ones appended in order.
  const bool raw_codec = fc.codec.kind == codec::CodecKind::kRaw;
  const uint32_t raw_flags = format::block_flags(static_cast<uint32_t>(fc.codec.kind), fc.layout);
  const size_t batch = std::max<size_t>(static_cast<size_t>(pool_.size()) * 2, (size_t{32} << 20) / bytes);
  std::vector<std::vector<std::byte>> raw(std::min(batch, blocks.size())), payload(raw.size());
  std::vector<uint32_t> flags(raw.size());
  std::vector<char> kind(raw.size());  // 0 whole block, 1 partial (to hold), 2 merged into a held block
  std::vector<core::DataFiles::Reserved> where(raw.size());
  std::vector<std::byte*> staged(raw.size());  // where a reserved block is encoded, when its log is staged
  std::vector<Status> errors(raw.size());
  std::vector<double> hz_s(raw.size()), zip_s(raw.size()), write_s(raw.size()), stats_s(raw.size());
  std::vector<stats::BlockStats> st(raw.size());
  pending_bytes_ += static_cast<int64_t>(box.sample_count() * fc.dtype.bytes());
  auto fail = [&](const Status& s) {
    // A half-written batch cannot be committed: drop everything uncommitted, keep the committed state.
    discard_uncommitted();
    return Status(s.code(), s.message() + " (uncommitted writes to " + path_ + " were discarded)");
  };
  for (size_t start = 0; start < blocks.size(); start += batch) {
    const size_t n = std::min(batch, blocks.size() - start);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t b = blocks[start + i];
      kind[i] = dirty_.count(std::make_tuple(field, time, b)) ? 2 : samples_in(*space_, b, box) < samples_in(*space_, b, idx_.box);
      staged[i] = nullptr;
      if (kind[i] == 0 && raw_codec) {
        auto r = files_->reserve(field, time, b, bytes, raw_flags);
        if (!r.is_ok()) return fail(r.status());
        where[i] = r.value();
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (kind[i] != 0 || !raw_codec) continue;
      auto at = files_->staged(where[i]);
      if (!at.is_ok()) return fail(at.status());
      staged[i] = at.value();
    }
    pool_.parallel_for(n, [&](size_t i) {
      const uint64_t b = blocks[start + i];
      errors[i] = Status::ok();
      if (kind[i] == 2) {
        copy_into_block(*space_, b, fc.layout, box, src, dirty_.find(std::make_tuple(field, time, b))->second.data());
        return;
      }
      // A raw block bound for a staged log is encoded in place there; others in their own buffer.
      if (!staged[i]) raw[i].resize(bytes);
      if (kind[i] == 1) {
        auto loc = files_->locate(field, time, b, nullptr);
        if (!loc.is_ok()) { errors[i] = loc.status(); return; }
        if (loc.value()) {
          std::vector<std::byte> scratch, stored(bytes);
          auto layout = core::load_block(*loc.value(), fc, *space_, idx_.ndim, b, scratch, stored, nullptr);
          if (!layout.is_ok()) { errors[i] = layout.status(); return; }
          if (layout.value() == fc.layout) raw[i].swap(stored);
          else core::convert_layout(*space_, b, layout.value(), stored, raw[i], fc.dtype.bytes());
        } else {
          hzorder::fill_samples(raw[i].data(), static_cast<size_t>(per_block), fc.dtype, fc.default_value);
        }
      }
      std::byte* const block = staged[i] ? staged[i] : raw[i].data();  // raw[i] may have been swapped above
      if (kind[i] == 0 && samples_in(*space_, b, idx_.box) < per_block) {
        hzorder::fill_samples(block, static_cast<size_t>(per_block), fc.dtype, fc.default_value);
      }
      const double t0 = util::now_seconds();
      copy_into_block(*space_, b, fc.layout, box, src, block);
      const double t1 = util::now_seconds();
      hz_s[i] = t1 - t0;
      zip_s[i] = write_s[i] = stats_s[i] = 0;
      if (kind[i] == 1) return;
      if (raw_codec) {
        const double ts = util::now_seconds();
        const std::span<const std::byte> encoded(block, bytes);
        st[i] = stats::compute_block_stats(*space_, b, fc.layout, encoded, fc.dtype, idx_.box, files_->stats_bits());
        stats_s[i] = util::now_seconds() - ts;
        const double t2 = util::now_seconds();
        if (!staged[i]) errors[i] = where[i].file->write_at(where[i].offset, encoded);
        files_->finish_reserved(field, time, b, &st[i]);
        write_s[i] = util::now_seconds() - t2;
        flags[i] = raw_flags;
        return;
      }
      auto f = core::encode_block(fc, *space_, idx_.ndim, b, raw[i], payload[i]);
      if (!f.is_ok()) errors[i] = f.status();
      else flags[i] = f.value();
      const double ts = util::now_seconds();
      zip_s[i] = ts - t1;
      st[i] = core::stats_as_stored(fc, *space_, idx_.ndim, b, raw[i], payload[i], idx_.box, files_->stats_bits());
      stats_s[i] = util::now_seconds() - ts;
    });
    // Staged blocks go to their files now, before anything moves the staging buffers.
    for (size_t i = 0; i < n; ++i)
      if (!errors[i].is_ok()) return fail(errors[i]);
    if (Status s = files_->write_out(std::span(staged).first(n), std::span(write_s).first(n)); !s.is_ok()) return fail(s);
    for (size_t i = 0; i < n; ++i) {
      if (!errors[i].is_ok()) return fail(errors[i]);
      const uint64_t b = blocks[start + i];
      if (kind[i] == 2) continue;
      if (kind[i] == 1) {
        dirty_bytes_ += bytes;
        dirty_[std::make_tuple(field, time, b)] = std::move(raw[i]);
        continue;
      }
      pending_times_.compress += zip_s[i];
      pending_times_.stats += stats_s[i];
      if (raw_codec) {
        note_block(b, static_cast<int64_t>(bytes), hz_s[i], write_s[i]);
        continue;
      }
      const double t0 = util::now_seconds();
      Status s = files_->append(field, time, b, payload[i], flags[i], &st[i]);
      if (!s.is_ok()) return fail(s);
      note_block(b, static_cast<int64_t>(payload[i].size()), hz_s[i], util::now_seconds() - t0);
    }
  }
  return dirty_bytes_ > options_.cache_bytes ? flush_dirty() : Status::ok();
}

Status Dataset::Impl::flush_dirty() {
  if (dirty_.empty()) return Status::ok();
  std::vector<std::tuple<int, int64_t, uint64_t>> keys;
  for (const auto& [k, v] : dirty_) keys.push_back(k);
  std::vector<std::vector<std::byte>> payload(keys.size());
  std::vector<uint32_t> flags(keys.size());
  std::vector<Status> errors(keys.size());
  std::vector<double> zip_s(keys.size()), stats_s(keys.size());
  std::vector<stats::BlockStats> st(keys.size());
  pool_.parallel_for(keys.size(), [&](size_t i) {
    const auto& [field, time, b] = keys[i];
    const double t0 = util::now_seconds();
    auto f = core::encode_block(coding_[field], *space_, idx_.ndim, b, dirty_[keys[i]], payload[i]);
    if (f.is_ok()) flags[i] = f.value();
    else errors[i] = f.status();
    const double t1 = util::now_seconds();
    zip_s[i] = t1 - t0;
    st[i] = core::stats_as_stored(coding_[field], *space_, idx_.ndim, b, dirty_[keys[i]], payload[i], idx_.box,
                                  files_->stats_bits());
    stats_s[i] = util::now_seconds() - t1;
  });
  for (size_t i = 0; i < keys.size(); ++i) {
    HZIO_RETURN_IF_ERROR(errors[i]);
    const auto& [field, time, b] = keys[i];
    const double t0 = util::now_seconds();
    HZIO_RETURN_IF_ERROR(files_->append(field, time, b, payload[i], flags[i], &st[i]));
    pending_times_.compress += zip_s[i];
    pending_times_.stats += stats_s[i];
    note_block(b, static_cast<int64_t>(payload[i].size()), 0, util::now_seconds() - t0);
  }
  dirty_.clear();
  dirty_bytes_ = 0;
  return Status::ok();
}

void Dataset::Impl::note_block(uint64_t block, int64_t payload_bytes, double hz_s, double write_s) {
  const size_t level = static_cast<size_t>(space_->level_of_block(block));
  if (pending_levels_.size() <= level) pending_levels_.resize(level + 1);
  LevelTimes& l = pending_levels_[level];
  l.level = static_cast<int>(level);
  l.blocks += 1;
  l.bytes += payload_bytes;
  l.hz_max += hz_s;
  l.write_max += write_s;
  pending_times_.hz += hz_s;
  pending_times_.write += write_s;
}

}  // namespace hzio
