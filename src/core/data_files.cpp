// Data file reading and the write-log commit protocol (docs/design/commit.md).
#include "core/data_files.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>

#include "format/file_name.hpp"
#include "util/fork_guard.hpp"

namespace hzio::core {

struct DataFiles::Stored {
  bool exists = false;
  std::shared_ptr<const io::Readable> file;
  std::vector<format::BlockEntry> entries;
  uint64_t size = 0;
  uint32_t header_crc = 0;
  bool stats_loaded = false;
  std::shared_ptr<const stats::StatsTable> stats;              // null: no sidecar that describes this file
  std::shared_ptr<std::vector<std::atomic<uint8_t>>> checked;  // BlockLocation::checked, with stats
  Status sidecar_error;                                        // a malformed sidecar
  Status header_error;                   // when verifying: the header table does not match the sidecar's checksum
  std::vector<std::byte> sidecar_bytes;  // the sidecar while `stats` holds its checksums only
  // A sidecar read entry by entry (load_sidecar_layout): `stats` is `piecewise`, whose checksums hold
  // those of the entries marked in `entry_read` (zero elsewhere), read from `sidecar_file`.
  std::shared_ptr<const io::Readable> sidecar_file;
  std::shared_ptr<stats::StatsTable> piecewise;
  stats::SidecarLayout layout;
  std::vector<uint8_t> entry_read;
  size_t entries_read = 0;
};

struct DataFiles::Pending {
  std::string final_path;
  std::string log_path;
  std::shared_ptr<io::File> log;
  uint64_t end = 0;
  std::vector<format::BlockEntry> entries;  // offsets into the log; zero = not written here
  bool canonical = true;                    // appended in entry order, each entry once
  int64_t last_index = -1;
  std::string ready_path;                               // complete and durable, waiting for publish()
  std::vector<std::optional<stats::BlockStats>> stats;  // per entry, for blocks written here
  std::vector<std::vector<uint64_t>> checksums;         // per entry, for blocks written here
  std::string stats_ready_path;
  uint64_t written_back = 0;  // log bytes handed to early write-back
  std::vector<char> ready;    // per entry: its bytes are in the log (reserved entries are not yet)
  // Direct writes (docs/design/commit.md "Direct writes"): the log's bytes [buffer_base, end) are in
  // `buffer`, or, while there is no buffer, the part before `sent` is in `tail` (the unfinished last
  // page). Bytes before `sent` are in the file or being written by `in_flight`; later ones are only
  // buffered. buffer_base is a multiple of io::kDirectAlign. The first failed write's error stays in
  // `failed` until abort(): the log can no longer become a file.
  bool direct = false;
  util::LargeBuffer buffer{util::Pages::kSmall};  // written once per commit: small pages (large_buffer.hpp)
  std::vector<std::byte> tail;
  uint64_t buffer_base = 0;
  uint64_t sent = 0;
  std::future<Status> in_flight;
  Status failed;
};

namespace {
// Asking the kernel to write the log out every few MiB keeps the disk busy while blocks are encoded,
// so the final fsync waits only for the tail (bench/write_read_bench.py, durable writes).
constexpr uint64_t kWritebackBytes = uint64_t{8} << 20;
// A log's buffered bytes go to the file once this many wait (payloads appended one by one, compressed
// blocks, are written out by the caller's write_out() only at the end of a batch). Large enough for
// long direct writes, small enough to start the disk early (bench/write_read_bench.py, hzio cases).
constexpr uint64_t kBufferWriteBytes = uint64_t{16} << 20;
// Write-outs of at least this many bytes run on a writer thread (at most one per log, so a batch of
// 32 MiB starts at most 32); smaller ones are written at once on the calling thread, where a thread
// would cost more than the write (bench/write_read_bench.py and bench/write_bench.py).
constexpr uint64_t kAsyncWriteBytes = uint64_t{1} << 20;
// Sidecars from this size on are read entry by entry by reads that need few of their entries: a small
// box at full resolution needs a dozen entries of sidecars of hundreds of KiB, whose whole load (and
// hashing) was most of its first read in an open dataset (bench/small_read_bench.py). Smaller ones are
// one request anyway.
constexpr uint64_t kPiecewiseSidecarBytes = uint64_t{64} << 10;
// A sidecar read entry by entry is loaded whole once a read has needed more than this share of its
// entries (1 / kPiecewiseShare).
constexpr size_t kPiecewiseShare = 8;
// A sidecar's load error as reads report it: a malformed sidecar's with what to do about it.
Status sidecar_failure(const Status& s) {
  if (s.code() != ErrorCode::kCorrupt) return s;
  return Status(s.code(), s.message() + " (`hzio index` rewrites the sidecar; reads with verify off do not load it)");
}

uint64_t align_down(uint64_t x) { return x / io::kDirectAlign * io::kDirectAlign; }
uint64_t align_up(uint64_t x) { return align_down(x + io::kDirectAlign - 1); }

// The checksum parts checked in this process, per version of a data file (its io::File::identity and
// header CRC), so that a dataset opened again does not check again what an earlier open checked: a
// file replaced or changed in place is another version. The oldest versions are forgotten beyond
// kCheckedParts flags in all.
constexpr size_t kCheckedParts = size_t{1} << 26;
// How long after its last change a file's checks may be remembered.
constexpr uint64_t kSettledNanoseconds = 2'000'000'000;

std::shared_ptr<std::vector<std::atomic<uint8_t>>> checked_parts(const std::array<uint64_t, 5>& identity,
                                                                 uint32_t header_crc, size_t parts) {
  using Flags = std::vector<std::atomic<uint8_t>>;
  using Version = std::pair<std::array<uint64_t, 5>, uint32_t>;
  static std::mutex mutex;
  static const bool registered = (util::hold_across_fork(mutex), true);
  (void)registered;
  static std::map<Version, std::shared_ptr<Flags>> known;
  static std::deque<Version> order;  // oldest first
  static size_t held = 0;
  std::lock_guard lock(mutex);
  const Version v{identity, header_crc};
  if (auto it = known.find(v); it != known.end() && it->second->size() == parts) return it->second;
  auto flags = std::make_shared<Flags>(parts);
  if (parts > kCheckedParts) return flags;
  while (held + parts > kCheckedParts && !order.empty()) {
    auto old = known.find(order.front());
    if (old != known.end()) {
      held -= old->second->size();
      known.erase(old);
    }
    order.pop_front();
  }
  if (auto it = known.find(v); it != known.end()) held -= it->second->size();
  known[v] = flags;
  order.push_back(v);
  held += parts;
  return flags;
}
}  // namespace

DataFiles::DataFiles(const format::IdxFile* idx, std::string idx_dir, bool durable, int sub_block_bits, bool verify,
                     std::shared_ptr<const io::Storage> storage)
    : idx_(idx),
      idx_dir_(std::move(idx_dir)),
      durable_(durable),
      sub_block_bits_(sub_block_bits),
      verify_(verify),
      storage_(std::move(storage)) {}

std::vector<int> DataFiles::components() const {
  std::vector<int> c;
  for (const auto& f : idx_->fields) c.push_back(f.dtype.components);
  return c;
}

DataFiles::~DataFiles() { abort(); }

Result<std::string> DataFiles::file_path(int64_t time, uint64_t block) const {
  return format::data_file_path(*idx_, idx_dir_, format::first_block_of_file(*idx_, static_cast<int64_t>(block)), time);
}

Result<DataFiles::Stored*> DataFiles::stored(const Key& key, ReadReport* report) {
  auto& slot = stored_[key];
  if (slot) return slot.get();
  auto s = std::make_unique<Stored>();
  HZIO_ASSIGN_OR_RETURN(std::string path,
                        format::data_file_path(*idx_, idx_dir_, static_cast<int64_t>(key.second), key.first));
  if (!idx_->time.contains(key.first)) {  // not committed: files on disk are leftovers of a dead run
    slot = std::move(s);
    return slot.get();
  }
  auto opened = open_committed(path);
  if (!opened.is_ok() && opened.status().code() != ErrorCode::kNotFound) return opened.status();
  // The header table and the file's size together (one request for a remote file, which is opened
  // without asking: its absence shows here).
  uint64_t size = 0;
  const uint64_t table = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
  std::vector<std::byte> ahead;
  const bool read_ahead = opened.is_ok() && take_read_ahead(path, ahead, size);  // read at open
  auto head = !opened.is_ok() ? Result<std::vector<std::byte>>(opened.status())
              : read_ahead    ? Result<std::vector<std::byte>>(std::move(ahead))
                              : (*opened)->read_prefix(table, &size);
  if (!head.is_ok() && head.status().code() != ErrorCode::kNotFound) return head.status();
  if (head.is_ok()) {
    s->exists = true;
    s->file = std::move(opened).value();
    const std::vector<std::byte>& bytes = head.value();
    HZIO_ASSIGN_OR_RETURN(s->entries, format::parse_header_table(bytes, static_cast<int>(idx_->fields.size()),
                                                                 idx_->blocks_per_file, size, path));
    s->size = size;
    s->header_crc = stats::crc32_of(bytes);
    if (report) {  // read ahead or now: counted in the read that needs it, as before either way
      report->files_opened += 1;
      report->bytes_read += static_cast<int64_t>(bytes.size());
    }
  }
  slot = std::move(s);
  return slot.get();
}

void DataFiles::prefetch_headers(int64_t time, const std::vector<uint64_t>& blocks, bool sidecars, int field) {
  if (!idx_->time.contains(time)) return;
  const bool entrywise = verify_ && !sidecars && field >= 0;  // sidecar entries, not whole sidecars, may do
  // Per file of the read, its blocks; and the sidecar layout a dataset of this shape writes.
  std::map<uint64_t, std::vector<uint64_t>> files;
  for (uint64_t b : blocks)
    files[static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(b)))].push_back(b);
  stats::SidecarLayout expected;
  if (entrywise) {
    expected.head.components = components();
    expected.head.blocks_per_file = idx_->blocks_per_file;
    expected.head.sub_block_bits = sub_block_bits_;
    expected.sidecar_size = stats::sidecar_bytes(expected.head.components, idx_->blocks_per_file, sub_block_bits_);
  }
  const auto hint_entries = [&](const io::Readable& f, const stats::SidecarLayout& layout,
                                const std::vector<uint64_t>& of, const std::vector<uint8_t>* read) {
    const uint64_t bytes = 8 * stats::checksum_parts(layout.head.sub_block_bits);
    for (uint64_t b : of) {
      const size_t index = static_cast<size_t>(format::entry_in_file(*idx_, field, b));
      if (read && (*read)[index]) continue;
      f.advise_willneed(layout.checksums_offset(index), bytes);  // a sidecar is not mapped: no residency test
    }
  };
  const uint64_t table = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
  std::lock_guard lock(mutex_);
  for (const auto& [first, of] : files) {
    if (auto it = stored_.find({time, first}); it != stored_.end()) {  // known: its sidecar entries still to read
      const Stored* s = it->second.get();  // null: its load failed, and will fail again in locate()
      if (entrywise && s && s->piecewise) hint_entries(*s->sidecar_file, s->layout, of, &s->entry_read);
      continue;
    }
    auto path = format::data_file_path(*idx_, idx_dir_, static_cast<int64_t>(first), time);
    if (!path.is_ok()) continue;
    // The files stay open for locate(): a remote file holds what it fetched ahead.
    if (auto f = storage_->open(*path); f.is_ok()) {
      (*f)->advise_willneed(0, table);
      opened_ahead_[*path] = std::move(f).value();
    }
    if (!verify_ && !sidecars) continue;
    if (auto f = storage_->open(*path + stats::kStatsSuffix); f.is_ok()) {
      if (entrywise && piecewise_sidecar(expected.sidecar_size, of.size())) {
        (*f)->advise_willneed(0, stats::sidecar_head_bytes(idx_->fields.size()));
        hint_entries(**f, expected, of, nullptr);
      } else {
        (*f)->advise_willneed(0, 0);                                         // the whole file
        if (entrywise) whole_sidecars_.insert(*path + stats::kStatsSuffix);  // many entries: no piecewise start
      }
      opened_ahead_[*path + stats::kStatsSuffix] = std::move(f).value();
    }
  }
}

