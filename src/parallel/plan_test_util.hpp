// What the tests of the collective plans share: the metadata of a 3-D float32 dataset, without files.
// Layer: parallel (tests only).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "format/idx_file.hpp"

namespace hzio::parallel::testing {

// A valid .idx of `fields` float32 fields over `dims`, the default bitmask, `bpb` bits per block and
// `bpf` blocks per file.
inline format::IdxFile make_idx(Point dims, int bpb, int64_t bpf, int fields) {
  format::IdxFile idx;
  idx.bitmask = format::Bitmask::default_for(dims, 3);
  idx.ndim = 3;
  idx.box.hi = dims;
  for (int f = 0; f < fields; ++f) idx.fields.push_back({"f" + std::to_string(f), {Scalar::kFloat32, 1}});
  idx.bits_per_block = bpb;
  idx.blocks_per_file = bpf;
  EXPECT_TRUE(idx.validate("p.idx").is_ok());
  return idx;
}

}  // namespace hzio::parallel::testing
