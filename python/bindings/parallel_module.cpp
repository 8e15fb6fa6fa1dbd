// nanobind glue for ParallelDataset (part of hzio._core when built with MPI): the communicator comes
// as a Fortran handle (mpi4py's comm.py2f()), so no mpi4py headers are needed.
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "binding_util.hpp"
#include "hzio/io_ranks.hpp"
#include "hzio/parallel.hpp"
#include "hzio/plan.hpp"

namespace nb = nanobind;
using namespace hzio;
using hzio::bindings::box;
using hzio::bindings::check;
using hzio::bindings::create_options;
using hzio::bindings::FieldTuple;
using hzio::bindings::HzioError;
using hzio::bindings::take;
using hzio::bindings::Triple;

namespace {

ParallelOptions options(const std::string& placement, int aggregator_count, int64_t aggregator_bytes, bool durable,
                        int threads, int partitions, const std::string& index_space = "global") {
  if (placement != "localized" && placement != "uniform") {
    throw HzioError{invalid_argument("placement '" + placement + "' is not 'localized' or 'uniform'")};
  }
  if (aggregator_bytes <= 0) throw HzioError{invalid_argument("aggregator_bytes must be positive")};
  ParallelOptions o;
  o.placement = placement == "uniform" ? AggregatorPlacement::kUniform : AggregatorPlacement::kLocalized;
  o.aggregator_count = aggregator_count;
  o.aggregator_bytes = static_cast<size_t>(aggregator_bytes);
  o.durable = durable;
  o.threads = threads;
  o.partitions = partitions;
  if (index_space != "global" && index_space != "local")
    throw HzioError{invalid_argument("index_space '" + index_space + "' is not 'global' or 'local'")};
  o.index_space = index_space == "local" ? IndexSpace::kLocal : IndexSpace::kGlobal;
  return o;
}

// write_box of a dataset staging boxes for a collective write (ParallelDataset, IoDataset). borrow: the
// Python caller keeps `data` alive and unchanged until flush() returns.
template <class D>
void write_box_of(D& d, Triple lo, Triple hi, const std::string& field, int64_t time,
                  nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> data, bool borrow) {
  const void* ptr = data.data();
  const size_t n = data.nbytes();
  nb::gil_scoped_release release;
  check(borrow ? d.write_box_borrowed(box(lo, hi), field, time, ptr, n)
               : d.write_box(box(lo, hi), field, time, ptr, n));
}

// A communicator as the Fortran handle mpi4py takes (MPI.Intracomm.f2py); -1 for MPI_COMM_NULL.
int64_t handle_of(MPI_Comm comm) { return comm == MPI_COMM_NULL ? -1 : static_cast<int64_t>(MPI_Comm_c2f(comm)); }

void bind_io_ranks(nb::module_& m) {
  nb::class_<IoDataset>(m, "IoDataset")
      .def("write_box", &write_box_of<IoDataset>, nb::arg("lo"), nb::arg("hi"), nb::arg("field"), nb::arg("time"),
           nb::arg("data"), nb::arg("borrow") = false)
      .def("flush",
           [](IoDataset& d) {
             HandOffReport r;
             {
               nb::gil_scoped_release release;
               r = take(d.flush());
             }
             return std::make_tuple(r.seconds, r.waited, r.reason, r.copied, r.pieces, r.in_place);
           })
      .def("close",
           [](IoDataset& d) {
             nb::gil_scoped_release release;
             check(d.close());
           })
      .def_prop_ro("ndim", &IoDataset::ndim)
      .def_prop_ro("times", &IoDataset::times)
      .def_prop_ro("box",
                   [](const IoDataset& d) {
                     const Box b = d.box();
                     return std::make_pair(Triple{b.lo[0], b.lo[1], b.lo[2]}, Triple{b.hi[0], b.hi[1], b.hi[2]});
                   })
      .def_prop_ro("fields", [](const IoDataset& d) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& [name, dtype] : d.fields()) out.emplace_back(name, dtype.to_string());
        return out;
      });
  nb::class_<NodeMemory>(m, "NodeMemory")
      .def_static(
          "create",
          [](int64_t comm_handle, int64_t bytes) {
            // A negative size (a rank's bad request) still takes part, so that every rank fails with it.
            MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle));
            nb::gil_scoped_release release;
            return take(NodeMemory::create(comm, bytes < 0 ? SIZE_MAX : static_cast<size_t>(bytes)));
          },
          nb::arg("comm_handle"), nb::arg("bytes"))
      .def("memory", [](nb::object self) {
        // A view of this rank's region, keeping the NodeMemory object (which maps it) alive.
        const NodeMemory& m = nb::cast<const NodeMemory&>(self);
        return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(m.data(), {m.size()}, self);
      });
  nb::class_<IoRanks>(m, "IoRanks")
      .def_static(
          "start",
          [](int64_t comm_handle, int per_node, int64_t buffer_bytes, int in_flight) {
            if (buffer_bytes < 0) throw HzioError{invalid_argument("buffer_bytes must be at least 4096")};
            MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle));
            IoRanksOptions o{per_node, static_cast<size_t>(buffer_bytes), in_flight};
            nb::gil_scoped_release release;
            return take(IoRanks::start(comm, o));
          },
          nb::arg("comm_handle"), nb::arg("per_node"), nb::arg("buffer_bytes"), nb::arg("in_flight"))
      .def_prop_ro("is_io_rank", &IoRanks::is_io_rank)
      .def_prop_ro("compute_comm_handle", [](const IoRanks& io) { return handle_of(io.compute_comm()); })
      .def_prop_ro("io_comm_handle", [](const IoRanks& io) { return handle_of(io.io_comm()); })
      .def_prop_ro("region_bytes", &IoRanks::region_bytes)
      .def(
          "shared_memory",
          [](nb::object self, size_t bytes) {
            // A view of the memory, keeping the IoRanks object (which maps it) alive.
            void* p = take(nb::cast<IoRanks&>(self).shared_memory(bytes));
            return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(p, {bytes}, self);
          },
          nb::arg("bytes"))
      .def("serve",
           [](IoRanks& io) {
             nb::gil_scoped_release release;
             check(io.serve());
           })
      .def("wait",
           [](IoRanks& io) {
             nb::gil_scoped_release release;
             check(io.wait());
           })
      .def("close",
           [](IoRanks& io) {
             nb::gil_scoped_release release;
             check(io.close());
           })
      .def(
          "create",
          [](IoRanks& io, const std::string& path, std::vector<int64_t> dims, const std::vector<FieldTuple>& fields,
             std::string bitmask, int bits_per_block, int64_t blocks_per_file, std::vector<int64_t> times,
             bool overwrite, std::string placement, int aggregator_count, int64_t aggregator_bytes, bool durable,
             int threads, int sub_block_bits, int partitions) {
            CreateOptions o = create_options(std::move(dims), fields, std::move(bitmask), bits_per_block,
                                             blocks_per_file, std::move(times), overwrite, sub_block_bits);
            ParallelOptions po = options(placement, aggregator_count, aggregator_bytes, durable, threads, partitions);
            nb::gil_scoped_release release;
            return take(io.create(path, o, po));
          },
          nb::arg("path"), nb::arg("dims"), nb::arg("fields"), nb::arg("bitmask"), nb::arg("bits_per_block"),
          nb::arg("blocks_per_file"), nb::arg("times"), nb::arg("overwrite"), nb::arg("placement"),
          nb::arg("aggregator_count"), nb::arg("aggregator_bytes"), nb::arg("durable"), nb::arg("threads"),
          nb::arg("sub_block_bits"), nb::arg("partitions"), nb::keep_alive<0, 1>())
      .def(
          "open",
          [](IoRanks& io, const std::string& path, std::string placement, int aggregator_count,
             int64_t aggregator_bytes, bool durable, int threads, bool verify, bool allow_outside_folder,
             int partitions) {
            ParallelOptions po = options(placement, aggregator_count, aggregator_bytes, durable, threads, partitions);
            po.verify_checksums = verify;
            po.allow_outside_folder = allow_outside_folder;
            nb::gil_scoped_release release;
            return take(io.open(path, po));
          },
          nb::arg("path"), nb::arg("placement"), nb::arg("aggregator_count"), nb::arg("aggregator_bytes"),
          nb::arg("durable"), nb::arg("threads"), nb::arg("verify"), nb::arg("allow_outside_folder"),
          nb::arg("partitions"), nb::keep_alive<0, 1>());
}

}  // namespace

