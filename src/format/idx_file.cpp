// Parsing, validating and writing the .idx text (docs/format.md "The .idx file").
#include "format/idx_file.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "format/file_name.hpp"
#include "format/idx_text.hpp"

namespace hzio::format {
namespace {

// The offset of the first byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, at most U+10FFFF), or npos. Names and templates reach Python and file paths.
size_t first_invalid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= text.size()) return i;
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

// Splits the text into (key, value) pairs by the OpenVisus rules: trimmed lines, '#' comments,
// "(key)" lines start an entry, following lines join with single spaces.
std::vector<std::pair<std::string, std::string>> split_keys(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    std::string line = trim(text.substr(i, j - i));
    i = j + 1;
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '(') {
      out.emplace_back(line, "");
    } else if (!out.empty()) {
      auto& v = out.back().second;
      v += (v.empty() ? "" : " ") + line;
    } else {
      out.emplace_back("", line);  // text before the first key: reported by parse()
    }
    if (j == text.size()) break;
  }
  return out;
}

}  // namespace

std::string default_data_folder(std::string_view idx_name) {
  const size_t slash = idx_name.find_last_of('/');
  std::string name(slash == std::string_view::npos ? idx_name : idx_name.substr(slash + 1));
  const size_t dot = name.find_last_of('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

std::string default_filename_template(std::string_view folder, int block_bits) {
  std::string t = "./" + std::string(folder);
  while (block_bits > 16) {
    t += "/%02x";
    block_bits -= 8;
  }
  return t + "/%04x.bin";
}

Result<IdxFile> IdxFile::parse(std::string_view text, std::string_view idx_name) {
  const std::string where = "file " + std::string(idx_name) + ": ";
  if (text.find('\0') != std::string_view::npos) return format_error(where + "not a text .idx (NUL byte)");
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos)
    return format_error(where + "not UTF-8 text (byte " + std::to_string(bad) + ")");
  std::map<std::string, std::string> kv;
  IdxFile f;
  for (auto& [key, value] : split_keys(text)) {
    if (key.empty()) return format_error(where + "text before the first (key): '" + value.substr(0, 40) + "'");
    static const char* kKnown[] = {"(version)",
                                   "(bits)",
                                   "(box)",
                                   "(fields)",
                                   "(bitsperblock)",
                                   "(blocksperfile)",
                                   "(interleave block)",
                                   "(interleave)",
                                   "(filename_template)",
                                   "(time)",
                                   "(physic_box)",
                                   "(logic_to_physic)",
                                   "(axis)",
                                   "(missing_blocks)",
                                   "(arco)"};
    if (std::find(std::begin(kKnown), std::end(kKnown), key) != std::end(kKnown)) {
      kv[key == "(interleave)" ? "(interleave block)" : key] = value;
    } else {
      f.set_extra_line(key, value);  // kept verbatim: "(bitsperblock" must not come back as a known key
    }
  }
  for (const char* required : {"(version)", "(box)", "(fields)", "(bits)"}) {
    if (!kv.count(required)) return format_error(where + "missing required key " + required);
  }
  int64_t version = 0;
  if (!parse_leading_int(kv["(version)"], version) || version < 1 || version > 6) {
    return format_error(where + "(version) '" + kv["(version)"] + "' is not 1..6");
  }
  if (version < 6) return unsupported(where + "IDX version " + std::to_string(version) + " (only 6 is supported)");
  f.version = 6;
  auto bits = Bitmask::parse(trim(kv["(bits)"]));
  if (!bits.is_ok()) return Status(bits.status().code(), where + "(bits): " + bits.status().message());
  f.bitmask = bits.value();
  f.ndim = f.bitmask.pdim();
  auto box_tokens = split_ws(kv["(box)"]);
  if (box_tokens.size() < static_cast<size_t>(2 * f.ndim)) {
    return format_error(where + "(box) '" + kv["(box)"] + "' has fewer than " + std::to_string(f.ndim) + " pairs");
  }
  for (int a = 0; a < f.ndim; ++a) {
    int64_t lo = 0, hi = 0;
    if (!parse_int(box_tokens[2 * a], lo) || !parse_int(box_tokens[2 * a + 1], hi) || hi < lo || lo < 0) {
      return format_error(where + "(box) '" + kv["(box)"] + "' is not pairs of integers lo <= hi");
    }
    f.box.lo[a] = lo;
    f.box.hi[a] = hi + 1;
  }
  auto fields = parse_fields(kv["(fields)"]);
  if (!fields.is_ok()) return format_error(where + "(fields): " + fields.status().message());
  f.fields = std::move(fields).value();
  for (const auto& fd : f.fields) {
    if (!fd.filter.empty() && fd.filter != "identity") {
      return unsupported(where + "field '" + fd.name + "' uses filter(" + fd.filter + ")");
    }
  }
  auto read_int = [&](const char* key, int64_t& out) -> Status {
    if (!kv.count(key) || trim(kv[key]).empty()) return Status::ok();
    if (!parse_leading_int(kv[key], out)) return format_error(where + key + " '" + kv[key] + "' is not an integer");
    return Status::ok();
  };
  int64_t bpb = 0, bpf = 0, missing = 0, arco = 0;
  HZIO_RETURN_IF_ERROR(read_int("(bitsperblock)", bpb));
  HZIO_RETURN_IF_ERROR(read_int("(blocksperfile)", bpf));
  HZIO_RETURN_IF_ERROR(read_int("(interleave block)", f.interleave));
  HZIO_RETURN_IF_ERROR(read_int("(missing_blocks)", missing));
  HZIO_RETURN_IF_ERROR(read_int("(arco)", arco));
  if (arco > 0) return unsupported(where + "ARCO datasets ((arco) > 0) are not supported");
  if (bpb < 0 || bpb > kMaxLevels)
    return format_error(where + "(bitsperblock) " + std::to_string(bpb) + " out of range");
  f.bits_per_block = static_cast<int>(bpb);
  f.blocks_per_file = bpf;
  f.missing_blocks = static_cast<int>(missing);
  f.filename_template = trim(kv["(filename_template)"]);
  if (kv.count("(time)")) {
    auto t = parse_time(kv["(time)"]);
    if (!t.is_ok()) return format_error(where + t.status().message());
    f.time = t.value();
  }
  f.axis = kv["(axis)"];
  f.physic_box = kv["(physic_box)"];
  f.logic_to_physic = kv["(logic_to_physic)"];
  HZIO_RETURN_IF_ERROR(f.validate(idx_name));
  return f;
}

Status IdxFile::validate(std::string_view idx_name) {
  const std::string where = "file " + std::string(idx_name) + ": ";
  if (fields.empty()) return format_error(where + "no fields");
  ndim = bitmask.pdim();
  if (ndim < 1) return format_error(where + "no bitmask");
  Point dims{1, 1, 1};
  for (int a = 0; a < kMaxDims; ++a) dims[a] = box.hi[a];
  auto cover = bitmask.check_covers(dims);
  if (!cover.is_ok()) return format_error(where + cover.message());
  const int maxh = bitmask.max_level();
  if (bits_per_block <= 0) bits_per_block = std::min(maxh, 16);
  bits_per_block = std::min(bits_per_block, maxh);
  if (fields.size() > kMaxFields) {
    return format_error(where + std::to_string(fields.size()) + " fields, more than hzio's limit of " +
                        std::to_string(kMaxFields) + " (docs/format.md \"Limits\")");
  }
  for (const auto& fd : fields) {
    // A block is decoded whole: its size is what any read of it allocates.
    if (fd.dtype.bytes() > static_cast<size_t>(kMaxBlockBytes >> bits_per_block)) {
      return format_error(where + "(bitsperblock) " + std::to_string(bits_per_block) + ": a block of field '" +
                          fd.name + "' would hold " + std::to_string(int64_t{1} << bits_per_block) + " samples of " +
                          std::to_string(fd.dtype.bytes()) + " bytes, more than hzio's limit of " +
                          std::to_string(kMaxBlockBytes) + " bytes per block (docs/format.md \"Limits\")");
    }
  }
  if (time.declared && !time.any && time.count() > kMaxTimesteps) {
    return format_error(where + "(time) lists more than hzio's limit of " + std::to_string(kMaxTimesteps) +
                        " timesteps (docs/format.md \"Limits\")");
  }
  if (filename_template.empty())
    filename_template = default_filename_template(default_data_folder(idx_name), maxh - bits_per_block);
  if (blocks_per_file == -1) blocks_per_file = total_blocks();
  if (blocks_per_file == 0) {
    if (filename_template.find('%') == std::string::npos) {
      blocks_per_file = total_blocks();
    } else {
      int64_t block_bytes = 0;
      for (const auto& fd : fields) block_bytes += samples_per_block() * static_cast<int64_t>(fd.dtype.bytes());
      blocks_per_file =
          std::clamp<int64_t>((int64_t{128} << 20) / std::max<int64_t>(block_bytes, 1), 1, total_blocks());
    }
  }
  if (blocks_per_file < 1 || blocks_per_file > (int64_t{1} << 40)) {
    return format_error(where + "(blocksperfile) " + std::to_string(blocks_per_file) + " out of range");
  }
  // A template without a field names one file for every block: with fewer slots than blocks, blocks
  // would share slots and read (or overwrite) each other's entries.
  if (filename_template.find('%') == std::string::npos && blocks_per_file < total_blocks() && interleave <= 1) {
    return format_error(where + "(filename_template) '" + filename_template + "' names one file for all " +
                        std::to_string(total_blocks()) + " blocks, but (blocksperfile) is " +
                        std::to_string(blocks_per_file));
  }
  if (interleave < 0) return format_error(where + "(interleave block) is negative");
  if (time.declared && !time.template_text.empty() &&
      std::count(time.template_text.begin(), time.template_text.end(), '%') != 1) {
    return format_error(where + "(time) template '" + time.template_text + "' needs exactly one %d field");
  }
  if (filename_template.size() > 4096 || time.template_text.size() > 4096) {
    return format_error(where + "a file name template is longer than 4096 characters");
  }
  // A template that names no file cannot serve any read: refused here, not at the first block.
  if (auto name =
          data_file_path(*this, "/", 0, time.declared && !time.any && !time.ranges.empty() ? time.ranges[0][0] : 0);
      !name.is_ok()) {
    return format_error(where + name.status().message());
  }
  return Status::ok();
}

namespace {

// The values a scalar can take, as [lo, hi) in doubles; floats are closed at both ends.
std::pair<double, double> scalar_range(Scalar scalar) {
  switch (scalar) {
    case Scalar::kInt8:
      return {-128, 128};
    case Scalar::kUint8:
      return {0, 256};
    case Scalar::kInt16:
      return {-32768, 32768};
    case Scalar::kUint16:
      return {0, 65536};
    case Scalar::kInt32:
      return {-2147483648.0, 2147483648.0};
    case Scalar::kUint32:
      return {0, 4294967296.0};
    case Scalar::kInt64:
      return {-9223372036854775808.0, 9223372036854775808.0};
    case Scalar::kUint64:
      return {0, 18446744073709551616.0};
    case Scalar::kFloat32:
      return {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
    case Scalar::kFloat64:
      break;
  }
  return {-std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
}

}  // namespace

std::optional<int> sub_block_bits_of(const IdxFile& idx) {
  const std::string* v = idx.find_extra("hzio stats");
  if (!v) return std::nullopt;
  int64_t n = 0;
  const size_t at = v->find("sub_block_bits=");
  if (at != std::string::npos) (void)parse_leading_int(std::string_view(*v).substr(at + 15), n);
  return static_cast<int>(std::clamp<int64_t>(n, 0, std::min(idx.bits_per_block, 16)));
}

void set_sub_block_bits(IdxFile& idx, int sub_block_bits) {
  idx.set_extra("hzio stats", "v1 sub_block_bits=" + std::to_string(sub_block_bits));
}

bool holds_value(const DType& dtype, double v, bool exact) {
  if (!std::isfinite(v)) return false;
  const auto [lo, hi] = scalar_range(dtype.scalar);
  if (dtype.is_float()) return v >= lo && v <= hi;
  return v >= lo && v < hi && (!exact || v == std::floor(v));
}

double clamp_value(const DType& dtype, double v) {
  if (std::isnan(v)) return 0;
  const auto [lo, hi] = scalar_range(dtype.scalar);
  return std::clamp(v, lo, dtype.is_float() ? hi : std::nextafter(hi, lo));
}

namespace {

// The first key or field on which two parsed .idx files differ, or "".
std::string first_difference(const IdxFile& a, const IdxFile& b) {
  if (a.fields.size() != b.fields.size())
    return "(fields): " + std::to_string(a.fields.size()) + " fields read back as " + std::to_string(b.fields.size());
  for (size_t i = 0; i < a.fields.size(); ++i) {
    const FieldDesc &x = a.fields[i], &y = b.fields[i];
    if (x.name != y.name || !(x.dtype == y.dtype) || x.compression != y.compression || x.layout != y.layout ||
        !(x.default_value == y.default_value) || x.filter != y.filter || x.min_text != y.min_text ||
        x.max_text != y.max_text || x.description != y.description) {
      return "field '" + x.name + "'";
    }
  }
  if (a.bitmask.text() != b.bitmask.text()) return "(bits)";
  if (a.box.lo != b.box.lo || a.box.hi != b.box.hi) return "(box)";
  if (a.bits_per_block != b.bits_per_block) return "(bitsperblock)";
  if (a.blocks_per_file != b.blocks_per_file) return "(blocksperfile)";
  if (a.interleave != b.interleave) return "(interleave block)";
  if (a.filename_template != b.filename_template) return "(filename_template)";
  if (a.time.declared != b.time.declared || a.time.any != b.time.any || a.time.template_text != b.time.template_text ||
      a.time.ranges != b.time.ranges) {
    return "(time)";
  }
  if (a.axis != b.axis) return "(axis)";
  if (a.physic_box != b.physic_box) return "(physic_box)";
  if (a.logic_to_physic != b.logic_to_physic) return "(logic_to_physic)";
  if (a.missing_blocks != b.missing_blocks) return "(missing_blocks)";
  if (a.extra != b.extra) return "a key hzio does not know";
  return "";
}

}  // namespace

Status IdxFile::check_writes_back(std::string_view idx_name) const {
  const std::string where = "file " + std::string(idx_name) + ": ";
  for (const auto& fd : fields) {
    if (!holds_value(fd.dtype, fd.default_value, false)) {
      return unsupported(where + "field '" + fd.name + "': default_value(" + format_number(fd.default_value) +
                         ") is outside the range of " + fd.dtype.to_string() + ", so new samples cannot take it");
    }
  }
  auto back = parse(to_text(), "");
  const std::string what = back.is_ok() ? first_difference(*this, back.value()) : back.status().message();
  if (what.empty()) return Status::ok();
  return unsupported(
      where + "hzio cannot write this .idx back faithfully (" +
      (back.is_ok() ? what + " would not read back the same" : "the text would not parse again: " + what) + ")");
}

std::string IdxFile::to_text() const {
  std::string out = "(version)\n" + std::to_string(version) + "\n(box)\n";
  for (int a = 0; a < ndim; ++a) {
    out += (a ? " " : "") + std::to_string(box.lo[a]) + " " + std::to_string(box.hi[a] - 1);
  }
  out += "\n";
  if (!axis.empty()) out += "(axis)\n" + axis + "\n";
  if (!physic_box.empty()) out += "(physic_box)\n" + physic_box + "\n";
  if (!logic_to_physic.empty()) out += "(logic_to_physic)\n" + logic_to_physic + "\n";
  out += "(fields)\n" + fields_to_text(fields) + "\n";
  out += "(bits)\n" + bitmask.text() + "\n";
  out += "(bitsperblock)\n" + std::to_string(bits_per_block) + "\n";
  out += "(blocksperfile)\n" + std::to_string(blocks_per_file) + "\n";
  out += "(interleave block)\n" + std::to_string(interleave) + "\n";
  if (time.declared && !time.template_text.empty()) out += "(time)\n" + time_to_text(time) + "\n";
  out += "(filename_template)\n" + filename_template + "\n";
  out += "(missing_blocks)\n" + std::to_string(missing_blocks) + "\n";
  out += "(arco)\n0\n";
  for (const auto& [k, v] : extra) out += k + "\n" + v + "\n";
  return out;
}

const std::string* IdxFile::find_extra(std::string_view key) const {
  const std::string line = "(" + std::string(key) + ")";
  for (const auto& [k, v] : extra) {
    if (k == line) return &v;
  }
  return nullptr;
}

void IdxFile::set_extra(std::string key, std::string value) { set_extra_line("(" + key + ")", std::move(value)); }

void IdxFile::set_extra_line(std::string line, std::string value) {
  for (auto& [k, v] : extra) {
    if (k == line) {
      v = std::move(value);
      return;
    }
  }
  extra.emplace_back(std::move(line), std::move(value));
}

}  // namespace hzio::format
