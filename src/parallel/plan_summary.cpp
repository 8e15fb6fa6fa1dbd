// Per-level figures of a collective write plan (plan_summary.hpp; docs/guide/parallel-io.md "hzio plan").
#include "parallel/plan_summary.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <set>
#include <bit>
#include <cstdio>
#include <iterator>
#include <map>
#include <tuple>

#include "core/block_codec.hpp"
#include "core/dataset_parts.hpp"
#include "format/file_name.hpp"
#include "parallel/records.hpp"
#include "parallel/partition_plan.hpp"

namespace hzio::parallel {
namespace {

// One record as the summary needs it, packed for sorting: level, aggregator, sender, round (world ranks).
struct Move {
  int level;
  int aggregator;
  int sender;
  int round;
  int64_t bytes;
  bool operator<(const Move& o) const {
    return std::tie(level, aggregator, sender, round) < std::tie(o.level, o.aggregator, o.sender, o.round);
  }
};

// The round number of the messages carrying shared files' records to their mergers, after every round.
constexpr int kMergeRound = INT_MAX;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// What the summary gathers from one plan or from every group's.
struct Tally {
  std::vector<Move> moves;
  std::vector<LevelSummary> levels;
  std::vector<std::vector<int64_t>> level_files;           // first blocks of each level's files (field 0, time 0)
  std::vector<std::tuple<int64_t, uint64_t, int>> blocks;  // (field and time, block, level) of every box
  std::map<std::pair<int, int64_t>, int64_t> field_time;   // (field, time) -> id
  int64_t bytes = 0;
  int64_t detached = 0;  // whole raw blocks of at least kDetachedBlockBytes sent to another rank: a message each
};

// Adds `plan`'s records to the tally. world[r]: the world rank of the plan's rank r. With `parts`, the
// records of shared files are also sent on from their chunk's aggregator to the file's merger.
// In local index space, the plan of one partition's dataset: its levels are `level_offset` below the
// whole domain's, its rounds follow `round_offset` earlier ones, and `key` sets its files and blocks
// apart from the other parts'.
struct PartOf {
  int level_offset = 0;
  int round_offset = 0;
  int64_t key = 0;
};

void tally_plan(const format::IdxFile& idx, const hzorder::HzSpace& space, const std::vector<BoxInfo>& boxes,
                const WritePlan& plan, const std::vector<int64_t>& sample_bytes, const std::vector<int>& world,
                const hzorder::Partitions* parts, const PartitionGroups* groups, Tally& t, PartOf part = {}) {
  std::vector<int> round_of(plan.chunks.size(), 0);
  for (size_t r = 0; r < plan.rounds.size(); ++r)
    for (int c : plan.rounds[r]) round_of[static_cast<size_t>(c)] = part.round_offset + static_cast<int>(r);
  std::map<std::pair<int64_t, int64_t>, std::vector<int>> chunks_of_file;
  for (size_t c = 0; c < plan.chunks.size(); ++c)
    chunks_of_file[{plan.chunks[c].time, plan.chunks[c].first_block}].push_back(static_cast<int>(c));
  std::vector<Move> of_box;
  const std::vector<int>* in_file = nullptr;
  std::pair<int64_t, int64_t> file_key{-1, -1};
  bool shared = false;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const BoxInfo& b = boxes[i];
    const int64_t gid =
        part.key +
        t.field_time.emplace(std::make_pair(b.field, b.time), static_cast<int64_t>(t.field_time.size())).first->second;
    const int64_t sbytes = sample_bytes[static_cast<size_t>(b.field)];
    of_box.clear();
    for (uint64_t block : *plan.box_blocks[i]) {
      const int level = part.level_offset + space.level_of_block(block);
      t.blocks.emplace_back(gid, block, level);
      const int64_t first = format::first_block_of_file(idx, static_cast<int64_t>(block));
      const int64_t entry = format::entry_in_file(idx, b.field, block);
      if (file_key != std::make_pair(b.time, first)) {
        file_key = {b.time, first};
        in_file = &chunks_of_file.at(file_key);
        shared =
            parts && parts->of_blocks(static_cast<uint64_t>(first), static_cast<uint64_t>(idx.blocks_per_file)) < 0;
      }
      // The file's chunks are in entry order: the last one starting at or before the entry holds it.
      const auto it = std::upper_bound(in_file->begin(), in_file->end(), entry, [&](int64_t e, int k) {
        return e < plan.chunks[static_cast<size_t>(k)].entry_begin;
      });
      const int c = *std::prev(it);
      const Chunk& chunk = plan.chunks[static_cast<size_t>(c)];
      Point lo, hi, dlo, dhi;
      const hzorder::Run g = core::block_grid(space, block);
      hzorder::run_range_in_box(g, b.box, lo, hi);
      hzorder::run_range_in_box(g, idx.box, dlo, dhi);
      const int64_t samples = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
      LevelSummary& l = t.levels[static_cast<size_t>(level)];
      l.chunk_bytes_max = std::max(l.chunk_bytes_max, chunk.bytes);
      t.bytes += samples * sbytes;
      if (b.field == 0 && b.time == 0 && !shared) t.level_files[static_cast<size_t>(level)].push_back(part.key + first);
      const int agg = world[static_cast<size_t>(chunk.aggregator)], sender = world[static_cast<size_t>(b.rank)];
      of_box.push_back({level, agg, sender, round_of[static_cast<size_t>(c)], samples * sbytes});
      if (lo == dlo && hi == dhi && sender != agg && (sbytes << idx.bits_per_block) >= int64_t{kDetachedBlockBytes})
        ++t.detached;
      if (shared) {
        const int merger = groups->merger(b.time, first / idx.blocks_per_file);
        of_box.push_back({level, merger, agg, kMergeRound, samples * sbytes});
        if (b.field == 0 && b.time == 0) t.level_files[static_cast<size_t>(level)].push_back(first);
      }
    }
    // One box's records for one aggregator in one round travel together: merge them here already.
    std::sort(of_box.begin(), of_box.end());
    for (const Move& m : of_box) {
      if (!t.moves.empty() && !(t.moves.back() < m) && !(m < t.moves.back())) {
        t.moves.back().bytes += m.bytes;
      } else {
        t.moves.push_back(m);
      }
    }
  }
}

// The per-level and whole-plan figures of a tally.
void summarize(const hzorder::HzSpace& space, Tally& t, const std::vector<int>& partition_of_rank, bool details,
               PlanSummary& s) {
  std::sort(t.moves.begin(), t.moves.end());
  // Equal moves from different boxes of one sender are one message.
  std::vector<Move> merged;
  for (const Move& m : t.moves) {
    if (!merged.empty() && !(merged.back() < m) && !(m < merged.back()))
      merged.back().bytes += m.bytes;
    else
      merged.push_back(m);
  }
  t.moves.swap(merged);
  s.bytes = t.bytes;
  std::sort(t.blocks.begin(), t.blocks.end());
  t.blocks.erase(std::unique(t.blocks.begin(), t.blocks.end()), t.blocks.end());
  for (const auto& [gid, block, level] : t.blocks) ++t.levels[static_cast<size_t>(level)].blocks;
  const auto partition = [&](int rank) {
    return partition_of_rank.empty() ? 0 : partition_of_rank[static_cast<size_t>(rank)];
  };
  // Walk the sorted moves: runs of one (level, aggregator), inside them runs of one sender.
  for (size_t at = 0; at < t.moves.size();) {
    const int level = t.moves[at].level, agg = t.moves[at].aggregator;
    LevelSummary& l = t.levels[static_cast<size_t>(level)];
    ++l.aggregators;
    if (details) l.aggregator_ranks.push_back(agg);
    int64_t senders = 0, messages = 0, bytes = 0;
    int last_sender = -1, last_round = -1;
    for (; at < t.moves.size() && t.moves[at].level == level && t.moves[at].aggregator == agg; ++at) {
      const Move& m = t.moves[at];
      if (m.sender == agg) continue;  // its own samples stay on the aggregator
      if (m.sender != last_sender) ++senders;
      if (m.sender != last_sender || m.round != last_round) {
        ++messages;
        if (partition(m.sender) != partition(agg)) ++l.cross_partition_messages;
      }
      last_sender = m.sender;
      last_round = m.round;
      bytes += m.bytes;
    }
    l.senders_max = std::max(l.senders_max, senders);
    l.senders_mean += static_cast<double>(senders);
    l.messages += messages;
    l.messages_max = std::max(l.messages_max, messages);
    l.bytes += bytes;
    l.bytes_max = std::max(l.bytes_max, bytes);
  }
  for (size_t h = 0; h < t.levels.size(); ++h) {
    LevelSummary& l = t.levels[h];
    l.level = static_cast<int>(h);
    auto& f = t.level_files[h];
    std::sort(f.begin(), f.end());
    l.files = static_cast<int64_t>(std::unique(f.begin(), f.end()) - f.begin());
    if (l.aggregators > 0) {
      l.senders_mean /= static_cast<double>(l.aggregators);
      l.messages_mean = static_cast<double>(l.messages) / static_cast<double>(l.aggregators);
      l.bytes_mean = static_cast<double>(l.bytes) / static_cast<double>(l.aggregators);
    }
    if (l.blocks > 0) s.levels.push_back(l);
  }
  // Over every level: the largest aggregation group (distinct senders of one aggregator) and the busiest
  // aggregator (its messages: one per sender and round, whatever the levels in it).
  std::vector<std::tuple<int, int, int>> pairs;  // aggregator, sender, round
  pairs.reserve(t.moves.size());
  for (const Move& m : t.moves)
    if (m.sender != m.aggregator) pairs.emplace_back(m.aggregator, m.sender, m.round);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  s.messages = t.detached + static_cast<int64_t>(pairs.size());
  for (size_t at = 0; at < pairs.size();) {
    const int agg = std::get<0>(pairs[at]);
    int64_t senders = 0, messages = 0;
    for (int last = -1; at < pairs.size() && std::get<0>(pairs[at]) == agg; ++at) {
      ++messages;
      if (std::get<1>(pairs[at]) != last) ++senders;
      last = std::get<1>(pairs[at]);
    }
    s.senders_max = std::max(s.senders_max, senders);
    s.messages_max = std::max(s.messages_max, messages);
  }
}

Tally new_tally(const hzorder::HzSpace& space) {
  Tally t;
  t.levels.resize(static_cast<size_t>(space.max_level()) + 1);
  t.level_files.resize(t.levels.size());
  return t;
}

}  // namespace

