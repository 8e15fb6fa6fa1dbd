// Data file names from (filename_template), (time) and a block id (docs/format.md "File names").
#include "format/file_name.hpp"

#include <algorithm>
#include <cctype>
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
  while (i < tmpl.size() && std::isdigit(static_cast<unsigned char>(tmpl[i]))) width = width * 10 + (tmpl[i++] - '0');
  if (i >= tmpl.size() || (tmpl[i] != 'd' && tmpl[i] != 'i') || width > 32) {
    return format_error("time template '" + tmpl + "' must contain one %d field such as %04d");
  }
  std::string digits = std::to_string(time < 0 ? -time : time);
  std::string sign = time < 0 ? "-" : "";
  int pad = width - static_cast<int>(digits.size() + sign.size());
  std::string body = pad > 0 ? (zero ? sign + std::string(pad, '0') + digits : std::string(pad, ' ') + sign + digits)
                             : sign + digits;
  return tmpl.substr(0, pct) + body + tmpl.substr(i + 1);
}

Result<std::string> data_file_path(const IdxFile& idx, const std::string& idx_dir, int64_t first_block, int64_t time) {
  const std::string& t = idx.filename_template;
  std::vector<TemplateField> fields;
  for (size_t i = t.find('%'); i != std::string::npos; i = t.find('%', i + 1)) {
    if (i + 3 >= t.size() || t[i + 1] != '0' || !std::isdigit(static_cast<unsigned char>(t[i + 2])) ||
        t[i + 3] != 'x' || t[i + 2] == '0') {
      return format_error("(filename_template) '" + t + "': fields must be %0Nx with one digit N");
    }
    fields.push_back({i, t[i + 2] - '0'});
  }
  std::string time_part;
  if (idx.time.declared && !idx.time.template_text.empty()) {
    HZIO_ASSIGN_OR_RETURN(time_part, format_time(idx.time.template_text, time));
  }
  std::string name;
  if (fields.empty()) {
    name = t;  // one file holds every block; the time component still goes before the file name
    size_t slash = name.find_last_of('/');
    name.insert(slash == std::string::npos ? 0 : slash + 1, time_part);
  } else {
    uint64_t addr = static_cast<uint64_t>(first_block);
    std::string tail;
    size_t end = t.size();
    for (size_t k = fields.size(); k-- > 0;) {
      const auto& f = fields[k];
      tail = hex(addr, f.digits) + t.substr(f.at + 4, end - f.at - 4) + tail;
      addr = f.digits >= 16 ? 0 : addr >> (4 * f.digits);
      end = f.at;
    }
    std::string extra;
    while (addr != 0) {
      extra = hex(addr, fields[0].digits) + "/" + extra;
      addr = fields[0].digits >= 16 ? 0 : addr >> (4 * fields[0].digits);
    }
    name = t.substr(0, fields[0].at) + time_part + extra + tail;
  }
  static const std::string kDirVar = "$(CurrentFileDirectory)";
  if (size_t at = name.find(kDirVar); at != std::string::npos) name.replace(at, kDirVar.size(), idx_dir);
  if (name.rfind("./", 0) == 0) name = idx_dir + name.substr(1);
  else if (!name.empty() && name[0] != '/') name = idx_dir + "/" + name;
  return name;
}

}  // namespace hzio::format
