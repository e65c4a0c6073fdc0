"""oxla's own decompositions of ATen ops that torch keeps whole and has none for.

Each function takes the op's arguments (tensors, ints, lists) and computes the op's result
with ATen ops that have lowering rules; :mod:`oxla_frontend_torch.rules.decomposed` traces
it at the node's shapes and inlines it. Every entry of :data:`DECOMPOSITIONS` is checked
against eager (forward, and the backward ops against ``torch.autograd``) in
``tests/frontend_torch/test_ops_decomposed.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from oxla.errors import NotSupportedError

aten = torch.ops.aten


def _per_dim(v: Sequence[int], n: int) -> list[int]:
    v = list(v)
    return v * n if len(v) == 1 else v


def convolution_backward(grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor,
                         bias_sizes: Any, stride: Sequence[int], padding: Sequence[int],
                         dilation: Sequence[int], transposed: bool,
                         output_padding: Sequence[int], groups: int,
                         output_mask: Sequence[bool]) -> tuple[Any, Any, Any]:
    """Gradients of an N-d convolution ``(grad_input, grad_weight, grad_bias)``.

    ``grad_input`` is the transposed convolution of ``grad`` [N, G*Og, *out] with ``w``
    [G*Og, Cg, *k] (``output_padding`` makes up the rows a stride skipped);
    ``grad_weight`` correlates ``x`` [N, G*Cg, *in] with ``grad`` over the batch: with the
    batch as channels, groups kept apart, strides and dilations swapped; ``grad_bias`` sums
    ``grad`` over all dims but 1.

    A transposed convolution's gradients come from the same identities seen from the other
    side: ``y = conv_transpose(x, w)`` is the adjoint of ``conv(., w)``, so ``grad_input``
    is the plain convolution of ``grad`` with ``w``, and ``grad_weight`` is the plain
    convolution's weight gradient with ``grad`` as its input and ``x`` as its output
    gradient (``w`` [G*Cg, Og, *k] in the transposed layout).
    """
    n = x.dim() - 2
    if transposed:
        gi = gw = gb = None
        if output_mask[0]:
            gi = aten.convolution(grad, w, None, stride, padding, dilation, False, [0] * n,
                                  groups)
        if output_mask[1]:
            gw = convolution_backward(x, grad, w, None, stride, padding, dilation, False,
                                      [0] * n, groups, [False, True, False])[1]
        if output_mask[2]:
            gb = grad.sum([d for d in range(grad.dim()) if d != 1])
        return gi, gw, gb
    stride, padding = _per_dim(stride, n), _per_dim(padding, n)
    dilation = _per_dim(dilation, n)
    k = list(w.shape[2:])
    sp_in, sp_out = list(x.shape[2:]), list(grad.shape[2:])
    gi = gw = gb = None
    if output_mask[0]:
        extra = [i - ((o - 1) * s - 2 * p + d * (kk - 1) + 1)
                 for i, o, s, p, d, kk in zip(sp_in, sp_out, stride, padding, dilation, k)]
        gi = aten.convolution(grad, w, None, stride, padding, dilation, True, extra, groups)
    if output_mask[1]:
        batch, cin = x.shape[0], x.shape[1]
        cg, og = cin // groups, w.shape[0] // groups
        perm = [2, 1, 0, *range(3, n + 3)]
        xs = x.reshape(batch, groups, cg, *sp_in).permute(perm)
        xs = xs.reshape(cg, groups * batch, *sp_in)
        gs = grad.reshape(batch, groups, og, *sp_out).permute([1, 2, 0, *range(3, n + 3)])
        gs = gs.reshape(groups * og, batch, *sp_out)
        cw = aten.convolution(xs, gs, None, dilation, padding, stride, False, [0] * n, groups)
        cw = cw[(slice(None), slice(None), *(slice(0, kk) for kk in k))]
        gw = cw.permute([1, 0, *range(2, n + 2)]).contiguous()
    if output_mask[2]:
        gb = grad.sum([d for d in range(grad.dim()) if d != 1])
    return gi, gw, gb


def _window_sums_of_ones(x: torch.Tensor, kernel: Sequence[int], stride: Sequence[int],
                         padding: Sequence[int], ceil_mode: bool) -> torch.Tensor:
    ones = torch.ones_like(x)
    return aten.avg_pool2d(ones, kernel, stride, padding, ceil_mode, False, 1)


def avg_pool2d_backward(grad: torch.Tensor, x: torch.Tensor, kernel: Sequence[int],
                        stride: Sequence[int], padding: Sequence[int], ceil_mode: bool,
                        count_include_pad: bool, divisor_override: int | None
                        ) -> torch.Tensor:
    """Gradient of ``avg_pool2d``: each output's gradient over its divisor, summed back
    onto its window (``col2im``). The divisor per window is ``count / mean`` of a pool
    of ones with the forward's settings (``count``: the window's cells inside the input).

    Raises:
        NotSupportedError: ``ceil_mode`` (windows past the padded input).
    """
    if ceil_mode:
        raise NotSupportedError("avg_pool2d_backward with ceil_mode=True")
    kernel = _per_dim(kernel, 2)
    stride = _per_dim(stride, 2) if stride else kernel
    padding = _per_dim(padding, 2)
    count = _window_sums_of_ones(x, kernel, stride, padding, ceil_mode)
    mean = aten.avg_pool2d(torch.ones_like(x), kernel, stride, padding, ceil_mode,
                           count_include_pad, divisor_override)
    g = grad * mean / count
    b, c, oh, ow = grad.shape
    cols = g.reshape(b, c, 1, oh * ow).expand(b, c, kernel[0] * kernel[1], oh * ow)
    cols = cols.reshape(b, c * kernel[0] * kernel[1], oh * ow)
    return aten.col2im(cols, list(x.shape[2:]), kernel, [1, 1], padding, stride)


def _adaptive_matrix(n_in: int, n_out: int, dtype: torch.dtype) -> torch.Tensor:
    """[n_out, n_in]: row i averages input cells floor(i*n/o) .. ceil((i+1)*n/o) - 1."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return torch.tensor(m, dtype=dtype)


