"""The generator: load time from the GGUF file against the converted folder; torch's dynamic
int8 quantisation of its linear layers, and batched decoding, (speed and answers) on the
prompts of a real run.

    python bench/generator.py --data-dir data [--prompts 30] [--batch 8]

`--data-dir` is a data dir where `rag-assets run` materialised `generation_eval` (its prompts, as
the model read them, and its answers). Each answered prompt is decoded greedily by the float32
model (loaded from the converted folder) and by its int8 copy; the script prints decode time,
how many float32 answers equal the run's, how many int8 answers equal float32's, and token F1
of each against the reference answers. Then the same prompts decoded `--batch` at a time (left
padding, float32), against one at a time as `ask` decodes: total time and answers equal.
"""

import argparse
import copy
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from rag_assets.answering import scoring
from rag_assets.answering.generation import LocalLM


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--prompts", type=int, default=30)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    lm = LocalLM()
    gguf = {"gguf_file": lm.path.name}
    _, tok_s = timed(lambda: AutoTokenizer.from_pretrained(str(lm.path.parent), **gguf))
    _, model_s = timed(lambda: AutoModelForCausalLM.from_pretrained(str(lm.path.parent), dtype=torch.float32, **gguf))
    _, folder_s = timed(lm.load_weights)  # converts on this machine's first use
    _, again_s = timed(LocalLM().load_weights)
    print(f"load from GGUF: tokenizer {tok_s:.1f} s, model {model_s:.1f} s")
    print(f"load from the converted folder: {again_s:.2f} s (first use here, converting if needed: {folder_s:.1f} s)")

    table = pd.read_parquet(Path(args.data_dir) / "assets" / "generation_eval.parquet")
    table = table[~table["refused"]].head(args.prompts)
    int8 = copy.copy(lm)  # the same generator with int8 linear layers
    int8.model = torch.ao.quantization.quantize_dynamic(copy.deepcopy(lm.model), {torch.nn.Linear}, dtype=torch.qint8)
    encoded = [lm.tokenizer.encode(prompt, add_special_tokens=False) for prompt in table["prompt"]]  # as rendered
    rows, fp32_answers = [], []
    for r, ids in zip(table.itertuples(), encoded):
        (fp32,), fp32_s = timed(lambda: [g.text for g in lm.generate_ids([ids])])
        (q8,), q8_s = timed(lambda: [g.text for g in int8.generate_ids([ids])])
        fp32_answers.append(fp32)
        answers = list(r.answers) if r.answers is not None else []
        rows.append(
            {
                "same_as_run": fp32 == r.answer,
                "int8_same": q8 == fp32,
                "fp32_s": fp32_s,
                "int8_s": q8_s,
                "f1_fp32": scoring.token_f1(fp32, answers) if answers else np.nan,
                "f1_int8": scoring.token_f1(q8, answers) if answers else np.nan,
            }
        )
    t = pd.DataFrame(rows)
    print(f"\n{len(t)} answered prompts of generation_eval:")
    print(f"  float32 answers equal to the run's: {int(t['same_as_run'].sum())}/{len(t)}")
    print(f"  int8 answers equal to float32's:    {int(t['int8_same'].sum())}/{len(t)}")
    print(
        f"  decode: float32 {t['fp32_s'].sum():.1f} s, int8 {t['int8_s'].sum():.1f} s "
        f"({t['fp32_s'].sum() / t['int8_s'].sum():.2f}x)"
    )
    print(f"  token F1 (answers with a reference): float32 {t['f1_fp32'].mean():.3f}, int8 {t['f1_int8'].mean():.3f}")
    batched, batch_s = timed(lambda: [g.text for g in lm.generate_ids(encoded, args.batch)])
    same = sum(b == a for b, a in zip(batched, fp32_answers))
    print(
        f"  batches of {args.batch}: {batch_s:.1f} s against {t['fp32_s'].sum():.1f} s one at a time "
        f"({t['fp32_s'].sum() / batch_s:.2f}x); answers equal to one at a time: {same}/{len(encoded)}"
    )


if __name__ == "__main__":
    main()
