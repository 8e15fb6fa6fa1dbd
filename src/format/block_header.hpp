// The binary data file's header: 40 zero bytes, then one 40-byte entry per (field, block slot)
// (docs/format.md "Data files"). Layer: format. Bytes <-> structs, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio::format {

inline constexpr size_t kFileHeaderBytes = 40;
inline constexpr size_t kBlockEntryBytes = 40;
inline constexpr uint32_t kFlagRowMajor = kBlockFlagRowMajor;

// Local. The flags word of a block: the codec's code (format.md "Codecs") and its layout.
inline uint32_t block_flags(uint32_t codec_code, Layout layout) {
  return (codec_code & kBlockFlagCodecMask) | (layout == Layout::kRowMajor ? kFlagRowMajor : 0);
}
// Local. The codec code and the layout a flags word names.
inline uint32_t codec_code_of(uint32_t flags) { return flags & kBlockFlagCodecMask; }
inline Layout layout_of(uint32_t flags) { return (flags & kFlagRowMajor) ? Layout::kRowMajor : Layout::kHzOrder; }

// Where one block's payload sits in its file. offset 0 or size 0 means the block is missing.
struct BlockEntry {
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t flags = 0;  // low nibble: codec; 0x10: row-major layout
  bool present() const { return offset != 0 && size != 0; }
  bool operator==(const BlockEntry&) const = default;
};

// Local. Bytes of the header region for a file with this many fields and blocks per file.
inline uint64_t header_table_bytes(int field_count, int64_t blocks_per_file) {
  return kFileHeaderBytes +
         kBlockEntryBytes * static_cast<uint64_t>(field_count) * static_cast<uint64_t>(blocks_per_file);
}

// Local. Decodes the table (entry index = field * blocks_per_file + slot). Every present entry must lie
// inside [table end, file_size): otherwise kCorrupt naming `file_name`, the field, the slot and why.
Result<std::vector<BlockEntry>> parse_header_table(std::span<const std::byte> bytes, int field_count,
                                                   int64_t blocks_per_file, uint64_t file_size,
                                                   const std::string& file_name);

// Local. Encodes the whole header region (file header included) into `out` (resized).
void serialize_header_table(const std::vector<BlockEntry>& entries, std::vector<std::byte>& out);

}  // namespace hzio::format
