/* Exercises include/hzio/hzio_mpi.h from C under mpiexec: each rank writes a slab, flush returns a report,
 * collective reads with every method return what was written, a borrowed buffer is read at flush time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hzio/hzio_mpi.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, failures = 0, passes = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#define CHECK(c)                                                                            \
  do {                                                                                      \
    if (c)                                                                                  \
      ++passes;                                                                             \
    else {                                                                                  \
      ++failures;                                                                           \
      fprintf(stderr, "rank %d line %d: %s (%s)\n", rank, __LINE__, #c, hzio_last_error()); \
    }                                                                                       \
  } while (0)
/* Where rank 0 is, on stderr as it goes: a run stopped by ctest's timeout shows the section it hung in. */
#define STEP(what)                                      \
  do {                                                  \
    if (rank == 0) fprintf(stderr, "step: %s\n", what); \
  } while (0)
  char path[4096];
  snprintf(path, sizeof path, "%s.idx", argc > 1 ? argv[1] : "c_api_mpi_data");
  enum { NX = 20, NY = 11, NZ = 9 };
  hzio_field_spec field = {"rho", "float64", "lz4", NULL, 0};
  hzio_create_options o;
  memset(&o, 0, sizeof o);
  o.ndim = 3;
  o.dims[0] = NX;
  o.dims[1] = NY;
  o.dims[2] = NZ;
  o.fields = &field;
  o.field_count = 1;
  o.overwrite = 1;
  STEP("create, write, flush");
  hzio_pdataset* ds = NULL;
  CHECK(hzio_pdataset_create(MPI_COMM_WORLD, path, &o, NULL, &ds) == HZIO_OK);
  int64_t z0 = (int64_t)NZ * rank / size, z1 = (int64_t)NZ * (rank + 1) / size;
  size_t n = (size_t)((z1 - z0) * NY * NX);
  double* mine = malloc((n ? n : 1) * sizeof(double));
  for (size_t i = 0; i < n; ++i) mine[i] = (double)(z0 * NY * NX + (int64_t)i) * 0.25;
  int64_t lo[3] = {0, 0, z0}, hi[3] = {NX, NY, z1};
  if (n) CHECK(hzio_pdataset_write_box(ds, lo, hi, "rho", 0, mine, n * sizeof(double)) == HZIO_OK);
  char report[4096];
  CHECK(hzio_pdataset_flush(ds, report, sizeof report) == HZIO_OK);
  CHECK(strstr(report, "\"ranks\": ") != NULL);
  STEP("reads by every method");
  for (int m = 0; m < 3; ++m) {
    double* back = calloc(n ? n : 1, sizeof(double));
    CHECK(hzio_pdataset_read_box(ds, lo, hi, -1, "rho", 0, back, n * sizeof(double), (hzio_read_method)m) == HZIO_OK);
    CHECK(n == 0 || memcmp(back, mine, n * sizeof(double)) == 0);
    free(back);
  }
  STEP("borrowed write");
  /* A borrowed buffer is read by the flush, not by the write: what it holds at flush time is stored. */
  for (size_t i = 0; i < n; ++i) mine[i] = -1.0;
  if (n) CHECK(hzio_pdataset_write_box_borrowed(ds, lo, hi, "rho", 0, mine, n * sizeof(double)) == HZIO_OK);
  for (size_t i = 0; i < n; ++i) mine[i] = (double)i * 0.5 + rank;
  CHECK(hzio_pdataset_flush(ds, NULL, 0) == HZIO_OK);
  double* again = calloc(n ? n : 1, sizeof(double));
  CHECK(hzio_pdataset_read_box(ds, lo, hi, -1, "rho", 0, again, n * sizeof(double), HZIO_READ_AUTO) == HZIO_OK);
  CHECK(n == 0 || memcmp(again, mine, n * sizeof(double)) == 0);
  free(again);
  CHECK(hzio_pdataset_close(ds) == HZIO_OK);
  STEP("partitioned write");
  /* Partitioned writes: the slabs straddle the partition plane; what each rank wrote reads back. */
  hzio_parallel_options po;
  memset(&po, 0, sizeof po);
  po.durable = 1;
  po.partitions = 3;
  CHECK(hzio_pdataset_open(MPI_COMM_WORLD, path, 1, &po, &ds) == HZIO_EINVAL);
  CHECK(strstr(hzio_last_error(), "power of two") != NULL);
  po.partitions = 2;
  CHECK(hzio_pdataset_open(MPI_COMM_WORLD, path, 1, &po, &ds) == HZIO_OK);
  for (size_t i = 0; i < n; ++i) mine[i] = (double)i * 0.125 - rank;
  if (n) CHECK(hzio_pdataset_write_box(ds, lo, hi, "rho", 0, mine, n * sizeof(double)) == HZIO_OK);
  CHECK(hzio_pdataset_flush(ds, report, sizeof report) == HZIO_OK);
  CHECK(strstr(report, "\"partitions\": 2") != NULL);
  again = calloc(n ? n : 1, sizeof(double));
  CHECK(hzio_pdataset_read_box(ds, lo, hi, -1, "rho", 0, again, n * sizeof(double), HZIO_READ_AUTO) == HZIO_OK);
  CHECK(n == 0 || memcmp(again, mine, n * sizeof(double)) == 0);
  free(again);
  CHECK(hzio_pdataset_close(ds) == HZIO_OK);
  STEP("local index space");
  /* Local index space: a dataset per partition and a .midx; reopened through the .midx, it takes writes. */
  char local[4200], midx[4200];
  snprintf(local, sizeof local, "%s_local.idx", argc > 1 ? argv[1] : "c_api_mpi_data");
  snprintf(midx, sizeof midx, "%s_local.midx", argc > 1 ? argv[1] : "c_api_mpi_data");
  po.partitions = 2;
  po.index_space = HZIO_INDEX_SPACE_LOCAL;
  CHECK(hzio_pdataset_create(MPI_COMM_WORLD, local, &o, &po, &ds) == HZIO_OK);
  if (n) CHECK(hzio_pdataset_write_box(ds, lo, hi, "rho", 0, mine, n * sizeof(double)) == HZIO_OK);
  CHECK(hzio_pdataset_flush(ds, report, sizeof report) == HZIO_OK);
  CHECK(strstr(report, "\"index_space\": \"local\"") != NULL);
  CHECK(hzio_pdataset_read_box(ds, lo, hi, -1, "rho", 0, mine, n * sizeof(double), HZIO_READ_AUTO) ==
        HZIO_EUNSUPPORTED);
  CHECK(hzio_pdataset_close(ds) == HZIO_OK);
  FILE* f = fopen(midx, "r");
  CHECK(f != NULL);
  if (f) fclose(f);
  CHECK(hzio_pdataset_open(MPI_COMM_WORLD, midx, 1, &po, &ds) == HZIO_OK);
  CHECK(hzio_pdataset_close(ds) == HZIO_OK);
  STEP("node memory");
  /* Node memory: a box staged from it is read where it lies by the aggregators of this node (every rank of
   * this test runs on one node): no record message, and the data reads back. */
  hzio_node_memory* shared = NULL;
  CHECK(hzio_node_memory_create(MPI_COMM_WORLD, n * sizeof(double), &shared) == HZIO_OK);
  double* in_node = shared ? (double*)hzio_node_memory_data(shared) : NULL;
  CHECK(in_node != NULL);
  CHECK(hzio_pdataset_open(MPI_COMM_WORLD, path, 1, NULL, &ds) == HZIO_OK);
  if (in_node) {
    for (size_t i = 0; i < n; ++i) in_node[i] = (double)i * 2.0 + rank * 1000.0;
    if (n) CHECK(hzio_pdataset_write_box_borrowed(ds, lo, hi, "rho", 0, in_node, n * sizeof(double)) == HZIO_OK);
  }
  CHECK(hzio_pdataset_flush(ds, report, sizeof report) == HZIO_OK);
  CHECK(strstr(report, "\"messages\": 0, \"message_bytes\": 0") != NULL);
  again = calloc(n ? n : 1, sizeof(double));
  CHECK(hzio_pdataset_read_box(ds, lo, hi, -1, "rho", 0, again, n * sizeof(double), HZIO_READ_AUTO) == HZIO_OK);
  CHECK(n == 0 || (in_node && memcmp(again, in_node, n * sizeof(double)) == 0));
  free(again);
  CHECK(hzio_pdataset_close(ds) == HZIO_OK);
  hzio_node_memory_free(shared);
  hzio_node_memory_free(NULL);
  STEP("node memory too large");
  /* More than the node's shared memory holds: an error on every rank, naming /dev/shm. */
  shared = NULL;
  CHECK(hzio_node_memory_create(MPI_COMM_WORLD, (size_t)1 << 50, &shared) == HZIO_EIO);
  CHECK(shared == NULL && strstr(hzio_last_error(), "node memory") != NULL);
  free(mine);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%d passed, %d failed\n", passes, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
