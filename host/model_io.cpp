// Model JSON: {"format":"mixle-model","version":1,"weights":[K],"parts":[…]} (docs/formats.md).
// Arrays are nested as their shapes say (mean K×D, cov K×D×D, prob K×V or K×D×V, …).
#include "plan/json_fields.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>
#include <mixle/family.hpp>
#include <mixle/model.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <sstream>

namespace mixle {
namespace {

using json = nlohmann::ordered_json;  // keeps "format" and "version" first in files

/// Model files stay readable: objects one key per line, arrays of numbers on one line,
/// arrays of arrays one row per line.
void write_pretty(const json& j, std::string& out, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (j.is_object()) {
    out += "{\n";
    std::size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      out += pad + "  " + json(it.key()).dump() + ": ";
      write_pretty(it.value(), out, indent + 2);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += pad + "}";
  } else if (j.is_array() && !j.empty() && (j[0].is_array() || j[0].is_object())) {
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
      out += pad + "  ";
      write_pretty(j[i], out, indent + 2);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += pad + "]";
  } else {
    out += j.dump();
  }
}

/// Flattens a nested array of numbers whose shape must be `shape`; names `where.field` on error.
std::vector<double> flatten(const json& j, const std::vector<std::size_t>& shape, const std::string& where,
                            const char* field) {
  std::vector<double> out;
  std::string dims;
  for (auto s : shape) dims += (dims.empty() ? "" : "×") + std::to_string(s);
  auto fail = [&](const std::string& why) {
    throw InvalidInput(where + ": \"" + field + "\" " + why + "; expected a nested array of numbers of shape " + dims);
  };
  std::function<void(const json&, std::size_t)> walk = [&](const json& v, std::size_t depth) {
    if (depth == shape.size()) {
      if (!v.is_number()) fail("holds a non-number (" + v.dump() + ")");
      out.push_back(v.get<double>());
      return;
    }
    if (!v.is_array()) fail("is not an array at depth " + std::to_string(depth));
    if (v.size() != shape[depth]) fail("has length " + std::to_string(v.size()) + " at depth " + std::to_string(depth));
    for (const auto& e : v) walk(e, depth + 1);
  };
  walk(j, 0);
  return out;
}

json nest(const std::vector<double>& flat, const std::vector<std::size_t>& shape) {
  std::function<json(std::size_t, std::size_t&)> build = [&](std::size_t depth, std::size_t& i) {
    json a = json::array();
    for (std::size_t n = 0; n < shape[depth]; ++n) {
      if (depth + 1 == shape.size())
        a.push_back(flat[i++]);
      else
        a.push_back(build(depth + 1, i));
    }
    return a;
  };
  std::size_t i = 0;
  return build(0, i);
}

/// The nested shape of one parameter array in a model file: K leading, then the shape per
/// component (a categorical part over one column is K×V, over several K×D×V).
std::vector<std::size_t> file_shape(const ParamDescriptor& param, const Part& p, std::size_t K) {
  switch (param.shape) {
    case ParamShape::per_component: return {K};
    case ParamShape::per_column: return {K, p.dims()};
    case ParamShape::per_column_pair: return {K, p.dims(), p.dims()};
    case ParamShape::per_category:
      if (p.dims() == 1) return {K, p.categories};
      return {K, p.dims(), p.categories};
  }
  return {};
}

}  // namespace

std::string model_to_json(const Model& model, int indent) {
  const std::size_t K = model.weights.size();
  json j;
  j["format"] = "mixle-model";
  j["version"] = 1;
  j["weights"] = model.weights;
  json parts = json::array();
  for (const Part& p : model.parts) {
    json jp;
    jp["family"] = family_name(p.family);
    jp["columns"] = {p.col_begin, p.col_end};
    const FamilyDescriptor& family = family_descriptor(p.family);
    if (family.categories) jp["categories"] = p.categories;
    for (const ParamDescriptor& param : family.params) jp[param.name] = nest(p.*param.values, file_shape(param, p, K));
    parts.push_back(std::move(jp));
  }
  j["parts"] = std::move(parts);
  if (indent < 0) return j.dump() + "\n";
  std::string out;
  write_pretty(j, out, 0);
  return out + "\n";
}

Model model_from_json(const std::string& text, const std::string& source) {
  plan::detail::refuse_nul_bytes(text, source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // syntax, or a number beyond double's range (out_of_range)
    throw InvalidInput(source + ": not valid JSON: " + e.what());
  }
  auto need = [&](const json& obj, const char* key, const std::string& where) -> const json& {
    if (!obj.is_object() || !obj.contains(key)) throw InvalidInput(where + ": missing field \"" + key + "\"");
    return obj.at(key);
  };
  if (!j.is_object()) throw InvalidInput(source + ": a model file must be a JSON object");
  const json& format = need(j, "format", source);
  if (format != "mixle-model")
    throw InvalidInput(source + ": \"format\" is " + format.dump() + "; expected \"mixle-model\"");
  const json& version = need(j, "version", source);
  if (version != 1) throw InvalidInput(source + ": \"version\" is " + version.dump() + "; this mixle reads version 1");
  const json& jw = need(j, "weights", source);
  if (!jw.is_array() || jw.empty()) throw InvalidInput(source + ": \"weights\" must be a non-empty array of K numbers");
  Model model;
  model.weights = flatten(jw, {jw.size()}, source, "weights");
  const std::size_t K = model.weights.size();
  const json& jparts = need(j, "parts", source);
  if (!jparts.is_array()) throw InvalidInput(source + ": \"parts\" must be an array");
  for (std::size_t i = 0; i < jparts.size(); ++i) {
    const json& jp = jparts[i];
    const std::string where = source + ": parts[" + std::to_string(i) + "]";
    Part p;
    const json& fam = need(jp, "family", where);
    if (!fam.is_string()) throw InvalidInput(where + ": \"family\" must be a string");
    try {
      p.family = family_from_name(fam.get<std::string>());
    } catch (const InvalidInput& e) {
      throw InvalidInput(where + ": " + e.what());
    }
    const json& cols = need(jp, "columns", where);
    if (!cols.is_array() || cols.size() != 2 || !cols[0].is_number_unsigned() || !cols[1].is_number_unsigned())
      throw InvalidInput(where + ": \"columns\" must be [start, stop] with non-negative integers");
    p.col_begin = cols[0].get<std::size_t>();
    p.col_end = cols[1].get<std::size_t>();
    if (p.col_end <= p.col_begin)
      throw InvalidInput(where + ": \"columns\" [" + std::to_string(p.col_begin) + ", " + std::to_string(p.col_end) +
                         ") is empty; stop must exceed start");
    const FamilyDescriptor& family = family_descriptor(p.family);
    if (family.categories) {
      const json& v = need(jp, "categories", where);
      if (!v.is_number_unsigned() || v.get<std::size_t>() < 1)
        throw InvalidInput(where + ": \"categories\" must be an integer ≥ 1");
      p.categories = v.get<std::size_t>();
    }
    for (const ParamDescriptor& param : family.params)
      p.*param.values = flatten(need(jp, param.name, where), file_shape(param, p, K), where, param.name);
    model.parts.push_back(std::move(p));
  }
  try {
    validate_model(model);
  } catch (const InvalidInput& e) {
    std::string msg = e.what();
    if (msg.rfind("model:", 0) == 0) msg = msg.substr(6);
    throw InvalidInput(source + ":" + msg);
  }
  return model;
}

Model load_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(path + ": cannot open model file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return model_from_json(ss.str(), path);
}

void save_model(const Model& model, const std::string& path) { write_file_atomic(path, model_to_json(model)); }

}  // namespace mixle
