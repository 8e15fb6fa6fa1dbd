// Which blocks a collective read moves, by which method, from which reader, in which round
// (docs/guide/parallel-io.md "Reads").
#include "parallel/read_plan.hpp"

#include <algorithm>

#include "format/file_name.hpp"

namespace hzio::parallel {

FileKey file_of(const format::IdxFile& idx, const BlockKey& key) {
  return {key.time, format::first_block_of_file(idx, static_cast<int64_t>(key.block))};
}

ReadPlan plan_read(const format::IdxFile& idx, const hzorder::HzSpace& space, const std::vector<ReadRequest>& requests,
                   const std::vector<int64_t>& block_bytes, bool one_node, size_t budget, ReadMethod method) {
  ReadPlan plan;
  const int ranks = static_cast<int>(requests.size());
  for (int r = 0; r < ranks; ++r) {
    const ReadRequest& q = requests[static_cast<size_t>(r)];
    if (q.empty) continue;
    const std::vector<uint64_t> blocks = space.blocks_of_box(q.box, 0, q.level);
    plan.asked += static_cast<int64_t>(blocks.size());
    for (uint64_t b : blocks) plan.wanted[{q.field, q.time, b}].push_back(r);
  }
  // Two-phase reads read every block once from the file system, which pays across nodes when the
  // requests overlap. On one node the ranks share the page cache, so reading a block once saves no disk
  // work and two-phase only adds the exchange: independent reads are faster there (bench/read_bench.py
  // part (b) compares the methods).
  if (method == ReadMethod::kAuto) {
    const bool overlap = 2 * plan.asked >= 3 * static_cast<int64_t>(plan.wanted.size());
    method = (ranks > 1 && !one_node && overlap) ? ReadMethod::kTwoPhase : ReadMethod::kIndependent;
  }
  plan.method = method;
  if (method != ReadMethod::kTwoPhase) return plan;
  // Each data file goes to one reader (round robin over the files in order).
  for (const auto& [key, asking] : plan.wanted) plan.reader.emplace(file_of(idx, key), 0);
  int next = 0;
  for (auto& [file, r] : plan.reader) r = next++ % std::max(ranks, 1);
  // Rounds keep each reader's outgoing block bytes under the budget (a round holds at least one block).
  plan.rounds.emplace_back();
  std::vector<int64_t> load(static_cast<size_t>(ranks), 0);
  for (const auto& [key, asking] : plan.wanted) {
    const auto r = static_cast<size_t>(plan.reader[file_of(idx, key)]);
    const int64_t bytes = block_bytes[static_cast<size_t>(key.field)] * static_cast<int64_t>(asking.size());
    if (load[r] > 0 && load[r] + bytes > static_cast<int64_t>(budget)) {
      plan.rounds.emplace_back();
      std::fill(load.begin(), load.end(), 0);
    }
    load[r] += bytes;
    plan.rounds.back().push_back(key);
  }
  return plan;
}

}  // namespace hzio::parallel
