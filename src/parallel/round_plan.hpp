// The plan of one round of a collective write, as one rank sees it: the records it makes for each
// aggregator and where they sit in its send buffer, and the records it receives as an aggregator and
// where they land. Every size follows from the write plan and the boxes every rank staged, so a round
// needs no message-size exchange. Pure computation (no MPI, no I/O). Layer: parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "format/idx_file.hpp"
#include "parallel/records.hpp"
#include "parallel/write_plan.hpp"

namespace hzio::parallel {

// Two ranks exchange one bulk message (records, and the headers of detached records) and one message per
// detached block (RecordShape), which the aggregator receives straight into the block's place in its
// data file's direct buffer.
struct RoundPlan {
  struct Item {  // a record this rank makes for `dest` (itself included)
    size_t box;  // which of every rank's boxes (an index into plan_round's `boxes`)
    uint64_t block;
    int dest;
    bool detached;
    int64_t bulk_at;     // in the send buffer: the record, or a detached record's header and statistics
    int64_t data_at;     // in the send buffer: a detached record's samples
    int64_t data_bytes;  // a detached record's sample bytes (unpadded: they may land in a direct buffer); else 0
  };
  struct Incoming {  // a detached block from another rank, in that rank's sending order
    int source;
    int64_t entry;
    int64_t bytes;
  };
  std::vector<Item> items;         // by destination, then in the order this rank staged its boxes
  std::vector<int64_t> send_bulk;  // per rank, plus the end: bulk message offsets in the send buffer
  std::vector<int64_t> recv_bulk;  // per rank, plus the end: bulk message offsets in the receive buffer
  std::vector<Incoming> incoming;  // by source
  int64_t send_bytes = 0, recv_bytes = 0;
  int chunk = -1;                // the chunk this rank aggregates in the round (at most one), or -1
  std::vector<int64_t> entries;  // that chunk's entries that get records, ascending
};

// This rank's boxes among every rank's: boxes[first + k] for k < count, in staging order.
struct OwnBoxes {
  size_t first = 0;
  size_t count = 0;
};

// Boxes an aggregator reads where they lie (NodeMemory): box i is adopted when every rank on its node can
// read it there; the aggregators on that node then make its records for their own chunks themselves.
struct Adoption {
  std::vector<char> adopted;  // per box of plan_round's `boxes`
  std::vector<int> node_of;   // per rank: its node
};

// The shape of the record of (field, box, block): record_shape for a dataset.
using RecordShapeOf = std::function<RecordShape(int field, const Box& box, uint64_t block)>;

// Local, deterministic. The plan of round `round` (chunk indices of plan.rounds) for `rank` of `ranks`.
// `boxes`: every rank's, in rank order; raw[f]: field f has the raw codec (only raw blocks travel
// detached). Every rank's plan of a round agrees with every other's: what one sends to a rank is what
// that rank expects from it. With `adoption`, an aggregator makes the records of the boxes it adopts for
// its own chunk (in `boxes` order), and their ranks send nothing for them.
RoundPlan plan_round(const format::IdxFile& idx, const WritePlan& plan, const std::vector<int>& round,
                     const std::vector<BoxInfo>& boxes, OwnBoxes own, int rank, int ranks, const std::vector<bool>& raw,
                     const RecordShapeOf& shape_of, const Adoption* adoption = nullptr);

}  // namespace hzio::parallel
