! Exercises the Fortran module hzio from one process: create with two fields and two timesteps, write
! whole and partial boxes (also from a strided array section), read back at the finest and coarser levels,
! over whole boxes and sub-boxes, against the formula the samples were written from (the test's oracle).
! Usage: fortran_serial_test [PATH] (writes PATH.idx).
program fortran_serial_test
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32
  use hzio
  implicit none
  integer(int64), parameter :: nx = 20, ny = 13, nz = 7
  integer :: failures = 0, passes = 0

  call run()
  print *, passes, "passed,", failures, "failed"
  if (failures > 0) error stop 1

contains

  ! The test, with its arrays local (freed at its end, so that leak checkers see none).
  subroutine run()
    character(len=4096) :: arg
    character(len=:), allocatable :: path
    type(hzio_dataset) :: ds
    real(real32), allocatable :: a(:, :, :), wide(:, :, :), back(:, :, :), flat(:)
    integer(int32), allocatable :: counts(:, :, :), expected(:, :, :)
    integer(int64) :: lo(3), hi(3), x, y, z, dims(3)
    integer :: ndim, max_level, field_count, time_count, level

    path = "fortran_serial_data.idx"
    if (command_argument_count() > 0) then
      call get_command_argument(1, arg)
      path = trim(arg)//".idx"
    end if

    allocate (a(nx, ny, nz), wide(2*nx, ny, nz))
    do z = 0, nz - 1
      do y = 0, ny - 1
        do x = 0, nx - 1
          a(x + 1, y + 1, z + 1) = temperature(x, y, z)
        end do
      end do
    end do
    wide = -1
    wide(1:2*nx:2, :, :) = 2*a

    call check(hzio_dataset_create(path, [nx, ny, nz], &
                                   [hzio_field_spec("temperature", "float32", codec="zip"), &
                                    hzio_field_spec("count", "int32", codec="lz4", layout="rowmajor", &
                                                    default_value=7)], &
                                   ds, overwrite=.true., times=[0_int64, 5_int64]) == HZIO_OK, "create")
    lo = 0
    hi = [nx, ny, nz]
    call check(hzio_dataset_write_box(ds, lo, hi, "temperature", a) == HZIO_OK, "write the whole box")
    ! A strided section arrives as a contiguous copy: timestep 5 holds 2 * temperature.
    call check(hzio_dataset_write_box(ds, lo, hi, "temperature", wide(1:2*nx:2, :, :), time=5_int64) == HZIO_OK, &
               "write a strided section")
    allocate (counts(7, ny, 2))
    do z = 3, 4
      do y = 0, ny - 1
        do x = 2, 8
          counts(x - 1, y + 1, z - 2) = count_at(x, y, z)
        end do
      end do
    end do
    call check(hzio_dataset_write_box(ds, [2_int64, 0_int64, 3_int64], [9_int64, ny, 5_int64], "count", counts) &
               == HZIO_OK, "write a partial box")
    call check(hzio_dataset_close(ds) == HZIO_OK, "close commits")
    call check(hzio_dataset_close(ds) == HZIO_OK, "a second close does nothing")

    call check(hzio_dataset_open(path, ds) == HZIO_OK, "open")
    call check(hzio_dataset_info(ds, ndim, dims, max_level, field_count, time_count) == HZIO_OK, "info")
    call check(ndim == 3 .and. all(dims == [nx, ny, nz]) .and. field_count == 2 .and. time_count == 2, "metadata")

    allocate (back(nx, ny, nz))
    back = 0
    call check(hzio_dataset_read_box(ds, lo, hi, "temperature", back) == HZIO_OK, "read the whole box")
    call check(all(back == a), "the whole box reads back")
    back = 0
    call check(hzio_dataset_read_box(ds, lo, hi, "temperature", back, time=5_int64) == HZIO_OK, "read timestep 5")
    call check(all(back == 2*a), "timestep 5 reads back")
    allocate (flat(nx*ny*nz))
    call check(hzio_dataset_read_box(ds, lo, hi, "temperature", flat) == HZIO_OK, "read into a rank-1 array")
    call check(all(flat == reshape(a, [nx*ny*nz])), "a rank-1 array holds the samples in x, y, z order")
    wide = 0
    call check(hzio_dataset_read_box(ds, lo, hi, "temperature", wide(2:2*nx:2, :, :)) == HZIO_OK, &
               "read into a strided section")
    call check(all(wide(2:2*nx:2, :, :) == a) .and. all(wide(1:2*nx:2, :, :) == 0), "the section is filled, only it")

    do level = max_level - 4, max_level - 1
      call check_level(ds, lo, hi, level)
      call check_level(ds, [3_int64, 2_int64, 1_int64], [17_int64, 11_int64, 6_int64], level)
    end do

    ! The oracle of the partially written field: the default value, and the written box.
    allocate (expected(nx, ny, nz))
    expected = 7
    expected(3:9, :, 4:5) = counts
    deallocate (counts)
    allocate (counts(nx, ny, nz))
    call check(hzio_dataset_read_box(ds, lo, hi, "count", counts) == HZIO_OK, "read the partially written field")
    call check(all(counts == expected), "written samples read back, the others as the default value")
    call check(hzio_dataset_close(ds) == HZIO_OK, "close")
  end subroutine run

  pure function temperature(x, y, z) result(t)
    integer(int64), intent(in) :: x, y, z
    real(real32) :: t
    t = real(x + 100*y + 10000*z, real32)
  end function temperature

  pure function count_at(x, y, z) result(c)
    integer(int64), intent(in) :: x, y, z
    integer(int32) :: c
    c = int(x*y - z, int32)
  end function count_at

  ! A read of [lo, hi) at level fills the level grid with the samples at its points.
  subroutine check_level(ds, lo, hi, level)
    type(hzio_dataset), intent(inout) :: ds
    integer(int64), intent(in) :: lo(3), hi(3)
    integer, intent(in) :: level
    integer(int64) :: origin(3), spacing(3), count(3), i, j, k
    real(real32), allocatable :: coarse(:, :, :)
    logical :: same
    call check(hzio_dataset_level_grid(ds, lo, hi, level, origin, spacing, count) == HZIO_OK, "level grid")
    allocate (coarse(count(1), count(2), count(3)))
    call check(hzio_dataset_read_box(ds, lo, hi, "temperature", coarse, level=level) == HZIO_OK, "read a level")
    same = .true.
    do k = 1, count(3)
      do j = 1, count(2)
        do i = 1, count(1)
          same = same .and. coarse(i, j, k) == temperature(origin(1) + (i - 1)*spacing(1), &
                                                           origin(2) + (j - 1)*spacing(2), &
                                                           origin(3) + (k - 1)*spacing(3))
        end do
      end do
    end do
    call check(same .and. (any(count == 0) .or. (all(origin >= lo) .and. all(origin < hi))), &
               "a level's samples are the formula's")
  end subroutine check_level

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

end program fortran_serial_test
