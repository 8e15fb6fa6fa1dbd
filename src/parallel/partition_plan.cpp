// Groups, box parts and mergers of a partitioned collective write (partition_plan.hpp).
#include "parallel/partition_plan.hpp"

#include <algorithm>

namespace hzio::parallel {

int preferred_partition(const std::vector<int64_t>& samples) {
  int best = -1;
  for (size_t p = 0; p < samples.size(); ++p)
    if (samples[p] > 0 && (best < 0 || samples[p] > samples[static_cast<size_t>(best)])) best = static_cast<int>(p);
  return best;
}

PartitionGroups choose_groups(const PartitionVotes& votes) {
  const size_t n = votes.first_preferring.size();
  PartitionGroups g;
  g.group_of.assign(n, -1);
  g.leader.assign(n, -1);
  for (size_t p = 0; p < n; ++p) {
    if (votes.first_preferring[p] == INT_MAX) continue;
    g.group_of[p] = static_cast<int>(p);
    g.leader[p] = votes.first_preferring[p];
    g.names.push_back(static_cast<int>(p));
  }
  for (size_t p = 0; p < n; ++p) {
    // The lowest holder prefers a partition, which names a group since that rank prefers it.
    if (g.group_of[p] < 0 && votes.first_holding[p] != INT_MAX) g.group_of[p] = votes.holder_preference[p];
  }
  return g;
}

int PartitionGroups::group_of_rank(int rank, int preferred) const {
  if (preferred >= 0) return preferred;
  return names[static_cast<size_t>(rank) % names.size()];
}

int PartitionGroups::merger(int64_t time, int64_t file) const {
  const auto turn = static_cast<uint64_t>(time) + static_cast<uint64_t>(file);
  return leader[static_cast<size_t>(names[turn % names.size()])];
}

std::vector<BoxPart> split_box(const hzorder::Partitions& parts, const PartitionGroups& groups, const Box& box,
                               int group) {
  const std::vector<int64_t> samples = parts.samples_of(box);
  bool whole = true;
  for (size_t p = 0; p < samples.size(); ++p) whole &= samples[p] == 0 || groups.group_of[p] == group;
  if (whole) return {{box, group}};
  std::vector<BoxPart> out;
  for (size_t p = 0; p < samples.size(); ++p)
    if (samples[p] > 0) out.push_back({box.intersect(parts.box(static_cast<int>(p))), groups.group_of[p]});
  return out;
}

}  // namespace hzio::parallel