def adaptive_avg_pool(x: torch.Tensor, output_size: Sequence[int]) -> torch.Tensor:
    """Adaptive average pooling over the last ``len(output_size)`` dims, windows of any
    (uneven) size: one averaging matrix per dim, applied with ``tensordot``."""
    n = len(output_size)
    y = x
    for i, o in enumerate(output_size):
        d = x.dim() - n + i
        m = _adaptive_matrix(x.shape[d], o, x.dtype)
        y = torch.movedim(torch.tensordot(y, m, dims=([d], [1])), -1, d)
    return y


def adaptive_avg_pool2d_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Gradient of adaptive average pooling: the averaging matrices transposed."""
    n = 2
    y = grad
    for i in range(n):
        d = grad.dim() - n + i
        m = _adaptive_matrix(x.shape[d], grad.shape[d], grad.dtype)
        y = torch.movedim(torch.tensordot(y, m, dims=([d], [0])), -1, d)
    return y


def _adaptive_windows(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """[n_out, k] input indices of each adaptive window (clamped) and their validity."""
    lo = (np.arange(n_out) * n_in) // n_out
    hi = -((-(np.arange(n_out) + 1) * n_in) // n_out)
    k = int((hi - lo).max())
    idx = lo[:, None] + np.arange(k)[None, :]
    return np.minimum(idx, n_in - 1), idx < hi[:, None]


def adaptive_max_pool2d(x: torch.Tensor, output_size: Sequence[int]) -> tuple[Any, Any]:
    """``(values, indices)`` of adaptive max pooling with windows of any size: the
    windows gathered at constant indices (cells past a window's end masked to -inf),
    then ``amax``/``argmax``; indices are flat ``h * W + w`` into each input plane."""
    h, w = x.shape[-2:]
    oh, ow = output_size
    ih, vh = _adaptive_windows(h, oh)
    iw, vw = _adaptive_windows(w, ow)
    kh, kw = ih.shape[1], iw.shape[1]
    win = x[..., torch.tensor(ih.reshape(oh, kh, 1, 1)), torch.tensor(iw.reshape(1, 1, ow, kw))]
    lead = x.dim() - 2
    win = win.permute(*range(lead), lead, lead + 2, lead + 1, lead + 3)
    win = win.reshape(*x.shape[:-2], oh, ow, kh * kw)
    valid = (vh[:, None, :, None] & vw[None, :, None, :]).reshape(oh, ow, kh * kw)
    win = torch.where(torch.tensor(valid), win, torch.tensor(float("-inf"), dtype=x.dtype))
    values, k = torch.max(win, -1)
    flat = (ih[:, None, :, None] * w + iw[None, :, None, :]).reshape(oh, ow, kh * kw)
    table = torch.tensor(flat).expand(*x.shape[:-2], oh, ow, kh * kw)
    return values, torch.gather(table, -1, k.unsqueeze(-1)).squeeze(-1)


def adaptive_max_pool2d_backward(grad: torch.Tensor, x: torch.Tensor,
                                 indices: torch.Tensor) -> torch.Tensor:
    """Gradient of adaptive max pooling: each output's gradient added at its index."""
    flat = torch.zeros(*x.shape[:-2], x.shape[-2] * x.shape[-1], dtype=grad.dtype)
    flat = flat.scatter_add(-1, indices.flatten(-2), grad.flatten(-2))
    return flat.reshape(x.shape)


def var_mean(x: torch.Tensor, dim: Sequence[int] | None = None, *, correction: Any = None,
             keepdim: bool = False) -> tuple[Any, Any]:
    """``(var, mean)``, which group norm's decomposition leaves in a graph."""
    var = aten.var.correction(x, dim, correction=correction, keepdim=keepdim)
    return var, x.mean(dim=dim, keepdim=keepdim) if dim is not None else x.mean()


def _probe(forward: Any, spatial: Sequence[int], d: int) -> np.ndarray:
    """[out_d, in_d]: the matrix of a separable linear ``forward`` (N, C, *spatial) ->
    (N, C, *out) along spatial dim ``d``, read by applying it eagerly (not traced) to the
    unit basis along ``d`` (as the channels), constant along the other dims. Exact for
    maps whose weights along each other dim sum to one (interpolation, replication
    padding, adaptive averages)."""
    from torch.utils._python_dispatch import _disable_current_modes

    n = spatial[d]
    shape = [1, n, *spatial]
    with _disable_current_modes():  # fake, proxy and functional modes: run for real
        eye = torch.eye(n, dtype=torch.float64).reshape(
            [1, n] + [n if i == d else 1 for i in range(len(spatial))])
        out = forward(eye.expand(shape).contiguous())
        idx = tuple(slice(None) if i == d else 0 for i in range(len(spatial)))
        return out[(0, slice(None), *idx)].T.numpy().copy()


def _separable_backward(grad: torch.Tensor, spatial: Sequence[int], forward: Any
                        ) -> torch.Tensor:
    """The gradient of a separable linear map: each dim's probed matrix, transposed."""
    k = len(spatial)
    y = grad
    for i in range(k):
        d = grad.dim() - k + i
        m = torch.tensor(_probe(forward, spatial, i), dtype=grad.dtype)
        y = torch.movedim(torch.tensordot(y, m, dims=([d], [0])), -1, d)
    return y


def upsample_nearest2d_backward(grad: torch.Tensor, output_size: Sequence[int],
                                input_size: Sequence[int], scales_h: float | None = None,
                                scales_w: float | None = None) -> torch.Tensor:
    """Gradient of nearest upsampling (sums of the copies of each input cell)."""
    return _separable_backward(grad, list(input_size[2:]), lambda x: aten.upsample_nearest2d(
        x, output_size, scales_h, scales_w))


def upsample_bilinear2d_backward(grad: torch.Tensor, output_size: Sequence[int],
                                 input_size: Sequence[int], align_corners: bool,
                                 scales_h: float | None = None,
                                 scales_w: float | None = None) -> torch.Tensor:
    """Gradient of bilinear upsampling: the interpolation matrices transposed."""
    return _separable_backward(grad, list(input_size[2:]), lambda x: aten.upsample_bilinear2d(
        x, output_size, align_corners, scales_h, scales_w))


def _replication_pad_backward(op: Any):
    def backward(grad: torch.Tensor, x: torch.Tensor, padding: Sequence[int]) -> torch.Tensor:
        """Gradient of replication padding: border cells collect their copies."""
        k = len(padding) // 2
        return _separable_backward(grad, list(x.shape[-k:]), lambda t: op(t, padding))

    return backward


def adaptive_avg_pool3d_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Gradient of 3-d adaptive average pooling."""
    return _separable_backward(grad, list(x.shape[-3:]), lambda t: aten._adaptive_avg_pool3d(
        t, list(grad.shape[-3:])))


def cdist_backward(grad: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor, p: float,
                   dist: torch.Tensor) -> torch.Tensor:
    """Gradient of ``cdist`` with respect to ``x1``: ``sum_j g_ij d(|x1_i - x2_j|_p)``;
    zero where a distance is zero."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    d = dist.unsqueeze(-1)
    if p == 0:
        return torch.zeros_like(x1)
    if p == float("inf"):
        part = torch.sign(diff) * (diff.abs() == d).to(diff.dtype)
    elif p == 1:
        part = torch.sign(diff)
    else:
        part = diff * diff.abs().pow(p - 2) / d.pow(p - 1)
    part = torch.where(d == 0, torch.zeros_like(part), part)
    return (grad.unsqueeze(-1) * part).sum(-2)


def diagonal_scatter(x: torch.Tensor, src: torch.Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> torch.Tensor:
    """``x`` with its diagonal (as ``torch.diagonal(x, offset, dim1, dim2)`` reads it)
    replaced by ``src``: an ``index_put`` at the diagonal's row-major positions."""
    pos = np.diagonal(np.arange(x.numel()).reshape(tuple(x.shape)), offset, dim1, dim2)
    flat = x.reshape(-1).index_put((torch.tensor(pos.reshape(-1)),), src.reshape(-1))
    return flat.reshape(x.shape)


def max_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[Any, Any]:
    """``(amax, argmax)`` along ``dim``."""
    return aten.amax(x, [dim], keepdim), aten.argmax(x, dim, keepdim)


def min_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[Any, Any]:
    """``(amin, argmin)`` along ``dim``."""
    return aten.amin(x, [dim], keepdim), aten.argmin(x, dim, keepdim)


def _strided_positions(size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None) -> torch.Tensor:
    """The flat positions ``offset + sum_k i_k * stride_k`` of a strided view, row-major."""
    idx = np.full(tuple(size), storage_offset or 0, dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return torch.tensor(idx.reshape(-1))


def as_strided(x: torch.Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> torch.Tensor:
    """A strided view of ``x``'s elements in row-major order (its storage, as a fresh
    contiguous tensor has it): a gather at the view's flat positions."""
    pos = _strided_positions(size, stride, storage_offset)
    return x.reshape(-1)[pos].reshape(list(size))


def as_strided_scatter(x: torch.Tensor, src: torch.Tensor, size: Sequence[int],
                       stride: Sequence[int], storage_offset: int | None = None
                       ) -> torch.Tensor:
    """``x`` with the elements of the strided view replaced by ``src`` (AOTAutograd's
    backward of ``as_strided``): an ``index_put`` at the view's flat positions."""
    pos = _strided_positions(size, stride, storage_offset)
    return x.reshape(-1).index_put((pos,), src.reshape(-1)).reshape(x.shape)


def masked_scatter(x: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """``x`` with its ``mask``-ed elements replaced, in row-major order, by the leading
    elements of ``source``: the k-th true element reads ``source.flatten()[k]``."""
    shape = torch.broadcast_shapes(x.shape, mask.shape)
    m = mask.expand(shape).reshape(-1)
    pos = torch.clamp(torch.cumsum(m.to(torch.int64), 0) - 1, min=0)
    pos = torch.clamp(pos, max=max(source.numel() - 1, 0))
    vals = source.reshape(-1)[pos]
    return torch.where(m, vals, x.expand(shape).reshape(-1)).reshape(shape)


def _pnorm(d: torch.Tensor, p: float, dim: int) -> torch.Tensor:
    if p == 0:
        return (d != 0).to(d.dtype).sum(dim)
    if p == float("inf"):
        return d.abs().amax(dim)
    if p == 2:
        return torch.sqrt((d * d).sum(dim))
    if p == 1:
        return d.abs().sum(dim)
    return torch.pow(torch.pow(d.abs(), p).sum(dim), 1.0 / p)


def cdist_forward(x1: torch.Tensor, x2: torch.Tensor, p: float,
                  compute_mode: int | None = None) -> torch.Tensor:
    """p-norm distances ``[..., P, R]`` between the rows of ``x1`` [..., P, M] and
    ``x2`` [..., R, M], from the broadcast differences."""
    return _pnorm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def pdist_forward(x: torch.Tensor, p: float = 2.0) -> torch.Tensor:
    """The condensed (upper triangle, row-major) pairwise p-norm distances of the rows of
    ``x`` [N, M]: ``N * (N - 1) / 2`` values."""
    n = x.shape[0]
    i, j = np.triu_indices(n, 1)
    return _pnorm(x[torch.tensor(i)] - x[torch.tensor(j)], p, -1)


def pdist_backward(grad: torch.Tensor, x: torch.Tensor, p: float,
                   pdist: torch.Tensor) -> torch.Tensor:
    """Gradient [N, M] of :func:`pdist_forward` for ``x`` [N, M] from ``grad`` and the
    forward's ``pdist`` [N*(N-1)/2], as torch's kernel defines it where the norm has no
    derivative: 0 for a pair at distance 0 (and, for ``p < 1``, for a zero difference);
    for ``p = inf`` every coordinate attaining the maximum gets the gradient."""
    i, j = (torch.tensor(v) for v in np.triu_indices(x.shape[0], 1))
    diff = x[i] - x[j]
    dist, g = pdist.unsqueeze(-1), grad.unsqueeze(-1)
    zero = torch.zeros_like(diff)
    if p == 0:
        per = zero
    elif p == 1:
        per = diff.sign() * g
    elif p == float("inf"):
        per = diff.sign() * (diff.abs() == dist).to(diff.dtype) * g
    else:
        safe = torch.where(dist == 0, torch.ones_like(dist), dist)
        per = diff / safe if p == 2 else (
            diff.sign() * diff.abs().pow(p - 1) / safe.pow(p - 1))
        per = torch.where(dist == 0, zero, per) * g
        if p < 1:
            per = torch.where(diff == 0, zero, per)
    return torch.zeros_like(x).index_add(0, i, per).index_add(0, j, -per)


def grid_sampler_2d_backward(grad: torch.Tensor, x: torch.Tensor, grid: torch.Tensor,
                             interpolation_mode: int, padding_mode: int,
                             align_corners: bool, output_mask: Sequence[bool]
                             ) -> tuple[Any, Any]:
    """Gradients ``(grad_input [N, C, H, W], grad_grid [N, Ho, Wo, 2])`` of
    ``grid_sampler_2d``: the vector-Jacobian product of torch's own decomposition of the
    forward (``torch._decomp``), traced by autograd into gathers and scatter-adds."""
    from torch._decomp import decomposition_table

    forward = decomposition_table[aten.grid_sampler_2d.default]
    _, pull = torch.func.vjp(
        lambda a, b: forward(a, b, interpolation_mode, padding_mode, align_corners), x, grid)
    gi, gg = pull(grad)
    return (gi if output_mask[0] else None), (gg if output_mask[1] else None)


DECOMPOSITIONS: dict[Any, Any] = {
    aten.convolution_backward.default: convolution_backward,
    aten.avg_pool2d_backward.default: avg_pool2d_backward,
    aten._adaptive_avg_pool2d_backward.default: adaptive_avg_pool2d_backward,
    aten._adaptive_avg_pool3d.default: adaptive_avg_pool,
    aten._adaptive_avg_pool3d_backward.default: adaptive_avg_pool3d_backward,
    aten.upsample_nearest2d_backward.default: upsample_nearest2d_backward,
    aten.upsample_bilinear2d_backward.default: upsample_bilinear2d_backward,
    aten.replication_pad1d_backward.default: _replication_pad_backward(aten.replication_pad1d),
    aten.replication_pad2d_backward.default: _replication_pad_backward(aten.replication_pad2d),
    aten.replication_pad3d_backward.default: _replication_pad_backward(aten.replication_pad3d),
    aten._cdist_backward.default: cdist_backward,
    aten.adaptive_max_pool2d.default: adaptive_max_pool2d,
    aten.adaptive_max_pool2d_backward.default: adaptive_max_pool2d_backward,
    aten.var_mean.correction: var_mean,
    aten.diagonal_scatter.default: diagonal_scatter,
    aten.max.dim: max_dim,
    aten.min.dim: min_dim,
    aten.as_strided.default: as_strided,
    aten.as_strided_scatter.default: as_strided_scatter,
    aten.masked_scatter.default: masked_scatter,
    aten._cdist_forward.default: cdist_forward,
    aten._pdist_forward.default: pdist_forward,
    aten._pdist_backward.default: pdist_backward,
    aten.grid_sampler_2d_backward.default: grid_sampler_2d_backward,
}
"""ATen overload -> oxla's decomposition."""
