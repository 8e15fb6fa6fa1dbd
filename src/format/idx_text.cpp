// The (fields) and (time) values of a .idx file (docs/format.md "Fields" and "Time").
#include "format/idx_text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <climits>
#include <optional>
#include <unordered_set>

namespace hzio::format {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool parse_int(std::string_view s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool parse_double(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty() && std::isfinite(out);
}

bool parse_leading_int(std::string_view s, int64_t& out) {
  std::string t = trim(s);
  size_t n = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  while (n < t.size() && std::isdigit(static_cast<unsigned char>(t[n]))) ++n;
  return parse_int(std::string_view(t).substr(t[0] == '+' ? 1 : 0, n - (t[0] == '+' ? 1 : 0)), out);
}

std::string format_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9e15) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

namespace {

// The text inside `key(...)` where key occurs in `text`, honouring nested brackets; nullopt if absent.
std::optional<std::string> option_value(std::string_view text, std::string_view key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    // "layout(" must not match inside "default_layout(": require a word boundary before the key.
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) {
      at += key.size();
      continue;
    }
    size_t open = at + key.size();
    if (open < text.size() && text[open] == '(') {
      int depth = 0;
      for (size_t i = open; i < text.size(); ++i) {
        if (text[i] == '(') ++depth;
        if (text[i] == ')' && --depth == 0) return trim(text.substr(open + 1, i - open - 1));
      }
      return std::nullopt;
    }
    at += key.size();
  }
  return std::nullopt;
}

bool has_word(std::string_view text, std::string_view word) {
  for (const auto& tok : split_ws(text)) {
    if (tok == word) return true;
  }
  return false;
}

Result<FieldDesc> parse_field(std::string_view text) {
  auto tokens = split_ws(text);
  if (tokens.size() < 2) return format_error("field '" + std::string(text) + "' needs a name and a dtype");
  FieldDesc f;
  f.name = tokens[0];
  HZIO_ASSIGN_OR_RETURN(f.dtype, DType::parse(tokens[1]));
  size_t dtype_at = text.find(tokens[1], text.find(tokens[0]) + tokens[0].size());
  std::string rest(text.substr(dtype_at + tokens[1].size()));
  if (auto v = option_value(rest, "default_compression"))
    f.compression = *v;
  else if (auto v2 = option_value(rest, "compression"))
    f.compression = *v2;
  else if (auto v3 = option_value(rest, "compressed"))
    f.compression = *v3;
  else if (has_word(rest, "compressed"))
    f.compression = "zip";
  std::string layout;
  if (auto v = option_value(rest, "default_layout"))
    layout = *v;
  else if (auto v2 = option_value(rest, "layout"))
    layout = *v2;
  else if (auto v3 = option_value(rest, "format"))
    layout = *v3;
  f.layout = (layout == "0" || layout.find("hz") != std::string::npos) ? Layout::kHzOrder : Layout::kRowMajor;
  if (auto v = option_value(rest, "default_value")) {
    if (!parse_double(*v, f.default_value)) {
      return format_error("field '" + f.name + "': default_value(" + *v + ") is not a number");
    }
  }
  if (auto v = option_value(rest, "filter")) f.filter = *v;
  if (auto v = option_value(rest, "min")) f.min_text = *v;
  if (auto v = option_value(rest, "max")) f.max_text = *v;
  if (auto v = option_value(rest, "description")) f.description = *v;
  return f;
}

}  // namespace

Result<std::vector<FieldDesc>> parse_fields(std::string_view value) {
  std::vector<FieldDesc> fields;
  std::unordered_set<std::string> names;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= value.size(); ++i) {
    char c = i < value.size() ? value[i] : '+';
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == '+' && depth <= 0) {
      std::string part = trim(value.substr(start, i - start));
      start = i + 1;
      if (part.empty()) continue;
      if (fields.size() == kMaxFields) {
        return format_error("more than hzio's limit of " + std::to_string(kMaxFields) +
                            " fields (docs/format.md \"Limits\")");
      }
      HZIO_ASSIGN_OR_RETURN(auto f, parse_field(part));
      if (!names.insert(f.name).second) return format_error("field '" + f.name + "' is declared twice");
      fields.push_back(std::move(f));
    }
  }
  if (fields.empty()) return format_error("(fields) declares no field");
  return fields;
}

std::string fields_to_text(const std::vector<FieldDesc>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    if (i) out += "\n+ ";
    out += f.name + " " + f.dtype.to_string() + " ";
    if (!f.compression.empty()) out += "default_compression(" + f.compression + ") ";
    out += std::string("default_layout(") + (f.layout == Layout::kHzOrder ? "hzorder" : "") + ") ";
    out += "default_value(" + format_number(f.default_value) + ") ";
    if (!f.filter.empty()) out += "filter(" + f.filter + ") ";
    out += "min(" + f.min_text + ") max(" + f.max_text + ") ";
    if (!f.description.empty()) out += "description(" + f.description + ") ";
  }
  return out;
}

namespace {

// The number of timesteps of one range (a, b, step), b >= a, step > 0, capped at INT64_MAX.
uint64_t range_count(const std::array<int64_t, 3>& r) {
  const auto span = static_cast<unsigned __int128>(static_cast<__int128>(r[1]) - r[0]);
  const unsigned __int128 n = span / static_cast<uint64_t>(r[2]) + 1;
  return n > static_cast<unsigned __int128>(INT64_MAX) ? static_cast<uint64_t>(INT64_MAX) : static_cast<uint64_t>(n);
}

}  // namespace

