// mixle._core.parallel, part 1: DeviceSpec, Resources (with the constructors that read live
// Dask/Spark/MPI objects and the launcher environment), ModelSummary, PlacementShard, Placement,
// ModelShard, and the native plan() and model_sharding_plan() that mixle.utils.parallel wraps.
#include "parallel.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/model.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace mixle::python {
namespace {

using plan::DeviceSpec;
using plan::ModelShard;
using plan::ModelSummary;
using plan::Placement;
using plan::PlacementShard;
using plan::Resources;

constexpr auto kTypeError = NonInteger::type_error;

nb::object py(const std::optional<std::string>& v) { return v ? nb::cast(*v) : nb::none(); }
template <class T>
nb::object py(const std::optional<T>& v) {
  return v ? nb::cast(*v) : nb::none();
}

plan::Environment process_environment() {
  plan::Environment env;
  nb::object items = nb::module_::import_("os").attr("environ").attr("items")();
  for (nb::handle item : items) env.emplace(nb::cast<std::string>(item[0]), nb::cast<std::string>(item[1]));
  return env;
}

std::vector<DeviceSpec> devices_from(nb::handle specs) {
  std::vector<DeviceSpec> out;
  for (nb::handle d : nb::iter(specs)) out.push_back(nb::cast<DeviceSpec>(d));
  return out;
}

DeviceSpec make_device(const std::string& name, const std::string& kind, nb::handle memory_bytes,
                       const std::string& engine, double throughput, nb::handle precision, nb::handle node_id,
                       nb::handle local_rank, nb::handle global_rank, nb::handle product, nb::handle compute_units) {
  DeviceSpec d;
  d.name = name;
  d.kind = kind;
  d.memory_bytes = optional_bytes(memory_bytes, "memory_bytes");
  d.engine = engine;
  d.throughput = throughput;
  d.precision = optional_precision(precision);
  d.node_id = optional_int(node_id, "node_id", 0);
  d.local_rank = optional_int(local_rank, "local_rank", 0);
  d.global_rank = optional_int(global_rank, "global_rank", 0);
  if (!product.is_none()) d.product = nb::cast<std::string>(product);
  d.compute_units = optional_int(compute_units, "compute_units", 0);
  d.validate();
  return d;
}

nb::dict device_dict(const DeviceSpec& d) {
  return nb::cast<nb::dict>(json_loads(Resources({d}).to_json())["devices"][0]);
}

std::string device_repr(const DeviceSpec& d) {
  std::string text = repr_of("DeviceSpec", {{"name", nb::cast(d.name)},
                                            {"kind", nb::cast(d.kind)},
                                            {"memory_bytes", py(d.memory_bytes)},
                                            {"engine", nb::cast(d.engine)},
                                            {"throughput", nb::cast(d.throughput)},
                                            {"precision", py(d.precision)},
                                            {"node_id", py(d.node_id)},
                                            {"local_rank", py(d.local_rank)},
                                            {"global_rank", py(d.global_rank)}});
  if (d.product) text.insert(text.size() - 1, ", product=" + py_repr(nb::cast(*d.product)));
  if (d.compute_units) text.insert(text.size() - 1, ", compute_units=" + std::to_string(*d.compute_units));
  return text;
}

plan::SlotOptions slot_options(nb::handle memory_bytes, double throughput, nb::handle precision) {
  plan::SlotOptions o;
  o.memory_bytes = optional_bytes(memory_bytes, "memory_bytes");
  o.throughput = throughput;
  o.precision = optional_precision(precision);
  return o;
}

plan::LaunchOptions launch_options(nb::handle memory_bytes, nb::handle precision) {
  plan::LaunchOptions o;
  o.memory_bytes = optional_bytes(memory_bytes, "memory_bytes");
  o.precision = optional_precision(precision);
  plan::DiscoverOptions probe;  // the GPUs this node shows (none in a CPU-only build)
  for (const DeviceSpec& d : Resources::discover(probe).devices()) {
    if (d.kind == "cuda" && d.memory_bytes) o.gpu_memory_bytes.push_back(*d.memory_bytes);
  }
  return o;
}

/// A JSON document given as text, or a dict written as JSON.
std::optional<std::string> document_text(nb::handle value) {
  if (nb::isinstance<nb::str>(value)) return nb::cast<std::string>(value);
  if (nb::isinstance<nb::dict>(value)) return json_dumps(value);
  return std::nullopt;
}

Resources from_dask(nb::handle client, nb::handle precision) {
  std::optional<std::string> text = document_text(client);
  if (!text) {
    nb::object info = nb::getattr(client, "scheduler_info", nb::none());
    if (info.is_none() || !PyCallable_Check(info.ptr())) {
      throw nb::type_error(("from_dask: " + nb::cast<std::string>(nb::type_name(client.type())) +
                            " has no callable scheduler_info(); accepted: a dask.distributed Client, or its "
                            "scheduler_info() document as a dict or JSON text")
                               .c_str());
    }
    text = json_dumps(info());
  }
  return Resources::from_dask(*text, optional_precision(precision));
}

Resources from_spark(nb::handle spark_context, nb::handle memory_bytes, nb::handle precision) {
  nb::dict doc;
  if (std::optional<std::string> text = document_text(spark_context)) {
    doc = nb::cast<nb::dict>(json_loads(*text));
  } else {
    nb::object parallelism = nb::getattr(spark_context, "defaultParallelism", nb::none());
    const bool falsy = parallelism.is_none() || PyObject_IsTrue(parallelism.ptr()) == 0;
    doc["defaultParallelism"] = falsy ? nb::object(nb::int_(1)) : parallelism;
  }
  if (!memory_bytes.is_none()) doc["memory_bytes"] = nb::int_(*optional_bytes(memory_bytes, "memory_bytes"));
  return Resources::from_spark(json_dumps(doc), optional_precision(precision));
}

std::string resources_json(const Resources& r, const nb::kwargs& kwargs) {
  if (kwargs.size() == 0) return r.to_json();
  if (kwargs.size() == 1 && kwargs.contains("indent")) {
    nb::object indent = kwargs["indent"];
    return r.to_json(indent.is_none() ? -1 : static_cast<int>(exact_int(indent, "indent", 0)));
  }
  nb::object dumps = nb::module_::import_("json").attr("dumps");
  return nb::cast<std::string>(dumps(json_loads(r.to_json()), **kwargs));
}

std::string path_of(nb::handle path) { return nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(path)); }

