! The Fortran module hzio_mpi (`use hzio_mpi`, which also gives everything of `use hzio`): one dataset
! written and read by all the ranks of an MPI communicator, over the C API of include/hzio/hzio_mpi.h.
! Communicators are mpi_f08's type(MPI_Comm) (with the old `use mpi`, pass MPI_Comm(comm)). Boxes and
! arrays are as in the module hzio: lo(3), hi(3) x first and 0-based, arrays a(x, y, z).
module hzio_mpi
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_int64_t, c_ptr, c_size_t, c_null_ptr, c_null_char, &
                                         c_associated, c_loc
  use mpi_f08, only: MPI_Comm
  use hzio
  use hzio_c_interop, only: c_create_options, create_buffers, c_string, make_create_options, array_view, &
                            view_for_write, view_for_read, copy_back, to_c_bool
  implicit none
  private :: c_create_options, create_buffers, c_string, make_create_options, array_view, view_for_write, &
             view_for_read, copy_back, to_c_bool
  private :: c_create, c_open, c_write_box, c_write_box_borrowed, c_flush, c_read_box, c_close, options_ptr
  private :: c_node_memory_create, c_node_memory_data, c_node_memory_free

  ! Where the data files' aggregators are (hzio_placement), and how collective reads go (hzio_read_method).
  integer, parameter, public :: HZIO_PLACEMENT_LOCALIZED = 0, HZIO_PLACEMENT_UNIFORM = 1
  integer, parameter, public :: HZIO_INDEX_SPACE_GLOBAL = 0, HZIO_INDEX_SPACE_LOCAL = 1
  integer, parameter, public :: HZIO_READ_AUTO = 0, HZIO_READ_INDEPENDENT = 1, HZIO_READ_TWO_PHASE = 2

  ! An open parallel dataset (hzio_pdataset*). Free it with hzio_pdataset_close.
  type, public :: hzio_pdataset
    private
    type(c_ptr) :: handle = c_null_ptr
  end type hzio_pdataset

  ! Memory of this rank in its node's shared memory (hzio_node_memory*): an array there, staged with
  ! hzio_pdataset_write_box_borrowed, is read where it lies by the ranks that write its data files.
  ! Free it with hzio_node_memory_free.
  type, public :: hzio_node_memory
    private
    type(c_ptr) :: handle = c_null_ptr
  end type hzio_node_memory

  ! Options of collective writes (hzio_parallel_options); the defaults are those of a NULL pointer in C.
  type, bind(C), public :: hzio_parallel_options
    integer(c_int) :: placement = HZIO_PLACEMENT_LOCALIZED
    integer(c_int) :: aggregator_count = 0   ! 0: no cap
    integer(c_size_t) :: aggregator_bytes = 0 ! 0: 256 MiB
    integer(c_int) :: durable = 1            ! 1: fsync data files and the .idx
    integer(c_int) :: partitions = 1         ! a power of two: domain partitioning
    integer(c_int) :: index_space = HZIO_INDEX_SPACE_GLOBAL  ! or HZIO_INDEX_SPACE_LOCAL: a dataset per partition
  end type hzio_parallel_options

  interface
    ! fortran/hzio_mpi_comm.c: hzio_pdataset_create and _open taking a Fortran communicator handle.
    function c_create(comm, path, options, parallel, out) bind(C, name="hzio_pdataset_create_fcomm") result(status)
      import :: c_int, c_char, c_create_options, c_ptr
      integer(c_int), value :: comm
      character(kind=c_char), intent(in) :: path(*)
      type(c_create_options), intent(in) :: options
      type(c_ptr), value :: parallel
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function c_create
    function c_open(comm, path, writable, parallel, out) bind(C, name="hzio_pdataset_open_fcomm") result(status)
      import :: c_int, c_char, c_ptr
      integer(c_int), value :: comm, writable
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), value :: parallel
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function c_open
    function c_write_box(ds, lo, hi, field, time, data, size) bind(C, name="hzio_pdataset_write_box") result(status)
      import :: c_ptr, c_char, c_int, c_int64_t, c_size_t
      type(c_ptr), value :: ds, data
      integer(c_int64_t), intent(in) :: lo(3), hi(3)
      character(kind=c_char), intent(in) :: field(*)
      integer(c_int64_t), value :: time
      integer(c_size_t), value :: size
      integer(c_int) :: status
    end function c_write_box
    function c_write_box_borrowed(ds, lo, hi, field, time, data, size) &
      bind(C, name="hzio_pdataset_write_box_borrowed") result(status)
      import :: c_ptr, c_int64_t, c_char, c_size_t, c_int
      type(c_ptr), value :: ds, data
      integer(c_int64_t), intent(in) :: lo(3), hi(3)
      character(kind=c_char), intent(in) :: field(*)
      integer(c_int64_t), value :: time
      integer(c_size_t), value :: size
      integer(c_int) :: status
    end function c_write_box_borrowed
    function c_node_memory_create(comm, bytes, out) bind(C, name="hzio_node_memory_create_fcomm") result(status)
      import :: c_int, c_size_t, c_ptr
      integer(c_int), value :: comm
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function c_node_memory_create
    function c_node_memory_data(memory) bind(C, name="hzio_node_memory_data") result(p)
      import :: c_ptr
      type(c_ptr), value :: memory
      type(c_ptr) :: p
    end function c_node_memory_data
    subroutine c_node_memory_free(memory) bind(C, name="hzio_node_memory_free")
      import :: c_ptr
      type(c_ptr), value :: memory
    end subroutine c_node_memory_free
    function c_flush(ds, report, report_size) bind(C, name="hzio_pdataset_flush") result(status)
      import :: c_ptr, c_int, c_size_t
      type(c_ptr), value :: ds, report
      integer(c_size_t), value :: report_size
      integer(c_int) :: status
    end function c_flush
    function c_read_box(ds, lo, hi, level, field, time, out, size, method) bind(C, name="hzio_pdataset_read_box") &
        result(status)
      import :: c_ptr, c_char, c_int, c_int64_t, c_size_t
      type(c_ptr), value :: ds, out
      integer(c_int64_t), intent(in) :: lo(3), hi(3)
      integer(c_int), value :: level, method
      character(kind=c_char), intent(in) :: field(*)
      integer(c_int64_t), value :: time
      integer(c_size_t), value :: size
      integer(c_int) :: status
    end function c_read_box
    function c_close(ds) bind(C, name="hzio_pdataset_close") result(status)
      import :: c_ptr, c_int
      type(c_ptr), value :: ds
      integer(c_int) :: status
    end function c_close
  end interface

