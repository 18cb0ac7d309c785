// mixle._core: the Python binding of the C++ library (nanobind). Thin on purpose: arrays in caller
// memory are fitted in place (Dataset::view), the GIL is released while the engine works, and
// mixle's errors become Python exceptions of the matching built-in types. The estimators that
// users call (mixle.GaussianMixture, mixle.MixtureModel) are Python code over these functions.
#include <mixle/family.hpp>
#include <mixle/mixle.hpp>

#include "parallel.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <functional>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace mixle::python {
namespace {

/// A matrix handed in from Python: any C-contiguous, 2-D, CPU array (numpy, or any DLPack
/// producer), read-only access. The Python layer converts other inputs before they get here.
using InputMatrix = nb::ndarray<nb::ro, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

/// A zero-copy Dataset over `x`, which must stay alive (the caller's argument) while it is used.
Dataset view_of(const InputMatrix& x) {
  const auto rows = static_cast<std::size_t>(x.shape(0));
  const auto cols = static_cast<std::size_t>(x.shape(1));
  if (rows == 0) return Dataset::from_vector(std::vector<double>{}, 0, cols);  // an empty array may have no address
  if (x.dtype() == nb::dtype<double>()) return Dataset::view(static_cast<const double*>(x.data()), rows, cols);
  if (x.dtype() == nb::dtype<float>()) return Dataset::view(static_cast<const float*>(x.data()), rows, cols);
  throw InvalidInput("data: float32 or float64 values expected (convert the array with .astype(numpy.float64))");
}

/// Hands `values` to numpy without a copy; numpy frees them with the array.
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& values, std::vector<std::size_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.data(), owner);
}

/// The shape of one parameter array of a part with K components (model-file shape, K leading).
std::vector<std::size_t> param_shape(ParamShape shape, std::size_t K, std::size_t D, std::size_t V) {
  switch (shape) {
    case ParamShape::per_component: return {K};
    case ParamShape::per_column: return {K, D};
    case ParamShape::per_column_pair: return {K, D, D};
    case ParamShape::per_category: return {K, D, V};
  }
  return {K};
}

/// A part as a dict: family, columns (begin, end), categories, and each parameter array by its
/// model-file name, shaped per component.
nb::dict part_to_dict(const Part& part, std::size_t K) {
  const FamilyDescriptor& d = family_descriptor(part.family);
  nb::dict out;
  out["family"] = d.name;
  out["columns"] = std::make_pair(part.col_begin, part.col_end);
  out["categories"] = part.categories;
  for (const ParamDescriptor& p : d.params) {
    std::vector<double> values = part.*p.values;
    out[p.name] = to_numpy(std::move(values), param_shape(p.shape, K, part.dims(), part.categories));
  }
  return out;
}

/// The inverse of part_to_dict; validate_model checks the result as a whole afterwards.
Part part_from_dict(const nb::dict& in, std::size_t K, std::size_t index) {
  const std::string where = "parts[" + std::to_string(index) + "]";
  if (!in.contains("family")) throw InvalidInput(where + ": the key 'family' is missing");
  const std::string name = nb::cast<std::string>(in["family"]);
  const FamilyDescriptor* d = find_family(name);
  if (!d) throw InvalidInput(where + ": unknown family '" + name + "' (one of " + family_names() + ")");
  Part part;
  part.family = d->family;
  if (!in.contains("columns")) throw InvalidInput(where + ": the key 'columns' (begin, end) is missing");
  const auto columns = nb::cast<std::pair<std::size_t, std::size_t>>(in["columns"]);
  part.col_begin = columns.first;
  part.col_end = columns.second;
  if (part.col_end <= part.col_begin)
    throw InvalidInput(where + ": columns (" + std::to_string(part.col_begin) + ", " + std::to_string(part.col_end) +
                       ") must name at least one column, begin < end");
  if (in.contains("categories")) part.categories = nb::cast<std::size_t>(in["categories"]);
  for (const ParamDescriptor& p : d->params) {
    if (!in.contains(p.name)) throw InvalidInput(where + ": the " + name + " parameter '" + p.name + "' is missing");
    const auto array = nb::cast<nb::ndarray<const double, nb::c_contig, nb::device::cpu>>(in[p.name]);
    const std::size_t expected =
        K * static_cast<std::size_t>(param_values(p.shape, static_cast<std::int64_t>(part.dims()),
                                                  static_cast<std::int64_t>(part.categories)));
    if (array.size() != expected)
      throw InvalidInput(where + "." + p.name + ": " + std::to_string(array.size()) + " values, expected " +
                         std::to_string(expected) + " (K = " + std::to_string(K) + " components)");
    part.*p.values = std::vector<double>(array.data(), array.data() + array.size());
  }
  return part;
}