PlanSummary summarize_write_plan(const format::IdxFile& idx, const hzorder::HzSpace& space,
                                 const std::vector<BoxInfo>& boxes, int ranks, const WritePlan& plan,
                                 const std::vector<int64_t>& sample_bytes, const std::vector<int>& partition_of_rank,
                                 bool details) {
  PlanSummary s;
  s.ranks = ranks;
  s.files = plan.files;
  s.chunks = static_cast<int64_t>(plan.chunks.size());
  s.aggregators = plan.aggregators;
  s.rounds = static_cast<int>(plan.rounds.size());
  s.rank_conforming = plan.rank_conforming;
  s.bitmask = idx.bitmask.text();
  for (const Chunk& c : plan.chunks) s.round_bytes_max = std::max(s.round_bytes_max, c.bytes);
  int max_partition = 0;
  for (int p : partition_of_rank) max_partition = std::max(max_partition, p);
  s.partitions = max_partition + 1;
  std::vector<int> world(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) world[static_cast<size_t>(r)] = r;
  Tally t = new_tally(space);
  tally_plan(idx, space, boxes, plan, sample_bytes, world, nullptr, nullptr, t);
  summarize(space, t, partition_of_rank, details, s);
  return s;
}

PlanSummary summarize_partitioned_plan(const format::IdxFile& idx, const hzorder::HzSpace& space,
                                       const std::vector<Box>& rank_boxes, const PlanOptions& options,
                                       const std::vector<int64_t>& sample_bytes,
                                       const std::vector<int64_t>& block_bytes, const hzorder::Partitions& parts,
                                       const CreateOptions* local, bool details) {
  const int ranks = static_cast<int>(rank_boxes.size());
  const int n = parts.count();
  const int fields = static_cast<int>(sample_bytes.size());
  PlanSummary s;
  s.ranks = ranks;
  s.partitions = n;
  s.index_space = local ? "local" : "global";
  s.bitmask = idx.bitmask.text();
  // The votes every rank's all-reduces give, then the groups.
  PartitionVotes votes{std::vector<int>(static_cast<size_t>(n), INT_MAX),
                       std::vector<int>(static_cast<size_t>(n), INT_MAX), std::vector<int>(static_cast<size_t>(n), -1)};
  std::vector<int> preferred(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const std::vector<int64_t> samples = parts.samples_of(rank_boxes[static_cast<size_t>(r)]);
    const int p = preferred_partition(samples);
    preferred[static_cast<size_t>(r)] = p;
    if (p >= 0)
      votes.first_preferring[static_cast<size_t>(p)] = std::min(votes.first_preferring[static_cast<size_t>(p)], r);
    for (int q = 0; q < n; ++q)
      if (samples[static_cast<size_t>(q)] > 0 && votes.first_holding[static_cast<size_t>(q)] == INT_MAX) {
        votes.first_holding[static_cast<size_t>(q)] = r;
        votes.holder_preference[static_cast<size_t>(q)] = p;
      }
  }
  const PartitionGroups groups = choose_groups(votes);
  // Each group's ranks in its communicator's order (the ranks preferring it, then those without samples).
  std::map<int, std::vector<int>> members;
  for (int r = 0; r < ranks; ++r)
    if (preferred[static_cast<size_t>(r)] >= 0)
      members[groups.group_of_rank(r, preferred[static_cast<size_t>(r)])].push_back(r);
  for (int r = 0; r < ranks; ++r)
    if (preferred[static_cast<size_t>(r)] < 0) members[groups.group_of_rank(r, -1)].push_back(r);
  // The boxes each group stages after the parts that straddle into other groups moved to their leaders.
  std::map<int, std::vector<BoxInfo>> staged;  // group -> boxes, rank = group rank
  std::map<int, std::vector<BoxInfo>> arrived;
  std::map<int, int> group_rank;
  for (const auto& [g, list] : members)
    for (size_t k = 0; k < list.size(); ++k) group_rank[list[k]] = static_cast<int>(k);
  for (int r = 0; r < ranks; ++r) {
    const int g = groups.group_of_rank(r, preferred[static_cast<size_t>(r)]);
    const std::vector<BoxPart> split = split_box(parts, groups, rank_boxes[static_cast<size_t>(r)], g);
    for (int f = 0; f < fields; ++f) {
      for (const BoxPart& bp : split) {
        if (bp.group == g) {
          staged[g].push_back({group_rank[r], f, 0, bp.box});
        } else {
          ++s.moved_messages;
          s.moved_bytes += bp.box.sample_count() * sample_bytes[static_cast<size_t>(f)];
          arrived[bp.group].push_back({0, f, 0, bp.box});  // the leader, group rank 0
        }
      }
    }
  }
  Tally t = new_tally(space);
  std::set<std::pair<int64_t, int64_t>> merged;  // (time, first block) of the shared files
  std::set<int> aggregators, mergers;
  s.rank_conforming = true;
  {
    std::vector<BoxInfo> all;
    for (int r = 0; r < ranks; ++r) all.push_back({r, 0, 0, rank_boxes[static_cast<size_t>(r)]});
    s.rank_conforming = rank_conforming(idx, all, ranks);
  }
  for (auto& [g, list] : members) {
    std::vector<BoxInfo> boxes;
    // In group-rank order: the leader's own boxes, then those it received; then the other ranks'.
    for (const BoxInfo& b : staged[g])
      if (b.rank == 0) boxes.push_back(b);
    for (const BoxInfo& b : arrived[g]) boxes.push_back(b);
    for (const BoxInfo& b : staged[g])
      if (b.rank != 0) boxes.push_back(b);
    std::stable_sort(boxes.begin(), boxes.end(), [](const BoxInfo& a, const BoxInfo& b) { return a.rank < b.rank; });
    const int size = static_cast<int>(list.size());
    const size_t before = t.moves.size();
    const int64_t detached_before = t.detached;
    GroupSummary gs;
    gs.partition = g;
    for (int p = 0; p < n; ++p)
      if (groups.group_of[static_cast<size_t>(p)] == g) gs.partitions.push_back(p);
    gs.ranks = size;
    std::set<int> aggs;
    if (local) {
      // Each of the group's partitions is a dataset of its own, written by the group in turn.
      int rounds = 0, round_offset = 0;
      for (int p : gs.partitions) {
        const Box& pb = parts.box(p);
        CreateOptions part = *local;
        for (size_t a = 0; a < part.dims.size(); ++a) part.dims[a] = pb.extent(static_cast<int>(a));
        part.bitmask = "V" + idx.bitmask.text().substr(1 + static_cast<size_t>(parts.bits()));
        part.bits_per_block = std::min(idx.bits_per_block, idx.bitmask.max_level() - parts.bits());
        part.blocks_per_file = idx.blocks_per_file;
        const format::IdxFile pidx = core::idx_for_create("/simulated/part.idx", part).value();
        const hzorder::HzSpace pspace(pidx.bitmask, pidx.bits_per_block);
        std::vector<BoxInfo> in_part;
        for (const BoxInfo& b : boxes) {
          Box c = b.box.intersect(pb);
          if (c.empty()) continue;
          for (int a = 0; a < 3; ++a) {
            c.lo[a] -= pb.lo[a];
            c.hi[a] -= pb.lo[a];
          }
          in_part.push_back({b.rank, b.field, b.time, c});
        }
        if (in_part.empty()) continue;
        std::vector<int64_t> pblock_bytes;
        for (int64_t sb : sample_bytes) pblock_bytes.push_back(sb << pidx.bits_per_block);
        const WritePlan plan = make_write_plan(pidx, pspace, in_part, size, options, pblock_bytes);
        tally_plan(pidx, pspace, in_part, plan, sample_bytes, list, nullptr, nullptr, t,
                   {parts.bits(), round_offset, static_cast<int64_t>(p + 1) << 40});
        round_offset += static_cast<int>(plan.rounds.size());
        rounds = std::max(rounds, static_cast<int>(plan.rounds.size()));
        for (const Chunk& c : plan.chunks) aggs.insert(list[static_cast<size_t>(c.aggregator)]);
        gs.files += plan.files;
        s.chunks += static_cast<int64_t>(plan.chunks.size());
        for (const Chunk& c : plan.chunks) s.round_bytes_max = std::max(s.round_bytes_max, c.bytes);
      }
      s.rounds = std::max(s.rounds, rounds);
    } else {
      const WritePlan plan = make_write_plan(idx, space, boxes, size, options, block_bytes);
      tally_plan(idx, space, boxes, plan, sample_bytes, list, &parts, &groups, t);
      std::set<std::pair<int64_t, int64_t>> own;
      for (const Chunk& c : plan.chunks) {
        aggs.insert(list[static_cast<size_t>(c.aggregator)]);
        if (parts.of_blocks(static_cast<uint64_t>(c.first_block), static_cast<uint64_t>(idx.blocks_per_file)) >= 0)
          own.insert({c.time, c.first_block});
        else
          merged.insert({c.time, c.first_block});
      }
      gs.files = static_cast<int64_t>(own.size());
      s.rounds = std::max(s.rounds, static_cast<int>(plan.rounds.size()));
      s.chunks += static_cast<int64_t>(plan.chunks.size());
      for (const Chunk& c : plan.chunks) s.round_bytes_max = std::max(s.round_bytes_max, c.bytes);
    }
    aggregators.insert(aggs.begin(), aggs.end());
    gs.aggregators = static_cast<int>(aggs.size());
    std::set<std::tuple<int, int, int>> pairs;  // within the group: aggregator, sender, round
    for (size_t k = before; k < t.moves.size(); ++k) {
      const Move& m = t.moves[k];
      if (m.round == kMergeRound || m.sender == m.aggregator) continue;
      pairs.emplace(m.aggregator, m.sender, m.round);
      gs.bytes += m.bytes;
    }
    gs.messages = static_cast<int64_t>(pairs.size()) + (t.detached - detached_before);
    s.files += gs.files;
    s.groups.push_back(gs);
  }
  // The merge: one message per (forwarding aggregator, merger) pair with records, unless they are one rank.
  std::set<std::pair<int, int>> forwards;
  for (const Move& m : t.moves) {
    if (m.round != kMergeRound) continue;
    mergers.insert(m.aggregator);
    if (m.sender != m.aggregator) {
      forwards.emplace(m.sender, m.aggregator);
      s.merge_bytes += m.bytes;
    }
  }
  for (const auto& [time, first] : merged) mergers.insert(groups.merger(time, first / idx.blocks_per_file));
  s.merge_files = static_cast<int64_t>(merged.size());
  s.merge_messages = static_cast<int64_t>(forwards.size());
  s.mergers = static_cast<int>(mergers.size());
  aggregators.insert(mergers.begin(), mergers.end());
  s.aggregators = static_cast<int>(aggregators.size());
  s.files += s.merge_files;
  std::vector<int> partition_of_rank(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    partition_of_rank[static_cast<size_t>(r)] = groups.group_of_rank(r, preferred[static_cast<size_t>(r)]);
  summarize(space, t, partition_of_rank, details, s);
  s.messages += s.moved_messages;
  return s;
}

}  // namespace hzio::parallel

