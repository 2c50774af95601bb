"""Where this process stands in a job: its rank and the world size, from the framework that
set up a process group, and the data-loader worker it is, from the framework whose loader
started it. It imports no framework, only looks at those already imported. The lowest of the
dataset modules: the streams ask through this module (``_layout._distributed()``), so that
one place answers them all.
"""

import sys
from typing import Optional, Tuple


def _distributed() -> Tuple[int, int]:
    """This process's rank and the world size, from a framework that is imported and
    initialised (PyTorch's ``torch.distributed``, OneFlow's ``oneflow.env``); else 0 of 1."""
    torch = sys.modules.get("torch")
    if torch is not None:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    oneflow = sys.modules.get("oneflow")
    if oneflow is not None:
        env = getattr(oneflow, "env", None)
        if env is not None:
            try:
                return int(env.get_rank()), int(env.get_world_size())
            except Exception:  # an environment not set up: one process
                pass
    return 0, 1


def _loader_info() -> Optional[Tuple[int, int, int]]:
    """This data-loader worker, their count and the pass they serve (the seed the loader drew
    for the pass, which all its workers share: their own seed less their number), from the
    framework whose loader started the process; None outside one."""
    for name in ("torch.utils.data", "oneflow.utils.data"):
        module = sys.modules.get(name)
        info = module.get_worker_info() if module is not None else None
        if info is not None:
            return int(info.id), int(info.num_workers), int(info.seed) - int(info.id)
    return None


def _loader_info_count() -> Optional[int]:
    """The worker count of the loader whose worker this process is; None outside one."""
    info = _loader_info()
    return None if info is None else info[1]


def _loader_worker() -> Tuple[int, int]:
    """This data-loader worker and their count; 0 of 1 outside a loader."""
    info = _loader_info()
    return (info[0], info[1]) if info is not None else (0, 1)