Model model_from_arrays(const nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>& weights,
                        const nb::list& parts) {
  Model model;
  model.weights.assign(weights.data(), weights.data() + weights.size());
  for (std::size_t i = 0; i < parts.size(); ++i)
    model.parts.push_back(part_from_dict(nb::cast<nb::dict>(parts[i]), model.weights.size(), i));
  validate_model(model);
  return model;
}

/// Thrown out of the progress callback to end a fit when Python has an exception pending
/// (Ctrl-C, or an error in the user's callback); the Python error is raised once the GIL is back.
struct PythonErrorPending {};

FitOptions fit_options(const nb::dict& kw) {
  FitOptions o;
  for (auto [key, value] : kw) {
    const std::string k = nb::cast<std::string>(key);
    if (k == "components")
      o.components = nb::cast<std::size_t>(value);
    else if (k == "layout")
      o.layout = nb::cast<std::string>(value);
    else if (k == "max_iter")
      o.max_iter = nb::cast<int>(value);
    else if (k == "tol")
      o.tol = nb::cast<double>(value);
    else if (k == "seed")
      o.seed = nb::cast<std::uint64_t>(value);
    else if (k == "init") {
      const std::string init = nb::cast<std::string>(value);
      if (init == "kmeanspp")
        o.init = InitMethod::kmeanspp;
      else if (init == "select")
        o.init = InitMethod::select;
      else if (init == "model")
        o.init = InitMethod::model;
      else if (init == "kmeans")
        o.init = InitMethod::kmeans;
      else
        throw InvalidInput("init = '" + init + "': one of 'kmeanspp', 'kmeans', 'select', 'model'");
    } else if (k == "init_p")
      o.init_p = nb::cast<double>(value);
    else if (k == "init_weights")
      o.init_weights = nb::cast<std::vector<double>>(value);
    else if (k == "init_means")
      o.init_means = nb::cast<std::vector<double>>(value);
    else if (k == "init_precisions")
      o.init_precisions = nb::cast<std::vector<double>>(value);
    else if (k == "init_model") {
      if (!value.is_none()) o.init_model = nb::cast<Model>(value);
    } else if (k == "n_init")
      o.n_init = nb::cast<int>(value);
    else if (k == "reg_covar")
      o.reg_covar = nb::cast<double>(value);
    else if (k == "pseudo_count")
      o.pseudo_count = nb::cast<double>(value);
    else if (k == "rate_floor")
      o.rate_floor = nb::cast<double>(value);
    else if (k == "empty")
      o.empty = nb::cast<std::string>(value);
    else if (k == "missing")
      o.missing = nb::cast<std::string>(value);
    else if (k == "precision")
      o.precision = nb::cast<std::string>(value);
    else if (k == "device")
      o.device = nb::cast<std::string>(value);
    else if (k == "prune")
      o.prune = nb::cast<std::string>(value);
    else if (k == "threads")
      o.threads = nb::cast<int>(value);
    else if (k == "backend")
      o.backend = nb::cast<std::string>(value);
    else if (k == "num_workers")
      o.num_workers = nb::cast<int>(value);
    else if (k == "batch_size")
      o.batch_size = nb::cast<std::size_t>(value);
    else if (k == "step_decay")
      o.step_decay = nb::cast<double>(value);
    else if (k == "step_offset")
      o.step_offset = nb::cast<double>(value);
    else if (k == "epochs")
      o.epochs = nb::cast<int>(value);
    else if (k == "shuffle")
      o.shuffle = nb::cast<bool>(value);
    else if (k == "full_batch_iterations")
      o.full_batch_iterations = nb::cast<int>(value);
    else
      throw InvalidInput("fit: unknown option '" + k + "'");
  }
  return o;
}

