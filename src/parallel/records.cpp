// Records: cutting staged boxes per block at the source, assembling blocks on the aggregator
// (docs/guide/parallel-io.md "Restructure" and "Aggregate").
#include "parallel/records.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "core/block_writer.hpp"
#include "format/file_name.hpp"
#include "hzorder/block_copy.hpp"
#include "stats/block_stats.hpp"
#include "stats/stats_file.hpp"
#include "util/clock.hpp"

namespace hzio::parallel {
namespace {

int64_t range_count(const Point& lo, const Point& hi) { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }

// The sub-grid of a block's grid (points p0 + i * delta) whose points lie in `box`, as index ranges.
bool grid_range(const hzorder::Run& grid, const Box& box, Point& lo, Point& hi) {
  return hzorder::run_range_in_box(grid, box, lo, hi);
}

void gather_subgrid(const hzorder::Run& g, const Point& lo, const Point& hi, const Box& box, const std::byte* data,
                    size_t sb, std::byte* out) {
  const int64_t nx = box.extent(0), ny = box.extent(1);
  for (int64_t z = lo[2]; z < hi[2]; ++z)
    for (int64_t y = lo[1]; y < hi[1]; ++y) {
      const int64_t pz = g.p0[2] + z * g.delta[2] - box.lo[2], py = g.p0[1] + y * g.delta[1] - box.lo[1];
      const std::byte* row = data + static_cast<size_t>((pz * ny + py) * nx + g.p0[0] - box.lo[0]) * sb;
      if (g.delta[0] == 1) {
        const size_t n = static_cast<size_t>(hi[0] - lo[0]) * sb;
        std::memcpy(out, row + static_cast<size_t>(lo[0]) * sb, n);
        out += n;
      } else {
        for (int64_t x = lo[0]; x < hi[0]; ++x, out += sb)
          std::memcpy(out, row + static_cast<size_t>(x * g.delta[0]) * sb, sb);
      }
    }
}

// Statistics travel with a whole block as the block's and then each part's range record, in the
// sidecar's form (stats/stats_file.hpp).
uint64_t stats_wire_bytes(const core::DatasetParts& ds, int field) {
  const auto& fc = ds.coding[field];
  if (fc.codec.kind != codec::CodecKind::kRaw) return 0;  // lossy codecs need the stored values' stats
  const uint64_t ranges = 1 + (ds.files.sub_block_bits() > 0 ? uint64_t{1} << ds.files.sub_block_bits() : 0);
  return ranges * stats::range_record_bytes(fc.dtype.components);
}

std::byte* put_record(std::byte* out, const RecordHeader& h) {
  std::memcpy(out, &h, sizeof h);
  const uint64_t padded = (h.bytes + 7) & ~uint64_t{7};
  if (padded > h.bytes) std::memset(out + sizeof h + h.bytes, 0, padded - h.bytes);  // deterministic padding
  return out + sizeof h;
}

}  // namespace

namespace {

// A whole block: HZ-ordered here (into `samples` when detached, else after the header at `out`), with
// its statistics after the header or the padded samples.
void write_whole(core::DatasetParts& ds, RecordHeader h, const Box& box, const std::byte* data, bool sparse,
                 std::byte* out, std::byte* samples, core::WriteTally& tally) {
  const auto& fc = ds.coding[h.field];
  std::byte* dst = nullptr;
  std::byte* stats_at = nullptr;
  if (samples) {
    std::memcpy(out, &h, sizeof h);
    dst = samples;
    stats_at = out + sizeof h;  // detached samples are exactly h.bytes: no padding after them
  } else {
    dst = put_record(out, h);
    stats_at = dst + ((h.bytes + 7) & ~uint64_t{7});
  }
  double hz = 0;
  {
    util::ScopedSeconds timer(hz);
    if (sparse) hzorder::fill_samples(dst, static_cast<size_t>(ds.idx.samples_per_block()), fc.dtype, fc.default_value);
    const hzorder::ArrayView src{const_cast<std::byte*>(data),
                                 {box.lo, {1, 1, 1}, {box.extent(0), box.extent(1), box.extent(2)}},
                                 fc.dtype.bytes()};
    for (const auto& run : ds.space.block_runs(h.block, fc.layout))
      hzorder::copy_run(run, box, dst, src, hzorder::Direction::kArrayToBlock);
  }
  tally.add_hz(ds.space.level_of_block(h.block), hz);
  if (h.stats_bytes == 0) return;
  util::ScopedSeconds timer(tally.phases.stats);
  const stats::BlockStats st = ds.block_writer().statistics(h.field, h.block, std::span<const std::byte>(dst, h.bytes));
  const int comps = fc.dtype.components;
  std::byte* at = stats::write_range_record(stats_at, st.block, comps);
  for (const auto& part : st.parts) at = stats::write_range_record(at, part, comps);
}

}  // namespace

void write_record(core::DatasetParts& ds, int field, int64_t time, const Box& box, const std::byte* data,
                  uint64_t block, std::byte* out, std::byte* samples, core::WriteTally& tally) {
  const auto& fc = ds.coding[field];
  const hzorder::Run g = core::block_grid(ds.space, block);
  Point lo, hi, dlo, dhi;
  grid_range(g, box, lo, hi);
  grid_range(g, ds.idx.box, dlo, dhi);
  RecordHeader h;
  h.field = field;
  h.time = time;
  h.block = block;
  if (lo == dlo && hi == dhi) {  // this rank holds every real sample of the block: HZ-order it here
    h.whole = 1;
    h.bytes = ds.block_bytes(field);
    h.stats_bytes = stats_wire_bytes(ds, field);
    h.detached = samples != nullptr;
    write_whole(ds, h, box, data, range_count(dlo, dhi) < ds.idx.samples_per_block(), out, samples, tally);
    return;
  }
  util::ScopedSeconds timer(tally.phases.restructure);
  for (int a = 0; a < 3; ++a) {
    h.lo[a] = lo[a];
    h.hi[a] = hi[a];
  }
  h.bytes = static_cast<uint64_t>(range_count(lo, hi)) * fc.dtype.bytes();
  gather_subgrid(g, lo, hi, box, data, fc.dtype.bytes(), put_record(out, h));
}

RecordShape record_shape(const core::DatasetParts& ds, int field, const Box& box, uint64_t block) {
  const hzorder::Run g = core::block_grid(ds.space, block);
  Point lo, hi, dlo, dhi;
  grid_range(g, box, lo, hi);
  grid_range(g, ds.idx.box, dlo, dhi);
  RecordShape s;
  s.whole = lo == dlo && hi == dhi;
  s.samples =
      s.whole ? ds.block_bytes(field) : static_cast<uint64_t>(range_count(lo, hi)) * ds.coding[field].dtype.bytes();
  s.stats = s.whole ? stats_wire_bytes(ds, field) : 0;
  return s;
}

Status parse_records(std::span<const std::byte> buffer, std::vector<Record>& out) {
  size_t at = 0;
  while (at < buffer.size()) {
    if (buffer.size() - at < sizeof(RecordHeader)) return internal_error("truncated record header in exchange buffer");
    Record r;
    std::memcpy(&r.header, buffer.data() + at, sizeof(RecordHeader));
    at += sizeof(RecordHeader);
    const uint64_t padded = r.header.detached ? 0 : (r.header.bytes + 7) & ~uint64_t{7};
    if (padded > buffer.size() - at || r.header.stats_bytes > buffer.size() - at - padded) {
      return internal_error("truncated record data in exchange buffer");
    }
    if (!r.header.detached) r.data = buffer.data() + at;
    at += padded;
    if (r.header.stats_bytes > 0) r.stats = buffer.data() + at;
    at += r.header.stats_bytes;
    out.push_back(r);
  }
  return Status::ok();
}

namespace {

// The last record of a block holding all of it: records before it are overwritten by it (a rank may write
// a block twice in one flush; records of one rank arrive in the order it staged them). -1 if none.
int last_whole(const std::vector<const Record*>& recs) {
  for (size_t i = recs.size(); i-- > 0;)
    if (recs[i]->header.whole) return static_cast<int>(i);
  return -1;
}

bool ranges_overlap(const RecordHeader& a, const RecordHeader& b) {
  for (int k = 0; k < 3; ++k)
    if (a.hi[k] <= b.lo[k] || b.hi[k] <= a.lo[k]) return false;
  return true;
}

// Builds one block (decoded, field layout) from its records into `out`; starts from the stored block
// (or the default value) when the records do not cover every real sample.
Status assemble(core::DatasetParts& ds, const core::BlockWriter& writer, int field, int64_t time, uint64_t block,
                const std::vector<const Record*>& recs, std::span<std::byte> out) {
  const auto& fc = ds.coding[field];
  const int whole = last_whole(recs);
  const hzorder::Run g = core::block_grid(ds.space, block);
  if (whole >= 0) {
    std::memcpy(out.data(), recs[static_cast<size_t>(whole)]->data, out.size());
  } else {
    Point dlo, dhi;
    grid_range(g, ds.idx.box, dlo, dhi);
    // Pieces of different ranks never overlap; one rank's may (two writes of one region in a flush),
    // and then their sum says nothing about coverage: merge with the stored block to be safe.
    int64_t covered = 0;
    bool overlap = false;
    for (size_t i = 0; i < recs.size(); ++i) {
      const auto& h = recs[i]->header;
      covered += range_count({h.lo[0], h.lo[1], h.lo[2]}, {h.hi[0], h.hi[1], h.hi[2]});
      for (size_t j = 0; j < i && !overlap; ++j) overlap = ranges_overlap(h, recs[j]->header);
    }
    if (overlap || covered < range_count(dlo, dhi)) {
      HZIO_RETURN_IF_ERROR(writer.base(field, time, block, out));
    } else {
      hzorder::fill_samples(out.data(), static_cast<size_t>(ds.idx.samples_per_block()), fc.dtype, fc.default_value);
    }
  }
  for (size_t i = static_cast<size_t>(whole + 1); i < recs.size(); ++i) {
    const auto& h = recs[i]->header;
    SampleGrid sub;
    Box clip;
    for (int a = 0; a < 3; ++a) {
      sub.origin[a] = g.p0[a] + h.lo[a] * g.delta[a];
      sub.spacing[a] = g.delta[a];
      sub.count[a] = h.hi[a] - h.lo[a];
      clip.lo[a] = sub.origin[a];
      clip.hi[a] = sub.origin[a] + (sub.count[a] - 1) * g.delta[a] + 1;
    }
    const hzorder::ArrayView src{const_cast<std::byte*>(recs[i]->data), sub, fc.dtype.bytes()};
    for (const auto& run : ds.space.block_runs(block, fc.layout))
      hzorder::copy_run(run, clip, out.data(), src, hzorder::Direction::kArrayToBlock);
  }
  return Status::ok();
}

// The statistics a whole raw block carried from its source, if they match this dataset's sub-block bits.
std::optional<stats::BlockStats> carried_stats(const core::DatasetParts& ds, int field, const Record& r) {
  if (!r.stats || r.header.stats_bytes != stats_wire_bytes(ds, field)) return std::nullopt;
  const int comps = ds.coding[field].dtype.components;
  stats::BlockStats st;
  const std::byte* at = stats::read_range_record(r.stats, st.block, comps);
  st.parts.resize(ds.files.sub_block_bits() > 0 ? size_t{1} << ds.files.sub_block_bits() : 0);
  for (auto& part : st.parts) at = stats::read_range_record(at, part, comps);
  return st;
}

}  // namespace

std::byte* ChunkSlots::place(int64_t entry) const {
  const auto it = std::lower_bound(entries.begin(), entries.end(), entry);
  return it != entries.end() && *it == entry ? slots[static_cast<size_t>(it - entries.begin())].buffered : nullptr;
}

namespace {

// The block records of a chunk's entries, without their samples yet.
std::vector<core::BlockToWrite> chunk_records(const core::DatasetParts& ds, const Chunk& chunk,
                                              const std::vector<int64_t>& entries) {
  const int64_t bpf = ds.idx.blocks_per_file;
  std::vector<core::BlockToWrite> records;
  for (int64_t e : entries) {
    records.push_back({.field = static_cast<int>(e / bpf),
                       .time = chunk.time,
                       .block = static_cast<uint64_t>(chunk.first_block + e % bpf)});
  }
  return records;
}

}  // namespace

Status reserve_chunk(core::DatasetParts& ds, const Chunk& chunk, std::vector<int64_t> entries, ChunkSlots& slots) {
  slots.entries = std::move(entries);
  const std::vector<core::BlockToWrite> records = chunk_records(ds, chunk, slots.entries);
  HZIO_ASSIGN_OR_RETURN(slots.slots, ds.block_writer().reserve(records));
  return Status::ok();
}

Status write_chunk(core::DatasetParts& ds, const Chunk& chunk, const std::vector<Record>& records,
                   const ChunkSlots& slots, core::WriteTally& tally) {
  std::map<int64_t, std::vector<const Record*>> by_entry;
  for (const Record& r : records) {
    if (r.header.time != chunk.time ||
        format::first_block_of_file(ds.idx, static_cast<int64_t>(r.header.block)) != chunk.first_block)
      continue;
    const int64_t e = format::entry_in_file(ds.idx, r.header.field, r.header.block);
    if (e >= chunk.entry_begin && e < chunk.entry_end) by_entry[e].push_back(&r);
  }
  std::vector<int64_t> entries;
  for (const auto& [e, v] : by_entry) entries.push_back(e);
  if (entries != slots.entries) return internal_error("a chunk's records do not match the blocks reserved for it");
  core::BlockWriter writer = ds.block_writer();
  std::vector<core::BlockToWrite> blocks = chunk_records(ds, chunk, entries);
  for (core::BlockToWrite& b : blocks) {
    const auto& recs = by_entry[format::entry_in_file(ds.idx, b.field, b.block)];
    if (last_whole(recs) == static_cast<int>(recs.size()) - 1) {  // the newest record is the whole block
      b.samples = recs.back()->data;
      b.stats = carried_stats(ds, b.field, *recs.back());
    } else {
      b.make = [&ds, &writer, &recs, &b](std::span<std::byte> out) {
        return assemble(ds, writer, b.field, b.time, b.block, recs, out);
      };
    }
  }
  HZIO_RETURN_IF_ERROR(writer.write(blocks, slots.slots));
  for (const core::BlockToWrite& b : blocks) tally.add_block(ds.space.level_of_block(b.block), b);
  return Status::ok();
}

}  // namespace hzio::parallel
