"""init_process_group under TORCH_DIST_INIT_BARRIER=1 (OLMo-core's
launch), a subgroup, a collective, and the backend names the program
reads (tests/recorder_dist_barrier.sh).  argv[1]: the backend asked,
"none" for init_process_group's default."""
import os
import sys

os.environ["TORCH_DIST_INIT_BARRIER"] = "1"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

backend = None if sys.argv[1] == "none" else sys.argv[1]
dist.init_process_group(backend)
print("backend", dist.get_backend(), dist.get_world_size(), dist.get_rank())
g = dist.new_group(list(range(min(2, dist.get_world_size()))))
print("group", dist.get_backend(g))
x = torch.ones(1024, device="cuda")
dist.all_reduce(x)
dist.barrier()
print("done", tuple(x.shape))
