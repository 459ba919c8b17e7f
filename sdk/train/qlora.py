"""Guards for 4-bit QLoRA (bitsandbytes) and for gradient flow in general.

The failure (measured here, bitsandbytes 0.50 on an AVX512-BF16 CPU; DESIGN.md): a
``Linear4bit`` forward pass in eval mode without grad *repacks* its weight into a CPU-specific
layout (``quant_state.packing_format_for_cpu``) in place. Training after that still runs and the
LoRA tensors still get gradients, but the gradients through the base weights are wrong: on a
2-layer model, LoRA-A gradients differed from a fresh model's by 40–110 % (relative L2 norm),
except the last layer's, with no error or warning. Any evaluation or generation before or
during training (TRL's GRPO generates in eval mode) triggers it.

:func:`disable_cpu_repacking` turns the repacking off on every ``Linear4bit`` (it is a speed
path for inference only); :class:`QLoraGuard` does that when training starts and refuses to go
on (``ModelError``) if a module is already repacked. :class:`GradientFlowGuard` is the general
check behind it: on the first optimizer steps every trainable tensor must have a gradient;
some having none means part of the graph is cut (a detached layer, a frozen path).
"""

from __future__ import annotations

from transformers import TrainerCallback

from sdk.errors import ModelError


def linear4bit_modules(model) -> list[tuple[str, object]]:
    """``(name, module)`` for every bitsandbytes ``Linear4bit`` in ``model`` (empty without bitsandbytes)."""
    try:
        import bitsandbytes as bnb
    except ImportError:
        return []
    return [(n, m) for n, m in model.named_modules() if isinstance(m, bnb.nn.Linear4bit)]


def repacked_modules(model) -> list[str]:
    """Names of ``Linear4bit`` modules whose weight is already in the CPU-packed layout."""
    return [n for n, m in linear4bit_modules(model)
            if getattr(getattr(m.weight, "quant_state", None), "packing_format_for_cpu", False)]


def disable_cpu_repacking(model) -> int:
    """Stop every ``Linear4bit`` from repacking its weight in eval mode; returns how many modules.

    Raises:
        ModelError: a module was already repacked (reload the model, then call this first).
    """
    bad = repacked_modules(model)
    if bad:
        raise ModelError(f"{len(bad)} 4-bit layers (e.g. {bad[0]}) were repacked by an eval-mode forward pass; "
                         "training them now would give wrong gradients silently",
                         "reload the 4-bit model and call sdk.train.qlora.disable_cpu_repacking(model) before any "
                         "evaluation or generation")
    mods = linear4bit_modules(model)
    for _, m in mods:
        m.support_avx512bf16_for_cpu = False
    return len(mods)


class QLoraGuard(TrainerCallback):
    """Trainer callback: disable 4-bit repacking at train start; fail if any layer gets repacked."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        """Trainer hook: set up before the first step."""
        if model is not None:
            disable_cpu_repacking(model)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        """Trainer hook: check after each optimizer step."""
        if model is not None and repacked_modules(model):
            disable_cpu_repacking(model)  # raises with the fix


class GradientFlowGuard(TrainerCallback):
    """Trainer callback: on the first ``steps`` optimizer steps, every trainable tensor must have a
    gradient. A zero gradient is allowed (GRPO groups without reward variance give exactly 0);
    ``None`` on some tensors while others have one means the graph is cut.

    Raises (from the callback):
        ModelError: names the first tensors without a gradient.
    """

    def __init__(self, steps: int = 1) -> None:
        self.steps = steps

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        """Trainer hook: check gradients before the optimizer applies them."""
        if model is None or state.global_step >= self.steps:
            return
        missing = missing_gradients(model)
        if missing:
            raise ModelError(f"{len(missing)} trainable tensors got no gradient (e.g. {missing[:3]})",
                             "something cuts the graph: a detached or no-grad forward path, or 4-bit layers "
                             "repacked in eval mode (use sdk.train.qlora.QLoraGuard)")


def missing_gradients(model) -> list[str]:
    """Names of trainable parameters whose ``.grad`` is None while at least one other has a gradient."""
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    missing = [n for n, p in trainable if p.grad is None]
    return missing if len(missing) < len(trainable) else []


def guards(model) -> list[TrainerCallback]:
    """The callbacks a model needs: :class:`QLoraGuard` when it is quantised (``hf_quantizer`` set), else none."""
    return [QLoraGuard()] if getattr(model, "hf_quantizer", None) is not None else []
