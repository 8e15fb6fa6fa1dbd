// The per-level summary of a collective write plan (write_plan.hpp; the types and simulate_write_plan
// are public, in hzio/plan.hpp). Pure computation. Layer: parallel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hzio/dataset.hpp"
#include "hzio/plan.hpp"
#include "hzorder/partition.hpp"
#include "parallel/write_plan.hpp"

namespace hzio::parallel {

// Local, pure. Summarizes `plan` (made by make_write_plan from these boxes). partition_of_rank[r] is
// rank r's partition (empty: one partition). sample_bytes[f] = bytes of one sample of field f. With
// `details`, each level also lists its aggregator ranks.
PlanSummary summarize_write_plan(const format::IdxFile& idx, const hzorder::HzSpace& space,
                                 const std::vector<BoxInfo>& boxes, int ranks, const WritePlan& plan,
                                 const std::vector<int64_t>& sample_bytes, const std::vector<int>& partition_of_rank,
                                 bool details = false);

// Local, pure. The summary of a partitioned write of one box per rank (every field): the groups, each
// group's plan (make_write_plan over its ranks, after the parts of boxes straddling into other groups'
// partitions moved to their leaders), and the merge of the shared files, as ParallelDataset's
// partitioned flush makes them. With `local` (the create's options), in local index space: each group
// plans each of its partitions' datasets in turn, and nothing is merged.
PlanSummary summarize_partitioned_plan(const format::IdxFile& idx, const hzorder::HzSpace& space,
                                       const std::vector<Box>& rank_boxes, const PlanOptions& options,
                                       const std::vector<int64_t>& sample_bytes,
                                       const std::vector<int64_t>& block_bytes, const hzorder::Partitions& parts,
                                       const CreateOptions* local = nullptr, bool details = false);

}  // namespace hzio::parallel
