// nanobind glue for hzio._core: the C++ Dataset and ProgressiveRead with x-first tuples, raw buffers
// and the result types of binding_results.cpp. The Python package (python/hzio) adds NumPy ergonomics; errors
// become hzio.Error subclasses.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "binding_util.hpp"
#include "hzio/dataset.hpp"
#include "hzio/index_template.hpp"
#include "hzio/mosaic.hpp"
#include "hzio/testing.hpp"

namespace nb = nanobind;
using namespace hzio;
using hzio::bindings::box;
using hzio::bindings::check;
using hzio::bindings::HzioError;
using hzio::bindings::take;
using hzio::bindings::Triple;

#ifdef HZIO_WITH_MPI
void bind_parallel(nb::module_& m);
#endif

CreateOptions hzio::bindings::create_options(std::vector<int64_t> dims, const std::vector<FieldTuple>& fields,
                                             std::string bitmask, int bits_per_block, int64_t blocks_per_file,
                                             std::vector<int64_t> times, bool overwrite, int sub_block_bits) {
  CreateOptions o;
  o.sub_block_bits = sub_block_bits;
  o.dims = std::move(dims);
  for (const auto& [name, dtype, codec, layout, dflt] : fields) {
    auto dt = DType::parse(dtype);
    if (!dt.is_ok()) throw HzioError{invalid_argument(dt.status().message())};
    if (layout != "hzorder" && layout != "rowmajor")
      throw HzioError{invalid_argument("layout '" + layout + "' is not 'hzorder' or 'rowmajor'")};
    o.fields.push_back({name, dt.value(), codec, layout == "rowmajor" ? Layout::kRowMajor : Layout::kHzOrder, dflt});
  }
  o.bitmask = std::move(bitmask);
  o.bits_per_block = bits_per_block;
  o.blocks_per_file = blocks_per_file;
  o.times = std::move(times);
  o.overwrite = overwrite;
  return o;
}

namespace {

using Buffer = nb::ndarray<nb::c_contig, nb::device::cpu>;
using ReadOnly = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

std::unique_ptr<Dataset> create(const std::string& path, std::vector<int64_t> dims,
                                const std::vector<hzio::bindings::FieldTuple>& fields, std::string bitmask,
                                int bits_per_block, int64_t blocks_per_file, std::vector<int64_t> times, bool overwrite,
                                bool durable, int threads, int sub_block_bits) {
  CreateOptions o = hzio::bindings::create_options(std::move(dims), fields, std::move(bitmask), bits_per_block,
                                                   blocks_per_file, std::move(times), overwrite, sub_block_bits);
  OpenOptions oo;
  oo.durable = durable;
  oo.threads = threads;
  nb::gil_scoped_release release;
  return take(Dataset::create(path, o, oo));
}

std::unique_ptr<Dataset> open(const std::string& path, bool writable, bool durable, int threads, bool verify,
                              bool allow_outside_folder, size_t read_cache_bytes) {
  OpenOptions oo;
  oo.read_cache_bytes = read_cache_bytes;
  oo.writable = writable;
  oo.verify_checksums = verify;
  oo.allow_outside_folder = allow_outside_folder;
  oo.durable = durable;
  oo.threads = threads;
  nb::gil_scoped_release release;
  return take(Dataset::open(path, oo));
}

}  // namespace

