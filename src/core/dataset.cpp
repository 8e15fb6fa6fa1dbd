// hzio::Dataset lifecycle: create, open, metadata, flush and close (include/hzio/dataset.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>

#include "core/commit.hpp"
#include "core/dataset_impl.hpp"
#include "core/dataset_parts.hpp"
#include "format/file_name.hpp"
#include "core/dataset_path.hpp"
#include "format/idx_text.hpp"
#include "hzorder/block_copy.hpp"
#include "io/posix_file.hpp"
#include "util/large_buffer.hpp"
#include "io/http_storage.hpp"

namespace hzio {

Dataset::Impl::Impl(std::string path, format::IdxFile idx, const OpenOptions& options,
                    std::shared_ptr<const io::Storage> storage)
    : path_(std::move(path)),
      dir_(io::parent_dir(path_)),
      idx_(std::move(idx)),
      options_(options),
      storage_(std::move(storage)),
      name_(storage_->describe(path_)),
      read_cache_(options.read_cache_bytes),
      results_(std::min(options.read_cache_bytes / core::ResultCache::kEntries, core::ResultCache::kLargest)),
      pool_owner_(util::ThreadPool::acquire(options.threads)),
      pool_(*pool_owner_) {
  for (size_t i = 0; i < idx_.fields.size(); ++i) field_by_name_.emplace(idx_.fields[i].name, static_cast<int>(i));
  space_ = hzorder::HzSpace::shared(idx_.bitmask, idx_.bits_per_block);
  pending_ = core::WriteTally(idx_.bitmask.max_level());
  files_ = std::make_unique<core::DataFiles>(&idx_, dir_, options_.durable, format::sub_block_bits_of(idx_).value_or(0),
                                             options_.verify_checksums, storage_);
}

Status Dataset::Impl::init_fields() {
  for (const auto& f : idx_.fields) {
    auto spec = codec::CodecSpec::parse(f.compression);
    if (!spec.is_ok()) return format_error("file " + path_ + ": field '" + f.name + "': " + spec.status().message());
    // A foreign .idx may declare a default its dtype cannot take (writable opens refuse it): clamped.
    coding_.push_back({f.dtype, spec.value(), f.layout, format::clamp_value(f.dtype, f.default_value)});
    field_specs_.push_back({f.name, f.dtype, spec.value().to_string().empty() ? "raw" : spec.value().to_string(),
                            f.layout, f.default_value});
  }
  return Status::ok();
}

Status Dataset::Impl::check_field_time(std::string_view field, int64_t time, bool for_write, int& index) const {
  if (closed_) return invalid_argument("dataset " + path_ + " is closed");
  index = 0;
  if (!field.empty()) {
    const auto it = field_by_name_.find(field);
    index = it == field_by_name_.end() ? -1 : it->second;
  }
  if (index < 0) return not_found("dataset " + path_ + " has no field '" + std::string(field) + "'");
  const bool templated = idx_.time.declared && !idx_.time.template_text.empty();
  if (for_write) {
    if (!options_.writable) return invalid_argument("dataset " + path_ + " is open read-only");
    if (!templated && time != 0) {
      return invalid_argument("dataset " + path_ +
                              " has a single timestep 0 (create it with times= to write timestep " +
                              std::to_string(time) + ")");
    }
    if (time < 0) return invalid_argument("timestep " + std::to_string(time) + " is negative");
    return Status::ok();
  }
  if (!idx_.time.contains(time) && !new_times_.count(time)) {
    return not_found("dataset " + path_ + " has no timestep " + std::to_string(time));
  }
  return Status::ok();
}

Status Dataset::Impl::check_box(const Box& box, const char* what) const {
  if (box.empty() || !idx_.box.contains(box)) {
    return invalid_argument(std::string(what) + " box " + box.to_string() + " is empty or not inside the dataset box " +
                            idx_.box.to_string());
  }
  return Status::ok();
}

Status Dataset::Impl::commit() {
  Status s = commit_pending();
  if (!s.is_ok())
    discard_uncommitted();
  else
    uncommitted_create_ = false;
  return s;
}

void Dataset::Impl::discard_uncommitted() {
  files_->abort();
  dirty_.clear();
  dirty_bytes_ = 0;
  new_times_.clear();
  pending_ = core::WriteTally(idx_.bitmask.max_level());
}

void Dataset::Impl::remove_uncommitted_create() {
  if (!uncommitted_create_) return;
  uncommitted_create_ = false;
  discard_uncommitted();
  std::vector<std::string> made = created_dirs_;
  made.insert(made.end(), files_->created_dirs().begin(), files_->created_dirs().end());
  core::remove_created(path_, idx_, made);
}

Status Dataset::Impl::commit_pending() {
  HZIO_RETURN_IF_ERROR(flush_dirty());
  const bool new_time = !new_times_.empty();
  if (!files_->has_pending() && !new_time) {
    last_write_report_ = WriteReport{};  // a commit with nothing to write reports nothing
    return Status::ok();
  }
  const int64_t files = static_cast<int64_t>(files_->pending_count());
  core::CommitSteps steps;
  steps.durable = options_.durable;
  for (int64_t t : new_times_) steps.new_times[t] = files_->pending_files(t);
  core::CommitResult done;
  const Status s = core::commit_writes(*files_, path_, idx_, steps, done);
  if (done.idx_published) {
    new_times_.clear();
    uncommitted_create_ = false;
  }
  HZIO_RETURN_IF_ERROR(s);
  // The report covers every write since the previous commit.
  PhaseTimes& p = pending_.phases;
  p.write += done.prepare_seconds;
  p.commit = done.publish_seconds;
  p.total = p.restructure + p.hz + p.compress + p.stats + p.write + p.commit;
  last_write_report_ = pending_.report(files);
  pending_ = core::WriteTally(idx_.bitmask.max_level());
  return Status::ok();
}

namespace {

Status check_create(const CreateOptions& o) {
  if (o.dims.empty() || o.dims.size() > static_cast<size_t>(kMaxDims)) {
    return invalid_argument("a dataset has 1 to 3 dimensions, got " + std::to_string(o.dims.size()));
  }
  for (int64_t d : o.dims) {
    if (d < 1 || d > (int64_t{1} << 40)) return invalid_argument("dimension " + std::to_string(d) + " out of range");
  }
  if (o.fields.empty()) return invalid_argument("a dataset needs at least one field");
  for (size_t i = 0; i < o.fields.size(); ++i) {
    const auto& name = o.fields[i].name;
    // The (fields) text separates fields by '+' outside brackets, options by brackets, lines by '#'.
    if (name.empty() || std::any_of(name.begin(), name.end(), [](char c) {
          return std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)) ||
                 std::strchr("+#()[]{}", c) != nullptr;
        })) {
      return invalid_argument("field name '" + name +
                              "' is empty or has spaces, control characters or one of + # ( ) [ ] { }");
    }
    for (size_t j = 0; j < i; ++j) {
      if (o.fields[j].name == name) return invalid_argument("field '" + name + "' is given twice");
    }
    // The .idx text carries default values as decimal numbers read back exactly; fills cast them to the dtype.
    const double v = o.fields[i].default_value;
    if (!format::holds_value(o.fields[i].dtype, v, true)) {
      return invalid_argument("field '" + name + "': default value " +
                              (std::isfinite(v) ? format::format_number(v) : std::to_string(v)) +
                              " is not a value of " + o.fields[i].dtype.to_string());
    }
  }
  return Status::ok();
}

