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

// The sidecar version hzio writes: 2 adds payload checksums to version 1 (docs/format.md).
inline constexpr uint32_t kStatsVersion = 2;

// The stats and payload checksums of every (field, slot) entry of one data file, and the data file
// version they describe (its size and the CRC-32 of its header table).
struct StatsTable {
  uint32_t version = kStatsVersion;  // 1: no checksums (read only)
  int sub_block_bits = 0;
  int64_t blocks_per_file = 0;
  std::vector<int> components;      // per field
  std::vector<BlockStats> entries;  // field * blocks_per_file + slot; block.count 0 = missing, kUnknown = unknown
  // Version 2: checksum_parts(sub_block_bits) checksums per entry, entry-major (all zero for a missing
  // block). Empty in version 1.
  std::vector<uint64_t> checksums;
  uint64_t data_file_size = 0;
  uint32_t header_crc = 0;
};

// How a sidecar relates to the data file as it is now.
enum class Binding {
  kCurrent,         // same size and header table: the sidecar describes this file
  kStale,           // another size (or, for version 1, another header table): the file was rewritten elsewhere
  kHeaderMismatch,  // version 2, same size, another header table: the header table is damaged
};

// Local. Whether `table` describes a data file of `size` bytes whose header table has CRC `header_crc`.
Binding binding_of(const StatsTable& table, uint64_t size, uint32_t header_crc);

// Local. The sidecar bytes (version 2) for `table`. Its checksums must hold checksum_parts(sub_block_bits)
// values per entry.
std::vector<std::byte> serialize_stats_file(const StatsTable& table);

// Local. Decodes a sidecar of version 1 or 2 (the caller checks its binding_of the data file). With
// `with_entries` false the statistics are checked for size but not decoded (`entries` stays empty):
// reads that only verify checksums skip the cost of decoding every range's record. Errors: kCorrupt
// (malformed, or its own checksum fails, naming `name`).
Result<StatsTable> parse_stats_file(std::span<const std::byte> bytes, const std::vector<int>& components,
                                    int64_t blocks_per_file, const std::string& name, bool with_entries = true);

// Where each entry's checksums lie in a version 2 sidecar, for readers that take them entry by entry
// instead of loading the whole sidecar (a small read of a large data file).
struct SidecarLayout {
  StatsTable head;            // what the header says; no entries, no checksums
  uint64_t sidecar_size = 0;  // bytes
  // Local. The byte offset of entry `entry`'s checksums (field-major entry order): checksum_parts(
  // head.sub_block_bits) uint64 values.
  uint64_t checksums_offset(size_t entry) const;
};
// Local. How many leading bytes of a sidecar sidecar_layout() needs, for `fields` fields.
size_t sidecar_head_bytes(size_t fields);
// Local. The layout of a sidecar of `sidecar_size` bytes whose first sidecar_head_bytes() bytes are
// `head`, if it is a version 2 sidecar of this dataset's shape with exactly the size its header
// implies; nullopt otherwise (the caller then loads the whole sidecar through parse_stats_file, which
// names the problem). The sidecar's own checksum is not checked: an entry's checksums taken this way
// can only fail to match the payload they describe, never make a wrong payload pass.
std::optional<SidecarLayout> sidecar_layout(std::span<const std::byte> head, uint64_t sidecar_size,
                                            const std::vector<int>& components, int64_t blocks_per_file);
// Local. The sidecar size that sidecar_layout() expects for these parameters (version 2).
uint64_t sidecar_bytes(const std::vector<int>& components, int64_t blocks_per_file, int sub_block_bits);

// Local. Checksums per payload: the payload is cut into this many equal parts (the last may be shorter),
// so that a raw block's parts, which queries read alone, can be checked alone.
inline size_t checksum_parts(int sub_block_bits) { return size_t{1} << sub_block_bits; }
// Local. Bytes per checksum part of a payload of `size` bytes.
uint64_t checksum_part_bytes(uint64_t size, int sub_block_bits);
// Local, thread-safe. Writes the checksum_parts(sub_block_bits) checksums (XXH3-64 of each part) of
// `payload` to `out`.
void payload_checksums(std::span<const std::byte> payload, int sub_block_bits, uint64_t* out);
// Local, thread-safe. XXH3-64 of a byte range.
uint64_t checksum_of(std::span<const std::byte> bytes);

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
