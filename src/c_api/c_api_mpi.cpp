// The MPI C API of include/hzio/hzio_mpi.h: exception-free shims over hzio::ParallelDataset.
#include "hzio/hzio_mpi.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "c_api/c_api_internal.hpp"
#include "hzio/parallel.hpp"

struct hzio_pdataset {
  std::unique_ptr<hzio::ParallelDataset> ds;
};

namespace {

hzio::ParallelOptions convert_parallel(const hzio_parallel_options* p) {
  hzio::ParallelOptions o;
  if (!p) return o;
  o.placement = p->placement == HZIO_PLACEMENT_UNIFORM ? hzio::AggregatorPlacement::kUniform
                                                       : hzio::AggregatorPlacement::kLocalized;
  o.aggregator_count = p->aggregator_count;
  if (p->aggregator_bytes) o.aggregator_bytes = p->aggregator_bytes;
  o.durable = p->durable != 0;
  if (p->partitions != 0) o.partitions = p->partitions;
  o.index_space = p->index_space == HZIO_INDEX_SPACE_LOCAL ? hzio::IndexSpace::kLocal : hzio::IndexSpace::kGlobal;
  return o;
}

hzio::Box box_of(const int64_t lo[3], const int64_t hi[3]) { return {{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}}; }

}  // namespace

extern "C" {

hzio_status hzio_pdataset_create(MPI_Comm comm, const char* path, const hzio_create_options* options,
                                 const hzio_parallel_options* parallel, hzio_pdataset** out) {
  if (!path || !options || !out) return hzio::c_api::fail(hzio::invalid_argument("path, options or out is NULL"));
  auto c = hzio::c_api::convert_create(options);
  if (!c.is_ok()) return hzio::c_api::fail(c.status());
  auto ds = hzio::ParallelDataset::create(comm, path, c.value(), convert_parallel(parallel));
  if (!ds.is_ok()) return hzio::c_api::fail(ds.status());
  *out = new (std::nothrow) hzio_pdataset{std::move(ds).value()};
  return *out ? HZIO_OK : hzio::c_api::fail(hzio::internal_error("out of memory"));
}

hzio_status hzio_pdataset_open(MPI_Comm comm, const char* path, int writable, const hzio_parallel_options* parallel,
                               hzio_pdataset** out) {
  if (!path || !out) return hzio::c_api::fail(hzio::invalid_argument("path or out is NULL"));
  auto ds = hzio::ParallelDataset::open(comm, path, convert_parallel(parallel), writable != 0);
  if (!ds.is_ok()) return hzio::c_api::fail(ds.status());
  *out = new (std::nothrow) hzio_pdataset{std::move(ds).value()};
  return *out ? HZIO_OK : hzio::c_api::fail(hzio::internal_error("out of memory"));
}

hzio_status hzio_pdataset_write_box(hzio_pdataset* ds, const int64_t lo[3], const int64_t hi[3], const char* field,
                                    int64_t time, const void* data, size_t size) {
  if (!ds || !lo || !hi || !data) return hzio::c_api::fail(hzio::invalid_argument("dataset, lo, hi or data is NULL"));
  return hzio::c_api::done(ds->ds->write_box(box_of(lo, hi), field ? field : "", time, data, size));
}

hzio_status hzio_pdataset_write_box_borrowed(hzio_pdataset* ds, const int64_t lo[3], const int64_t hi[3],
                                             const char* field, int64_t time, const void* data, size_t size) {
  if (!ds || !lo || !hi || !data) return hzio::c_api::fail(hzio::invalid_argument("dataset, lo, hi or data is NULL"));
  return hzio::c_api::done(ds->ds->write_box_borrowed(box_of(lo, hi), field ? field : "", time, data, size));
}

hzio_status hzio_pdataset_flush(hzio_pdataset* ds, char* report_json, size_t report_size) {
  if (!ds) return hzio::c_api::fail(hzio::invalid_argument("dataset is NULL"));
  auto r = ds->ds->flush();
  if (!r.is_ok()) return hzio::c_api::fail(r.status());
  if (report_json && report_size) {
    const std::string json = r->to_json();
    const size_t n = std::min(report_size - 1, json.size());
    std::memcpy(report_json, json.data(), n);
    report_json[n] = '\0';
  }
  return hzio::c_api::done(hzio::Status::ok());
}

hzio_status hzio_pdataset_read_box(hzio_pdataset* ds, const int64_t lo[3], const int64_t hi[3], int level,
                                   const char* field, int64_t time, void* out, size_t size, hzio_read_method method) {
  if (!ds) return hzio::c_api::fail(hzio::invalid_argument("dataset is NULL"));
  // The other ranks are in the collective read: this rank joins it with its error.
  if (!lo || !hi) return hzio::c_api::done(ds->ds->fail_read(hzio::invalid_argument("lo or hi is NULL")));
  const hzio::ReadMethod m = method == HZIO_READ_INDEPENDENT ? hzio::ReadMethod::kIndependent
                             : method == HZIO_READ_TWO_PHASE ? hzio::ReadMethod::kTwoPhase
                                                             : hzio::ReadMethod::kAuto;
  return hzio::c_api::done(ds->ds->read_box(box_of(lo, hi), level, field ? field : "", time, out, size, nullptr, m));
}

hzio_status hzio_pdataset_close(hzio_pdataset* ds) {
  if (!ds) return HZIO_OK;
  hzio::Status s = ds->ds->close();
  delete ds;
  return hzio::c_api::done(s);
}

}  // extern "C"