NB_MODULE(_core, m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const HzioError& e) {
      nb::object errors = nb::module_::import_("hzio.errors");
      nb::object cls = errors.attr("error_class")(static_cast<int>(e.status.code()));
      PyErr_SetObject(cls.ptr(), nb::str(e.status.message().c_str()).ptr());
    }
  });
  hzio::bindings::bind_results(m);

  nb::class_<Dataset>(m, "Dataset")
      .def_static("create", &create, nb::arg("path"), nb::arg("dims"), nb::arg("fields"), nb::arg("bitmask"),
                  nb::arg("bits_per_block"), nb::arg("blocks_per_file"), nb::arg("times"), nb::arg("overwrite"),
                  nb::arg("durable"), nb::arg("threads"), nb::arg("sub_block_bits"))
      .def_static("open", &open, nb::arg("path"), nb::arg("writable"), nb::arg("durable"), nb::arg("threads"),
                  nb::arg("verify") = true, nb::arg("allow_outside_folder") = false,
                  nb::arg("read_cache_bytes") = OpenOptions{}.read_cache_bytes)
      .def_prop_ro("path", &Dataset::path)
      .def_prop_ro("ndim", &Dataset::ndim)
      .def_prop_ro("box", &Dataset::box, "The dataset box (its lower corner is 0 unless a .idx says otherwise).")
      .def_prop_ro("fields", [](const Dataset& d) { return std::vector<FieldSpec>(d.fields()); })
      .def_prop_ro("times", &Dataset::times)
      .def_prop_ro("max_level", &Dataset::max_level)
      .def_prop_ro("bitmask", &Dataset::bitmask)
      .def_prop_ro("physic_box", &Dataset::physic_box)
      .def_prop_ro("logic_to_physic", &Dataset::logic_to_physic)
      .def_prop_ro("bits_per_block", &Dataset::bits_per_block)
      .def_prop_ro("blocks_per_file", &Dataset::blocks_per_file)
      .def_prop_ro("block_count", &Dataset::block_count)
      .def_prop_ro("closed", &Dataset::closed)
      .def(
          "level_grid",
          [](const Dataset& d, Triple lo, Triple hi, int level) { return take(d.level_grid(box(lo, hi), level)); },
          nb::arg("lo"), nb::arg("hi"), nb::arg("level"))
      .def(
          "write_box",
          [](Dataset& d, Triple lo, Triple hi, const std::string& field, int64_t time, ReadOnly data) {
            const void* ptr = data.data();
            const size_t n = data.nbytes();
            nb::gil_scoped_release release;
            check(d.write_box(box(lo, hi), field, time, ptr, n));
          },
          nb::arg("lo"), nb::arg("hi"), nb::arg("field"), nb::arg("time"), nb::arg("data"))
      .def(
          "read_box",
          [](Dataset& d, Triple lo, Triple hi, int level, const std::string& field, int64_t time, Buffer out) {
            ReadReport r;
            void* ptr = out.data();
            const size_t n = out.nbytes();
            {
              nb::gil_scoped_release release;
              check(d.read_box(box(lo, hi), level, field, time, ptr, n, &r));
            }
            return r;
          },
          nb::arg("lo"), nb::arg("hi"), nb::arg("level"), nb::arg("field"), nb::arg("time"), nb::arg("out"))
      .def(
          "block_infos",
          [](Dataset& d, const std::string& field, int64_t time, bool existing_files_only) {
            nb::gil_scoped_release release;
            return take(d.block_infos(field, time, existing_files_only));
          },
          nb::arg("field"), nb::arg("time"), nb::arg("existing_files_only") = false)
      .def(
          "file_census",
          [](const Dataset& d, int64_t time, size_t list_missing) {
            Dataset::FileCensus c;
            {
              nb::gil_scoped_release release;
              c = take(d.file_census(time, list_missing));
            }
            return nb::make_tuple(c.present, c.missing, c.first_missing);
          },
          nb::arg("time"), nb::arg("list_missing"),
          "(present first blocks, missing count, first missing paths) of a timestep's data files (Local).")
      .def(
          "query",
          [](Dataset& d, Triple lo, Triple hi, int level, const std::string& field, int64_t time, double lo_value,
             double hi_value, int component, bool mask) {
            auto r = std::make_unique<QueryResult>();
            {
              nb::gil_scoped_release release;
              check(d.query(box(lo, hi), level, field, time, lo_value, hi_value, component, mask, r.get()));
            }
            return r;
          },
          nb::arg("lo"), nb::arg("hi"), nb::arg("level"), nb::arg("field"), nb::arg("time"), nb::arg("lo_value"),
          nb::arg("hi_value"), nb::arg("component"), nb::arg("mask"))
      .def_prop_ro("file_first_blocks", &Dataset::file_first_blocks)
      .def(
          "data_file_path",
          [](const Dataset& d, int64_t time, int64_t block) { return take(d.data_file_path(time, block)); },
          nb::arg("time"), nb::arg("block"), "The data file that holds a block at a timestep, existing or not (Local).")
      .def(
          "leftover_files", [](const Dataset& d) { return take(d.leftover_files()); },
          "Files writers that did not finish a commit left (Local).")
      .def(
          "index_file",
          [](Dataset& d, int64_t time, int64_t first_block, int sub_block_bits) {
            nb::gil_scoped_release release;
            return take(d.index_file(time, first_block, sub_block_bits));
          },
          nb::arg("time"), nb::arg("first_block"), nb::arg("sub_block_bits"))
      .def(
          "verify_block",
          [](Dataset& d, const std::string& field, int64_t time, int64_t block) {
            nb::gil_scoped_release release;
            check(d.verify_block(field, time, block));
          },
          nb::arg("field"), nb::arg("time"), nb::arg("block"))
      .def("flush",
           [](Dataset& d) {
             {
               nb::gil_scoped_release release;
               check(d.flush());
             }
             return d.last_write_report();
           })
      .def("close",
           [](Dataset& d) {
             {
               nb::gil_scoped_release release;
               check(d.close());
             }
             return d.last_write_report();
           })
      .def("abandon", &Dataset::abandon);
  // A new uint8 array of `bytes` for a read's output whose memory returns to hzio's cache when the
  // array dies (hzio::ReadBuffer).
  m.def(
      "read_buffer",
      [](size_t bytes) {
        auto buffer = std::make_unique<ReadBuffer>(bytes);
        std::byte* data = buffer->data();
        nb::capsule owner(buffer.get(), [](void* p) noexcept { delete static_cast<ReadBuffer*>(p); });
        buffer.release();  // the capsule owns it now
        const size_t shape[1] = {bytes};
        return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(data, 1, shape, owner);
      },
      nb::arg("bytes"));

  // Indexing templates (hzio/index_template.hpp); boxes as (lo, hi) pairs of x-first triples.
  m.def(
      "rank_conforming_bitmask",
      [](int ndim, const Triple& dims, const std::vector<std::pair<Triple, Triple>>& boxes) {
        std::vector<Box> b;
        for (const auto& [lo, hi] : boxes) b.push_back(box(lo, hi));
        return take(rank_conforming_bitmask(ndim, bindings::point(dims), b));
      },
      nb::arg("ndim"), nb::arg("dims"), nb::arg("boxes"));
  m.def(
      "check_rank_conforming",
      [](const std::string& bitmask, const std::vector<std::pair<Triple, Triple>>& boxes) {
        std::vector<Box> b;
        for (const auto& [lo, hi] : boxes) b.push_back(box(lo, hi));
        check(check_rank_conforming(bitmask, b));
      },
      nb::arg("bitmask"), nb::arg("boxes"));

  // The .midx mosaic of partitions in local index space (hzio/mosaic.hpp), parsed and checked: (ndim,
  // x-first dims, bitmask, bits per block, partitions, [(partition, file, x-first offset, x-first
  // extent)], the parts' bitmask).
  m.def(
      "parse_mosaic",
      [](const std::string& text) {
        Mosaic mo = take(Mosaic::parse(text));
        MosaicGeometry g = take(check_mosaic(mo));
        std::vector<std::tuple<int, std::string, Triple, Triple>> parts;
        for (size_t k = 0; k < mo.parts.size(); ++k) {
          const auto& p = mo.parts[k];
          const Box& b = g.boxes[k];
          parts.emplace_back(p.partition, p.file, Triple{p.offset[0], p.offset[1], p.offset[2]},
                             Triple{b.extent(0), b.extent(1), b.extent(2)});
        }
        return std::make_tuple(mo.ndim, Triple{mo.dims[0], mo.dims[1], mo.dims[2]}, mo.bitmask, mo.bits_per_block,
                               mo.partitions, parts, g.part_bitmask);
      },
      nb::arg("text"));
  m.def("mosaic_path", &mosaic_path, nb::arg("path"));

  m.attr("BLOCK_FLAG_CODEC_MASK") = kBlockFlagCodecMask;
  m.attr("BLOCK_FLAG_ROW_MAJOR") = kBlockFlagRowMajor;
  // Test hooks (hzio/testing.hpp): simulated disk failures of one dataset's files whose path matches a regex.
  m.def(
      "inject_fault",
      [](Dataset& dataset, const std::string& op, const std::string& path_pattern, int error, int64_t after_bytes) {
        check(testing::inject_fault(dataset, op, path_pattern, error, after_bytes));
      },
      nb::arg("dataset"), nb::arg("op"), nb::arg("path_pattern"), nb::arg("error"), nb::arg("after_bytes") = 0);
  m.def("clear_fault", &testing::clear_fault, nb::arg("dataset"));

#ifdef HZIO_WITH_MPI
  bind_parallel(m);
  m.attr("with_mpi") = true;
#else
  m.attr("with_mpi") = false;
#endif

  nb::class_<ProgressiveRead>(m, "ProgressiveRead")
      .def_static(
          "start",
          [](Dataset& d, Triple lo, Triple hi, const std::string& field, int64_t time, std::vector<int> levels) {
            return take(ProgressiveRead::start(d, box(lo, hi), field, time, std::move(levels)));
          },
          nb::arg("dataset"), nb::arg("lo"), nb::arg("hi"), nb::arg("field"), nb::arg("time"), nb::arg("levels"),
          nb::keep_alive<0, 1>())
      .def_prop_ro("done", &ProgressiveRead::done)
      .def_prop_ro("next_level", &ProgressiveRead::next_level)
      .def("next_grid", [](const ProgressiveRead& p) { return take(p.next_grid()); })
      .def(
          "next",
          [](ProgressiveRead& p, Buffer out) {
            ReadReport r;
            void* ptr = out.data();
            const size_t n = out.nbytes();
            {
              nb::gil_scoped_release release;
              check(p.next(ptr, n, &r));
            }
            return r;
          },
          nb::arg("out"));
}
