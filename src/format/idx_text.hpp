// Private helpers of the .idx parser: the (fields) and (time) values, and number parsing.
// Layer: format. Used by idx_file.cpp only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "format/idx_file.hpp"

namespace hzio::format {

std::string trim(std::string_view s);
std::vector<std::string> split_ws(std::string_view s);
// Local. Strict integer/float parse of a whole token.
bool parse_int(std::string_view s, int64_t& out);
bool parse_double(std::string_view s, double& out);
// Local. C atoi semantics (leading integer, "6.1" -> 6); false if no digits.
bool parse_leading_int(std::string_view s, int64_t& out);
std::string format_number(double v);

// Local. Parses the (fields) value. Errors: kFormat naming the field text.
Result<std::vector<FieldDesc>> parse_fields(std::string_view value);
std::string fields_to_text(const std::vector<FieldDesc>& fields);

// Local. Parses the (time) value in its three forms. Errors: kFormat.
Result<TimeSpec> parse_time(std::string_view value);
std::string time_to_text(const TimeSpec& time);

}  // namespace hzio::format