Result<std::shared_ptr<const io::Readable>> DataFiles::open_committed(const std::string& path) {
  if (auto it = opened_ahead_.find(path); it != opened_ahead_.end()) {
    auto f = std::move(it->second);
    opened_ahead_.erase(it);
    return f;
  }
  if (read_ahead_ && read_ahead_->ready.load(std::memory_order_acquire)) {
    if (auto it = read_ahead_->files.find(path); it != read_ahead_->files.end()) {
      auto f = std::move(it->second);
      read_ahead_->files.erase(it);
      return f;
    }
  }
  return storage_->open(path);
}

Result<std::optional<BlockLocation>> DataFiles::locate(int field, int64_t time, uint64_t block, ReadReport* report) {
  std::lock_guard lock(mutex_);
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  const size_t index = static_cast<size_t>(format::entry_in_file(*idx_, field, block));
  if (auto it = pending_.find(key);
      it != pending_.end() && it->second->entries[index].present() && it->second->ready[index]) {
    Pending& p = *it->second;
    const format::BlockEntry& e = p.entries[index];
    if (p.direct && e.offset + e.size > p.sent) {
      if (e.offset < p.buffer_base || !p.buffer.data())
        return internal_error("buffered block of " + p.log_path + " is lost");
      // Still buffered: put exactly these bytes in the file (through the page cache; the buffer may be
      // in use by writers of other blocks, so it is not moved here).
      HZIO_RETURN_IF_ERROR(
          p.log->write_at(e.offset, std::span<const std::byte>(p.buffer.data() + (e.offset - p.buffer_base), e.size)));
    } else if (p.direct) {
      HZIO_RETURN_IF_ERROR(wait_written(p));  // it may be in the write in flight
    }
    BlockLocation w;  // uncommitted: no checksums to check yet
    w.entry = e;
    w.file = p.log;
    return std::optional<BlockLocation>(std::move(w));
  }
  HZIO_ASSIGN_OR_RETURN(Stored * s, stored(key, report));
  if (!s->exists) return std::optional<BlockLocation>();
  BlockLocation w;
  w.entry = s->entries[index];
  w.file = s->file;
  w.committed = true;
  if (verify_) {  // before the entry is trusted, even to say that the block is missing
    HZIO_RETURN_IF_ERROR(load_stats(*s, report, false));
    HZIO_RETURN_IF_ERROR(s->header_error);
    if (s->piecewise) HZIO_RETURN_IF_ERROR(load_sidecar_entry(*s, index, report));
    if (s->stats && s->stats->version >= 2) {
      w.sidecar = s->stats;
      w.checked = s->checked;
      if (s->piecewise) w.sidecar_file = s->sidecar_file;
    }
  }
  if (!w.entry.present()) return std::optional<BlockLocation>();
  w.entry_index = index;
  w.field = field;
  w.time = time;
  w.block = block;
  return std::optional<BlockLocation>(std::move(w));
}

