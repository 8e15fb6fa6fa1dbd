// Value-range queries: block statistics rule blocks out, candidate blocks (or only their matching
// parts) are read and scanned (docs/design/read-path.md "Queries").
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <system_error>
#include <thread>

#include "core/dataset_impl.hpp"
#include "core/read_ahead.hpp"
#include "hzorder/block_copy.hpp"
#include "util/large_buffer.hpp"

namespace hzio {
namespace {

using hzorder::Run;

// Appends to `out` the indices in [a, e) of the samples (`sb` bytes apart, the tested scalar `offset`
// bytes into each) whose value lies in [lo, hi]. One call per range: the loop knows its type. Packed
// scalars are compared 64 at a time without branches, then the matches are walked: a scanned part of a
// selective query matches often enough that a branch per sample mispredicts.
template <class T>
void find_in_range(const std::byte* data, size_t sb, size_t offset, uint64_t a, uint64_t e, double lo, double hi,
                   std::vector<uint64_t>& out) {
  const std::byte* p = data + a * sb + offset;
  const auto in_range = [&](const std::byte* q) {
    T v;
    std::memcpy(&v, q, sizeof v);
    const double d = static_cast<double>(v);
    return d >= lo && d <= hi;
  };
  uint64_t idx = a;
  if (sb == sizeof(T))
    for (; idx + 64 <= e; idx += 64, p += 64 * sizeof(T)) {
      uint64_t bits = 0;
      for (int k = 0; k < 64; ++k) bits |= uint64_t{in_range(p + k * sizeof(T))} << k;
      for (; bits; bits &= bits - 1) out.push_back(idx + static_cast<uint64_t>(std::countr_zero(bits)));
    }
  for (; idx < e; ++idx, p += sb)
    if (in_range(p)) out.push_back(idx);
}

using Find = void (*)(const std::byte*, size_t, size_t, uint64_t, uint64_t, double, double, std::vector<uint64_t>&);

Find find_for(Scalar s) {
  switch (s) {
    case Scalar::kInt8:
      return find_in_range<int8_t>;
    case Scalar::kUint8:
      return find_in_range<uint8_t>;
    case Scalar::kInt16:
      return find_in_range<int16_t>;
    case Scalar::kUint16:
      return find_in_range<uint16_t>;
    case Scalar::kInt32:
      return find_in_range<int32_t>;
    case Scalar::kUint32:
      return find_in_range<uint32_t>;
    case Scalar::kInt64:
      return find_in_range<int64_t>;
    case Scalar::kUint64:
      return find_in_range<uint64_t>;
    case Scalar::kFloat32:
      return find_in_range<float>;
    case Scalar::kFloat64:
      return find_in_range<double>;
  }
  return find_in_range<uint8_t>;
}

// A point's index in a level grid, or -1 when the grid does not hold it. Level grids have power-of-two
// spacings, which turn the divisions into shifts (others, if any, divide).
class GridIndex {
 public:
  explicit GridIndex(const SampleGrid& g) : g_(g) {
    for (int a = 0; a < kMaxDims; ++a) {
      const auto s = static_cast<uint64_t>(g.spacing[a]);
      pow2_ &= s > 0 && (s & (s - 1)) == 0;
      shift_[a] = s > 0 ? std::countr_zero(s) : 0;
    }
  }
  int64_t operator()(const Point& p) const {
    int64_t c[kMaxDims];
    for (int a = 0; a < kMaxDims; ++a) {
      const int64_t d = p[a] - g_.origin[a];
      if (pow2_) {
        if (d & (g_.spacing[a] - 1)) return -1;
        c[a] = d >> shift_[a];
      } else {
        if (d % g_.spacing[a]) return -1;
        c[a] = d / g_.spacing[a];
      }
    }
    return (c[2] * g_.count[1] + c[1]) * g_.count[0] + c[0];
  }

