"""Serving tuned adapters: merge an adapter into its base (:mod:`sdk.serve.export`) and the vLLM
commands that serve either form. This layer loads models (torch, PEFT); evaluation does not."""
