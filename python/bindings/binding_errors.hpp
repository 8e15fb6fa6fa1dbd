// Shared by the binding files: hzio Status -> Python exception (hzio.errors classes).
#pragma once

#include "hzio/status.hpp"

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

}  // namespace hzio::bindings
