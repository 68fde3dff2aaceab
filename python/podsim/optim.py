"""torch.optim for podsim's lazy tensors: SGD, Adam, AdamW and their schedules."""
import sys as _sys

from ._podsim.optim import SGD, Adam, AdamW, Optimizer, lr_scheduler  # noqa: F401

_sys.modules[__name__ + ".lr_scheduler"] = lr_scheduler
