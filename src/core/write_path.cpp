// Writing a box: encode the blocks it covers whole, merge the ones it covers in part (docs/design/write-path.md).
#include <algorithm>
#include <cstring>

#include "core/block_writer.hpp"
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

void copy_into_block(const hzorder::HzSpace& space, uint64_t block, Layout layout, const Box& box, const ArrayView& src,
                     std::byte* buffer) {
  for (const Run& r : space.block_runs(block, layout)) hzorder::copy_run(r, box, buffer, src, Direction::kArrayToBlock);
}

}  // namespace

Status Dataset::Impl::write_box(const Box& box, int field, int64_t time, const std::byte* data) {
  const core::FieldCoding& fc = coding_[field];
  const size_t bytes = block_bytes(field);
  const int64_t per_block = idx_.samples_per_block();
  Point extent{box.extent(0), box.extent(1), box.extent(2)};
  const ArrayView src{const_cast<std::byte*>(data), {box.lo, {1, 1, 1}, extent}, fc.dtype.bytes()};
  const std::vector<uint64_t> blocks = space_->blocks_of_box(box, 0, idx_.bitmask.max_level());
  if (time != 0 || (idx_.time.declared && !idx_.time.template_text.empty())) {
    if (!idx_.time.contains(time)) new_times_.insert(time);
  }
  pending_.sample_bytes += static_cast<int64_t>(box.sample_count() * fc.dtype.bytes());
  auto fail = [&](const Status& s) {
    // A half-written batch cannot be committed: drop everything uncommitted, keep the committed state.
    discard_uncommitted();
    return Status(s.code(), s.message() + " (uncommitted writes to " + path_ + " were discarded)");
  };
  // Batches bound the memory of encoded blocks. Blocks the box covers whole go to the block writer (raw
  // ones reserved in block order, which keeps the data file canonical); the others merge into blocks
  // held in memory until the commit.
  core::BlockWriter writer = block_writer();
  const size_t batch = std::max<size_t>(static_cast<size_t>(pool_.size()) * 2, (size_t{32} << 20) / bytes);
  for (size_t start = 0; start < blocks.size(); start += batch) {
    std::vector<core::BlockToWrite> whole;
    std::vector<uint64_t> partial;
    for (size_t i = start; i < std::min(start + batch, blocks.size()); ++i) {
      const uint64_t b = blocks[i];
      if (dirty_.count(std::make_tuple(field, time, b)) ||
          samples_in(*space_, b, box) < samples_in(*space_, b, idx_.box)) {
        partial.push_back(b);
        continue;
      }
      core::BlockToWrite r{.field = field, .time = time, .block = b};
      r.make = [&, b](std::span<std::byte> out) {
        if (samples_in(*space_, b, idx_.box) < per_block) {  // samples outside the dataset keep the default
          hzorder::fill_samples(out.data(), static_cast<size_t>(per_block), fc.dtype, fc.default_value);
        }
        copy_into_block(*space_, b, fc.layout, box, src, out.data());
        return Status::ok();
      };
      whole.push_back(std::move(r));
    }
    if (Status s = merge_partial(partial, field, time, box, src); !s.is_ok()) return fail(s);
    auto slots = writer.reserve(whole);
    if (!slots.is_ok()) return fail(slots.status());
    if (Status s = writer.write(whole, slots.value()); !s.is_ok()) return fail(s);
    for (const core::BlockToWrite& r : whole) pending_.add_block(space_->level_of_block(r.block), r);
  }
  return dirty_bytes_ > options_.cache_bytes ? flush_dirty() : Status::ok();
}

Status Dataset::Impl::merge_partial(const std::vector<uint64_t>& blocks, int field, int64_t time, const Box& box,
                                    const ArrayView& src) {
  const core::BlockWriter writer = block_writer();
  std::vector<std::vector<std::byte>> held(blocks.size());
  std::vector<Status> errors(blocks.size());
  std::vector<char> fresh(blocks.size());
  pool_.parallel_for(blocks.size(), [&](size_t i) {
    const uint64_t b = blocks[i];
    auto it = dirty_.find(std::make_tuple(field, time, b));
    std::byte* into = nullptr;
    if (it != dirty_.end()) {
      into = it->second.data();
    } else {
      held[i].resize(writer.block_bytes(field));
      errors[i] = writer.base(field, time, b, held[i]);  // the stored block, or the default value
      into = held[i].data();
      fresh[i] = 1;
    }
    if (errors[i].is_ok()) copy_into_block(*space_, b, coding_[field].layout, box, src, into);
  });
  for (const Status& e : errors) HZIO_RETURN_IF_ERROR(e);
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!fresh[i]) continue;
    dirty_bytes_ += held[i].size();
    dirty_[std::make_tuple(field, time, blocks[i])] = std::move(held[i]);
  }
  return Status::ok();
}

core::BlockWriter Dataset::Impl::block_writer() { return core::BlockWriter(idx_, *space_, coding_, *files_, pool_); }

Status Dataset::Impl::flush_dirty() {
  if (dirty_.empty()) return Status::ok();
  std::vector<core::BlockToWrite> records;
  for (const auto& [key, samples] : dirty_) {
    const auto& [field, time, b] = key;
    records.push_back({.field = field, .time = time, .block = b, .samples = samples.data()});
  }
  core::BlockWriter writer = block_writer();
  HZIO_ASSIGN_OR_RETURN(auto slots, writer.reserve(records));
  HZIO_RETURN_IF_ERROR(writer.write(records, slots));
  for (const core::BlockToWrite& r : records) pending_.add_block(space_->level_of_block(r.block), r);
  dirty_.clear();
  dirty_bytes_ = 0;
  return Status::ok();
}

}  // namespace hzio