 private:
  const SampleGrid& g_;
  bool pow2_ = true;
  int shift_[kMaxDims] = {};
};

// Where the samples of one block of a level above bits_per_block land in a level grid, for blocks lying
// wholly inside the grid's box: a sample's index in the grid is that of the block's first sample plus
// two table entries, one for the low half of its index in the block and one for the high half. Within a
// level, an HZ address's bits map to coordinate bits one by one, so the offset of sample i from the
// block's first is the same in every block of the level, and the two halves' offsets add up. This
// replaces decoding the point of every matching sample.
class LevelOffsets {
 public:
  // `grid` is the level grid of the query (levels 0..top); `level` in (bits_per_block, top].
  LevelOffsets(const hzorder::HzSpace& space, const SampleGrid& grid, int level) {
    const int bpb = space.bits_per_block();
    low_bits_ = bpb / 2;
    const uint64_t first = uint64_t{1} << (level - 1);  // the level's first address
    const Point p0 = space.hz_to_point(first);
    const int64_t stride[kMaxDims] = {1, grid.count[0], grid.count[0] * grid.count[1]};
    const auto offset = [&](uint64_t i, int64_t& out) {
      const Point p = space.hz_to_point(first + i);
      out = 0;
      for (int a = 0; a < kMaxDims; ++a) {
        const int64_t d = p[a] - p0[a];
        if (d % grid.spacing[a]) return false;  // not on the grid: cannot happen for levels <= top
        out += d / grid.spacing[a] * stride[a];
      }
      return true;
    };
    low_.resize(size_t{1} << low_bits_);
    high_.resize(size_t{1} << (bpb - low_bits_));
    for (uint64_t i = 0; i < low_.size(); ++i) usable_ &= offset(i, low_[i]);
    for (uint64_t i = 0; i < high_.size(); ++i) usable_ &= offset(i << low_bits_, high_[i]);
  }
  bool usable() const { return usable_; }
  int64_t operator()(int64_t first, uint64_t idx) const {
    return first + low_[idx & (low_.size() - 1)] + high_[idx >> low_bits_];
  }

