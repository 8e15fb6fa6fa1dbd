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
  PhaseTimes max;
  PhaseTimes mean;
  std::vector<LevelTimes> levels;

  // Local. The report as a JSON object.
  std::string to_json() const;
};

}  // namespace hzio
