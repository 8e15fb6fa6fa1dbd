// Shared by the binding files: hzio Status -> Python exception (hzio.errors classes), x-first triples,
// and bind_results (binding_results.cpp), which binds the result types hzio._core returns.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <tuple>

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

// Binds Box, SampleGrid, FieldSpec, BlockInfo, ReadReport, PhaseTimes, LevelTimes, WriteReport and
// QueryResult as classes with read-only properties and a readable __repr__.
void bind_results(nanobind::module_& m);

}  // namespace hzio::bindings
