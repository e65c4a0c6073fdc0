"""Tiny models of the families users bring (random weights, nothing downloaded), each with
a function making inputs for a given batch size and sequence length."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project, ReLU6, residual."""

    def __init__(self, c: int, expand: int = 4, stride: int = 1) -> None:
        super().__init__()
        h = c * expand
        self.stride = stride
        self.block = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False), nn.BatchNorm2d(h),
            nn.ReLU6(inplace=True), nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.stride == 1 else y


class MobileNetV2(nn.Module):
    """A 3-block MobileNetV2 with ReLU6 and a classifier."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU6(inplace=True))
        self.blocks = nn.Sequential(InvertedResidual(8), InvertedResidual(8, stride=2),
                                    InvertedResidual(8))
        self.head = nn.Linear(8, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


class UNetBlock(nn.Module):
    """A diffusion-UNet resnet block: GroupNorm, SiLU, conv, time embedding, skip conv,
    then a down and an up path."""

    def __init__(self, c_in: int = 8, c_out: int = 16, t_dim: int = 12) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(4, c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.time = nn.Linear(t_dim, c_out)
        self.norm2 = nn.GroupNorm(4, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1)
        self.down = nn.Conv2d(c_out, c_out, 3, 2, 1)
        self.up = nn.ConvTranspose2d(c_out, c_out, 4, 2, 1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(F.silu(t))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        h = h + self.skip(x)
        return self.up(self.down(h)) + h


class NormalizeNet(nn.Module):
    """Cosine-similarity head: ``F.normalize`` of embeddings against normalized classes."""

    def __init__(self, d: int = 16, classes: int = 5) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.classes = nn.Parameter(torch.randn(classes, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = F.normalize(self.proj(x), dim=-1)
        return e @ F.normalize(self.classes, dim=-1).t() * 10


class ResNetCNN(nn.Module):
    """A ResNet-style CNN: conv-BN-ReLU stem, a residual block, max pool, linear head."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU())
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(8, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        y = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(x + self.bn2(self.conv2(y)))
        x = self.pool(x)
        return self.head(x.mean((2, 3)))


class Conv1dNet(nn.Module):
    """A 1-d conv net over sequences: conv, GELU, strided conv, avg pool, linear."""

    def __init__(self, c: int = 4, classes: int = 3) -> None:
        super().__init__()
        self.c1 = nn.Conv1d(c, 8, 5, padding=2)
        self.c2 = nn.Conv1d(8, 8, 3, stride=2, dilation=2, padding=2)
        self.head = nn.Linear(8, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.c2(F.gelu(self.c1(x)))
        return self.head(F.avg_pool1d(x, 2).mean(-1))


def _hf(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import transformers as T

        torch.manual_seed(0)
        if name == "wav2vec2":
            cfg = T.Wav2Vec2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                                   conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                   num_conv_pos_embedding_groups=4, do_stable_layer_norm=False,
                                   feat_extract_norm="group")
            return T.Wav2Vec2Model(cfg)
        if name == "swin":
            cfg = T.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                               num_heads=[2, 2], window_size=4, mlp_ratio=2.0)
            return T.SwinModel(cfg, add_pooling_layer=True)
        if name == "llama":
            cfg = T.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=4, num_key_value_heads=2, vocab_size=64,
                                max_position_embeddings=64, use_cache=False)
            return T.LlamaForCausalLM(cfg)
        if name == "deit":
            cfg = T.DeiTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64, num_labels=5)
            return T.DeiTForImageClassificationWithTeacher(cfg)
        if name == "vit":
            cfg = T.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                              num_attention_heads=2, intermediate_size=64, num_labels=5)
            return T.ViTForImageClassification(cfg)
        raise KeyError(name)

    return make


def _randn(*shape: int) -> torch.Tensor:
    """Inputs that depend only on their shape (eager and compiled runs see the same)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape) * 31))


def _image(b: int, s: int) -> tuple[torch.Tensor, ...]:
    return (torch.randn(b, 3, 32, 32, generator=torch.Generator().manual_seed(b)),)


def _ids(b: int, s: int) -> tuple[torch.Tensor, ...]:
    return (torch.randint(0, 64, (b, s), generator=torch.Generator().manual_seed(b * 100 + s)),)


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[int, int], tuple], list]] = {
    # name: (make, inputs(batch, seq), [(batch, seq), (batch, seq)] sizes to try)
    "wav2vec2": (_hf("wav2vec2"),
                 lambda b, s: (_randn(b, s),),
                 [(1, 400), (2, 560)]),
    "swin": (_hf("swin"), _image, [(1, 0), (2, 0)]),
    "mobilenet_v2": (MobileNetV2, lambda b, s: (_randn(b, 3, s, s),), [(1, 32), (2, 24)]),
    "unet_block": (UNetBlock, lambda b, s: (_randn(b, 8, s, s), _randn(b, 12)),
                   [(1, 8), (2, 12)]),
    "normalize": (NormalizeNet, lambda b, s: (_randn(b, 16),), [(2, 0), (5, 0)]),
    "llama": (_hf("llama"), _ids, [(1, 8), (2, 12)]),
    "deit": (_hf("deit"), _image, [(1, 0), (2, 0)]),
}

TRAIN: dict[str, tuple[Callable[[], nn.Module], Callable[[int, int], tuple], int]] = {
    # name: (make, inputs, number of classes of the loss; 0: causal LM loss on the ids)
    "resnet_cnn": (ResNetCNN, lambda b, s: (_randn(b, 3, 8, 8),), 4),
    "vit": (_hf("vit"), _image, 5),
    "llama": (_hf("llama"), _ids, 0),
    "conv1d": (Conv1dNet, lambda b, s: (_randn(b, 4, 16),), 3),
}


def first_tensor(out: object) -> torch.Tensor:
    """The main output: a tensor, or a transformers output's first field."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "to_tuple"):
        return out.to_tuple()[0]
    return out[0]


def all_tensors(out: object) -> list[torch.Tensor]:
    """Every tensor of a model output, flattened."""
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
