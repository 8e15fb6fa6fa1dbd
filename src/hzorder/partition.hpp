// Domain partitioning in global index space (docs/guide/parallel-io.md "Partitions"): the first
// k = log2(R) characters of the bitmask, the partition template, cut the domain into R boxes. Partition
// p holds the samples whose Z address starts with the k bits of p, so a block holds samples of one
// partition once its level has at least R blocks (blocks >= R), and a data file does once its blocks do
// (files from the R-th on, when blocks per file are a power of two). The coarser blocks and files are
// shared. Pure computation. Layer: hzorder.
#pragma once

#include <cstdint>
#include <vector>

#include "format/bitmask.hpp"
#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio::hzorder {

class Partitions {
 public:
  // Local. R = `count` partitions of `domain` (the dataset's box) under `bitmask` with blocks of
  // 2^bits_per_block samples. Errors: kInvalidArgument when count is not a power of two or the bitmask
  // has fewer than log2(count) characters.
  static Result<Partitions> make(const format::Bitmask& bitmask, int bits_per_block, const Box& domain, int count);

  int count() const { return static_cast<int>(boxes_.size()); }
  int bits() const { return bits_; }
  // Partition p's samples within the domain (empty when the domain does not reach it).
  const Box& box(int p) const { return boxes_[static_cast<size_t>(p)]; }
  // The partition holding a sample.
  int of_point(const Point& p) const;
  // The partition holding every sample of `block`, or -1 when the block is shared.
  int of_block(uint64_t block) const;
  // The partition holding every block of [first, first + blocks), or -1 when they span several.
  int of_blocks(uint64_t first, uint64_t blocks) const;
  // The samples of `box` in each partition (R counts).
  std::vector<int64_t> samples_of(const Box& box) const;

 private:
  int bits_ = 0;
  int bpb_ = 0;
  std::vector<std::pair<int, int>> prefix_;  // per template character: axis and coordinate bit
  std::vector<Box> boxes_;
};

}  // namespace hzio::hzorder
