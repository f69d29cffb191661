"""Per-piece host costs of a torch CUDA call (the pieces python/src/fla_call.hpp pays), timeit min of 7."""
import timeit
import torch

q = torch.randn(1, 1, 4, 64, device="cuda")
idx = torch.zeros(1, dtype=torch.int32, device="cuda")
raw = torch._C._cuda_getCurrentRawStream
g = dict(q=q, torch=torch, raw=raw, f32=torch.float32, bf=torch.bfloat16, shape=(1, 1, 4, 64), dev=q.device)
for s in ["raw(0)", "torch.cuda.current_stream().cuda_stream", "torch.cuda.current_stream(0).cuda_stream",
          "q.new_empty(shape)", "q.new_empty(shape, dtype=f32)", "q.new_empty(shape, dtype=bf)",
          "torch.empty(shape, dtype=f32, device=dev)", "torch.empty_like(q)",
          "q.dtype", "q.is_neg()", "q.data_ptr()", "q.shape", "q.stride()", "q.is_contiguous()", "q.get_device()",
          "q.requires_grad", "torch.is_grad_enabled()", "q.__dlpack__()", "q.__dlpack__(stream=raw(0))"]:
    n = 10000
    try:
        t = min(timeit.repeat(s, globals=g, number=n, repeat=7)) / n * 1e9
        print(f"| `{s}` | {t:.0f} ns |")
    except Exception as e:  # noqa: BLE001
        print(f"| `{s}` | {type(e).__name__}: {e} |")
