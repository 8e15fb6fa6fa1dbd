/* hzio C API: create, open, write and read IDX datasets from C (and Fortran via ISO_C_BINDING).
 * Every call returns an hzio_status; on failure hzio_last_error() gives the message (thread-local).
 * Coordinates are x first; arrays are dense and x-fastest (C order [z][y][x]). All calls are Local. */
#ifndef HZIO_HZIO_H_
#define HZIO_HZIO_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hzio_status {
  HZIO_OK = 0,
  HZIO_EINVAL = 1,       /* bad argument: shape, size, box, option */
  HZIO_ENOTFOUND = 2,    /* dataset, field, timestep or file absent */
  HZIO_EFORMAT = 3,      /* malformed or unaccepted .idx */
  HZIO_ECORRUPT = 4,     /* bytes on disk contradict the format */
  HZIO_EIO = 5,          /* the OS refused an operation (disk full, permissions) */
  HZIO_EUNSUPPORTED = 6, /* valid IDX that hzio does not implement */
  HZIO_EINTERNAL = 7
} hzio_status;

/* An open dataset. Not thread-safe: use one handle per thread or lock around calls. */
typedef struct hzio_dataset hzio_dataset;

typedef struct hzio_field_spec {
  const char* name;
  const char* dtype;  /* "float32", "uint8[3]", "3*float64", ... */
  const char* codec;  /* NULL or "raw", "zip", "lz4", "zfp-reversible-reversible", ... */
  const char* layout; /* NULL or "hzorder" (default), "rowmajor" */
  double default_value;
} hzio_field_spec;

typedef struct hzio_create_options {
  int ndim;        /* 1..3 */
  int64_t dims[3]; /* x first */
  const hzio_field_spec* fields;
  int field_count;
  const char* bitmask;     /* NULL = OpenVisus default */
  int bits_per_block;      /* 0 = default */
  int64_t blocks_per_file; /* 0 = default */
  const int64_t* times;    /* NULL/0 = one timestep 0 */
  int time_count;
  int overwrite;
} hzio_create_options;

/* What hzio_dataset_open_with takes; all zero (memset) is the default of hzio_dataset_open(path, 0, ...). */
typedef struct hzio_open_options {
  int writable;             /* != 0: writes allowed */
  int skip_checksums;       /* != 0: reads do not check blocks against their checksums (format.md "Checksums") */
  int allow_outside_folder; /* != 0: accept templates naming files outside the .idx's folder (format.md "Limits") */
  int64_t read_cache_bytes; /* raw block bytes small reads keep for the reads that follow; 0: 8 MiB, < 0: none */
} hzio_open_options;

/* Local. The message of the last failed call on this thread ("" if none). Valid until the next call. */
const char* hzio_last_error(void);

/* Local. Creates a dataset; *out receives a handle to free with hzio_dataset_close. */
hzio_status hzio_dataset_create(const char* path, const hzio_create_options* options, hzio_dataset** out);
/* Local. Opens a dataset; writable != 0 allows writes. */
hzio_status hzio_dataset_open(const char* path, int writable, hzio_dataset** out);
/* Local. Opens a dataset with options (NULL: the defaults). */
hzio_status hzio_dataset_open_with(const char* path, const hzio_open_options* options, hzio_dataset** out);
/* Local. Metadata: any pointer may be NULL. dims is x first. */
hzio_status hzio_dataset_info(const hzio_dataset* ds, int* ndim, int64_t dims[3], int* max_level, int* field_count,
                              int* time_count);
/* Local. The grid a read of [lo, hi) at `level` fills (level -1 = full resolution). */
hzio_status hzio_dataset_level_grid(const hzio_dataset* ds, const int64_t lo[3], const int64_t hi[3], int level,
                                    int64_t origin[3], int64_t spacing[3], int64_t count[3]);
/* Local. Writes a dense array covering [lo, hi); `size` is its byte size. Copies before returning. */
hzio_status hzio_dataset_write_box(hzio_dataset* ds, const int64_t lo[3], const int64_t hi[3], const char* field,
                                   int64_t time, const void* data, size_t size);
/* Local. Reads levels 0..level inside [lo, hi) into `out` (size bytes, the level grid's shape). */
hzio_status hzio_dataset_read_box(hzio_dataset* ds, const int64_t lo[3], const int64_t hi[3], int level,
                                  const char* field, int64_t time, void* out, size_t size);
/* Local. Commits pending writes (data files durable first, then the .idx). */
hzio_status hzio_dataset_flush(hzio_dataset* ds);
/* Local. Commits, closes and frees the handle (also on error). NULL is a no-op. */
hzio_status hzio_dataset_close(hzio_dataset* ds);

#ifdef __cplusplus
}
#endif

#endif /* HZIO_HZIO_H_ */
