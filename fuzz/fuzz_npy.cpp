// .npy files: probe_data, then read_data of all rows and of a row range, every value touched.
// Bad files must throw mixle::Error (InvalidInput); anything else — a crash, a sanitizer report,
// another exception — is a bug.
#include "fuzz/input_file.hpp"

#include <mixle/data.hpp>
#include <mixle/error.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = mixle::fuzz::input_file(data, size, "input.npy");
  try {
    const mixle::DataInfo info = mixle::probe_data(path);
    mixle::ReadOptions o;
    const mixle::Dataset all = mixle::read_data(path, o);
    double sum = 0.0;
    for (std::size_t r = 0; r < all.rows(); ++r)
      for (std::size_t c = 0; c < all.cols(); ++c) sum += all.at(r, c);
    if (info.rows > 1) {
      o.row_begin = 1;
      o.row_end = info.rows;
      (void)mixle::read_data(path, o);
    }
    (void)sum;
  } catch (const mixle::Error&) {}
  return 0;
}