Status DataFiles::check_payload(const BlockLocation& where, std::span<const std::byte> payload) const {
  if (!where.sidecar) return Status::ok();
  return check_payload_parts(where, 0, stats::checksum_parts(where.sidecar->sub_block_bits), payload);
}

std::pair<uint64_t, uint64_t> DataFiles::checked_range(const BlockLocation& where, uint64_t begin, uint64_t end) const {
  if (begin >= end) return {0, 0};
  if (!where.sidecar) return {begin, end};
  const uint64_t part = stats::checksum_part_bytes(where.entry.size, where.sidecar->sub_block_bits);
  if (part == 0) return {0, where.entry.size};
  return {begin / part * part, std::min<uint64_t>((end + part - 1) / part * part, where.entry.size)};
}

Status DataFiles::check_payload_range(const BlockLocation& where, uint64_t begin, uint64_t end,
                                      std::span<const std::byte> payload) const {
  if (!where.sidecar || begin >= end) return Status::ok();
  const auto [from, to] = checked_range(where, begin, end);
  return check_range_bytes(where, from, to, payload.subspan(from, to - from));
}

Status DataFiles::check_range_bytes(const BlockLocation& where, uint64_t begin, uint64_t end,
                                    std::span<const std::byte> bytes) const {
  if (!where.sidecar || begin >= end) return Status::ok();
  const uint64_t part = stats::checksum_part_bytes(where.entry.size, where.sidecar->sub_block_bits);
  if (part == 0) return check_payload(where, bytes);  // one checksum: checked_range() gave the whole payload
  if (begin % part != 0) return internal_error("checksum parts out of range for " + where.file->path());
  return check_payload_parts(where, static_cast<size_t>(begin / part),
                             static_cast<size_t>((end - begin + part - 1) / part), bytes);
}

Status DataFiles::check_payload_parts(const BlockLocation& where, size_t first, size_t count,
                                      std::span<const std::byte> bytes) const {
  if (!where.sidecar) return Status::ok();
  const int bits = where.sidecar->sub_block_bits;
  const size_t parts = stats::checksum_parts(bits);
  const uint64_t size = where.entry.size, part = stats::checksum_part_bytes(size, bits);
  const uint64_t base = std::min<uint64_t>(first * part, size);
  if (first + count > parts || std::min<uint64_t>((first + count) * part, size) - base != bytes.size())
    return internal_error("checksum parts out of range for " + where.file->path());
  for (size_t k = first; k < first + count; ++k) {
    const size_t at = where.entry_index * parts + k;
    // Checked once per process and version of the file: the bytes of a file that a commit replaces are
    // read from the new file, whose cached state starts unchecked (docs/format.md "Checksums").
    if (where.checked && (*where.checked)[at].load(std::memory_order_relaxed)) continue;
    const uint64_t begin = std::min<uint64_t>(k * part, size), end = std::min<uint64_t>(begin + part, size);
    const uint64_t sum = stats::checksum_of(bytes.subspan(begin - base, end - begin));
    if (sum != where.sidecar->checksums[at] && where.sidecar_file) HZIO_RETURN_IF_ERROR(whole_sidecar_verdict(where));
    if (sum != where.sidecar->checksums[at])
      return mismatch(where, parts > 1 ? " (bytes " + std::to_string(begin) + " to " + std::to_string(end) +
                                             " of its " + std::to_string(size) + ")"
                                       : "");
    if (where.checked) (*where.checked)[at].store(1, std::memory_order_relaxed);
  }
  return Status::ok();
}

