// What one process's writes cost until their commit: seconds per phase, and per level the blocks, bytes
// and seconds; the write report of one process, or, reduced over ranks, of a collective write
// (docs/guide/parallel-io.md "Write report"). Layer: core.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/block_writer.hpp"
#include "hzio/write_report.hpp"

namespace hzio::core {

// The phases of PhaseTimes, in the order reductions pack them.
inline constexpr std::array<double PhaseTimes::*, 10> kPhases = {
    &PhaseTimes::restructure, &PhaseTimes::hz,     &PhaseTimes::aggregate, &PhaseTimes::compress, &PhaseTimes::stats,
    &PhaseTimes::write,       &PhaseTimes::commit, &PhaseTimes::stage,     &PhaseTimes::other,    &PhaseTimes::total};

// Local. Completes a collective write's phases: `flush_seconds` is the flush's wall time, `stage_seconds`
// the write calls' staging; sets stage, other (the flush's time outside every phase) and total.
void account_wall(PhaseTimes& p, double flush_seconds, double stage_seconds);

struct WriteTally {
  // Local. An empty tally for blocks of levels 0..max_level.
  explicit WriteTally(int max_level);

  PhaseTimes phases;
  int64_t sample_bytes = 0;  // bytes handed to write_box

  // Local. Adds HZ-ordering seconds spent on a block of `level` (at its source, for collective writes).
  void add_hz(int level, double seconds);
  // Local. Adds a block the block writer wrote: its seconds per phase, its level's counts.
  void add_block(int level, const BlockToWrite& record);

  // Local. The report of this process alone: max and mean are its own figures; phases.total as set.
  WriteReport report(int64_t files) const;
  // The figures a reduction over processes combines: seconds (phases, then per level HZ and write) to be
  // reduced by max and by sum, and counts (per level blocks and bytes, then file bytes) by sum.
  std::vector<double> seconds() const;
  std::vector<int64_t> counts() const;
  // Local. Fills the timing and byte fields of `report` from reduced figures of `ranks` processes.
  void fill_reduced(std::span<const double> max, std::span<const double> sum, std::span<const int64_t> counts,
                    int ranks, WriteReport& report) const;

  // Per level: HZ-ordering and write seconds, blocks and stored bytes; and the data file bytes.
  std::vector<double> level_hz, level_write;
  std::vector<int64_t> level_blocks, level_bytes;
  int64_t file_bytes = 0;
};

}  // namespace hzio::core
