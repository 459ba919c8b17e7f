"""Files copied into the sandbox and run there by the sandbox's interpreter (never imported by
the caller): ``tl_runner.py`` runs pytest or a HumanEval-style ``check`` and reports through a
pipe whose lines carry a per-run nonce."""