ModelSummary make_summary(nb::handle components, nb::handle parts) {
  ModelSummary s;
  s.components = static_cast<std::size_t>(exact_int(components, "components", 1));
  std::size_t i = 0;
  for (nb::handle part : nb::iter(parts)) {
    const std::string where = "parts[" + std::to_string(i++) + "]";
    plan::PartSummary p;
    if (nb::isinstance<nb::dict>(part)) {
      nb::dict d = nb::borrow<nb::dict>(part);
      p.family = nb::cast<std::string>(d["family"]);
      p.dims = static_cast<std::size_t>(exact_int(d["dims"], (where + ".dims").c_str(), 1));
      if (d.contains("categories"))
        p.categories = static_cast<std::size_t>(exact_int(d["categories"], (where + ".categories").c_str(), 0));
    } else {
      nb::tuple t = nb::steal<nb::tuple>(PySequence_Tuple(part.ptr()));
      if (!t.is_valid()) throw nb::python_error();
      if (t.size() < 2 || t.size() > 3) {
        throw InvalidInput(where + "=" + py_repr(part) + ": (family, dims) or (family, dims, categories) expected");
      }
      p.family = nb::cast<std::string>(t[0]);
      p.dims = static_cast<std::size_t>(exact_int(t[1], (where + ".dims").c_str(), 1));
      if (t.size() == 3) p.categories = static_cast<std::size_t>(exact_int(t[2], (where + ".categories").c_str(), 0));
    }
    s.parts.push_back(std::move(p));
  }
  s.validate();
  return s;
}

ModelSummary summary_of(const Model& model) {
  ModelSummary s;
  s.components = model.components();
  for (const Part& p : model.parts) s.parts.push_back({family_name(p.family), p.dims(), p.categories});
  s.validate();
  return s;
}

ModelSummary summary_of_layout(nb::handle components, const std::string& layout, nb::handle columns) {
  ModelSummary s;
  s.components = static_cast<std::size_t>(exact_int(components, "components", 1));
  const auto ncols = static_cast<std::size_t>(exact_int(columns, "columns", 1));
  for (const PartSpec& p : parse_layout(layout, ncols)) {
    s.parts.push_back({family_name(p.family), p.col_end - p.col_begin, p.categories});
  }
  s.validate();
  return s;
}

PlacementShard make_shard(const DeviceSpec& device, nb::handle start, nb::handle stop, nb::handle sub_chunks,
                          nb::handle encoded_bytes, nb::handle transient_bytes) {
  PlacementShard s;
  s.device = device;
  s.start = static_cast<std::uint64_t>(exact_int(start, "start", 0, kTypeError));
  s.stop = static_cast<std::uint64_t>(exact_int(stop, "stop", 0, kTypeError));
  s.sub_chunks = static_cast<std::uint64_t>(exact_int(sub_chunks, "sub_chunks", 1, kTypeError));
  s.encoded_bytes = static_cast<std::uint64_t>(exact_int(encoded_bytes, "encoded_bytes", 0, kTypeError));
  s.transient_bytes = static_cast<std::uint64_t>(exact_int(transient_bytes, "transient_bytes", 0, kTypeError));
  if (s.stop < s.start) {
    throw InvalidInput("shard [" + std::to_string(s.start) + ":" + std::to_string(s.stop) + ") on '" + device.name +
                       "': stop < start; accepted: 0 ≤ start ≤ stop");
  }
  return s;
}

