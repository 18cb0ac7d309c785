// mixle._core.parallel: the planning layer (include/mixle/plan) for Python. The classes here are
// the public ones of mixle.utils.parallel, with the reference layer's names, keywords and
// defaults (docs/python.md, "mixle.utils.parallel"); that module adds the functions that take
// Python objects (data arrays, estimators) and the registry of Python backends. This file holds
// the shared argument helpers, the enums and the module; the classes are in parallel_placement.cpp
// and parallel_contracts.cpp. Planning is cheap, so nothing here releases the GIL.
#include "parallel.hpp"

#include <mixle/error.hpp>

#include <nanobind/stl/string.h>

#include <cctype>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace mixle::python {

void bind_contracts(nb::module_& m);  // parallel_contracts.cpp

namespace {

const char* const kAxisValues[] = {"dp_replicate", "dp_shard", "tp", "pp", "cp", "ep", "etp"};
const char* const kPayloadValues[] = {
    "gradient", "sufficient_statistic", "parameter", "activation", "kv_block", "token", "message"};
const char* const kCollectiveValues[] = {"none",      "all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                                         "broadcast", "p2p",        "custom"};
const char* const kStateLayoutValues[] = {"replicated", "sharded", "pipeline_local", "expert_local", "offloaded"};

// The enum classes live as long as the interpreter (module state would be tidier, but the
// classes are needed by free functions that have no module at hand).
PyObject* g_enums[4] = {nullptr, nullptr, nullptr, nullptr};

/// A StrEnum named `name` whose members are the upper-cased values (ParallelAxis.DP_REPLICATE =
/// "dp_replicate"). Python < 3.11 has no enum.StrEnum: a str-mixin Enum whose str() is the value.
nb::object make_str_enum(const char* name, std::span<const char* const> values, const char* doc) {
  nb::module_ enum_module = nb::module_::import_("enum");
  nb::list members;
  for (const char* value : values) {
    std::string upper(value);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    members.append(nb::make_tuple(upper, value));
  }
  const bool has_str_enum = nb::hasattr(enum_module, "StrEnum");
  nb::object base = has_str_enum ? enum_module.attr("StrEnum") : enum_module.attr("Enum");
  nb::object str_type = nb::module_::import_("builtins").attr("str");
  nb::object cls = has_str_enum ? base(name, members, "module"_a = "mixle.utils.parallel")
                                : base(name, members, "module"_a = "mixle.utils.parallel", "type"_a = str_type);
  if (!has_str_enum) {
    cls.attr("__str__") = str_type.attr("__str__");
    cls.attr("__format__") = str_type.attr("__format__");
  }
  cls.attr("__doc__") = doc;
  return cls;
}

std::span<const char* const> enum_values(EnumKind kind) {
  switch (kind) {
    case EnumKind::parallel_axis: return kAxisValues;
    case EnumKind::payload: return kPayloadValues;
    case EnumKind::collective: return kCollectiveValues;
    case EnumKind::state_layout: return kStateLayoutValues;
  }
  return {};
}

}  // namespace

// ---- errors ---------------------------------------------------------------------------------

void set_planning_error(const char* name, PyObject* fallback, const char* message) noexcept {
  try {
    nb::object cls = nb::module_::import_("mixle.utils._errors").attr(name);
    // UnrealizedModelPlacementError(plan, message): the engine's errors carry no plan object.
    nb::object error = nb::cast<bool>(cls.attr("takes_plan")) ? cls(nb::none(), message) : cls(message);
    PyErr_SetObject(cls.ptr(), error.ptr());
  } catch (const std::exception&) {
    PyErr_Clear();
    PyErr_SetString(fallback, message);
  }
}

// ---- argument helpers -----------------------------------------------------------------------

std::int64_t exact_int(nb::handle value, const char* name, std::int64_t min, NonInteger non_integer) {
  const auto refuse = [&](const std::string& why) {
    const std::string message = std::string(name) + "=" + py_repr(value) + " " + why;
    if (non_integer == NonInteger::type_error) throw nb::type_error(message.c_str());
    throw InvalidInput(message);
  };
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
    const bool bounded = min > std::numeric_limits<std::int64_t>::min();
    refuse("must be an exact integer; accepted: an int (not bool or float)" +
           (bounded ? " ≥ " + std::to_string(min) : std::string()));
  }
  nb::object index = nb::steal(PyNumber_Index(value.ptr()));
  if (!index.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) throw InvalidInput(std::string(name) + "=" + py_repr(value) + " does not fit 64 bits");
  if (v < min) {
    throw InvalidInput(std::string(name) + "=" + std::to_string(v) + " is out of range; accepted: an integer ≥ " +
                       std::to_string(min));
  }
  return v;
}

