// categorical on CUDA: Σ_d log θ_{k,d,x_d} added to L (a gather), and the counts Σ r [x_d = v]
// (one thread per (k, d, v) entry: no scatter, no atomics). Codes outside [0, V), and NaN —
// which the engine's validation refuses — give a NaN log-density here (the row is reported as
// a NaN row) instead of an out-of-bounds read. The range is tested on the float value before
// any conversion: a GPU converts NaN to integer 0 (category 0) and saturates large values, so
// converting first would turn a NaN code into a valid one.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

template <class T>
struct CategoricalTerm {
  __device__ T operator()(const PartView<T>& part, int k, const T* x, T l) const {
    const int D = part.dims, V = part.categories;
    const T* logp = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
    for (int d = 0; d < D; ++d) {
      const T code = x[d];
      l += (code >= T(0) && code < static_cast<T>(V)) ? logp[d * V + static_cast<int>(code)] : T(NAN);
    }
    return l;
  }
};

template <class T>
struct CategoricalCount {
  int d, v;
  __device__ CategoricalCount(const PartView<T>& part, int, int j) : d(j / part.categories), v(j % part.categories) {}
  /// [x_d = v] for the truncated code, tested in floating point (no conversion of NaN).
  __device__ T operator()(const T* x, T r) const {
    return x[d] >= static_cast<T>(v) && x[d] < static_cast<T>(v + 1) ? r : T(0);
  }
};

}  // namespace

template <class T>
void launch_categorical_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  launch_log_density(part, c, CategoricalTerm<T>{}, s);
}

template <class T>
void launch_categorical_accumulate(const PartView<T>& part, const ChunkArgs<T>& c, const SlotPlan& plan,
                                   cudaStream_t s) {
  launch_accumulate<T, CategoricalCount<T>>(part, c, plan, s);
}

template void launch_categorical_log_density<float>(const PartView<float>&, const ChunkArgs<float>&, cudaStream_t);
template void launch_categorical_log_density<double>(const PartView<double>&, const ChunkArgs<double>&, cudaStream_t);
template void launch_categorical_accumulate<float>(const PartView<float>&, const ChunkArgs<float>&, const SlotPlan&,
                                                   cudaStream_t);
template void launch_categorical_accumulate<double>(const PartView<double>&, const ChunkArgs<double>&, const SlotPlan&,
                                                    cudaStream_t);

}  // namespace mixle::kernels::cuda