Result<format::IdxFile> idx_for(const std::string& path, const CreateOptions& o) {
  HZIO_RETURN_IF_ERROR(check_create(o));
  HZIO_ASSIGN_OR_RETURN(std::string folder, core::data_folder_name(path));
  format::IdxFile idx;
  const int ndim = static_cast<int>(o.dims.size());
  Point dims{1, 1, 1};
  for (int a = 0; a < ndim; ++a) dims[a] = o.dims[a];
  if (o.bitmask.empty()) {
    idx.bitmask = format::Bitmask::default_for(dims, ndim);
  } else {
    auto b = format::Bitmask::parse(o.bitmask);
    if (!b.is_ok()) return invalid_argument(b.status().message());
    idx.bitmask = b.value();
    Status covers = idx.bitmask.check_covers(dims);
    if (!covers.is_ok()) return invalid_argument(covers.message());
    if (idx.bitmask.pdim() != ndim) {
      return invalid_argument("bitmask " + o.bitmask + " names " + std::to_string(idx.bitmask.pdim()) +
                              " axes but the dataset has " + std::to_string(ndim));
    }
  }
  idx.ndim = ndim;
  idx.box.hi = dims;
  for (const auto& f : o.fields) {
    auto spec = codec::CodecSpec::parse(f.codec == "raw" ? "" : f.codec);
    if (!spec.is_ok()) return invalid_argument("field '" + f.name + "': " + spec.status().message());
    if (spec->kind == codec::CodecKind::kZfp && !(spec->zfp_encode == spec->zfp_decode)) {
      return invalid_argument("field '" + f.name + "': codec '" + f.codec +
                              "' encodes and decodes zfp in different modes and would not round-trip; use e.g. "
                              "zfp-reversible-reversible or zfp-precision=20-precision=20");
    }
    format::FieldDesc d;
    d.name = f.name;
    d.dtype = f.dtype;
    d.compression = spec.value().to_string();
    d.layout = f.layout;
    d.default_value = f.default_value;
    idx.fields.push_back(d);
  }
  if (o.bits_per_block < 0) {
    return invalid_argument("bits_per_block " + std::to_string(o.bits_per_block) + " is negative");
  }
  // Beyond the bitmask's length the whole dataset is one block: clamped, as OpenVisus' CreateIdx does.
  idx.bits_per_block = std::min(o.bits_per_block, idx.bitmask.max_level());
  if (o.blocks_per_file < -1) return invalid_argument("blocks_per_file must be positive, 0 (default) or -1 (one file)");
  idx.blocks_per_file = o.blocks_per_file;
  if (!o.times.empty()) {
    idx.time.template_text = o.time_template;
    idx.time.set(o.times);
    if (o.times.front() < 0 || *std::min_element(o.times.begin(), o.times.end()) < 0) {
      return invalid_argument("timesteps must be non-negative");
    }
  }
  HZIO_RETURN_IF_ERROR(idx.validate(path));
  idx.filename_template = format::default_filename_template(folder, idx.bitmask.max_level() - idx.bits_per_block);
  int sub_block_bits = o.sub_block_bits;
  if (sub_block_bits == CreateOptions::kAutoSubBlockBits) sub_block_bits = std::clamp(idx.bits_per_block - 12, 0, 16);
  if (sub_block_bits < 0 || sub_block_bits > std::min(idx.bits_per_block, 16)) {
    return invalid_argument("sub_block_bits " + std::to_string(o.sub_block_bits) + " not in [0, " +
                            std::to_string(std::min(idx.bits_per_block, 16)) + "] (or -1, automatic)");
  }
  format::set_sub_block_bits(idx, sub_block_bits);
  if (Status back = idx.check_writes_back(path); !back.is_ok()) return invalid_argument(back.message());
  return idx;
}

}  // namespace

