/* Exercises the I/O-rank calls of include/hzio/hzio_mpi.h from C under mpiexec, with $HZIO_RANKS_PER_NODE
 * emulating nodes (one I/O rank each): the compute ranks write three timesteps of two fields through the
 * I/O ranks with a buffer smaller than a timestep (flushes wait for space), one of them from a borrowed
 * buffer; then the same boxes synchronously (hzio_pdataset_*). The two datasets' folders must be byte for
 * byte the same. The I/O ranks then open the dataset again and add a timestep, which a serial read checks,
 * and a create at a path under a file fails on every compute rank with the I/O side's message. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hzio/hzio_mpi.h"

static int rank = 0, failures = 0, passes = 0;
#define CHECK(c)                                                                            \
  do {                                                                                      \
    if (c)                                                                                  \
      ++passes;                                                                             \
    else {                                                                                  \
      ++failures;                                                                           \
      fprintf(stderr, "rank %d line %d: %s (%s)\n", rank, __LINE__, #c, hzio_last_error()); \
    }                                                                                       \
  } while (0)

enum { NX = 24, NY = 20, NZ = 19, STEPS = 3 };

/* The value of sample (x, y, z) of field f, component c, at a step: no two alike. */
static double value(int f, int c, int step, int64_t x, int64_t y, int64_t z) {
  return (double)((((step * 2 + f) * 3 + c) * NZ + z) * NY + y) * NX + (double)x + 0.5;
}

static void fill(double* rho, float* w, int step, int64_t z0, int64_t z1) {
  size_t i = 0;
  for (int64_t z = z0; z < z1; ++z)
    for (int64_t y = 0; y < NY; ++y)
      for (int64_t x = 0; x < NX; ++x, ++i) {
        rho[i] = value(0, 0, step, x, y, z);
        for (int c = 0; c < 3; ++c) w[3 * i + (size_t)c] = (float)value(1, c, step, x, y, z);
      }
}

/* The files of one folder compared with the same relative paths under another. */
static const char* g_root;
static const char* g_other;
static int g_files, g_differ;

static int compare_file(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)st;
  (void)ftw;
  if (type != FTW_F) return 0;
  char other[8192];
  snprintf(other, sizeof other, "%s%s", g_other, path + strlen(g_root));
  FILE* a = fopen(path, "rb");
  FILE* b = fopen(other, "rb");
  int same = a && b;
  while (same) {
    int ca = fgetc(a), cb = fgetc(b);
    if (ca != cb) same = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (!same) {
    fprintf(stderr, "differs: %s and %s\n", path, other);
    ++g_differ;
  }
  if (a) fclose(a);
  if (b) fclose(b);
  ++g_files;
  return 0;
}

static int count_files(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)path;
  (void)st;
  (void)ftw;
  if (type == FTW_F) ++g_files;
  return 0;
}

