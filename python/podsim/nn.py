"""torch.nn for podsim's lazy tensors.

``Module`` is the base class of models written in Python, as ``torch.nn.Module`` is:
assigning a parameter (``Parameter(t)``, or any leaf tensor that requires grad), a
submodule or a registered buffer to an attribute registers it under torch's dotted
names. The layers (``Linear``, ``LayerNorm``, ``MultiheadAttention``, the losses, ...)
are podsim's C++ modules with torch's signatures, names and initializations, and sit in
a ``Module`` as children like any other.
"""
from collections import OrderedDict

from . import _podsim
from ._podsim import Tensor, no_grad
from ._podsim.nn import (  # noqa: F401 (re-exported)
    AvgPool2d, BatchNorm2d, Conv2d, CrossEntropyLoss, Dropout, Embedding, Flatten, GELU, LayerNorm, Linear, MaxPool2d,
    MSELoss, MultiheadAttention, NLLLoss, ReLU, RMSNorm, SiLU, Softmax, Tanh, functional, utils)

_CModule = _podsim.nn._CModule


def Parameter(data, requires_grad=True):
    """A leaf tensor of data's value that requires grad (torch.nn.Parameter)."""
    return data.detach().requires_grad_(requires_grad)


def _is_module(value):
    return isinstance(value, (Module, _CModule))


class Module:
    """Base class of models written in Python (torch.nn.Module)."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call Module.__init__() before assigning attributes")
        if isinstance(value, Tensor) and name in self._buffers:
            self._buffers[name] = value
            return
        self._forget(name)
        if isinstance(value, Tensor) and value.is_leaf and value.requires_grad:
            self._parameters[name] = value
        elif _is_module(value):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        for table in (self._parameters, self._buffers, self._modules, self.__dict__):
            table.pop(name, None)

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            values = self.__dict__.get(table)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"'{type(self).__name__}' has no attribute '{name}'")

    def __delattr__(self, name):
        self._forget(name)

    def register_buffer(self, name, tensor):
        self._forget(name)
        self._buffers[name] = tensor

    def register_parameter(self, name, tensor):
        self._forget(name)
        self._parameters[name] = tensor

    def add_module(self, name, module):
        self._forget(name)
        self._modules[name] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- the module tree -------------------------------------------------------------
    def named_children(self):
        return iter(self._modules.items())

    def children(self):
        return iter(self._modules.values())

    def _named_tensors(self, kind, prefix, recurse):
        yield from ((prefix + name, t) for name, t in getattr(self, kind).items())
        if not recurse:
            return
        for name, child in self._modules.items():
            getter = child.named_parameters if kind == "_parameters" else child.named_buffers
            yield from getter(prefix=prefix + name + ".")

    def named_parameters(self, prefix="", recurse=True):
        return list(self._named_tensors("_parameters", prefix, recurse))

    def parameters(self, recurse=True):
        return [t for _, t in self.named_parameters(recurse=recurse)]

    def named_buffers(self, prefix="", recurse=True):
        return list(self._named_tensors("_buffers", prefix, recurse))

    def buffers(self, recurse=True):
        return [t for _, t in self.named_buffers(recurse=recurse)]

    def state_dict(self):
        """Parameters then buffers of each module, depth first (torch's order)."""
        out = OrderedDict()
        out.update(self._parameters)
        out.update(self._buffers)
        for name, child in self._modules.items():
            for key, value in child.state_dict().items():
                out[f"{name}.{key}"] = value
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies the values in place; returns (missing_keys, unexpected_keys)."""
        missing, unexpected = [], []
        own = dict(self._parameters, **self._buffers)
        with no_grad():
            for name, tensor in own.items():
                if name not in state_dict:
                    missing.append(name)
                    continue
                value = state_dict[name]
                if tuple(value.shape) != tuple(tensor.shape):
                    raise _podsim.Error(f"load_state_dict: {name} has shape {tuple(value.shape)}, "
                                        f"the module's {tuple(tensor.shape)}")
                tensor.copy_(value.to(tensor.device) if tensor.device is not None else value.cpu())
        prefixes = {name + "." for name in self._modules}
        for key in state_dict:
            if key not in own and not any(key.startswith(p) for p in prefixes):
                unexpected.append(key)
        for name, child in self._modules.items():
            sub = {k[len(name) + 1:]: v for k, v in state_dict.items() if k.startswith(name + ".")}
            child_missing, child_unexpected = child.load_state_dict(sub, strict=False)
            missing += [f"{name}.{k}" for k in child_missing]
            unexpected += [f"{name}.{k}" for k in child_unexpected]
        if strict and (missing or unexpected):
            raise _podsim.Error(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        return missing, unexpected

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for child in self._modules.values():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, device):
        """Moves every parameter (keeping requires_grad) and buffer to device; build
        optimizers after moving, as torch advises."""
        for table in (self._parameters, self._buffers):
            for name, t in table.items():
                moved = t.detach().to(device)
                table[name] = moved.requires_grad_() if t.requires_grad else moved
        for child in self._modules.values():
            child.to(device)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = p.grad * 0

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        lines += [f"  ({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._modules.items()]
        return "\n".join(lines) + ")" if len(lines) > 1 else f"{type(self).__name__}()"


class Sequential(Module):
    """Modules applied in order; children named "0", "1", ..."""

    def __init__(self, *modules):
        super().__init__()
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x


class ModuleList(Module):
    """A list of modules registered as children "0", "1", ..."""

    def __init__(self, modules=()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        return list(self._modules.values())[index]