nb::dict fit_result(FitResult&& r) {
  nb::dict out;
  out["model"] = nb::cast(std::move(r.model));
  out["mean_loglik"] = r.mean_loglik;
  out["iteration_seconds"] = r.iteration_seconds;
  out["iterations"] = r.iterations;
  out["converged"] = r.converged;
  out["final_mean_loglik"] = r.final_mean_loglik;
  out["warnings"] = r.warnings;
  out["seconds"] = r.seconds;
  out["rows"] = r.rows;
  out["total_weight"] = r.total_weight;
  out["dropped_rows"] = r.dropped_rows;
  out["marginalised_rows"] = r.marginalised_rows;
  out["init_seconds"] = r.init_seconds;
  out["best_restart"] = r.best_restart;
  return out;
}

/// The engine's progress callback: checks for Ctrl-C and calls `progress` (when not None) with
/// the iteration's numbers, holding the GIL only for that.
std::function<void(const FitProgress&)> progress_reporter(const nb::object& progress) {
  return [&progress](const FitProgress& p) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw PythonErrorPending{};  // Ctrl-C: KeyboardInterrupt is set
    if (progress.is_none()) return;
    nb::dict d;
    d["restart"] = p.restart;
    d["iteration"] = p.iteration;
    d["max_iter"] = p.max_iter;
    d["mean_loglik"] = p.mean_loglik;
    d["delta"] = p.delta;
    d["seconds"] = p.seconds;
    d["rows_per_second"] = p.rows_per_second;
    d["pairs_per_row"] = p.pairs_per_row;
    try {
      progress(d);
    } catch (nb::python_error& e) {
      e.restore();
      throw PythonErrorPending{};
    }
  };
}

/// Runs `f` without the GIL; a Python error raised while it ran is raised again here.
template <class F>
auto engine_call(F&& f) {
  try {
    nb::gil_scoped_release released;
    return f();
  } catch (const PythonErrorPending&) {
    throw nb::python_error();
  }
}

using WeightVector = nb::ndarray<nb::ro, double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

/// x's rows, with the sample weights `weights` (a float64 vector, or None) attached.
Dataset weighted_view(const InputMatrix& x, const std::optional<WeightVector>& weights) {
  const Dataset data = view_of(x);
  if (!weights) return data;
  const double* w = weights->data();
  return data.with_weights(std::vector<double>(w, w + weights->shape(0)), "sample_weight");
}

nb::dict py_fit(const InputMatrix& x, const nb::object& progress, const std::optional<WeightVector>& sample_weight,
                const nb::kwargs& kw) {
  FitOptions options = fit_options(kw);
  options.progress = progress_reporter(progress);
  const Dataset data = weighted_view(x, sample_weight);
  return fit_result(engine_call([&] { return fit(data, options); }));
}

