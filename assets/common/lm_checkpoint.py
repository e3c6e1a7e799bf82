"""Kneser–Ney trigram LMs as checkpoints (shared by the text papers: OSCS, BREW).

The count tables go into a torch state_dict (tensors only, weights_only loading) and the
vocabulary into the JSON sidecar; values passed between assets hold a data-root-relative
reference, so they do not depend on where data/ lives.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from assets.common.ngram import KneserNeyTrigram
from resources.artifacts import data_ref, load_state_dict, resolve_data_ref, save_state_dict


def save_ngram_checkpoint(path: Path, model: KneserNeyTrigram, sidecar: dict[str, Any]) -> dict[str, Any]:
    """Write the model; returns {"checkpoint": ref, "vocab_size", "md5", "vocab"}."""
    arrays = model.to_arrays()
    vocab = [str(w) for w in arrays.pop("vocab")]
    written = save_state_dict(path, arrays, {"model": "KneserNeyTrigram", "vocab": vocab, "device": "cpu",
                                             **sidecar})
    return {"checkpoint": data_ref(path), "vocab_size": len(vocab), "md5": written["md5"], "vocab": vocab}


def load_ngram_checkpoint(checkpoint: dict[str, Any]) -> KneserNeyTrigram:
    """Inverse of save_ngram_checkpoint, from the asset value holding "checkpoint"."""
    state, sidecar = load_state_dict(resolve_data_ref(checkpoint["checkpoint"]))
    arrays = {name: tensor.numpy() for name, tensor in state.items()}
    arrays["vocab"] = np.array(sidecar["vocab"], dtype=np.str_)
    return KneserNeyTrigram.from_arrays(arrays)
