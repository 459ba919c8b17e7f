"""vLLM generation for evaluation on a CUDA GPU (the ``gpu`` extra). Tested by ``gpu``-marked tests."""

from __future__ import annotations

from pathlib import Path


class VLLMGenerator:  # pragma: no cover - needs a GPU and vLLM
    """Same call as :class:`sdk.generate.HFGenerator`, through ``vllm.LLM`` with a LoRA request."""

    def __init__(self, model_path: str, adapter: str | Path | None, max_new_tokens: int, temperature: float,
                 seed: int) -> None:
        from vllm import LLM, SamplingParams

        self.llm = LLM(model=model_path, enable_lora=adapter is not None, seed=seed, gpu_memory_utilization=0.5)
        self.adapter = adapter
        self.params = lambda n: SamplingParams(n=n, temperature=temperature, max_tokens=max_new_tokens, seed=seed)

    def __call__(self, prompts: list[list[dict]], n: int = 1, progress=None):
        from vllm.lora.request import LoRARequest

        lora = LoRARequest("adapter", 1, str(self.adapter)) if self.adapter else None
        outs = self.llm.chat(prompts, self.params(n), lora_request=lora, use_tqdm=False)
        if progress:
            progress(len(prompts))
        return [[(c.text, len(c.token_ids)) for c in o.outputs] for o in outs]

    def close(self) -> None:
        """Release what this object holds (processes, files, models); safe to call twice."""
        del self.llm
