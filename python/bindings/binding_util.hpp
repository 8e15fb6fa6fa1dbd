// Shared by the binding files: hzio Status -> Python exception (hzio.errors classes), read reports as dicts.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

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

inline nanobind::dict report_dict(const ReadReport& r) {
  nanobind::dict d;
  d["files_opened"] = r.files_opened;
  d["blocks_read"] = r.blocks_read;
  d["blocks_missing"] = r.blocks_missing;
  d["bytes_read"] = r.bytes_read;
  d["min_bytes"] = r.min_bytes;
  d["method"] = r.method;
  d["assembly"] = r.assembly;
  return d;
}

}  // namespace hzio::bindings
