#include <linea/backend/cuda/backward/phases.hpp>
namespace bwd = linea::cuda_detail::bwd;
template __global__ void bwd::chunk_grad_kernel<true, true, linea::bf16, false, bwd::precision::tf32x3>(const bwd::work, const linea::view<linea::bf16, 4>);
template __global__ void bwd::chunk_grad_kernel<true, false, linea::bf16, false, bwd::precision::tf32x3>(const bwd::work, const linea::view<linea::bf16, 4>);
template __global__ void bwd::chunk_grad_kernel<false, true, linea::bf16, false, bwd::precision::tf32x3>(const bwd::work, const linea::view<linea::bf16, 4>);
template __global__ void bwd::chunk_grad_kernel<false, false, linea::bf16, false, bwd::precision::tf32x3>(const bwd::work, const linea::view<linea::bf16, 4>);
