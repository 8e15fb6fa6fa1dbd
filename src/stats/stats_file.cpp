// Encoding and checking of the .hzstats sidecar (docs/format.md "Statistics sidecar").
#include "stats/stats_file.hpp"

#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace hzio::stats {
namespace {

constexpr char kMagic[8] = {'H', 'Z', 'S', 'T', 'A', 'T', 'S', '1'};
constexpr size_t kHeaderBytes = 48;
constexpr uint32_t kChecksumXxh3 = 1;  // the checksum kind of version 2: XXH3, 64 bits, seed 0

template <class T>
void put(std::vector<std::byte>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
}

template <class T>
T get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

void put_range(std::vector<std::byte>& out, const RangeStats& r, int comps) {
  const size_t at = out.size();
  out.resize(at + range_record_bytes(comps));
  write_range_record(out.data() + at, r, comps);
}

}  // namespace

size_t range_record_bytes(int comps) { return 8 + 16 * static_cast<size_t>(comps); }

std::byte* write_range_record(std::byte* p, const RangeStats& r, int comps) {
  std::memcpy(p, &r.count, 8);  // little-endian hosts only (x86-64, aarch64)
  p += 8;
  for (int c = 0; c < comps; ++c, p += 16) {
    const bool have = r.count != 0 && r.count != kUnknown && static_cast<size_t>(c) < r.min.size();
    const double mn = have ? r.min[static_cast<size_t>(c)] : 0.0, mx = have ? r.max[static_cast<size_t>(c)] : 0.0;
    std::memcpy(p, &mn, 8);
    std::memcpy(p + 8, &mx, 8);
  }
  return p;
}

const std::byte* read_range_record(const std::byte* p, RangeStats& r, int comps) {
  r.count = get<uint64_t>(p);
  p += 8;
  r.min.resize(static_cast<size_t>(comps));
  r.max.resize(static_cast<size_t>(comps));
  for (int c = 0; c < comps; ++c, p += 16) {
    r.min[static_cast<size_t>(c)] = get<double>(p);
    r.max[static_cast<size_t>(c)] = get<double>(p + 8);
  }
  return p;
}

uint32_t crc32_of(std::span<const std::byte> bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  size_t at = 0;
  while (at < bytes.size()) {  // zlib takes uInt lengths
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes.size() - at, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), n);
    at += n;
  }
  return static_cast<uint32_t>(crc);
}

#if HZIO_CHECKSUM_AVX2
uint64_t checksum_avx2(const void* data, size_t size);  // checksum_avx2.cpp
#endif

uint64_t checksum_of(std::span<const std::byte> bytes) {
#if HZIO_CHECKSUM_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return checksum_avx2(bytes.data(), bytes.size());
#endif
  return XXH3_64bits(bytes.data(), bytes.size());
}

uint64_t checksum_part_bytes(uint64_t size, int sub_block_bits) {
  const uint64_t parts = checksum_parts(sub_block_bits);
  return (size + parts - 1) / parts;
}

