// XXH3-64 compiled for AVX2, which the checksums of reads and writes use where the processor has it
// (stats_file.cpp chooses at run time): the same values as the xxHash library's portable build, about
// three times as fast on large payloads (bench/checksum_bench.py). Built only for x86-64.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstddef>
#include <cstdint>

namespace hzio::stats {

uint64_t checksum_avx2(const void* data, size_t size) { return XXH3_64bits(data, size); }

}  // namespace hzio::stats
