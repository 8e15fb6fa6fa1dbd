// Block header table encoding and checks (docs/format.md "Data files").
#include "format/block_header.hpp"

namespace hzio::format {
namespace {

uint32_t load_be32(const std::byte* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

void store_be32(std::byte* p, uint32_t v) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}

}  // namespace

Result<std::vector<BlockEntry>> parse_header_table(std::span<const std::byte> bytes, int field_count,
                                                   int64_t blocks_per_file, uint64_t file_size,
                                                   const std::string& file_name) {
  const uint64_t table = header_table_bytes(field_count, blocks_per_file);
  if (bytes.size() < table) {
    return corrupt("file " + file_name + ": header table needs " + std::to_string(table) + " bytes but the file has " +
                   std::to_string(bytes.size()));
  }
  std::vector<BlockEntry> entries(static_cast<size_t>(field_count) * static_cast<size_t>(blocks_per_file));
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::byte* p = bytes.data() + kFileHeaderBytes + i * kBlockEntryBytes;
    BlockEntry e;
    e.offset = uint64_t(load_be32(p + 8)) | (uint64_t(load_be32(p + 12)) << 32);
    e.size = load_be32(p + 16);
    e.flags = load_be32(p + 20);
    if (e.present() && (e.offset < table || e.offset > file_size || e.size > file_size - e.offset)) {
      return corrupt("file " + file_name + ": field " + std::to_string(i / blocks_per_file) + " slot " +
                     std::to_string(i % blocks_per_file) + ": payload [" + std::to_string(e.offset) + ", +" +
                     std::to_string(e.size) + ") lies outside the file's " + std::to_string(file_size) +
                     " bytes or inside its header table");
    }
    entries[i] = e;
  }
  return entries;
}

void serialize_header_table(const std::vector<BlockEntry>& entries, std::vector<std::byte>& out) {
  out.assign(kFileHeaderBytes + kBlockEntryBytes * entries.size(), std::byte{0});
  for (size_t i = 0; i < entries.size(); ++i) {
    const BlockEntry& e = entries[i];
    if (!e.present()) continue;
    std::byte* p = out.data() + kFileHeaderBytes + i * kBlockEntryBytes;
    store_be32(p + 8, static_cast<uint32_t>(e.offset));
    store_be32(p + 12, static_cast<uint32_t>(e.offset >> 32));
    store_be32(p + 16, e.size);
    store_be32(p + 20, e.flags);
  }
}

}  // namespace hzio::format
