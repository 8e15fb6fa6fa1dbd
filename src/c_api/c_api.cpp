// The C API of include/hzio/hzio.h: exception-free shims over hzio::Dataset.
#include "hzio/hzio.h"

#include <algorithm>
#include <memory>
#include <new>
#include <string>

#include "c_api/c_api_internal.hpp"
#include "hzio/dataset.hpp"

struct hzio_dataset {
  std::unique_ptr<hzio::Dataset> ds;
};

namespace {
thread_local std::string g_last_error;
}  // namespace

namespace hzio::c_api {

hzio_status fail(const Status& s) {
  g_last_error = s.message();
  return static_cast<hzio_status>(s.code());
}

hzio_status done(const Status& s) { return s.is_ok() ? (g_last_error.clear(), HZIO_OK) : fail(s); }

Result<CreateOptions> convert_create(const hzio_create_options* o) {
  hzio::CreateOptions c;
  if (o->ndim < 1 || o->ndim > 3) return hzio::invalid_argument("ndim must be 1..3");
  c.dims.assign(o->dims, o->dims + o->ndim);
  if (o->field_count < 1 || !o->fields) return hzio::invalid_argument("a dataset needs at least one field");
  for (int i = 0; i < o->field_count; ++i) {
    const hzio_field_spec& f = o->fields[i];
    if (!f.name || !f.dtype) return hzio::invalid_argument("field name and dtype must not be NULL");
    HZIO_ASSIGN_OR_RETURN(hzio::DType dt, hzio::DType::parse(f.dtype));
    std::string layout = f.layout ? f.layout : "hzorder";
    if (layout != "hzorder" && layout != "rowmajor")
      return hzio::invalid_argument("layout '" + layout + "' is not hzorder or rowmajor");
    c.fields.push_back({f.name, dt, f.codec ? f.codec : "raw",
                        layout == "rowmajor" ? hzio::Layout::kRowMajor : hzio::Layout::kHzOrder, f.default_value});
  }
  if (o->bitmask) c.bitmask = o->bitmask;
  c.bits_per_block = o->bits_per_block;
  c.blocks_per_file = o->blocks_per_file;
  if (o->times) c.times.assign(o->times, o->times + o->time_count);
  c.overwrite = o->overwrite != 0;
  return c;
}

}  // namespace hzio::c_api

namespace {

using hzio::c_api::done;
using hzio::c_api::fail;

hzio::Box box_of(const int64_t lo[3], const int64_t hi[3]) { return {{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}}; }

hzio_status null_arg(const char* what) { return fail(hzio::invalid_argument(std::string(what) + " is NULL")); }

}  // namespace

extern "C" {

const char* hzio_last_error(void) { return g_last_error.c_str(); }

hzio_status hzio_dataset_create(const char* path, const hzio_create_options* options, hzio_dataset** out) {
  if (!path || !options || !out) return null_arg("path, options or out");
  auto c = hzio::c_api::convert_create(options);
  if (!c.is_ok()) return fail(c.status());
  auto ds = hzio::Dataset::create(path, c.value());
  if (!ds.is_ok()) return fail(ds.status());
  *out = new (std::nothrow) hzio_dataset{std::move(ds).value()};
  return *out ? HZIO_OK : fail(hzio::internal_error("out of memory"));
}

hzio_status hzio_dataset_open(const char* path, int writable, hzio_dataset** out) {
  hzio_open_options o{};
  o.writable = writable;
  return hzio_dataset_open_with(path, &o, out);
}

hzio_status hzio_dataset_open_with(const char* path, const hzio_open_options* options, hzio_dataset** out) {
  if (!path || !out) return null_arg("path or out");
  const hzio_open_options defaults{};
  const hzio_open_options& given = options ? *options : defaults;
  hzio::OpenOptions o;
  o.writable = given.writable != 0;
  o.verify_checksums = given.skip_checksums == 0;
  o.allow_outside_folder = given.allow_outside_folder != 0;
  if (given.read_cache_bytes != 0)
    o.read_cache_bytes = static_cast<size_t>(std::max<int64_t>(given.read_cache_bytes, 0));
  auto ds = hzio::Dataset::open(path, o);
  if (!ds.is_ok()) return fail(ds.status());
  *out = new (std::nothrow) hzio_dataset{std::move(ds).value()};
  return *out ? HZIO_OK : fail(hzio::internal_error("out of memory"));
}

hzio_status hzio_dataset_info(const hzio_dataset* ds, int* ndim, int64_t dims[3], int* max_level, int* field_count,
                              int* time_count) {
  if (!ds) return null_arg("dataset");
  if (ndim) *ndim = ds->ds->ndim();
  if (dims) {
    for (int a = 0; a < 3; ++a) dims[a] = ds->ds->dims()[a];
  }
  if (max_level) *max_level = ds->ds->max_level();
  if (field_count) *field_count = static_cast<int>(ds->ds->fields().size());
  if (time_count) *time_count = static_cast<int>(ds->ds->times().size());
  return HZIO_OK;
}

hzio_status hzio_dataset_level_grid(const hzio_dataset* ds, const int64_t lo[3], const int64_t hi[3], int level,
                                    int64_t origin[3], int64_t spacing[3], int64_t count[3]) {
  if (!ds || !lo || !hi || !origin || !spacing || !count) return null_arg("an argument");
  auto g = ds->ds->level_grid(box_of(lo, hi), level);
  if (!g.is_ok()) return fail(g.status());
  for (int a = 0; a < 3; ++a) {
    origin[a] = g->origin[a];
    spacing[a] = g->spacing[a];
    count[a] = g->count[a];
  }
  return HZIO_OK;
}

hzio_status hzio_dataset_write_box(hzio_dataset* ds, const int64_t lo[3], const int64_t hi[3], const char* field,
                                   int64_t time, const void* data, size_t size) {
  if (!ds || !lo || !hi || !data) return null_arg("dataset, lo, hi or data");
  return done(ds->ds->write_box(box_of(lo, hi), field ? field : "", time, data, size));
}

hzio_status hzio_dataset_read_box(hzio_dataset* ds, const int64_t lo[3], const int64_t hi[3], int level,
                                  const char* field, int64_t time, void* out, size_t size) {
  if (!ds || !lo || !hi || !out) return null_arg("dataset, lo, hi or out");
  return done(ds->ds->read_box(box_of(lo, hi), level, field ? field : "", time, out, size));
}

hzio_status hzio_dataset_flush(hzio_dataset* ds) {
  if (!ds) return null_arg("dataset");
  return done(ds->ds->flush());
}

hzio_status hzio_dataset_close(hzio_dataset* ds) {
  if (!ds) return HZIO_OK;
  hzio::Status s = ds->ds->closed() ? hzio::Status::ok() : ds->ds->close();
  delete ds;
  return done(s);
}

}  // extern "C"
