// Fuzz target for the .idx text parser (the first untrusted input of every open): IdxFile::parse must
// return OK or an error, never crash, hang or allocate from unchecked numbers. What parses and passes
// check_writes_back (the condition of a writable open) must print and parse again to the same text, and
// the file names of its first and last blocks must be computable and recognised as the dataset's own.
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
  auto names = hzio::format::DataFileNames::of(*parsed, "/fuzz");
  for (int64_t block : {int64_t{0}, parsed->total_blocks() - 1}) {
    auto path = hzio::format::data_file_path(*parsed, "/fuzz", block, 0);
    if (path.is_ok() && names.is_ok() && !names->matches(path.value())) std::abort();
  }
  if (!parsed->check_writes_back("/fuzz/input.idx").is_ok()) return 0;  // read-only opens only
  const std::string again = parsed->to_text();
  auto reparsed = hzio::format::IdxFile::parse(again, "/fuzz/input.idx");
  if (!reparsed.is_ok() || reparsed->to_text() != again || !reparsed->check_writes_back("/fuzz/input.idx").is_ok()) {
    std::abort();
  }
  return 0;
}
