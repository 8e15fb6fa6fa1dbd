/* For the Fortran modules hzio and hzio_mpi (fortran/hzio_c_interop.f90): Fortran arrays of any type and
 * rank, seen through their C descriptors (ISO_Fortran_binding.h): where their samples are, their byte size,
 * and copies between a non-contiguous array (a strided section) and a contiguous buffer. Local, thread-safe. */
#include <ISO_Fortran_binding.h>
#include <stddef.h>
#include <string.h>

void hzio_fortran_array_info(const CFI_cdesc_t* a, void** data, size_t* bytes, int* contiguous);
void hzio_fortran_array_gather(const CFI_cdesc_t* a, void* buffer);
void hzio_fortran_array_scatter(const CFI_cdesc_t* a, const void* buffer);

void hzio_fortran_array_info(const CFI_cdesc_t* a, void** data, size_t* bytes, int* contiguous) {
  size_t n = a->elem_len;
  for (int d = 0; d < a->rank; ++d) n *= (size_t)a->dim[d].extent;
  *data = a->base_addr;
  *bytes = n;
  *contiguous = a->rank == 0 || CFI_is_contiguous(a);
}

/* Copies every element of `a`, in array element order (first subscript fastest), to the buffer
 * (to_buffer != 0) or from it. */
static void copy_elements(const CFI_cdesc_t* a, char* buffer, int to_buffer) {
  CFI_index_t at[CFI_MAX_RANK] = {0};
  for (int d = 0; d < a->rank; ++d)
    if (a->dim[d].extent == 0) return;
  for (char* b = buffer;; b += a->elem_len) {
    char* element = (char*)a->base_addr;
    for (int d = 0; d < a->rank; ++d) element += at[d] * a->dim[d].sm;
    if (to_buffer)
      memcpy(b, element, a->elem_len);
    else
      memcpy(element, b, a->elem_len);
    int d = 0;
    while (d < a->rank && ++at[d] == a->dim[d].extent) at[d++] = 0;
    if (d == a->rank) return;
  }
}

void hzio_fortran_array_gather(const CFI_cdesc_t* a, void* buffer) { copy_elements(a, buffer, 1); }

void hzio_fortran_array_scatter(const CFI_cdesc_t* a, const void* buffer) { copy_elements(a, (char*)buffer, 0); }
