// Dataset::block_infos and verify_block: per-block introspection for `hzio dump` and `hzio verify`.
#include <algorithm>

#include "core/dataset_impl.hpp"
#include "core/dataset_path.hpp"
#include "format/block_header.hpp"
#include "format/file_name.hpp"
#include "io/posix_file.hpp"
#include "stats/block_stats.hpp"
#include "stats/stats_file.hpp"

namespace hzio {

namespace {

// Whether the file at `path` exists, not asking when its folder is `missing_folder`, the last folder
// found missing (files come folder by folder, and a dataset may declare far more than it has).
bool file_exists_in(const io::Storage& storage, const std::string& path, std::string& missing_folder) {
  const std::string folder = io::parent_dir(path);
  if (folder == missing_folder) return false;
  auto kind = storage.path_kind(path);
  if (kind.is_ok() && kind.value() != io::PathKind::kMissing) return true;
  if (auto k = storage.path_kind(folder); k.is_ok() && k.value() == io::PathKind::kMissing) missing_folder = folder;
  return false;
}

}  // namespace

Result<Dataset::FileCensus> Dataset::file_census(int64_t time, size_t list_missing) const {
  int unused = 0;
  HZIO_RETURN_IF_ERROR(impl_->check_field_time("", time, false, unused));
  const auto& idx = impl_->idx_;
  FileCensus out;
  std::string missing_folder;  // the last folder found missing: its files are not asked for one by one
  for (int64_t first = 0; first < idx.total_blocks(); first += 1) {
    if (format::first_block_of_file(idx, first) != first) continue;
    HZIO_ASSIGN_OR_RETURN(std::string path, format::data_file_path(idx, impl_->dir_, first, time));
    if (file_exists_in(*impl_->storage_, path, missing_folder)) {
      out.present.push_back(first);
    } else {
      out.missing += 1;
      if (out.first_missing.size() < list_missing) out.first_missing.push_back(path);
    }
    if (idx.interleave > 1) break;  // as block_infos: interleaved files are listed by their first block only
  }
  return out;
}

Result<std::string> Dataset::data_file_path(int64_t time, int64_t block) const {
  int unused = 0;
  HZIO_RETURN_IF_ERROR(impl_->check_field_time("", time, false, unused));
  if (block < 0 || block >= impl_->idx_.total_blocks())
    return invalid_argument("block " + std::to_string(block) + " out of range 0.." +
                            std::to_string(impl_->idx_.total_blocks() - 1));
  HZIO_ASSIGN_OR_RETURN(std::string path, format::data_file_path(impl_->idx_, impl_->dir_, block, time));
  return impl_->storage_->describe(path);
}

Result<std::vector<BlockInfo>> Dataset::block_infos(std::string_view field, int64_t time, bool existing_files_only) {
  int f = 0;
  HZIO_RETURN_IF_ERROR(impl_->check_field_time(field, time, false, f));
  std::vector<BlockInfo> out;
  HZIO_RETURN_IF_ERROR(impl_->consistent([&]() -> Status {
    out.clear();
    const auto& idx = impl_->idx_;
    std::string missing_folder;
    const int64_t total = idx.total_blocks();
    for (int64_t first = 0; first < total; first += 1) {
      if (format::first_block_of_file(idx, first) != first) continue;
      HZIO_ASSIGN_OR_RETURN(std::string path, format::data_file_path(idx, impl_->dir_, first, time));
      std::vector<format::BlockEntry> entries;
      const bool exists = file_exists_in(*impl_->storage_, path, missing_folder);
      if (existing_files_only && !exists) continue;
      if (exists) {
        HZIO_ASSIGN_OR_RETURN(std::shared_ptr<const io::Readable> opened, impl_->storage_->open(path));
        const io::Readable& file = *opened;
        HZIO_ASSIGN_OR_RETURN(uint64_t size, file.size());
        const uint64_t table = format::header_table_bytes(static_cast<int>(idx.fields.size()), idx.blocks_per_file);
        std::vector<std::byte> bytes(static_cast<size_t>(std::min(table, size)));
        HZIO_RETURN_IF_ERROR(file.read_at(0, bytes));
        HZIO_ASSIGN_OR_RETURN(entries, format::parse_header_table(bytes, static_cast<int>(idx.fields.size()),
                                                                  idx.blocks_per_file, size, path));
      }
      for (int64_t b = first; b < total && format::first_block_of_file(idx, b) == first; ++b) {
        BlockInfo info;
        info.block = b;
        info.level = impl_->space_->level_of_block(static_cast<uint64_t>(b));
        info.file = path;
        info.file_exists = exists;
        info.entry = format::entry_in_file(idx, f, static_cast<uint64_t>(b));
        if (exists) {
          const auto& e = entries[static_cast<size_t>(info.entry)];
          info.offset = e.offset;
          info.size = e.size;
          info.flags = e.flags;
          HZIO_ASSIGN_OR_RETURN(auto st, impl_->files_->block_stats(f, time, static_cast<uint64_t>(b), nullptr));
          if (e.present()) {
            HZIO_ASSIGN_OR_RETURN(info.checksums_known, impl_->files_->has_checksums(time, static_cast<uint64_t>(b)));
          }
          if (st) {
            info.stats_known = true;
            info.count = st->block.count;
            info.min = st->block.min;
            info.max = st->block.max;
          }
        } else {
          info.stats_known = true;  // a missing block has no samples stored
        }
        out.push_back(info);
      }
      if (idx.interleave > 1) break;  // interleaved files are not contiguous ranges; listed by first block only
    }
    return Status::ok();
  }));
  return out;
}

std::vector<int64_t> Dataset::file_first_blocks() const {
  std::vector<int64_t> out;
  const auto& idx = impl_->idx_;
  for (int64_t b = 0; b < idx.total_blocks(); ++b) {
    if (format::first_block_of_file(idx, b) == b) out.push_back(b);
  }
  return out;
}

Result<int64_t> Dataset::index_file(int64_t time, int64_t first_block, int sub_block_bits) {
  auto& d = *impl_;
  int unused = 0;
  HZIO_RETURN_IF_ERROR(d.check_field_time("", time, false, unused));
  if (sub_block_bits ==
      kDatasetSubBlockBits) {  // the sub-block bits of hzio's writers if the .idx has the key, else automatic
    sub_block_bits = format::sub_block_bits_of(d.idx_).value_or(std::clamp(d.idx_.bits_per_block - 12, 0, 16));
  }
  if (sub_block_bits < 0 || sub_block_bits > std::min(d.idx_.bits_per_block, 16)) {
    return invalid_argument("sub_block_bits " + std::to_string(sub_block_bits) + " out of range");
  }
  d.files_->forget_stored();  // index what is on disk now
  HZIO_ASSIGN_OR_RETURN(auto identity, d.files_->file_identity(time, static_cast<uint64_t>(first_block)));
  if (!identity) return int64_t{0};
  stats::StatsTable t;
  t.sub_block_bits = sub_block_bits;
  t.blocks_per_file = d.idx_.blocks_per_file;
  for (const auto& f : d.idx_.fields) t.components.push_back(f.dtype.components);
  t.entries.resize(t.components.size() * static_cast<size_t>(t.blocks_per_file));
  const size_t parts = stats::checksum_parts(sub_block_bits);
  t.checksums.resize(t.entries.size() * parts);
  int64_t indexed = 0;
  std::vector<std::byte> scratch, buffer;
  for (size_t f = 0; f < t.components.size(); ++f) {
    for (int64_t b = first_block; b < d.idx_.total_blocks() && format::first_block_of_file(d.idx_, b) == first_block;
         ++b) {
      HZIO_ASSIGN_OR_RETURN(auto where, d.files_->locate(static_cast<int>(f), time, static_cast<uint64_t>(b), nullptr));
      if (!where) continue;
      buffer.resize(d.block_bytes(static_cast<int>(f)));
      HZIO_ASSIGN_OR_RETURN(Layout layout, core::load_block(*d.files_, *where, d.coding_[f], *d.space_, d.idx_.ndim,
                                                            static_cast<uint64_t>(b), scratch, buffer, nullptr));
      const size_t entry =
          f * static_cast<size_t>(t.blocks_per_file) + static_cast<size_t>(format::slot_in_file(d.idx_, b));
      t.entries[entry] = stats::compute_block_stats(*d.space_, static_cast<uint64_t>(b), layout, buffer,
                                                    d.coding_[f].dtype, d.idx_.box, sub_block_bits);
      // load_block left the payload as stored in `buffer` (raw) or `scratch` (compressed).
      const bool raw = format::codec_code_of(where->entry.flags) == 0;
      stats::payload_checksums(raw ? buffer : scratch, sub_block_bits, t.checksums.data() + entry * parts);
      ++indexed;
    }
  }
  HZIO_ASSIGN_OR_RETURN(std::string path, d.files_->file_path(time, static_cast<uint64_t>(first_block)));
  t.data_file_size = identity->first;
  t.header_crc = identity->second;
  const auto bytes = stats::serialize_stats_file(t);
  HZIO_RETURN_IF_ERROR(io::replace_file_atomically(
      path + stats::kStatsSuffix, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
      d.options_.durable, d.files_->fault_seam()));
  d.files_->forget_stored();
  return indexed;
}

Result<std::vector<std::string>> Dataset::leftover_files() const {
  if (!impl_->storage_->writable()) return std::vector<std::string>();  // no writer leaves files there
  return core::leftover_files(impl_->path_, impl_->idx_);
}

Status Dataset::verify_block(std::string_view field, int64_t time, int64_t block) {
  int f = 0;
  HZIO_RETURN_IF_ERROR(impl_->check_field_time(field, time, false, f));
  if (block < 0 || block >= block_count()) return invalid_argument("block " + std::to_string(block) + " out of range");
  return impl_->consistent([&]() -> Status {
    HZIO_ASSIGN_OR_RETURN(auto where, impl_->files_->locate(f, time, static_cast<uint64_t>(block), nullptr));
    if (!where) return Status::ok();
    where->checked = nullptr;  // verifying checks again what earlier reads of this process checked
    std::vector<std::byte> scratch, buffer(impl_->block_bytes(f));
    auto layout = core::load_block(*impl_->files_, *where, impl_->coding_[f], *impl_->space_, impl_->idx_.ndim,
                                   static_cast<uint64_t>(block), scratch, buffer, nullptr);
    return layout.status();
  });
}

}  // namespace hzio
