"""Unmodified PyTorch code on podsim devices (torch 1.13).

    import torch
    import podsim.torch as pt

    device = pt.device()                  # torch.device("privateuseone", 0): podsim.device()
    model = MyModel().to(device)          # parameters become podsim tensors
    optimizer = torch.optim.AdamW(model.parameters())
    for x, y in batches:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()                   # torch's autograd, over podsim's lazy graph
        optimizer.step()
        optimizer.zero_grad()
        pt.mark_step()                    # as xm.mark_step(): compile once, run the step

A tensor on the device is a ``PodsimTensor``: a torch tensor subclass (device type
``privateuseone``, no storage of its own) wrapping a lazy ``podsim.Tensor``. Every aten
op on it reaches ``__torch_dispatch__``, which records the podsim ops that compute it;
torch's autograd runs above and records its backward as aten ops too, so forward,
backward and the optimizer's update are one podsim graph per step. Moving a CPU tensor
to the device is a ``_to_copy`` kernel registered for ``PrivateUse1`` through
``torch.library``, and factories given the device (``torch.zeros(3, device=device)``)
come through its ``empty`` kernel.

An aten op without a podsim kernel is an error naming it. ``set_cpu_fallback(True)``
runs such ops on the CPU instead (reading their inputs from the device, writing the
results back), counting each in podsim's metrics as ``aten::<op>``, as PyTorch/XLA
counts its fallbacks.

Views do not alias: a view is a new lazy value, and an in-place op on it does not
change its base (``detach()`` does alias, as in torch).
"""
import ctypes
import os

import torch
from torch.utils._pytree import tree_map

import podsim

# The device guard torch's autograd engine needs for privateuseone tensors (a C++ library
# beside this file: torch 1.13 has no Python API for it).
ctypes.CDLL(os.path.join(os.path.dirname(__file__), "_torch_guard.so"), mode=ctypes.RTLD_GLOBAL)

__all__ = ["PodsimTensor", "device", "podsim_device", "mark_step", "sync", "set_cpu_fallback", "cpu_fallback",
           "supported_ops"]

_DEVICE_TYPE = "privateuseone"
_DTYPES = {
    torch.float32: podsim.float32, torch.float64: podsim.float64, torch.float16: podsim.float16,
    torch.bfloat16: podsim.bfloat16, torch.int64: podsim.int64, torch.int32: podsim.int32, torch.int16: podsim.int16,
    torch.int8: podsim.int8, torch.uint8: podsim.uint8, torch.bool: podsim.bool,
}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}
_fallback = False
_torch_devices = {}  # podsim device index -> torch.device, made on first use


def device(index=0):
    """The torch device of podsim device ``index`` of the default backend (PODSIM_DEVICE)."""
    podsim.device(index)  # checks the index
    return torch.device(_DEVICE_TYPE, index)


def podsim_device(torch_device):
    torch_device = torch.device(torch_device)
    if torch_device.type != _DEVICE_TYPE:
        raise ValueError(f"{torch_device} is not a podsim device")
    return podsim.device(torch_device.index or 0)


def mark_step():
    """Compiles (once) and launches the graph of every pending tensor (xm.mark_step())."""
    podsim.mark_step()


def sync():
    podsim.mark_step()
    podsim.wait_device_ops()


def set_cpu_fallback(enabled):
    """Runs aten ops podsim has no kernel for on the CPU (counted as aten::<op>)."""
    global _fallback
    _fallback = bool(enabled)


def cpu_fallback():
    return _fallback


def _podsim_dtype(dtype):
    if dtype not in _DTYPES:
        raise TypeError(f"podsim has no dtype for {dtype}")
    return _DTYPES[dtype]


