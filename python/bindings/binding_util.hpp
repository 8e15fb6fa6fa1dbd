// Shared by the binding files: hzio Status -> Python exception (hzio.errors classes), x-first triples,
// and bind_results (binding_results.cpp), which binds the result types hzio._core returns.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>
#include <tuple>
#include <vector>

#include "hzio/dataset.hpp"
#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio::bindings {

struct HzioError {
  Status status;
};

inline void check(const Status& s) {
  if (!s.is_ok()) throw HzioError{s};
}

template <class T>
T take(Result<T>&& r) {
  if (!r.is_ok()) throw HzioError{r.status()};
  return std::move(r).value();
}

// A point as Python sees it: an x-first tuple of three ints.
using Triple = std::tuple<int64_t, int64_t, int64_t>;
inline Point point(const Triple& t) { return {std::get<0>(t), std::get<1>(t), std::get<2>(t)}; }
inline Triple triple(const Point& p) { return {p[0], p[1], p[2]}; }
inline Box box(const Triple& lo, const Triple& hi) { return Box{point(lo), point(hi)}; }

// A field as Python passes it to create: name, dtype, codec, layout ("hzorder" or "rowmajor"), default.
using FieldTuple = std::tuple<std::string, std::string, std::string, std::string, double>;
// Local. The CreateOptions of create's arguments (core_module.cpp); throws HzioError for a bad dtype or layout.
CreateOptions create_options(std::vector<int64_t> dims, const std::vector<FieldTuple>& fields, std::string bitmask,
                             int bits_per_block, int64_t blocks_per_file, std::vector<int64_t> times, bool overwrite,
                             int sub_block_bits);

// Binds Box, SampleGrid, FieldSpec, BlockInfo, ReadReport, PhaseTimes, LevelTimes, WriteReport and
// QueryResult as classes with read-only properties and a readable __repr__.
void bind_results(nanobind::module_& m);

}  // namespace hzio::bindings
