// The seam between core and the layers above it (dataset_parts.hpp).
#include "core/dataset_parts.hpp"

#include "core/dataset_impl.hpp"

namespace hzio::core {

DatasetParts::DatasetParts(Dataset& dataset)
    : path(dataset.impl_->path_),
      idx(dataset.impl_->idx_),
      space(*dataset.impl_->space_),
      coding(dataset.impl_->coding_),
      files(*dataset.impl_->files_),
      pool(dataset.impl_->pool_),
      impl_(*dataset.impl_) {}

Result<std::unique_ptr<Dataset>> DatasetParts::open_in(std::shared_ptr<const io::Storage> storage,
                                                       const std::string& path, const OpenOptions& options) {
  return Dataset::open_in(std::move(storage), path, options);
}

size_t DatasetParts::block_bytes(int field) const { return impl_.block_bytes(field); }

BlockWriter DatasetParts::block_writer() const { return impl_.block_writer(); }

Status DatasetParts::check_field_time(std::string_view field, int64_t time, bool for_write, int& field_index) const {
  return impl_.check_field_time(field, time, for_write, field_index);
}

Status DatasetParts::check_box(const Box& box, const char* what) const { return impl_.check_box(box, what); }

Status DatasetParts::read_box(const Box& box, int level, int min_level, int field, int64_t time, std::byte* out,
                              ReadReport* report, bool fill_default) const {
  return impl_.read_box(box, level, min_level, field, time, out, report, nullptr, fill_default);
}

bool DatasetParts::mapped(const BlockLocation& where, int field) const { return impl_.mapped(where, field); }

Result<IdxVersion> DatasetParts::start_read() { return impl_.start_read(); }

bool DatasetParts::read_unchanged(const IdxVersion& version) const { return impl_.read_unchanged(version); }

std::vector<hzorder::Run> DatasetParts::runs_to_place(uint64_t block, Layout layout, int min_level, int level) const {
  return impl_.runs_to_place(block, layout, min_level, level);
}

void DatasetParts::note_commit(bool idx_published) {
  if (idx_published) impl_.new_times_.clear();
  impl_.uncommitted_create_ = false;
}

}  // namespace hzio::core