Result<format::IdxFile> core::idx_for_create(const std::string& path, const CreateOptions& options) {
  return idx_for(path, options);
}

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Dataset::~Dataset() {
  if (impl_ && !impl_->closed_) (void)close();
}

Result<std::unique_ptr<Dataset>> Dataset::create(const std::string& path_in, const CreateOptions& options,
                                                 const OpenOptions& open_options) {
  const std::string path = io::absolute_path(path_in);
  // Everything is checked before anything on disk changes.
  HZIO_ASSIGN_OR_RETURN(format::IdxFile idx, idx_for(path, options));
  OpenOptions o = open_options;
  o.writable = true;
  auto impl = std::make_unique<Impl>(path, idx, o);
  HZIO_RETURN_IF_ERROR(impl->init_fields());
  HZIO_ASSIGN_OR_RETURN(core::CreatePlan plan, core::plan_create(path, idx, options.overwrite));
  // The new .idx is on disk before the replaced dataset's files go, and takes their place last.
  std::vector<std::string> made;
  Status s = io::make_dirs(io::parent_dir(path), &made);
  Result<std::string> tmp =
      s.is_ok() ? io::write_temp_file(path, idx.to_text(), open_options.durable) : Result<std::string>(s);
  if (tmp.is_ok())
    s = core::remove_replaced(plan);
  else
    s = tmp.status();
  bool renamed = false;
  if (s.is_ok()) s = io::rename_file(tmp.value(), path, open_options.durable, &renamed);
  if (!s.is_ok()) {
    if (tmp.is_ok()) (void)io::remove_path(renamed ? path : tmp.value());
    for (auto it = made.rbegin(); it != made.rend(); ++it) (void)io::remove_empty_folder(*it);
    return s;
  }
  impl->created_dirs_ = std::move(made);
  impl->uncommitted_create_ = true;
  return std::unique_ptr<Dataset>(new Dataset(std::move(impl)));
}

