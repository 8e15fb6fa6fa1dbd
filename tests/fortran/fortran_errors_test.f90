! Exercises the errors of the Fortran module hzio: each failing call returns its status code, and
! hzio_last_error() gives a message naming what was wrong. Usage: fortran_errors_test [PATH].
program fortran_errors_test
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use hzio
  implicit none
  integer :: failures = 0, passes = 0

  call run()
  print *, passes, "passed,", failures, "failed"
  if (failures > 0) error stop 1

contains

  subroutine run()
    character(len=4096) :: arg
    character(len=:), allocatable :: path
    type(hzio_dataset) :: ds, never_opened
    real(real32) :: a(4, 4, 1), small(3)
    real(real64) :: doubles(4, 4, 1)
    integer(int64), parameter :: lo(3) = 0, hi(3) = [4, 4, 1]

    path = "fortran_errors_data.idx"
    if (command_argument_count() > 0) then
      call get_command_argument(1, arg)
      path = trim(arg)//".idx"
    end if

    call check(hzio_dataset_open("/nonexistent/missing.idx", ds) == HZIO_ENOTFOUND, "a missing dataset")
    call check(index(hzio_last_error(), "missing.idx") > 0, "the message names the missing file")
    call check(hzio_dataset_close(never_opened) == HZIO_OK, "closing a handle never opened does nothing")
    call check(hzio_dataset_create(path, [4_int64, 4_int64, 1_int64, 1_int64], [hzio_field_spec("v", "float32")], &
                                   ds, overwrite=.true.) == HZIO_EINVAL, "four axes")
    call check(index(hzio_last_error(), "ndim") > 0, "the message names the axes")
    call check(hzio_dataset_create(path, [4_int64, 4_int64], [hzio_field_spec("v", "float17")], ds, &
                                   overwrite=.true.) /= HZIO_OK, "an unknown dtype")
    call check(index(hzio_last_error(), "float17") > 0, "the message names the dtype")

    call check(hzio_dataset_create(path, [4_int64, 4_int64], [hzio_field_spec("v", "float32")], ds, overwrite=.true.) &
               == HZIO_OK, "create")
    a = 1
    call check(hzio_dataset_write_box(ds, lo, hi, "v", small) == HZIO_EINVAL, "an array of the wrong size")
    call check(index(hzio_last_error(), "bytes") > 0, "the message gives the byte sizes")
    call check(hzio_dataset_write_box(ds, lo, hi, "v", doubles) == HZIO_EINVAL, "an array of the wrong type's size")
    call check(hzio_dataset_write_box(ds, lo, [5_int64, 4_int64, 1_int64], "v", a) == HZIO_EINVAL, &
               "a box outside the dataset")
    call check(hzio_dataset_write_box(ds, lo, hi, "w", a) == HZIO_ENOTFOUND, "an unknown field")
    call check(index(hzio_last_error(), "w") > 0, "the message names the field")
    call check(hzio_dataset_write_box(ds, lo, hi, "v", a, time=3_int64) /= HZIO_OK, "an unknown timestep")
    call check(hzio_dataset_write_box(ds, lo, hi, "v", a) == HZIO_OK, "a good write after failed ones")
    call check(hzio_dataset_close(ds) == HZIO_OK, "close")

    call check(hzio_dataset_open(path, ds) == HZIO_OK, "open read-only")
    call check(hzio_dataset_write_box(ds, lo, hi, "v", a) /= HZIO_OK, "a write to a read-only dataset")
    call check(len(hzio_last_error()) > 0, "with a message")
    call check(hzio_dataset_read_box(ds, lo, hi, "v", small) == HZIO_EINVAL, "a read into an array too small")
    call check(hzio_dataset_read_box(ds, lo, hi, "v", a, level=99) /= HZIO_OK, "a level past the finest")
    call check(hzio_dataset_close(ds) == HZIO_OK, "close")
    call check(hzio_dataset_read_box(ds, lo, hi, "v", a) == HZIO_EINVAL, "a read through a closed handle")
  end subroutine run

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (ok) then
      passes = passes + 1
    else
      failures = failures + 1
      print *, "failed: ", what, " (", hzio_last_error(), ")"
    end if
  end subroutine check

end program fortran_errors_test
