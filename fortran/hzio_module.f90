! The Fortran module hzio (`use hzio`): create, open, write and read IDX datasets from one process, over
! the C API of include/hzio/hzio.h. Every function returns a status (HZIO_OK = 0), and hzio_last_error()
! gives the message of the last failure. Every call is Local. A dataset handle is not thread-safe.
!
! Axes and arrays. Coordinates are 0-based and x first, as in C: a box is lo(3), hi(3) with hi excluded, and
! dims lists (nx, ny, nz). Fortran arrays are column-major, so the box [lo, hi) is the Fortran array
! a(hi(1)-lo(1), hi(2)-lo(2), hi(3)-lo(3)), indexed a(x, y, z): the same memory as C's [z][y][x] and NumPy's
! arr[z, y, x]. A vector field (e.g. "float32[3]") adds a first, fastest axis: a(3, nx, ny, nz). Arrays may
! have any rank (a rank-1 array of the right size works too) and must have the field's element type (the
! byte size is checked, not the type); a strided section goes through a contiguous copy.
module hzio
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_int64_t, c_ptr, c_size_t, c_null_ptr, c_associated
  use hzio_c_interop, only: HZIO_OK, HZIO_EINVAL, HZIO_ENOTFOUND, HZIO_EFORMAT, HZIO_ECORRUPT, HZIO_EIO, &
                            HZIO_EUNSUPPORTED, HZIO_EINTERNAL, hzio_field_spec, c_create_options, create_buffers, &
                            c_string, fortran_string, make_create_options, array_view, view_for_write, &
                            view_for_read, copy_back, to_c_bool
  implicit none
  private

  public :: HZIO_OK, HZIO_EINVAL, HZIO_ENOTFOUND, HZIO_EFORMAT, HZIO_ECORRUPT, HZIO_EIO, HZIO_EUNSUPPORTED, &
            HZIO_EINTERNAL, hzio_field_spec
  public :: hzio_last_error, hzio_dataset_create, hzio_dataset_open, hzio_dataset_info, hzio_dataset_level_grid, &
            hzio_dataset_write_box, hzio_dataset_read_box, hzio_dataset_flush, hzio_dataset_close

  ! An open dataset (hzio_dataset*). Free it with hzio_dataset_close.
  type, public :: hzio_dataset
    private
    type(c_ptr) :: handle = c_null_ptr
  end type hzio_dataset

  type, bind(C) :: c_open_options
    integer(c_int) :: writable = 0, skip_checksums = 0, allow_outside_folder = 0
    integer(c_int64_t) :: read_cache_bytes = 0  ! 0: the default
  end type c_open_options

  interface
    function c_last_error() bind(C, name="hzio_last_error") result(p)
      import :: c_ptr
      type(c_ptr) :: p
    end function c_last_error
    function c_create(path, options, out) bind(C, name="hzio_dataset_create") result(status)
      import :: c_char, c_create_options, c_ptr, c_int
      character(kind=c_char), intent(in) :: path(*)
      type(c_create_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function c_create
    function c_open(path, options, out) bind(C, name="hzio_dataset_open_with") result(status)
      import :: c_char, c_open_options, c_ptr, c_int
      character(kind=c_char), intent(in) :: path(*)
      type(c_open_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function c_open
    function c_info(ds, ndim, dims, max_level, field_count, time_count) bind(C, name="hzio_dataset_info") &
        result(status)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ds
      integer(c_int), intent(out) :: ndim, max_level, field_count, time_count
      integer(c_int64_t), intent(out) :: dims(3)
      integer(c_int) :: status
    end function c_info
    function c_level_grid(ds, lo, hi, level, origin, spacing, count) bind(C, name="hzio_dataset_level_grid") &
        result(status)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ds
      integer(c_int64_t), intent(in) :: lo(3), hi(3)
      integer(c_int), value :: level
      integer(c_int64_t), intent(out) :: origin(3), spacing(3), count(3)
      integer(c_int) :: status
    end function c_level_grid
    function c_write_box(ds, lo, hi, field, time, data, size) bind(C, name="hzio_dataset_write_box") result(status)
      import :: c_ptr, c_char, c_int, c_int64_t, c_size_t
      type(c_ptr), value :: ds, data
      integer(c_int64_t), intent(in) :: lo(3), hi(3)
      character(kind=c_char), intent(in) :: field(*)
      integer(c_int64_t), value :: time
      integer(c_size_t), value :: size
      integer(c_int) :: status
    end function c_write_box
    function c_read_box(ds, lo, hi, level, field, time, out, size) bind(C, name="hzio_dataset_read_box") &
        result(status)
      import :: c_ptr, c_char, c_int, c_int64_t, c_size_t
      type(c_ptr), value :: ds, out
      integer(c_int64_t), intent(in) :: lo(3), hi(3)
      integer(c_int), value :: level
      character(kind=c_char), intent(in) :: field(*)
      integer(c_int64_t), value :: time
      integer(c_size_t), value :: size
      integer(c_int) :: status
    end function c_read_box
    function c_flush(ds) bind(C, name="hzio_dataset_flush") result(status)
      import :: c_ptr, c_int
      type(c_ptr), value :: ds
      integer(c_int) :: status
    end function c_flush
    function c_close(ds) bind(C, name="hzio_dataset_close") result(status)
      import :: c_ptr, c_int
      type(c_ptr), value :: ds
      integer(c_int) :: status
    end function c_close
  end interface

contains

  ! Local. The message of the last failed call on this thread ("" if none).
  function hzio_last_error() result(message)
    character(len=:), allocatable :: message
    message = fortran_string(c_last_error())
  end function hzio_last_error

  ! Local. Creates a dataset at path (a .idx) of dims (x first, 1 to 3 axes) and fields. Optional: overwrite
  ! an existing dataset, the bitmask ("" = the OpenVisus default), bits_per_block and blocks_per_file
  ! (0 = defaults), times (absent: one timestep 0). On success ds is open for writes; close it.
  function hzio_dataset_create(path, dims, fields, ds, overwrite, bitmask, bits_per_block, blocks_per_file, times) &
      result(status)
    character(len=*), intent(in) :: path
    integer(c_int64_t), intent(in) :: dims(:)
    type(hzio_field_spec), intent(in) :: fields(:)
    type(hzio_dataset), intent(out) :: ds
    logical, intent(in), optional :: overwrite
    character(len=*), intent(in), optional :: bitmask
    integer, intent(in), optional :: bits_per_block
    integer(c_int64_t), intent(in), optional :: blocks_per_file
    integer(c_int64_t), intent(in), optional :: times(:)
    integer :: status
    type(create_buffers), target :: buffers
    type(c_create_options) :: options
    call make_create_options(dims, fields, overwrite, bitmask, bits_per_block, blocks_per_file, times, buffers, &
                             options)
    status = c_create(c_string(path), options, ds%handle)
  end function hzio_dataset_create

  ! Local. Opens the dataset at path (a .idx file or an http(s):// URL) for reads, and for writes if writable.
  ! skip_checksums: reads do not check blocks against their checksums (docs/format.md "Checksums");
  ! allow_outside_folder: accept file templates naming files outside the .idx's folder ("Limits").
  function hzio_dataset_open(path, ds, writable, skip_checksums, allow_outside_folder) result(status)
    character(len=*), intent(in) :: path
    type(hzio_dataset), intent(out) :: ds
    logical, intent(in), optional :: writable, skip_checksums, allow_outside_folder
    integer :: status
    type(c_open_options) :: options
    if (present(writable)) options%writable = to_c_bool(writable)
    if (present(skip_checksums)) options%skip_checksums = to_c_bool(skip_checksums)
    if (present(allow_outside_folder)) options%allow_outside_folder = to_c_bool(allow_outside_folder)
    status = c_open(c_string(path), options, ds%handle)
  end function hzio_dataset_open

  ! Local. Metadata, each argument optional: axes, dims (x first; unused axes 1), the finest level, and
  ! the numbers of fields and timesteps.
  function hzio_dataset_info(ds, ndim, dims, max_level, field_count, time_count) result(status)
    type(hzio_dataset), intent(in) :: ds
    integer, intent(out), optional :: ndim, max_level, field_count, time_count
    integer(c_int64_t), intent(out), optional :: dims(3)
    integer :: status
    integer(c_int) :: n, level, nfields, ntimes
    integer(c_int64_t) :: d(3)
    n = 0
    level = 0
    nfields = 0
    ntimes = 0
    d = 1
    status = c_info(ds%handle, n, d, level, nfields, ntimes)
    if (present(ndim)) ndim = n
    if (present(dims)) dims = d
    if (present(max_level)) max_level = level
    if (present(field_count)) field_count = nfields
    if (present(time_count)) time_count = ntimes
  end function hzio_dataset_info

  ! Local. The grid a read of [lo, hi) at level fills (-1: the finest): its first sample, the distance
  ! between samples, and the sample count per axis (x first); the read's array has shape count.
  function hzio_dataset_level_grid(ds, lo, hi, level, origin, spacing, count) result(status)
    type(hzio_dataset), intent(in) :: ds
    integer(c_int64_t), intent(in) :: lo(3), hi(3)
    integer, intent(in) :: level
    integer(c_int64_t), intent(out) :: origin(3), spacing(3), count(3)
    integer :: status
    status = c_level_grid(ds%handle, lo, hi, int(level, c_int), origin, spacing, count)
  end function hzio_dataset_level_grid

  ! Local. Writes data, the samples of the box [lo, hi) as a(x, y, z), to field at timestep time (default 0).
  ! data is copied before the call returns; writes are committed by hzio_dataset_flush or hzio_dataset_close.
  function hzio_dataset_write_box(ds, lo, hi, field, data, time) result(status)
    type(hzio_dataset), intent(inout) :: ds
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
  end function hzio_dataset_write_box

  ! Local. Reads field at timestep time (default 0) inside [lo, hi) at level (default -1: the finest) into
  ! out, whose size must be that of hzio_dataset_level_grid's count (the whole box at the finest level).
  function hzio_dataset_read_box(ds, lo, hi, field, out, level, time) result(status)
    type(hzio_dataset), intent(inout) :: ds
    integer(c_int64_t), intent(in) :: lo(3), hi(3)
    character(len=*), intent(in) :: field
    type(*), dimension(..), intent(inout) :: out
    integer, intent(in), optional :: level
    integer(c_int64_t), intent(in), optional :: time
    integer :: status
    integer(c_int) :: h
    integer(c_int64_t) :: t
    type(array_view), target :: view
    h = -1
    t = 0
    if (present(level)) h = int(level, c_int)
    if (present(time)) t = time
    call view_for_read(out, view)
    status = c_read_box(ds%handle, lo, hi, h, c_string(field), t, view%address, view%bytes)
    call copy_back(out, view)
  end function hzio_dataset_read_box

  ! Local. Commits pending writes: data files durable first, then the .idx.
  function hzio_dataset_flush(ds) result(status)
    type(hzio_dataset), intent(inout) :: ds
    integer :: status
    status = c_flush(ds%handle)
  end function hzio_dataset_flush

  ! Local. Commits, closes and frees the dataset (also when the commit fails). Closing a closed or never
  ! opened dataset does nothing.
  function hzio_dataset_close(ds) result(status)
    type(hzio_dataset), intent(inout) :: ds
    integer :: status
    status = HZIO_OK
    if (.not. c_associated(ds%handle)) return
    status = c_close(ds%handle)
    ds%handle = c_null_ptr
  end function hzio_dataset_close

end module hzio
