// .midx mosaic text (include/hzio/mosaic.hpp).
#include "hzio/mosaic.hpp"

#include <charconv>
#include <optional>

namespace hzio {
namespace {

constexpr std::string_view kDirPrefix = "file://$(CurrentFileDirectory)/";

std::string join(const Point& p, int n) {
  std::string out;
  for (int a = 0; a < n; ++a) out += (a ? " " : "") + std::to_string(p[a]);
  return out;
}

// The value of attribute `name` (quoted with ' or ") in `element`, or nullopt.
std::optional<std::string_view> attribute(std::string_view element, std::string_view name) {
  for (size_t at = element.find(name); at != std::string_view::npos; at = element.find(name, at + 1)) {
    const bool starts = at > 0 && (element[at - 1] == ' ' || element[at - 1] == '\t' || element[at - 1] == '\n');
    size_t eq = at + name.size();
    if (!starts || eq >= element.size() || element[eq] != '=') continue;
    if (eq + 1 >= element.size() || (element[eq + 1] != '\'' && element[eq + 1] != '"')) return std::nullopt;
    const char quote = element[eq + 1];
    const size_t end = element.find(quote, eq + 2);
    if (end == std::string_view::npos) return std::nullopt;
    return element.substr(eq + 2, end - eq - 2);
  }
  return std::nullopt;
}

Result<int64_t> integer(std::string_view text, std::string_view what) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    return format_error("mosaic: " + std::string(what) + " '" + std::string(text) + "' is not an integer");
  return v;
}

Result<std::vector<int64_t>> integers(std::string_view text, std::string_view what) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && text[at] == ' ') ++at;
    size_t end = text.find(' ', at);
    if (end == std::string_view::npos) end = text.size();
    if (end > at) {
      HZIO_ASSIGN_OR_RETURN(int64_t v, integer(text.substr(at, end - at), what));
      out.push_back(v);
    }
    at = end;
  }
  return out;
}

Result<std::string_view> required(std::string_view element, std::string_view name) {
  auto v = attribute(element, name);
  if (!v) return format_error("mosaic: no " + std::string(name) + " attribute; not a mosaic hzio wrote");
  return *v;
}

}  // namespace

std::string Mosaic::to_text() const {
  std::string out = "<dataset typename='IdxMultipleDataset' mosaic='true' hzio_ndim='" + std::to_string(ndim) +
                    "' hzio_dims='" + join(dims, ndim) + "' hzio_bitmask='" + bitmask + "' hzio_bits_per_block='" +
                    std::to_string(bits_per_block) + "' hzio_partitions='" + std::to_string(partitions) + "'>\n";
  for (const Part& p : parts) {
    out += "\t<dataset url=\"" + std::string(kDirPrefix) + p.file + "\" name=\"p" + std::to_string(p.partition) +
           "\" offset=\"" + join(p.offset, ndim) + "\" hzio_partition=\"" + std::to_string(p.partition) + "\"/>\n";
  }
  return out + "</dataset>\n";
}

Result<Mosaic> Mosaic::parse(std::string_view text) {
  const size_t head_end = text.find('>');
  if (text.find("<dataset") == std::string_view::npos || head_end == std::string_view::npos)
    return format_error("mosaic: no <dataset> element");
  const std::string_view head = text.substr(0, head_end);
  Mosaic m;
  HZIO_ASSIGN_OR_RETURN(std::string_view nd, required(head, "hzio_ndim"));
  HZIO_ASSIGN_OR_RETURN(int64_t ndim, integer(nd, "hzio_ndim"));
  if (ndim < 1 || ndim > kMaxDims) return format_error("mosaic: hzio_ndim must be 1 to 3");
  m.ndim = static_cast<int>(ndim);
  HZIO_ASSIGN_OR_RETURN(std::string_view dims_text, required(head, "hzio_dims"));
  HZIO_ASSIGN_OR_RETURN(std::vector<int64_t> dims, integers(dims_text, "hzio_dims"));
  if (static_cast<int>(dims.size()) != m.ndim) return format_error("mosaic: hzio_dims needs hzio_ndim values");
  for (int a = 0; a < m.ndim; ++a) {
    if (dims[static_cast<size_t>(a)] < 1) return format_error("mosaic: hzio_dims must be positive");
    m.dims[a] = dims[static_cast<size_t>(a)];
  }
  HZIO_ASSIGN_OR_RETURN(std::string_view bitmask, required(head, "hzio_bitmask"));
  m.bitmask = std::string(bitmask);
  HZIO_ASSIGN_OR_RETURN(std::string_view bpb, required(head, "hzio_bits_per_block"));
  HZIO_ASSIGN_OR_RETURN(int64_t bits, integer(bpb, "hzio_bits_per_block"));
  HZIO_ASSIGN_OR_RETURN(std::string_view count_text, required(head, "hzio_partitions"));
  HZIO_ASSIGN_OR_RETURN(int64_t count, integer(count_text, "hzio_partitions"));
  if (bits < 0 || bits > 62 || count < 1 || count > kMaxPartitions || (count & (count - 1)) != 0)
    return format_error("mosaic: hzio_bits_per_block or hzio_partitions out of range");
  m.bits_per_block = static_cast<int>(bits);
  m.partitions = static_cast<int>(count);
  for (size_t at = text.find("<dataset", head_end); at != std::string_view::npos; at = text.find("<dataset", at + 1)) {
    const size_t end = text.find('>', at);
    if (end == std::string_view::npos) return format_error("mosaic: unterminated <dataset> element");
    const std::string_view element = text.substr(at, end - at);
    Part p;
    HZIO_ASSIGN_OR_RETURN(std::string_view url, required(element, "url"));
    if (url.substr(0, kDirPrefix.size()) == kDirPrefix) url.remove_prefix(kDirPrefix.size());
    const bool plain = url.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                       std::string_view::npos;
    if (url.empty() || !plain || url.find("..") != std::string_view::npos)
      return format_error("mosaic: part url '" + std::string(url) + "' is not a file next to the mosaic");
    p.file = std::string(url);
    HZIO_ASSIGN_OR_RETURN(std::string_view offset_text, required(element, "offset"));
    HZIO_ASSIGN_OR_RETURN(std::vector<int64_t> offset, integers(offset_text, "offset"));
    if (static_cast<int>(offset.size()) != m.ndim)
      return format_error("mosaic: a part's offset needs hzio_ndim values");
    for (int a = 0; a < m.ndim; ++a) p.offset[a] = offset[static_cast<size_t>(a)];
    HZIO_ASSIGN_OR_RETURN(std::string_view part_text, required(element, "hzio_partition"));
    HZIO_ASSIGN_OR_RETURN(int64_t part, integer(part_text, "hzio_partition"));
    if (part < 0 || part >= m.partitions || (!m.parts.empty() && part <= m.parts.back().partition))
      return format_error("mosaic: partitions of parts must ascend below hzio_partitions");
    p.partition = static_cast<int>(part);
    m.parts.push_back(std::move(p));
  }
  if (m.parts.empty()) return format_error("mosaic: no parts");
  return m;
}

std::string mosaic_path(const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_ext ? path.substr(0, dot) : path) + ".midx";
}

std::string mosaic_part_name(const std::string& midx, int p) {
  const size_t slash = midx.rfind('/');
  std::string stem = slash == std::string::npos ? midx : midx.substr(slash + 1);
  const size_t dot = stem.rfind('.');
  if (dot != std::string::npos) stem.resize(dot);
  return stem + "_p" + std::to_string(p) + ".idx";
}

}  // namespace hzio
