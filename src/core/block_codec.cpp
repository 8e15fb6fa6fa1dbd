// Block decode/encode and layout conversion (docs/format.md "Block payload").
#include "core/block_codec.hpp"

#include <cstring>

#include "format/block_header.hpp"
#include "hzorder/block_copy.hpp"

namespace hzio::core {

hzorder::Run block_grid(const hzorder::HzSpace& space, uint64_t block) {
  return space.block_runs(block, Layout::kRowMajor)[0];
}

Result<Layout> load_block(const DataFiles& files, const BlockLocation& where, const FieldCoding& field,
                          const hzorder::HzSpace& space, int ndim, uint64_t block, std::vector<std::byte>& scratch,
                          std::span<std::byte> out, ReadReport* report) {
  const auto& e = where.entry;
  const Layout layout = format::layout_of(e.flags);
  auto kind = codec::codec_kind_from_flags(e.flags);
  auto where_text = [&] { return "file " + where.file->path() + ": block " + std::to_string(block) + ": "; };
  if (!kind.is_ok()) return Status(kind.status().code(), where_text() + kind.status().message());
  if (report) report->bytes_read += e.size;
  if (kind.value() == codec::CodecKind::kRaw) {
    if (e.size != out.size()) {
      return corrupt(where_text() + "raw payload has " + std::to_string(e.size) + " bytes, expected " +
                     std::to_string(out.size()));
    }
    const Status read = where.file->read_at(e.offset, out);
    if (!read.is_ok()) return Status(read.code(), "block " + std::to_string(block) + ": " + read.message());
    HZIO_RETURN_IF_ERROR(files.check_payload(where, out));
    return layout;
  }
  scratch.resize(e.size);
  const Status read = where.file->read_at(e.offset, scratch);
  if (!read.is_ok()) return Status(read.code(), "block " + std::to_string(block) + ": " + read.message());
  HZIO_RETURN_IF_ERROR(files.check_payload(where, scratch));
  const hzorder::Run grid = block_grid(space, block);
  Status s = codec::decompress_block(kind.value(), field.codec, field.dtype, ndim, {grid.ns[0], grid.ns[1], grid.ns[2]},
                                     scratch, out);
  if (!s.is_ok()) return Status(s.code(), where_text() + s.message());
  return layout;
}

void convert_layout(const hzorder::HzSpace& space, uint64_t block, Layout from, std::span<const std::byte> in,
                    std::span<std::byte> out, size_t sample_bytes) {
  // The row-major block is a dense array of the block grid, so converting is one kernel pass.
  const hzorder::Run grid = block_grid(space, block);
  const Box all{{0, 0, 0}, {int64_t{1} << 62, int64_t{1} << 62, int64_t{1} << 62}};
  if (from == Layout::kRowMajor) {
    hzorder::ArrayView view{const_cast<std::byte*>(in.data()), {grid.p0, grid.delta, grid.ns}, sample_bytes};
    for (const auto& run : space.block_runs(block, Layout::kHzOrder))
      hzorder::copy_run(run, all, out.data(), view, hzorder::Direction::kArrayToBlock);
  } else {
    hzorder::ArrayView view{out.data(), {grid.p0, grid.delta, grid.ns}, sample_bytes};
    for (const auto& run : space.block_runs(block, Layout::kHzOrder))
      hzorder::copy_run(run, all, const_cast<std::byte*>(in.data()), view, hzorder::Direction::kBlockToArray);
  }
}

stats::BlockStats stats_as_stored(const FieldCoding& field, const hzorder::HzSpace& space, int ndim, uint64_t block,
                                  std::span<const std::byte> samples, std::span<const std::byte> payload,
                                  const Box& dataset_box, int sub_block_bits) {
  const bool lossy =
      field.codec.kind == codec::CodecKind::kZfp && field.codec.zfp_encode.kind != codec::ZfpMode::Kind::kReversible;
  if (lossy && !payload.empty()) {
    std::vector<std::byte> decoded(samples.size());
    const hzorder::Run grid = block_grid(space, block);
    if (codec::decompress_block(codec::CodecKind::kZfp, field.codec, field.dtype, ndim,
                                {grid.ns[0], grid.ns[1], grid.ns[2]}, payload, decoded)
            .is_ok()) {
      return stats::compute_block_stats(space, block, field.layout, decoded, field.dtype, dataset_box, sub_block_bits);
    }
    stats::BlockStats unknown;
    unknown.block.count = stats::kUnknown;
    return unknown;
  }
  return stats::compute_block_stats(space, block, field.layout, samples, field.dtype, dataset_box, sub_block_bits);
}

Result<uint32_t> encode_block(const FieldCoding& field, const hzorder::HzSpace& space, int ndim, uint64_t block,
                              std::span<const std::byte> samples, std::vector<std::byte>& payload) {
  uint32_t flags = format::block_flags(static_cast<uint32_t>(field.codec.kind), field.layout);
  if (field.codec.kind == codec::CodecKind::kRaw) {
    payload.assign(samples.begin(), samples.end());
    return flags;
  }
  const hzorder::Run grid = block_grid(space, block);
  HZIO_RETURN_IF_ERROR(
      codec::compress_block(field.codec, field.dtype, ndim, {grid.ns[0], grid.ns[1], grid.ns[2]}, samples, payload));
  return flags;
}

}  // namespace hzio::core
