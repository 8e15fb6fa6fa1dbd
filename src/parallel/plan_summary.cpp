// Per-level figures of a collective write plan (plan_summary.hpp; docs/guide/parallel-io.md "hzio plan").
#include "parallel/plan_summary.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <iterator>
#include <map>
#include <tuple>

#include "core/block_codec.hpp"
#include "core/dataset_parts.hpp"
#include "format/file_name.hpp"

namespace hzio::parallel {
namespace {

// One record as the summary needs it, packed for sorting: level, aggregator, sender, round.
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

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
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
  // Each chunk's round, and the chunks of each file in entry order.
  std::vector<int> round_of(plan.chunks.size(), 0);
  for (size_t r = 0; r < plan.rounds.size(); ++r)
    for (int c : plan.rounds[r]) round_of[static_cast<size_t>(c)] = static_cast<int>(r);
  std::map<std::pair<int64_t, int64_t>, std::vector<int>> chunks_of_file;
  for (size_t c = 0; c < plan.chunks.size(); ++c)
    chunks_of_file[{plan.chunks[c].time, plan.chunks[c].first_block}].push_back(static_cast<int>(c));
  const int maxh = space.max_level();
  std::vector<LevelSummary> levels(static_cast<size_t>(maxh) + 1);
  std::vector<std::vector<int64_t>> level_files(levels.size());
  std::vector<Move> moves;
  std::vector<Move> of_box;
  const std::vector<int>* in_file = nullptr;
  std::pair<int64_t, int64_t> file_key{-1, -1};
  for (size_t i = 0; i < boxes.size(); ++i) {
    const BoxInfo& b = boxes[i];
    of_box.clear();
    for (uint64_t block : *plan.box_blocks[i]) {
      const int level = space.level_of_block(block);
      const int64_t first = format::first_block_of_file(idx, static_cast<int64_t>(block));
      const int64_t entry = format::entry_in_file(idx, b.field, block);
      if (file_key != std::make_pair(b.time, first)) {
        file_key = {b.time, first};
        in_file = &chunks_of_file.at(file_key);
      }
      // The file's chunks are in entry order: the last one starting at or before the entry holds it.
      const auto it = std::upper_bound(in_file->begin(), in_file->end(), entry, [&](int64_t e, int k) {
        return e < plan.chunks[static_cast<size_t>(k)].entry_begin;
      });
      const int c = *std::prev(it);
      const Chunk& chunk = plan.chunks[static_cast<size_t>(c)];
      Point lo, hi;
      const hzorder::Run g = core::block_grid(space, block);
      hzorder::run_range_in_box(g, b.box, lo, hi);
      const int64_t samples = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
      LevelSummary& l = levels[static_cast<size_t>(level)];
      l.chunk_bytes_max = std::max(l.chunk_bytes_max, chunk.bytes);
      s.bytes += samples * sample_bytes[static_cast<size_t>(b.field)];
      if (b.field == boxes[0].field && b.time == boxes[0].time)
        level_files[static_cast<size_t>(level)].push_back(first);
      of_box.push_back({level, chunk.aggregator, b.rank, round_of[static_cast<size_t>(c)],
                        samples * sample_bytes[static_cast<size_t>(b.field)]});
    }
    // One box's records for one aggregator in one round travel together: merge them here already.
    std::sort(of_box.begin(), of_box.end());
    for (const Move& m : of_box) {
      if (!moves.empty() && !(moves.back() < m) && !(m < moves.back())) {
        moves.back().bytes += m.bytes;
      } else {
        moves.push_back(m);
      }
    }
  }
  std::sort(moves.begin(), moves.end());
  // Blocks per level: the distinct blocks of all boxes, fields counted once per (field, time).
  std::vector<std::pair<int64_t, uint64_t>> all_blocks;  // (field-time group, block)
  std::map<std::pair<int, int64_t>, int64_t> group;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const auto key = std::make_pair(boxes[i].field, boxes[i].time);
    const int64_t gid = group.emplace(key, static_cast<int64_t>(group.size())).first->second;
    for (uint64_t block : *plan.box_blocks[i]) all_blocks.emplace_back(gid, block);
  }
  std::sort(all_blocks.begin(), all_blocks.end());
  all_blocks.erase(std::unique(all_blocks.begin(), all_blocks.end()), all_blocks.end());
  for (const auto& [gid, block] : all_blocks) ++levels[static_cast<size_t>(space.level_of_block(block))].blocks;
  const auto partition = [&](int rank) {
    return partition_of_rank.empty() ? 0 : partition_of_rank[static_cast<size_t>(rank)];
  };
  // Walk the sorted moves: runs of one (level, aggregator), inside them runs of one sender.
  for (size_t at = 0; at < moves.size();) {
    const int level = moves[at].level, agg = moves[at].aggregator;
    LevelSummary& l = levels[static_cast<size_t>(level)];
    ++l.aggregators;
    if (details) l.aggregator_ranks.push_back(agg);
    int64_t senders = 0, messages = 0, bytes = 0;
    int last_sender = -1, last_round = -1;
    for (; at < moves.size() && moves[at].level == level && moves[at].aggregator == agg; ++at) {
      const Move& m = moves[at];
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
  for (size_t h = 0; h < levels.size(); ++h) {
    LevelSummary& l = levels[h];
    l.level = static_cast<int>(h);
    auto& f = level_files[h];
    std::sort(f.begin(), f.end());
    l.files = static_cast<int64_t>(std::unique(f.begin(), f.end()) - f.begin());
    if (l.aggregators > 0) {
      l.senders_mean /= static_cast<double>(l.aggregators);
      l.messages_mean = static_cast<double>(l.messages) / static_cast<double>(l.aggregators);
      l.bytes_mean = static_cast<double>(l.bytes) / static_cast<double>(l.aggregators);
    }
    if (l.blocks > 0) s.levels.push_back(l);
  }
  return s;
}

int partition_of_point(const format::Bitmask& bitmask, int partitions, const Point& p) {
  const int bits = std::countr_zero(static_cast<unsigned>(partitions));
  std::array<int, kMaxDims> total{}, seen{};
  for (int i = 1; i <= bitmask.max_level(); ++i) ++total[static_cast<size_t>(bitmask.axis_at(i))];
  int id = 0;
  for (int i = 1; i <= bits; ++i) {
    const auto a = static_cast<size_t>(bitmask.axis_at(i));
    const int bit = total[a] - 1 - seen[a]++;  // an axis's first character is its top coordinate bit
    id = (id << 1) | static_cast<int>((p[a] >> bit) & 1);
  }
  return id;
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
  std::vector<int> partition_of_rank;
  for (int r = 0; r < ranks; ++r) {
    const Box& b = w.rank_boxes[static_cast<size_t>(r)];
    if (b.empty() || !idx.box.contains(b)) {
      return invalid_argument("rank " + std::to_string(r) + "'s box " + b.to_string() +
                              " is empty or not inside the dataset box " + idx.box.to_string());
    }
    for (int f = 0; f < static_cast<int>(idx.fields.size()); ++f) boxes.push_back({r, f, 0, b});
    partition_of_rank.push_back(partition_of_point(idx.bitmask, w.partitions, b.lo));
  }
  std::vector<int64_t> block_bytes, sample_bytes;
  for (const auto& f : idx.fields) {
    sample_bytes.push_back(static_cast<int64_t>(f.dtype.bytes()));
    block_bytes.push_back(sample_bytes.back() << idx.bits_per_block);
  }
  const PlanOptions options{w.uniform, w.aggregator_count, static_cast<size_t>(w.aggregator_bytes)};
  const WritePlan plan = make_write_plan(idx, space, boxes, ranks, options, block_bytes);
  return summarize_write_plan(idx, space, boxes, ranks, plan, sample_bytes, partition_of_rank, w.details);
}

std::string PlanSummary::to_json() const {
  std::string out = "{\"ranks\": " + std::to_string(ranks) + ", \"partitions\": " + std::to_string(partitions) +
                    ", \"bitmask\": \"" + bitmask + "\", \"rank_conforming\": " + (rank_conforming ? "true" : "false") +
                    ", \"files\": " + std::to_string(files) + ", \"chunks\": " + std::to_string(chunks) +
                    ", \"aggregators\": " + std::to_string(aggregators) + ", \"rounds\": " + std::to_string(rounds) +
                    ", \"round_bytes_max\": " + std::to_string(round_bytes_max) +
                    ", \"bytes\": " + std::to_string(bytes) + ", \"levels\": [";
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