Status DataFiles::whole_sidecar_verdict(const BlockLocation& where) const {
  const std::string path = where.file->path() + stats::kStatsSuffix;
  auto bytes = read_sidecar(*where.sidecar_file, path, nullptr);
  auto t = bytes.is_ok() ? stats::parse_stats_file(bytes.value(), components(), idx_->blocks_per_file, path, false)
                         : Result<stats::StatsTable>(bytes.status());
  return t.is_ok() ? Status::ok() : sidecar_failure(t.status());
}

Status DataFiles::mismatch(const BlockLocation& where, const std::string& what) const {
  mismatches_ += 1;
  return corrupt("checksum mismatch in " + where.file->path() + ": field '" +
                 idx_->fields[static_cast<size_t>(where.field)].name + "', timestep " + std::to_string(where.time) +
                 ", block " + std::to_string(where.block) + what +
                 ": the stored bytes differ from those written (damaged storage or copy, or a tool that changed the "
                 "file in place; `hzio index --no-verify` records the file as it is now)");
}

Status DataFiles::load_stats(Stored& s, ReadReport* report, bool entries) {
  if (!s.exists) return s.sidecar_error;
  if (!s.stats_loaded) {
    s.stats_loaded = true;
    const std::string path = s.file->path() + stats::kStatsSuffix;
    auto f = open_committed(path);
    if (!f.is_ok()) return Status::ok();  // no sidecar: statistics unknown
    if (!entries && !whole_sidecars_.erase(path) && load_sidecar_layout(s, f.value(), report)) return Status::ok();
    return load_whole_sidecar(s, **f, report, entries);
  }
  if (entries && s.piecewise) return load_whole_after_entries(s, report, true);  // statistics wanted
  if (entries && !s.sidecar_bytes.empty()) {
    auto t = stats::parse_stats_file(s.sidecar_bytes, components(), idx_->blocks_per_file,
                                     s.file->path() + stats::kStatsSuffix);
    std::vector<std::byte>().swap(s.sidecar_bytes);
    HZIO_RETURN_IF_ERROR(t.status());  // the bytes parsed before: this cannot fail
    s.stats = std::make_shared<const stats::StatsTable>(std::move(t).value());
  }
  return s.sidecar_error;
}

Status DataFiles::load_whole_sidecar(Stored& s, const io::Readable& f, ReadReport* report, bool entries) {
  const std::string path = s.file->path() + stats::kStatsSuffix;
  auto bytes = read_sidecar(f, path, report);
  auto t = bytes.is_ok() ? stats::parse_stats_file(bytes.value(), components(), idx_->blocks_per_file, path, entries)
                         : Result<stats::StatsTable>(bytes.status());
  if (!t.is_ok()) {  // kept: every later use of this file meets the same error
    s.sidecar_error = sidecar_failure(t.status());
    return s.sidecar_error;
  }
  HZIO_RETURN_IF_ERROR(bind_stats(s, std::make_shared<stats::StatsTable>(std::move(t).value()), path));
  // Statistics not asked for yet stay undecoded until they are (a read that verifies needs only the
  // checksums; decoding every range's record is most of a sidecar's load).
  if (s.stats && !entries) s.sidecar_bytes = std::move(bytes).value();
  return s.sidecar_error;
}

bool DataFiles::piecewise_sidecar(uint64_t sidecar_size, size_t entries_needed) const {
  const size_t entries = idx_->fields.size() * static_cast<size_t>(idx_->blocks_per_file);
  return storage_->cheap_small_reads() && sidecar_size >= kPiecewiseSidecarBytes &&
         entries_needed * kPiecewiseShare <= entries;
}

bool DataFiles::load_sidecar_layout(Stored& s, const std::shared_ptr<const io::Readable>& f, ReadReport* report) {
  auto size = f->size();
  if (!size.is_ok() || !piecewise_sidecar(size.value(), 1)) return false;
  std::vector<std::byte> head(stats::sidecar_head_bytes(idx_->fields.size()));
  if (size.value() < head.size() || !f->read_at(0, head).is_ok()) return false;
  if (report) report->bytes_read += static_cast<int64_t>(head.size());
  auto layout = stats::sidecar_layout(head, size.value(), components(), idx_->blocks_per_file);
  // Anything but a well-formed sidecar of the file as it is now is left to the whole load, whose
  // verdict (malformed, stale, damaged header table) needs every byte.
  if (!layout || stats::binding_of(layout->head, s.size, s.header_crc) != stats::Binding::kCurrent) return false;
  const size_t entries = idx_->fields.size() * static_cast<size_t>(idx_->blocks_per_file);
  auto t = std::make_shared<stats::StatsTable>(layout->head);
  t->checksums.assign(entries * stats::checksum_parts(t->sub_block_bits), 0);
  if (!bind_stats(s, t, f->path()).is_ok() || !s.stats) return false;  // cannot fail: the binding is current
  s.layout = std::move(layout).value();
  s.entry_read.assign(entries, 0);
  s.entries_read = 0;
  s.sidecar_file = f;
  s.piecewise = std::move(t);
  return true;
}

Status DataFiles::load_sidecar_entry(Stored& s, size_t index, ReadReport* report) {
  if (s.entry_read[index]) return Status::ok();
  if (!piecewise_sidecar(s.layout.sidecar_size, s.entries_read + 1))  // many entries: all of them at once
    return load_whole_after_entries(s, report, false);
  const size_t sums = stats::checksum_parts(s.layout.head.sub_block_bits);
  std::span<uint64_t> out(s.piecewise->checksums.data() + index * sums, sums);
  HZIO_RETURN_IF_ERROR(s.sidecar_file->read_at(s.layout.checksums_offset(index), std::as_writable_bytes(out)));
  if (report) report->bytes_read += static_cast<int64_t>(sums * 8);
  s.entry_read[index] = 1;
  ++s.entries_read;
  return Status::ok();
}

