"""tuneloop SDK: verifiable task sets, sandboxed rewards, LoRA SFT + GRPO over TRL/PEFT, evaluation.

The core package. It never imports ``connectors`` or ``feedback``: those plug in through the
``tuneloop.sources`` entry-point group or dotted paths in the config.
"""

__version__ = "0.1.0"
