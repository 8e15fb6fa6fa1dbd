// Partitions of the domain by the bitmask's first characters (partition.hpp).
#include "hzorder/partition.hpp"

#include <algorithm>
#include <bit>

#include "hzio/mosaic.hpp"

namespace hzio::hzorder {

Result<Partitions> Partitions::make(const format::Bitmask& bitmask, int bits_per_block, const Box& domain, int count) {
  if (count < 1 || !std::has_single_bit(static_cast<unsigned>(count))) {
    return invalid_argument("partitions must be a power of two, got " + std::to_string(count));
  }
  Partitions p;
  p.bits_ = std::countr_zero(static_cast<unsigned>(count));
  p.bpb_ = bits_per_block;
  if (p.bits_ > bitmask.max_level()) {
    return invalid_argument(std::to_string(count) + " partitions need a bitmask of at least " +
                            std::to_string(p.bits_) + " characters; " + bitmask.text() + " has " +
                            std::to_string(bitmask.max_level()));
  }
  // An axis's first character is its top coordinate bit.
  std::array<int, kMaxDims> total{}, seen{};
  for (int i = 1; i <= bitmask.max_level(); ++i) ++total[static_cast<size_t>(bitmask.axis_at(i))];
  for (int i = 1; i <= p.bits_; ++i) {
    const auto a = static_cast<size_t>(bitmask.axis_at(i));
    p.prefix_.emplace_back(static_cast<int>(a), total[a] - 1 - seen[a]++);
  }
  for (int q = 0; q < count; ++q) {
    Box b{{0, 0, 0}, bitmask.pow2_dims()};
    for (int i = 0; i < p.bits_; ++i) {
      const auto [a, bit] = p.prefix_[static_cast<size_t>(i)];
      const int64_t half = int64_t{1} << bit;
      if ((q >> (p.bits_ - 1 - i)) & 1)
        b.lo[a] += half;
      else
        b.hi[a] -= half;
    }
    p.boxes_.push_back(b.intersect(domain));
    if (p.boxes_.back().empty()) p.boxes_.back() = Box{{0, 0, 0}, {0, 0, 0}};
  }
  return p;
}

int Partitions::of_point(const Point& pt) const {
  int q = 0;
  for (const auto& [a, bit] : prefix_) q = (q << 1) | static_cast<int>((pt[a] >> bit) & 1);
  return q;
}

int Partitions::of_block(uint64_t block) const {
  if (bits_ == 0) return 0;
  if (block < (uint64_t{1} << bits_)) return -1;
  // Block b >= 1 holds samples of level m + bpb + 1 (m = floor(log2 b)), whose index within the level
  // starts with the Z address's top bits: the partition is the top `bits_` of the block's m.
  const int m = std::bit_width(block) - 1;
  return static_cast<int>((block - (uint64_t{1} << m)) >> (m - bits_));
}

int Partitions::of_blocks(uint64_t first, uint64_t blocks) const {
  const uint64_t last = first + std::max<uint64_t>(blocks, 1) - 1;
  const int p = of_block(first);
  // Within a level the partitions of consecutive blocks do not decrease; a range crossing levels runs
  // from the last partition of one to the first of the next.
  if (p < 0 || p != of_block(last) || std::bit_width(first) != std::bit_width(last)) return bits_ == 0 ? 0 : -1;
  return p;
}

std::vector<int64_t> Partitions::samples_of(const Box& box) const {
  std::vector<int64_t> out(boxes_.size(), 0);
  for (size_t q = 0; q < boxes_.size(); ++q) out[q] = box.intersect(boxes_[q]).sample_count();
  return out;
}

}  // namespace hzio::hzorder

namespace hzio {

Result<MosaicGeometry> check_mosaic(const Mosaic& m) {
  auto parsed = format::Bitmask::parse(m.bitmask);
  if (!parsed.is_ok()) return format_error("mosaic: hzio_bitmask: " + parsed.status().message());
  const format::Bitmask& bitmask = parsed.value();
  Box domain{{0, 0, 0}, {1, 1, 1}};
  for (int a = 0; a < m.ndim; ++a) {
    domain.hi[a] = m.dims[a];
    if (m.dims[a] > bitmask.pow2_dims()[a]) {
      return format_error("mosaic: hzio_bitmask " + m.bitmask + " does not cover hzio_dims along axis " +
                          std::to_string(a));
    }
  }
  if (m.bits_per_block > bitmask.max_level()) return format_error("mosaic: hzio_bits_per_block above the bitmask's");
  auto made = hzorder::Partitions::make(bitmask, m.bits_per_block, domain, m.partitions);
  if (!made.is_ok() || made.value().bits() >= bitmask.max_level())
    return format_error("mosaic: hzio_partitions " + std::to_string(m.partitions) + " does not fit " + m.bitmask);
  const hzorder::Partitions& parts = made.value();
  MosaicGeometry g;
  g.part_bitmask = "V" + m.bitmask.substr(1 + static_cast<size_t>(parts.bits()));
  size_t next = 0;
  for (int p = 0; p < parts.count(); ++p) {
    const Box& box = parts.box(p);
    const bool listed = next < m.parts.size() && m.parts[next].partition == p;
    if (box.empty() != !listed) {
      return format_error("mosaic: partition " + std::to_string(p) +
                          (listed ? " lies outside hzio_dims but has a part" : " has no part"));
    }
    if (!listed) continue;
    for (int a = 0; a < m.ndim; ++a) {
      if (m.parts[next].offset[a] != box.lo[a]) {
        return format_error("mosaic: the offset of partition " + std::to_string(p) +
                            "'s part is not the partition's first sample; the partition is " + box.to_string());
      }
    }
    g.boxes.push_back(box);
    ++next;
  }
  return g;
}

}  // namespace hzio
