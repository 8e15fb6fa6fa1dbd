/* hzio C API for MPI programs: collective create/open, Local staging of each rank's boxes, Collective
 * flush/close and reads. Include after <mpi.h> is available; link libhzio built with MPI. */
#ifndef HZIO_HZIO_MPI_H_
#define HZIO_HZIO_MPI_H_

#include <mpi.h>

#include "hzio/hzio.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hzio_pdataset hzio_pdataset;

typedef enum hzio_placement { HZIO_PLACEMENT_LOCALIZED = 0, HZIO_PLACEMENT_UNIFORM = 1 } hzio_placement;
typedef enum hzio_index_space { HZIO_INDEX_SPACE_GLOBAL = 0, HZIO_INDEX_SPACE_LOCAL = 1 } hzio_index_space;
typedef enum hzio_read_method {
  HZIO_READ_AUTO = 0,
  HZIO_READ_INDEPENDENT = 1,
  HZIO_READ_TWO_PHASE = 2
} hzio_read_method;

typedef struct hzio_parallel_options {
  hzio_placement placement;
  int aggregator_count;         /* 0 = no cap */
  size_t aggregator_bytes;      /* 0 = 256 MiB */
  int durable;                  /* fsync data files and the .idx */
  int partitions;               /* 0 or 1: none; else a power of two R: domain partitioning
                                   (docs/guide/parallel-io.md "Partitions") */
  hzio_index_space index_space; /* with partitions: one dataset (global, 0) or one per partition and a
                                   .midx mosaic (local) */
} hzio_parallel_options;

/* Collective. `parallel` may be NULL (localized placement, 256 MiB, durable). */
hzio_status hzio_pdataset_create(MPI_Comm comm, const char* path, const hzio_create_options* options,
                                 const hzio_parallel_options* parallel, hzio_pdataset** out);
/* Collective. Opens for collective reads, and writes if writable != 0. */
hzio_status hzio_pdataset_open(MPI_Comm comm, const char* path, int writable, const hzio_parallel_options* parallel,
                               hzio_pdataset** out);
/* Local. Stages this rank's box; copies `data`. */
hzio_status hzio_pdataset_write_box(hzio_pdataset* ds, const int64_t lo[3], const int64_t hi[3], const char* field,
                                    int64_t time, const void* data, size_t size);
/* Local. As hzio_pdataset_write_box without the copy: `data` must stay valid and unchanged until the next
 * hzio_pdataset_flush or hzio_pdataset_close returns. */
hzio_status hzio_pdataset_write_box_borrowed(hzio_pdataset* ds, const int64_t lo[3], const int64_t hi[3],
                                             const char* field, int64_t time, const void* data, size_t size);
/* Collective. Writes every staged box and commits. If report_json is not NULL, up to report_size bytes of the
 * write report (JSON, NUL-terminated) are copied there. */
hzio_status hzio_pdataset_flush(hzio_pdataset* ds, char* report_json, size_t report_size);
/* Collective. Every rank reads its own box (lo == hi on some axis: nothing, size 0). */
hzio_status hzio_pdataset_read_box(hzio_pdataset* ds, const int64_t lo[3], const int64_t hi[3], int level,
                                   const char* field, int64_t time, void* out, size_t size, hzio_read_method method);
/* Collective. Flushes, closes and frees the handle. */
hzio_status hzio_pdataset_close(hzio_pdataset* ds);

#ifdef __cplusplus
}
#endif

#endif /* HZIO_HZIO_MPI_H_ */
