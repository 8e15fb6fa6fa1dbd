// One round of a collective write as one rank sees it (docs/guide/parallel-io.md "Aggregation").
#include "parallel/round_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "format/file_name.hpp"

namespace hzio::parallel {

RoundPlan plan_round(const format::IdxFile& idx, const WritePlan& plan, const std::vector<int>& round,
                     const std::vector<BoxInfo>& boxes, OwnBoxes own, int rank, int ranks, const std::vector<bool>& raw,
                     const RecordShapeOf& shape_of, const Adoption* adoption) {
  const int64_t bpf = idx.blocks_per_file;
  // Who makes the records of box i for `dest`: the rank that staged it, or `dest` itself when it reads
  // the box where it lies in their node's memory.
  const auto maker = [&](size_t i, int dest) {
    const int owner = boxes[i].rank;
    if (!adoption || !adoption->adopted[i]) return owner;
    return adoption->node_of[static_cast<size_t>(owner)] == adoption->node_of[static_cast<size_t>(dest)] ? dest : owner;
  };
  // The blocks of an ascending list that a chunk holds for one field: its entries of a field are one
  // block range (interleaved datasets are refused).
  const auto in_chunk = [&](const Chunk& c, int field, const std::vector<uint64_t>& blocks) {
    const int64_t lo = std::max<int64_t>(c.entry_begin - field * bpf, 0),
                  hi = std::min<int64_t>(c.entry_end - field * bpf, bpf);
    if (lo >= hi) return std::span<const uint64_t>();
    const auto first = std::lower_bound(blocks.begin(), blocks.end(), static_cast<uint64_t>(c.first_block + lo));
    const auto last = std::lower_bound(first, blocks.end(), static_cast<uint64_t>(c.first_block + hi));
    return std::span<const uint64_t>(first, last);
  };
  const auto entry_of = [&](int field, uint64_t block) { return format::entry_in_file(idx, field, block); };
  // Records per block of the round, over every rank's boxes: a block's only record may be detached;
  // several are merged on the aggregator, in order.
  std::map<std::pair<int, int64_t>, int> records_of;  // (chunk, entry)
  for (int c : round) {
    const Chunk& chunk = plan.chunks[static_cast<size_t>(c)];
    for (size_t i = 0; i < boxes.size(); ++i)
      if (boxes[i].time == chunk.time)
        for (uint64_t block : in_chunk(chunk, boxes[i].field, *plan.box_blocks[i]))
          ++records_of[{c, entry_of(boxes[i].field, block)}];
  }
  const auto detached = [&](int c, int field, uint64_t block, const RecordShape& shape) {
    return shape.whole && shape.samples >= kDetachedBlockBytes && raw[static_cast<size_t>(field)] &&
           records_of[{c, entry_of(field, block)}] == 1;
  };
  RoundPlan io;
  // Sends, destination by destination; a rank's records for itself stay in its send buffer. The bulk
  // messages come first, then every detached block.
  io.send_bulk.assign(static_cast<size_t>(ranks) + 1, 0);
  std::vector<int> order(round);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return plan.chunks[static_cast<size_t>(a)].aggregator < plan.chunks[static_cast<size_t>(b)].aggregator;
  });
  size_t next = 0;
  int64_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    io.send_bulk[static_cast<size_t>(r)] = total;
    for (; next < order.size() && plan.chunks[static_cast<size_t>(order[next])].aggregator == r; ++next) {
      const int c = order[next];
      const Chunk& chunk = plan.chunks[static_cast<size_t>(c)];
      // This rank's boxes, and for its own chunk those it adopts, in `boxes` order (its own in staging order).
      const size_t first = adoption && r == rank ? 0 : own.first;
      const size_t last = adoption && r == rank ? boxes.size() : own.first + own.count;
      for (size_t i = first; i < last; ++i) {
        const BoxInfo& st = boxes[i];
        if (st.time != chunk.time || maker(i, r) != rank) continue;
        for (uint64_t b : in_chunk(chunk, st.field, *plan.box_blocks[i])) {
          const RecordShape shape = shape_of(st.field, st.box, b);
          const bool det = detached(c, st.field, b, shape);
          io.items.push_back({i, b, r, det, total, 0, det ? static_cast<int64_t>(shape.samples) : 0});
          total += static_cast<int64_t>(shape.bulk_bytes(det));
        }
      }
    }
  }
  io.send_bulk[static_cast<size_t>(ranks)] = total;
  for (auto& item : io.items) {
    if (!item.detached) continue;
    item.data_at = total;
    total += (item.data_bytes + 7) & ~int64_t{7};  // keeps every record in the buffer 8-byte aligned
  }
  io.send_bytes = total;
  // Receives: what every other rank's boxes put in the chunk this rank aggregates, in their sending
  // order; room for the detached blocks after the bulk messages, for when they have no buffered place.
  std::vector<int64_t> bulk_from(static_cast<size_t>(ranks), 0);
  std::vector<std::vector<RoundPlan::Incoming>> from(static_cast<size_t>(ranks));
  std::set<int64_t> entries;
  for (int c : round) {
    const Chunk& chunk = plan.chunks[static_cast<size_t>(c)];
    if (chunk.aggregator != rank) continue;
    io.chunk = c;  // the plan gives an aggregator one chunk per round
    for (size_t i = 0; i < boxes.size(); ++i) {
      const BoxInfo& b = boxes[i];
      if (b.time != chunk.time) continue;
      for (uint64_t block : in_chunk(chunk, b.field, *plan.box_blocks[i])) {
        entries.insert(entry_of(b.field, block));
        if (maker(i, rank) == rank) continue;
        const RecordShape shape = shape_of(b.field, b.box, block);
        const bool det = detached(c, b.field, block, shape);
        bulk_from[static_cast<size_t>(b.rank)] += static_cast<int64_t>(shape.bulk_bytes(det));
        if (det)
          from[static_cast<size_t>(b.rank)].push_back(
              {b.rank, entry_of(b.field, block), static_cast<int64_t>(shape.samples)});
      }
    }
  }
  io.recv_bulk.assign(static_cast<size_t>(ranks) + 1, 0);
  total = 0;
  for (int r = 0; r < ranks; ++r) {
    io.recv_bulk[static_cast<size_t>(r)] = total;
    total += bulk_from[static_cast<size_t>(r)];
  }
  io.recv_bulk[static_cast<size_t>(ranks)] = total;
  for (const auto& list : from)
    for (const auto& in : list) {
      io.incoming.push_back(in);
      total += (in.bytes + 7) & ~int64_t{7};
    }
  io.recv_bytes = total;
  io.entries.assign(entries.begin(), entries.end());
  return io;
}

}  // namespace hzio::parallel