Result<std::unique_ptr<Dataset>> Dataset::open(const std::string& path, const OpenOptions& options) {
  if (auto url = io::split_http_url(path)) {  // a dataset on a web server: read only
    HZIO_ASSIGN_OR_RETURN(std::shared_ptr<io::HttpStorage> http, io::HttpStorage::make(url->first));
    return open_in(std::move(http), url->second, options);
  }
  return open_in(io::local_storage(), path, options);
}

Result<std::unique_ptr<Dataset>> Dataset::open_in(std::shared_ptr<const io::Storage> storage,
                                                  const std::string& path_in, const OpenOptions& options) {
  const std::string path = io::absolute_path(path_in);
  if (options.writable && !storage->writable())
    return invalid_argument("dataset " + path + ": its storage is read-only; open it read-only");
  HZIO_ASSIGN_OR_RETURN(std::string text, storage->read_text(path, io::kMaxTextFileBytes));
  HZIO_ASSIGN_OR_RETURN(format::IdxFile idx, format::IdxFile::parse(text, path));
  if (!options.allow_outside_folder) {
    // A .idx names its data files by templates: one from elsewhere must not make hzio read (or write)
    // files outside the folder it lies in, unless the user says so.
    const std::string dir = io::parent_dir(path);
    HZIO_ASSIGN_OR_RETURN(const std::string root, format::DataFileNames::root_of(idx, dir));
    if (root != dir && root.rfind(dir == "/" ? dir : dir + "/", 0) != 0) {
      return invalid_argument(
          "dataset " + path + ": its file name templates ((filename_template) '" + idx.filename_template + "'" +
          (idx.time.template_text.empty() ? "" : ", (time) '" + idx.time.template_text + "'") +
          ") reach outside its folder " + dir + " (to " + root + "); open it with allow_outside_folder to read it");
    }
  }
  if (options.writable) {
    if (Status back = idx.check_writes_back(path); !back.is_ok())
      return Status(back.code(), back.message() + "; open it read-only");
  }
  auto impl = std::make_unique<Impl>(path, std::move(idx), options, std::move(storage));
  HZIO_RETURN_IF_ERROR(impl->init_fields());
  impl->read_headers_ahead();
  return std::unique_ptr<Dataset>(new Dataset(std::move(impl)));
}

