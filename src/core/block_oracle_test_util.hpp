// Brute-force oracles the core tests share. Layer: core (tests only).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "hzorder/hz_space.hpp"

namespace hzio::core::testing {

// For each sample i of `block` (hz address block * 2^bpb + i), its index in the block's row-major order,
// found by brute force: the sorted distinct coordinates of the block's points per axis give its grid,
// x fastest (docs/format.md "Order inside a block").
inline std::vector<uint64_t> row_major_index(const hzorder::HzSpace& space, uint64_t block) {
  const uint64_t n = uint64_t{1} << space.bits_per_block();
  std::array<std::set<int64_t>, kMaxDims> coords;
  for (uint64_t i = 0; i < n; ++i) {
    const Point p = space.hz_to_point((block << space.bits_per_block()) + i);
    for (int a = 0; a < kMaxDims; ++a) coords[a].insert(p[a]);
  }
  std::array<std::map<int64_t, uint64_t>, kMaxDims> pos;
  for (int a = 0; a < kMaxDims; ++a)
    for (int64_t c : coords[a]) pos[a].emplace(c, pos[a].size());
  EXPECT_EQ(coords[0].size() * coords[1].size() * coords[2].size(), n) << "block " << block << " is not a grid";
  std::vector<uint64_t> index(n);
  for (uint64_t i = 0; i < n; ++i) {
    const Point p = space.hz_to_point((block << space.bits_per_block()) + i);
    index[i] = pos[0][p[0]] + coords[0].size() * (pos[1][p[1]] + coords[1].size() * pos[2][p[2]]);
  }
  return index;
}

}  // namespace hzio::core::testing
