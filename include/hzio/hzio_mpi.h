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

/* Node memory (docs/guide/parallel-io.md "Node memory"): each rank's region of one shared-memory object of its
 * node. A box staged from it with hzio_pdataset_write_box_borrowed is read where it lies by its files'
 * aggregators on that node, without being ordered or sent by this rank. */
typedef struct hzio_node_memory hzio_node_memory;
/* Collective over `comm`. A region of `bytes` for this rank (ranks may ask for different sizes), taken now:
 * a node whose /dev/shm is too small fails here, on every rank. */
hzio_status hzio_node_memory_create(MPI_Comm comm, size_t bytes, hzio_node_memory** out);
/* Local. This rank's region (page-aligned), valid until hzio_node_memory_free. */
void* hzio_node_memory_data(const hzio_node_memory* memory);
/* Local. Unmaps the memory and frees the handle (NULL: nothing). No box staged from it may await a flush. */
void hzio_node_memory_free(hzio_node_memory* memory);

/* Dedicated I/O ranks (docs/guide/parallel-io.md "I/O ranks"): compute ranks hand their boxes to an I/O rank
 * of their node through shared memory and compute on while the I/O ranks write. */
typedef struct hzio_io_ranks hzio_io_ranks;
typedef struct hzio_io_dataset hzio_io_dataset;

typedef struct hzio_io_ranks_options {
  int per_node;        /* I/O ranks per node (its last ranks); 0 = 1 */
  size_t buffer_bytes; /* each I/O rank's shared buffer; 0 = 256 MiB */
  int in_flight;       /* flushes of a compute rank that may await the disk at once; 0 = 2 */
} hzio_io_ranks_options;

/* Collective over `comm`. Splits each node's ranks (MPI_Comm_split_type SHARED, or groups of
 * $HZIO_RANKS_PER_NODE consecutive ranks) into compute ranks and I/O ranks. `options` may be NULL. */
hzio_status hzio_io_ranks_start(MPI_Comm comm, const hzio_io_ranks_options* options, hzio_io_ranks** out);
/* Local. 1 on I/O ranks, 0 on compute ranks. */
int hzio_io_ranks_is_io_rank(const hzio_io_ranks* io);
/* Local. The compute ranks' communicator (MPI_COMM_NULL on I/O ranks), valid until hzio_io_ranks_close. */
MPI_Comm hzio_io_ranks_compute_comm(const hzio_io_ranks* io);
/* Local, compute ranks. `bytes` of this rank's region of the node's buffer for the caller's arrays (held
 * until hzio_io_ranks_close). A box staged with hzio_io_dataset_write_box_borrowed from this memory is handed
 * over where it lies, without a copy; it must then stay unchanged until the next flush or wait returns. */
hzio_status hzio_io_ranks_shared_memory(hzio_io_ranks* io, size_t bytes, void** out);
/* Collective over the I/O ranks. Runs the writes the compute ranks hand over until they have all closed. */
hzio_status hzio_io_ranks_serve(hzio_io_ranks* io);
/* Collective over the compute ranks. The I/O ranks create the dataset (their worker threads: the node's
 * cores shared among them). Errors carry the I/O side's message. */
hzio_status hzio_io_ranks_create(hzio_io_ranks* io, const char* path, const hzio_create_options* options,
                                 const hzio_parallel_options* parallel, hzio_io_dataset** out);
/* Collective over the compute ranks. The I/O ranks open an existing dataset for writing. */
hzio_status hzio_io_ranks_open(hzio_io_ranks* io, const char* path, const hzio_parallel_options* parallel,
                               hzio_io_dataset** out);
/* Local. Stages this rank's box; copies `data`. */
hzio_status hzio_io_dataset_write_box(hzio_io_dataset* ds, const int64_t lo[3], const int64_t hi[3], const char* field,
                                      int64_t time, const void* data, size_t size);
/* Local. As hzio_io_dataset_write_box without the copy: `data` must stay unchanged until the next flush
 * returns, and memory from hzio_io_ranks_shared_memory until the flush after that (or hzio_io_ranks_wait)
 * returns. */
hzio_status hzio_io_dataset_write_box_borrowed(hzio_io_dataset* ds, const int64_t lo[3], const int64_t hi[3],
                                               const char* field, int64_t time, const void* data, size_t size);
/* Collective over the compute ranks. Copies the staged boxes into the node's buffer and returns: the I/O
 * ranks write and commit them meanwhile. An error the I/O side reported for an earlier flush is returned
 * here. If report_json is not NULL, the hand-off report (JSON: seconds, waited, reason, copied, pieces) is
 * copied there, up to report_size bytes with the NUL. */
hzio_status hzio_io_dataset_flush(hzio_io_dataset* ds, char* report_json, size_t report_size);
/* Collective over the compute ranks. Flushes, waits until the dataset is committed and closed by the I/O
 * ranks, and frees the handle. */
hzio_status hzio_io_dataset_close(hzio_io_dataset* ds);
/* Local, compute ranks. Waits until every flush of this rank so far is durable; returns the I/O side's
 * first error. */
hzio_status hzio_io_ranks_wait(hzio_io_ranks* io);
/* Local: every compute rank calls it once, after its last dataset call (I/O ranks after serve). Waits as
 * hzio_io_ranks_wait, tells the I/O ranks this rank is done, and frees the handle (the communicators and
 * shared memory go with the last dataset handle). */
hzio_status hzio_io_ranks_close(hzio_io_ranks* io);

#ifdef __cplusplus
}
#endif

#endif /* HZIO_HZIO_MPI_H_ */
