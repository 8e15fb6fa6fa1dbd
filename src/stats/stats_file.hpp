// The statistics sidecar of a data file, `<data file>.hzstats`: hzio's extension, ignored by OpenVisus
// (docs/format.md "hzio extensions"). Bytes <-> table; the caller does the I/O. Layer: stats.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hzio/status.hpp"
#include "stats/block_stats.hpp"

namespace hzio::stats {

inline constexpr char kStatsSuffix[] = ".hzstats";

// The stats of every (field, slot) entry of one data file.
struct StatsTable {
  int sub_block_bits = 0;
  int64_t blocks_per_file = 0;
  std::vector<int> components;      // per field
  std::vector<BlockStats> entries;  // field * blocks_per_file + slot; block.count 0 = missing, kUnknown = unknown
};

// Local. The sidecar bytes for `table`, bound to the data file by its size and the CRC-32 of its header table.
std::vector<std::byte> serialize_stats_file(const StatsTable& table, uint64_t data_file_size, uint32_t header_crc);

// Local. Decodes a sidecar. Errors: kCorrupt (malformed, naming `name`), kNotFound when it describes another
// version of the data file (size or header CRC differ: the data file was rewritten by another tool).
Result<StatsTable> parse_stats_file(std::span<const std::byte> bytes, const std::vector<int>& components,
                                    int64_t blocks_per_file, uint64_t data_file_size, uint32_t header_crc,
                                    const std::string& name);

// Local. One range's statistics in the sidecar's record form (docs/format.md "Statistics sidecar"):
// count, then min and max per component; min and max are 0 when the count is 0 or unknown. The
// collective writer sends whole blocks' statistics in this form too. Little-endian hosts only.
size_t range_record_bytes(int comps);
// Local. Writes the record of `r` at `p`; returns the byte after it.
std::byte* write_range_record(std::byte* p, const RangeStats& r, int comps);
// Local. Reads a record written by write_range_record; returns the byte after it.
const std::byte* read_range_record(const std::byte* p, RangeStats& r, int comps);

// Local. CRC-32 (zlib's) of a byte range.
uint32_t crc32_of(std::span<const std::byte> bytes);

}  // namespace hzio::stats
