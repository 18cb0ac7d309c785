// CSV files: probe_data, then read_data as float64 and as float32, and of a row range.
// Bad files must throw mixle::Error naming the row and column; anything else is a bug.
#include "fuzz/input_file.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = mixle::fuzz::input_file(data, size, "input.csv");
  try {
    mixle::ReadOptions o;
    const mixle::DataInfo info = mixle::probe_data(path, o);
    (void)mixle::read_data(path, o);
    o.csv_dtype = mixle::DType::f32;
    (void)mixle::read_data(path, o);
    if (info.rows > 2) {
      o.row_begin = 1;
      o.row_end = info.rows - 1;
      (void)mixle::read_data(path, o);
    }
  } catch (const mixle::Error&) {}
  return 0;
}
