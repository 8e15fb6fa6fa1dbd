// The plan of a collective write, level by level, and its simulation for any number of ranks without MPI
// (`hzio plan`; docs/guide/parallel-io.md "hzio plan"). Boxes are x first. Defined in libhzio_mpi
// (hzio::hzio_mpi): the planner is the parallel layer's, though it makes no MPI call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio {

// Per level. A message is what one rank sends one aggregator in one round (the transport packs all its
// records for that aggregator into it); a rank's records for itself are no message. Maxima and means
// are over the level's aggregators.
struct LevelSummary {
  int level = 0;
  int64_t blocks = 0;  // blocks of the level the write fills
  int64_t files = 0;   // data files holding them
  int64_t aggregators = 0;
  int64_t senders_max = 0;  // distinct ranks sending one aggregator records of this level
  double senders_mean = 0;
  int64_t messages = 0;  // over all aggregators
  int64_t messages_max = 0;
  double messages_mean = 0;
  int64_t bytes = 0;  // sample bytes moved to aggregators (their own samples excluded)
  int64_t bytes_max = 0;
  double bytes_mean = 0;
  int64_t cross_partition_messages = 0;  // sender and aggregator in different partitions
  int64_t chunk_bytes_max = 0;           // the largest chunk holding blocks of this level: memory per round
  std::vector<int> aggregator_ranks;     // the level's aggregators, ascending (WriteSimulation::details only)
};

// One group of ranks of a partitioned write (WriteSimulation::partitions > 1), as in the write report.
struct GroupSummary {
  int partition = 0;            // the partition naming the group
  std::vector<int> partitions;  // every partition whose blocks it writes
  int ranks = 0;
  int aggregators = 0;
  int64_t files = 0;     // data files it writes itself (shared files excluded)
  int64_t messages = 0;  // record messages among its ranks
  int64_t bytes = 0;     // sample bytes they move
};

struct PlanSummary {
  int ranks = 0;
  int partitions = 1;
  std::string index_space = "global";
  int64_t files = 0;
  int64_t chunks = 0;
  int aggregators = 0;
  int rounds = 0;
  int64_t round_bytes_max = 0;  // decoded bytes one aggregator holds in one round, at most
  int64_t bytes = 0;            // sample bytes of the write
  bool rank_conforming = false;
  int64_t messages = 0;      // every record message (MPI point-to-point) of the write
  int64_t senders_max = 0;   // the largest aggregation group: distinct ranks sending one aggregator
  int64_t messages_max = 0;  // the busiest aggregator's messages (one per sender and round)
  // Partitioned writes: the groups, the parts of boxes moved between them and the merge of the shared
  // files (one message per aggregator of a shared file's chunk and merger).
  std::vector<GroupSummary> groups;
  int64_t moved_messages = 0, moved_bytes = 0;
  int mergers = 0;
  int64_t merge_files = 0, merge_messages = 0, merge_bytes = 0;
  std::vector<LevelSummary> levels;
  std::string bitmask;

  // Local. The summary as a JSON object.
  std::string to_json() const;
};

// A collective write to simulate: the dataset as hzio::create would make it (x-first dims, one field per
// dtype named f0, f1, ..., one timestep) and every rank's box (x first, in rank order).
struct WriteSimulation {
  std::vector<int64_t> dims;
  std::vector<Box> rank_boxes;
  std::vector<std::string> dtypes;
  std::string bitmask;  // "" = the default
  int bits_per_block = 0;
  int64_t blocks_per_file = 0;
  bool uniform = false;      // aggregator placement: uniform, else localized
  int aggregator_count = 0;  // 0: no cap
  int64_t aggregator_bytes = int64_t{256} << 20;
  int partitions = 1;              // a power of two: the partitioned write (ParallelOptions::partitions) is simulated
  bool local_index_space = false;  // with partitions: IndexSpace::kLocal
  bool details = false;            // also list each level's aggregator ranks
};

// Local, pure (no MPI). The plan every rank of a collective write (ParallelDataset::flush) would compute
// for this one from the all-gathered boxes, summarized; with partitions, the plans of every group, the
// parts of boxes moved between groups and the merge of the shared files. Errors: kInvalidArgument for options create
// would refuse, or partitions that are not a power of two within the bitmask's levels.
Result<PlanSummary> simulate_write_plan(const WriteSimulation& write);

}  // namespace hzio
