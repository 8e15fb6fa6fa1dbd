// WriteReport: phase timings and byte counts of one commit (flush), from one process or many ranks.
// Public C++ API; Python gives it as hzio.WriteReport (flush(), last_write_report), the MPI C API as JSON text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hzio {

// Seconds spent in each phase of a write. For parallel writes, one value per rank reduced to max or mean.
struct PhaseTimes {
  double restructure = 0;  // cutting each rank's boxes into per-block pieces
  double hz = 0;           // HZ ordering (whole blocks on their owner, pieces on the aggregator)
  double aggregate = 0;    // moving records to aggregators (MPI point-to-point messages)
  double compress = 0;     // codecs, on the aggregators
  double stats = 0;        // per-block statistics (min, max, count)
  double write = 0;        // data file writes and fsync
  double commit = 0;       // renames and the .idx
  // Collective writes: wall time in write calls copying samples into the writer's own memory since the
  // previous flush (0 for borrowed buffers), and the rest of the flush's wall time that no phase above
  // covers (waiting for other ranks in agreements, parsing received records). When phases ran on several
  // threads at once,
  // their seconds add up to more than the wall time and `other` is 0.
  double stage = 0;
  double other = 0;
  // Collective writes: stage plus the flush's wall time. One process: the sum of the phases.
  double total = 0;
};

// Per-level work, as in the PIDX paper's per-level table: blocks and bytes of the level, and the time
// ranks spent on them (max and mean over ranks).
struct LevelTimes {
  int level = 0;
  int64_t blocks = 0;
  int64_t bytes = 0;  // stored payload bytes
  double hz_max = 0, hz_mean = 0;
  double write_max = 0, write_mean = 0;
};

// A partitioned write (ParallelOptions::partitions): one group of ranks, writing its own partitions'
// data files within its own communicator.
struct PartitionGroupReport {
  int partition = 0;            // the partition naming the group (the one its ranks' samples lie in most)
  std::vector<int> partitions;  // every partition whose blocks the group writes
  int ranks = 0;
  int aggregators = 0;
  int64_t files = 0;     // data files the group wrote itself (shared files excluded)
  int64_t messages = 0;  // record messages between its ranks
  int64_t bytes = 0;     // bytes of those messages
};

// The shared data files of a partitioned write (those holding blocks of several partitions): each group
// collects its records of them, and one rank per file (the mergers, the group leaders in turn) receives
// every group's and writes the file.
struct MergeReport {
  int mergers = 0;
  int64_t files = 0;
  int64_t messages = 0;  // from groups to mergers
  int64_t bytes = 0;
  double seconds = 0;  // the slowest rank's time in the merge: sending, receiving, building and writing the files
};

struct WriteReport {
  int ranks = 1;
  int aggregators = 1;
  int rounds = 1;
  std::string placement = "serial";  // "localized", "uniform" or "serial"
  int64_t bytes = 0;                 // sample bytes handed to write_box by all ranks
  int64_t file_bytes = 0;            // payload bytes stored in data files
  int64_t files = 0;                 // data files written
  // Whether the bitmask is rank-conforming for the boxes of this write (hzio/index_template.hpp): each
  // rank staged one box of the first field and timestep written, numbered in Z order. Always true for
  // one process.
  bool rank_conforming = true;
  int64_t messages = 0;       // record messages between ranks (MPI point-to-point), all ranks
  int64_t message_bytes = 0;  // their bytes
  // Partitioned writes (ParallelOptions::partitions > 1); 1 and empty otherwise.
  int partitions = 1;
  std::string index_space = "global";  // "local": one dataset per partition (levels then stay empty)
  std::vector<PartitionGroupReport> groups;
  MergeReport merge;
  int64_t moved_messages = 0;  // parts of boxes straddling a partition plane, sent to another group
  int64_t moved_bytes = 0;
  PhaseTimes max;
  PhaseTimes mean;
  std::vector<LevelTimes> levels;

  // Local. The report as a JSON object.
  std::string to_json() const;
};

}  // namespace hzio
