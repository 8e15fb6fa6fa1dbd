/* Exercises include/hzio/hzio.h from C: create, write, coarse and full reads, and error reporting.
   Usage: c_api_test [PATH [URL]]: writes PATH.idx; with URL (the same dataset served over HTTP, as
   tests/c_api/serve_and_run.py does), also reads it remotely. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hzio/hzio.h"

static int failures = 0, passes = 0;

#define CHECK(cond)                                                                              \
  do {                                                                                           \
    if (cond) {                                                                                  \
      ++passes;                                                                                  \
    } else {                                                                                     \
      ++failures;                                                                                \
      fprintf(stderr, "%s:%d: failed: %s (%s)\n", __FILE__, __LINE__, #cond, hzio_last_error()); \
    }                                                                                            \
  } while (0)

enum { NX = 12, NY = 9, NZ = 5 };

/* Whether `coarse` (a level grid of `count` samples from `origin`, `spacing` apart, x fastest) holds the
   samples of `data` at its points. */
static int equals_level_grid(const float* coarse, const int64_t origin[3], const int64_t spacing[3],
                             const int64_t count[3], float data[NZ][NY][NX]) {
  int ok = 1;
  for (int64_t z = 0; z < count[2]; ++z)
    for (int64_t y = 0; y < count[1]; ++y)
      for (int64_t x = 0; x < count[0]; ++x)
        ok &= coarse[(z * count[1] + y) * count[0] + x] ==
              data[origin[2] + z * spacing[2]][origin[1] + y * spacing[1]][origin[0] + x * spacing[0]];
  return ok;
}