Result<TimeSpec> parse_time(std::string_view value) {
  TimeSpec t;
  t.declared = true;
  auto tok = split_ws(value);
  if (tok.empty()) return format_error("(time) is empty");
  int64_t a = 0, b = 0;
  if (tok.size() >= 3 && tok[0] == "*" && tok[1] == "*") {
    t.any = true;
    t.template_text = tok[2];
    return t;
  }
  double fa = 0, fb = 0;
  if (tok.size() >= 3 && parse_double(tok[0], fa) && parse_double(tok[1], fb)) {
    // Timesteps are 64-bit integers: a bound beyond them (or NaN) is no timestep at all.
    constexpr double kLimit = 9.0e18;
    if (!(std::fabs(fa) < kLimit) || !(std::fabs(fb) < kLimit))
      return format_error("(time) range " + tok[0] + " " + tok[1] + " is out of the range of timesteps");
    a = static_cast<int64_t>(fa);
    b = static_cast<int64_t>(fb);
    if (b < a) return format_error("(time) range " + tok[0] + " " + tok[1] + " is empty");
    t.template_text = tok[2];
    t.ranges.push_back({a, b, 1});
    if (t.count() > kMaxTimesteps)
      return format_error("(time) range " + tok[0] + " " + tok[1] + " lists " + std::to_string(t.count()) +
                          " timesteps, more than hzio's limit of " + std::to_string(kMaxTimesteps) +
                          " (docs/format.md \"Limits\")");
    return t;
  }
  t.template_text = tok[0];
  uint64_t listed = 0;  // timesteps of the ranges so far (each range's count capped), against the limit
  for (size_t i = 1; i < tok.size(); ++i) {
    std::string r = tok[i];
    if (r.size() < 3 || r.front() != '(' || r.back() != ')') {
      return format_error("(time) range '" + r + "' is not of the form (a,b,step)");
    }
    std::vector<int64_t> v;
    std::string inner = r.substr(1, r.size() - 2);
    size_t s = 0;
    for (size_t j = 0; j <= inner.size(); ++j) {
      if (j == inner.size() || inner[j] == ',') {
        int64_t x = 0;
        if (!parse_int(trim(std::string_view(inner).substr(s, j - s)), x) || v.size() == 3) {
          return format_error("(time) range '" + r + "' is not of the form (a,b,step)");
        }
        v.push_back(x);
        s = j + 1;
      }
    }
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() == 2) v.push_back(1);
    if (v[2] <= 0 || v[1] < v[0]) return format_error("(time) range '" + r + "' is empty or has a bad step");
    t.ranges.push_back({v[0], v[1], v[2]});
    listed += range_count(t.ranges.back());
    if (t.ranges.size() > kMaxTimeRanges || listed > static_cast<uint64_t>(kMaxTimesteps)) {
      return format_error("(time) lists more than hzio's limit of " + std::to_string(kMaxTimesteps) + " timesteps or " +
                          std::to_string(kMaxTimeRanges) + " ranges (docs/format.md \"Limits\")");
    }
  }
  if (t.ranges.empty()) return format_error("(time) '" + std::string(value) + "' lists no timesteps");
  if (t.ranges.size() > kMaxTimeRanges)
    return format_error("(time) has " + std::to_string(t.ranges.size()) + " ranges, more than hzio's limit of " +
                        std::to_string(kMaxTimeRanges) + " (docs/format.md \"Limits\")");
  return t;
}

std::string time_to_text(const TimeSpec& t) {
  if (t.any) return "* * " + t.template_text;
  if (t.ranges.size() == 1 && t.ranges[0][2] == 1) {
    return std::to_string(t.ranges[0][0]) + " " + std::to_string(t.ranges[0][1]) + " " + t.template_text;
  }
  std::string out = t.template_text;
  for (const auto& r : t.ranges) {
    out += " (" + std::to_string(r[0]) + "," + std::to_string(r[1]) + "," + std::to_string(r[2]) + ")";
  }
  return out;
}

bool TimeSpec::contains(int64_t t) const {
  if (!declared) return t == 0;
  if (any) return true;
  for (const auto& r : ranges) {
    if (t >= r[0] && t <= r[1] && (t - r[0]) % r[2] == 0) return true;
  }
  return false;
}

int64_t TimeSpec::count() const {
  if (!declared) return 1;
  uint64_t n = 0;
  for (const auto& r : ranges) {
    n += range_count(r);
    if (n >= static_cast<uint64_t>(INT64_MAX)) return INT64_MAX;
  }
  return static_cast<int64_t>(n);
}

std::vector<int64_t> TimeSpec::list() const {
  if (!declared) return {0};
  std::vector<int64_t> out;
  // parse_time refuses more than kMaxTimesteps; the bound here only guards a TimeSpec made otherwise.
  for (const auto& r : ranges) {
    for (int64_t t = r[0]; t <= r[1] && out.size() < static_cast<size_t>(kMaxTimesteps); t += r[2]) {
      out.push_back(t);
      if (t > INT64_MAX - r[2]) break;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void TimeSpec::set(std::vector<int64_t> steps) {
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  ranges.clear();
  for (int64_t s : steps) {
    if (!ranges.empty() && ranges.back()[1] + 1 == s)
      ranges.back()[1] = s;
    else
      ranges.push_back({s, s, 1});
  }
  any = false;
  declared = true;
}

}  // namespace hzio::format