Status DataFiles::load_whole_after_entries(Stored& s, ReadReport* report, bool entries) {
  const std::shared_ptr<const io::Readable> f = std::move(s.sidecar_file);
  s.piecewise.reset();
  s.stats.reset();
  std::vector<uint8_t>().swap(s.entry_read);
  return load_whole_sidecar(s, *f, report, entries);
}

Status DataFiles::bind_stats(Stored& s, std::shared_ptr<stats::StatsTable> t, const std::string& path) {
  switch (stats::binding_of(*t, s.size, s.header_crc)) {
    case stats::Binding::kCurrent: {
      s.stats = std::move(t);
      // This open remembers what it checked. Other opens of this process share that only for files
      // that changed more than a few seconds ago: file times have a coarse clock, and a file changed
      // again within it could keep its times (as git treats "racily clean" files).
      auto identity = s.file->identity();
      const uint64_t now = static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count());
      if (identity.is_ok() && now > std::max((*identity)[3], (*identity)[4]) + kSettledNanoseconds)
        s.checked = checked_parts(identity.value(), s.header_crc, s.stats->checksums.size());
      else
        s.checked = std::make_shared<std::vector<std::atomic<uint8_t>>>(s.stats->checksums.size());
      break;
    }
    case stats::Binding::kStale:  // describes another version of the file: nothing known
      break;
    case stats::Binding::kHeaderMismatch:
      if (verify_) {
        mismatches_ += 1;
        s.header_error =
            corrupt("checksum mismatch in the header table of " + s.file->path() + " (checksum in " + path +
                    "): the table of block offsets and sizes is damaged (or a tool changed the file in place; "
                    "`hzio index --no-verify` records the file as it is now)");
      }
      break;
  }
  return Status::ok();
}

Result<std::vector<std::byte>> DataFiles::read_sidecar(const io::Readable& f, const std::string& path,
                                                       ReadReport* report) const {
  constexpr uint64_t kMaxSidecar = uint64_t{1} << 32;
  uint64_t size = 0;
  HZIO_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, f.read_prefix(kMaxSidecar, &size, kMaxSidecar));
  if (report) report->bytes_read += static_cast<int64_t>(bytes.size());
  return bytes;
}

Result<bool> DataFiles::has_checksums(int64_t time, uint64_t block) {
  std::lock_guard lock(mutex_);
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  HZIO_ASSIGN_OR_RETURN(Stored * s, stored(key, nullptr));
  if (!s->exists) return false;
  HZIO_RETURN_IF_ERROR(load_stats(*s, nullptr, false));
  return s->stats && s->stats->version >= 2;
}

Result<std::shared_ptr<const stats::BlockStats>> DataFiles::block_stats(int field, int64_t time, uint64_t block,
                                                                        ReadReport* report) {
  using Shared = std::shared_ptr<const stats::BlockStats>;
  static const Shared kMissing = std::make_shared<const stats::BlockStats>();
  std::lock_guard lock(mutex_);
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  const size_t index = static_cast<size_t>(format::entry_in_file(*idx_, field, block));
  if (auto it = pending_.find(key); it != pending_.end() && it->second->entries[index].present()) {
    const Pending& p = *it->second;  // written but not committed: what a read would see
    if (!p.ready[index] || !p.stats[index]) return Shared();
    return std::make_shared<const stats::BlockStats>(*p.stats[index]);
  }
  HZIO_ASSIGN_OR_RETURN(Stored * s, stored(key, report));
  if (!s->exists || !s->entries[index].present()) return kMissing;
  HZIO_RETURN_IF_ERROR(load_stats(*s, report, true));
  HZIO_RETURN_IF_ERROR(s->header_error);
  if (!s->stats || s->stats->entries[index].block.count == stats::kUnknown) return Shared();
  return Shared(s->stats, &s->stats->entries[index]);  // shares the table's ownership
}

Result<std::optional<std::pair<uint64_t, uint32_t>>> DataFiles::file_identity(int64_t time, uint64_t block) {
  std::lock_guard lock(mutex_);
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  HZIO_ASSIGN_OR_RETURN(Stored * s, stored(key, nullptr));
  if (!s->exists) return std::optional<std::pair<uint64_t, uint32_t>>();
  return std::optional<std::pair<uint64_t, uint32_t>>(std::make_pair(s->size, s->header_crc));
}

Result<DataFiles::Pending*> DataFiles::pending(const Key& key) {
  if (auto it = pending_.find(key); it != pending_.end()) return it->second.get();
  // Made whole before it is entered: abort() and prepare() may meet any entry of pending_.
  auto p = std::make_unique<Pending>();
  HZIO_ASSIGN_OR_RETURN(p->final_path,
                        format::data_file_path(*idx_, idx_dir_, static_cast<int64_t>(key.second), key.first));
  HZIO_RETURN_IF_ERROR(io::make_dirs(io::parent_dir(p->final_path), &created_dirs_));
  p->log_path = p->final_path + ".log." + std::to_string(::getpid());
  HZIO_ASSIGN_OR_RETURN(io::File f, io::File::open(p->log_path, io::File::Mode::kCreate, fault_seam_));
  p->log = std::make_shared<io::File>(std::move(f));
  const size_t n = idx_->fields.size() * static_cast<size_t>(idx_->blocks_per_file);
  p->entries.assign(n, {});
  p->stats.assign(n, std::nullopt);
  p->checksums.assign(n, {});
  p->ready.assign(n, 0);
  p->end = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
  if (durable_ && p->log->enable_direct()) {
    // The header table is a hole until finish() writes it; buffering starts at its last page.
    p->direct = true;
    p->buffer_base = align_down(p->end);
    p->tail.assign(static_cast<size_t>(p->end - p->buffer_base), std::byte{0});
    p->sent = p->end;
  }
  return pending_.emplace(key, std::move(p)).first->second.get();
}

