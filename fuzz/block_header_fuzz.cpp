// Fuzz target for data file header tables and statistics sidecars with their checksums: decoding must
// accept or reject every byte string without crashing, every accepted entry must lie inside the claimed
// file, and every accepted sidecar must write back to one that reads the same.
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
    auto table = hzio::stats::parse_stats_file(bytes, comps, 2, "fuzz.hzstats");
    if (!table.is_ok()) continue;
    const size_t sums = table->version == 2 ? hzio::stats::checksum_parts(table->sub_block_bits) : 0;
    if (table->entries.size() != comps.size() * 2 || table->checksums.size() != table->entries.size() * sums)
      std::abort();
    // What is accepted writes back (as version 2) to a sidecar that reads the same.
    if (table->version != 2) continue;
    auto again = hzio::stats::parse_stats_file(hzio::stats::serialize_stats_file(*table), comps, 2, "again.hzstats");
    if (!again.is_ok() || again->checksums != table->checksums || again->data_file_size != table->data_file_size ||
        again->header_crc != table->header_crc || again->sub_block_bits != table->sub_block_bits)
      std::abort();
  }
  return 0;
}
