"""Single ATen ops through export + import + interpreter, against eager torch.

These cover rules the model tests do not reach (or reach only one way).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import oxla_frontend_torch as ot
import torch
import torch.nn.functional as F

from tests.frontend_torch.conftest import FnModule

_g = torch.Generator().manual_seed(0)
X = torch.randn(2, 3, 6, 6, generator=_g)
M = torch.randn(4, 5, generator=_g)
I = torch.randint(-7, 7, (4, 5), generator=_g)

CASES = {
    "triu_tril": (lambda x: torch.triu(x, 1) + torch.tril(x, -1), (M,)),
    "cumsum": (lambda x: torch.cumsum(x, 1), (M,)),
    "cumsum_int": (lambda x: torch.cumsum(x, 0), (I,)),
    "argmax_argmin": (lambda x: torch.argmax(x, 1) * 10 + torch.argmin(x, 0)[:4], (M,)),
    "adv_index": (lambda x: x[torch.tensor([0, 3, -1]), 1:3], (M,)),
    "adv_index_2": (lambda x: x[torch.tensor([[0], [2]]), torch.tensor([1, -2])], (M,)),
    "gather": (lambda x: torch.gather(x, 1, torch.tensor([[0, 4], [1, 1], [2, 3], [4, 0]])),
               (M,)),
    "index_select": (lambda x: torch.index_select(x, 1, torch.tensor([4, 0, 2])), (M,)),
    "pad": (lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), (X,)),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.3) + x.clamp(min=0.1), (M,)),
    "div_modes": (lambda x: torch.div(x, 0.7, rounding_mode="floor")
                  + torch.div(x, 0.7, rounding_mode="trunc"), (M,)),
    "int_floor_div": (lambda x: torch.div(x, 3, rounding_mode="floor") + x % 3, (I,)),
    "var_mean": (lambda x: torch.var(x, dim=(2, 3), keepdim=True) + x.mean(dim=1,
                                                                            keepdim=True), (X,)),
    "amax_amin_sum": (lambda x: x.amax(1) - x.amin(1) + x.sum(1), (M,)),
    "avg_pool_pad": (lambda x: F.avg_pool2d(x, 3, 2, 1), (X,)),
    "avg_pool_ceil": (lambda x: F.avg_pool2d(x, 3, 2, 0, ceil_mode=True,
                                             count_include_pad=False), (X,)),
    "max_pool_ceil": (lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True)[..., :2], (X[..., :5],)),
    "adaptive_avg": (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (X,)),
    "softmaxes": (lambda x: F.softmax(x, -1) + F.log_softmax(x, 0), (M,)),
    "gelu_both": (lambda x: F.gelu(x) + F.gelu(x, approximate="tanh") + F.silu(x), (M,)),
    "compare_logic": (lambda x: ((x > 0) & (x < 0.5) | ~(x != x)).float() + (x >= 0.2), (M,)),
    "where_masked_fill": (lambda x: torch.where(x > 0, x, 0.0).masked_fill(x < -1, -9.0), (M,)),
    "sdpa_mask_causal": (lambda q: F.scaled_dot_product_attention(q, q * 0.5, q, is_causal=True)
                         + F.scaled_dot_product_attention(
                             q, q, q, attn_mask=torch.ones(6, 6, dtype=torch.bool).tril()),
                         (X,)),
    "conv_grouped": (lambda x: F.conv2d(x[:, :2], torch.ones(4, 1, 3, 3) * 0.1, stride=2,
                                        padding=1, groups=2), (X,)),
    "batch_norm_train": (lambda x: F.batch_norm(x, None, None, training=True), (X,)),
    "arange_full": (lambda x: x + torch.arange(5) * 0.5 + torch.full((4, 5), 2.0), (M,)),
    "pow_rsqrt": (lambda x: x.abs().pow(1.5) + (x.abs() + 1).rsqrt() + x ** 2, (M,)),
    "cat_split": (lambda x: torch.cat(torch.split(x, [2, 3], 1)[::-1], 1), (M,)),
    "expand_repeat": (lambda x: x[:, :1].expand(4, 3) + x[:2, :3].repeat(2, 1), (M,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_eager(name: str, assert_close) -> None:
    fn, args = CASES[name]
    model = FnModule(fn).eval()
    with torch.no_grad():
        want = model(*args)
    got = ot.compile(model, args, "interpreter")(*args)
    assert_close(got, want)