double finite_bytes(double value, const char* name) {
  if (!std::isfinite(value) || value < 0) {
    throw InvalidInput(std::string(name) + "=" + std::to_string(value) + " is invalid; accepted: finite ≥ 0");
  }
  return value;
}

Placement make_placement(const std::vector<PlacementShard>& shards, nb::handle total_rows, double encoded_row_bytes,
                         double transient_row_bytes, nb::handle model_bytes, nb::handle statistic_bytes,
                         nb::handle dtype_bytes, std::optional<Resources> resources, nb::handle rows_per_chunk,
                         double safety_factor) {
  Placement p;
  p.shards = shards;
  p.total_rows = static_cast<std::uint64_t>(exact_int(total_rows, "total_rows", 0, kTypeError));
  p.encoded_row_bytes = finite_bytes(encoded_row_bytes, "encoded_row_bytes");
  p.transient_row_bytes = finite_bytes(transient_row_bytes, "transient_row_bytes");
  p.model_bytes = static_cast<std::uint64_t>(exact_int(model_bytes, "model_bytes", 0, kTypeError));
  p.statistic_bytes = static_cast<std::uint64_t>(exact_int(statistic_bytes, "statistic_bytes", 0, kTypeError));
  p.dtype_bytes = static_cast<std::uint64_t>(exact_int(dtype_bytes, "dtype_bytes", 1, kTypeError));
  p.resources = std::move(resources);
  p.rows_per_chunk = static_cast<std::uint64_t>(exact_int(rows_per_chunk, "rows_per_chunk", 0, kTypeError));
  p.safety_factor = safety_factor;
  p.validate();
  return p;
}

ModelShard make_model_shard(const DeviceSpec& device, nb::handle start, nb::handle stop, nb::handle parameter_bytes,
                            nb::handle statistic_bytes) {
  ModelShard s;
  s.device = device;
  s.component_start = static_cast<std::uint64_t>(exact_int(start, "component_start", 0, kTypeError));
  s.component_stop = static_cast<std::uint64_t>(exact_int(stop, "component_stop", 0, kTypeError));
  s.parameter_bytes = static_cast<std::uint64_t>(exact_int(parameter_bytes, "parameter_bytes", 0, kTypeError));
  s.statistic_bytes = static_cast<std::uint64_t>(exact_int(statistic_bytes, "statistic_bytes", 0, kTypeError));
  s.validate();
  return s;
}

template <class T>
nb::tuple tuple_of(const std::vector<T>& items) {
  nb::list out;
  for (const T& item : items) out.append(nb::cast(item));
  return as_tuple(out);
}

void bind_device_spec(nb::module_& m) {
  nb::class_<DeviceSpec>(m, "DeviceSpec",
                         "One placement target: a CPU slot, a GPU or a rank. Immutable and validated on construction "
                         "(ValueError naming the field). mixle adds product (hardware name) and compute_units (CPUs "
                         "of a slot, SMs of a GPU).")
      .def(
          "__init__",
          [](DeviceSpec* self, const std::string& name, const std::string& kind, nb::handle memory_bytes,
             const std::string& engine, double throughput, nb::handle precision, nb::handle node_id,
             nb::handle local_rank, nb::handle global_rank, nb::handle product, nb::handle compute_units) {
            new (self) DeviceSpec(make_device(name, kind, memory_bytes, engine, throughput, precision, node_id,
                                              local_rank, global_rank, product, compute_units));
          },
          "name"_a, "kind"_a = "cpu", "memory_bytes"_a = nb::none(), "engine"_a = "cpu", "throughput"_a = 1.0,
          "precision"_a = nb::none(), "node_id"_a = nb::none(), "local_rank"_a = nb::none(),
          "global_rank"_a = nb::none(), nb::kw_only(), "product"_a = nb::none(), "compute_units"_a = nb::none(),
          nb::sig("def __init__(self, name: str, kind: str = 'cpu', memory_bytes: int | None = None, engine: str = "
                  "'cpu', throughput: float = 1.0, precision: str | None = None, node_id: int | None = None, "
                  "local_rank: int | None = None, global_rank: int | None = None, *, product: str | None = None, "
                  "compute_units: int | None = None) -> None"))
      .def_ro("name", &DeviceSpec::name, "Unique name within a Resources, e.g. 'cpu:0', 'cuda:1'.")
      .def_ro("kind", &DeviceSpec::kind, "'cpu', 'cuda', 'gpu' or 'mps'.")
      .def_ro("memory_bytes", &DeviceSpec::memory_bytes, "Usable memory in bytes, or None (unknown).")
      .def_ro("engine", &DeviceSpec::engine, "The compute engine that runs on it: 'cpu' or 'cuda'.")
      .def_ro("throughput", &DeviceSpec::throughput, "Relative speed weight (calibrated: rows/s).")
      .def_ro("precision", &DeviceSpec::precision, "Canonical compute precision if pinned, else None.")
      .def_ro("node_id", &DeviceSpec::node_id, "Launcher node index, or None.")
      .def_ro("local_rank", &DeviceSpec::local_rank, "Rank within the node, or None.")
      .def_ro("global_rank", &DeviceSpec::global_rank, "Rank within the world, or None.")
      .def_ro("product", &DeviceSpec::product, "Hardware name (mixle), or None.")
      .def_ro("compute_units", &DeviceSpec::compute_units, "CPUs of a slot or SMs of a GPU (mixle), or None.")
      .def_prop_ro("is_gpu", &DeviceSpec::is_gpu, "kind is 'cuda', 'mps' or 'gpu'.")
      .def("to_dict", &device_dict, "The JSON-serialisable dict: the nine reference keys, plus mixle's when set.")
      .def_static(
          "from_dict",
          [](const nb::dict& payload) {
            return Resources::from_json("{\"devices\":[" + json_dumps(payload) + "]}").devices().front();
          },
          "payload"_a, "Builds a device from to_dict() output ('name' required, defaults for the other keys).")
      .def("__repr__", &device_repr)
      .def(
          "__eq__", [](const DeviceSpec& a, const DeviceSpec& b) { return a == b; }, nb::is_operator())
      .def(
          "__ne__", [](const DeviceSpec& a, const DeviceSpec& b) { return !(a == b); }, nb::is_operator())
      .def("__hash__", [](const DeviceSpec& d) { return nb::hash(nb::str(Resources({d}).to_json().c_str())); })
      .def("__getstate__", [](const DeviceSpec& d) { return Resources({d}).to_json(); })
      .def("__setstate__", [](DeviceSpec& self, const std::string& state) {
        new (&self) DeviceSpec(Resources::from_json(state).devices().front());
      });
}