std::optional<std::int64_t> optional_int(nb::handle value, const char* name, std::int64_t min, NonInteger non_integer) {
  if (value.is_none()) return std::nullopt;
  return exact_int(value, name, min, non_integer);
}

std::optional<std::uint64_t> optional_bytes(nb::handle value, const char* name) {
  if (value.is_none()) return std::nullopt;
  return static_cast<std::uint64_t>(exact_int(value, name, 1));
}

std::optional<std::string> optional_precision(nb::handle value) {
  if (value.is_none()) return std::nullopt;
  if (!nb::isinstance<nb::str>(value)) {
    throw nb::type_error(("precision=" + py_repr(value) + " must be a str such as 'float32' or None").c_str());
  }
  return plan::precision_name(nb::cast<std::string>(value));
}

nb::object json_loads(const std::string& text) { return nb::module_::import_("json").attr("loads")(text); }

std::string json_dumps(nb::handle value) {
  nb::object str_type = nb::module_::import_("builtins").attr("str");
  return nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(value, "default"_a = str_type));
}

nb::tuple as_tuple(const nb::list& items) { return nb::steal<nb::tuple>(PySequence_Tuple(items.ptr())); }

std::string py_repr(nb::handle value) { return nb::cast<std::string>(nb::repr(value)); }

std::string repr_of(const char* type, std::initializer_list<std::pair<const char*, nb::object>> fields) {
  std::string out = std::string(type) + "(";
  bool first = true;
  for (const auto& [name, value] : fields) {
    out += (first ? "" : ", ") + std::string(name) + "=" + py_repr(value);
    first = false;
  }
  return out + ")";
}

// ---- enums ----------------------------------------------------------------------------------

nb::object enum_class(EnumKind kind) { return nb::borrow(g_enums[static_cast<int>(kind)]); }

nb::object enum_member(EnumKind kind, const char* name) { return enum_class(kind)(name); }

plan::ParallelAxis axis_arg(nb::handle value, bool strict) {
  if (nb::isinstance(value, enum_class(EnumKind::parallel_axis))) {
    return plan::axis_from_name(nb::cast<std::string>(value.attr("value")));
  }
  if (strict || !nb::isinstance<nb::str>(value)) {
    throw nb::type_error(
        ("axis " + py_repr(value) + " must be a ParallelAxis" + (strict ? "" : " or its name")).c_str());
  }
  return plan::axis_from_name(nb::cast<std::string>(value));
}

void bind_enums(nb::module_& m) {
  const std::pair<EnumKind, std::pair<const char*, const char*>> enums[] = {
      {EnumKind::parallel_axis,
       {"ParallelAxis",
        "Named mesh dimensions. dp_replicate, dp_shard, tp, pp and cp multiply into the world size; ep and etp "
        "are groups carved out of existing ranks."}},
      {EnumKind::payload, {"PayloadKind", "Value communicated when an update is distributed."}},
      {EnumKind::collective, {"CollectiveKind", "Collective or point-to-point operation required by an update."}},
      {EnumKind::state_layout, {"StateLayout", "Physical ownership of mutable training state."}},
  };
  for (const auto& [kind, names] : enums) {
    nb::object cls = make_str_enum(names.first, enum_values(kind), names.second);
    g_enums[static_cast<int>(kind)] = cls.inc_ref().ptr();
    m.attr(names.first) = cls;
  }
}

void bind_parallel(nb::module_& parent) {
  nb::module_ m =
      parent.def_submodule("parallel",
                           "The planning layer (mixle::plan). Import it as mixle.utils.parallel, which adds plan(), "
                           "model_sharding_plan() and the training-backend registry for Python objects.");
  bind_enums(m);
  bind_placement(m);
  bind_contracts(m);
  m.def(
      "_raise_engine_error",
      [](const std::string& kind, const std::string& message) {
        if (kind == "unrealized_model_placement") throw UnrealizedModelPlacement(message);
        if (kind == "encoded_data_control_conflict") throw EncodedDataControlConflict(message);
        throw InvalidInput("_raise_engine_error: kind='" + kind +
                           "'; accepted: unrealized_model_placement, encoded_data_control_conflict");
      },
      "kind"_a, "message"_a,
      "Test hook: throws the engine's error of that kind, so that its translation to Python can be checked.");
}

}  // namespace mixle::python
