// mixle._core.parallel, part 2: the training contracts — ParallelPlan, ParameterLayout,
// DistributedUpdate, StepReceipt, BackendCapabilities and the C++ backend registry, worker
// attestation. Sizes and counts must be exact integers (bool and float refused, as the C++ types
// refuse them at compile time); range rules and messages are the C++ layer's.
#include "parallel.hpp"

#include <mixle/error.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace mixle::python {
namespace {

using plan::BackendCapabilities;
using plan::DistributedUpdate;
using plan::ParallelAxis;
using plan::ParallelPlan;
using plan::ParameterLayout;
using plan::StepReceipt;
using plan::WorkerTopologyAttestation;

constexpr std::int64_t kAny = std::numeric_limits<std::int64_t>::min();  // range checked by the C++ layer

nb::object builtin(const char* name) { return nb::module_::import_("builtins").attr(name); }

nb::object axis_obj(ParallelAxis a) { return enum_member(EnumKind::parallel_axis, plan::axis_name(a)); }

/// `value` must be a tuple (the reference's frozen dataclasses store tuples); TypeError otherwise.
nb::tuple require_tuple(nb::handle value, const char* name) {
  if (!nb::isinstance<nb::tuple>(value)) {
    throw nb::type_error((std::string(name) + "=" + py_repr(value) + " must be a tuple").c_str());
  }
  return nb::borrow<nb::tuple>(value);
}

bool require_bool(nb::handle value, const char* name) {
  if (!PyBool_Check(value.ptr())) {
    throw nb::type_error((std::string(name) + "=" + py_repr(value) + " must be a bool").c_str());
  }
  return value.ptr() == Py_True;
}

std::string require_str(nb::handle value, const char* name) {
  if (!nb::isinstance<nb::str>(value)) {
    throw nb::type_error((std::string(name) + "=" + py_repr(value) + " must be a str").c_str());
  }
  return nb::cast<std::string>(value);
}

/// A real number (int, float, numpy scalar), not bool; TypeError otherwise.
double require_real(nb::handle value, const char* name) {
  if (PyBool_Check(value.ptr()) ||
      !(PyFloat_Check(value.ptr()) || PyIndex_Check(value.ptr()) || PyObject_HasAttrString(value.ptr(), "__float__"))) {
    throw nb::type_error((std::string(name) + "=" + py_repr(value) + " must be a real number (not bool)").c_str());
  }
  const double v = PyFloat_AsDouble(value.ptr());
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

std::optional<double> optional_real(nb::handle value, const char* name) {
  if (value.is_none()) return std::nullopt;
  return require_real(value, name);
}

/// The name of a member of enum `kind`; a plain string is refused (TypeError), as the reference
/// refuses it.
std::string enum_value(nb::handle value, EnumKind kind, const char* name) {
  if (!nb::isinstance(value, enum_class(kind))) {
    const std::string cls = nb::cast<std::string>(enum_class(kind).attr("__name__"));
    throw nb::type_error((std::string(name) + "=" + py_repr(value) + " must be a " + cls + " member").c_str());
  }
  return nb::cast<std::string>(value.attr("value"));
}

nb::object frozenset_of(const nb::list& items) { return builtin("frozenset")(items); }

// ---- ParallelPlan ---------------------------------------------------------------------------

ParallelPlan make_plan(nb::handle dpr, nb::handle dps, nb::handle tp, nb::handle pp, nb::handle cp, nb::handle ep,
                       nb::handle etp, nb::handle microbatches, nb::handle accumulation) {
  // Types here (1.9 and True refused, ValueError as the reference has it); ranges in ParallelPlan.
  return ParallelPlan({.dp_replicate = exact_int(dpr, "dp_replicate", kAny),
                       .dp_shard = exact_int(dps, "dp_shard", kAny),
                       .tp = exact_int(tp, "tp", kAny),
                       .pp = exact_int(pp, "pp", kAny),
                       .cp = exact_int(cp, "cp", kAny),
                       .ep = exact_int(ep, "ep", kAny),
                       .etp = exact_int(etp, "etp", kAny),
                       .microbatches = exact_int(microbatches, "microbatches", kAny),
                       .gradient_accumulation_steps = exact_int(accumulation, "gradient_accumulation_steps", kAny)});
}

std::string plan_repr(const ParallelPlan& p) {
  return repr_of("ParallelPlan", {{"dp_replicate", nb::cast(p.size(ParallelAxis::dp_replicate))},
                                  {"dp_shard", nb::cast(p.size(ParallelAxis::dp_shard))},
                                  {"tp", nb::cast(p.size(ParallelAxis::tp))},
                                  {"pp", nb::cast(p.size(ParallelAxis::pp))},
                                  {"cp", nb::cast(p.size(ParallelAxis::cp))},
                                  {"ep", nb::cast(p.size(ParallelAxis::ep))},
                                  {"etp", nb::cast(p.size(ParallelAxis::etp))},
                                  {"microbatches", nb::cast(p.microbatches())},
                                  {"gradient_accumulation_steps", nb::cast(p.gradient_accumulation_steps())}});
}

void bind_parallel_plan(nb::module_& m) {
  nb::class_<ParallelPlan> cls(m, "ParallelPlan",
                               "An explicit N-D process mesh and batch schedule. Every size is an exact integer ≥ 1; "
                               "(dp_replicate·dp_shard) must be divisible by ep.");
  cls.def(
      "__init__",
      [](ParallelPlan* self, nb::handle dp_replicate, nb::handle dp_shard, nb::handle tp, nb::handle pp, nb::handle cp,
         nb::handle ep, nb::handle etp, nb::handle microbatches, nb::handle gradient_accumulation_steps) {
        new (self) ParallelPlan(
            make_plan(dp_replicate, dp_shard, tp, pp, cp, ep, etp, microbatches, gradient_accumulation_steps));
      },
      "dp_replicate"_a = 1, "dp_shard"_a = 1, "tp"_a = 1, "pp"_a = 1, "cp"_a = 1, "ep"_a = 1, "etp"_a = 1,
      "microbatches"_a = 1, "gradient_accumulation_steps"_a = 1,
      nb::sig("def __init__(self, dp_replicate: int = 1, dp_shard: int = 1, tp: int = 1, pp: int = 1, cp: int = 1, "
              "ep: int = 1, etp: int = 1, microbatches: int = 1, gradient_accumulation_steps: int = 1) -> None"));
  const std::pair<const char*, ParallelAxis> axes[] = {{"dp_replicate", ParallelAxis::dp_replicate},
                                                       {"dp_shard", ParallelAxis::dp_shard},
                                                       {"tp", ParallelAxis::tp},
                                                       {"pp", ParallelAxis::pp},
                                                       {"cp", ParallelAxis::cp},
                                                       {"ep", ParallelAxis::ep},
                                                       {"etp", ParallelAxis::etp}};
  for (const auto& [name, axis] : axes) {
    cls.def_prop_ro(
        name, [axis](const ParallelPlan& p) { return p.size(axis); }, "Size of this mesh axis.");
  }
  cls.def_prop_ro("microbatches", &ParallelPlan::microbatches, "Micro-batches per step.")
      .def_prop_ro("gradient_accumulation_steps", &ParallelPlan::gradient_accumulation_steps,
                   "Steps accumulated per committed update.")
      .def_prop_ro("world_size", &ParallelPlan::world_size,
                   "Number of physical ranks: dp_replicate·dp_shard·tp·pp·cp. EP and ETP are overlapping groups cut "
                   "from existing ranks, not extra mesh dimensions.")
      .def_prop_ro("data_parallel_size", &ParallelPlan::data_parallel_size, "dp_replicate·dp_shard.")
      .def_prop_ro(
          "active_axes",
          [](const ParallelPlan& p) {
            nb::list out;
            for (ParallelAxis a : p.active_axes()) out.append(axis_obj(a));
            return as_tuple(out);
          },
          nb::sig("def active_axes(self) -> tuple[ParallelAxis, ...]"), "Axes with size > 1, in the fixed order.")
      .def_prop_ro(
          "mesh",
          [](const ParallelPlan& p) {
            auto [names, shape] = p.mesh();
            nb::list n, s;
            for (const auto& x : names) n.append(x);
            for (auto x : shape) s.append(x);
            return nb::make_tuple(as_tuple(n), as_tuple(s));
          },
          nb::sig("def mesh(self) -> tuple[tuple[str, ...], tuple[int, ...]]"),
          "DeviceMesh names and shape of the active physical axes, or (('dp_replicate',), (1,)) when none is.")
      .def(
          "size", [](const ParallelPlan& p, nb::handle axis) { return p.size(axis_arg(axis, false)); }, "axis"_a,
          nb::sig("def size(self, axis: ParallelAxis | str) -> int"), "The size of an axis given by member or name.")
      .def(
          "validate_world_size",
          [](const ParallelPlan& p, nb::handle actual) {
            p.validate_world_size(exact_int(actual, "world_size", kAny));
          },
          "actual"_a, nb::sig("def validate_world_size(self, actual: int) -> None"),
          "ValueError unless `actual` (an exact integer) equals world_size.")
      .def(
          "as_dict", [](const ParallelPlan& p) { return json_loads(p.to_json()); },
          nb::sig("def as_dict(self) -> dict[str, int]"),
          "The 7 axis sizes, microbatches, gradient_accumulation_steps, world_size and data_parallel_size.")
      .def("to_json", &ParallelPlan::to_json, "indent"_a = -1, "as_dict() as JSON text.")
      .def_static("from_json", &ParallelPlan::from_json, "text"_a,
                  "A plan from to_json() text (exact integers; world_size and data_parallel_size must match).")
      .def("__repr__", &plan_repr);
  def_json_value_protocol<ParallelPlan>(cls);
}

// ---- ParameterLayout, DistributedUpdate -----------------------------------------------------

ParameterLayout make_layout(const std::string& logical_id, nb::handle global_shape, nb::handle placements,
                            nb::handle shared_group, nb::handle optimizer_state) {
  ParameterLayout l;
  l.logical_id = logical_id;
  std::size_t i = 0;
  for (nb::handle d : require_tuple(global_shape, "global_shape")) {
    l.global_shape.push_back(exact_int(d, ("global_shape[" + std::to_string(i++) + "]").c_str(), kAny));
  }
  for (nb::handle p : require_tuple(placements, "placements")) {
    if (!nb::isinstance<nb::tuple>(p) || nb::len(p) != 2) {
      throw nb::type_error(("placements item " + py_repr(p) + " must be an (axis, placement) tuple").c_str());
    }
    l.placements.emplace_back(require_str(p[0], "placement axis"), require_str(p[1], "placement"));
  }
  if (!shared_group.is_none()) l.shared_group = require_str(shared_group, "shared_group");
  l.optimizer_state =
      plan::state_layout_from_name(enum_value(optimizer_state, EnumKind::state_layout, "optimizer_state"));
  l.validate();
  return l;
}

nb::object layout_placements(const ParameterLayout& l) {
  nb::list out;
  for (const auto& [axis, placement] : l.placements) out.append(nb::make_tuple(axis, placement));
  return as_tuple(out);
}

DistributedUpdate make_update(const std::string& node_id, nb::handle payload, nb::handle collective,
                              nb::handle mesh_axes, nb::handle state_layout, nb::handle exact, nb::handle notes,
                              nb::handle contract_exact, nb::handle determinism_observed, nb::handle max_abs,
                              nb::handle max_rel, nb::handle evidence_id, nb::handle sample_count) {
  DistributedUpdate u;
  u.node_id = node_id;
  u.payload = plan::payload_from_name(enum_value(payload, EnumKind::payload, "payload"));
  u.collective = plan::collective_from_name(enum_value(collective, EnumKind::collective, "collective"));
  for (nb::handle a : require_tuple(mesh_axes, "mesh_axes")) u.mesh_axes.push_back(axis_arg(a, true));
  u.state_layout = plan::state_layout_from_name(enum_value(state_layout, EnumKind::state_layout, "state_layout"));
  u.exact = require_bool(exact, "exact");
  for (nb::handle n : require_tuple(notes, "notes")) u.notes.push_back(require_str(n, "notes item"));
  u.contract_exact = require_bool(contract_exact, "contract_exact");
  if (!determinism_observed.is_none())
    u.determinism_observed = require_bool(determinism_observed, "determinism_observed");
  u.maximum_absolute_error = optional_real(max_abs, "maximum_absolute_error");
  u.maximum_relative_error = optional_real(max_rel, "maximum_relative_error");
  if (!evidence_id.is_none()) u.numerics_evidence_id = require_str(evidence_id, "numerics_evidence_id");
  u.numerics_sample_count = exact_int(sample_count, "numerics_sample_count", kAny);
  u.validate();
  return u;
}

template <class T>
nb::object optional_obj(const std::optional<T>& v) {
  return v ? nb::cast(*v) : nb::none();
}

void bind_layout_and_update(nb::module_& m) {
  nb::class_<ParameterLayout> layout(m, "ParameterLayout", "Stable logical identity and global layout of a parameter.");
  layout
      .def(
          "__init__",
          [](ParameterLayout* self, const std::string& logical_id, nb::handle global_shape, nb::handle placements,
             nb::handle shared_group, nb::handle optimizer_state) {
            new (self)
                ParameterLayout(make_layout(logical_id, global_shape, placements, shared_group, optimizer_state));
          },
          "logical_id"_a, "global_shape"_a, "placements"_a = nb::tuple(), "shared_group"_a = nb::none(),
          "optimizer_state"_a = enum_member(EnumKind::state_layout, "replicated"),
          nb::sig("def __init__(self, logical_id: str, global_shape: tuple[int, ...], placements: tuple[tuple[str, "
                  "str], ...] = (), shared_group: str | None = None, optimizer_state: StateLayout = "
                  "StateLayout.REPLICATED) -> None"))
      .def_ro("logical_id", &ParameterLayout::logical_id, "Stable identity.")
      .def_prop_ro(
          "global_shape",
          [](const ParameterLayout& l) {
            nb::list out;
            for (auto d : l.global_shape) out.append(d);
            return as_tuple(out);
          },
          nb::sig("def global_shape(self) -> tuple[int, ...]"), "Global shape, each dimension ≥ 0.")
      .def_prop_ro("placements", &layout_placements, nb::sig("def placements(self) -> tuple[tuple[str, str], ...]"),
                   "(axis, placement) pairs, axes unique.")
      .def_ro("shared_group", &ParameterLayout::shared_group, "Tied-parameter group, or None.")
      .def_prop_ro(
          "optimizer_state",
          [](const ParameterLayout& l) {
            return enum_member(EnumKind::state_layout, plan::state_layout_name(l.optimizer_state));
          },
          nb::sig("def optimizer_state(self) -> StateLayout"), "Where the optimizer state lives.")
      .def(
          "as_dict", [](const ParameterLayout& l) { return json_loads(l.to_json()); },
          nb::sig("def as_dict(self) -> dict[str, typing.Any]"), "The fields, placements as a dict {axis: placement}.")
      .def("to_json", &ParameterLayout::to_json, "indent"_a = -1, "as_dict() as JSON text.")
      .def_static("from_json", &ParameterLayout::from_json, "text"_a, "A validated layout from to_json() text.")
      .def("__repr__", [](const ParameterLayout& l) {
        return repr_of(
            "ParameterLayout",
            {{"logical_id", nb::cast(l.logical_id)},
             {"global_shape", as_tuple(nb::cast<nb::list>(nb::cast(l.global_shape)))},
             {"placements", layout_placements(l)},
             {"shared_group", optional_obj(l.shared_group)},
             {"optimizer_state", enum_member(EnumKind::state_layout, plan::state_layout_name(l.optimizer_state))}});
      });
  def_json_value_protocol<ParameterLayout>(layout);

  nb::class_<DistributedUpdate> update(m, "DistributedUpdate",
                                       "An executable communication declaration with explicit numerical evidence. "
                                       "exact=True only with CollectiveKind.NONE; the maths' exactness goes into "
                                       "contract_exact.");
  update
      .def(
          "__init__",
          [](DistributedUpdate* self, const std::string& node_id, nb::handle payload, nb::handle collective,
             nb::handle mesh_axes, nb::handle state_layout, nb::handle exact, nb::handle notes,
             nb::handle contract_exact, nb::handle determinism_observed, nb::handle maximum_absolute_error,
             nb::handle maximum_relative_error, nb::handle numerics_evidence_id, nb::handle numerics_sample_count) {
            new (self)
                DistributedUpdate(make_update(node_id, payload, collective, mesh_axes, state_layout, exact, notes,
                                              contract_exact, determinism_observed, maximum_absolute_error,
                                              maximum_relative_error, numerics_evidence_id, numerics_sample_count));
          },
          "node_id"_a, "payload"_a, "collective"_a, "mesh_axes"_a, "state_layout"_a, "exact"_a, "notes"_a = nb::tuple(),
          "contract_exact"_a = false, "determinism_observed"_a = nb::none(), "maximum_absolute_error"_a = nb::none(),
          "maximum_relative_error"_a = nb::none(), "numerics_evidence_id"_a = nb::none(), "numerics_sample_count"_a = 0,
          nb::sig("def __init__(self, node_id: str, payload: PayloadKind, collective: CollectiveKind, mesh_axes: "
                  "tuple[ParallelAxis, ...], state_layout: StateLayout, exact: bool, notes: tuple[str, ...] = (), "
                  "contract_exact: bool = False, determinism_observed: bool | None = None, maximum_absolute_error: "
                  "float | None = None, maximum_relative_error: float | None = None, numerics_evidence_id: str | "
                  "None = None, numerics_sample_count: int = 0) -> None"))
      .def_ro("node_id", &DistributedUpdate::node_id, "The update's node.")
      .def_prop_ro(
          "payload",
          [](const DistributedUpdate& u) { return enum_member(EnumKind::payload, plan::payload_name(u.payload)); },
          nb::sig("def payload(self) -> PayloadKind"), "What is communicated.")
      .def_prop_ro(
          "collective",
          [](const DistributedUpdate& u) {
            return enum_member(EnumKind::collective, plan::collective_name(u.collective));
          },
          nb::sig("def collective(self) -> CollectiveKind"), "How it is communicated.")
      .def_prop_ro(
          "mesh_axes",
          [](const DistributedUpdate& u) {
            nb::list out;
            for (ParallelAxis a : u.mesh_axes) out.append(axis_obj(a));
            return as_tuple(out);
          },
          nb::sig("def mesh_axes(self) -> tuple[ParallelAxis, ...]"), "Over which mesh axes.")
      .def_prop_ro(
          "state_layout",
          [](const DistributedUpdate& u) {
            return enum_member(EnumKind::state_layout, plan::state_layout_name(u.state_layout));
          },
          nb::sig("def state_layout(self) -> StateLayout"), "Ownership of the updated state.")
      .def_ro("exact", &DistributedUpdate::exact, "Transport guaranteed exact (only without a collective).")
      .def_prop_ro(
          "notes", [](const DistributedUpdate& u) { return as_tuple(nb::cast<nb::list>(nb::cast(u.notes))); },
          nb::sig("def notes(self) -> tuple[str, ...]"), "Free-form notes.")
      .def_ro("contract_exact", &DistributedUpdate::contract_exact, "The maths is exact, apart from transport.")
      .def_ro("determinism_observed", &DistributedUpdate::determinism_observed, "Observed determinism, or None.")
      .def_ro("maximum_absolute_error", &DistributedUpdate::maximum_absolute_error, "Observed bound, or None.")
      .def_ro("maximum_relative_error", &DistributedUpdate::maximum_relative_error, "Observed bound, or None.")
      .def_ro("numerics_evidence_id", &DistributedUpdate::numerics_evidence_id, "Evidence identifier, or None.")
      .def_ro("numerics_sample_count", &DistributedUpdate::numerics_sample_count, "Samples behind the evidence.")
      .def(
          "as_dict", [](const DistributedUpdate& u) { return json_loads(u.to_json()); },
          nb::sig("def as_dict(self) -> dict[str, typing.Any]"), "Every field; enum values as strings.")
      .def("to_json", &DistributedUpdate::to_json, "indent"_a = -1, "as_dict() as JSON text.")
      .def_static("from_json", &DistributedUpdate::from_json, "text"_a, "A validated update from to_json() text.")
      .def("__repr__", [](const DistributedUpdate& u) { return "DistributedUpdate(" + u.to_json() + ")"; });
  def_json_value_protocol<DistributedUpdate>(update);

  m.def("em_statistics_update", &plan::em_statistics_update, "plan"_a, "node_id"_a = "em_statistics",
        "mixle: the EM update of one iteration under `plan` — the float64 statistics buffer all-reduced over the "
        "active data-parallel axes (contract_exact; collective none and exact when no data axis is active).");
}

// ---- StepReceipt ----------------------------------------------------------------------------

std::map<std::string, plan::ReceiptValue> receipt_extra(nb::handle extra) {
  if (!nb::isinstance<nb::dict>(extra)) {
    throw nb::type_error(("extra=" + py_repr(extra) + " must be a dict").c_str());
  }
  std::map<std::string, plan::ReceiptValue> out;
  for (auto [key, value] : nb::borrow<nb::dict>(extra)) {
    const std::string k = require_str(key, "extra key");
    if (value.is_none())
      out[k] = nullptr;
    else if (PyBool_Check(value.ptr()))
      out[k] = value.ptr() == Py_True;
    else if (PyLong_Check(value.ptr()))
      out[k] = exact_int(value, ("extra." + k).c_str(), kAny);
    else if (PyFloat_Check(value.ptr()))
      out[k] = nb::cast<double>(value);
    else if (nb::isinstance<nb::str>(value))
      out[k] = nb::cast<std::string>(value);
    else
      throw InvalidInput("extra." + k + "=" + py_repr(value) +
                         " is not a scalar; accepted: None, bool, int, float, str");
  }
  return out;
}

nb::dict extra_dict(const StepReceipt& r) {
  nb::dict out;
  for (const auto& [key, value] : r.extra) {
    std::visit(
        [&](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::nullptr_t>)
            out[key.c_str()] = nb::none();
          else
            out[key.c_str()] = v;
        },
        value);
  }
  return out;
}

void bind_step_receipt(nb::module_& m) {
  nb::class_<StepReceipt>(m, "StepReceipt",
                          "Accounting for one committed (or skipped) update: one EM iteration or one optimizer step.")
      .def(
          "__init__",
          [](StepReceipt* self, nb::handle step, nb::handle loss, nb::handle local_examples, nb::handle local_tokens,
             nb::handle microbatches, nb::handle accumulation_steps, nb::handle data_parallel_size,
             const std::string& optimizer, const std::string& precision, nb::handle collective_bytes,
             nb::handle skipped, nb::handle extra, nb::handle global_examples_observed,
             nb::handle global_tokens_observed) {
            StepReceipt r;
            r.step = exact_int(step, "step", kAny);
            r.loss = require_real(loss, "loss");
            r.local_examples = exact_int(local_examples, "local_examples", kAny);
            r.local_tokens = exact_int(local_tokens, "local_tokens", kAny);
            r.microbatches = exact_int(microbatches, "microbatches", kAny);
            r.accumulation_steps = exact_int(accumulation_steps, "accumulation_steps", kAny);
            r.data_parallel_size = exact_int(data_parallel_size, "data_parallel_size", kAny);
            r.optimizer = optimizer;
            r.precision = precision;
            r.collective_bytes = exact_int(collective_bytes, "collective_bytes", kAny);
            r.skipped = require_bool(skipped, "skipped");
            r.extra = receipt_extra(extra);
            r.global_examples_observed = optional_int(global_examples_observed, "global_examples_observed", kAny);
            r.global_tokens_observed = optional_int(global_tokens_observed, "global_tokens_observed", kAny);
            r.validate();
            new (self) StepReceipt(std::move(r));
          },
          "step"_a, "loss"_a, "local_examples"_a, "local_tokens"_a, "microbatches"_a, "accumulation_steps"_a,
          "data_parallel_size"_a, "optimizer"_a, "precision"_a, "collective_bytes"_a = 0, "skipped"_a = false,
          "extra"_a = nb::dict(), "global_examples_observed"_a = nb::none(), "global_tokens_observed"_a = nb::none(),
          nb::sig("def __init__(self, step: int, loss: float, local_examples: int, local_tokens: int, microbatches: "
                  "int, accumulation_steps: int, data_parallel_size: int, optimizer: str, precision: str, "
                  "collective_bytes: int = 0, skipped: bool = False, extra: dict[str, typing.Any] = {}, "
                  "global_examples_observed: int | None = None, global_tokens_observed: int | None = None) -> None"))
      .def_ro("step", &StepReceipt::step, "Updates committed before this one.")
      .def_ro("loss", &StepReceipt::loss, "Finite loss ≥ 0.")
      .def_ro("local_examples", &StepReceipt::local_examples, "This rank's examples.")
      .def_ro("local_tokens", &StepReceipt::local_tokens, "This rank's tokens.")
      .def_ro("microbatches", &StepReceipt::microbatches, "Micro-batches of the step.")
      .def_ro("accumulation_steps", &StepReceipt::accumulation_steps, "Batches accumulated into the update.")
      .def_ro("data_parallel_size", &StepReceipt::data_parallel_size, "Data-parallel ranks.")
      .def_ro("optimizer", &StepReceipt::optimizer, "Optimizer name ('em' for EM iterations).")
      .def_ro("precision", &StepReceipt::precision, "Precision name.")
      .def_ro("collective_bytes", &StepReceipt::collective_bytes, "Bytes this rank sent in collectives.")
      .def_ro("skipped", &StepReceipt::skipped, "True when no update was committed.")
      .def_prop_ro("extra", &extra_dict, nb::sig("def extra(self) -> dict[str, typing.Any]"), "Scalar extras (a copy).")
      .def_ro("global_examples_observed", &StepReceipt::global_examples_observed, "Observed global count, or None.")
      .def_ro("global_tokens_observed", &StepReceipt::global_tokens_observed, "Observed global count, or None.")
      .def_prop_ro("global_examples", &StepReceipt::global_examples,
                   "global_examples_observed if set, else local_examples·data_parallel_size.")
      .def_prop_ro("global_tokens", &StepReceipt::global_tokens,
                   "global_tokens_observed if set, else local_tokens·data_parallel_size.")
      .def("to_json_line", &StepReceipt::to_json_line, "One line of JSON, as --receipts files hold.")
      .def_static("from_json", &StepReceipt::from_json, "text"_a, "A validated receipt from one JSON line.")
      .def(
          "as_dict", [](const StepReceipt& r) { return json_loads(r.to_json_line()); },
          nb::sig("def as_dict(self) -> dict[str, typing.Any]"), "The fields as a dict.")
      .def("__repr__", [](const StepReceipt& r) { return "StepReceipt(" + r.to_json_line() + ")"; })
      .def(
          "__eq__", [](const StepReceipt& a, const StepReceipt& b) { return a == b; }, nb::is_operator())
      .def(
          "__ne__", [](const StepReceipt& a, const StepReceipt& b) { return !(a == b); }, nb::is_operator())
      .def("__hash__", [](const StepReceipt& r) { return nb::hash(nb::str(r.to_json_line().c_str())); })
      .def("__getstate__", &StepReceipt::to_json_line)
      .def("__setstate__",
           [](StepReceipt& self, const std::string& state) { new (&self) StepReceipt(StepReceipt::from_json(state)); });
}

// ---- BackendCapabilities and the C++ registry -----------------------------------------------

/// A backend of the C++ registry (built-in or registered from C++).
struct NativeBackend {
  std::string key;
  std::shared_ptr<const plan::TrainingBackend> backend;
};

std::set<ParallelAxis> axis_set(nb::handle axes) {
  std::set<ParallelAxis> out;
  for (nb::handle a : nb::iter(axes)) out.insert(axis_arg(a, false));
  return out;
}

nb::object axes_obj(const std::set<ParallelAxis>& axes) {
  nb::list out;
  for (ParallelAxis a : axes) out.append(axis_obj(a));
  return frozenset_of(out);
}

void bind_backends(nb::module_& m) {
  nb::class_<BackendCapabilities>(m, "BackendCapabilities",
                                  "What a backend executes, rather than merely accepts as flags. mixle adds "
                                  "max_world_size and execution.")
      .def(
          "__init__",
          [](BackendCapabilities* self, const std::string& name, nb::handle axes, nb::handle precisions,
             bool distributed_optimizer, bool reshardable_checkpoint, bool elastic_restart, nb::handle requirements,
             nb::handle incompatible_axis_sets, nb::handle max_world_size, const std::string& execution) {
            BackendCapabilities c;
            c.name = name;
            c.axes = axis_set(axes);
            c.precisions.clear();
            for (nb::handle p : nb::iter(precisions)) c.precisions.insert(require_str(p, "precisions item"));
            c.distributed_optimizer = distributed_optimizer;
            c.reshardable_checkpoint = reshardable_checkpoint;
            c.elastic_restart = elastic_restart;
            for (nb::handle r : nb::iter(requirements)) c.requirements.push_back(require_str(r, "requirements item"));
            for (nb::handle s : nb::iter(incompatible_axis_sets)) c.incompatible_axis_sets.push_back(axis_set(s));
            c.max_world_size = optional_int(max_world_size, "max_world_size", 1);
            c.execution = execution;
            new (self) BackendCapabilities(std::move(c));
          },
          "name"_a, "axes"_a, "precisions"_a = builtin("frozenset")(nb::make_tuple("bf16", "fp32")),
          "distributed_optimizer"_a = false, "reshardable_checkpoint"_a = false, "elastic_restart"_a = false,
          "requirements"_a = nb::tuple(), "incompatible_axis_sets"_a = nb::tuple(), nb::kw_only(),
          "max_world_size"_a = nb::none(), "execution"_a = "",
          nb::sig("def __init__(self, name: str, axes: typing.Iterable[ParallelAxis | str], precisions: "
                  "typing.Iterable[str] = frozenset({'bf16', 'fp32'}), distributed_optimizer: bool = False, "
                  "reshardable_checkpoint: bool = False, elastic_restart: bool = False, requirements: "
                  "typing.Iterable[str] = (), incompatible_axis_sets: typing.Iterable[typing.Iterable[ParallelAxis "
                  "| str]] = (), *, max_world_size: int | None = None, execution: str = '') -> None"))
      .def_ro("name", &BackendCapabilities::name, "Backend name.")
      .def_prop_ro(
          "axes", [](const BackendCapabilities& c) { return axes_obj(c.axes); },
          nb::sig("def axes(self) -> frozenset[ParallelAxis]"), "Axes it runs with size > 1.")
      .def_prop_ro(
          "precisions",
          [](const BackendCapabilities& c) {
            nb::list out;
            for (const auto& p : c.precisions) out.append(p);
            return frozenset_of(out);
          },
          nb::sig("def precisions(self) -> frozenset[str]"), "Supported precisions ('fp32', 'bf16', …).")
      .def_ro("distributed_optimizer", &BackendCapabilities::distributed_optimizer, "Shards optimizer state.")
      .def_ro("reshardable_checkpoint", &BackendCapabilities::reshardable_checkpoint, "Checkpoints reshard.")
      .def_ro("elastic_restart", &BackendCapabilities::elastic_restart, "Restarts with another world size.")
      .def_prop_ro(
          "requirements",
          [](const BackendCapabilities& c) { return as_tuple(nb::cast<nb::list>(nb::cast(c.requirements))); },
          nb::sig("def requirements(self) -> tuple[str, ...]"), "What must be built or installed.")
      .def_prop_ro(
          "incompatible_axis_sets",
          [](const BackendCapabilities& c) {
            nb::list out;
            for (const auto& s : c.incompatible_axis_sets) out.append(axes_obj(s));
            return as_tuple(out);
          },
          nb::sig("def incompatible_axis_sets(self) -> tuple[frozenset[ParallelAxis], ...]"),
          "Axis sets it cannot run all active at once.")
      .def_ro("max_world_size", &BackendCapabilities::max_world_size, "mixle: the largest world it runs, or None.")
      .def_ro("execution", &BackendCapabilities::execution, "mixle: how it executes a plan.")
      .def(
          "validate",
          [](const BackendCapabilities& c, const ParallelPlan& plan, const std::string& precision) {
            try {
              c.validate(plan, precision);
            } catch (const UnrealizedModelPlacement& e) {
              set_planning_error("UnsupportedParallelismError", PyExc_NotImplementedError, e.what());
              throw nb::python_error();
            }
          },
          "plan"_a, nb::kw_only(), "precision"_a = "fp32",
          "UnsupportedParallelismError (a NotImplementedError and an UnrealizedModelPlacementError) for active "
          "axes it does not run, an incompatible active set or a world above max_world_size; ValueError for an "
          "unsupported precision.")
      .def(
          "as_dict", [](const BackendCapabilities& c) { return json_loads(c.to_json()); },
          nb::sig("def as_dict(self) -> dict[str, typing.Any]"), "Sorted lists, plus mixle's fields.")
      .def("to_json", &BackendCapabilities::to_json, "indent"_a = -1, "as_dict() as JSON text.")
      .def("__repr__", [](const BackendCapabilities& c) { return "BackendCapabilities(" + c.to_json() + ")"; })
      .def(
          "__eq__", [](const BackendCapabilities& a, const BackendCapabilities& b) { return a == b; },
          nb::is_operator())
      .def("__hash__", [](const BackendCapabilities& c) { return nb::hash(nb::str(c.to_json().c_str())); });

  nb::class_<NativeBackend>(m, "NativeTrainingBackend",
                            "A backend of mixle's C++ registry (single, gloo, mpi, nccl, lightning_fabric, "
                            "ray_train): its capabilities, which say what mixle runs.")
      .def_ro("name", &NativeBackend::key, "Its registry key.")
      .def_prop_ro(
          "capabilities", [](const NativeBackend& b) { return b.backend->capabilities(); }, "Its capabilities.")
      .def("__repr__",
           [](const NativeBackend& b) { return "NativeTrainingBackend(" + py_repr(nb::cast(b.key)) + ")"; });

  m.def(
      "training_backend_key", [](const std::string& name) { return plan::training_backend_key(name); }, "name"_a,
      "The registry key of a name: stripped, lowercased, '-' → '_'.");
  m.def("native_training_backends", &plan::available_training_backends, "Keys of the C++ registry, sorted.");
  m.def(
      "native_training_backend",
      [](const std::string& name) {
        return NativeBackend{plan::training_backend_key(name), plan::get_training_backend(name)};
      },
      "name"_a, "The C++ registry's backend under `name` (ValueError listing the registered ones).");
}

// ---- attestation ----------------------------------------------------------------------------

nb::dict coordinate_dict(const WorkerTopologyAttestation& a) {
  nb::dict out;
  for (const auto& [axis, index] : a.coordinate) out[axis.c_str()] = index;
  return out;
}

void bind_attestation(nb::module_& m) {
  nb::class_<WorkerTopologyAttestation>(m, "WorkerTopologyAttestation",
                                        "Runtime proof binding one launched rank to one planned mesh coordinate.")
      .def(
          "__init__",
          [](WorkerTopologyAttestation* self, nb::handle rank, nb::handle world_size, nb::handle coordinate) {
            WorkerTopologyAttestation a;
            a.rank = exact_int(rank, "rank", 0);
            a.world_size = exact_int(world_size, "world_size", 1);
            for (nb::handle item : nb::iter(coordinate)) {
              a.coordinate.emplace_back(require_str(item[0], "coordinate axis"),
                                        exact_int(item[1], "coordinate index", 0));
            }
            new (self) WorkerTopologyAttestation(std::move(a));
          },
          "rank"_a, "world_size"_a, "coordinate"_a,
          nb::sig("def __init__(self, rank: int, world_size: int, coordinate: tuple[tuple[str, int], ...]) -> None"))
      .def_ro("rank", &WorkerTopologyAttestation::rank, "The launched rank.")
      .def_ro("world_size", &WorkerTopologyAttestation::world_size, "The launched world size.")
      .def_prop_ro(
          "coordinate",
          [](const WorkerTopologyAttestation& a) {
            nb::list out;
            for (const auto& [axis, index] : a.coordinate) out.append(nb::make_tuple(axis, index));
            return as_tuple(out);
          },
          nb::sig("def coordinate(self) -> tuple[tuple[str, int], ...]"),
          "(axis, index) for dp_replicate, dp_shard, tp, pp, cp, slowest first.")
      .def(
          "as_dict",
          [](const WorkerTopologyAttestation& a) {
            nb::dict out;
            out["rank"] = a.rank;
            out["world_size"] = a.world_size;
            out["coordinate"] = coordinate_dict(a);
            return out;
          },
          nb::sig("def as_dict(self) -> dict[str, typing.Any]"), "{rank, world_size, coordinate: {axis: index}}.")
      .def("to_json", &WorkerTopologyAttestation::to_json, "indent"_a = -1, "as_dict() as JSON text.")
      .def("__repr__",
           [](const WorkerTopologyAttestation& a) {
             nb::list coord;
             for (const auto& [axis, index] : a.coordinate) coord.append(nb::make_tuple(axis, index));
             return repr_of(
                 "WorkerTopologyAttestation",
                 {{"rank", nb::cast(a.rank)}, {"world_size", nb::cast(a.world_size)}, {"coordinate", as_tuple(coord)}});
           })
      .def(
          "__eq__", [](const WorkerTopologyAttestation& a, const WorkerTopologyAttestation& b) { return a == b; },
          nb::is_operator())
      .def("__hash__", [](const WorkerTopologyAttestation& a) { return nb::hash(nb::str(a.to_json().c_str())); });

  m.def(
      "attest_worker_coordinate",
      [](const ParallelPlan& plan, nb::handle actual_world_size, nb::handle rank) {
        return plan::attest_worker_coordinate(plan, exact_int(actual_world_size, "actual_world_size", kAny),
                                              exact_int(rank, "rank", kAny));
      },
      "plan"_a, nb::kw_only(), "actual_world_size"_a, "rank"_a,
      nb::sig("def attest_worker_coordinate(plan: ParallelPlan, *, actual_world_size: int, rank: int) -> "
              "WorkerTopologyAttestation"),
      "Checks the runtime world against the plan (ValueError on a mismatch) and 0 ≤ rank < world, then binds the "
      "rank to its mesh coordinate: rank = (((dpr·DS + dps)·TP + tp)·PP + pp)·CP + cp, cp fastest.");
}

}  // namespace

void bind_contracts(nb::module_& m) {
  bind_parallel_plan(m);
  bind_layout_and_update(m);
  bind_step_receipt(m);
  bind_backends(m);
  bind_attestation(m);
}

}  // namespace mixle::python
