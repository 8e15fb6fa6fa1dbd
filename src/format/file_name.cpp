// Data file names from (filename_template), (time) and a block id (docs/format.md "File names").
#include "format/file_name.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <vector>

namespace hzio::format {
namespace {

struct TemplateField {
  size_t at;
  int digits;
};

std::string hex(uint64_t v, int digits) {
  static const char* kHex = "0123456789abcdef";
  std::string s(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = kHex[v & 15];
  return s;
}

// The %0Nx fields of a (filename_template). Errors: kFormat.
Result<std::vector<TemplateField>> template_fields(const std::string& t) {
  std::vector<TemplateField> fields;
  for (size_t i = t.find('%'); i != std::string::npos; i = t.find('%', i + 1)) {
    if (i + 3 >= t.size() || t[i + 1] != '0' || !std::isdigit(static_cast<unsigned char>(t[i + 2])) ||
        t[i + 3] != 'x' || t[i + 2] == '0') {
      return format_error("(filename_template) '" + t + "': fields must be %0Nx with one digit N");
    }
    fields.push_back({i, t[i + 2] - '0'});
  }
  return fields;
}

// A template's name (step 5 of docs/format.md "Template expansion"): the text before the first field,
// the time component, the extra groups, then each field replaced by its text. Without fields, the time
// component goes before the last path component.
std::string expand(const std::string& t, const std::vector<TemplateField>& fields, const std::string& time_part,
                   const std::vector<std::string>& field_text, const std::string& extra) {
  if (fields.empty()) {
    std::string name = t;
    const size_t slash = name.find_last_of('/');
    name.insert(slash == std::string::npos ? 0 : slash + 1, time_part);
    return name;
  }
  std::string name = t.substr(0, fields[0].at) + time_part + extra;
  for (size_t k = 0; k < fields.size(); ++k) {
    const size_t next = k + 1 < fields.size() ? fields[k + 1].at : t.size();
    name += field_text[k] + t.substr(fields[k].at + 4, next - fields[k].at - 4);
  }
  return name;
}

// A template's name with a leading "./" and $(CurrentFileDirectory) resolved against the .idx's folder.
std::string resolve(std::string name, const std::string& idx_dir) {
  static const std::string kDirVar = "$(CurrentFileDirectory)";
  if (size_t at = name.find(kDirVar); at != std::string::npos) name.replace(at, kDirVar.size(), idx_dir);
  if (name.rfind("./", 0) == 0) return idx_dir + name.substr(1);
  if (!name.empty() && name[0] != '/') return idx_dir + "/" + name;
  return name;
}

// A resolved name as folder listings spell it (DataFileNames::matches compares the two): "//", "." and ".."
// removed, so that a .idx in "/" or a template such as "./a//%04x.bin" names its files as they are listed.
std::string normal(const std::string& name) { return std::filesystem::path(name).lexically_normal().string(); }

Result<std::string> marked_name(const IdxFile& idx, const std::string& idx_dir, std::vector<TemplateField>& fields,
                                bool nul_markers);

}  // namespace

int64_t slot_in_file(const IdxFile& idx, int64_t block) {
  const int64_t step = std::max<int64_t>(1, idx.interleave);
  return (block / step) % idx.blocks_per_file;
}

int64_t first_block_of_file(const IdxFile& idx, int64_t block) {
  return block - std::max<int64_t>(1, idx.interleave) * slot_in_file(idx, block);
}

Result<std::string> format_time(const std::string& tmpl, int64_t time) {
  size_t pct = tmpl.find('%');
  if (pct == std::string::npos) return tmpl;
  size_t i = pct + 1;
  bool zero = i < tmpl.size() && tmpl[i] == '0';
  int width = 0;
  // Capped: any width above 32 is refused below, and a long digit run must not overflow the int.
  while (i < tmpl.size() && std::isdigit(static_cast<unsigned char>(tmpl[i])))
    width = std::min(width * 10 + (tmpl[i++] - '0'), 1000);
  if (i >= tmpl.size() || (tmpl[i] != 'd' && tmpl[i] != 'i') || width > 32) {
    return format_error("time template '" + tmpl + "' must contain one %d field such as %04d");
  }
  // Negated as uint64_t: -INT64_MIN does not fit an int64_t.
  std::string digits = std::to_string(time < 0 ? 0 - static_cast<uint64_t>(time) : static_cast<uint64_t>(time));
  std::string sign = time < 0 ? "-" : "";
  int pad = width - static_cast<int>(digits.size() + sign.size());
  std::string body =
      pad > 0 ? (zero ? sign + std::string(pad, '0') + digits : std::string(pad, ' ') + sign + digits) : sign + digits;
  return tmpl.substr(0, pct) + body + tmpl.substr(i + 1);
}

Result<std::string> data_file_path(const IdxFile& idx, const std::string& idx_dir, int64_t first_block, int64_t time) {
  std::vector<TemplateField> fields;
  HZIO_RETURN_IF_ERROR(marked_name(idx, idx_dir, fields, true).status());  // the template checks
  std::string time_part;
  if (idx.time.declared && !idx.time.template_text.empty()) {
    HZIO_ASSIGN_OR_RETURN(time_part, format_time(idx.time.template_text, time));
  }
  // Fields take the block number's hex digits from the right; what is left goes to extra groups.
  uint64_t addr = static_cast<uint64_t>(first_block);
  std::vector<std::string> digits(fields.size());
  for (size_t k = fields.size(); k-- > 0;) {
    digits[k] = hex(addr, fields[k].digits);
    addr = fields[k].digits >= 16 ? 0 : addr >> (4 * fields[k].digits);
  }
  std::string extra;
  for (; !fields.empty() && addr != 0; addr = fields[0].digits >= 16 ? 0 : addr >> (4 * fields[0].digits)) {
    extra = hex(addr, fields[0].digits) + "/" + extra;
  }
  return normal(resolve(expand(idx.filename_template, fields, time_part, digits, extra), idx_dir));
}

namespace {

std::string regex_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c != 0 && std::strchr(".^$|()[]{}*+?\\", c)) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

namespace {

// A dataset's data file name, normal, with markers for its variable parts: \x01 the time, \x02 followed by N
// for a field of N hex digits, \x03 the extra folders; with `nul_markers` NUL for each, which no path holds,
// so that any other character may occur. Errors: kFormat (templates; a ".." that removes a folder named
// after the block or the timestep, since files of different blocks or timesteps would then share a name).
Result<std::string> marked_name(const IdxFile& idx, const std::string& idx_dir, std::vector<TemplateField>& fields,
                                bool nul_markers) {
  const std::string& t = idx.filename_template;
  const std::string marks = nul_markers ? std::string(3, '\0') : "\x01\x02\x03";
  for (const std::string* text : {&t, &idx.time.template_text, &idx_dir}) {
    if (!nul_markers && text->find_first_of(marks) != std::string::npos)
      return format_error("a file name template has control characters");
  }
  std::string time_part;
  if (idx.time.declared && !idx.time.template_text.empty()) {
    const std::string& tt = idx.time.template_text;
    HZIO_ASSIGN_OR_RETURN(time_part, format_time(tt, 0));  // checks the template
    if (const size_t pct = tt.find('%'); pct != std::string::npos) {
      time_part = tt.substr(0, pct) + marks[0] + tt.substr(tt.find_first_of("di", pct) + 1);
    }
  }
  HZIO_ASSIGN_OR_RETURN(fields, template_fields(t));
  std::vector<std::string> markers;
  for (const auto& f : fields) markers.push_back(marks[1] + std::string(1, static_cast<char>('0' + f.digits)));
  const std::string name =
      resolve(expand(t, fields, time_part, markers, fields.empty() ? "" : marks.substr(2)), idx_dir);
  const std::string out = normal(name);
  auto variable_parts = [&](const std::string& s) {
    return std::count_if(s.begin(), s.end(), [&](char c) { return marks.find(c) != std::string::npos; });
  };
  if (variable_parts(out) != variable_parts(name)) {
    return format_error("(filename_template) '" + t + "' with (time) '" + idx.time.template_text +
                        "': a '..' removes a folder named after the block or the timestep");
  }
  return out;
}

}  // namespace

Result<DataFileNames> DataFileNames::layout(const IdxFile& idx, const std::string& idx_dir, bool with_pattern) {
  std::vector<TemplateField> fields;
  HZIO_ASSIGN_OR_RETURN(std::string name, marked_name(idx, idx_dir, fields, false));
  // Extra folders hold the hex digits of block numbers that the fields cannot (step 4 of the expansion).
  int extra = 0;
  if (!fields.empty()) {
    int field_digits = 0;
    for (const auto& f : fields) field_digits += f.digits;
    const int needed = (std::max(0, idx.bitmask.max_level() - idx.bits_per_block) + 3) / 4;
    extra = (std::max(0, needed - field_digits) + fields[0].digits - 1) / fields[0].digits;
  }
  DataFileNames out;
  const size_t first_var = name.find_first_of("\x01\x02\x03");
  const size_t root_end = name.find_last_of('/', first_var == std::string::npos ? name.size() : first_var);
  out.root_ = root_end == std::string::npos || root_end == 0 ? "/" : name.substr(0, root_end);
  if (!with_pattern) return out;
  std::string pattern;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '\x01')
      pattern += "[ ]*-?[0-9]+";
    else if (name[i] == '\x02')
      pattern += "[0-9a-f]{" + std::string(1, name[++i]) + "}";
    else if (name[i] == '\x03')
      pattern += "(?:[0-9a-f]{" + std::to_string(fields[0].digits) + "}/){0," + std::to_string(extra) + "}";
    else
      pattern += regex_escape(std::string_view(&name[i], 1));
    if (i > root_end && name[i] == '/') ++out.depth_;
  }
  out.depth_ += extra;
  // Sidecars, and what commits stage or put aside (docs/design/commit.md).
  pattern += "(?:\\.hzstats(?:\\.(?:tmp|old)\\.[0-9]+)?|\\.(?:log|tmp)\\.[0-9]+)?";
  try {
    out.pattern_ = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error&) {
    return format_error("(filename_template) '" + idx.filename_template + "' cannot be matched");
  }
  return out;
}

Result<DataFileNames> DataFileNames::of(const IdxFile& idx, const std::string& idx_dir) {
  return layout(idx, idx_dir, true);
}

Result<std::string> DataFileNames::root_of(const IdxFile& idx, const std::string& idx_dir) {
  HZIO_ASSIGN_OR_RETURN(DataFileNames names, layout(idx, idx_dir, false));
  return std::move(names.root_);
}

bool DataFileNames::matches(const std::string& path) const { return std::regex_match(path, pattern_); }

}  // namespace hzio::format