class PodsimTensor(torch.Tensor):
    """A torch tensor whose value is a lazy podsim tensor on a podsim device."""

    elem: podsim.Tensor

    @staticmethod
    def __new__(cls, elem, requires_grad=False):
        index = elem.device.index if elem.device is not None else 0
        device = _torch_devices.get(index) or _torch_devices.setdefault(index, torch.device(_DEVICE_TYPE, index))
        r = torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=_TORCH_DTYPES[elem.dtype], device=device,
                                                requires_grad=requires_grad)
        r.elem = elem
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __repr__(self):
        grad = ", grad_fn=<" + type(self.grad_fn).__name__ + ">" if self.grad_fn is not None else ""
        return f"PodsimTensor({self.elem!r}{grad})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        kernel = _KERNELS.get(func) or _KERNELS.get(func.overloadpacket)
        if kernel is not None:
            return kernel(*args, **kwargs)
        name = func.overloadpacket.__name__
        if name.endswith("_") and not name.startswith("_"):
            out_of_place = getattr(torch.ops.aten, name[:-1], None)
            if out_of_place is not None:
                inner = _KERNELS.get(getattr(out_of_place, func._overloadname, None)) or _KERNELS.get(out_of_place)
                if inner is not None:
                    return _assign(args[0], inner(*args, **kwargs))
        if _fallback:
            return _run_on_cpu(func, args, kwargs)
        raise NotImplementedError(
            f"podsim has no kernel for aten::{name} ({func}); podsim.torch.set_cpu_fallback(True) runs it on the CPU")


# ---- conversions ------------------------------------------------------------------------

def _p(x):
    """An argument as podsim sees it: the wrapped tensor, a Python number for a 0-d CPU
    tensor (torch's scalars, such as an optimizer's step count), lists and tuples element
    by element, anything else as is."""
    if type(x) is PodsimTensor:
        return x.elem
    if isinstance(x, (list, tuple)):
        return type(x)(_p(v) for v in x)
    if isinstance(x, torch.Tensor):
        if isinstance(x, PodsimTensor):
            return x.elem
        if x.dim() == 0 and x.device.type == "cpu":
            return x.item()
        raise RuntimeError(f"expected a tensor on the podsim device, got a {x.device.type} tensor of shape "
                           f"{tuple(x.shape)}; move it with .to(device)")
    return x


def _wrap(x):
    if type(x) is podsim.Tensor:
        return PodsimTensor(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_wrap(v) for v in x)
    return x


def _upload(t, index=0):
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return podsim.tensor(t.float().numpy(), device=podsim.device(index)).to(podsim.bfloat16)
    return podsim.tensor(t.contiguous().numpy(), device=podsim.device(index))


def _download(elem):
    if elem.dtype == podsim.bfloat16:
        return torch.from_numpy(elem.float().numpy()).to(torch.bfloat16)
    return torch.from_numpy(elem.numpy())


def _assign(self, value):
    """An in-place op's result written into self (every alias of it sees the change)."""
    value = _p(value) if isinstance(value, torch.Tensor) else value
    if not isinstance(value, podsim.Tensor):
        value = podsim.full(self.elem.shape, value, dtype=self.elem.dtype, device=self.elem.device)
    if value.shape != self.elem.shape:
        value = value.expand(*self.elem.shape)
    self.elem.copy_(value)
    return self


def _run_on_cpu(func, args, kwargs):
    podsim.debug.counter_add("aten::" + func.overloadpacket.__name__)
    index = [0]

    def down(x):
        if isinstance(x, PodsimTensor):
            index[0] = x.elem.device.index
            return _download(x.elem)
        return x

    cpu_args, cpu_kwargs = tree_map(down, args), tree_map(down, kwargs)
    out = func(*cpu_args, **cpu_kwargs)
    name = func.overloadpacket.__name__
    if name.endswith("_") and isinstance(args[0], PodsimTensor):  # in place: write back
        return _assign(args[0], _upload(cpu_args[0], index[0]))
    return tree_map(lambda x: PodsimTensor(_upload(x, index[0])) if isinstance(x, torch.Tensor) else x, out)


# ---- kernels ------------------------------------------------------------------------------

_KERNELS = {}
aten = torch.ops.aten