static void write_steps(hzio_io_ranks* io, hzio_io_dataset* io_ds, hzio_pdataset* sync_ds, MPI_Comm comm,
                        int* waited_for_space) {
  int through_io = io_ds != NULL;
  int crank = 0, csize = 1;
  MPI_Comm_rank(comm, &crank);
  MPI_Comm_size(comm, &csize);
  int64_t z0 = (int64_t)NZ * crank / csize, z1 = (int64_t)NZ * (crank + 1) / csize;
  size_t n = (size_t)((z1 - z0) * NY * NX);
  double* rho = malloc(n * sizeof(double));
  float* w = malloc(3 * n * sizeof(float));
  int64_t lo[3] = {0, 0, z0}, hi[3] = {NX, NY, z1};
  for (int step = 0; step < STEPS; ++step) {
    if (through_io && step == 1) {
      /* Borrowed: what the buffer holds at flush time is stored. */
      fill(rho, w, step + 7, z0, z1);
      CHECK(hzio_io_dataset_write_box_borrowed(io_ds, lo, hi, "rho", step, rho, n * sizeof(double)) == HZIO_OK);
      CHECK(hzio_io_dataset_write_box_borrowed(io_ds, lo, hi, "w", step, w, 3 * n * sizeof(float)) == HZIO_OK);
      fill(rho, w, step, z0, z1);
    } else if (through_io && step == 2) {
      /* In place: rho computed into this rank's part of the shared buffer is handed over without a copy. */
      void* shared = NULL;
      CHECK(hzio_io_ranks_shared_memory(io, n * sizeof(double), &shared) == HZIO_OK);
      fill((double*)shared, w, step, z0, z1);
      CHECK(hzio_io_dataset_write_box_borrowed(io_ds, lo, hi, "rho", step, shared, n * sizeof(double)) == HZIO_OK);
      CHECK(hzio_io_dataset_write_box(io_ds, lo, hi, "w", step, w, 3 * n * sizeof(float)) == HZIO_OK);
    } else {
      fill(rho, w, step, z0, z1);
      if (through_io) {
        CHECK(hzio_io_dataset_write_box(io_ds, lo, hi, "rho", step, rho, n * sizeof(double)) == HZIO_OK);
        CHECK(hzio_io_dataset_write_box(io_ds, lo, hi, "w", step, w, 3 * n * sizeof(float)) == HZIO_OK);
        memset(rho, 0, n * sizeof(double)); /* copied: changing it now changes nothing */
      } else {
        CHECK(hzio_pdataset_write_box(sync_ds, lo, hi, "rho", step, rho, n * sizeof(double)) == HZIO_OK);
        CHECK(hzio_pdataset_write_box(sync_ds, lo, hi, "w", step, w, 3 * n * sizeof(float)) == HZIO_OK);
      }
    }
    if (through_io) {
      char report[1024];
      CHECK(hzio_io_dataset_flush(io_ds, report, sizeof report) == HZIO_OK);
      CHECK(strstr(report, "\"copied\": ") != NULL);
      CHECK((strstr(report, "\"in_place\": 0,") == NULL) == (step == 2)); /* only step 2's rho */
      if (strstr(report, "\"reason\": \"buffer full\"")) *waited_for_space = 1;
    } else {
      CHECK(hzio_pdataset_flush(sync_ds, NULL, 0) == HZIO_OK);
    }
  }
  free(rho);
  free(w);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* root = argc > 1 ? argv[1] : "c_api_io_ranks_data";
  char io_dir[4096], sync_dir[4096], io_path[4200], sync_path[4200], bad_path[4300], blocker[4200];
  snprintf(io_dir, sizeof io_dir, "%s/io", root);
  snprintf(sync_dir, sizeof sync_dir, "%s/sync", root);
  snprintf(io_path, sizeof io_path, "%s/run.idx", io_dir);
  snprintf(sync_path, sizeof sync_path, "%s/run.idx", sync_dir);
  snprintf(blocker, sizeof blocker, "%s/a-file", root);
  snprintf(bad_path, sizeof bad_path, "%s/run.idx", blocker);
  if (rank == 0) {
    mkdir(root, 0755);
    FILE* f = fopen(blocker, "w");
    if (f) fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* A compute rank's share of a timestep (up to 47 KiB) is larger than its region (32 KiB); step 2 takes
   * rho's 19 KiB of it for the in-place hand-off, which leaves room for two planes of w. */
  hzio_io_ranks_options opts = {1, 64 << 10, 2};
  hzio_io_ranks* io = NULL;
  CHECK(hzio_io_ranks_start(MPI_COMM_WORLD, &opts, &io) == HZIO_OK);
  if (io && hzio_io_ranks_is_io_rank(io)) {
    CHECK(hzio_io_ranks_compute_comm(io) == MPI_COMM_NULL);
    CHECK(hzio_io_ranks_serve(io) == HZIO_OK);
  } else if (io) {
    MPI_Comm comm = hzio_io_ranks_compute_comm(io);
    int csize = 0;
    MPI_Comm_size(comm, &csize);
    hzio_field_spec fields[2] = {{"rho", "float64", "lz4", NULL, 0}, {"w", "float32[3]", "zip", NULL, 0}};
    int64_t times[STEPS] = {0, 1, 2};
    hzio_create_options o;
    memset(&o, 0, sizeof o);
    o.ndim = 3;
    o.dims[0] = NX;
    o.dims[1] = NY;
    o.dims[2] = NZ;
    o.fields = fields;
    o.field_count = 2;
    o.bits_per_block = 9;
    o.blocks_per_file = 4;
    o.times = times;
    o.time_count = STEPS;
    o.overwrite = 1;

    /* Wrong calls are refused with a message, and do not disturb the I/O side. */
    hzio_io_dataset* ds = NULL;
    CHECK(hzio_io_ranks_create(io, bad_path, &o, NULL, &ds) != HZIO_OK);
    CHECK(strstr(hzio_last_error(), "could not create") != NULL);
    CHECK(ds == NULL);

    int waited = 0;
    CHECK(hzio_io_ranks_create(io, io_path, &o, NULL, &ds) == HZIO_OK);
    int64_t lo[3] = {0, 0, 0}, hi[3] = {NX + 1, NY, 1};
    double one = 0;
    CHECK(hzio_io_dataset_write_box(ds, lo, hi, "rho", 0, &one, sizeof one) != HZIO_OK); /* outside */
    write_steps(io, ds, NULL, comm, &waited);
    CHECK(hzio_io_dataset_close(ds) == HZIO_OK);
    CHECK(waited); /* every rank's share of a timestep exceeds its region */

    hzio_pdataset* sync = NULL;
    CHECK(hzio_pdataset_create(comm, sync_path, &o, NULL, &sync) == HZIO_OK);
    write_steps(io, NULL, sync, comm, &waited);
    CHECK(hzio_pdataset_close(sync) == HZIO_OK);
    int crank = 0;
    MPI_Comm_rank(comm, &crank);
    if (crank == 0) {
      g_root = io_dir;
      g_other = sync_dir;
      g_files = g_differ = 0;
      CHECK(nftw(io_dir, compare_file, 16, FTW_PHYS) == 0);
      int io_files = g_files;
      CHECK(g_differ == 0);
      g_files = 0;
      CHECK(nftw(sync_dir, count_files, 16, FTW_PHYS) == 0);
      CHECK(io_files == g_files && io_files > STEPS);
    }

    /* The I/O ranks open it again and add timestep 3 (a slab per compute rank, value = its x + 1000). */
    CHECK(hzio_io_ranks_open(io, io_path, NULL, &ds) == HZIO_OK);
    int64_t z0 = (int64_t)NZ * crank / csize, z1 = (int64_t)NZ * (crank + 1) / csize;
    size_t n = (size_t)((z1 - z0) * NY * NX);
    double* rho = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; ++i) rho[i] = (double)(i % NX) + 1000;
    int64_t slo[3] = {0, 0, z0}, shi[3] = {NX, NY, z1};
    CHECK(hzio_io_dataset_write_box(ds, slo, shi, "rho", 3, rho, n * sizeof(double)) == HZIO_OK);
    CHECK(hzio_io_dataset_close(ds) == HZIO_OK);
    free(rho);
    CHECK(hzio_io_ranks_wait(io) == HZIO_OK);
    MPI_Barrier(comm);
    if (crank == 0) {
      hzio_dataset* r = NULL;
      CHECK(hzio_dataset_open(io_path, 0, &r) == HZIO_OK);
      double* all = calloc((size_t)NX * NY * NZ, sizeof(double));
      int64_t alo[3] = {0, 0, 0}, ahi[3] = {NX, NY, NZ};
      CHECK(hzio_dataset_read_box(r, alo, ahi, -1, "rho", 3, all, (size_t)NX * NY * NZ * sizeof(double)) == HZIO_OK);
      int good = 1;
      for (size_t i = 0; i < (size_t)NX * NY * NZ; ++i) good &= all[i] == (double)(i % NX) + 1000;
      CHECK(good);
      CHECK(hzio_dataset_read_box(r, alo, ahi, -1, "rho", 1, all, (size_t)NX * NY * NZ * sizeof(double)) == HZIO_OK);
      good = 1;
      for (int64_t z = 0; z < NZ; ++z)
        for (int64_t y = 0; y < NY; ++y)
          for (int64_t x = 0; x < NX; ++x) good &= all[(z * NY + y) * NX + x] == value(0, 0, 1, x, y, z);
      CHECK(good);
      free(all);
      CHECK(hzio_dataset_close(r) == HZIO_OK);
    }
  }
  if (io && !hzio_io_ranks_is_io_rank(io)) {
    /* A flush that one rank cannot make (rank 0 takes all that is left of its region for shared arrays:
     * no room for a plane of its slab) fails on every compute rank alike, and none hangs. */
    MPI_Comm comm = hzio_io_ranks_compute_comm(io);
    int crank = 0, csize = 1;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    hzio_io_dataset* ds = NULL;
    CHECK(hzio_io_ranks_open(io, io_path, NULL, &ds) == HZIO_OK);
    void* rest = NULL;
    int taken = 0;
    while (crank == 0 && hzio_io_ranks_shared_memory(io, 64, &rest) == HZIO_OK) ++taken; /* all the room */
    CHECK(crank != 0 || (taken > 0 && strstr(hzio_last_error(), "left") != NULL));
    int64_t z0 = (int64_t)NZ * crank / csize, z1 = (int64_t)NZ * (crank + 1) / csize;
    size_t n = (size_t)((z1 - z0) * NY * NX);
    double* rho = calloc(n, sizeof(double));
    int64_t lo[3] = {0, 0, z0}, hi[3] = {NX, NY, z1};
    CHECK(hzio_io_dataset_write_box(ds, lo, hi, "rho", 4, rho, n * sizeof(double)) == HZIO_OK);
    CHECK(hzio_io_dataset_flush(ds, NULL, 0) == HZIO_EINVAL);
    CHECK(strstr(hzio_last_error(), "does not fit") != NULL);
    CHECK(hzio_io_dataset_close(ds) == HZIO_EINVAL); /* its flush: the same answer, then closed */
    free(rho);
  }
  CHECK(hzio_io_ranks_close(io) == HZIO_OK);
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%d checks passed on rank 0; %d failures on all ranks\n", passes, all_failures);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