Status DataFiles::make_buffer(Pending& p, uint64_t end) {
  const uint64_t needed = align_up(end - p.buffer_base);
  if (p.buffer.data() && p.buffer.size() >= needed) return Status::ok();
  try {
    // Appends grow the buffer one payload at a time: by half again at least, so copies stay linear.
    // Huge pages: a direct write pins every page of its buffer, and 4 KiB pages cost more to pin than
    // fresh huge pages cost to touch (bench/write_read_bench.py, bench/first_write_bench.py hzio-nocopy).
    util::LargeBuffer grown(static_cast<size_t>(std::max(needed, p.buffer.size() + p.buffer.size() / 2)),
                            util::Pages::kHuge);
    if (p.buffer.data())
      std::memcpy(grown.data(), p.buffer.data(), std::min<size_t>(p.buffer.size(), p.end - p.buffer_base));
    else if (!p.tail.empty())
      std::memcpy(grown.data(), p.tail.data(), p.tail.size());
    p.tail.clear();
    p.buffer = std::move(grown);
  } catch (const std::bad_alloc&) {
    return io_error("out of memory buffering " + std::to_string(needed) + " bytes for " + p.log_path);
  }
  return Status::ok();
}

Status DataFiles::write_out(Pending& p) {
  if (!p.direct || p.sent == p.end) return p.failed;
  HZIO_RETURN_IF_ERROR(wait_written(p));  // one write per log at a time: consecutive ones share a page
  HZIO_RETURN_IF_ERROR(make_buffer(p, p.end));
  const uint64_t used = p.end - p.buffer_base, length = align_up(used);
  std::memset(p.buffer.data() + used, 0, static_cast<size_t>(length - used));  // padding, cut by finish()
  // Keep the unfinished last page for the next bytes; the write owns the buffer from here.
  const uint64_t keep = align_down(p.end);
  std::vector<std::byte> tail(p.buffer.data() + (keep - p.buffer_base), p.buffer.data() + used);
  auto buffer = std::make_shared<util::LargeBuffer>(std::move(p.buffer));
  auto write = [log = p.log, at = p.buffer_base, buffer, length] {
    return log->write_direct_at(at, std::span<const std::byte>(buffer->data(), length));
  };
  bool started = false;
  if (length >= kAsyncWriteBytes) {
    try {
      p.in_flight = std::async(std::launch::async, write);
      started = true;
    } catch (const std::system_error&) {  // no thread to be had: write here instead
    }
  }
  const Status s = started ? Status::ok() : write();
  p.tail = std::move(tail);
  p.buffer_base = keep;
  p.sent = p.end;
  if (!s.is_ok()) p.failed = s;
  return s;
}

Status DataFiles::wait_written(Pending& p) {
  if (p.in_flight.valid()) {
    const Status s = p.in_flight.get();
    if (!s.is_ok() && p.failed.is_ok()) p.failed = s;
  }
  return p.failed;
}

Status DataFiles::write_out() {
  std::lock_guard lock(mutex_);
  for (auto& [key, p] : pending_) HZIO_RETURN_IF_ERROR(write_out(*p));
  return Status::ok();
}

Result<std::byte*> DataFiles::buffered(const Reserved& r) {
  std::lock_guard lock(mutex_);
  auto it = pending_.find(r.key);
  if (it == pending_.end() || !it->second->direct) return static_cast<std::byte*>(nullptr);
  Pending& p = *it->second;
  HZIO_RETURN_IF_ERROR(make_buffer(p, p.end));  // room for every reservation of the batch at once
  return p.buffer.data() + (r.offset - p.buffer_base);
}

Status DataFiles::append(int field, int64_t time, uint64_t block, std::span<const std::byte> payload, uint32_t flags,
                         const stats::BlockStats* block_stats, std::span<const uint64_t> checksums) {
  std::lock_guard lock(mutex_);
  if (payload.size() > 0xFFFFFFFFu)
    return unsupported("block payload of " + std::to_string(payload.size()) + " bytes exceeds the format's 4 GiB");
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  HZIO_ASSIGN_OR_RETURN(Pending * p, pending(key));
  const int64_t index = format::entry_in_file(*idx_, field, block);
  if (p->direct) {
    HZIO_RETURN_IF_ERROR(p->failed);
    HZIO_RETURN_IF_ERROR(make_buffer(*p, p->end + payload.size()));
    if (!payload.empty()) std::memcpy(p->buffer.data() + (p->end - p->buffer_base), payload.data(), payload.size());
  } else {
    HZIO_RETURN_IF_ERROR(p->log->write_at(p->end, payload));
  }
  if (index <= p->last_index) p->canonical = false;
  p->last_index = std::max(p->last_index, index);
  p->entries[static_cast<size_t>(index)] = {p->end, static_cast<uint32_t>(payload.size()), flags};
  p->stats[static_cast<size_t>(index)] = block_stats ? std::optional<stats::BlockStats>(*block_stats) : std::nullopt;
  auto& sums = p->checksums[static_cast<size_t>(index)];
  if (checksums.empty()) {
    sums.resize(stats::checksum_parts(sub_block_bits_));
    stats::payload_checksums(payload, sub_block_bits_, sums.data());
  } else {
    sums.assign(checksums.begin(), checksums.end());
  }
  p->ready[static_cast<size_t>(index)] = 1;
  if (payload.empty()) p->entries[static_cast<size_t>(index)] = {};
  p->end += payload.size();
  if (p->direct) return p->end - p->buffer_base >= kBufferWriteBytes ? write_out(*p) : Status::ok();
  if (durable_ && p->end - p->written_back >= kWritebackBytes) {
    p->log->start_writeback(p->written_back, p->end - p->written_back);
    p->written_back = p->end;
  }
  return Status::ok();
}

