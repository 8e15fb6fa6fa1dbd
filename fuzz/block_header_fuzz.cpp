// Fuzz target for data file header tables and statistics sidecars: decoding must accept or reject
// every byte string without crashing, and every accepted entry must lie inside the claimed file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "format/block_header.hpp"
#include "stats/stats_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  for (int fields : {1, 2, 3}) {
    for (int64_t bpf : {1, 2, 8}) {
      const uint64_t file_size = size + (size % 7) * 1000;
      auto entries = hzio::format::parse_header_table(bytes, fields, bpf, file_size, "fuzz.bin");
      if (!entries.is_ok()) continue;
      for (const auto& e : *entries) {
        if (e.present() && (e.offset + e.size > file_size)) std::abort();
      }
    }
  }
  for (const auto& comps : {std::vector<int>{1}, std::vector<int>{1, 3}}) {
    auto table = hzio::stats::parse_stats_file(bytes, comps, 2, 1234, 99, "fuzz.hzstats");
    if (table.is_ok() && table->entries.size() != comps.size() * 2) std::abort();
  }
  return 0;
}
