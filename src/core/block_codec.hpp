// One block's bytes: decode a stored payload, convert between HZ and row-major order, encode.
// Layer: core (joins codec, hzorder and data_files).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "codec/codec.hpp"
#include "core/data_files.hpp"
#include "hzorder/hz_space.hpp"
#include "stats/block_stats.hpp"

namespace hzio::core {

// What a field needs to encode and decode its blocks.
struct FieldCoding {
  DType dtype;
  codec::CodecSpec codec;
  Layout layout = Layout::kHzOrder;  // layout of new blocks
  double default_value = 0;
};

// Local, thread-safe. Reads a stored block, checks its payload against its checksums (when `where` has
// them: files.check_payload), decodes it into `out` (2^bpb samples) and returns the layout its flags
// say. Errors: kCorrupt naming the file and block, kIo. Adds bytes to `report`.
Result<Layout> load_block(const DataFiles& files, const BlockLocation& where, const FieldCoding& field,
                          const hzorder::HzSpace& space, int ndim, uint64_t block, std::vector<std::byte>& scratch,
                          std::span<std::byte> out, ReadReport* report);

// Local, thread-safe. Reorders a decoded block from one layout to the other.
void convert_layout(const hzorder::HzSpace& space, uint64_t block, Layout from, std::span<const std::byte> in,
                    std::span<std::byte> out, size_t sample_bytes);

// Local, thread-safe. Compresses a block (in field.layout order) into `payload`; returns the flags word.
Result<uint32_t> encode_block(const FieldCoding& field, const hzorder::HzSpace& space, int ndim, uint64_t block,
                              std::span<const std::byte> samples, std::vector<std::byte>& payload);

// Local, thread-safe. The statistics of a block as readers will see it: computed from `samples`, except for
// lossy codecs (zfp other than reversible), where `payload` is decoded first so that min and max bound
// the values a read returns.
stats::BlockStats stats_as_stored(const FieldCoding& field, const hzorder::HzSpace& space, int ndim, uint64_t block,
                                  std::span<const std::byte> samples, std::span<const std::byte> payload,
                                  const Box& dataset_box, int sub_block_bits);

// Local. The block's samples as one grid (its row-major run): for zfp dims and layout conversion.
hzorder::Run block_grid(const hzorder::HzSpace& space, uint64_t block);

}  // namespace hzio::core