contains

  ! Collective. Creates a dataset on all ranks of comm; the arguments are those of hzio_dataset_create
  ! (the same on every rank) and the options of collective writes. Writes are staged per rank.
  function hzio_pdataset_create(comm, path, dims, fields, ds, overwrite, bitmask, bits_per_block, blocks_per_file, &
                                times, parallel) result(status)
    type(MPI_Comm), intent(in) :: comm
    character(len=*), intent(in) :: path
    integer(c_int64_t), intent(in) :: dims(:)
    type(hzio_field_spec), intent(in) :: fields(:)
    type(hzio_pdataset), intent(out) :: ds
    logical, intent(in), optional :: overwrite
    character(len=*), intent(in), optional :: bitmask
    integer, intent(in), optional :: bits_per_block
    integer(c_int64_t), intent(in), optional :: blocks_per_file
    integer(c_int64_t), intent(in), optional :: times(:)
    type(hzio_parallel_options), intent(in), optional, target :: parallel
    integer :: status
    type(create_buffers), target :: buffers
    type(c_create_options) :: options
    call make_create_options(dims, fields, overwrite, bitmask, bits_per_block, blocks_per_file, times, buffers, &
                             options)
    status = c_create(int(comm%MPI_VAL, c_int), c_string(path), options, options_ptr(parallel), ds%handle)
  end function hzio_pdataset_create

  ! Collective. Opens a dataset on all ranks of comm for collective reads, and writes if writable.
  function hzio_pdataset_open(comm, path, ds, writable, parallel) result(status)
    type(MPI_Comm), intent(in) :: comm
    character(len=*), intent(in) :: path
    type(hzio_pdataset), intent(out) :: ds
    logical, intent(in), optional :: writable
    type(hzio_parallel_options), intent(in), optional, target :: parallel
    integer :: status
    integer(c_int) :: w
    w = 0
    if (present(writable)) w = to_c_bool(writable)
    status = c_open(int(comm%MPI_VAL, c_int), c_string(path), w, options_ptr(parallel), ds%handle)
  end function hzio_pdataset_open

  ! Local. Stages this rank's box [lo, hi) of field at timestep time (default 0) as data(x, y, z); data is
  ! copied. The next hzio_pdataset_flush or hzio_pdataset_close writes the staged boxes of all ranks.
  function hzio_pdataset_write_box(ds, lo, hi, field, data, time) result(status)
    type(hzio_pdataset), intent(inout) :: ds
    integer(c_int64_t), intent(in) :: lo(3), hi(3)
    character(len=*), intent(in) :: field
    type(*), dimension(..), intent(in) :: data
    integer(c_int64_t), intent(in), optional :: time
    integer :: status
    integer(c_int64_t) :: t
    type(array_view), target :: view
    t = 0
    if (present(time)) t = time
    call view_for_write(data, view)
    status = c_write_box(ds%handle, lo, hi, c_string(field), t, view%address, view%bytes)
  end function hzio_pdataset_write_box

  ! Local. As hzio_pdataset_write_box without the copy: data must stay unchanged until the next
  ! hzio_pdataset_flush or hzio_pdataset_close returns. An array that is not contiguous (a strided
  ! section) is copied, as hzio_pdataset_write_box does.
  function hzio_pdataset_write_box_borrowed(ds, lo, hi, field, data, time) result(status)
    type(hzio_pdataset), intent(inout) :: ds
    integer(c_int64_t), intent(in) :: lo(3), hi(3)
    character(len=*), intent(in) :: field
    type(*), dimension(..), intent(in), target :: data
    integer(c_int64_t), intent(in), optional :: time
    integer :: status
    integer(c_int64_t) :: t
    type(array_view), target :: view
    t = 0
    if (present(time)) t = time
    call view_for_write(data, view)
    if (allocated(view%copy)) then  ! not contiguous: the view is a copy, which must not be borrowed
      status = c_write_box(ds%handle, lo, hi, c_string(field), t, view%address, view%bytes)
    else
      status = c_write_box_borrowed(ds%handle, lo, hi, c_string(field), t, view%address, view%bytes)
    end if
  end function hzio_pdataset_write_box_borrowed

  ! Collective over comm. bytes of this rank's region of its node's shared memory (ranks may ask for
  ! different sizes); data receives its address (page-aligned): c_f_pointer(data, a, [nx, ny, nz]) makes it
  ! an array. Errors on every rank: a /dev/shm too small, or a request of more than 2**52 bytes.
  function hzio_node_memory_create(comm, bytes, memory, data) result(status)
    type(MPI_Comm), intent(in) :: comm
    integer(c_size_t), intent(in) :: bytes
    type(hzio_node_memory), intent(out) :: memory
    type(c_ptr), intent(out) :: data
    integer :: status
    status = c_node_memory_create(int(comm%MPI_VAL, c_int), bytes, memory%handle)
    data = c_null_ptr
    if (status == HZIO_OK) data = c_node_memory_data(memory%handle)
  end function hzio_node_memory_create

  ! Local. Unmaps the memory; no box staged from it may await a flush.
  subroutine hzio_node_memory_free(memory)
    type(hzio_node_memory), intent(inout) :: memory
    call c_node_memory_free(memory%handle)
    memory%handle = c_null_ptr
  end subroutine hzio_node_memory_free

  ! Collective. Writes every rank's staged boxes and commits. report, if present, receives the write
  ! report (JSON).
  function hzio_pdataset_flush(ds, report) result(status)
    type(hzio_pdataset), intent(inout) :: ds
    character(len=:), allocatable, intent(out), optional :: report
    integer :: status
    integer, parameter :: report_capacity = 262144
    character(kind=c_char), allocatable, target :: buffer(:)
    integer :: i, n
    if (.not. present(report)) then
      status = c_flush(ds%handle, c_null_ptr, 0_c_size_t)
      return
    end if
    allocate (buffer(report_capacity))
    buffer(1) = c_null_char
    status = c_flush(ds%handle, c_loc(buffer), int(report_capacity, c_size_t))
    n = findloc(buffer, c_null_char, dim=1) - 1
    allocate (character(len=n) :: report)
    do i = 1, n
      report(i:i) = buffer(i)
    end do
  end function hzio_pdataset_flush

  ! Collective. Every rank reads its own box [lo, hi) of field at level (default -1: the finest) and timestep
  ! time (default 0) into out (shaped as hzio_dataset_level_grid's count; a rank with nothing to read passes
  ! lo == hi on an axis and an empty array). method: HZIO_READ_AUTO (default), _INDEPENDENT or _TWO_PHASE.
  function hzio_pdataset_read_box(ds, lo, hi, field, out, level, time, method) result(status)
    type(hzio_pdataset), intent(inout) :: ds
    integer(c_int64_t), intent(in) :: lo(3), hi(3)
    character(len=*), intent(in) :: field
    type(*), dimension(..), intent(inout) :: out
    integer, intent(in), optional :: level, method
    integer(c_int64_t), intent(in), optional :: time
    integer :: status
    integer(c_int) :: h, m
    integer(c_int64_t) :: t
    type(array_view), target :: view
    h = -1
    m = HZIO_READ_AUTO
    t = 0
    if (present(level)) h = int(level, c_int)
    if (present(method)) m = int(method, c_int)
    if (present(time)) t = time
    call view_for_read(out, view)
    status = c_read_box(ds%handle, lo, hi, h, c_string(field), t, view%address, view%bytes, m)
    call copy_back(out, view)
  end function hzio_pdataset_read_box

  ! Collective. Flushes, closes and frees the dataset. Closing a closed or never opened dataset does nothing
  ! (on every rank alike, as it is collective).
  function hzio_pdataset_close(ds) result(status)
    type(hzio_pdataset), intent(inout) :: ds
    integer :: status
    status = HZIO_OK
    if (.not. c_associated(ds%handle)) return
    status = c_close(ds%handle)
    ds%handle = c_null_ptr
  end function hzio_pdataset_close

  function options_ptr(parallel) result(p)
    type(hzio_parallel_options), intent(in), optional, target :: parallel
    type(c_ptr) :: p
    p = c_null_ptr
    if (present(parallel)) p = c_loc(parallel)
  end function options_ptr

end module hzio_mpi
