// Fuzz target for the .idx text parser (the first untrusted input of every open): IdxFile::parse must
// return OK or an error, never crash, hang or allocate from unchecked numbers; what parses must print
// and parse again to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/file_name.hpp"
#include "format/idx_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = hzio::format::IdxFile::parse(text, "/fuzz/input.idx");
  if (!parsed.is_ok()) return 0;
  const std::string again = parsed->to_text();
  auto reparsed = hzio::format::IdxFile::parse(again, "/fuzz/input.idx");
  if (!reparsed.is_ok() || reparsed->to_text() != again) std::abort();
  // File names for the first and last blocks must be computable or a clean error.
  (void)hzio::format::data_file_path(*parsed, "/fuzz", 0, 0);
  (void)hzio::format::data_file_path(*parsed, "/fuzz", parsed->total_blocks() - 1, 0);
  return 0;
}
