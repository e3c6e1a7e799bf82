"""Tiny transformer LM shared by flowtracer, hir and ts_layers (model, sampling, GRPO)."""
from assets.common.tiny_lm.model import LayerCache, TinyLM, TinyLMConfig, TinyLMOutput, token_logprobs

__all__ = ["LayerCache", "TinyLM", "TinyLMConfig", "TinyLMOutput", "token_logprobs"]
