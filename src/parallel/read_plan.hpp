// The plan of a collective read: the blocks every rank asked for, how they travel (each rank reads its
// own, or two-phase: one rank reads each data file and sends the blocks to the ranks that asked), and,
// for two-phase reads, which rank reads each file and which blocks go in which round. Pure computation,
// the same on every rank (no MPI here). Layer: parallel.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "format/idx_file.hpp"
#include "hzio/types.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio::parallel {

// One rank's read (what every rank learns from the all-gather). An empty request asks for nothing.
struct ReadRequest {
  int field = 0;
  int64_t time = 0;
  int level = 0;
  Box box;
  bool empty = true;
};

// A block of one field at one timestep.
struct BlockKey {
  int field = 0;
  int64_t time = 0;
  uint64_t block = 0;
  auto operator<=>(const BlockKey&) const = default;
};

// A data file: its timestep and its first block.
struct FileKey {
  int64_t time = 0;
  int64_t first_block = 0;
  auto operator<=>(const FileKey&) const = default;
};

struct ReadPlan {
  ReadMethod method = ReadMethod::kIndependent;  // never kAuto
  std::map<BlockKey, std::vector<int>> wanted;   // every block asked for -> the ranks asking, ascending
  int64_t asked = 0;                             // blocks asked for, summed over ranks
  // Two-phase reads only.
  std::map<FileKey, int> reader;              // data file -> the rank that reads it
  std::vector<std::vector<BlockKey>> rounds;  // the blocks each round moves, ascending
};

// Local. The data file holding `key`.
FileKey file_of(const format::IdxFile& idx, const BlockKey& key);

// Local, deterministic. The plan of the read `requests` (one per rank, in rank order). block_bytes[f]:
// decoded bytes of one block of field f. `one_node`: every rank shares one node's page cache. `budget`:
// the block bytes a reader may send in one round. `method`: as asked by the caller; kAuto picks
// two-phase only across nodes and when the requests overlap (docs/guide/parallel-io.md "Reads").
ReadPlan plan_read(const format::IdxFile& idx, const hzorder::HzSpace& space, const std::vector<ReadRequest>& requests,
                   const std::vector<int64_t>& block_bytes, bool one_node, size_t budget, ReadMethod method);

}  // namespace hzio::parallel