def _kernel(*ops):
    def register(fn):
        for op in ops:
            _KERNELS[op] = fn
        return fn
    return register


def _unwrapped(fn):
    """A kernel over podsim values: arguments unwrapped, results wrapped."""
    def kernel(*args, **kwargs):
        return _wrap(fn(*_p(args), **{k: _p(v) for k, v in kwargs.items()}))
    return kernel


def supported_ops():
    """The aten ops (overload packets and overloads) that have podsim kernels."""
    return sorted({str(op) for op in _KERNELS})


def _dims(x, dim):
    if dim is None:
        return list(range(x.dim()))
    return [dim] if isinstance(dim, int) else list(dim)


def _sizes(x, size):
    return [x.shape[i - len(size) + x.dim()] if s == -1 and i - len(size) + x.dim() >= 0 else s
            for i, s in enumerate(size)]


def _options(x, dtype=None):
    return dict(dtype=_podsim_dtype(dtype) if dtype is not None else x.dtype, device=x.device)


def _grads(forward, inputs, grad_output, wanted=None):
    """Gradients of forward(*inputs) weighted by grad_output, by podsim's autograd: the
    backward ops of torch become the same podsim ops as podsim's own backward."""
    leaves = [x.detach().requires_grad_(True) if x is not None and (wanted is None or w) else None
              for x, w in zip(inputs, wanted or [True] * len(inputs))]
    with_grad = [leaf if leaf is not None else x for leaf, x in zip(leaves, inputs)]
    out = forward(*with_grad)
    targets = [leaf for leaf in leaves if leaf is not None]
    grads = iter(podsim.autograd.grad([out], targets, [grad_output]))
    return [next(grads) if leaf is not None else None for leaf in leaves]


