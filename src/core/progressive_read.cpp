// ProgressiveRead: a box read coarse to fine where each step reads only blocks of its new levels.
#include <cstring>

#include "core/dataset_impl.hpp"
#include "hzorder/block_copy.hpp"

namespace hzio {

// The state of one progressive read between its steps.
struct ProgressiveRead::Impl {
  Dataset::Impl* ds = nullptr;
  Box box;
  int field = 0;
  int64_t time = 0;
  std::vector<int> levels;
  size_t step = 0;
  SampleGrid prev_grid;
  std::vector<std::byte> prev;
  DecodedBlocks keep;
};

ProgressiveRead::ProgressiveRead(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProgressiveRead::~ProgressiveRead() = default;

Result<std::unique_ptr<ProgressiveRead>> ProgressiveRead::start(Dataset& dataset, const Box& box,
                                                                std::string_view field, int64_t time,
                                                                std::vector<int> levels) {
  auto impl = std::make_unique<Impl>();
  impl->ds = dataset.impl_.get();
  HZIO_RETURN_IF_ERROR(impl->ds->check_field_time(field, time, false, impl->field));
  HZIO_RETURN_IF_ERROR(impl->ds->check_box(box, "read"));
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i] < 0 || levels[i] > dataset.max_level() || (i && levels[i] <= levels[i - 1])) {
      return invalid_argument("progressive levels must be ascending within [0, " + std::to_string(dataset.max_level()) +
                              "]");
    }
  }
  if (levels.empty()) return invalid_argument("progressive read needs at least one level");
  impl->box = box;
  impl->time = time;
  impl->levels = std::move(levels);
  return std::unique_ptr<ProgressiveRead>(new ProgressiveRead(std::move(impl)));
}

bool ProgressiveRead::done() const { return impl_->step >= impl_->levels.size(); }
int ProgressiveRead::next_level() const { return done() ? -1 : impl_->levels[impl_->step]; }

Result<SampleGrid> ProgressiveRead::next_grid() const {
  if (done()) return invalid_argument("progressive read is finished");
  return impl_->ds->space_->grid_in_box(impl_->box, next_level());
}

namespace {

// Copies the previous step's grid `p` (samples `prev`) into its places in this step's grid: sample
// (x, y, z) of p goes to start + (x, y, z) * stride. S is the sample size (0: given as `sb`).
template <size_t S>
void place_previous(const std::byte* prev, const SampleGrid& p, std::byte* out, const SampleGrid& grid,
                    const Point& start, const Point& stride, size_t sb = S) {
  const size_t size = S ? S : sb;
  for (int64_t z = 0; z < p.count[2]; ++z)
    for (int64_t y = 0; y < p.count[1]; ++y) {
      const std::byte* from = prev + static_cast<size_t>((z * p.count[1] + y) * p.count[0]) * size;
      std::byte* to =
          out +
          static_cast<size_t>(((start[2] + z * stride[2]) * grid.count[1] + start[1] + y * stride[1]) * grid.count[0] +
                              start[0]) *
              size;
      const size_t step = static_cast<size_t>(stride[0]) * size;
      for (int64_t x = 0; x < p.count[0]; ++x, from += size, to += step) std::memcpy(to, from, S ? S : size);
    }
}

}  // namespace

Status ProgressiveRead::next(void* out_void, size_t out_bytes, ReadReport* report) {
  HZIO_ASSIGN_OR_RETURN(SampleGrid grid, next_grid());
  auto& s = *impl_;
  const DType dtype = s.ds->coding_[s.field].dtype;
  const size_t sb = dtype.bytes();
  if (out_bytes != static_cast<size_t>(grid.sample_count()) * sb) {
    return invalid_argument("progressive output needs " + std::to_string(grid.sample_count() * sb) + " bytes");
  }
  auto* out = static_cast<std::byte*>(out_void);
  hzorder::fill_samples(out, static_cast<size_t>(grid.sample_count()), dtype, s.ds->coding_[s.field].default_value);
  const int level = next_level();
  int min_level = 0;
  if (s.step > 0) {
    // The previous grid is a sub-grid of this one: place its samples, then read only newer levels.
    const SampleGrid& p = s.prev_grid;
    Point start, stride;
    for (int a = 0; a < kMaxDims; ++a) {
      start[a] = (p.origin[a] - grid.origin[a]) / grid.spacing[a];
      stride[a] = p.spacing[a] / grid.spacing[a];
    }
    switch (sb) {  // a fixed size lets the compiler turn each sample's copy into one move
      case 1:
        place_previous<1>(s.prev.data(), p, out, grid, start, stride);
        break;
      case 2:
        place_previous<2>(s.prev.data(), p, out, grid, start, stride);
        break;
      case 4:
        place_previous<4>(s.prev.data(), p, out, grid, start, stride);
        break;
      case 8:
        place_previous<8>(s.prev.data(), p, out, grid, start, stride);
        break;
      case 12:
        place_previous<12>(s.prev.data(), p, out, grid, start, stride);
        break;
      case 16:
        place_previous<16>(s.prev.data(), p, out, grid, start, stride);
        break;
      default:
        place_previous<0>(s.prev.data(), p, out, grid, start, stride, sb);
        break;
    }
    min_level = s.levels[s.step - 1] + 1;
  }
  ReadReport local;
  // Each step sees one state of the dataset; a commit between steps may change what later steps read.
  HZIO_RETURN_IF_ERROR(s.ds->consistent_counted(report, [&] {
    if (report) *report = ReadReport{};
    return s.ds->read_box(s.box, level, min_level, s.field, s.time, out, report ? report : &local, &s.keep);
  }));
  ++s.step;
  if (done()) {  // the last step needs no copy for a next one
    s.prev = {};
    s.keep.blocks.clear();
    return Status::ok();
  }
  s.prev.assign(out, out + out_bytes);
  s.prev_grid = grid;
  return Status::ok();
}

}  // namespace hzio
