#include "host/data/csv_cache.hpp"

#include "host/data/readers.hpp"

#include <mixle/error.hpp>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace mixle::host {
namespace {

using Json = nlohmann::ordered_json;

/// What identifies the CSV's content without reading it: where it is, its size and its
/// modification time (nanoseconds), and the element type it is converted to.
Json identity(const std::string& csv, DType dtype) {
  struct stat st {};
  if (::stat(csv.c_str(), &st) != 0) throw InvalidInput("cannot open " + csv + ": no such file");
  Json j;
  j["format"] = "mixle-csv-cache";
  j["version"] = 1;
  j["csv"] = std::filesystem::absolute(csv).lexically_normal().string();
  j["size"] = static_cast<std::uint64_t>(st.st_size);
  j["mtime_ns"] = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  j["dtype"] = dtype_name(dtype);
  return j;
}

/// The record beside `cache`, or null when it is missing or unreadable.
Json read_record(const std::string& record) {
  std::ifstream in(record);
  if (!in) return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

CsvCache ensure_csv_cache(const std::string& csv, const std::string& cache, const ReadOptions& options) {
  if (lower_extension(cache) != ".npy")
    throw UsageError("--csv-cache \"" + cache + "\": the cache is a .npy file; give a name ending in .npy");
  const std::string record = cache + ".source";
  const Json now = identity(csv, options.csv_dtype);
  const Json kept = read_record(record);
  if (kept.is_object() && std::filesystem::exists(cache)) {
    const DataInfo info = probe_data(cache, ReadOptions{});  // a .npy name (checked above): read as .npy
    Json expected = now;  // the CSV as it is now, converted into a cache of the shape found
    expected["rows"] = info.rows;
    expected["cols"] = info.cols;
    if (kept == expected) return {cache, false, info.rows, info.cols};
  }
  ReadOptions whole;
  whole.format = DataFormat::csv;
  whole.csv_dtype = options.csv_dtype;
  const Dataset rows = read_data(csv, whole);
  if (rows.dtype() == DType::f32)
    write_matrix(cache, rows.as<float>(), rows.rows(), rows.cols(), DataFormat::npy);
  else
    write_matrix(cache, rows.as<double>(), rows.rows(), rows.cols(), DataFormat::npy);
  // A CSV changed while it was read may have given rows of either version: no record, so the
  // next run converts again.
  if (identity(csv, options.csv_dtype) != now) return {cache, true, rows.rows(), rows.cols()};
  Json written = now;
  written["rows"] = rows.rows();
  written["cols"] = rows.cols();
  write_file_atomic(record, written.dump() + "\n");
  return {cache, true, rows.rows(), rows.cols()};
}

}  // namespace mixle::host