# Moving and creating.
def _to_copy(x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    target = torch.device(device) if device is not None else x.device
    if isinstance(x, PodsimTensor):
        elem = x.elem.to(_podsim_dtype(dtype)) if dtype is not None else x.elem
        if target.type == _DEVICE_TYPE:
            if (target.index or 0) != elem.device.index:
                elem = elem.to(podsim.device(target.index or 0))
            return PodsimTensor(elem.detach())
        return _download(elem).to(target)
    t = x.to(dtype) if dtype is not None else x
    return PodsimTensor(_upload(t, target.index or 0))


_kernel(aten._to_copy)(_to_copy)


def _empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    index = torch.device(device).index or 0 if device is not None else 0
    return PodsimTensor(podsim.zeros(*size, dtype=_podsim_dtype(dtype or torch.get_default_dtype()),
                                     device=podsim.device(index)))


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _empty(size, dtype, layout, device, pin_memory)


_kernel(aten.empty_like, aten.zeros_like)(_unwrapped(
    lambda x, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None:
        podsim.zeros(*x.shape, **_options(x, dtype))))
_kernel(aten.ones_like)(_unwrapped(
    lambda x, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None:
        podsim.ones(*x.shape, **_options(x, dtype))))
_kernel(aten.full_like)(_unwrapped(
    lambda x, value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None:
        podsim.full(x.shape, value, **_options(x, dtype))))
_kernel(aten.new_empty, aten.new_zeros)(_unwrapped(
    lambda x, size, dtype=None, layout=None, device=None, pin_memory=None: podsim.zeros(*size, **_options(x, dtype))))
_kernel(aten.new_ones)(_unwrapped(
    lambda x, size, dtype=None, layout=None, device=None, pin_memory=None: podsim.ones(*size, **_options(x, dtype))))
_kernel(aten.new_full)(_unwrapped(
    lambda x, size, value, dtype=None, layout=None, device=None, pin_memory=None:
        podsim.full(size, value, **_options(x, dtype))))


@_kernel(aten.copy_)
def _copy_(self, src, non_blocking=False):
    value = src.elem if isinstance(src, PodsimTensor) else _upload(src, self.elem.device.index)
    return _assign(self, value.to(self.elem.dtype) if value.dtype != self.elem.dtype else value)


_kernel(aten.zero_)(lambda self: _assign(self, 0))
_kernel(aten.fill_)(lambda self, value: _assign(self, _p(value)))
_kernel(aten.uniform_)(lambda self, a=0.0, b=1.0, generator=None: _assign(
    self, podsim.rand(*self.elem.shape, dtype=self.elem.dtype, device=self.elem.device) * (b - a) + a))
_kernel(aten.normal_)(lambda self, mean=0.0, std=1.0, generator=None: _assign(
    self, podsim.randn(*self.elem.shape, dtype=self.elem.dtype, device=self.elem.device) * std + mean))
_kernel(aten.bernoulli_.float)(lambda self, p=0.5, generator=None: _assign(
    self, (podsim.rand(*self.elem.shape, device=self.elem.device) < p).to(self.elem.dtype)))
_kernel(aten.detach, aten.alias, aten.lift_fresh)(lambda x: PodsimTensor(x.elem))
_kernel(aten.clone)(_unwrapped(lambda x, memory_format=None: x.detach()))
_kernel(aten._local_scalar_dense)(lambda x: x.elem.item())
_kernel(aten.is_same_size)(lambda a, b: a.shape == b.shape)

# Shapes.
_kernel(aten.view, aten._unsafe_view, aten.reshape)(_unwrapped(lambda x, size: x.reshape(*size)))
_kernel(aten._reshape_alias)(_unwrapped(lambda x, size, stride: x.reshape(*size)))
_kernel(aten.t)(_unwrapped(lambda x: x.t() if x.dim() == 2 else x))
_kernel(aten.transpose)(_unwrapped(lambda x, a, b: x.transpose(a, b)))
_kernel(aten.permute)(_unwrapped(lambda x, dims: x.permute(*dims)))
_kernel(aten.expand)(_unwrapped(lambda x, size, implicit=False: x.expand(*_sizes(x, size))))
_kernel(aten.unsqueeze)(_unwrapped(lambda x, dim: x.unsqueeze(dim)))
_kernel(aten.squeeze.default)(_unwrapped(lambda x: x.squeeze()))
_kernel(aten.squeeze.dim)(_unwrapped(lambda x, dim: x.squeeze(dim)))
_kernel(aten.slice)(_unwrapped(lambda x, dim=0, start=None, end=None, step=1: x.slice(dim, start, end, step)))
_kernel(aten.select)(_unwrapped(lambda x, dim, index: x.narrow(dim, index % x.shape[dim], 1).squeeze(dim)))
_kernel(aten.split.Tensor)(_unwrapped(
    lambda x, size, dim=0: [x.narrow(dim, s, min(size, x.shape[dim] - s)) for s in range(0, x.shape[dim], size)]))
_kernel(aten.split_with_sizes)(_unwrapped(
    lambda x, sizes, dim=0: [x.narrow(dim, sum(sizes[:i]), s) for i, s in enumerate(sizes)]))
_kernel(aten.unbind)(_unwrapped(lambda x, dim=0: [x.narrow(dim, i, 1).squeeze(dim) for i in range(x.shape[dim])]))
_kernel(aten.cat)(_unwrapped(lambda tensors, dim=0: podsim.cat(list(tensors), dim)))
_kernel(aten.stack)(_unwrapped(lambda tensors, dim=0: podsim.stack(list(tensors), dim)))
_kernel(aten.index_select)(_unwrapped(lambda x, dim, index: x.index_select(dim, index)))
_kernel(aten.gather)(_unwrapped(lambda x, dim, index, sparse_grad=False: x.gather(dim, index)))

# Arithmetic.
_kernel(aten.add.Tensor, aten.add.Scalar)(_unwrapped(lambda a, b, alpha=1: a + (b * alpha if alpha != 1 else b)))
_kernel(aten.sub.Tensor, aten.sub.Scalar)(_unwrapped(lambda a, b, alpha=1: a - (b * alpha if alpha != 1 else b)))
_kernel(aten.rsub.Tensor, aten.rsub.Scalar)(_unwrapped(lambda a, b, alpha=1: b - (a * alpha if alpha != 1 else a)))
_kernel(aten.mul.Tensor, aten.mul.Scalar)(_unwrapped(lambda a, b: a * b))


@_kernel(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode)
@_unwrapped
def _div(a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise NotImplementedError(f"aten::div with rounding_mode={rounding_mode!r}")
    return a / b


_kernel(aten.neg)(_unwrapped(lambda x: -x))
_kernel(aten.reciprocal)(_unwrapped(lambda x: 1 / x))
_kernel(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)(_unwrapped(lambda a, b: a ** b))
for _name in ["exp", "log", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "relu"]:
    _kernel(getattr(aten, _name))(_unwrapped(getattr(podsim, _name)))
_kernel(aten.gelu)(_unwrapped(lambda x, approximate="none": podsim.gelu(x, approximate)))
_kernel(aten.silu)(_unwrapped(podsim.nn.functional.silu))
_kernel(aten.maximum)(_unwrapped(podsim.maximum))
_kernel(aten.minimum)(_unwrapped(podsim.minimum))
_kernel(aten.clamp)(_unwrapped(lambda x, min=None, max=None: x.clamp(min, max)))
_kernel(aten.where.self)(_unwrapped(podsim.where))
_kernel(aten.masked_fill.Scalar, aten.masked_fill.Tensor)(_unwrapped(lambda x, mask, value: podsim.where(mask, value, x)))
for _name in ["eq", "ne", "lt", "le", "gt", "ge"]:
    _kernel(getattr(aten, _name))(_unwrapped(getattr(podsim, _name)))
_kernel(aten.logical_not)(_unwrapped(lambda x: x == False))  # noqa: E712 (an elementwise compare)
_kernel(aten.addcmul)(_unwrapped(lambda x, a, b, value=1: x + a * b * value))
_kernel(aten.addcdiv)(_unwrapped(lambda x, a, b, value=1: x + a / b * value))
_kernel(aten.lerp.Scalar, aten.lerp.Tensor)(_unwrapped(lambda x, end, weight: x + (end - x) * weight))

# Linear algebra.
_kernel(aten.mm, aten.bmm, aten.matmul)(_unwrapped(lambda a, b: a @ b))
_kernel(aten.addmm, aten.baddbmm)(_unwrapped(
    lambda bias, a, b, beta=1, alpha=1: (a @ b) * alpha + (bias * beta if beta != 1 else bias) if beta != 0
    else (a @ b) * alpha))

# Reductions.
_kernel(aten.sum.default)(_unwrapped(lambda x, dtype=None: (x.to(_podsim_dtype(dtype)) if dtype else x).sum()))
_kernel(aten.sum.dim_IntList)(_unwrapped(
    lambda x, dim, keepdim=False, dtype=None: (x.to(_podsim_dtype(dtype)) if dtype else x).sum(_dims(x, dim), keepdim)))
_kernel(aten.mean.default)(_unwrapped(lambda x, dtype=None: x.mean()))
_kernel(aten.mean.dim)(_unwrapped(lambda x, dim, keepdim=False, dtype=None: x.mean(_dims(x, dim), keepdim)))
_kernel(aten.amax)(_unwrapped(lambda x, dim=(), keepdim=False: x.amax(_dims(x, dim or None), keepdim)))
_kernel(aten.amin)(_unwrapped(lambda x, dim=(), keepdim=False: x.amin(_dims(x, dim or None), keepdim)))
_kernel(aten.max.default)(_unwrapped(lambda x: x.amax()))
_kernel(aten.max.dim)(_unwrapped(lambda x, dim, keepdim=False: x.max(dim, keepdim)))
_kernel(aten.argmax)(_unwrapped(lambda x, dim=None, keepdim=False: x.argmax(dim, keepdim)))
_kernel(aten._softmax)(_unwrapped(lambda x, dim, half_to_float=False: x.softmax(dim)))
_kernel(aten._log_softmax)(_unwrapped(lambda x, dim, half_to_float=False: x.log_softmax(dim)))
_kernel(aten._softmax_backward_data)(_unwrapped(
    lambda grad, out, dim, dtype: out * (grad - (grad * out).sum(dim, keepdim=True))))
_kernel(aten._log_softmax_backward_data)(_unwrapped(
    lambda grad, out, dim, dtype: grad - out.exp() * grad.sum(dim, keepdim=True)))

# Activations' backward.
_kernel(aten.threshold_backward)(_unwrapped(lambda grad, x, threshold: podsim.where(x > threshold, grad, 0.0)))
_kernel(aten.gelu_backward)(_unwrapped(
    lambda grad, x, approximate="none": _grads(lambda v: podsim.gelu(v, approximate), [x], grad)[0]))
_kernel(aten.tanh_backward)(_unwrapped(lambda grad, out: grad * (1 - out * out)))
_kernel(aten.sigmoid_backward)(_unwrapped(lambda grad, out: grad * out * (1 - out)))


# Dropout: the mask comes from the device's generator.
@_kernel(aten.native_dropout)
@_unwrapped
def _native_dropout(x, p, train):
    if not train or p == 0:
        return x.detach(), podsim.ones(*x.shape, dtype=podsim.bool, device=x.device)
    keep = podsim.rand(*x.shape, device=x.device) >= p
    return podsim.where(keep, x / (1 - p), 0.0), keep


_kernel(aten.native_dropout_backward)(_unwrapped(lambda grad, mask, scale: podsim.where(mask, grad * scale, 0.0)))


# Layers.
@_kernel(aten.native_layer_norm)
@_unwrapped
def _native_layer_norm(x, shape, weight, bias, eps):
    dims = list(range(x.dim() - len(shape), x.dim()))
    mean = x.mean(dims, keepdim=True)
    rstd = ((x - mean) ** 2).mean(dims, keepdim=True).__add__(eps).rsqrt()
    return podsim.nn.functional.layer_norm(x, list(shape), weight, bias, eps), mean, rstd


@_kernel(aten.native_layer_norm_backward)
@_unwrapped
def _native_layer_norm_backward(grad, x, shape, mean, rstd, weight, bias, mask):
    def forward(x, weight, bias):
        return podsim.nn.functional.layer_norm(x, list(shape), weight, bias)
    wanted = [mask[0], mask[1] and weight is not None, mask[2] and bias is not None]
    return tuple(_grads(forward, [x, weight, bias], grad, wanted))


_kernel(aten.embedding)(_unwrapped(
    lambda weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False:
        podsim.nn.functional.embedding(indices, weight)))


@_kernel(aten.embedding_dense_backward)
@_unwrapped
def _embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    weight = podsim.zeros(num_weights, grad.shape[-1], dtype=grad.dtype, device=grad.device)
    out = _grads(lambda w: podsim.nn.functional.embedding(indices, w), [weight], grad)[0]
    if padding_idx >= 0:
        rows = podsim.arange(num_weights, device=grad.device).reshape(num_weights, 1)
        out = podsim.where(rows == padding_idx, 0.0, out)
    return out


def _conv_args(stride, padding, dilation, transposed, groups):
    if transposed or groups != 1 or len(stride) != 2:
        raise NotImplementedError("podsim's convolution is 2-D, not transposed, groups=1")
    return tuple(stride), tuple(padding), tuple(dilation)


@_kernel(aten.convolution)
@_unwrapped
def _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    stride, padding, dilation = _conv_args(stride, padding, dilation, transposed, groups)
    return podsim.nn.functional.conv2d(x, weight, bias, stride, padding, dilation)


@_kernel(aten.convolution_backward)
@_unwrapped
def _convolution_backward(grad, x, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
                          mask):
    stride, padding, dilation = _conv_args(stride, padding, dilation, transposed, groups)
    gx, gw = _grads(lambda x, w: podsim.nn.functional.conv2d(x, w, None, stride, padding, dilation), [x, weight], grad,
                    [mask[0], mask[1]])
    gb = grad.sum([0, 2, 3]) if mask[2] else None
    return gx, gw, gb


# Batch norm: statistics over every dimension but the channels (dim 1); the running
# statistics are updated in place with the unbiased variance, as torch does.
def _batch_norm(x, weight, bias, mean, invstd):
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    out = (x - mean.reshape(*shape)) * invstd.reshape(*shape)
    if weight is not None:
        out = out * weight.reshape(*shape)
    if bias is not None:
        out = out + bias.reshape(*shape)
    return out


def _batch_statistics(x, eps):
    dims = [d for d in range(x.dim()) if d != 1]
    mean = x.mean(dims)
    var = ((x - mean.reshape(*([1, x.shape[1]] + [1] * (x.dim() - 2)))) ** 2).mean(dims)
    return mean, var, (var + eps).rsqrt()


@_kernel(aten.native_batch_norm)
@_unwrapped
def _native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if not training:
        invstd = (running_var + eps).rsqrt()
        empty = podsim.zeros(0, dtype=x.dtype, device=x.device)
        return _batch_norm(x, weight, bias, running_mean, invstd), empty, empty
    mean, var, invstd = _batch_statistics(x, eps)
    if running_mean is not None:
        count = x.numel() // x.shape[1]
        with podsim.no_grad():
            running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
            running_var.copy_(running_var * (1 - momentum) + var * (momentum * count / max(count - 1, 1)))
    return _batch_norm(x, weight, bias, mean, invstd), mean, invstd


@_kernel(aten.native_batch_norm_backward)
@_unwrapped
def _native_batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean, save_invstd, training, eps,
                                mask):
    def forward(x, weight):
        if training:
            mean, _, invstd = _batch_statistics(x, eps)
        else:
            mean, invstd = running_mean, (running_var + eps).rsqrt()
        return _batch_norm(x, weight, None, mean, invstd)

    gx, gw = _grads(forward, [x, weight], grad, [mask[0], mask[1] and weight is not None])
    gb = grad.sum([d for d in range(grad.dim()) if d != 1]) if mask[2] else None
    return gx, gw, gb


# Pooling (2-D, NCHW; floor mode). Max pooling's indices are each window's first
# maximum as a flat index into its input plane, as torch gives them.
def _pool_args(kernel, stride, padding, dilation=(1, 1), ceil_mode=False):
    if ceil_mode or tuple(dilation) not in ((1, 1), (1,)):
        raise NotImplementedError("podsim's pooling: ceil_mode=False and dilation 1 only")
    kernel = tuple(kernel) * (2 // len(kernel))
    stride = tuple(stride or kernel) * (2 // len(stride or kernel))
    padding = tuple(padding) * (2 // len(padding))
    return kernel, stride, padding


@_kernel(aten.max_pool2d_with_indices)
@_unwrapped
def _max_pool2d_with_indices(x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    (kh, kw), (sh, sw), (ph, pw) = _pool_args(kernel, stride, padding, dilation, ceil_mode)
    out = podsim.nn.functional.max_pool2d(x, (kh, kw), (sh, sw), (ph, pw))
    h, w = x.shape[-2], x.shape[-1]
    ho, wo = out.shape[-2], out.shape[-1]
    padded = x
    if ph or pw:  # -inf around, so that padding is never a maximum
        lead = list(x.shape[:-2])
        fill = lambda *shape: podsim.full(lead + list(shape), float("-inf"), dtype=x.dtype, device=x.device)
        padded = podsim.cat([fill(ph, w), x, fill(ph, w)], dim=-2) if ph else x
        padded = podsim.cat([fill(h + 2 * ph, pw), padded, fill(h + 2 * ph, pw)], dim=-1) if pw else padded
    windows = [padded.slice(-2, i, i + sh * (ho - 1) + 1, sh).slice(-1, j, j + sw * (wo - 1) + 1, sw)
               for i in range(kh) for j in range(kw)]
    k = podsim.stack(windows, dim=-1).argmax(-1)  # the first maximum's place in its window
    offsets = podsim.tensor([i * w + j for i in range(kh) for j in range(kw)], device=x.device)
    corner = (podsim.arange(ho, device=x.device).reshape(ho, 1) * sh - ph) * w + \
        podsim.arange(wo, device=x.device).reshape(1, wo) * sw - pw
    return out, corner + offsets.index_select(0, k.flatten()).reshape(*k.shape)


@_kernel(aten.max_pool2d_with_indices_backward)
@_unwrapped
def _max_pool2d_with_indices_backward(grad, x, kernel, stride, padding, dilation, ceil_mode, indices):
    kernel, stride, padding = _pool_args(kernel, stride, padding, dilation, ceil_mode)
    return _grads(lambda v: podsim.nn.functional.max_pool2d(v, kernel, stride, padding), [x], grad)[0]


def _avg_args(kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if not count_include_pad or divisor_override is not None:
        raise NotImplementedError("podsim's avg_pool2d: count_include_pad=True, no divisor_override")
    return _pool_args(kernel, stride, padding, ceil_mode=ceil_mode)


_kernel(aten.avg_pool2d)(_unwrapped(
    lambda x, kernel, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True, divisor_override=None:
        podsim.nn.functional.avg_pool2d(x, *_avg_args(kernel, stride, padding, ceil_mode, count_include_pad,
                                                      divisor_override))))
_kernel(aten.avg_pool2d_backward)(_unwrapped(
    lambda grad, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override: _grads(
        lambda v: podsim.nn.functional.avg_pool2d(v, *_avg_args(kernel, stride, padding, ceil_mode,
                                                                count_include_pad, divisor_override)),
        [x], grad)[0]))


@_kernel(aten._adaptive_avg_pool2d)
@_unwrapped
def _adaptive_avg_pool2d(x, size):
    if tuple(size) != (1, 1):
        raise NotImplementedError("podsim's adaptive_avg_pool2d: output size 1x1 only")
    return x.mean([-2, -1], keepdim=True)


_kernel(aten._adaptive_avg_pool2d_backward)(_unwrapped(
    lambda grad, x: (grad / (x.shape[-2] * x.shape[-1])).expand(*x.shape)))


# Losses.
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


@_kernel(aten.nll_loss_forward)
@_unwrapped
def _nll_loss_forward(x, target, weight, reduction, ignore_index):
    if weight is not None:
        raise NotImplementedError("aten::nll_loss_forward with class weights")
    loss = podsim.nn.functional.nll_loss(x, target, reduction=_REDUCTIONS[reduction], ignore_index=ignore_index)
    counted = (target != ignore_index).sum().to(x.dtype)
    return loss, counted


@_kernel(aten.nll_loss_backward)
@_unwrapped
def _nll_loss_backward(grad, x, target, weight, reduction, ignore_index, total_weight):
    loss = lambda v: podsim.nn.functional.nll_loss(v, target, reduction=_REDUCTIONS[reduction], ignore_index=ignore_index)
    return _grads(loss, [x], grad)[0]


_kernel(aten.mse_loss)(_unwrapped(
    lambda x, y, reduction=1: podsim.nn.functional.mse_loss(x, y, reduction=_REDUCTIONS[reduction])))
_kernel(aten.mse_loss_backward)(_unwrapped(
    lambda grad, x, y, reduction: _grads(
        lambda v: podsim.nn.functional.mse_loss(v, y, reduction=_REDUCTIONS[reduction]), [x], grad)[0]))


# ---- the PrivateUse1 backend: moving tensors and factories ----------------------------------

_library = torch.library.Library("aten", "IMPL")
_library.impl("_to_copy", _to_copy, "PrivateUse1")
_library.impl("empty.memory_format", _empty, "PrivateUse1")
_library.impl("empty_strided", _empty_strided, "PrivateUse1")