/// A Python callable as a C++ callback the engine may call without the GIL: it takes the GIL to
/// call, and an exception it raises ends the engine's work and is raised again in Python
/// (engine_call). The callable is released under the GIL too, whichever thread drops it last.
template <class... Args>
std::function<void(Args...)> python_callback(nb::handle callable) {
  std::shared_ptr<nb::object> held(new nb::object(nb::borrow(callable)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
  return [held](Args... args) {
    nb::gil_scoped_acquire gil;
    try {
      (*held)(args...);
    } catch (nb::python_error& e) {
      e.restore();
      throw PythonErrorPending{};
    }
  };
}

DistributedOptions distributed_options(const nb::dict& in) {
  DistributedOptions d;
  for (auto [key, value] : in) {
    const std::string k = nb::cast<std::string>(key);
    if (k == "comm")
      d.comm = nb::cast<std::string>(value);
    else if (k == "timeout")
      d.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(nb::cast<double>(value) * 1000));
    else if (k == "checkpoint_dir")
      d.checkpoint_dir = nb::cast<std::string>(value);
    else if (k == "checkpoint_every")
      d.checkpoint_every = nb::cast<int>(value);
    else if (k == "resume_dir")
      d.resume_dir = nb::cast<std::string>(value);
    else if (k == "receipts_file")
      d.receipts_file = nb::cast<std::string>(value);
    else if (k == "launch_environment")
      for (auto [name, text] : nb::cast<nb::dict>(value))
        d.launch_environment[nb::cast<std::string>(name)] = nb::cast<std::string>(text);
    else if (k == "on_store_port")
      d.on_store_port = python_callback<int>(value);
    else
      throw InvalidInput("distributed: unknown option '" + k +
                         "' (comm, timeout, checkpoint_dir, checkpoint_every, resume_dir, receipts_file, "
                         "launch_environment, on_store_port)");
  }
  return d;
}

nb::dict py_fit_distributed(const InputMatrix& x, const nb::dict& dist, const nb::object& progress,
                            const std::optional<WeightVector>& sample_weight, const nb::kwargs& kw) {
  FitOptions options = fit_options(kw);
  options.progress = progress_reporter(progress);
  const DistributedOptions d = distributed_options(dist);
  const Dataset data = weighted_view(x, sample_weight);
  DistributedFitResult r = engine_call([&] { return fit_distributed(data, options, d); });
  nb::dict out = fit_result(std::move(r.fit));
  out["rank"] = r.rank;
  out["world_size"] = r.world_size;
  out["comm"] = r.comm;
  out["device"] = r.device;
  out["first_row"] = r.first_row;
  out["local_rows"] = r.local_rows;
  out["collective_bytes"] = r.collective_bytes;
  out["collective_seconds"] = r.collective_seconds;
  out["resumed_from_iteration"] = r.resumed_from_iteration;
  return out;
}

/// One stepwise EM step: (next model, state JSON) from the model, a batch, its weights and the
/// state so far (JSON; empty = a new stream).
std::pair<Model, std::string> py_partial_fit(const Model& model, const InputMatrix& x,
                                             const std::optional<WeightVector>& sample_weight, const std::string& state,
                                             double total_weight, const nb::kwargs& kw) {
  // The rule, precision, device, threads and priors are read as fit reads them.
  const FitOptions f = fit_options(kw);
  const PartialFitOptions o{.step_decay = f.step_decay,
                            .step_offset = f.step_offset,
                            .total_weight = total_weight,
                            .precision = f.precision,
                            .device = f.device,
                            .threads = f.threads,
                            .reg_covar = f.reg_covar,
                            .pseudo_count = f.pseudo_count,
                            .rate_floor = f.rate_floor};
  const Dataset data = weighted_view(x, sample_weight);
  return engine_call([&] {
    StepwiseState s = state.empty() ? StepwiseState{} : stepwise_state_from_json(state);
    Model next = partial_fit(model, data, s, o);
    return std::pair{std::move(next), stepwise_state_to_json(s)};
  });
}

}  // namespace
}  // namespace mixle::python

