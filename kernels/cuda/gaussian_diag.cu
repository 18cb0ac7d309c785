// gaussian_diag on CUDA: Σ_d h_kd (x_d − m_kd)² added to L (h = −1/(2 var)), and the shifted
// moments Σ r (x − s), Σ r (x − s)². Same operation order as kernels/cpu/families/gaussian_diag.hpp.
#include "kernels/cuda/device.cuh"

namespace mixle::kernels::cuda {
namespace {

template <class T>
struct DiagTerm {
  __device__ T operator()(const PartView<T>& part, int k, const T* x, T l) const {
    const int D = part.dims;
    const T* mean = part.coef + static_cast<std::int64_t>(k) * part.coef_stride;
    const T* neg_half_prec = mean + D;
    for (int d = 0; d < D; ++d) {
      const T t = x[d] - mean[d];
      l += neg_half_prec[d] * t * t;
    }
    return l;
  }
};

/// Entry j < D: Σ r (x_j − s_j); entry D + d: Σ r (x_d − s_d)².
template <class T>
struct DiagMoment {
  int d;
  bool second;
  T shift;
  __device__ DiagMoment(const PartView<T>& part, int k, int j)
      : d(j < part.dims ? j : j - part.dims), second(j >= part.dims),
        shift(part.shift[static_cast<std::int64_t>(k) * part.dims + (j < part.dims ? j : j - part.dims)]) {}
  __device__ T operator()(const T* x, T r) const {
    const T t = x[d] - shift;
    const T rt = r * t;
    return second ? rt * t : rt;
  }
};

}  // namespace

template <class T>
void launch_gaussian_diag_log_density(const PartView<T>& part, const ChunkArgs<T>& c, cudaStream_t s) {
  launch_log_density(part, c, DiagTerm<T>{}, s);
}

template <class T>
void launch_gaussian_diag_accumulate(const PartView<T>& part, const ChunkArgs<T>& c,
                                     const SlotPlan& plan, cudaStream_t s) {
  launch_accumulate<T, DiagMoment<T>>(part, c, plan, s);
}

template void launch_gaussian_diag_log_density<float>(const PartView<float>&, const ChunkArgs<float>&, cudaStream_t);
template void launch_gaussian_diag_log_density<double>(const PartView<double>&, const ChunkArgs<double>&, cudaStream_t);
template void launch_gaussian_diag_accumulate<float>(const PartView<float>&, const ChunkArgs<float>&, const SlotPlan&, cudaStream_t);
template void launch_gaussian_diag_accumulate<double>(const PartView<double>&, const ChunkArgs<double>&, const SlotPlan&, cudaStream_t);

}  // namespace mixle::kernels::cuda