int main(int argc, char** argv) {
  char path[4096];
  snprintf(path, sizeof path, "%s.idx", argc > 1 ? argv[1] : "c_api_test_data");
  static float data[NZ][NY][NX], back[NZ][NY][NX];
  for (int z = 0; z < NZ; ++z)
    for (int y = 0; y < NY; ++y)
      for (int x = 0; x < NX; ++x) data[z][y][x] = (float)(x + 100 * y + 10000 * z);

  hzio_field_spec fields[2] = {{"temperature", "float32", "zip", NULL, 0}, {"flag", "uint8", NULL, "rowmajor", 3}};
  hzio_create_options o;
  memset(&o, 0, sizeof o);
  o.ndim = 3;
  o.dims[0] = NX;
  o.dims[1] = NY;
  o.dims[2] = NZ;
  o.fields = fields;
  o.field_count = 2;
  o.overwrite = 1;
  hzio_dataset* ds = NULL;
  CHECK(hzio_dataset_create(path, &o, &ds) == HZIO_OK);
  int64_t lo[3] = {0, 0, 0}, hi[3] = {NX, NY, NZ};
  CHECK(hzio_dataset_write_box(ds, lo, hi, "temperature", 0, data, sizeof data) == HZIO_OK);
  CHECK(hzio_dataset_write_box(ds, lo, hi, "temperature", 0, data, 7) == HZIO_EINVAL);
  CHECK(strstr(hzio_last_error(), "bytes") != NULL);
  CHECK(hzio_dataset_close(ds) == HZIO_OK);

  CHECK(hzio_dataset_open(path, 0, &ds) == HZIO_OK);
  int ndim = 0, max_level = 0, nfields = 0;
  int64_t dims[3];
  CHECK(hzio_dataset_info(ds, &ndim, dims, &max_level, &nfields, NULL) == HZIO_OK);
  CHECK(ndim == 3 && dims[0] == NX && dims[2] == NZ && nfields == 2);
  CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "temperature", 0, back, sizeof back) == HZIO_OK);
  CHECK(memcmp(back, data, sizeof data) == 0);

  int64_t origin[3], spacing[3], count[3];
  CHECK(hzio_dataset_level_grid(ds, lo, hi, max_level - 3, origin, spacing, count) == HZIO_OK);
  size_t n = (size_t)(count[0] * count[1] * count[2]);
  float* coarse = malloc(n * sizeof(float));
  CHECK(hzio_dataset_read_box(ds, lo, hi, max_level - 3, "temperature", 0, coarse, n * sizeof(float)) == HZIO_OK);
  CHECK(equals_level_grid(coarse, origin, spacing, count, data));
  free(coarse);

  unsigned char flags[NZ][NY][NX];
  CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "flag", 0, flags, sizeof flags) == HZIO_OK);
  CHECK(flags[0][0][0] == 3 && flags[NZ - 1][NY - 1][NX - 1] == 3);
  CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "nope", 0, back, sizeof back) == HZIO_ENOTFOUND);
  CHECK(strstr(hzio_last_error(), "nope") != NULL);
  CHECK(hzio_dataset_close(ds) == HZIO_OK);
  CHECK(hzio_dataset_open("/nonexistent/x.idx", 0, &ds) == HZIO_ENOTFOUND);

  if (argc > 2) { /* the same dataset over HTTP: full and coarse reads equal the source; read-only */
    const char* url = argv[2];
    CHECK(hzio_dataset_open(url, 0, &ds) == HZIO_OK);
    memset(back, 0, sizeof back);
    CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "temperature", 0, back, sizeof back) == HZIO_OK);
    CHECK(memcmp(back, data, sizeof data) == 0);
    float* remote = malloc(n * sizeof(float));
    CHECK(hzio_dataset_read_box(ds, lo, hi, max_level - 3, "temperature", 0, remote, n * sizeof(float)) == HZIO_OK);
    CHECK(equals_level_grid(remote, origin, spacing, count, data));
    free(remote);
    CHECK(hzio_dataset_close(ds) == HZIO_OK);
    CHECK(hzio_dataset_open(url, 1, &ds) == HZIO_EINVAL);
    CHECK(strstr(hzio_last_error(), "read-only") != NULL);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s.missing.idx", url);
    CHECK(hzio_dataset_open(missing, 0, &ds) == HZIO_ENOTFOUND);
  }

  /* A flipped bit of the raw "flag" block, which ends the one data file: reads fail on its checksum,
     unless the open skips the checks. */
  memset(flags, 5, sizeof flags);
  CHECK(hzio_dataset_open(path, 1, &ds) == HZIO_OK);
  CHECK(hzio_dataset_write_box(ds, lo, hi, "flag", 0, flags, sizeof flags) == HZIO_OK);
  CHECK(hzio_dataset_close(ds) == HZIO_OK);
  char data_file[4200];
  snprintf(data_file, sizeof data_file, "%s/0000.bin", argc > 1 ? argv[1] : "c_api_test_data");
  FILE* f = fopen(data_file, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, -1, SEEK_END);
    int last = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(last ^ 1, f);
    fclose(f);
  }
  CHECK(hzio_dataset_open(path, 0, &ds) == HZIO_OK);
  CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "flag", 0, flags, sizeof flags) == HZIO_ECORRUPT);
  CHECK(strstr(hzio_last_error(), "checksum mismatch") != NULL);
  CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "temperature", 0, back, sizeof back) == HZIO_OK);
  CHECK(hzio_dataset_close(ds) == HZIO_OK);
  hzio_open_options oo;
  memset(&oo, 0, sizeof oo);
  oo.skip_checksums = 1;
  CHECK(hzio_dataset_open_with(path, &oo, &ds) == HZIO_OK);
  CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "flag", 0, flags, sizeof flags) == HZIO_OK);
  CHECK(hzio_dataset_close(ds) == HZIO_OK);
  /* Without a read cache, and with one, a box read twice is the data written. */
  for (int64_t cache = -1; cache <= 4096; cache += 4097) {
    memset(&oo, 0, sizeof oo);
    oo.read_cache_bytes = cache;
    CHECK(hzio_dataset_open_with(path, &oo, &ds) == HZIO_OK);
    for (int again = 0; again < 2; ++again) {
      memset(back, 0, sizeof back);
      CHECK(hzio_dataset_read_box(ds, lo, hi, -1, "temperature", 0, back, sizeof back) == HZIO_OK);
      CHECK(memcmp(back, data, sizeof data) == 0);
    }
    CHECK(hzio_dataset_close(ds) == HZIO_OK);
  }

  printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