void Dataset::Impl::read_headers_ahead() {
  // Local files read for reading, when no commit is under way: the first timestep's header tables are
  // read in the background (DataFiles::read_headers_ahead), valid while the .idx stays this version.
  if (options_.writable || !storage_->checks_commits() || !storage_->cheap_small_reads()) return;
  auto version = core::await_idx_version(*storage_, path_, 0);
  const std::vector<int64_t> times = idx_.time.list();
  if (!version.is_ok() || times.empty()) return;
  files_version_ = version.value();
  files_->read_headers_ahead(times.front(), kHeadersReadAhead, [storage = storage_, path = path_, v = version.value()] {
    return core::idx_unchanged(*storage, path, v);
  });
}

const std::string& Dataset::path() const { return impl_->name_; }
int Dataset::ndim() const { return impl_->idx_.ndim; }
Point Dataset::dims() const { return impl_->idx_.box.hi; }
Box Dataset::box() const { return impl_->idx_.box; }
const std::vector<FieldSpec>& Dataset::fields() const { return impl_->field_specs_; }
int Dataset::max_level() const { return impl_->idx_.bitmask.max_level(); }
const std::string& Dataset::bitmask() const { return impl_->idx_.bitmask.text(); }
const std::string& Dataset::physic_box() const { return impl_->idx_.physic_box; }
const std::string& Dataset::logic_to_physic() const { return impl_->idx_.logic_to_physic; }
int Dataset::bits_per_block() const { return impl_->idx_.bits_per_block; }
int64_t Dataset::blocks_per_file() const { return impl_->idx_.blocks_per_file; }
int64_t Dataset::block_count() const { return impl_->idx_.total_blocks(); }

