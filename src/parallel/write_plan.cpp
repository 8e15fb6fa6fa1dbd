// Aggregator placement (localized or uniform), chunking and rounds for a collective write
// (docs/guide/parallel-io.md "Aggregation").
#include "parallel/write_plan.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <set>

#include "format/file_name.hpp"
#include "hzio/index_template.hpp"

namespace hzio::parallel {
namespace {

// One data file of one timestep: the ranks holding samples of it (sorted at the end) and which of its
// header entries (field * blocks_per_file + slot) they write, as a bitset.
struct Unit {
  std::vector<int> holders;
  std::vector<uint64_t> entries;

  void add(int rank, int64_t entry) {
    if (holders.empty() || holders.back() != rank) holders.push_back(rank);
    entries[static_cast<size_t>(entry) / 64] |= uint64_t{1} << (entry % 64);
  }
  template <class F>
  void for_each_entry(F&& f) const {
    for (size_t w = 0; w < entries.size(); ++w)
      for (uint64_t bits = entries[w]; bits; bits &= bits - 1) f(static_cast<int64_t>(w * 64) + std::countr_zero(bits));
  }
};

bool same_box(const BoxInfo& a, const BoxInfo& b) {
  return a.rank == b.rank && a.time == b.time && a.box.lo == b.box.lo && a.box.hi == b.box.hi;
}

// Chunks hold at most this many decoded bytes even under a larger budget: aggregators start writing,
// and the disk starts working, after a fraction of the data is exchanged (bench/write_bench.py chose
// both sizes).
constexpr int64_t kRoundBytes = int64_t{16} << 20;
constexpr int64_t kFirstRoundBytes = int64_t{4} << 20;  // an aggregator's first chunk: the disk starts sooner

using UnitKey = std::pair<int64_t, int64_t>;  // time, first block

// Localized placement (after the HiPC'17 aggregation paper): pick among the ranks holding the file's
// samples, starting from the middle of the sorted holder list (the (i+1)/(n+1) position for one field
// group), the least-loaded one; a cap on distinct aggregators reuses chosen ranks.
int pick_localized(const std::vector<int>& h, std::vector<int64_t>& load, std::set<int>& chosen, int cap,
                   int64_t bytes) {
  std::vector<int> candidates;
  if (cap > 0 && static_cast<int>(chosen.size()) >= cap) {
    for (int r : h)
      if (chosen.count(r)) candidates.push_back(r);
    if (candidates.empty()) candidates.assign(chosen.begin(), chosen.end());
  } else {
    const size_t start = h.size() / 2;
    for (size_t i = 0; i < h.size(); ++i) candidates.push_back(h[(start + i) % h.size()]);
  }
  int best = candidates.front();
  for (int r : candidates)
    if (load[r] < load[best]) best = r;
  load[best] += bytes;
  chosen.insert(best);
  return best;
}

}  // namespace

bool rank_conforming(const format::IdxFile& idx, const std::vector<BoxInfo>& boxes, int ranks) {
  if (boxes.empty()) return false;
  std::vector<Box> mine(static_cast<size_t>(ranks));
  std::vector<int> count(static_cast<size_t>(ranks), 0);
  for (const BoxInfo& b : boxes) {
    if (b.field != boxes[0].field || b.time != boxes[0].time) continue;
    mine[static_cast<size_t>(b.rank)] = b.box;
    ++count[static_cast<size_t>(b.rank)];
  }
  if (std::any_of(count.begin(), count.end(), [](int n) { return n != 1; })) return false;
  return check_rank_conforming(idx.bitmask.text(), mine).is_ok();
}

WritePlan make_write_plan(const format::IdxFile& idx, const hzorder::HzSpace& space, const std::vector<BoxInfo>& boxes,
                          int ranks, const PlanOptions& options, const std::vector<int64_t>& block_bytes) {
  std::map<UnitKey, Unit> units;
  WritePlan plan;
  plan.box_blocks.reserve(boxes.size());
  const size_t entry_words = (idx.fields.size() * static_cast<size_t>(idx.blocks_per_file) + 63) / 64;
  std::vector<std::pair<Unit*, int64_t>> unit_of_block;  // of the current box's blocks: file and slot
  for (size_t i = 0; i < boxes.size(); ++i) {
    const BoxInfo& b = boxes[i];
    // The fields of one box (usually staged one after the other) share its blocks and their files.
    if (i == 0 || !same_box(b, boxes[i - 1])) {
      plan.box_blocks.push_back(
          std::make_shared<const std::vector<uint64_t>>(space.blocks_of_box(b.box, 0, space.max_level())));
      unit_of_block.clear();
      Unit* u = nullptr;
      int64_t first = -1;
      for (uint64_t block : *plan.box_blocks.back()) {
        const int64_t f = format::first_block_of_file(idx, static_cast<int64_t>(block));
        if (f != first) {
          first = f;
          u = &units[{b.time, f}];
          if (u->entries.empty()) u->entries.assign(entry_words, 0);
        }
        unit_of_block.emplace_back(u, format::entry_in_file(idx, 0, block));
      }
    } else {
      plan.box_blocks.push_back(plan.box_blocks.back());
    }
    for (const auto& [u, slot] : unit_of_block) u->add(b.rank, b.field * idx.blocks_per_file + slot);
  }
  for (auto& [key, unit] : units) {
    std::sort(unit.holders.begin(), unit.holders.end());
    unit.holders.erase(std::unique(unit.holders.begin(), unit.holders.end()), unit.holders.end());
  }
  plan.files = static_cast<int64_t>(units.size());
  std::vector<int64_t> load(static_cast<size_t>(ranks), 0);
  std::set<int> chosen;
  std::vector<std::vector<int>> queue(static_cast<size_t>(ranks));
  const int64_t chunk_cap = std::min<int64_t>(static_cast<int64_t>(options.aggregator_bytes), kRoundBytes);
  size_t k = 0;
  for (const auto& [key, unit] : units) {
    int64_t bytes = 0;
    unit.for_each_entry([&](int64_t e) { bytes += block_bytes[static_cast<size_t>(e / idx.blocks_per_file)]; });
    int agg = 0;
    if (options.uniform) {
      const int slots = options.aggregator_count > 0 ? std::min(options.aggregator_count, ranks) : ranks;
      agg = static_cast<int>((static_cast<int64_t>(k) * slots / static_cast<int64_t>(units.size())) % slots) * ranks /
            slots;
      chosen.insert(agg);
    } else {
      agg = pick_localized(unit.holders, load, chosen, options.aggregator_count, bytes);
    }
    ++k;
    // Split the file into entry ranges whose decoded blocks fit the aggregator's budget.
    Chunk c{key.first, key.second, -1, -1, agg, 0};
    unit.for_each_entry([&](int64_t e) {
      const int64_t eb = block_bytes[static_cast<size_t>(e / idx.blocks_per_file)];
      // An aggregator's first chunk is smaller still, so that the disk starts sooner.
      const int64_t cap = queue[agg].empty() ? std::min(chunk_cap, kFirstRoundBytes) : chunk_cap;
      if (c.entry_begin >= 0 && c.bytes + eb > cap) {
        queue[agg].push_back(static_cast<int>(plan.chunks.size()));
        plan.chunks.push_back(c);
        c = Chunk{key.first, key.second, -1, -1, agg, 0};
      }
      if (c.entry_begin < 0) c.entry_begin = e;
      c.entry_end = e + 1;
      c.bytes += eb;
    });
    queue[agg].push_back(static_cast<int>(plan.chunks.size()));
    plan.chunks.push_back(c);
  }
  size_t rounds = 0;
  for (const auto& q : queue) rounds = std::max(rounds, q.size());
  plan.rounds.resize(rounds);
  for (const auto& q : queue)
    for (size_t r = 0; r < q.size(); ++r) plan.rounds[r].push_back(q[r]);
  plan.aggregators = static_cast<int>(chosen.size());
  plan.rank_conforming = rank_conforming(idx, boxes, ranks);
  return plan;
}

}  // namespace hzio::parallel
