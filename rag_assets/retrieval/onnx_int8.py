"""The same sentence-transformers model run by ONNX Runtime with int8 weights.

The packaged weights are exported to ONNX (torch's TorchScript exporter, opset 17) and their
MatMul weights quantised to int8 per output channel by onnxruntime's own `quantize_dynamic`
(activations are quantised on the fly). The file is built once per source model and kept in a
cache folder named by the source's fingerprint; the export is deterministic, so the built
file's sha256, which enters the model identity, is the same on every machine with these
versions. Pooling (mean over real tokens) and L2 normalisation follow the source folder's
modules, as sentence-transformers does.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from rag_assets import storage

BACKEND = "onnx-int8"
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def check_supported(source: Path) -> None:
    """Refuse a model this runner cannot reproduce: it needs the fast tokenizer's file and
    implements mean pooling only."""
    if not (source / "tokenizer.json").exists():
        raise ValueError(f"{source}: no tokenizer.json; the int8 runner needs the fast tokenizer's file")
    config = source / "1_Pooling" / "config.json"
    if not config.exists():
        raise ValueError(f"{source}: no 1_Pooling/config.json; the int8 runner needs a mean-pooling model")
    modes = {k for k, v in json.loads(config.read_text()).items() if k.startswith("pooling_mode") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        raise ValueError(f"{source}: pooling {sorted(modes)}; the int8 runner implements mean pooling only")


def _no_preprocessing_advice(record: logging.LogRecord) -> bool:
    """Drop the advice `quantize_dynamic` logs on the root logger, with a URL, on every build: the
    pre-processing it advises would change the built file (whose sha256 is in the model identity),
    and a user who sees it on a first run can do nothing about it."""
    return not record.getMessage().startswith("Please consider")


def build(source: Path, out: Path) -> Path:
    """Export `source` (a sentence-transformers folder of a BERT-like encoder) and quantise it
    into `out`; returns the int8 file. Written through temporary names, renamed into place."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    check_supported(source)

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    model = LastHiddenState(AutoModel.from_pretrained(str(source))).eval()
    ids = torch.ones((2, 16), dtype=torch.long)
    out.mkdir(parents=True, exist_ok=True)
    fp32 = out / f"model-fp32.{os.getpid()}.tmp.onnx"
    int8 = out / "model-int8.onnx"
    staged = out / f"model-int8.{os.getpid()}.tmp.onnx"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (ids, torch.ones_like(ids), torch.zeros_like(ids)),
                str(fp32),
                input_names=list(INPUTS),
                output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "sequence"} for n in (*INPUTS, "last_hidden_state")},
                opset_version=OPSET,
                dynamo=False,
            )
        root = logging.getLogger()
        root.addFilter(_no_preprocessing_advice)
        try:
            quantize_dynamic(
                str(fp32),
                str(staged),
                weight_type=QuantType.QInt8,
                per_channel=True,
                extra_options={"DefaultTensorType": 1},  # float32 where shape inference cannot tell
            )
        finally:
            root.removeFilter(_no_preprocessing_advice)
        os.replace(staged, int8)
    finally:
        fp32.unlink(missing_ok=True)
        staged.unlink(missing_ok=True)
    storage.write_text(out / "source.txt", f"{source}\n")
    return int8


class Int8Encoder:
    """Texts to L2-normalised mean-pooled vectors through an int8 ONNX file and the source
    folder's own tokenizer, truncated at the model's window like sentence-transformers."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path, window: int, threads: int | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        threads = threads or len(os.sched_getaffinity(0))
        self.pool = ThreadPoolExecutor(max(1, threads))  # one per encoder, not per call
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(window)
        self.tokenizer.no_padding()  # the file may ask for fixed-length padding
        self.dim = int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str]) -> np.ndarray:
        """One text per call: dynamic quantisation scales activations per call, so in a batch a
        vector would depend on its batch-mates (and their padding); alone it depends on its text.
        The calls run on a thread per core, of one intra-op thread each; a query runs on its own."""
        vectors = [self._one(texts[0])] if len(texts) == 1 else list(self.pool.map(self._one, texts))
        return np.stack(vectors) if vectors else np.zeros((0, self.dim), dtype=np.float32)

    def _one(self, text: str) -> np.ndarray:
        encoded = self.tokenizer.encode(text)
        ids = np.array([encoded.ids], dtype=np.int64)
        types = np.array([encoded.type_ids], dtype=np.int64)
        hidden = self.session.run(
            None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": types}
        )
        mean = hidden[0][0].mean(axis=0)
        return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)
