// Helpers shared by the C API shims (c_api.cpp, c_api_mpi.cpp): last-error text and option conversion.
#pragma once

#include "hzio/dataset.hpp"
#include "hzio/hzio.h"

namespace hzio::c_api {

hzio_status fail(const Status& s);
hzio_status done(const Status& s);
Result<CreateOptions> convert_create(const hzio_create_options* o);

}  // namespace hzio::c_api