Result<DataFiles::Reserved> DataFiles::reserve(int field, int64_t time, uint64_t block, uint64_t size, uint32_t flags) {
  std::lock_guard lock(mutex_);
  if (size > 0xFFFFFFFFu)
    return unsupported("block payload of " + std::to_string(size) + " bytes exceeds the format's 4 GiB");
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  HZIO_ASSIGN_OR_RETURN(Pending * p, pending(key));
  const int64_t index = format::entry_in_file(*idx_, field, block);
  if (index <= p->last_index) p->canonical = false;
  p->last_index = std::max(p->last_index, index);
  p->entries[static_cast<size_t>(index)] = {p->end, static_cast<uint32_t>(size), flags};
  p->stats[static_cast<size_t>(index)] = std::nullopt;
  p->ready[static_cast<size_t>(index)] = 0;  // invisible to locate() until finish_reserved()
  const uint64_t at = p->end;
  p->end += size;
  return Reserved{p->log, at, key};
}

void DataFiles::finish_reserved(int field, int64_t time, uint64_t block, const stats::BlockStats* block_stats,
                                std::span<const uint64_t> checksums) {
  std::lock_guard lock(mutex_);
  const Key key{time, static_cast<uint64_t>(format::first_block_of_file(*idx_, static_cast<int64_t>(block)))};
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  Pending& p = *it->second;
  const size_t index = static_cast<size_t>(format::entry_in_file(*idx_, field, block));
  if (block_stats) p.stats[index] = *block_stats;
  p.checksums[index].assign(checksums.begin(), checksums.end());
  p.ready[index] = 1;
  const uint64_t end = p.entries[index].offset + p.entries[index].size;
  if (durable_ && !p.direct && end > p.written_back && end - p.written_back >= kWritebackBytes) {
    p.log->start_writeback(p.written_back, end - p.written_back);
    p.written_back = end;
  }
}

Status DataFiles::rebuild(const Key& key, Pending& p, Stored* old) {
  // Canonical layout: header, then every present payload by (field, slot), packed.
  const std::string tmp = p.final_path + ".tmp." + std::to_string(::getpid());
  HZIO_ASSIGN_OR_RETURN(io::File out, io::File::open(tmp, io::File::Mode::kCreate, fault_seam_));
  std::vector<format::BlockEntry> entries(p.entries.size());
  uint64_t end = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
  const size_t parts = stats::checksum_parts(sub_block_bits_);
  std::vector<uint64_t> checksums(entries.size() * parts);
  std::vector<std::byte> buf;
  Status s;
  for (size_t i = 0; i < entries.size() && s.is_ok(); ++i) {
    const bool mine = p.entries[i].present();
    const format::BlockEntry src = mine ? p.entries[i] : (old && old->exists ? old->entries[i] : format::BlockEntry{});
    if (!src.present()) continue;
    buf.resize(src.size);
    s = (mine ? *p.log : *old->file).read_at(src.offset, buf);
    if (s.is_ok() && !mine && verify_ && old->stats && old->stats->version >= 2) {
      // A kept block whose bytes changed since they were written must not be given new checksums.
      BlockLocation kept;
      kept.entry = src;
      kept.file = old->file;
      kept.sidecar = old->stats;
      kept.entry_index = i;
      kept.field = static_cast<int>(i / static_cast<size_t>(idx_->blocks_per_file));
      kept.time = key.first;
      kept.block = key.second + i % static_cast<size_t>(idx_->blocks_per_file);
      s = check_payload(kept, buf);
    }
    uint64_t* sums = checksums.data() + i * parts;
    stats::payload_checksums(buf, sub_block_bits_, sums);
    // The checksums of a block written here were taken when it was encoded: the log's bytes must match them.
    if (s.is_ok() && mine && p.checksums[i].size() == parts && !std::equal(sums, sums + parts, p.checksums[i].begin()))
      s = corrupt("checksum mismatch in " + p.log_path +
                  ": a block read back from the write log differs from "
                  "the block written (damaged storage)");
    if (s.is_ok()) s = out.write_at(end, buf);
    entries[i] = {end, src.size, src.flags};
    end += src.size;
  }
  std::vector<std::byte> header;
  format::serialize_header_table(entries, header);
  if (s.is_ok()) s = out.write_at(0, header);
  if (s.is_ok()) s = write_stats(p, old, entries, end, header, checksums);
  if (s.is_ok() && durable_) s = out.sync();
  if (s.is_ok()) s = out.close();
  if (s.is_ok())
    p.ready_path = tmp;
  else
    (void)io::remove_path(tmp);
  (void)io::remove_path(p.log_path);
  return s;
}

Status DataFiles::write_stats(Pending& p, Stored* old, const std::vector<format::BlockEntry>& entries,
                              uint64_t file_size, std::span<const std::byte> header,
                              const std::vector<uint64_t>& checksums) {
  stats::StatsTable t;
  t.checksums = checksums;
  t.data_file_size = file_size;
  t.header_crc = stats::crc32_of(header);
  t.sub_block_bits = sub_block_bits_;
  t.blocks_per_file = idx_->blocks_per_file;
  t.components = components();
  t.entries.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].present()) continue;  // count 0: missing
    if (p.entries[i].present()) {
      if (p.stats[i])
        t.entries[i] = *p.stats[i];
      else
        t.entries[i].block.count = stats::kUnknown;
    } else if (old && old->stats_loaded && old->stats && !old->stats->entries.empty()) {
      t.entries[i] = old->stats->entries[i];
      if (old->stats->sub_block_bits != sub_block_bits_)
        t.entries[i].parts.clear();  // other sub-block bits: parts unknown
    } else {
      t.entries[i].block.count = stats::kUnknown;  // copied from the old file without known statistics
    }
  }
  const auto bytes = stats::serialize_stats_file(t);
  p.stats_ready_path = p.final_path + stats::kStatsSuffix + ".tmp." + std::to_string(::getpid());
  HZIO_ASSIGN_OR_RETURN(io::File f, io::File::open(p.stats_ready_path, io::File::Mode::kCreate, fault_seam_));
  HZIO_RETURN_IF_ERROR(f.write_at(0, bytes));
  if (durable_) HZIO_RETURN_IF_ERROR(f.sync());
  return f.close();
}