void bind_resources(nb::module_& m) {
  nb::class_<Resources> cls(m, "Resources",
                            "A validated, non-empty collection of placement targets: unique names, and unique "
                            "(node_id, kind, local_rank) among devices that set both.");
  cls.def(
         "__init__", [](Resources* self, nb::handle devices) { new (self) Resources(devices_from(devices)); },
         "devices"_a, nb::sig("def __init__(self, devices: typing.Iterable[DeviceSpec]) -> None"))
      .def_prop_ro(
          "devices", [](const Resources& r) { return tuple_of(r.devices()); }, "The devices, as a tuple.")
      .def("fastest", &Resources::fastest, "The device with the largest throughput weight (the first on ties).")
      .def("__len__", &Resources::size)
      .def("__repr__", [](const Resources& r) { return "Resources(devices=" + py_repr(tuple_of(r.devices())) + ")"; })
      .def_static(
          "single_cpu",
          [](nb::handle memory_bytes, double throughput, nb::handle precision) {
            return Resources::single_cpu(slot_options(memory_bytes, throughput, precision));
          },
          "memory_bytes"_a = nb::none(), "throughput"_a = 1.0, "precision"_a = nb::none(),
          nb::sig("def single_cpu(memory_bytes: int | None = None, throughput: float = 1.0, precision: str | None "
                  "= None) -> Resources"),
          "One CPU device 'cpu:0'.")
      .def_static(
          "local",
          [](nb::handle num_cpus, nb::handle memory_bytes, nb::handle precision) {
            nb::object count =
                num_cpus.is_none() ? nb::module_::import_("os").attr("cpu_count")() : nb::borrow(num_cpus);
            const auto n = count.is_none() ? 1 : exact_int(count, "num_cpus", 1);
            return Resources::local(static_cast<std::size_t>(n), slot_options(memory_bytes, 1.0, precision));
          },
          "num_cpus"_a = nb::none(), "memory_bytes"_a = nb::none(), "precision"_a = nb::none(),
          nb::sig("def local(num_cpus: int | None = None, memory_bytes: int | None = None, precision: str | None = "
                  "None) -> Resources"),
          "num_cpus slots 'cpu:i' (default os.cpu_count()), memory_bytes split evenly over them.")
      .def_static(
          "discover",
          [](bool include_torch, nb::handle cpu_workers, nb::handle precision) {
            plan::DiscoverOptions o;
            o.cpu_workers = static_cast<std::size_t>(optional_int(cpu_workers, "cpu_workers", 1).value_or(1));
            o.include_cuda = include_torch;
            o.precision = optional_precision(precision);
            return Resources::discover(o);
          },
          "include_torch"_a = true, "cpu_workers"_a = nb::none(), "precision"_a = nb::none(),
          nb::sig("def discover(include_torch: bool = True, cpu_workers: int | None = None, precision: str | None = "
                  "None) -> Resources"),
          "This machine: cpu_workers CPU slots (default 1) sharing the affinity CPUs and the usable memory, plus "
          "one 'cuda:i' per visible GPU when include_torch (the name is the reference's; mixle asks CUDA, not "
          "torch) and mixle was built with CUDA.")
      .def_static(
          "from_specs", [](nb::handle specs) { return Resources::from_specs(devices_from(specs)); }, "specs"_a,
          nb::sig("def from_specs(specs: typing.Iterable[DeviceSpec]) -> Resources"),
          "Resources from an iterable of DeviceSpec.")
      .def_static(
          "from_mpi",
          [](nb::handle comm, nb::handle memory_bytes, double throughput, nb::handle precision) {
            const plan::SlotOptions o = slot_options(memory_bytes, throughput, precision);
            if (comm.is_none()) return Resources::from_mpi(process_environment(), o);
            const auto size = exact_int(comm.attr("Get_size")(), "comm.Get_size()", 1);
            return Resources::from_mpi(static_cast<std::size_t>(size), o);
          },
          "comm"_a = nb::none(), "memory_bytes"_a = nb::none(), "throughput"_a = 1.0, "precision"_a = nb::none(),
          nb::sig("def from_mpi(comm: typing.Any | None = None, memory_bytes: int | None = None, throughput: float "
                  "= 1.0, precision: str | None = None) -> Resources"),
          "One CPU slot 'mpi:i' per rank: comm.Get_size() of an mpi4py-style communicator (mpi4py is not "
          "imported), else the first set of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE, MPI_LOCALNRANKS, else 1.")
      .def_static("from_dask", &from_dask, "client"_a, "precision"_a = nb::none(),
                  nb::sig("def from_dask(client: typing.Any, precision: str | None = None) -> Resources"),
                  "One 'dask:<address>' per worker of client.scheduler_info() (dask is not imported), sorted by "
                  "address, memory = memory_limit, throughput = max(1, nthreads). client may also be that "
                  "document as a dict or JSON text.")
      .def_static("from_spark", &from_spark, "spark_context"_a, "memory_bytes"_a = nb::none(),
                  "precision"_a = nb::none(),
                  nb::sig("def from_spark(spark_context: typing.Any, memory_bytes: int | None = None, precision: str "
                          "| None = None) -> Resources"),
                  "sc.defaultParallelism slots 'spark:i' (falsy → 1; pyspark is not imported), memory_bytes split "
                  "evenly. spark_context may also be a document {\"defaultParallelism\": P, \"executorMemory\": "
                  "\"4g\"} as a dict or JSON text.")
      .def_static(
          "from_torchrun",
          [](nb::handle memory_bytes, nb::handle precision) {
            return Resources::from_torchrun(process_environment(), launch_options(memory_bytes, precision));
          },
          "memory_bytes"_a = nb::none(), "precision"_a = nb::none(),
          nb::sig("def from_torchrun(memory_bytes: int | None = None, precision: str | None = None) -> Resources"),
          "The whole torchrun world, one device per global rank, from WORLD_SIZE, LOCAL_WORLD_SIZE, RANK, "
          "LOCAL_RANK and GROUP_RANK (ValueError when they are inconsistent). memory_bytes is one node's memory, "
          "shared by its CPU ranks.")
      .def_static(
          "from_slurm",
          [](nb::handle memory_bytes, nb::handle precision) {
            return Resources::from_slurm(process_environment(), launch_options(memory_bytes, precision));
          },
          "memory_bytes"_a = nb::none(), "precision"_a = nb::none(),
          nb::sig("def from_slurm(memory_bytes: int | None = None, precision: str | None = None) -> Resources"),
          "mixle: the whole srun world from SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and "
          "SLURM_TASKS_PER_NODE (block distribution).")
      .def(
          "to_dict", [](const Resources& r) { return json_loads(r.to_json()); },
          nb::sig("def to_dict(self) -> dict[str, typing.Any]"), "{'devices': [DeviceSpec.to_dict(), …]}.")
      .def_static(
          "from_dict", [](const nb::dict& payload) { return Resources::from_json(json_dumps(payload)); }, "payload"_a,
          nb::sig("def from_dict(payload: dict[str, typing.Any]) -> Resources"), "Resources from to_dict() output.")
      .def("to_json", &resources_json, "kwargs"_a, nb::sig("def to_json(self, **kwargs: typing.Any) -> str"),
           "JSON text; doubles (calibrated throughput) round-trip exactly. indent=N indents; other keywords go to "
           "json.dumps.")
      .def_static(
          "from_json", [](const std::string& text) { return Resources::from_json(text); }, "text"_a,
          "Resources from to_json() text (ValueError naming the field otherwise).")
      .def(
          "save",
          [](const Resources& r, nb::handle path, const nb::kwargs& kwargs) {
            if (kwargs.size() == 0) return r.save(path_of(path));
            write_file_atomic(path_of(path), resources_json(r, kwargs));
          },
          "path"_a, "kwargs"_a, nb::sig("def save(self, path: str | os.PathLike[str], **kwargs: typing.Any) -> None"),
          "Writes to_json(**kwargs) to path atomically (a temporary file in the same folder, then a rename).")
      .def_static(
          "load", [](nb::handle path) { return Resources::load(path_of(path)); }, "path"_a,
          nb::sig("def load(path: str | os.PathLike[str]) -> Resources"), "Resources from a file written by save().");
  def_json_value_protocol<Resources>(cls);
}

