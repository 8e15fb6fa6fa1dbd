// The write tally and the write report it makes (write_tally.hpp).
#include "core/write_tally.hpp"

namespace hzio::core {

void account_wall(PhaseTimes& p, double flush_seconds, double stage_seconds) {
  const double phases = p.restructure + p.hz + p.aggregate + p.compress + p.stats + p.write + p.commit;
  p.stage = stage_seconds;
  p.other = flush_seconds > phases ? flush_seconds - phases : 0.0;
  p.total = flush_seconds + stage_seconds;
}

WriteTally::WriteTally(int max_level)
    : level_hz(static_cast<size_t>(max_level) + 1),
      level_write(level_hz.size()),
      level_blocks(level_hz.size()),
      level_bytes(level_hz.size()) {}

void WriteTally::add_hz(int level, double seconds) {
  phases.hz += seconds;
  level_hz[static_cast<size_t>(level)] += seconds;
}

void WriteTally::add_block(int level, const BlockToWrite& r) {
  const size_t l = static_cast<size_t>(level);
  add_hz(level, r.make_seconds);
  phases.compress += r.compress_seconds;
  phases.stats += r.stats_seconds;
  phases.write += r.write_seconds;
  level_write[l] += r.write_seconds;
  level_blocks[l] += 1;
  level_bytes[l] += r.stored_bytes;
  file_bytes += r.stored_bytes;
}

std::vector<double> WriteTally::seconds() const {
  std::vector<double> out;
  for (auto phase : kPhases) out.push_back(phases.*phase);
  out.insert(out.end(), level_hz.begin(), level_hz.end());
  out.insert(out.end(), level_write.begin(), level_write.end());
  return out;
}

std::vector<int64_t> WriteTally::counts() const {
  std::vector<int64_t> out(level_blocks);
  out.insert(out.end(), level_bytes.begin(), level_bytes.end());
  out.push_back(file_bytes);
  return out;
}

void WriteTally::fill_reduced(std::span<const double> max, std::span<const double> sum, std::span<const int64_t> counts,
                              int ranks, WriteReport& r) const {
  const size_t phases_n = kPhases.size(), n = level_hz.size();
  for (size_t i = 0; i < phases_n; ++i) {
    r.max.*kPhases[i] = max[i];
    r.mean.*kPhases[i] = sum[i] / ranks;
  }
  r.levels.clear();
  for (size_t l = 0; l < n; ++l) {
    if (counts[l] == 0) continue;
    r.levels.push_back({static_cast<int>(l), counts[l], counts[n + l], max[phases_n + l], sum[phases_n + l] / ranks,
                        max[phases_n + n + l], sum[phases_n + n + l] / ranks});
  }
  r.file_bytes = counts[2 * n];
}

WriteReport WriteTally::report(int64_t files) const {
  WriteReport r;
  r.files = files;
  r.bytes = sample_bytes;
  const std::vector<double> s = seconds();
  fill_reduced(s, s, counts(), 1, r);
  return r;
}

}  // namespace hzio::core
