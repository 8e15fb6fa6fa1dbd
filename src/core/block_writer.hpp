// The one block write pipeline of hzio: blocks bound for a data file, whole or merged, are given
// statistics, encoded and appended to the file's write log, for the one-process writer and the MPI
// aggregators alike (docs/design/write-path.md). Layer: core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/block_codec.hpp"
#include "core/data_files.hpp"
#include "format/idx_file.hpp"
#include "hzorder/hz_space.hpp"
#include "stats/block_stats.hpp"
#include "util/thread_pool.hpp"

namespace hzio::core {

// One block to write: its samples in the field's layout, given or made on demand, and what writing it
// cost (filled in by BlockWriter::write).
struct BlockToWrite {
  int field = 0;
  int64_t time = 0;
  uint64_t block = 0;
  // The samples, when they exist already (a whole block received, or held in memory). A raw block may
  // already sit in its buffered place (received there): then nothing is copied.
  const std::byte* samples = nullptr;
  // Otherwise the writer calls make(out) with room for the block (its buffered place when it has one), on
  // a pool thread. make may call BlockWriter::base first.
  std::function<Status(std::span<std::byte> out)> make;
  // Statistics computed where the samples were (nullopt: computed here).
  std::optional<stats::BlockStats> stats;

  // Filled in by BlockWriter::write: stats_seconds includes the checksums of the payload.
  double make_seconds = 0, compress_seconds = 0, stats_seconds = 0, write_seconds = 0;
  int64_t stored_bytes = 0;         // payload bytes in the file
  std::vector<uint64_t> checksums;  // of the payload (stats::payload_checksums)
};

class BlockWriter {
 public:
  // The writer uses, and does not own, the dataset's parts; they must outlive it.
  BlockWriter(const format::IdxFile& idx, const hzorder::HzSpace& space, const std::vector<FieldCoding>& coding,
              DataFiles& files, util::ThreadPool& pool);

  // Local. Reserves file space, in the order given, for the raw blocks among `blocks` (field, time,
  // block): their sizes are known, so that they can be written by several threads, or received, straight
  // into their places. Call in canonical (field, slot) order per file, before write(). Errors: kIo.
  struct Slot {
    DataFiles::Reserved where;
    std::byte* buffered = nullptr;  // the block's place in its log's direct buffer, or null
    bool reserved = false;
  };
  Result<std::vector<Slot>> reserve(std::span<const BlockToWrite> records);

  // Local. Writes the records (after reserve(), with its slots): makes each block on the pool, takes or
  // computes its statistics, encodes it (raw blocks straight into their places), writes the buffered bytes
  // out and appends the others in order. Fills each record's seconds and stored bytes. Errors: kIo,
  // kCorrupt (a stored block a record merges with), any error of make.
  Status write(std::span<BlockToWrite> records, std::span<const Slot> slots);

  // Local, thread-safe. Fills `out` (block_bytes(field)) with the stored block (field, time, block) in the
  // field's layout, or with the field's default value when it is missing: the base a partial block is
  // merged into. Errors: kCorrupt, kIo.
  Status base(int field, int64_t time, uint64_t block, std::span<std::byte> out) const;

  // Local, thread-safe. The statistics of a raw block's samples (field layout).
  stats::BlockStats statistics(int field, uint64_t block, std::span<const std::byte> samples) const;

  size_t block_bytes(int field) const;

 private:
  // One record on a pool thread: samples, statistics, and the encoding (raw blocks to their place,
  // others into `payload` with their `flags`). `buffered` gets the block's buffered place, or null.
  Status encode_one(BlockToWrite& r, const Slot& slot, std::byte*& buffered, std::vector<std::byte>& scratch,
                    std::vector<std::byte>& payload, uint32_t& flags) const;

  // Fills r.checksums from the payload as stored.
  void checksum(BlockToWrite& r, std::span<const std::byte> payload) const;

  const format::IdxFile& idx_;
  const hzorder::HzSpace& space_;
  const std::vector<FieldCoding>& coding_;
  DataFiles& files_;
  util::ThreadPool& pool_;
};

}  // namespace hzio::core
