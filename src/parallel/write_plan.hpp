// The schedule of a collective write: which rank aggregates each data file, how files split into
// chunks under the memory budget, and which chunks go in which round. Pure computation, the same on
// every rank (no MPI here). Layer: parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "format/idx_file.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio::parallel {

// One box staged by one rank (what every rank learns from the all-gather).
struct BoxInfo {
  int rank = 0;
  int field = 0;
  int64_t time = 0;
  Box box;
};

// A contiguous range of header entries [entry_begin, entry_end) of one data file, aggregated by one rank.
struct Chunk {
  int64_t time = 0;
  int64_t first_block = 0;  // names the file
  int64_t entry_begin = 0;  // entry = field * blocks_per_file + slot
  int64_t entry_end = 0;
  int aggregator = 0;
  int64_t bytes = 0;  // decoded block bytes the aggregator holds for it
};

struct WritePlan {
  std::vector<Chunk> chunks;
  std::vector<std::vector<int>> rounds;  // chunk indices of each round
  int aggregators = 0;                   // distinct aggregator ranks
  int64_t files = 0;
  // HzSpace::blocks_of_box of each box (all levels), in input order; the fields of one box share a list.
  std::vector<std::shared_ptr<const std::vector<uint64_t>>> box_blocks;
  bool rank_conforming = false;  // see rank_conforming() below
};

// What the plan needs of ParallelOptions (hzio/parallel.hpp, which brings <mpi.h>): who aggregates, how
// many aggregators at most (0: no cap) and their memory per round.
struct PlanOptions {
  bool uniform = false;  // AggregatorPlacement::kUniform; else localized
  int aggregator_count = 0;
  size_t aggregator_bytes = size_t{256} << 20;
};

// Local, pure. Whether the bitmask is rank-conforming (hzio/index_template.hpp) for this write: every
// rank staged exactly one box of the first box's field and timestep, and those boxes pass the check.
bool rank_conforming(const format::IdxFile& idx, const std::vector<BoxInfo>& boxes, int ranks);

// Local, deterministic. Builds the plan from every rank's boxes. block_bytes[f] = decoded bytes of one
// block of field f.
WritePlan make_write_plan(const format::IdxFile& idx, const hzorder::HzSpace& space, const std::vector<BoxInfo>& boxes,
                          int ranks, const PlanOptions& options, const std::vector<int64_t>& block_bytes);

}  // namespace hzio::parallel
