/* For the Fortran module hzio_mpi (fortran/hzio_mpi_module.f90): the collective calls of
 * include/hzio/hzio_mpi.h that take a communicator, taking a Fortran handle, converted with MPI_Comm_f2c.
 * Collective. */
#include "hzio/hzio_mpi.h"

hzio_status hzio_pdataset_create_fcomm(MPI_Fint comm, const char* path, const hzio_create_options* options,
                                       const hzio_parallel_options* parallel, hzio_pdataset** out);
hzio_status hzio_pdataset_open_fcomm(MPI_Fint comm, const char* path, int writable,
                                     const hzio_parallel_options* parallel, hzio_pdataset** out);
hzio_status hzio_node_memory_create_fcomm(MPI_Fint comm, size_t bytes, hzio_node_memory** out);

hzio_status hzio_pdataset_create_fcomm(MPI_Fint comm, const char* path, const hzio_create_options* options,
                                       const hzio_parallel_options* parallel, hzio_pdataset** out) {
  return hzio_pdataset_create(MPI_Comm_f2c(comm), path, options, parallel, out);
}

hzio_status hzio_pdataset_open_fcomm(MPI_Fint comm, const char* path, int writable,
                                     const hzio_parallel_options* parallel, hzio_pdataset** out) {
  return hzio_pdataset_open(MPI_Comm_f2c(comm), path, writable, parallel, out);
}

hzio_status hzio_node_memory_create_fcomm(MPI_Fint comm, size_t bytes, hzio_node_memory** out) {
  return hzio_node_memory_create(MPI_Comm_f2c(comm), bytes, out);
}
