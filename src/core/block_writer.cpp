// The block write pipeline (block_writer.hpp).
#include "core/block_writer.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "hzorder/block_copy.hpp"
#include "util/clock.hpp"
#include "util/fork_guard.hpp"

namespace hzio::core {
namespace {

// The payload and scratch vectors of earlier batches, kept for the next ones (process-wide, at most
// kBytes of capacity): fresh memory is mapped a page at a time on first touch, which costs a fast codec
// as much as the compression itself (bench/codec_bench.py, lz4: page faults per MiB). Each kind is kept
// apart: a scratch vector (a block's bytes) taken as a payload is smaller than lz4's bound, and the
// codec's resize moved it to new memory (page faults and a copy, for half the blocks of a write).
enum class Kept { kScratch, kPayload };

struct KeptVectors {
  static constexpr size_t kBytes = size_t{64} << 20;
  std::mutex mutex;
  std::vector<std::vector<std::byte>> vectors[2];
  size_t bytes = 0;
};

KeptVectors& kept_vectors() {
  static auto* kept = [] {
    auto* made = new KeptVectors;  // never destroyed: writers may run while the process exits
    util::hold_across_fork(made->mutex);
    return made;
  }();
  return *kept;
}

// `n` vectors of one kind: kept ones where there are, else empty ones. Kept payloads keep their sizes
// and bytes, so that a codec's resize to its bound fills only what lies beyond (lz4 zero-filled a whole
// block's bound before compressing it: bench/codec_bench.py); a codec writes every byte it keeps.
// Scratch vectors are emptied first, since a block's samples outside the dataset's box are left as
// resize() zero-fills them.
std::vector<std::vector<std::byte>> take_vectors(size_t n, Kept kind) {
  std::vector<std::vector<std::byte>> out(n);
  KeptVectors& kept = kept_vectors();
  auto& list = kept.vectors[static_cast<size_t>(kind)];
  std::lock_guard lock(kept.mutex);
  for (size_t i = 0; i < n && !list.empty(); ++i) {
    out[i] = std::move(list.back());
    list.pop_back();
    kept.bytes -= out[i].capacity();
    if (kind == Kept::kScratch) out[i].clear();
  }
  return out;
}

void give_back(std::vector<std::vector<std::byte>>& vectors, Kept kind) {
  KeptVectors& kept = kept_vectors();
  std::lock_guard lock(kept.mutex);
  for (auto& v : vectors) {
    if (v.capacity() == 0 || kept.bytes + v.capacity() > KeptVectors::kBytes) continue;
    kept.bytes += v.capacity();
    kept.vectors[static_cast<size_t>(kind)].push_back(std::move(v));
  }
}

// The encoded blocks a pool encodes at once before appending them: few enough (about 4 MiB of payloads)
// that the next ones are encoded into payload vectors still in cache. A batch's 128 payload vectors
// (32 MiB) were out of cache by their next use: lz4 into them ran at 0.75 x the library alone
// (bench/codec_bench.py).
size_t coded_chunk(size_t block_bytes, int threads) {
  const size_t per_chunk = (size_t{4} << 20) / std::max<size_t>(block_bytes, 1);
  return std::max<size_t>(size_t{2} * static_cast<size_t>(threads), per_chunk);
}

}  // namespace

BlockWriter::BlockWriter(const format::IdxFile& idx, const hzorder::HzSpace& space,
                         const std::vector<FieldCoding>& coding, DataFiles& files, util::ThreadPool& pool)
    : idx_(idx), space_(space), coding_(coding), files_(files), pool_(pool) {}

size_t BlockWriter::block_bytes(int field) const {
  return static_cast<size_t>(idx_.samples_per_block()) * coding_[static_cast<size_t>(field)].dtype.bytes();
}

Result<std::vector<BlockWriter::Slot>> BlockWriter::reserve(std::span<const BlockToWrite> records) {
  std::vector<Slot> slots(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const FieldCoding& fc = coding_[static_cast<size_t>(records[i].field)];
    if (fc.codec.kind != codec::CodecKind::kRaw) continue;
    const uint32_t flags = format::block_flags(static_cast<uint32_t>(fc.codec.kind), fc.layout);
    HZIO_ASSIGN_OR_RETURN(slots[i].where, files_.reserve(records[i].field, records[i].time, records[i].block,
                                                         block_bytes(records[i].field), flags));
    slots[i].reserved = true;
  }
  // Places in direct buffers are valid once every reservation of the batch is made.
  for (Slot& s : slots) {
    if (!s.reserved) continue;
    HZIO_ASSIGN_OR_RETURN(s.buffered, files_.buffered(s.where));
  }
  return slots;
}

Status BlockWriter::base(int field, int64_t time, uint64_t block, std::span<std::byte> out) const {
  const FieldCoding& fc = coding_[static_cast<size_t>(field)];
  HZIO_ASSIGN_OR_RETURN(auto where, files_.locate(field, time, block, nullptr));
  if (!where) {
    hzorder::fill_samples(out.data(), static_cast<size_t>(idx_.samples_per_block()), fc.dtype, fc.default_value);
    return Status::ok();
  }
  std::vector<std::byte> scratch;
  HZIO_ASSIGN_OR_RETURN(Layout layout, load_block(files_, *where, fc, space_, idx_.ndim, block, scratch, out, nullptr));
  if (layout != fc.layout) {  // stored in the other order: reorder into the field's
    const std::vector<std::byte> stored(out.begin(), out.end());
    convert_layout(space_, block, layout, stored, out, fc.dtype.bytes());
  }
  return Status::ok();
}

stats::BlockStats BlockWriter::statistics(int field, uint64_t block, std::span<const std::byte> samples) const {
  const FieldCoding& fc = coding_[static_cast<size_t>(field)];
  return stats::compute_block_stats(space_, block, fc.layout, samples, fc.dtype, idx_.box, files_.sub_block_bits());
}

Status BlockWriter::encode_one(BlockToWrite& r, const Slot& slot, std::byte*& buffered, std::vector<std::byte>& scratch,
                               std::vector<std::byte>& payload, uint32_t& flags) const {
  const FieldCoding& fc = coding_[static_cast<size_t>(r.field)];
  const size_t bytes = block_bytes(r.field);
  const bool raw = fc.codec.kind == codec::CodecKind::kRaw;
  buffered = raw ? slot.buffered : nullptr;
  const std::byte* data = r.samples;
  {
    // The block's samples: given, or made into the buffered place (or a buffer of their own).
    util::ScopedSeconds timer(r.make_seconds);
    if (!data) {
      std::byte* out = buffered;
      if (!out) {
        scratch.resize(bytes);
        out = scratch.data();
      }
      HZIO_RETURN_IF_ERROR(r.make(std::span<std::byte>(out, bytes)));
      data = out;
    } else if (buffered && data != buffered) {
      std::memcpy(buffered, data, bytes);
    }
  }
  const std::span<const std::byte> samples(data, bytes);
  if (raw) {
    {
      util::ScopedSeconds timer(r.stats_seconds);
      if (!r.stats) r.stats = statistics(r.field, r.block, samples);
      checksum(r, samples);
    }
    util::ScopedSeconds timer(r.write_seconds);
    if (!buffered) HZIO_RETURN_IF_ERROR(slot.where.file->write_at(slot.where.offset, samples));
    files_.finish_reserved(r.field, r.time, r.block, &*r.stats, r.checksums);
    r.stored_bytes = static_cast<int64_t>(bytes);
    return Status::ok();
  }
  {
    util::ScopedSeconds timer(r.compress_seconds);
    HZIO_ASSIGN_OR_RETURN(flags, encode_block(fc, space_, idx_.ndim, r.block, samples, payload));
  }
  util::ScopedSeconds timer(r.stats_seconds);
  r.stats = stats_as_stored(fc, space_, idx_.ndim, r.block, samples, payload, idx_.box, files_.sub_block_bits());
  checksum(r, payload);
  return Status::ok();
}

void BlockWriter::checksum(BlockToWrite& r, std::span<const std::byte> payload) const {
  r.checksums.resize(stats::checksum_parts(files_.sub_block_bits()));
  stats::payload_checksums(payload, files_.sub_block_bits(), r.checksums.data());
}

Status BlockWriter::write(std::span<BlockToWrite> records, std::span<const Slot> slots) {
  const size_t n = records.size();
  // Raw blocks all at once; the others (coded) a chunk at a time, each chunk appended before the next is
  // encoded into the same payload vectors.
  std::vector<size_t> raw_records, coded_records;
  size_t coded_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool is_raw = coding_[static_cast<size_t>(records[i].field)].codec.kind == codec::CodecKind::kRaw;
    (is_raw ? raw_records : coded_records).push_back(i);
    if (!is_raw) coded_bytes = std::max(coded_bytes, block_bytes(records[i].field));
  }
  const size_t chunk = std::min(coded_records.size(), coded_chunk(coded_bytes, pool_.size()));
  std::vector<std::vector<std::byte>> scratch = take_vectors(std::max(raw_records.size(), chunk), Kept::kScratch),
                                      payload = take_vectors(chunk, Kept::kPayload);
  struct GiveBack {
    std::vector<std::vector<std::byte>>& a;
    std::vector<std::vector<std::byte>>& b;
    ~GiveBack() {
      give_back(a, Kept::kScratch);
      give_back(b, Kept::kPayload);
    }
  } give_back_at_end{scratch, payload};
  std::vector<uint32_t> flags(n);
  std::vector<Status> errors(n);
  std::vector<std::byte*> buffered(n);
  std::vector<std::byte> no_payload;  // raw records have none
  pool_.parallel_for(raw_records.size(), [&](size_t j) {
    const size_t i = raw_records[j];
    errors[i] = encode_one(records[i], slots[i], buffered[i], scratch[j], no_payload, flags[i]);
  });
  // Buffered blocks go to their files before anything moves the direct buffers.
  for (const Status& e : errors) HZIO_RETURN_IF_ERROR(e);
  // The write-out's time is shared over the buffered blocks, for the write report.
  double write_out_seconds = 0;
  {
    util::ScopedSeconds timer(write_out_seconds);
    HZIO_RETURN_IF_ERROR(files_.write_out());
  }
  const auto in_buffer =
      std::count_if(buffered.begin(), buffered.end(), [](const std::byte* b) { return b != nullptr; });
  for (size_t i : raw_records) {
    if (buffered[i]) records[i].write_seconds += write_out_seconds / static_cast<double>(in_buffer);
  }
  for (size_t start = 0; start < coded_records.size(); start += chunk) {
    const size_t m = std::min(chunk, coded_records.size() - start);
    pool_.parallel_for(m, [&](size_t j) {
      const size_t i = coded_records[start + j];
      scratch[j].clear();  // as taken: emptied (see take_vectors)
      errors[i] = encode_one(records[i], slots[i], buffered[i], scratch[j], payload[j], flags[i]);
    });
    for (size_t j = 0; j < m; ++j) HZIO_RETURN_IF_ERROR(errors[coded_records[start + j]]);
    for (size_t j = 0; j < m; ++j) {  // in record order, as before
      const size_t i = coded_records[start + j];
      BlockToWrite& r = records[i];
      util::ScopedSeconds timer(r.write_seconds);
      HZIO_RETURN_IF_ERROR(files_.append(r.field, r.time, r.block, payload[j], flags[i], &*r.stats, r.checksums));
      r.stored_bytes = static_cast<int64_t>(payload[j].size());
    }
  }
  return Status::ok();
}

}  // namespace hzio::core
