// The encoded-data backend registry (engine/backend_registry.hpp).
#include "engine/backend_registry.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

namespace mixle::engine {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, BackendEntry> by_name;  // canonical name → entry
  std::map<std::string, std::string> names;     // every name and alias → canonical name
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_backend(BackendEntry entry, const std::vector<std::string>& aliases, bool override) {
  if (entry.name.empty() || !entry.factory)
    throw InvalidInput("register_encoded_data_backend: a backend needs a non-empty name and a factory");
  entry.name = lower(entry.name);
  std::vector<std::string> all{entry.name};
  for (const auto& a : aliases) all.push_back(lower(a));
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& n : all) {
    const auto it = r.names.find(n);
    if (it != r.names.end() && !override && r.by_name.at(it->second).factory != entry.factory)
      throw InvalidInput("encoded-data backend name \"" + n + "\" is already registered by backend \"" + it->second +
                         "\"; pass override=true to replace it");
  }
  for (const auto& n : all) r.names[n] = entry.name;
  r.by_name[entry.name] = std::move(entry);
}

std::optional<BackendEntry> find_backend(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.names.find(lower(name));
  if (it == r.names.end()) return std::nullopt;
  return r.by_name.at(it->second);
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [name, entry] : r.by_name) out.push_back(name);
  return out;
}

std::string registered_names_text() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::string known;
  for (const auto& [n, canonical] : r.names) known += (known.empty() ? "" : ", ") + n;
  return known;
}

}  // namespace mixle::engine