Status DataFiles::finish(const Key& key, Pending& p) {
  Status written = write_out(p);
  if (written.is_ok()) written = wait_written(p);
  if (!written.is_ok()) {
    (void)io::remove_path(p.log_path);
    return written;
  }
  // A corrupt old file fails the commit: replacing it would silently drop the blocks not rewritten.
  HZIO_ASSIGN_OR_RETURN(Stored * prior, stored(key, nullptr));
  bool needs_old = false;
  if (prior && prior->exists) {
    (void)load_stats(*prior, nullptr, true);  // a malformed sidecar only means the old blocks' stats are unknown
    for (size_t i = 0; i < p.entries.size(); ++i) needs_old |= prior->entries[i].present() && !p.entries[i].present();
  }
  if (needs_old && !prior->header_error.is_ok()) {  // the old blocks' places are not to be trusted
    (void)io::remove_path(p.log_path);
    return prior->header_error;
  }
  if (!p.canonical || needs_old) return rebuild(key, p, prior);
  std::vector<std::byte> header;
  format::serialize_header_table(p.entries, header);
  const size_t parts = stats::checksum_parts(sub_block_bits_);
  std::vector<uint64_t> checksums(p.entries.size() * parts);
  for (size_t i = 0; i < p.entries.size(); ++i) {
    if (!p.entries[i].present()) continue;
    if (p.checksums[i].size() != parts) {
      (void)io::remove_path(p.log_path);
      return internal_error("no checksums for an entry of " + p.log_path);
    }
    std::copy(p.checksums[i].begin(), p.checksums[i].end(), checksums.begin() + static_cast<ptrdiff_t>(i * parts));
  }
  Status s = p.log->write_at(0, header);
  if (s.is_ok() && p.direct) s = p.log->truncate(p.end);  // drop the last page's padding
  if (s.is_ok()) s = write_stats(p, prior, p.entries, p.end, header, checksums);
  if (s.is_ok() && durable_) s = p.log->sync();
  if (s.is_ok())
    p.ready_path = p.log_path;
  else
    (void)io::remove_path(p.log_path);
  return s;
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
      remove_pending_files();
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
    // The old sidecar is put aside, not replaced, until the data file is in place: if that rename
    // fails, the old file gets its own sidecar back, never statistics and checksums of data it does not
    // hold (docs/design/commit.md "Publishing a data file").
    const std::string sidecar = p->final_path + stats::kStatsSuffix;
    const std::string aside = sidecar + ".old." + std::to_string(::getpid());
    bool put_aside = false;
    Status s = first_error;
    if (s.is_ok() && !p->stats_ready_path.empty() && io::file_exists(sidecar)) {
      s = io::rename_file(sidecar, aside, false, nullptr, fault_seam_.get());
      put_aside = s.is_ok();
    }
    bool placed = false;
    if (s.is_ok() && !p->stats_ready_path.empty()) {
      s = io::rename_file(p->stats_ready_path, sidecar, false, nullptr, fault_seam_.get());
      placed = s.is_ok();
    }
    bool renamed = false;  // the data file is in place, even when the folder's fsync after it failed
    if (s.is_ok()) s = io::rename_file(p->ready_path, p->final_path, durable_, &renamed, fault_seam_.get());
    if (!renamed && first_error.is_ok()) {
      // Nothing of this file was published: the old sidecar (or none) describes the old file again.
      if (put_aside)
        (void)io::rename_file(aside, sidecar, false);
      else if (placed)
        (void)io::remove_path(sidecar);
    } else if (put_aside) {
      (void)io::remove_path(aside);
    }
    if (!s.is_ok()) first_error = s;
    if (!first_error.is_ok()) {
      (void)io::remove_path(p->ready_path);
      if (!p->stats_ready_path.empty()) (void)io::remove_path(p->stats_ready_path);
    }
  }
  pending_.clear();
  generation_ += 1;
  stored_.clear();
  opened_ahead_.clear();
  whole_sidecars_.clear();
  return first_error;
}

void DataFiles::abort() {
  std::lock_guard lock(mutex_);
  remove_pending_files();
}

void DataFiles::remove_pending_files() {
  for (auto& [key, p] : pending_) {
    if (p->in_flight.valid()) (void)p->in_flight.get();  // the writer thread must not outlive its log
    (void)io::remove_path(p->log_path);
    if (!p->ready_path.empty()) (void)io::remove_path(p->ready_path);
    if (!p->stats_ready_path.empty()) (void)io::remove_path(p->stats_ready_path);
  }
  pending_.clear();
}

std::vector<int64_t> DataFiles::pending_times() const {
  std::vector<int64_t> out;
  for (const auto& [key, p] : pending_)
    if (out.empty() || out.back() != key.first) out.push_back(key.first);
  return out;
}

std::vector<int64_t> DataFiles::pending_files(int64_t time) const {
  std::vector<int64_t> out;
  for (const auto& [key, p] : pending_)
    if (key.first == time) out.push_back(static_cast<int64_t>(key.second));
  return out;
}

Status DataFiles::remove_stale(int64_t time, const std::vector<int64_t>& written) {
  for (int64_t first = 0; first < idx_->total_blocks(); ++first) {
    if (format::first_block_of_file(*idx_, first) != first) continue;
    if (std::find(written.begin(), written.end(), first) != written.end()) continue;
    HZIO_ASSIGN_OR_RETURN(std::string path, format::data_file_path(*idx_, idx_dir_, first, time));
    if (io::file_exists(path)) HZIO_RETURN_IF_ERROR(io::remove_path(path));
    if (io::file_exists(path + stats::kStatsSuffix)) HZIO_RETURN_IF_ERROR(io::remove_path(path + stats::kStatsSuffix));
  }
  return Status::ok();
}

void DataFiles::forget_stored() {
  std::lock_guard lock(mutex_);
  generation_ += 1;
  stored_.clear();
  opened_ahead_.clear();
  read_ahead_.reset();
  whole_sidecars_.clear();
}

}  // namespace hzio::core