void bind_model_summary(nb::module_& m) {
  nb::class_<ModelSummary>(m, "ModelSummary",
                           "mixle: the structure a plan needs of a mixture — K components, each the product of parts "
                           "(family, dims, categories). Bytes come from the families' descriptors.")
      .def(
          "__init__",
          [](ModelSummary* self, nb::handle components, nb::handle parts) {
            new (self) ModelSummary(make_summary(components, parts));
          },
          "components"_a, "parts"_a,
          nb::sig("def __init__(self, components: int, parts: typing.Iterable[tuple[str, int] | tuple[str, int, int] "
                  "| dict[str, typing.Any]]) -> None"))
      .def_static("from_model", &summary_of, "model"_a, "The summary of a mixle.Model.")
      .def_static("from_layout", &summary_of_layout, "components"_a, "layout"_a, "columns"_a,
                  nb::sig("def from_layout(components: int, layout: str, columns: int) -> ModelSummary"),
                  "The summary of a model still to be fitted: K components and a layout in mixle fit --layout "
                  "syntax ('gaussian_diag', 'gaussian_diag:0-4,categorical:4-5:3') over `columns` data columns.")
      .def_ro("components", &ModelSummary::components, "K.")
      .def_prop_ro(
          "parts",
          [](const ModelSummary& s) {
            nb::list out;
            for (const auto& p : s.parts) out.append(nb::make_tuple(p.family, p.dims, p.categories));
            return as_tuple(out);
          },
          nb::sig("def parts(self) -> tuple[tuple[str, int, int], ...]"), "(family, dims, categories) per part.")
      .def_prop_ro("columns", &ModelSummary::columns, "Σ part dims.")
      .def_prop_ro("parameter_bytes", &ModelSummary::parameter_bytes, "Bytes of all K components' parameters.")
      .def_prop_ro("statistic_bytes", &ModelSummary::statistic_bytes, "Bytes of the flat statistics buffer.")
      .def("__repr__",
           [](const ModelSummary& s) {
             nb::list parts;
             for (const auto& p : s.parts) parts.append(nb::make_tuple(p.family, p.dims, p.categories));
             return repr_of("ModelSummary", {{"components", nb::cast(s.components)}, {"parts", as_tuple(parts)}});
           })
      .def(
          "__eq__",
          [](const ModelSummary& a, const ModelSummary& b) {
            if (a.components != b.components || a.parts.size() != b.parts.size()) return false;
            for (std::size_t i = 0; i < a.parts.size(); ++i) {
              const auto &x = a.parts[i], &y = b.parts[i];
              if (x.family != y.family || x.dims != y.dims || x.categories != y.categories) return false;
            }
            return true;
          },
          nb::is_operator());
}

