// Shared helpers of the planning-layer bindings (mixle._core.parallel; docs/python.md,
// "mixle.utils.parallel"). The C++ layer refuses booleans and floating-point sizes at compile
// time; Python values arrive untyped, so these helpers apply the same rules at run time.
#pragma once

#include <mixle/plan.hpp>

#include <nanobind/nanobind.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

namespace mixle::python {

/// Binds the planning layer into `m` (as its submodule "parallel").
void bind_parallel(nanobind::module_& m);
/// Part of bind_parallel: DeviceSpec, Resources, ModelSummary, Placement, plan, ModelShard.
void bind_placement(nanobind::module_& m);

/// Raises the Python exception class `name` of mixle.utils._errors with `message` (the
/// exception translator's target for UnrealizedModelPlacement and EncodedDataControlConflict);
/// `fallback` when that module cannot be imported.
void set_planning_error(const char* name, PyObject* fallback, const char* message) noexcept;

/// What a value that is not an integer at all raises: TypeError (field types) or ValueError
/// (sizes, where the reference says "must be an exact positive integer").
enum class NonInteger { type_error, value_error };

/// `value` as an exact integer ≥ `min`: Python ints and numpy integers; bool and floats refused
/// (even 2.0). `name` names the field in the message.
std::int64_t exact_int(nanobind::handle value, const char* name, std::int64_t min,
                       NonInteger non_integer = NonInteger::value_error);
/// None → nullopt, else exact_int.
std::optional<std::int64_t> optional_int(nanobind::handle value, const char* name, std::int64_t min,
                                         NonInteger non_integer = NonInteger::value_error);
/// None → nullopt, else an exact integer ≥ 1 as bytes.
std::optional<std::uint64_t> optional_bytes(nanobind::handle value, const char* name);
/// None → nullopt, else the canonical precision name ("fp32" → "float32"); str required.
std::optional<std::string> optional_precision(nanobind::handle value);

/// The Python StrEnum classes made from the C++ name tables.
enum class EnumKind { parallel_axis, payload, collective, state_layout };
nanobind::object enum_class(EnumKind kind);
/// The member of `kind` whose value is `name`.
nanobind::object enum_member(EnumKind kind, const char* name);
/// Creates the four enum classes in `m` (called first by bind_parallel).
void bind_enums(nanobind::module_& m);

/// An axis given as a ParallelAxis member, or (unless `strict`) its name.
plan::ParallelAxis axis_arg(nanobind::handle value, bool strict);

/// json.loads(text) and json.dumps(value) (non-JSON values written as str()).
nanobind::object json_loads(const std::string& text);
std::string json_dumps(nanobind::handle value);
/// A list as a tuple.
nanobind::tuple as_tuple(const nanobind::list& items);
/// repr() of a value, as text.
std::string py_repr(nanobind::handle value);
/// "Type(field=repr, …)".
std::string repr_of(const char* type, std::initializer_list<std::pair<const char*, nanobind::object>> fields);

/// Pickling and hashing through a class's JSON: __getstate__ = to_json(), __setstate__ =
/// from_json(state), __hash__ = hash of the JSON text.
template <class T, class Class>
void def_json_value_protocol(Class& cls) {
  cls.def("__getstate__", [](const T& self) { return self.to_json(); })
      .def("__setstate__", [](T& self, const std::string& state) { new (&self) T(T::from_json(state)); })
      .def("__hash__", [](const T& self) { return nanobind::hash(nanobind::str(self.to_json().c_str())); })
      .def(
          "__eq__", [](const T& a, const T& b) { return a == b; }, nanobind::is_operator())
      .def(
          "__ne__", [](const T& a, const T& b) { return !(a == b); }, nanobind::is_operator());
}

}  // namespace mixle::python
