! Internal to the Fortran modules hzio and hzio_mpi: the C API's structs declared with iso_c_binding, the
! field type, and the conversions of strings, options and arrays (arrays of any type and rank go to C as
! descriptors, fortran/hzio_fortran_arrays.c). Programs use the modules hzio and hzio_mpi, not this one.
module hzio_c_interop
  use, intrinsic :: iso_c_binding, only: c_char, c_double, c_int, c_int8_t, c_int64_t, c_loc, c_null_char, &
                                         c_null_ptr, c_ptr, c_size_t, c_f_pointer, c_associated
  implicit none
  private

  ! Status codes (hzio_status): every call returns one; HZIO_OK is 0.
  integer, parameter, public :: HZIO_OK = 0, HZIO_EINVAL = 1, HZIO_ENOTFOUND = 2, HZIO_EFORMAT = 3, &
                                HZIO_ECORRUPT = 4, HZIO_EIO = 5, HZIO_EUNSUPPORTED = 6, HZIO_EINTERNAL = 7

  ! One field of a new dataset (hzio_field_spec): hzio_field_spec("temp", "float32", codec="zip"). Texts of up
  ! to 256 characters, trailing blanks not part of them; a blank codec or layout means "raw" or "hzorder".
  type, public :: hzio_field_spec
    character(len=256) :: name = ""
    character(len=256) :: dtype = ""   ! "float32", "uint8[3]", "3*float64", ...
    character(len=256) :: codec = ""   ! "raw", "zip", "lz4", "zfp-reversible-reversible", ...
    character(len=256) :: layout = ""  ! "hzorder" or "rowmajor"
    real(c_double) :: default_value = 0  ! the value of samples never written
  end type hzio_field_spec

  type, bind(C), public :: c_field_spec
    type(c_ptr) :: name = c_null_ptr, dtype = c_null_ptr, codec = c_null_ptr, layout = c_null_ptr
    real(c_double) :: default_value = 0
  end type c_field_spec

  type, bind(C), public :: c_create_options
    integer(c_int) :: ndim = 0
    integer(c_int64_t) :: dims(3) = 0
    type(c_ptr) :: fields = c_null_ptr
    integer(c_int) :: field_count = 0
    type(c_ptr) :: bitmask = c_null_ptr
    integer(c_int) :: bits_per_block = 0
    integer(c_int64_t) :: blocks_per_file = 0
    type(c_ptr) :: times = c_null_ptr
    integer(c_int) :: time_count = 0
    integer(c_int) :: overwrite = 0
  end type c_create_options

  ! A NUL-terminated copy of a Fortran string.
  type :: c_text
    character(kind=c_char), allocatable :: chars(:)
  end type c_text

  ! What a c_create_options points into: it must outlive the C call that reads the options.
  type, public :: create_buffers
    type(c_text), allocatable :: texts(:)
    type(c_field_spec), allocatable :: fields(:)
    integer(c_int64_t), allocatable :: times(:)
  end type create_buffers

  ! Where the C API finds an array's samples: the array itself if it is contiguous, else a copy.
  type, public :: array_view
    type(c_ptr) :: address = c_null_ptr
    integer(c_size_t) :: bytes = 0
    integer(c_int8_t), allocatable :: copy(:)
  end type array_view

  public :: c_string, fortran_string, make_create_options, view_for_write, view_for_read, copy_back, &
            to_c_bool

  interface
    function c_strlen(s) bind(C, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen
    subroutine c_array_info(a, data, bytes, contiguous) bind(C, name="hzio_fortran_array_info")
      import :: c_ptr, c_size_t, c_int
      type(*), dimension(..), intent(in) :: a
      type(c_ptr), intent(out) :: data
      integer(c_size_t), intent(out) :: bytes
      integer(c_int), intent(out) :: contiguous
    end subroutine c_array_info
    subroutine c_array_gather(a, buffer) bind(C, name="hzio_fortran_array_gather")
      import :: c_ptr
      type(*), dimension(..), intent(in) :: a
      type(c_ptr), value :: buffer
    end subroutine c_array_gather
    subroutine c_array_scatter(a, buffer) bind(C, name="hzio_fortran_array_scatter")
      import :: c_ptr
      type(*), dimension(..), intent(inout) :: a
      type(c_ptr), value :: buffer
    end subroutine c_array_scatter
  end interface

contains

  ! s without trailing blanks and with a NUL: for a C string argument declared character(kind=c_char) :: s(*).
  pure function c_string(s) result(t)
    character(len=*), intent(in) :: s
    character(len=:, kind=c_char), allocatable :: t
    t = trim(s)//c_null_char
  end function c_string

  ! The Fortran copy of the NUL-terminated C string at p ("" for a null pointer).
  function fortran_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      s = ""
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function fortran_string

  ! Fills `options` from the arguments of hzio_dataset_create; `buffers` holds what it points to.
  subroutine make_create_options(dims, fields, overwrite, bitmask, bits_per_block, blocks_per_file, times, &
                                 buffers, options)
    integer(c_int64_t), intent(in) :: dims(:)
    type(hzio_field_spec), intent(in) :: fields(:)
    logical, intent(in), optional :: overwrite
    character(len=*), intent(in), optional :: bitmask
    integer, intent(in), optional :: bits_per_block
    integer(c_int64_t), intent(in), optional :: blocks_per_file
    integer(c_int64_t), intent(in), optional :: times(:)
    type(create_buffers), intent(inout), target :: buffers
    type(c_create_options), intent(out) :: options
    integer :: i, n
    n = size(fields)
    allocate (buffers%texts(4*n + 1), buffers%fields(n))
    do i = 1, n
      buffers%fields(i)%name = text_ptr(buffers, 4*i - 3, fields(i)%name)
      buffers%fields(i)%dtype = text_ptr(buffers, 4*i - 2, fields(i)%dtype)
      buffers%fields(i)%codec = text_ptr(buffers, 4*i - 1, fields(i)%codec)
      buffers%fields(i)%layout = text_ptr(buffers, 4*i, fields(i)%layout)
      buffers%fields(i)%default_value = fields(i)%default_value
    end do
    ! More than 3 axes is passed on as such, for the C API to refuse.
    options%ndim = int(size(dims), c_int)
    options%dims(1:min(3, size(dims))) = dims(1:min(3, size(dims)))
    options%field_count = int(n, c_int)
    if (n > 0) options%fields = c_loc(buffers%fields)
    if (present(bitmask)) options%bitmask = text_ptr(buffers, 4*n + 1, bitmask)
    if (present(overwrite)) options%overwrite = to_c_bool(overwrite)
    if (present(bits_per_block)) options%bits_per_block = int(bits_per_block, c_int)
    if (present(blocks_per_file)) options%blocks_per_file = blocks_per_file
    if (present(times)) then
      buffers%times = times
      options%time_count = int(size(times), c_int)
      if (size(times) > 0) options%times = c_loc(buffers%times)
    end if
  end subroutine make_create_options

  ! The C string of buffers%texts(i), set to s without trailing blanks; a null pointer if s is absent or blank.
  function text_ptr(buffers, i, s) result(p)
    type(create_buffers), intent(inout), target :: buffers
    integer, intent(in) :: i
    character(len=*), intent(in), optional :: s
    type(c_ptr) :: p
    integer :: k, n
    p = c_null_ptr
    if (.not. present(s)) return
    n = len_trim(s)
    if (n == 0) return
    allocate (buffers%texts(i)%chars(n + 1))
    do k = 1, n
      buffers%texts(i)%chars(k) = s(k:k)
    end do
    buffers%texts(i)%chars(n + 1) = c_null_char
    p = c_loc(buffers%texts(i)%chars)
  end function text_ptr

  ! The samples of a (any type and rank) for the C API to read: a itself, or a contiguous copy of it.
  subroutine view_for_write(a, view)
    type(*), dimension(..), intent(in) :: a
    type(array_view), intent(out), target :: view
    integer(c_int) :: contiguous
    call c_array_info(a, view%address, view%bytes, contiguous)
    if (contiguous /= 0) return
    allocate (view%copy(max(1_c_size_t, view%bytes)))
    view%address = c_loc(view%copy)
    call c_array_gather(a, view%address)
  end subroutine view_for_write

  ! Where the C API writes the samples of a: a itself, or a contiguous buffer that copy_back copies to a.
  subroutine view_for_read(a, view)
    type(*), dimension(..), intent(in) :: a
    type(array_view), intent(out), target :: view
    integer(c_int) :: contiguous
    call c_array_info(a, view%address, view%bytes, contiguous)
    if (contiguous /= 0) return
    allocate (view%copy(max(1_c_size_t, view%bytes)))
    view%address = c_loc(view%copy)
  end subroutine view_for_read

  subroutine copy_back(a, view)
    type(*), dimension(..), intent(inout) :: a
    type(array_view), intent(in) :: view
    if (allocated(view%copy)) call c_array_scatter(a, view%address)
  end subroutine copy_back

  elemental function to_c_bool(b) result(i)
    logical, intent(in) :: b
    integer(c_int) :: i
    i = merge(1_c_int, 0_c_int, b)
  end function to_c_bool

end module hzio_c_interop