std::vector<int64_t> Dataset::times() const {
  std::vector<int64_t> t = impl_->idx_.time.list();
  t.insert(t.end(), impl_->new_times_.begin(), impl_->new_times_.end());
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

Result<SampleGrid> Dataset::level_grid(const Box& box, int level) const {
  if (level < 0) level = max_level();
  if (level > max_level())
    return invalid_argument("level " + std::to_string(level) + " above max level " + std::to_string(max_level()));
  HZIO_RETURN_IF_ERROR(impl_->check_box(box, "read"));
  return impl_->space_->grid_in_box(box, level);
}

Status Dataset::write_box(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes) {
  int f = 0;
  HZIO_RETURN_IF_ERROR(impl_->check_field_time(field, time, true, f));
  HZIO_RETURN_IF_ERROR(impl_->check_box(box, "write"));
  const size_t want = static_cast<size_t>(box.sample_count()) * impl_->coding_[f].dtype.bytes();
  if (size_bytes != want) {
    return invalid_argument("write of box " + box.to_string() + " to field '" + impl_->idx_.fields[f].name +
                            "' needs " + std::to_string(want) + " bytes of " + impl_->coding_[f].dtype.to_string() +
                            ", got " + std::to_string(size_bytes));
  }
  return impl_->write_box(box, f, time, static_cast<const std::byte*>(data));
}

Status Dataset::read_box(const Box& box, int level, std::string_view field, int64_t time, void* out, size_t out_bytes,
                         ReadReport* report) {
  int f = 0;
  HZIO_RETURN_IF_ERROR(impl_->check_field_time(field, time, false, f));
  HZIO_ASSIGN_OR_RETURN(SampleGrid grid, level_grid(box, level));
  const size_t want = static_cast<size_t>(grid.sample_count()) * impl_->coding_[f].dtype.bytes();
  if (out_bytes != want) {
    return invalid_argument("read output needs " + std::to_string(want) + " bytes, got " + std::to_string(out_bytes));
  }
  ReadReport local;
  ReadReport* r = report ? report : &local;
  bool from_memory = false;
  const int lvl = level < 0 ? max_level() : level;
  uint64_t generation = 0;  // of the files the last attempt read
  HZIO_RETURN_IF_ERROR(impl_->consistent_counted(
      report,
      [&] {
        *r = ReadReport{};
        generation = impl_->files_->generation();
        Status s = impl_->read_box(box, lvl, 0, f, time, static_cast<std::byte*>(out), r, nullptr, true);
        from_memory = r->assembly == kResultCacheAssembly;
        return s;
      },
      &from_memory));
  // Kept only now that the read is known to have seen one committed state.
  if (!from_memory) impl_->keep_result({generation, f, time, lvl, box}, static_cast<const std::byte*>(out), out_bytes);
  return Status::ok();
}

Result<core::IdxVersion> Dataset::Impl::start_read() {
  HZIO_ASSIGN_OR_RETURN(core::IdxVersion version, core::await_idx_version(*storage_, path_, core::kCommitWaitSeconds));
  std::lock_guard lock(version_mutex_);
  if (files_version_ != version) {
    files_->forget_stored();
    files_version_ = version;
  }
  return version;
}

bool Dataset::Impl::read_unchanged(const core::IdxVersion& version) const {
  return core::idx_unchanged(*storage_, path_, version);
}

Status Dataset::Impl::consistent_counted(ReadReport* report, const std::function<Status()>& op,
                                         const bool* from_memory) {
  const io::Storage::Traffic before = storage_->traffic();
  Status s = consistent(op, from_memory);
  if (report) {
    const io::Storage::Traffic after = storage_->traffic();
    report->requests += after.requests - before.requests;
    report->bytes_received += after.bytes - before.bytes;
  }
  return s;
}

Status Dataset::Impl::consistent(const std::function<Status()>& op, const bool* from_memory) {
  if (!storage_->checks_commits()) return op();
  for (int attempt = 1;; ++attempt) {
    HZIO_ASSIGN_OR_RETURN(core::IdxVersion version, start_read());
    Status s = op();
    if ((from_memory && *from_memory) || read_unchanged(version)) return s;
    if (attempt == core::kConsistentReadAttempts) {
      return io_error("reading " + path_ + ": commits of another process replaced its files during each of " +
                      std::to_string(attempt) + " attempts");
    }
  }
}

Status Dataset::flush() {
  if (impl_->closed_) return invalid_argument("dataset " + impl_->path_ + " is closed");
  if (!impl_->options_.writable) return Status::ok();
  return impl_->commit();
}

Status Dataset::close() {
  if (impl_->closed_) return invalid_argument("dataset " + impl_->path_ + " is closed");
  Status s = impl_->options_.writable ? impl_->commit() : Status::ok();
  if (!s.is_ok()) impl_->remove_uncommitted_create();
  impl_->files_->forget_stored();  // release file handles and mappings now, not when the object dies
  impl_->read_cache_.clear();
  impl_->results_.clear();
  impl_->closed_ = true;
  return s;
}

void Dataset::abandon() {
  impl_->discard_uncommitted();
  impl_->remove_uncommitted_create();
  impl_->closed_ = true;
}

bool Dataset::closed() const { return impl_->closed_; }

const WriteReport& Dataset::last_write_report() const { return impl_->last_write_report_; }

void* read_memory_allocate(size_t bytes) { return util::large_allocate(bytes); }
void read_memory_free(void* data, size_t bytes) noexcept { util::large_free(static_cast<std::byte*>(data), bytes); }

struct ReadBuffer::Impl {
  util::LargeBuffer memory;
};

ReadBuffer::ReadBuffer(size_t bytes) : impl_(std::make_unique<Impl>()) { impl_->memory.reset(bytes); }
ReadBuffer::~ReadBuffer() = default;
std::byte* ReadBuffer::data() const { return impl_->memory.data(); }
size_t ReadBuffer::size() const { return impl_->memory.size(); }

}  // namespace hzio
