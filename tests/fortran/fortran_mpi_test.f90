! Exercises the Fortran module hzio_mpi under mpiexec: each rank writes a z slab of a formula, the
! collective flush reports, collective reads with every method return each rank's own slab and another
! rank's, and a one-process open reads coarser levels of the whole dataset, all checked against the
! formula (the test's oracle). A slab staged from node memory is written without a record message; a
! borrowed slab is read at flush time, a borrowed strided section at write time (it is copied). Usage:
! mpiexec -n N fortran_mpi_test [PATH].
program fortran_mpi_test
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_size_t, c_f_pointer
  use mpi_f08
  use hzio_mpi
  implicit none
  integer(int64), parameter :: nx = 24, ny = 10, nz = 9
  integer :: failures = 0, passes = 0, total = 0, rank, ranks

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks)
  call run()
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print *, passes, "passed on rank 0,", total, "failed on all ranks"
  call MPI_Finalize()
  if (total > 0) error stop 1

contains

  ! The test, with its arrays local (freed at its end, so that leak checkers see none).
  subroutine run()
    character(len=4096) :: arg
    character(len=:), allocatable :: path, report
    type(hzio_pdataset) :: pds
    type(hzio_dataset) :: ds
    real(real64), allocatable :: mine(:, :, :), back(:, :, :), theirs(:, :, :)
    integer(int64) :: lo(3), hi(3), other_lo(3), other_hi(3)
    integer :: method, other, level, max_level

    path = "fortran_mpi_data.idx"
    if (command_argument_count() > 0) then
      call get_command_argument(1, arg)
      path = trim(arg)//".idx"
    end if

    call slab(rank, lo, hi)
    allocate (mine(hi(1) - lo(1), hi(2) - lo(2), hi(3) - lo(3)))
    mine = formula(lo, hi)
    call check(hzio_pdataset_create(MPI_COMM_WORLD, path, [nx, ny, nz], [hzio_field_spec("rho", "float64", "lz4")], &
                                    pds, overwrite=.true., bits_per_block=8, &
                                    parallel=hzio_parallel_options(placement=HZIO_PLACEMENT_UNIFORM)) == HZIO_OK, &
               "collective create")
    call check(hzio_pdataset_write_box(pds, lo, hi, "rho", mine) == HZIO_OK, "stage this rank's slab")
    call check(hzio_pdataset_flush(pds, report) == HZIO_OK, "collective flush")
    call check(index(report, '"ranks": ') > 0, "the flush reports")
    allocate (back, mold=mine)
    do method = HZIO_READ_AUTO, HZIO_READ_TWO_PHASE
      back = -1
      call check(hzio_pdataset_read_box(pds, lo, hi, "rho", back, method=method) == HZIO_OK, "collective read")
      call check(all(back == mine), "each rank reads its slab back")
    end do
    call check(hzio_pdataset_close(pds) == HZIO_OK, "collective close")

    call check(hzio_pdataset_open(MPI_COMM_WORLD, path, pds) == HZIO_OK, "collective open")
    other = mod(rank + 1, ranks)
    call slab(other, other_lo, other_hi)
    allocate (theirs(other_hi(1) - other_lo(1), other_hi(2) - other_lo(2), other_hi(3) - other_lo(3)))
    call check(hzio_pdataset_read_box(pds, other_lo, other_hi, "rho", theirs) == HZIO_OK, "read another slab")
    call check(all(theirs == formula(other_lo, other_hi)), "another rank's slab reads back")
    call check(hzio_pdataset_close(pds) == HZIO_OK, "collective close")

    call borrowed_and_node_memory(path)

    ! One process reads the whole dataset at coarser levels (Local calls, so rank 0 alone).
    if (rank == 0) then
      call check(hzio_dataset_open(path, ds) == HZIO_OK, "open from one process")
      call check(hzio_dataset_info(ds, max_level=max_level) == HZIO_OK, "info")
      do level = max_level - 3, max_level
        call check_level(ds, level)
      end do
      call check(hzio_dataset_close(ds) == HZIO_OK, "close")
    end if
  end subroutine run

  ! Writes of timestep 0 again, each read back: from node memory (no record message: every rank of this
  ! test runs on one node), borrowed (changed after the write: the flush sees the change), and a borrowed
  ! strided section (copied at the write: a change after it is not seen). Leaves the formula in place.
  subroutine borrowed_and_node_memory(path)
    character(len=*), intent(in) :: path
    character(len=:), allocatable :: report
    type(hzio_pdataset) :: pds
    type(hzio_node_memory) :: memory
    type(c_ptr) :: data
    real(real64), pointer :: shared(:, :, :)
    real(real64), allocatable :: mine(:, :, :), back(:, :, :), wide(:, :, :)
    integer(int64) :: lo(3), hi(3), n(3)
    call slab(rank, lo, hi)
    n = hi - lo
    allocate (back(n(1), n(2), n(3)), mine(n(1), n(2), n(3)), wide(2*n(1), n(2), n(3)))
    call check(hzio_node_memory_create(MPI_COMM_WORLD, int(8*product(n), c_size_t), memory, data) == HZIO_OK, &
               "node memory")
    call c_f_pointer(data, shared, n)
    shared = -formula(lo, hi)
    call check(hzio_pdataset_open(MPI_COMM_WORLD, path, pds, writable=.true.) == HZIO_OK, "open for writing")
    call check(hzio_pdataset_write_box_borrowed(pds, lo, hi, "rho", shared) == HZIO_OK, "stage from node memory")
    call check(hzio_pdataset_flush(pds, report) == HZIO_OK, "flush from node memory")
    call check(index(report, '"messages": 0, "message_bytes": 0') > 0, "no record message: " // report)
    call check(hzio_pdataset_read_box(pds, lo, hi, "rho", back) == HZIO_OK, "read")
    call check(all(back == shared), "node memory reads back")
    mine = 7
    call check(hzio_pdataset_write_box_borrowed(pds, lo, hi, "rho", mine) == HZIO_OK, "stage borrowed")
    mine = 2*formula(lo, hi)
    call check(hzio_pdataset_flush(pds) == HZIO_OK, "flush borrowed")
    call check(hzio_pdataset_read_box(pds, lo, hi, "rho", back) == HZIO_OK, "read")
    call check(all(back == mine), "a borrowed box is read at flush time")
    wide(1::2, :, :) = formula(lo, hi)
    call check(hzio_pdataset_write_box_borrowed(pds, lo, hi, "rho", wide(1::2, :, :)) == HZIO_OK, &
               "stage a strided section")
    wide = 9
    call check(hzio_pdataset_close(pds) == HZIO_OK, "close")
    call hzio_node_memory_free(memory)
    call check(hzio_pdataset_open(MPI_COMM_WORLD, path, pds) == HZIO_OK, "reopen")
    call check(hzio_pdataset_read_box(pds, lo, hi, "rho", back) == HZIO_OK, "read")
    call check(all(back == formula(lo, hi)), "a strided section is copied at the write")
    call check(hzio_pdataset_close(pds) == HZIO_OK, "close")
  end subroutine borrowed_and_node_memory

  ! Rank r's z slab of the dataset.
  subroutine slab(r, lo, hi)
    integer, intent(in) :: r
    integer(int64), intent(out) :: lo(3), hi(3)
    lo = [0_int64, 0_int64, nz*r/ranks]
    hi = [nx, ny, nz*(r + 1)/ranks]
  end subroutine slab

  ! The samples of the box [lo, hi) as an array a(x, y, z).
  function formula(lo, hi) result(a)
    integer(int64), intent(in) :: lo(3), hi(3)
    real(real64) :: a(hi(1) - lo(1), hi(2) - lo(2), hi(3) - lo(3))
    integer(int64) :: x, y, z
    do z = lo(3), hi(3) - 1
      do y = lo(2), hi(2) - 1
        do x = lo(1), hi(1) - 1
          a(x - lo(1) + 1, y - lo(2) + 1, z - lo(3) + 1) = 0.25d0*real(x + 100*y + 10000*z, real64)
        end do
      end do
    end do
  end function formula

  ! A read of the whole dataset at level fills the level grid with the formula's samples at its points.
  subroutine check_level(ds, level)
    type(hzio_dataset), intent(inout) :: ds
    integer, intent(in) :: level
    integer(int64), parameter :: origin0(3) = 0, whole(3) = [nx, ny, nz]
    integer(int64) :: origin(3), spacing(3), count(3), i, j, k
    real(real64), allocatable :: coarse(:, :, :)
    real(real64) :: all_samples(nx, ny, nz)
    logical :: same
    call check(hzio_dataset_level_grid(ds, origin0, whole, level, origin, spacing, count) == HZIO_OK, "level grid")
    allocate (coarse(count(1), count(2), count(3)))
    call check(hzio_dataset_read_box(ds, origin0, whole, "rho", coarse, level=level) == HZIO_OK, "read a level")
    all_samples = formula(origin0, whole)
    same = .true.
    do k = 1, count(3)
      do j = 1, count(2)
        do i = 1, count(1)
          same = same .and. coarse(i, j, k) == all_samples(origin(1) + (i - 1)*spacing(1) + 1, &
                                                           origin(2) + (j - 1)*spacing(2) + 1, &
                                                           origin(3) + (k - 1)*spacing(3) + 1)
        end do
      end do
    end do
    call check(same, "a level's samples are the formula's")
  end subroutine check_level

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (ok) then
      passes = passes + 1
    else
      failures = failures + 1
      print *, "rank", rank, "failed: ", what, " (", hzio_last_error(), ")"
    end if
  end subroutine check

end program fortran_mpi_test