void payload_checksums(std::span<const std::byte> payload, int sub_block_bits, uint64_t* out) {
  const uint64_t part = checksum_part_bytes(payload.size(), sub_block_bits);
  for (size_t k = 0; k < checksum_parts(sub_block_bits); ++k) {
    const uint64_t begin = std::min<uint64_t>(k * part, payload.size());
    const uint64_t end = std::min<uint64_t>(begin + part, payload.size());
    out[k] = checksum_of(payload.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
  }
}

Binding binding_of(const StatsTable& t, uint64_t size, uint32_t header_crc) {
  if (t.data_file_size != size) return Binding::kStale;
  if (t.header_crc == header_crc) return Binding::kCurrent;
  return t.version >= 2 ? Binding::kHeaderMismatch : Binding::kStale;
}

std::vector<std::byte> serialize_stats_file(const StatsTable& t) {
  std::vector<std::byte> out;
  for (char c : kMagic) out.push_back(static_cast<std::byte>(c));
  put<uint32_t>(out, kStatsVersion);
  put<uint32_t>(out, static_cast<uint32_t>(t.components.size()));
  put<uint64_t>(out, static_cast<uint64_t>(t.blocks_per_file));
  put<uint32_t>(out, static_cast<uint32_t>(t.sub_block_bits));
  put<uint32_t>(out, kChecksumXxh3);
  put<uint64_t>(out, t.data_file_size);
  put<uint32_t>(out, t.header_crc);
  put<uint32_t>(out, 0);
  for (int c : t.components) put<uint32_t>(out, static_cast<uint32_t>(c));
  if (t.components.size() % 2) put<uint32_t>(out, 0);
  const size_t parts = t.sub_block_bits > 0 ? size_t{1} << t.sub_block_bits : 0;
  const size_t sums = checksum_parts(t.sub_block_bits);
  for (size_t i = 0; i < t.entries.size(); ++i) {
    const int comps = t.components[i / static_cast<size_t>(t.blocks_per_file)];
    for (size_t k = 0; k < sums; ++k)
      put<uint64_t>(out, i * sums + k < t.checksums.size() ? t.checksums[i * sums + k] : 0);
    const BlockStats& e = t.entries[i];
    put_range(out, e.block, comps);
    for (size_t p = 0; p < parts; ++p)
      put_range(out, p < e.parts.size() ? e.parts[p] : RangeStats{e.block.count == 0 ? 0 : kUnknown, {}, {}}, comps);
  }
  put<uint64_t>(out, checksum_of(out));
  return out;
}

size_t sidecar_head_bytes(size_t fields) { return kHeaderBytes + (fields + fields % 2) * 4; }

namespace {
// Bytes of one entry record (format.md "Bytes"): version 2 starts it with its checksums.
uint64_t entry_record_bytes(int comps, int sub_block_bits, uint32_t version) {
  const uint64_t parts = sub_block_bits > 0 ? uint64_t{1} << sub_block_bits : 0;
  return (version == 2 ? 8 * checksum_parts(sub_block_bits) : 0) + (1 + parts) * range_record_bytes(comps);
}

// The size of a sidecar of `version`: header, component counts, entry records and, in version 2, its
// own checksum.
uint64_t sidecar_size(const std::vector<int>& components, int64_t blocks_per_file, int sub_block_bits,
                      uint32_t version) {
  uint64_t want = sidecar_head_bytes(components.size()) + (version == 2 ? 8 : 0);
  for (int c : components)
    want += static_cast<uint64_t>(blocks_per_file) * entry_record_bytes(c, sub_block_bits, version);
  return want;
}
}  // namespace

uint64_t sidecar_bytes(const std::vector<int>& components, int64_t blocks_per_file, int sub_block_bits) {
  return sidecar_size(components, blocks_per_file, sub_block_bits, 2);
}

uint64_t SidecarLayout::checksums_offset(size_t entry) const {
  const size_t bpf = static_cast<size_t>(head.blocks_per_file);
  uint64_t at = sidecar_head_bytes(head.components.size());
  for (size_t f = 0; f < entry / bpf; ++f) at += bpf * entry_record_bytes(head.components[f], head.sub_block_bits, 2);
  return at + (entry % bpf) * entry_record_bytes(head.components[entry / bpf], head.sub_block_bits, 2);
}

std::optional<SidecarLayout> sidecar_layout(std::span<const std::byte> head, uint64_t sidecar_size,
                                            const std::vector<int>& components, int64_t blocks_per_file) {
  const std::byte* p = head.data();
  if (head.size() < sidecar_head_bytes(components.size()) || std::memcmp(p, kMagic, 8) != 0 ||
      get<uint32_t>(p + 8) != 2 || get<uint32_t>(p + 12) != components.size() ||
      get<uint64_t>(p + 16) != static_cast<uint64_t>(blocks_per_file) || get<uint32_t>(p + 24) > 24 ||
      get<uint32_t>(p + 28) != kChecksumXxh3)
    return std::nullopt;
  for (size_t f = 0; f < components.size(); ++f)
    if (get<uint32_t>(p + kHeaderBytes + 4 * f) != static_cast<uint32_t>(components[f])) return std::nullopt;
  SidecarLayout out;
  out.head.version = 2;
  out.head.sub_block_bits = static_cast<int>(get<uint32_t>(p + 24));
  out.head.blocks_per_file = blocks_per_file;
  out.head.components = components;
  out.head.data_file_size = get<uint64_t>(p + 32);
  out.head.header_crc = get<uint32_t>(p + 40);
  out.sidecar_size = sidecar_size;
  if (sidecar_size != sidecar_bytes(components, blocks_per_file, out.head.sub_block_bits)) return std::nullopt;
  return out;
}

Result<StatsTable> parse_stats_file(std::span<const std::byte> bytes, const std::vector<int>& components,
                                    int64_t blocks_per_file, const std::string& name, bool with_entries) {
  const std::string where = "statistics file " + name + ": ";
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return corrupt(where + "bad magic or truncated header");
  const std::byte* p = bytes.data();
  StatsTable t;
  t.version = get<uint32_t>(p + 8);
  if (t.version != 1 && t.version != 2) return corrupt(where + "unknown version " + std::to_string(t.version));
  if (get<uint32_t>(p + 12) != components.size() || get<uint64_t>(p + 16) != static_cast<uint64_t>(blocks_per_file)) {
    return corrupt(where + "field count or blocks per file differ from the dataset");
  }
  // Checked before the cast: a word of 2^31 or more would turn negative and pass.
  const uint32_t sub_block_bits = get<uint32_t>(p + 24);
  if (sub_block_bits > 24) return corrupt(where + "sub-block bits " + std::to_string(sub_block_bits) + " out of range");
  t.sub_block_bits = static_cast<int>(sub_block_bits);
  if (t.version == 2 && get<uint32_t>(p + 28) != kChecksumXxh3)
    return corrupt(where + "unknown checksum kind " + std::to_string(get<uint32_t>(p + 28)));
  t.data_file_size = get<uint64_t>(p + 32);
  t.header_crc = get<uint32_t>(p + 40);
  t.blocks_per_file = blocks_per_file;
  t.components = components;
  const size_t parts = t.sub_block_bits > 0 ? size_t{1} << t.sub_block_bits : 0;
  const size_t sums = t.version == 2 ? checksum_parts(t.sub_block_bits) : 0;
  const uint64_t want = sidecar_size(components, blocks_per_file, t.sub_block_bits, t.version);
  if (bytes.size() != want)
    return corrupt(where + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want));
  if (t.version == 2 && checksum_of(bytes.first(bytes.size() - 8)) != get<uint64_t>(p + bytes.size() - 8))
    return corrupt(where + "its own checksum does not match (the sidecar is damaged)");
  for (size_t f = 0; f < components.size(); ++f) {
    if (get<uint32_t>(p + kHeaderBytes + 4 * f) != static_cast<uint32_t>(components[f]))
      return corrupt(where + "component counts differ");
  }
  p += sidecar_head_bytes(components.size());
  const size_t entries = components.size() * static_cast<size_t>(blocks_per_file);
  if (with_entries) t.entries.resize(entries);
  t.checksums.resize(entries * sums);
  for (size_t i = 0; i < entries; ++i) {
    const int comps = components[i / static_cast<size_t>(blocks_per_file)];
    for (size_t k = 0; k < sums; ++k, p += 8) t.checksums[i * sums + k] = get<uint64_t>(p);
    if (!with_entries) {
      p += (1 + parts) * range_record_bytes(comps);
      continue;
    }
    p = read_range_record(p, t.entries[i].block, comps);
    t.entries[i].parts.resize(parts);
    for (size_t k = 0; k < parts; ++k) p = read_range_record(p, t.entries[i].parts[k], comps);
  }
  return t;
}

}  // namespace hzio::stats
