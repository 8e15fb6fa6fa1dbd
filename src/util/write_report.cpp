// WriteReport::to_json (include/hzio/write_report.hpp).
#include "hzio/write_report.hpp"

#include <cstdio>

namespace hzio {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string phases(const PhaseTimes& p) {
  return "{\"restructure\": " + num(p.restructure) + ", \"hz\": " + num(p.hz) + ", \"aggregate\": " + num(p.aggregate) +
         ", \"compress\": " + num(p.compress) + ", \"stats\": " + num(p.stats) + ", \"write\": " + num(p.write) +
         ", \"commit\": " + num(p.commit) + ", \"stage\": " + num(p.stage) + ", \"other\": " + num(p.other) +
         ", \"total\": " + num(p.total) + "}";
}

}  // namespace

std::string WriteReport::to_json() const {
  std::string s =
      "{\"ranks\": " + std::to_string(ranks) + ", \"aggregators\": " + std::to_string(aggregators) +
      ", \"rounds\": " + std::to_string(rounds) + ", \"placement\": \"" + placement +
      "\", \"bytes\": " + std::to_string(bytes) + ", \"file_bytes\": " + std::to_string(file_bytes) +
      ", \"files\": " + std::to_string(files) + ", \"rank_conforming\": " + (rank_conforming ? "true" : "false") +
      ", \"messages\": " + std::to_string(messages) + ", \"message_bytes\": " + std::to_string(message_bytes) +
      ", \"partitions\": " + std::to_string(partitions) + ", \"index_space\": \"" + index_space + "\", \"groups\": [";
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    std::string list;
    for (size_t k = 0; k < g.partitions.size(); ++k) list += (k ? ", " : "") + std::to_string(g.partitions[k]);
    s += std::string(i ? ", " : "") + "{\"partition\": " + std::to_string(g.partition) + ", \"partitions\": [" + list +
         "], \"ranks\": " + std::to_string(g.ranks) + ", \"aggregators\": " + std::to_string(g.aggregators) +
         ", \"files\": " + std::to_string(g.files) + ", \"messages\": " + std::to_string(g.messages) +
         ", \"bytes\": " + std::to_string(g.bytes) + "}";
  }
  s += "], \"merge\": {\"mergers\": " + std::to_string(merge.mergers) + ", \"files\": " + std::to_string(merge.files) +
       ", \"messages\": " + std::to_string(merge.messages) + ", \"bytes\": " + std::to_string(merge.bytes) +
       ", \"seconds\": " + num(merge.seconds) + "}, \"moved_messages\": " + std::to_string(moved_messages) +
       ", \"moved_bytes\": " + std::to_string(moved_bytes) + ", \"max\": " + phases(max) +
       ", \"mean\": " + phases(mean) + ", \"levels\": [";
  for (size_t i = 0; i < levels.size(); ++i) {
    const auto& l = levels[i];
    s += std::string(i ? ", " : "") + "{\"level\": " + std::to_string(l.level) +
         ", \"blocks\": " + std::to_string(l.blocks) + ", \"bytes\": " + std::to_string(l.bytes) +
         ", \"hz_max\": " + num(l.hz_max) + ", \"hz_mean\": " + num(l.hz_mean) +
         ", \"write_max\": " + num(l.write_max) + ", \"write_mean\": " + num(l.write_mean) + "}";
  }
  return s + "]}";
}

}  // namespace hzio