 private:
  int low_bits_ = 0;
  std::vector<int64_t> low_, high_;
  bool usable_ = true;
};

// Per-block scan output, merged in order afterwards.
struct Hits {
  std::vector<int64_t> linear;  // index in the box's level grid
  std::vector<std::byte> values;
};

}  // namespace

Status Dataset::Impl::query_blocks(const Box& box, int level, int f, int64_t time, double lo, double hi, int component,
                                   bool want_mask, const SampleGrid& grid, QueryResult* result) {
  auto& d = *this;
  const core::FieldCoding& fc = d.coding_[f];
  *result = QueryResult{};
  const size_t sb = fc.dtype.bytes(), bytes = d.block_bytes(f);
  const size_t offset = static_cast<size_t>(component) * fc.dtype.scalar_bytes();
  const Find find = find_for(fc.dtype.scalar);
  const GridIndex grid_index(grid);
  const std::vector<uint64_t> blocks = d.space_->blocks_of_box(box, 0, level);
  std::vector<Hits> hits(blocks.size());
  // The matches' memory is decided by the data, not the request: a dataset of missing blocks whose
  // default value is in range matches every sample. Past the budget the scan stops and the query fails
  // naming the size, instead of growing until the kernel ends the process. At the merge's peak a match
  // holds its grid index and value from the scan (up to twice that in the vectors' spare room), a pair,
  // and its point and value in the result. A mask's size is the request's, as a read's: not counted.
  const uint64_t match_bytes = 3 * sb + 64;
  const uint64_t max_matches = want_mask ? UINT64_MAX : util::answer_budget_bytes() / match_bytes;
  std::atomic<uint64_t> matched{0};
  std::atomic<bool> over_budget{false};
  const auto admit = [&](size_t n) {  // false once the matches kept so far exceed the budget
    if (want_mask) return true;
    if (matched.fetch_add(n, std::memory_order_relaxed) + n <= max_matches) return true;
    over_budget.store(true, std::memory_order_relaxed);
    return false;
  };
  std::mutex mutex;
  Status first_error;
  std::atomic<int64_t> skipped{0};
  ReadReport io;
  const int bpb = d.idx_.bits_per_block;
  const uint64_t samples = uint64_t{1} << bpb;
  // First what each block needs, from its statistics: nothing, the default value, some parts of a raw
  // payload, or the whole payload. Then every byte range needed is asked for (core::hint_ranges), so
  // that the disk serves the reads of all blocks concurrently, while the blocks are read and scanned.
  struct Plan {
    enum class What { kNothing, kDefault, kParts, kWhole } what = What::kNothing;
    std::optional<core::BlockLocation> where;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // kParts: sample index ranges worth scanning
    uint64_t part = 0;                                  // kParts: samples per part
    ReadReport io;
    Status status;
  };
  std::vector<Plan> plans(blocks.size());
  d.files_->prefetch_headers(time, blocks, /*sidecars=*/true);  // cold: every file's tables at once
  d.pool_.parallel_for(blocks.size(), [&](size_t i) {
    Plan& plan = plans[i];
    auto st = d.files_->block_stats(f, time, blocks[i], &plan.io);
    auto where = st.is_ok() ? d.files_->locate(f, time, blocks[i], &plan.io)
                            : Result<std::optional<core::BlockLocation>>(st.status());
    if (!where.is_ok()) {
      plan.status = where.status();
      return;
    }
    plan.where = std::move(where).value();
    if (!plan.where) {  // missing: every sample holds the default value
      if (fc.default_value >= lo && fc.default_value <= hi) plan.what = Plan::What::kDefault;
      return;
    }
    if (st.value() && !stats::may_contain(st.value()->block, component, lo, hi)) {
      skipped += 1;
      return;
    }
    const auto& e = plan.where->entry;
    const bool raw = format::codec_code_of(e.flags) == 0 && e.size == bytes;
    static const std::vector<stats::RangeStats> kNoParts;
    const auto& parts = st.value() ? st.value()->parts : kNoParts;  // a reference, not a copy
    if (!raw || parts.empty()) {
      plan.what = Plan::What::kWhole;
      return;
    }
    plan.part = samples / parts.size();  // read only the parts whose statistics meet the range
    for (size_t p = 0; p < parts.size(); ++p) {
      if (!stats::may_contain(parts[p], component, lo, hi)) continue;
      if (!plan.ranges.empty() && plan.ranges.back().second == p * plan.part)
        plan.ranges.back().second += plan.part;
      else
        plan.ranges.push_back({p * plan.part, (p + 1) * plan.part});
    }
    plan.what = plan.ranges.empty() ? Plan::What::kNothing : Plan::What::kParts;
    if (plan.ranges.empty()) skipped += 1;
  });
  std::vector<core::Span> wanted;
  for (const Plan& plan : plans) {
    if (plan.what == Plan::What::kWhole)
      wanted.push_back(
          {plan.where->file.get(), plan.where->entry.offset, plan.where->entry.offset + plan.where->entry.size});
    if (plan.what == Plan::What::kParts)
      for (const auto& [a, z] : plan.ranges)
        wanted.push_back(
            {plan.where->file.get(), plan.where->entry.offset + a * sb, plan.where->entry.offset + z * sb});
  }
  // Local files: asked for from a helper thread while the workers read and scan (a hint costs the
  // kernel's work of placing pages in the page cache, which the workers would otherwise wait for, all of
  // it, before their first read). Remote storage: asked for first, as its hints only queue requests, and
  // a read that came before its range's hint would fetch the range a second time.
  std::jthread hints;
  if (!d.storage_->cheap_small_reads() || wanted.empty()) {
    core::hint_ranges(std::move(wanted), false);
  } else {
    try {
      hints = std::jthread([wanted = std::move(wanted)]() mutable { core::hint_ranges(std::move(wanted), false); });
    } catch (const std::system_error&) {  // no thread to spare: hints are only hints
    }
  }
  // Per level above bits_per_block, the offsets of its blocks' samples in the grid (LevelOffsets).
  std::vector<std::optional<LevelOffsets>> offsets(static_cast<size_t>(level) + 1);
  for (int h = bpb + 1; h <= level; ++h) offsets[static_cast<size_t>(h)].emplace(*d.space_, grid, h);
  // Cleared while the disk serves those requests: a mask of a large box takes a while to zero.
  if (want_mask) result->mask.assign(static_cast<size_t>(grid.sample_count()), 0);
  d.pool_.parallel_for(blocks.size(), [&](size_t i) {
    const uint64_t b = blocks[i];
    Plan& plan = plans[i];
    ReadReport& mine = plan.io;
    Status s = plan.status;
    if (over_budget.load(std::memory_order_relaxed)) return;
    thread_local std::vector<std::byte> scratch, buffer;
    thread_local std::vector<uint64_t> found;
    Layout layout = fc.layout;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // index ranges scanned
    const std::byte* data = nullptr;                    // the block's samples (only `ranges` hold them)
    if (!s.is_ok() || plan.what == Plan::What::kNothing) {
    } else if (plan.what == Plan::What::kDefault) {
      buffer.resize(bytes);
      hzorder::fill_samples(buffer.data(), samples, fc.dtype, fc.default_value);
      data = buffer.data();
      ranges.push_back({0, samples});
    } else if (plan.what == Plan::What::kParts) {
      const auto& e = plan.where->entry;
      layout = format::layout_of(e.flags);
      ranges = plan.ranges;
      // Read with pread, not scanned in the file's mapping: a first touch of a mapping costs page faults,
      // and unmapping the touched pages at close costs more than the copy (bench/query_bench.py, cold).
      buffer.resize(bytes);
      data = buffer.data();
      for (const auto& [a, z] : ranges) {
        s = plan.where->file->read_at(e.offset + a * sb, std::span(buffer).subspan(a * sb, (z - a) * sb));
        if (s.is_ok())  // the parts are the payload's checksum parts (same sub-block bits, equal sizes)
          s = d.files_->check_payload_parts(*plan.where, a / plan.part, (z - a) / plan.part,
                                            std::span(data + a * sb, (z - a) * sb));
        mine.bytes_read += static_cast<int64_t>((z - a) * sb);
        mine.min_bytes += static_cast<int64_t>((z - a) * sb);
        if (!s.is_ok()) break;
      }
      mine.blocks_read += 1;
    } else {
      buffer.resize(bytes);
      auto l = core::load_block(*d.files_, *plan.where, fc, *d.space_, d.idx_.ndim, b, scratch, buffer, &mine);
      if (l.is_ok()) {
        data = buffer.data();
        layout = l.value();
        ranges.push_back({0, samples});
        mine.blocks_read += 1;
        mine.min_bytes += plan.where->entry.size;
      } else {
        s = l.status();
      }
    }
    const auto record = [&](uint64_t idx, int64_t lin) {
      if (want_mask) {  // each sample belongs to one block: tasks write disjoint bytes
        result->mask[static_cast<size_t>(lin)] = 1;
        return;
      }
      hits[i].linear.push_back(lin);
      hits[i].values.insert(hits[i].values.end(), data + idx * sb, data + (idx + 1) * sb);
    };
    if (s.is_ok() && !ranges.empty() && layout == Layout::kHzOrder) {
      // Values first: only the scanned ranges are walked, and a sample's point is decoded from its HZ
      // address only when its value matches, which few of a selective query's samples do.
      const uint64_t base = b << bpb;      // the HZ address of the block's first sample
      const LevelOffsets* fast = nullptr;  // set when the whole block lies inside the box, on the grid
      int64_t first = -1;
      if (b != 0) {
        const int h = d.space_->level_of_block(b);
        const Point p_lo = d.space_->hz_to_point(base), p_hi = d.space_->hz_to_point(base + samples - 1);
        bool inside = h <= level && offsets[static_cast<size_t>(h)]->usable();
        for (int a = 0; a < kMaxDims; ++a) inside &= p_lo[a] >= box.lo[a] && p_hi[a] < box.hi[a];
        first = inside ? grid_index(p_lo) : -1;
        if (first >= 0) fast = &*offsets[static_cast<size_t>(h)];
      }
      for (const auto& [a, e] : ranges) {
        found.clear();
        find(data, sb, offset, a, e, lo, hi, found);
        if (fast) {
          if (!admit(found.size())) break;
          for (const uint64_t idx : found) record(idx, (*fast)(first, idx));
          continue;
        }
        size_t kept = 0;  // the matches inside the box and levels: counted once recorded (one range's worth)
        for (const uint64_t idx : found) {
          if (hzorder::HzSpace::level_of(base + idx) > level) continue;  // block 0 holds levels 0 to bpb
          const Point p = d.space_->hz_to_point(base + idx);
          bool inside = true;
          for (int a = 0; a < kMaxDims; ++a) inside &= p[a] >= box.lo[a] && p[a] < box.hi[a];
          const int64_t lin = inside ? grid_index(p) : -1;
          if (lin >= 0) {
            record(idx, lin);
            ++kept;
          }
        }
        if (!admit(kept)) break;
      }
    } else if (s.is_ok() && !ranges.empty()) {
      for (const Run& r : d.space_->block_runs(b, layout)) {
        Point rlo, rhi;
        if (!hzorder::run_range_in_box(r, box, rlo, rhi)) continue;
        size_t kept = 0;  // counted once per run
        for (int64_t z = rlo[2]; z < rhi[2]; ++z)
          for (int64_t y = rlo[1]; y < rhi[1]; ++y)
            for (int64_t x = rlo[0]; x < rhi[0]; ++x) {
              const Point p{r.p0[0] + x * r.delta[0], r.p0[1] + y * r.delta[1], r.p0[2] + z * r.delta[2]};
              const int64_t lin = grid_index(p);
              if (lin < 0) continue;  // row-major block 0 holds finer samples than a coarse query wants
              const uint64_t idx = r.first + r.luts->axis[2][z] + r.luts->axis[1][y] + r.luts->axis[0][x];
              bool scanned = false;
              for (const auto& [a, e] : ranges) scanned |= idx >= a && idx < e;
              if (!scanned) continue;
              found.clear();
              find(data, sb, offset, idx, idx + 1, lo, hi, found);  // the one sample
              if (!found.empty()) {
                record(idx, lin);
                ++kept;
              }
            }
        if (!admit(kept)) break;
      }
    }
    std::lock_guard lock(mutex);
    io.files_opened += mine.files_opened;
    io.bytes_read += mine.bytes_read;
    io.blocks_read += mine.blocks_read;
    io.min_bytes += mine.min_bytes;
    if (!s.is_ok() && first_error.is_ok()) first_error = s;
  });
  HZIO_RETURN_IF_ERROR(first_error);
  if (over_budget) {
    *result = QueryResult{};
    return io_error("out of memory: the query matches more than " + std::to_string(max_matches) +
                    " samples, which would take more than " + std::to_string(max_matches * match_bytes) +
                    " bytes to answer, over this process's budget of " + std::to_string(util::answer_budget_bytes()) +
                    " bytes (half the smaller of physical memory and the address-space limit); query a smaller "
                    "box or a coarser level, or ask for a mask (one byte per sample of the box at the level)");
  }
  result->report = io;
  result->blocks_skipped = skipped;
  if (want_mask) return Status::ok();  // filled by the scan
  // Merge in C order of the level grid, the order NumPy's nonzero() gives.
  std::vector<std::pair<int64_t, const std::byte*>> all;
  all.reserve(matched.load());
  for (const Hits& h : hits)
    for (size_t k = 0; k < h.linear.size(); ++k) all.push_back({h.linear[k], h.values.data() + k * sb});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  result->points.reserve(all.size() * 3);
  result->values.reserve(all.size() * sb);
  for (const auto& [lin, v] : all) {
    const int64_t x = lin % grid.count[0], y = (lin / grid.count[0]) % grid.count[1],
                  z = lin / (grid.count[0] * grid.count[1]);
    result->points.insert(result->points.end(),
                          {grid.origin[0] + x * grid.spacing[0], grid.origin[1] + y * grid.spacing[1],
                           grid.origin[2] + z * grid.spacing[2]});
    result->values.insert(result->values.end(), v, v + sb);
  }
  return Status::ok();
}

Status Dataset::query(const Box& box, int level, std::string_view field, int64_t time, double lo, double hi,
                      int component, bool want_mask, QueryResult* result) {
  auto& d = *impl_;
  int f = 0;
  HZIO_RETURN_IF_ERROR(d.check_field_time(field, time, false, f));
  if (level < 0) level = max_level();
  HZIO_ASSIGN_OR_RETURN(SampleGrid grid, level_grid(box, level));
  const core::FieldCoding& fc = d.coding_[f];
  if (component < 0 || component >= fc.dtype.components)
    return invalid_argument("component " + std::to_string(component) + " out of range");
  if (!(lo <= hi))
    return invalid_argument("query range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is empty");
  HZIO_RETURN_IF_ERROR(d.flush_dirty());
  return d.consistent_counted(
      &result->report, [&] { return d.query_blocks(box, level, f, time, lo, hi, component, want_mask, grid, result); });
}

}  // namespace hzio
