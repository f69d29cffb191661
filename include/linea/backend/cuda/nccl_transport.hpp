// linea/backend/cuda/nccl_transport.hpp — context parallelism over GPUs: the caller's NCCL communicator as the
// transport of linea::context_parallel (segments/context_parallel.hpp). Needs nccl.h and linking libnccl
// (the CUDA toolkit or the nvidia-nccl wheel ships both); linea itself stays header-only.
//
//   ncclComm_t comm = ...;                                   // one rank per GPU, made by the caller
//   linea::cp::nccl_transport t(comm, stream);
//   linea::context_parallel<linea::gated_delta, linea::read::identity, linea::backend::cuda>(shard, t, {.stream = stream});
//
// The exchange is two ncclAllGather calls on the caller's communicator and stream (the ranks' transitions and
// state contributions); nothing waits for the device. LINEA_HAS_NCCL is 1 where nccl.h was found.
#pragma once
#if __has_include(<nccl.h>)
#include <nccl.h>
#define LINEA_HAS_NCCL 1

#include <string>

#include "../../core/error.hpp"
#include "../../segments/context_parallel.hpp"

namespace linea::cp {

inline void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw error(std::string("NCCL: ") + what + " failed: " + ncclGetErrorString(r));
}

class nccl_transport final : public transport {
 public:
  nccl_transport(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {
    nccl_check(ncclCommUserRank(comm, &rank_), "ncclCommUserRank");
    nccl_check(ncclCommCount(comm, &size_), "ncclCommCount");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allgather(const void* send, void* recv, std::size_t bytes) override {
    nccl_check(ncclAllGather(send, recv, bytes, ncclChar, comm_, stream_), "ncclAllGather");
  }

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_ = 0, size_ = 1;
};

}  // namespace linea::cp
#else
#define LINEA_HAS_NCCL 0
#endif
