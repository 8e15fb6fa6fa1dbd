// The MPI C API of include/hzio/hzio_mpi.h: exception-free shims over hzio::ParallelDataset.
#include "hzio/hzio_mpi.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "c_api/c_api_internal.hpp"
#include "hzio/io_ranks.hpp"
#include "hzio/parallel.hpp"

struct hzio_pdataset {
  std::unique_ptr<hzio::ParallelDataset> ds;
};

struct hzio_io_ranks {
  std::unique_ptr<hzio::IoRanks> io;
};
struct hzio_node_memory {
  std::unique_ptr<hzio::NodeMemory> memory;
};

struct hzio_io_dataset {
  std::unique_ptr<hzio::IoDataset> ds;
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

// A report's JSON into the caller's buffer (if any), cut to `size` bytes with the NUL.
void copy_report(const std::string& json, char* out, size_t size) {
  if (!out || size == 0) return;
  const size_t n = std::min(size - 1, json.size());
  std::memcpy(out, json.data(), n);
  out[n] = '\0';
}

hzio_status attached(hzio::Result<std::unique_ptr<hzio::IoDataset>> ds, hzio_io_dataset** out) {
  if (!ds.is_ok()) return hzio::c_api::fail(ds.status());
  *out = new (std::nothrow) hzio_io_dataset{std::move(ds).value()};
  return *out ? HZIO_OK : hzio::c_api::fail(hzio::internal_error("out of memory"));
}

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
  copy_report(r->to_json(), report_json, report_size);
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

hzio_status hzio_node_memory_create(MPI_Comm comm, size_t bytes, hzio_node_memory** out) {
  if (!out) return hzio::c_api::fail(hzio::invalid_argument("out is NULL"));
  *out = nullptr;
  auto m = hzio::NodeMemory::create(comm, bytes);
  if (!m.is_ok()) return hzio::c_api::fail(m.status());
  *out = new (std::nothrow) hzio_node_memory{std::move(m).value()};
  return *out ? HZIO_OK : hzio::c_api::fail(hzio::internal_error("out of memory"));
}

void* hzio_node_memory_data(const hzio_node_memory* memory) { return memory ? memory->memory->data() : nullptr; }

void hzio_node_memory_free(hzio_node_memory* memory) { delete memory; }

hzio_status hzio_io_ranks_start(MPI_Comm comm, const hzio_io_ranks_options* options, hzio_io_ranks** out) {
  if (!out) return hzio::c_api::fail(hzio::invalid_argument("out is NULL"));
  hzio::IoRanksOptions o;
  if (options && options->per_node) o.per_node = options->per_node;
  if (options && options->buffer_bytes) o.buffer_bytes = options->buffer_bytes;
  if (options && options->in_flight) o.in_flight = options->in_flight;
  auto io = hzio::IoRanks::start(comm, o);
  if (!io.is_ok()) return hzio::c_api::fail(io.status());
  *out = new (std::nothrow) hzio_io_ranks{std::move(io).value()};
  return *out ? HZIO_OK : hzio::c_api::fail(hzio::internal_error("out of memory"));
}

int hzio_io_ranks_is_io_rank(const hzio_io_ranks* io) { return io && io->io->is_io_rank() ? 1 : 0; }

MPI_Comm hzio_io_ranks_compute_comm(const hzio_io_ranks* io) { return io ? io->io->compute_comm() : MPI_COMM_NULL; }

hzio_status hzio_io_ranks_shared_memory(hzio_io_ranks* io, size_t bytes, void** out) {
  if (!io || !out) return hzio::c_api::fail(hzio::invalid_argument("io or out is NULL"));
  auto p = io->io->shared_memory(bytes);
  if (!p.is_ok()) return hzio::c_api::fail(p.status());
  *out = p.value();
  return HZIO_OK;
}

hzio_status hzio_io_ranks_serve(hzio_io_ranks* io) {
  if (!io) return hzio::c_api::fail(hzio::invalid_argument("io is NULL"));
  return hzio::c_api::done(io->io->serve());
}

hzio_status hzio_io_ranks_create(hzio_io_ranks* io, const char* path, const hzio_create_options* options,
                                 const hzio_parallel_options* parallel, hzio_io_dataset** out) {
  if (!io || !path || !options || !out)
    return hzio::c_api::fail(hzio::invalid_argument("io, path, options or out is NULL"));
  auto c = hzio::c_api::convert_create(options);
  if (!c.is_ok()) return hzio::c_api::fail(c.status());
  hzio::ParallelOptions p = convert_parallel(parallel);
  p.threads = 0;  // the node's cores, shared by its I/O ranks
  return attached(io->io->create(path, c.value(), p), out);
}

hzio_status hzio_io_ranks_open(hzio_io_ranks* io, const char* path, const hzio_parallel_options* parallel,
                               hzio_io_dataset** out) {
  if (!io || !path || !out) return hzio::c_api::fail(hzio::invalid_argument("io, path or out is NULL"));
  hzio::ParallelOptions p = convert_parallel(parallel);
  p.threads = 0;
  return attached(io->io->open(path, p), out);
}

hzio_status hzio_io_dataset_write_box(hzio_io_dataset* ds, const int64_t lo[3], const int64_t hi[3], const char* field,
                                      int64_t time, const void* data, size_t size) {
  if (!ds || !lo || !hi || !data) return hzio::c_api::fail(hzio::invalid_argument("dataset, lo, hi or data is NULL"));
  return hzio::c_api::done(ds->ds->write_box(box_of(lo, hi), field ? field : "", time, data, size));
}

hzio_status hzio_io_dataset_write_box_borrowed(hzio_io_dataset* ds, const int64_t lo[3], const int64_t hi[3],
                                               const char* field, int64_t time, const void* data, size_t size) {
  if (!ds || !lo || !hi || !data) return hzio::c_api::fail(hzio::invalid_argument("dataset, lo, hi or data is NULL"));
  return hzio::c_api::done(ds->ds->write_box_borrowed(box_of(lo, hi), field ? field : "", time, data, size));
}

hzio_status hzio_io_dataset_flush(hzio_io_dataset* ds, char* report_json, size_t report_size) {
  if (!ds) return hzio::c_api::fail(hzio::invalid_argument("dataset is NULL"));
  auto r = ds->ds->flush();
  if (!r.is_ok()) return hzio::c_api::fail(r.status());
  copy_report(r->to_json(), report_json, report_size);
  return hzio::c_api::done(hzio::Status::ok());
}

hzio_status hzio_io_dataset_close(hzio_io_dataset* ds) {
  if (!ds) return HZIO_OK;
  hzio::Status s = ds->ds->close();
  delete ds;
  return hzio::c_api::done(s);
}

hzio_status hzio_io_ranks_wait(hzio_io_ranks* io) {
  if (!io) return hzio::c_api::fail(hzio::invalid_argument("io is NULL"));
  return hzio::c_api::done(io->io->wait());
}

hzio_status hzio_io_ranks_close(hzio_io_ranks* io) {
  if (!io) return HZIO_OK;
  hzio::Status s = io->io->close();
  delete io;
  return hzio::c_api::done(s);
}

}  // extern "C"