void bind_parallel(nb::module_& m) {
  // The plan of a collective write simulated for any number of ranks (src/parallel/plan_summary.hpp), as
  // JSON text: no MPI call.
  m.def(
      "simulate_write_plan",
      [](std::vector<int64_t> dims, const std::vector<std::pair<Triple, Triple>>& boxes,
         std::vector<std::string> dtypes, std::string bitmask, int bits_per_block, int64_t blocks_per_file,
         std::string placement, int aggregator_count, int64_t aggregator_bytes, int partitions, bool details,
         const std::string& index_space) {
        WriteSimulation w;
        w.dims = std::move(dims);
        for (const auto& [lo, hi] : boxes) w.rank_boxes.push_back(box(lo, hi));
        w.dtypes = std::move(dtypes);
        w.bitmask = std::move(bitmask);
        w.bits_per_block = bits_per_block;
        w.blocks_per_file = blocks_per_file;
        w.uniform = placement == "uniform";
        w.aggregator_count = aggregator_count;
        w.aggregator_bytes = aggregator_bytes;
        w.partitions = partitions;
        w.details = details;
        if (index_space != "global" && index_space != "local")
          throw HzioError{invalid_argument("index_space '" + index_space + "' is not 'global' or 'local'")};
        w.local_index_space = index_space == "local";
        PlanSummary summary;
        {
          nb::gil_scoped_release release;
          auto r = simulate_write_plan(w);
          if (!r.is_ok()) throw HzioError{r.status()};
          summary = std::move(r).value();
        }
        return summary.to_json();
      },
      nb::arg("dims"), nb::arg("boxes"), nb::arg("dtypes"), nb::arg("bitmask"), nb::arg("bits_per_block"),
      nb::arg("blocks_per_file"), nb::arg("placement"), nb::arg("aggregator_count"), nb::arg("aggregator_bytes"),
      nb::arg("partitions"), nb::arg("details") = false, nb::arg("index_space") = "global");
  nb::class_<ParallelDataset>(m, "ParallelDataset")
      .def_static(
          "create",
          [](int64_t comm_handle, const std::string& path, std::vector<int64_t> dims,
             const std::vector<FieldTuple>& fields, std::string bitmask, int bits_per_block, int64_t blocks_per_file,
             std::vector<int64_t> times, bool overwrite, std::string placement, int aggregator_count,
             int64_t aggregator_bytes, bool durable, int threads, int sub_block_bits, int partitions,
             const std::string& index_space) {
            CreateOptions o = create_options(std::move(dims), fields, std::move(bitmask), bits_per_block,
                                             blocks_per_file, std::move(times), overwrite, sub_block_bits);
            MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle));
            ParallelOptions po =
                options(placement, aggregator_count, aggregator_bytes, durable, threads, partitions, index_space);
            nb::gil_scoped_release release;
            return take(ParallelDataset::create(comm, path, o, po));
          },
          nb::arg("comm_handle"), nb::arg("path"), nb::arg("dims"), nb::arg("fields"), nb::arg("bitmask"),
          nb::arg("bits_per_block"), nb::arg("blocks_per_file"), nb::arg("times"), nb::arg("overwrite"),
          nb::arg("placement"), nb::arg("aggregator_count"), nb::arg("aggregator_bytes"), nb::arg("durable"),
          nb::arg("threads"), nb::arg("sub_block_bits"), nb::arg("partitions") = 1, nb::arg("index_space") = "global")
      .def_static(
          "open",
          [](int64_t comm_handle, const std::string& path, std::string placement, int aggregator_count,
             int64_t aggregator_bytes, bool durable, int threads, bool writable, bool verify, bool allow_outside_folder,
             int partitions) {
            MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle));
            ParallelOptions po = options(placement, aggregator_count, aggregator_bytes, durable, threads, partitions);
            po.verify_checksums = verify;
            po.allow_outside_folder = allow_outside_folder;
            nb::gil_scoped_release release;
            return take(ParallelDataset::open(comm, path, po, writable));
          },
          nb::arg("comm_handle"), nb::arg("path"), nb::arg("placement"), nb::arg("aggregator_count"),
          nb::arg("aggregator_bytes"), nb::arg("durable"), nb::arg("threads"), nb::arg("writable"),
          nb::arg("verify") = true, nb::arg("allow_outside_folder") = false, nb::arg("partitions") = 1)
      .def(
          "read_box",
          [](ParallelDataset& d, Triple lo, Triple hi, int level, const std::string& field, int64_t time,
             nb::ndarray<nb::c_contig, nb::device::cpu> out, const std::string& method) {
            ReadMethod m = ReadMethod::kAuto;
            if (method == "independent")
              m = ReadMethod::kIndependent;
            else if (method == "two-phase")
              m = ReadMethod::kTwoPhase;
            else if (method != "auto") {
              // The other ranks are in the collective read: join it with the error.
              const Status bad = invalid_argument("read method '" + method + "' is not auto, independent or two-phase");
              nb::gil_scoped_release release;
              check(d.fail_read(bad));
            }
            ReadReport r;
            void* ptr = out.data();
            const size_t n = out.nbytes();
            {
              nb::gil_scoped_release release;
              check(d.read_box(box(lo, hi), level, field, time, ptr, n, &r, m));
            }
            return r;
          },
          nb::arg("lo"), nb::arg("hi"), nb::arg("level"), nb::arg("field"), nb::arg("time"), nb::arg("out"),
          nb::arg("method"))
      .def(
          "fail_read",
          [](ParallelDataset& d, const std::string& message) {
            nb::gil_scoped_release release;
            check(d.fail_read(invalid_argument(message)));
          },
          nb::arg("message"))
      .def_prop_ro("dataset", &ParallelDataset::dataset, nb::rv_policy::reference_internal)
      .def("write_box", &write_box_of<ParallelDataset>, nb::arg("lo"), nb::arg("hi"), nb::arg("field"), nb::arg("time"),
           nb::arg("data"), nb::arg("borrow") = false)
      .def("flush",
           [](ParallelDataset& d) {
             WriteReport r;
             {
               nb::gil_scoped_release release;
               r = take(d.flush());
             }
             return r;
           })
      .def("close",
           [](ParallelDataset& d) {
             {
               nb::gil_scoped_release release;
               check(d.close());
             }
             return d.last_write_report();
           })
      .def_prop_ro("last_write_report", [](const ParallelDataset& d) { return d.last_write_report(); });
  bind_io_ranks(m);
}