NB_MODULE(_core, m) {
  using namespace mixle;
  using namespace mixle::python;
  m.doc() = "mixle's native engine (C++). Use mixle.GaussianMixture and mixle.MixtureModel.";
  m.attr("__version__") = MIXLE_VERSION_STRING;

  // mixle errors as the built-in exception types Python code expects of bad values and failures.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const InvalidInput& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ImpossibleEvidence& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const EncodedDataControlConflict& e) {
      set_planning_error("EncodedDataControlConflictError", PyExc_ValueError, e.what());
    } catch (const UnrealizedModelPlacement& e) {
      set_planning_error("UnrealizedModelPlacementError", PyExc_RuntimeError, e.what());
    } catch (const MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const CommunicationError& e) {
      PyErr_SetString(PyExc_ConnectionError, e.what());
    } catch (const NotCompiled& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  nb::class_<Model>(m, "Model", "A fitted mixture: weights and parts, in the engine's own representation.")
      .def_static(
          "from_json", [](const std::string& text, const std::string& source) { return model_from_json(text, source); },
          "text"_a, "source"_a = "<string>", "Reads a model from the mixle-model JSON format (validated).")
      .def_static("from_arrays", &model_from_arrays, "weights"_a, "parts"_a,
                  "Builds a model from weights (K,) and a list of part dicts as `parts` returns them (validated).")
      .def(
          "to_json", [](const Model& model, int indent) { return model_to_json(model, indent); }, "indent"_a = -1,
          "The model in the mixle-model JSON format (indent < 0: one line).")
      .def_prop_ro("components", &Model::components, "K, the number of components.")
      .def_prop_ro("columns", &Model::columns, "One past the highest data column any part reads.")
      .def("free_parameters", &Model::free_parameters, "Free parameters (for BIC/AIC).")
      .def_prop_ro(
          "weights",
          [](const Model& model) { return to_numpy(std::vector<double>(model.weights), {model.components()}); },
          nb::rv_policy::move, "Mixing weights, shape (K,) (a copy).")
      .def_prop_ro(
          "parts",
          [](const Model& model) {
            nb::list parts;
            for (const Part& part : model.parts) parts.append(part_to_dict(part, model.components()));
            return parts;
          },
          nb::rv_policy::move, "The parts: dicts with family, columns, categories and parameter arrays (copies).")
      .def("__getstate__", [](const Model& model) { return model_to_json(model, -1); })
      .def("__setstate__",
           [](Model& model, const std::string& json) { new (&model) Model(model_from_json(json, "<pickle>")); });

  m.def("fit", &py_fit, "x"_a, "progress"_a = nb::none(), "sample_weight"_a = nb::none(), "options"_a,
        "Fits a mixture to the rows of x (float32/float64, C-contiguous) with the engine's FitOptions as keywords; "
        "sample_weight: None or one float64 weight ≥ 0 per row (integer weights fit as repeated rows). "
        "Returns a dict (model, mean_loglik, iterations, converged, rows, total_weight, …).");
  m.def("partial_fit", &py_partial_fit, "model"_a, "x"_a, "sample_weight"_a = nb::none(), "state"_a = "",
        "total_weight"_a = 0.0, "options"_a,
        "One stepwise EM step (docs/streaming.md): folds the rows of x into the running state (JSON text, '' for a "
        "new stream) under `model` and returns (next model, state). Options as fit's: step_decay, step_offset, "
        "precision, device, threads, reg_covar, pseudo_count, rate_floor.");
  m.def("fit_distributed", &py_fit_distributed, "x"_a, "dist"_a, "progress"_a = nb::none(),
        "sample_weight"_a = nb::none(), "options"_a,
        "Fits this rank's rows x across the processes of the job (torchrun, mpirun, srun, mixle launch; one "
        "process alone otherwise): rank r's rows follow those of ranks 0…r−1. `dist`: comm, timeout (s), "
        "checkpoint_dir, checkpoint_every, resume_dir, receipts_file. Returns fit's dict plus rank, world_size, "
        "comm, device, first_row, local_rows, collective_bytes, collective_seconds, resumed_from_iteration.");
  // The per-row queries: each runs `query` on a zero-copy view of x without the GIL and returns
  // its values as numpy, one row per row of x (and K columns for the responsibilities).
  const auto bind_query = [&m](const char* name, auto query, bool per_component, const char* doc) {
    m.def(
        name,
        [query, per_component](const Model& model, const InputMatrix& x, const std::string& device, int threads,
                               const std::string& precision) {
          const Dataset data = view_of(x);
          auto values = engine_call([&] { return query(model, data, device, threads, precision); });
          std::vector<std::size_t> shape{data.rows()};
          if (per_component) shape.push_back(model.components());
          return to_numpy(std::move(values), std::move(shape));
        },
        "model"_a, "x"_a, "device"_a = "cpu", "threads"_a = 0, "precision"_a = "fp64", doc);
  };
  bind_query("score_samples", &score_samples, false, "Per-row log-likelihood log p(x).");
  bind_query("predict_proba", &predict_proba, true, "Responsibilities p(k | x), (N, K).");
  bind_query("predict", &predict, false, "Most responsible component per row.");
  m.def(
      "sample",
      [](const Model& model, std::size_t rows, std::uint64_t seed) {
        std::vector<std::int64_t> labels;
        const Dataset data = engine_call([&] { return sample(model, rows, seed, &labels); });
        const double* values = data.as<double>();
        std::vector<double> copy(values, values + data.rows() * data.cols());
        return std::make_pair(to_numpy(std::move(copy), {data.rows(), data.cols()}),
                              to_numpy(std::move(labels), {data.rows()}));
      },
      "model"_a, "rows"_a, "seed"_a, "Draws rows from the model: (X float64 (rows, columns), labels int64 (rows,)).");
  m.def(
      "family_names",
      [] {
        std::vector<std::string> names;
        for (const FamilyDescriptor* d : family_descriptors()) names.emplace_back(d->name);
        return names;
      },
      "The component families this build knows.");

  bind_parallel(m);  // mixle._core.parallel, the planning layer (parallel*.cpp)
}