void bind_placement_types(nb::module_& m) {
  nb::class_<PlacementShard>(m, "PlacementShard", "A contiguous row range [start, stop) on one device.")
      .def(
          "__init__",
          [](PlacementShard* self, const DeviceSpec& device, nb::handle start, nb::handle stop, nb::handle sub_chunks,
             nb::handle encoded_bytes, nb::handle transient_bytes) {
            new (self) PlacementShard(make_shard(device, start, stop, sub_chunks, encoded_bytes, transient_bytes));
          },
          "device"_a, "start"_a, "stop"_a, "sub_chunks"_a = 1, "encoded_bytes"_a = 0, "transient_bytes"_a = 0,
          nb::sig("def __init__(self, device: DeviceSpec, start: int, stop: int, sub_chunks: int = 1, "
                  "encoded_bytes: int = 0, transient_bytes: int = 0) -> None"))
      .def_ro("device", &PlacementShard::device, "The device.")
      .def_ro("start", &PlacementShard::start, "First row.")
      .def_ro("stop", &PlacementShard::stop, "One past the last row.")
      .def_ro("sub_chunks", &PlacementShard::sub_chunks, "Contiguous pieces the engine streams the range in.")
      .def_ro("encoded_bytes", &PlacementShard::encoded_bytes, "Resident data bytes (× safety factor).")
      .def_ro("transient_bytes", &PlacementShard::transient_bytes,
              "Working-set bytes plus the fixed model/statistics bytes (× safety factor).")
      .def_prop_ro("size", &PlacementShard::size, "stop − start.")
      .def_prop_ro("total_bytes", &PlacementShard::total_bytes, "encoded_bytes + transient_bytes.")
      .def("__repr__",
           [](const PlacementShard& s) {
             return repr_of("PlacementShard", {{"device", nb::cast(s.device.name)},
                                               {"start", nb::cast(s.start)},
                                               {"stop", nb::cast(s.stop)},
                                               {"sub_chunks", nb::cast(s.sub_chunks)},
                                               {"encoded_bytes", nb::cast(s.encoded_bytes)},
                                               {"transient_bytes", nb::cast(s.transient_bytes)}});
           })
      .def(
          "__eq__", [](const PlacementShard& a, const PlacementShard& b) { return a == b; }, nb::is_operator())
      .def(
          "__ne__", [](const PlacementShard& a, const PlacementShard& b) { return !(a == b); }, nb::is_operator())
      .def("__hash__", [](const PlacementShard& s) {
        return nb::hash(
            nb::make_tuple(s.device.name, s.start, s.stop, s.sub_chunks, s.encoded_bytes, s.transient_bytes));
      });

  nb::class_<Placement> placement(m, "Placement",
                                  "An advisory row placement: shards tiling [0, total_rows), with the byte model "
                                  "that sized them. Validated on construction.");
  placement
      .def(
          "__init__",
          [](Placement* self, const std::vector<PlacementShard>& shards, nb::handle total_rows,
             double encoded_row_bytes, double transient_row_bytes, nb::handle model_bytes, nb::handle statistic_bytes,
             nb::handle dtype_bytes, std::optional<Resources> resources, nb::handle rows_per_chunk,
             double safety_factor) {
            new (self) Placement(make_placement(shards, total_rows, encoded_row_bytes, transient_row_bytes, model_bytes,
                                                statistic_bytes, dtype_bytes, std::move(resources), rows_per_chunk,
                                                safety_factor));
          },
          "shards"_a, "total_rows"_a, "encoded_row_bytes"_a, "transient_row_bytes"_a, "model_bytes"_a,
          "statistic_bytes"_a, "dtype_bytes"_a, "resources"_a = nb::none(), nb::kw_only(), "rows_per_chunk"_a = 0,
          "safety_factor"_a = 1.25,
          nb::sig("def __init__(self, shards: typing.Sequence[PlacementShard], total_rows: int, encoded_row_bytes: "
                  "float, transient_row_bytes: float, model_bytes: int, statistic_bytes: int, dtype_bytes: int, "
                  "resources: Resources | None = None, *, rows_per_chunk: int = 0, safety_factor: float = 1.25) "
                  "-> None"))
      .def_prop_ro(
          "shards", [](const Placement& p) { return tuple_of(p.shards); }, "The shards, in row order.")
      .def_ro("total_rows", &Placement::total_rows, "N.")
      .def_ro("encoded_row_bytes", &Placement::encoded_row_bytes, "Data bytes of one row.")
      .def_ro("transient_row_bytes", &Placement::transient_row_bytes, "Working-set bytes of one row (K × dtype).")
      .def_ro("model_bytes", &Placement::model_bytes, "Parameter bytes of the whole model.")
      .def_ro("statistic_bytes", &Placement::statistic_bytes, "Bytes of the statistics buffer.")
      .def_ro("dtype_bytes", &Placement::dtype_bytes, "Bytes of the compute precision.")
      .def_ro("resources", &Placement::resources, "The declared resources, or None.")
      .def_ro("rows_per_chunk", &Placement::rows_per_chunk, "mixle: working-set chunk rows (0 = a whole shard).")
      .def_ro("safety_factor", &Placement::safety_factor, "mixle: the safety factor the bytes include.")
      .def(
          "validate",
          [](const Placement& p, nb::handle total_rows, const std::optional<Resources>& resources) {
            p.validate(optional_int(total_rows, "total_rows", 0), resources ? &*resources : nullptr);
          },
          nb::kw_only(), "total_rows"_a = nb::none(), "resources"_a = nb::none(),
          nb::sig("def validate(self, *, total_rows: int | None = None, resources: Resources | None = None) -> None"),
          "Checks the placement against an execution's row count and resources: ValueError for a wrong length, "
          "foreign device, overlap or gap; MemoryError when a shard exceeds its device's memory.")
      .def(
          "for_device", [](const Placement& p, const std::string& name) { return tuple_of(p.for_device(name)); },
          "name"_a, nb::sig("def for_device(self, name: str) -> tuple[PlacementShard, ...]"),
          "The shards on the device named `name`.")
      .def(
          "to_dict", [](const Placement& p) { return json_loads(p.to_json()); },
          nb::sig("def to_dict(self) -> dict[str, typing.Any]"),
          "total_rows, the byte model, resources (dict or None) and shards [{device, kind, engine, start, stop, "
          "sub_chunks, encoded_bytes, transient_bytes}].")
      .def("to_json", &Placement::to_json, "indent"_a = -1, "to_dict() as JSON text (indent < 0: one line).")
      .def_static("from_json", &Placement::from_json, "text"_a, "A validated Placement from to_json() text.")
      .def("__str__", &Placement::to_string)
      .def("__repr__", [](const Placement& p) {
        const std::string text = p.to_string();  // its first line is the header "Placement(…)"
        return text.substr(0, text.find('\n'));
      });
  def_json_value_protocol<Placement>(placement);

  nb::class_<ModelShard> shard(m, "ModelShard", "A contiguous component range owned by one device.");
  shard
      .def(
          "__init__",
          [](ModelShard* self, const DeviceSpec& device, nb::handle component_start, nb::handle component_stop,
             nb::handle parameter_bytes, nb::handle statistic_bytes) {
            new (self)
                ModelShard(make_model_shard(device, component_start, component_stop, parameter_bytes, statistic_bytes));
          },
          "device"_a, "component_start"_a, "component_stop"_a, "parameter_bytes"_a = 0, "statistic_bytes"_a = 0,
          nb::sig("def __init__(self, device: DeviceSpec, component_start: int, component_stop: int, "
                  "parameter_bytes: int = 0, statistic_bytes: int = 0) -> None"))
      .def_ro("device", &ModelShard::device, "The device.")
      .def_ro("component_start", &ModelShard::component_start, "First component.")
      .def_ro("component_stop", &ModelShard::component_stop, "One past the last component.")
      .def_ro("parameter_bytes", &ModelShard::parameter_bytes, "Bytes of the range's parameters.")
      .def_ro("statistic_bytes", &ModelShard::statistic_bytes, "Bytes of the range's statistics.")
      .def_prop_ro("num_components", &ModelShard::num_components, "component_stop − component_start.")
      .def(
          "to_dict", [](const ModelShard& s) { return json_loads(s.to_json()); },
          nb::sig("def to_dict(self) -> dict[str, typing.Any]"), "The shard as a JSON-serialisable dict.")
      .def("to_json", &ModelShard::to_json, "indent"_a = -1, "to_dict() as JSON text.")
      .def_static("from_json", &ModelShard::from_json, "text"_a, "A validated ModelShard from to_json() text.")
      .def("__repr__", [](const ModelShard& s) {
        return repr_of("ModelShard", {{"device", nb::cast(s.device.name)},
                                      {"component_start", nb::cast(s.component_start)},
                                      {"component_stop", nb::cast(s.component_stop)},
                                      {"parameter_bytes", nb::cast(s.parameter_bytes)},
                                      {"statistic_bytes", nb::cast(s.statistic_bytes)}});
      });
  def_json_value_protocol<ModelShard>(shard);
}

