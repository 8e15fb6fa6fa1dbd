// The .midx mosaic of a dataset written in local index space (docs/format.md "Mosaics"): one IDX
// dataset per partition, placed at its offset in the whole domain. The text is OpenVisus's
// IdxMultipleDataset with mosaic='true'; hzio adds attributes of its own (the whole domain's dims,
// bitmask, bits per block and partition count, and each part's partition), which OpenVisus ignores.
// Bytes <-> struct, no I/O. Public C++ API; defined in the format layer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio {

// The most partitions a write or a mosaic may have.
constexpr int kMaxPartitions = 1 << 20;

struct Mosaic {
  struct Part {
    int partition = 0;
    std::string file;  // the part's .idx, relative to the .midx's folder
    Point offset{0, 0, 0};
  };
  int ndim = 3;
  Point dims{1, 1, 1};  // the whole domain, x first
  std::string bitmask;  // the whole domain's: its first log2(partitions) characters cut it
  int bits_per_block = 0;
  int partitions = 1;
  std::vector<Part> parts;  // ascending partition; partitions the domain does not reach have none

  // Local. The .midx text.
  std::string to_text() const;
  // Local. Parses a .midx that hzio wrote. Errors: kFormat naming what is missing or malformed (a
  // mosaic without hzio's attributes included).
  static Result<Mosaic> parse(std::string_view text);
};

// Local, pure. Checks that the mosaic's parts are the partitions its bitmask's first log2(partitions)
// characters cut its dims into: its bitmask is valid and covers the dims, each partition the dims reach
// has exactly one part, which starts at the partition's first sample, and no other part exists. Returns
// each part's box in the whole domain (x first), in the order of `parts`, and the bitmask each part's
// dataset must have. Errors: kFormat naming the first thing that does not hold.
struct MosaicGeometry {
  std::vector<Box> boxes;
  std::string part_bitmask;
};
Result<MosaicGeometry> check_mosaic(const Mosaic& mosaic);  // Local, pure: as above

// Local, pure. The .midx of a dataset created as `path`: "a/sim.idx" and "a/sim.midx" give "a/sim.midx".
std::string mosaic_path(const std::string& path);
// Local, pure. The file name (no folder) of partition p's dataset of the mosaic at `midx`: "sim_p3.idx".
std::string mosaic_part_name(const std::string& midx, int p);

}  // namespace hzio
