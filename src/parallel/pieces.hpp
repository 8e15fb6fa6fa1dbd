// Restructuring: a rank's box cut into per-block pieces (a dense sub-grid of the block's samples), or a
// whole HZ-encoded block when the box holds all of it; and the aggregator side that assembles pieces
// into blocks and writes them. Layer: parallel (no MPI here).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dataset_impl.hpp"
#include "hzio/write_report.hpp"
#include "parallel/write_plan.hpp"

namespace hzio::parallel {

// Fixed-size header of one record in an exchange buffer; `bytes` of sample data follow, padded to 8.
struct PieceHeader {
  int32_t field = 0;
  int32_t whole = 0;  // 1: the whole block, already in the field's layout; 0: a dense sub-grid
  int64_t time = 0;
  uint64_t block = 0;
  int64_t lo[3] = {0, 0, 0};  // index range of the sub-grid in the block grid (x first)
  int64_t hi[3] = {0, 0, 0};
  uint64_t bytes = 0;
  uint64_t stats_bytes = 0;  // statistics after the (padded) samples: whole blocks of raw fields only
};

struct Record {
  PieceHeader header;
  const std::byte* data = nullptr;
  const std::byte* stats = nullptr;  // header.stats_bytes of serialized stats::BlockStats, or nullptr
};

// Per-rank seconds and per-level counters of one flush.
struct FlushTimes {
  PhaseTimes phases;
  std::vector<double> level_hz, level_write;
  std::vector<int64_t> level_blocks, level_bytes;
  int64_t file_bytes = 0;
};

// Local. Appends the record for the samples of `block` inside the staged array `data` (covering `box`).
// Whole blocks are HZ-encoded here with the core kernel; a raw field's whole block also gets its
// statistics here, while it is still in this core's cache (on the aggregator it would come from
// memory again). `times` gets restructure, hz and stats seconds.
// Writes exactly record_bytes(...) bytes at `out`.
void write_record(const Dataset::Impl& ds, int field, int64_t time, const Box& box, const std::byte* data,
                  uint64_t block, std::byte* out, FlushTimes& times);

// Local. The bytes append_record will add for (box, block): lets the send buffer be sized once.
size_t record_bytes(const Dataset::Impl& ds, int field, const Box& box, uint64_t block);

// Local. Splits an exchange buffer into records. Errors: kInternal on a malformed buffer.
Status parse_records(std::span<const std::byte> buffer, std::vector<Record>& out);

// Local. Assembles the chunk's blocks from `records` (merging with stored data where pieces do not
// cover a block), compresses them on the pool and appends them to the data file in entry order.
Status write_chunk(Dataset::Impl& ds, const Chunk& chunk, const std::vector<Record>& records, FlushTimes& times);

}  // namespace hzio::parallel