void bind_planners(nb::module_& m) {
  m.def(
      "native_plan",
      [](const Resources& resources, nb::handle rows, const ModelSummary* model, nb::handle columns,
         nb::handle data_dtype_bytes, const std::string& precision, nb::handle num_chunks, nb::handle sub_chunks,
         nb::handle rows_per_chunk, double safety_factor) {
        plan::PlanOptions o;
        o.rows = static_cast<std::uint64_t>(exact_int(rows, "rows", 0));
        if (model) o.model = *model;
        if (auto c = optional_int(columns, "columns", 0)) o.columns = static_cast<std::size_t>(*c);
        o.data_dtype_bytes = static_cast<std::size_t>(exact_int(data_dtype_bytes, "data_dtype_bytes", 1));
        o.precision = precision;
        if (auto c = optional_int(num_chunks, "num_chunks", 1)) o.num_chunks = static_cast<std::uint64_t>(*c);
        o.sub_chunks = static_cast<std::uint64_t>(exact_int(sub_chunks, "sub_chunks", 1));
        o.rows_per_chunk = static_cast<std::uint64_t>(exact_int(rows_per_chunk, "rows_per_chunk", 0));
        o.safety_factor = safety_factor;
        return plan::plan(resources, o);
      },
      "resources"_a, "rows"_a, "model"_a.none() = nb::none(), "columns"_a = nb::none(), "data_dtype_bytes"_a = 4,
      "precision"_a = "float32", "num_chunks"_a = nb::none(), "sub_chunks"_a = 1, "rows_per_chunk"_a = 65536,
      "safety_factor"_a = 1.25,
      nb::sig("def native_plan(resources: Resources, rows: int, model: ModelSummary | None = None, columns: int | "
              "None = None, data_dtype_bytes: int = 4, precision: str = 'float32', num_chunks: int | None = None, "
              "sub_chunks: int = 1, rows_per_chunk: int = 65536, safety_factor: float = 1.25) -> Placement"),
      "mixle::plan::plan with PlanOptions as keywords (docs/planning.md). mixle.utils.parallel.plan() is the "
      "reference-shaped entry point.");
  m.def(
      "native_model_sharding_plan",
      [](const ModelSummary& model, const Resources& resources, const std::string& axis,
         nb::handle min_components_per_shard) {
        plan::ShardingOptions o;
        o.axis = axis;
        o.min_components_per_shard =
            static_cast<std::uint64_t>(exact_int(min_components_per_shard, "min_components_per_shard", 1));
        return tuple_of(plan::model_sharding_plan(model, resources, o));
      },
      "model"_a, "resources"_a, "axis"_a = "components", "min_components_per_shard"_a = 1,
      nb::sig("def native_model_sharding_plan(model: ModelSummary, resources: Resources, axis: str = 'components', "
              "min_components_per_shard: int = 1) -> tuple[ModelShard, ...]"),
      "mixle::plan::model_sharding_plan.");
}

}  // namespace

void bind_placement(nb::module_& m) {
  bind_device_spec(m);
  bind_resources(m);
  bind_model_summary(m);
  bind_placement_types(m);
  bind_planners(m);
}

}  // namespace mixle::python
