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
         ", \"commit\": " + num(p.commit) + ", \"total\": " + num(p.total) + "}";
}

}  // namespace

std::string WriteReport::to_json() const {
  std::string s = "{\"ranks\": " + std::to_string(ranks) + ", \"aggregators\": " + std::to_string(aggregators) +
                  ", \"rounds\": " + std::to_string(rounds) + ", \"placement\": \"" + placement +
                  "\", \"bytes\": " + std::to_string(bytes) + ", \"file_bytes\": " + std::to_string(file_bytes) +
                  ", \"files\": " + std::to_string(files) +
                  ", \"rank_conforming\": " + (rank_conforming ? "true" : "false") + ", \"max\": " + phases(max) +
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