namespace hzio {

Result<PlanSummary> simulate_write_plan(const WriteSimulation& w) {
  using namespace parallel;
  CreateOptions o;
  o.dims = w.dims;
  o.bitmask = w.bitmask;
  o.bits_per_block = w.bits_per_block;
  o.blocks_per_file = w.blocks_per_file;
  for (size_t f = 0; f < w.dtypes.size(); ++f) {
    FieldSpec spec;
    spec.name = "f" + std::to_string(f);
    HZIO_ASSIGN_OR_RETURN(spec.dtype, DType::parse(w.dtypes[f]));
    o.fields.push_back(spec);
  }
  HZIO_ASSIGN_OR_RETURN(format::IdxFile idx, core::idx_for_create("/simulated/plan.idx", o));
  const hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  if (w.partitions < 1 || !std::has_single_bit(static_cast<unsigned>(w.partitions)) ||
      std::countr_zero(static_cast<unsigned>(w.partitions)) > idx.bitmask.max_level()) {
    return invalid_argument("partitions must be a power of two of at most 2^" +
                            std::to_string(idx.bitmask.max_level()) + ", got " + std::to_string(w.partitions));
  }
  const int ranks = static_cast<int>(w.rank_boxes.size());
  if (ranks < 1) return invalid_argument("a write needs at least one rank");
  std::vector<BoxInfo> boxes;
  boxes.reserve(w.rank_boxes.size() * idx.fields.size());
  for (int r = 0; r < ranks; ++r) {
    const Box& b = w.rank_boxes[static_cast<size_t>(r)];
    if (b.empty() || !idx.box.contains(b)) {
      return invalid_argument("rank " + std::to_string(r) + "'s box " + b.to_string() +
                              " is empty or not inside the dataset box " + idx.box.to_string());
    }
    for (int f = 0; f < static_cast<int>(idx.fields.size()); ++f) boxes.push_back({r, f, 0, b});
  }
  std::vector<int64_t> block_bytes, sample_bytes;
  for (const auto& f : idx.fields) {
    sample_bytes.push_back(static_cast<int64_t>(f.dtype.bytes()));
    block_bytes.push_back(sample_bytes.back() << idx.bits_per_block);
  }
  const PlanOptions options{w.uniform, w.aggregator_count, static_cast<size_t>(w.aggregator_bytes)};
  if (w.partitions > 1) {
    HZIO_ASSIGN_OR_RETURN(const hzorder::Partitions parts,
                          hzorder::Partitions::make(idx.bitmask, idx.bits_per_block, idx.box, w.partitions));
    if (w.local_index_space && parts.bits() >= idx.bitmask.max_level()) {
      return invalid_argument(std::to_string(w.partitions) +
                              " partitions in local index space need a bitmask of more "
                              "than " +
                              std::to_string(parts.bits()) + " characters");
    }
    return summarize_partitioned_plan(idx, space, w.rank_boxes, options, sample_bytes, block_bytes, parts,
                                      w.local_index_space ? &o : nullptr, w.details);
  }
  const WritePlan plan = make_write_plan(idx, space, boxes, ranks, options, block_bytes);
  return summarize_write_plan(idx, space, boxes, ranks, plan, sample_bytes, {}, w.details);
}

std::string PlanSummary::to_json() const {
  std::string out = "{\"ranks\": " + std::to_string(ranks) + ", \"partitions\": " + std::to_string(partitions) +
                    ", \"index_space\": \"" + index_space + "\"" + ", \"bitmask\": \"" + bitmask +
                    "\", \"rank_conforming\": " + (rank_conforming ? "true" : "false") +
                    ", \"files\": " + std::to_string(files) + ", \"chunks\": " + std::to_string(chunks) +
                    ", \"aggregators\": " + std::to_string(aggregators) + ", \"rounds\": " + std::to_string(rounds) +
                    ", \"round_bytes_max\": " + std::to_string(round_bytes_max) +
                    ", \"bytes\": " + std::to_string(bytes) + ", \"messages\": " + std::to_string(messages) +
                    ", \"senders_max\": " + std::to_string(senders_max) +
                    ", \"messages_max\": " + std::to_string(messages_max) + ", \"groups\": [";
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSummary& g = groups[i];
    std::string list;
    for (size_t k = 0; k < g.partitions.size(); ++k) list += (k ? ", " : "") + std::to_string(g.partitions[k]);
    out += std::string(i ? ", " : "") + "{\"partition\": " + std::to_string(g.partition) + ", \"partitions\": [" +
           list + "], \"ranks\": " + std::to_string(g.ranks) + ", \"aggregators\": " + std::to_string(g.aggregators) +
           ", \"files\": " + std::to_string(g.files) + ", \"messages\": " + std::to_string(g.messages) +
           ", \"bytes\": " + std::to_string(g.bytes) + "}";
  }
  out += "], \"moved_messages\": " + std::to_string(moved_messages) +
         ", \"moved_bytes\": " + std::to_string(moved_bytes) + ", \"merge\": {\"mergers\": " + std::to_string(mergers) +
         ", \"files\": " + std::to_string(merge_files) + ", \"messages\": " + std::to_string(merge_messages) +
         ", \"bytes\": " + std::to_string(merge_bytes) + "}, \"levels\": [";
  for (size_t i = 0; i < levels.size(); ++i) {
    const LevelSummary& l = levels[i];
    out += std::string(i ? ", " : "") + "{\"level\": " + std::to_string(l.level) +
           ", \"blocks\": " + std::to_string(l.blocks) + ", \"files\": " + std::to_string(l.files) +
           ", \"aggregators\": " + std::to_string(l.aggregators) +
           ", \"senders_max\": " + std::to_string(l.senders_max) +
           ", \"senders_mean\": " + parallel::num(l.senders_mean) + ", \"messages\": " + std::to_string(l.messages) +
           ", \"messages_max\": " + std::to_string(l.messages_max) +
           ", \"messages_mean\": " + parallel::num(l.messages_mean) + ", \"bytes\": " + std::to_string(l.bytes) +
           ", \"bytes_max\": " + std::to_string(l.bytes_max) + ", \"bytes_mean\": " + parallel::num(l.bytes_mean) +
           ", \"cross_partition_messages\": " + std::to_string(l.cross_partition_messages) +
           ", \"chunk_bytes_max\": " + std::to_string(l.chunk_bytes_max);
    if (!l.aggregator_ranks.empty()) {
      out += ", \"aggregator_ranks\": [";
      for (size_t k = 0; k < l.aggregator_ranks.size(); ++k)
        out += (k ? ", " : "") + std::to_string(l.aggregator_ranks[k]);
      out += "]";
    }
    out += "}";
  }
  return out + "]}";
}

}  // namespace hzio
