// Data file reading and the write-log commit protocol (docs/design/commit.md).
#include "core/data_files.hpp"

#include <unistd.h>

#include <algorithm>

#include "format/file_name.hpp"

namespace hzio::core {

struct DataFiles::Stored {
  bool exists = false;
  std::shared_ptr<io::File> file;
  std::vector<format::BlockEntry> entries;
};

struct DataFiles::Pending {
  std::string final_path;
  std::string log_path;
  std::shared_ptr<io::File> log;
  uint64_t end = 0;
  std::vector<format::BlockEntry> entries;  // offsets into the log; zero = not written here
  bool canonical = true;                    // appended in entry order, each entry once
  int64_t last_index = -1;
  std::string ready_path;                   // complete and durable, waiting for publish()
};

DataFiles::DataFiles(const format::IdxFile* idx, std::string idx_dir, bool durable)
    : idx_(idx), idx_dir_(std::move(idx_dir)), durable_(durable) {}

DataFiles::~DataFiles() { abort(); }

Result<std::string> DataFiles::file_path(int64_t time, uint64_t block) const {
  return format::data_file_path(*idx_, idx_dir_, format::first_block_of_file(*idx_, static_cast<int64_t>(block)), time);
}

Result<DataFiles::Stored*> DataFiles::stored(const Key& key, ReadReport* report) {
  auto& slot = stored_[key];
  if (slot) return slot.get();
  auto s = std::make_unique<Stored>();
  HZIO_ASSIGN_OR_RETURN(std::string path, format::data_file_path(*idx_, idx_dir_, static_cast<int64_t>(key.second), key.first));
  auto opened = io::File::open(path, io::File::Mode::kRead);
  if (!opened.is_ok() && opened.status().code() != ErrorCode::kNotFound) return opened.status();
  if (opened.is_ok()) {
    s->exists = true;
    s->file = std::make_shared<io::File>(std::move(opened).value());
    HZIO_ASSIGN_OR_RETURN(uint64_t size, s->file->size());
    const uint64_t table = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
    std::vector<std::byte> bytes(static_cast<size_t>(std::min(table, size)));
    HZIO_RETURN_IF_ERROR(s->file->read_at(0, bytes));
    HZIO_ASSIGN_OR_RETURN(s->entries, format::decode_header_table(bytes, static_cast<int>(idx_->fields.size()),
                                                                  idx_->blocks_per_file, size, path));
    if (report) {
      report->files_opened += 1;
      report->bytes_read += static_cast<int64_t>(bytes.size());
    }
  }
  slot = std::move(s);
  return slot.get();
}

Result<std::optional<BlockLocation>> DataFiles::locate(int field, int64_t time, uint64_t block, ReadReport* report) {
  std::lock_guard lock(mutex_);
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  const size_t index = static_cast<size_t>(field) * static_cast<size_t>(idx_->blocks_per_file) +
                       static_cast<size_t>(format::slot_in_file(*idx_, static_cast<int64_t>(block)));
  if (auto it = pending_.find(key); it != pending_.end() && it->second->entries[index].present()) {
    return std::optional<BlockLocation>(BlockLocation{it->second->entries[index], it->second->log});
  }
  HZIO_ASSIGN_OR_RETURN(Stored * s, stored(key, report));
  if (!s->exists || !s->entries[index].present()) return std::optional<BlockLocation>();
  return std::optional<BlockLocation>(BlockLocation{s->entries[index], s->file});
}

Result<DataFiles::Pending*> DataFiles::pending(const Key& key) {
  auto& slot = pending_[key];
  if (slot) return slot.get();
  auto p = std::make_unique<Pending>();
  HZIO_ASSIGN_OR_RETURN(p->final_path, format::data_file_path(*idx_, idx_dir_, static_cast<int64_t>(key.second), key.first));
  HZIO_RETURN_IF_ERROR(io::make_dirs(io::parent_dir(p->final_path)));
  p->log_path = p->final_path + ".log." + std::to_string(::getpid());
  HZIO_ASSIGN_OR_RETURN(io::File f, io::File::open(p->log_path, io::File::Mode::kCreate));
  p->log = std::make_shared<io::File>(std::move(f));
  const size_t n = idx_->fields.size() * static_cast<size_t>(idx_->blocks_per_file);
  p->entries.assign(n, {});
  p->end = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
  slot = std::move(p);
  return slot.get();
}

Status DataFiles::append(int field, int64_t time, uint64_t block, std::span<const std::byte> payload, uint32_t flags) {
  std::lock_guard lock(mutex_);
  if (payload.size() > 0xFFFFFFFFu) return unsupported("block payload of " + std::to_string(payload.size()) + " bytes exceeds the format's 4 GiB");
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  HZIO_ASSIGN_OR_RETURN(Pending * p, pending(key));
  const int64_t index = field * idx_->blocks_per_file + format::slot_in_file(*idx_, static_cast<int64_t>(block));
  HZIO_RETURN_IF_ERROR(p->log->write_at(p->end, payload));
  if (index <= p->last_index) p->canonical = false;
  p->last_index = std::max(p->last_index, index);
  p->entries[static_cast<size_t>(index)] = {p->end, static_cast<uint32_t>(payload.size()), flags};
  if (payload.empty()) p->entries[static_cast<size_t>(index)] = {};
  if (durable_ && payload.size() >= (1u << 20)) p->log->start_writeback(p->end, payload.size());
  p->end += payload.size();
  return Status::ok();
}

Status DataFiles::rebuild(const Key& key, Pending& p, Stored* old) {
  // Canonical layout: header, then every present payload by (field, slot), packed.
  const std::string tmp = p.final_path + ".tmp." + std::to_string(::getpid());
  HZIO_ASSIGN_OR_RETURN(io::File out, io::File::open(tmp, io::File::Mode::kCreate));
  std::vector<format::BlockEntry> entries(p.entries.size());
  uint64_t end = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
  std::vector<std::byte> buf;
  Status s;
  for (size_t i = 0; i < entries.size() && s.is_ok(); ++i) {
    const bool mine = p.entries[i].present();
    const format::BlockEntry src = mine ? p.entries[i] : (old && old->exists ? old->entries[i] : format::BlockEntry{});
    if (!src.present()) continue;
    buf.resize(src.size);
    s = (mine ? *p.log : *old->file).read_at(src.offset, buf);
    if (s.is_ok()) s = out.write_at(end, buf);
    entries[i] = {end, src.size, src.flags};
    end += src.size;
  }
  std::vector<std::byte> header;
  format::encode_header_table(entries, header);
  if (s.is_ok()) s = out.write_at(0, header);
  if (s.is_ok() && durable_) s = out.sync();
  if (s.is_ok()) s = out.close();
  if (s.is_ok()) p.ready_path = tmp;
  else (void)io::remove_path(tmp);
  (void)io::remove_path(p.log_path);
  return s;
}

Status DataFiles::finish(const Key& key, Pending& p) {
  auto old = stored(key, nullptr);
  if (!old.is_ok() && old.status().code() != ErrorCode::kCorrupt) return old.status();
  Stored* prior = old.is_ok() ? old.value() : nullptr;  // a corrupt old file is replaced, not merged
  bool needs_old = false;
  if (prior && prior->exists) {
    for (size_t i = 0; i < p.entries.size(); ++i) needs_old |= prior->entries[i].present() && !p.entries[i].present();
  }
  if (!p.canonical || needs_old) return rebuild(key, p, prior);
  std::vector<std::byte> header;
  format::encode_header_table(p.entries, header);
  Status s = p.log->write_at(0, header);
  if (s.is_ok() && durable_) s = p.log->sync();
  if (s.is_ok()) p.ready_path = p.log_path;
  else (void)io::remove_path(p.log_path);
  return s;
}

Status DataFiles::commit() {
  HZIO_RETURN_IF_ERROR(prepare());
  return publish();
}

Status DataFiles::prepare() {
  std::lock_guard lock(mutex_);
  return prepare_locked();
}

Status DataFiles::prepare_locked() {
  for (auto& [key, p] : pending_) {
    if (!p->ready_path.empty()) continue;
    Status s = finish(key, *p);
    if (!s.is_ok()) {
      for (auto& [k, q] : pending_) {
        (void)io::remove_path(q->log_path);
        if (!q->ready_path.empty()) (void)io::remove_path(q->ready_path);
      }
      pending_.clear();
      return s;
    }
  }
  return Status::ok();
}

Status DataFiles::publish() {
  std::lock_guard lock(mutex_);
  HZIO_RETURN_IF_ERROR(prepare_locked());
  Status first_error;
  for (auto& [key, p] : pending_) {
    Status s = first_error.is_ok() ? io::rename_file(p->ready_path, p->final_path, durable_) : Status::ok();
    if (!s.is_ok()) first_error = s;
    if (!first_error.is_ok()) (void)io::remove_path(p->ready_path);
  }
  pending_.clear();
  stored_.clear();
  return first_error;
}

void DataFiles::abort() {
  std::lock_guard lock(mutex_);
  for (auto& [key, p] : pending_) {
    (void)io::remove_path(p->log_path);
    if (!p->ready_path.empty()) (void)io::remove_path(p->ready_path);
  }
  pending_.clear();
}

void DataFiles::forget_stored() {
  std::lock_guard lock(mutex_);
  stored_.clear();
}

}  // namespace hzio::core
