"""podsim: lazy tensors on simulated TPU pods, the host CPU and OpenCL GPUs.

The C++ runtime in Python's idioms, as PyTorch/XLA offers it: tensor ops record a graph
that ``podsim.mark_step()`` compiles (once, then from the cache) and runs asynchronously
on ``podsim.device()`` (PODSIM_DEVICE picks CPU, SIM or OPENCL); reading a value runs
what it needs.
"""
import importlib as _importlib
import sys as _sys

from ._podsim import *  # noqa: F401,F403 (the module's public names)
from ._podsim import Error, Tensor, data, debug, distributed, hlo, profile, topology  # noqa: F401

# The Python modules podsim.nn and podsim.optim build on the extension's submodules of
# the same names, which the star import brought in: import the files over them.
nn = _importlib.import_module(".nn", __name__)
optim = _importlib.import_module(".optim", __name__)

# `import podsim.debug` (and podsim.nn.functional, ...) as well as attribute access.
for _name in ("data", "debug", "distributed", "hlo", "profile", "topology"):
    _sys.modules[f"{__name__}.{_name}"] = globals()[_name]
_sys.modules[__name__ + ".nn.functional"] = nn.functional
_sys.modules[__name__ + ".nn.utils"] = nn.utils
