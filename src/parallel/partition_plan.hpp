// The plan of a partitioned collective write (docs/guide/parallel-io.md "Partitions"): which ranks write
// which partitions, where the parts of boxes that straddle a partition plane go, and which rank merges
// each shared data file. Every rank computes it from its own boxes and three all-reduces of R values,
// never from the boxes of all ranks. Pure computation (no MPI). Layer: parallel.
#pragma once

#include <climits>
#include <cstdint>
#include <vector>

#include "hzorder/partition.hpp"

namespace hzio::parallel {

// What ranks tell each other about the partitions, R values each (all-reduced: MIN, MIN, MAX).
struct PartitionVotes {
  std::vector<int> first_preferring;   // lowest rank whose samples lie mostly in p; INT_MAX if none
  std::vector<int> first_holding;      // lowest rank holding samples of p; INT_MAX if none
  std::vector<int> holder_preference;  // the preferred partition of first_holding[p]; -1 if none
};

// Local, pure. The partition holding most of a rank's samples (`samples`, R counts; the lowest on ties),
// or -1 for a rank without samples.
int preferred_partition(const std::vector<int64_t>& samples);

// Ranks are grouped by preferred partition: a group is named by that partition and has its own
// communicator. A partition that no rank prefers but some rank holds samples of is written by the group
// of its lowest holder.
struct PartitionGroups {
  std::vector<int> group_of;  // per partition: the group writing its blocks, or -1 (no samples anywhere)
  std::vector<int> names;     // the groups, ascending
  std::vector<int> leader;    // per partition naming a group: its lowest rank; else -1

  bool empty() const { return names.empty(); }
  // The group of a rank that prefers `preferred` (a rank without samples joins one in turn).
  int group_of_rank(int rank, int preferred) const;
  // The rank merging data file `file` (its first block / blocks per file) of timestep `time`: the leaders
  // take the shared files in turn.
  int merger(int64_t time, int64_t file) const;
};

// Local, pure. The groups every rank derives from the same votes.
PartitionGroups choose_groups(const PartitionVotes& votes);

// A part of a staged box and the group that writes it.
struct BoxPart {
  Box box;
  int group = 0;
};

// Local, pure. `box` cut along the partition planes where its partitions belong to different groups
// (one part per partition with samples); a box whose partitions are all written by `group` stays whole.
std::vector<BoxPart> split_box(const hzorder::Partitions& parts, const PartitionGroups& groups, const Box& box,
                               int group);

}  // namespace hzio::parallel
