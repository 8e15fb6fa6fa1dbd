// Records, what a collective write moves: a rank's box cut into per-block pieces (a dense sub-grid of
// the block's samples) or whole HZ-ordered blocks, each a RecordHeader and its samples; and the
// aggregator side that assembles them into blocks for the block writer. Layer: parallel (no MPI here).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/block_writer.hpp"
#include "core/dataset_parts.hpp"
#include "core/write_tally.hpp"
#include "hzio/write_report.hpp"
#include "parallel/write_plan.hpp"

namespace hzio::parallel {

// Fixed-size header of one record in an exchange buffer; `bytes` of sample data follow, padded to 8, then
// `stats_bytes` of statistics (a detached record has the statistics right after the header).
struct RecordHeader {
  int32_t field = 0;
  int32_t whole = 0;  // 1: the whole block, already in the field's layout; 0: a dense sub-grid
  int64_t time = 0;
  uint64_t block = 0;
  int64_t lo[3] = {0, 0, 0};  // index range of the sub-grid in the block grid (x first)
  int64_t hi[3] = {0, 0, 0};
  uint64_t bytes = 0;
  uint64_t stats_bytes = 0;  // statistics after the (padded) samples: whole blocks of raw fields only
  int32_t detached = 0;      // 1: the samples travel on their own (see RecordShape); the stats follow the header
  int32_t unused = 0;
};

// The parts of the record for (box, block). A detached record (a whole block of at least
// kDetachedBlockBytes of a raw field, the only record of its block in a round) is sent as its header and
// statistics in the bulk message and its samples as a message of their own, which the aggregator
// receives straight into the block's place in its data file's direct buffer: no copy after the exchange.
// Smaller blocks stay in the bulk message: a message per block would cost more than the copy it saves
// (bench/write_bench.py, several block sizes).
constexpr uint64_t kDetachedBlockBytes = uint64_t{64} << 10;

struct RecordShape {
  bool whole = false;
  uint64_t samples = 0;  // sample bytes (unpadded)
  uint64_t stats = 0;    // statistics bytes (whole blocks of raw fields)
  uint64_t padded() const { return (samples + 7) & ~uint64_t{7}; }
  uint64_t bytes() const { return sizeof(RecordHeader) + padded() + stats; }  // attached: one contiguous record
  uint64_t bulk_bytes(bool detached) const { return detached ? sizeof(RecordHeader) + stats : bytes(); }
};

struct Record {
  RecordHeader header;
  const std::byte* data = nullptr;
  const std::byte* stats = nullptr;  // header.stats_bytes of serialized stats::BlockStats, or nullptr
};

// Local. Writes the record for the samples of `block` inside the staged array `data` (covering `box`).
// Whole blocks are HZ-ordered here with the core kernel; a raw field's whole block also gets its
// statistics here, while it is still in this core's cache (on the aggregator it would come from
// memory again). `tally` gets restructure, hz and stats seconds.
// With `samples` null, writes the whole record (shape.bytes()) at `out`. Otherwise the record is
// detached (whole blocks only): header and statistics (shape.bulk_bytes(true)) at `out`, the encoded
// block (exactly shape.samples bytes, no padding) at `samples`.
void write_record(core::DatasetParts& ds, int field, int64_t time, const Box& box, const std::byte* data,
                  uint64_t block, std::byte* out, std::byte* samples, core::WriteTally& tally);

// Local. The parts of the record for (box, block): lets the exchange buffers be sized once.
RecordShape record_shape(const core::DatasetParts& ds, int field, const Box& box, uint64_t block);

// Local. Splits a bulk message into records; a detached record's data pointer is left null for the
// caller to set. Errors: kInternal on a malformed buffer.
Status parse_records(std::span<const std::byte> buffer, std::vector<Record>& out);

// The file space of the raw blocks of one chunk, reserved (in entry order) before its records arrive, so
// that detached blocks can be received straight into their data file's direct buffer.
struct ChunkSlots {
  std::vector<int64_t> entries;                // ascending: field * blocks_per_file + slot
  std::vector<core::BlockWriter::Slot> slots;  // per entry: the raw block's reserved (and buffered) place
  // The buffered place of `entry`, or null (not reserved, or not buffered).
  std::byte* place(int64_t entry) const;
};

// Local. Reserves the raw blocks among `entries` (ascending, every entry that will get a record).
Status reserve_chunk(core::DatasetParts& ds, const Chunk& chunk, std::vector<int64_t> entries, ChunkSlots& slots);

// Local. Assembles the chunk's blocks from `records` (merging with stored data where pieces do not
// cover a block; a detached record received into its buffered place needs nothing), compresses them on
// the pool and appends them to the data file in entry order. `slots` must come from reserve_chunk for
// exactly the entries the records name.
Status write_chunk(core::DatasetParts& ds, const Chunk& chunk, const std::vector<Record>& records,
                   const ChunkSlots& slots, core::WriteTally& tally);

}  // namespace hzio::parallel
