"""Ops lowered through decompositions (torch's ``torch._decomp`` or oxla's own), against
eager torch on random inputs: forward ops through export + import, backward ops called
directly (as AOTAutograd's graphs call them) and, for the differentiable forward ops,
their gradients through ``torch.compile(backend="oxla")``."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import oxla_frontend_torch as ot
import torch
import torch.nn.functional as F

from tests.frontend_torch.conftest import FnModule

aten = torch.ops.aten
_g = torch.Generator().manual_seed(0)
X = torch.randn(2, 4, 7, 6, generator=_g)
M = torch.randn(5, 6, generator=_g)
S = torch.randn(2, 3, 9, generator=_g)
W = torch.randn(6, 2, 3, 3, generator=_g)
G = torch.randn(2, 6, 4, 3, generator=_g)  # conv grad: X, W (groups=2), stride 2, pad 1
IDX = torch.tensor([[0, 2, 1], [4, 4, 0]])


def _mp_backward(x):
    y, i = aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
    return aten.max_pool2d_with_indices_backward(y * 0 + 1.5, x, [2, 2], [2, 2], [0, 0],
                                                 [1, 1], False, i)


FORWARD = {
    "hardtanh_relu6": (lambda x: F.hardtanh(x, -0.5, 0.7) + F.relu6(x * 4), (X,)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), (X,)),
    "elu": (lambda x: F.elu(x, 0.8), (X,)),
    "group_norm": (lambda x: F.group_norm(x, 2, torch.linspace(0.5, 1, 4),
                                          torch.linspace(-1, 1, 4)), (X,)),
    "normalize": (lambda x: F.normalize(x, dim=1) + torch.linalg.vector_norm(x, 3, -1,
                                                                             keepdim=True), (X,)),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (3, 2)), (X,)),
    "adaptive_avg_uneven": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (X,)),
    "adaptive_avg_3d": (lambda x: F.adaptive_avg_pool3d(x, (3, 2, 4)), (X,)),
    "as_strided": (lambda x: torch.as_strided(x.contiguous() + 1, (3, 2, 2), (4, 1, 7), 2),
                   (M,)),
    "as_strided_scatter": (lambda x: torch.as_strided_scatter(x * 2, x[:2, :3] + 1, (2, 3),
                                                              (6, 2), 1), (M,)),
    "slice_select_scatter": (lambda x: torch.slice_scatter(x, x[:, 1:4] * 2, 1, 1, 4)
                             + torch.select_scatter(x, x[2] * 3, 0, 2), (M,)),
    "index_put": (lambda x: torch.index_put(x, (torch.tensor([0, 3, 0]),),
                                            torch.ones(6), accumulate=True), (M,)),
    "max_min_dim": (lambda x: torch.max(x, 1)[0] + torch.min(x, 1, keepdim=True)[1], (M,)),
    "trig": (lambda x: torch.atan(x) + torch.asin(x.tanh()) + torch.acos(x.tanh() * 0.9)
             + torch.sinh(x) + torch.cosh(x) + torch.tan(x * 0.5) + torch.asinh(x)
             + torch.atanh(x.tanh() * 0.9) + torch.acosh(x.abs() + 1), (M,)),
    "log2_log10_trunc": (lambda x: torch.log2(x.abs() + 1) + torch.log10(x.abs() + 1)
                         + torch.trunc(x * 3), (M,)),
    "isinf_fill": (lambda x: torch.isinf(x / (x > 0)).float() + torch.fill(x, 2.5), (M,)),
    "diagonal": (lambda x: torch.diagonal(x, 1) * 2, (M,)),
    "reflection_replication_pad": (lambda x: F.pad(x, (1, 2), "reflect").sum(-1)
                                   + F.pad(x, (2, 1), "replicate").sum(-1), (S,)),
    "reflection_pad2d": (lambda x: F.pad(x, (1, 2, 2, 1), "reflect"), (X,)),
    "replication_pad3d": (lambda x: F.pad(x, (1, 1, 0, 1, 1, 0), "replicate"), (X,)),
    "masked_scatter": (lambda x: x.masked_scatter(x > 0, torch.arange(30.0).reshape(5, 6)),
                       (M,)),
    "cdist_pdist": (lambda x: torch.cdist(x, x[:3] + 1).sum() + F.pdist(x, 3).sum()
                    + torch.cdist(x, x * 2, p=1).sum(), (M,)),
    "interpolate": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest")[..., ::3, ::2]
                    .sum((2, 3)) + F.interpolate(x, size=(9, 5), mode="bilinear").sum((2, 3))
                    + F.interpolate(x, size=(5, 11), mode="bilinear", align_corners=True)
                    .sum((2, 3)), (X,)),
    "cdist": (lambda x: torch.cdist(x, x[:3] + 1) + torch.cdist(x, x[1:4] * 2, p=1)
              + torch.cdist(x, x[:3] - 1, p=3), (M,)),
    "grid_sample": (lambda x: F.grid_sample(x, torch.tanh(x[:, :2].permute(0, 2, 3, 1)),
                                            align_corners=False), (X,)),
    "fold_col2im": (lambda x: F.fold(x, (4, 5), (2, 2)), (torch.randn(2, 16, 12, generator=_g),)),
    "scatter_reduce": (lambda x: x.scatter_reduce(1, IDX, x[:2, :3] * 3, "amax",
                                                  include_self=False)
                       + x.scatter_reduce(0, IDX[:, :2], x[:2, :2], "prod")
                       + x.scatter_reduce(1, IDX, x[:2, :3], "sum"), (M,)),
    "conv_transpose": (lambda x: F.conv_transpose2d(x, W[:4], stride=2, padding=1,
                                                    output_padding=1, groups=2), (X,)),
    # backward ops, as AOTAutograd's graphs call them
    "convolution_backward": (lambda g, x, w: aten.convolution_backward(
        g, x, w, [6], [2, 2], [1, 1], [1, 1], False, [0, 0], 2, [True, True, True]),
        (G, X, W)),
    "convolution_backward_1d": (lambda g, x, w: aten.convolution_backward(
        g, x, w, None, [1], [2], [2], False, [0], 1, [True, True, False])[:2],
        (torch.randn(2, 5, 11, generator=_g), S, torch.randn(5, 3, 2, generator=_g))),
    "conv_backward_depthwise": (lambda g, x, w: aten.convolution_backward(
        g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 4, [True, True, False])[:2],
        (torch.randn(2, 4, 7, 6, generator=_g), X, torch.randn(4, 1, 3, 3, generator=_g))),
    "conv_transpose_backward": (lambda g, x, w: aten.convolution_backward(
        g, x, w, [6], [2, 2], [1, 0], [1, 1], True, [1, 0], 2, [True, True, True]),
        (torch.randn(2, 6, 10, 12, generator=_g), torch.randn(2, 4, 5, 6, generator=_g),
         torch.randn(4, 3, 3, 2, generator=_g))),
    "conv_transpose_backward_1d_dilated": (lambda g, x, w: aten.convolution_backward(
        g, x, w, None, [3], [1], [2], True, [2], 1, [True, True, False])[:2],
        (torch.randn(2, 2, 29, generator=_g), S, torch.randn(3, 2, 3, generator=_g))),
    "pdist_backward": (lambda g, x: tuple(aten._pdist_backward(
        g, x, p, aten._pdist_forward(x, p)) for p in (2.0, 1.0, 3.0, 0.5, float("inf"))),
        (torch.randn(15, generator=_g), torch.cat([M, M[:1]]))),
    "avg_pool2d_backward": (lambda g, x: aten.avg_pool2d_backward(
        g, x, [3, 3], [2, 2], [1, 1], False, False, None), (torch.randn(2, 4, 4, 3), X)),
    "adaptive_avg_pool2d_backward": (lambda g, x: aten._adaptive_avg_pool2d_backward(g, x),
                                     (torch.randn(2, 4, 3, 4, generator=_g), X)),
    "max_pool2d_backward": (_mp_backward, (X,)),
    "embedding_dense_backward": (lambda g: aten.embedding_dense_backward(g, IDX, 5, -1, False),
                                 (torch.randn(2, 3, 4, generator=_g),)),
    "group_norm_backward": (lambda g, x: aten.native_group_norm_backward(
        g, x, *aten.native_group_norm(x, None, None, 2, 4, 42, 2, 1e-5)[1:], None,
        2, 4, 42, 2, [True, False, False])[0], (torch.randn(2, 4, 7, 6, generator=_g), X)),
    "layer_norm_backward": (lambda g, x: aten.native_layer_norm_backward(
        g, x, [6], *aten.native_layer_norm(x, [6], None, None, 1e-5)[1:], None, None,
        [True, False, False])[0], (torch.randn(5, 6, generator=_g), M)),
    "softmax_backward": (lambda g, x: aten._softmax_backward_data(g, x.softmax(1), 1,
                                                                  torch.float32)
                         + aten._log_softmax_backward_data(g, x.log_softmax(0), 0,
                                                           torch.float32), (M * 2, M)),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_decomposed_op_matches_eager(name: str, assert_close) -> None:
    fn, args = FORWARD[name]
    model = FnModule(fn).eval()
    with torch.no_grad():
        want = model(*args)
    got = ot.compile(model, args, "interpreter")(*args)
    for gv, wv in zip(*(torch.utils._pytree.tree_leaves(v) for v in (got, want))):
        assert_close(gv, wv.to(gv.dtype) if wv.dtype == torch.bool else wv)


NO_GRAD: dict[str, str] = {}
GRAD = sorted(n for n, (_, args) in FORWARD.items()
              if len(args) == 1 and args[0].is_floating_point() and n not in NO_GRAD)


@pytest.mark.parametrize("name", GRAD)
def test_decomposed_op_gradient_matches_eager(name: str, assert_close) -> None:
    """The backward graph AOTAutograd makes for the op (its backward ops) runs on oxla."""
    torch._dynamo.reset()
    fn, (x,) = FORWARD[name]

    def loss(t):
        out = fn(t)
        return sum((o.float() * torch.linspace(-1, 2, o.numel()).reshape(o.shape)).sum()
                   for o in torch.utils._pytree.tree_leaves(out) if o.is_floating_point())

    want_x = x.clone().requires_grad_()
    loss(want_x).backward()
    got_x = x.clone().requires_grad_()
    torch.compile(loss, backend="oxla", options={"backend": "interpreter"})(got_x).backward()
    assert_close(got_x.grad, want_x.grad)


@pytest.mark.parametrize("name", ["trig", "scatter_reduce", "convolution_backward",
                                  "max_pool2d_backward", "as_strided"])
def test_decomposed_op_on_cpu_matches_eager(name: str, assert_close) -> None:
    """The cpu backend compiles what the decompositions emit (chlo ops, scatter with
    multiply/maximum bodies, transposed and batch-swapped convolutions, gathers)."""
    from oxla import plugins

    if "cpu" not in plugins.backends():
        pytest.skip("the cpu backend is not installed")
    fn, args = FORWARD[name]
    model = FnModule(fn).eval()
    with torch.no_grad():
        want = model(*args)
    got = ot.compile(model, args, "cpu")(*args)
    for gv, wv in zip(*(torch.utils._pytree.tree_leaves(v) for v in (got, want))):
        assert_close(gv, wv)
