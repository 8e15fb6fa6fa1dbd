// Fuzz target for data file header tables (docs/format.md "Block header table"): decoding must accept or
// reject every byte string without crashing, and every accepted entry must lie inside the claimed file.
// Statistics sidecars and their checksums have their own target, sidecar_fuzz.cpp.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "format/block_header.hpp"

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
  return 0;
}
