"""Export BERT-base with random weights to one ~420 MB .onnx file, to measure load time and memory.

    python bench/make_big_model.py /tmp/bert_base.onnx [--seq 128] [--opset 17] [--force]

BertModel(BertConfig()) (12 layers, hidden 768, 12 heads, vocab 30522: ~110 M float32 parameters),
exported with torch.onnx's TorchScript exporter (dynamo=False) into a single file, all weights inline.
Inputs ``input_ids`` and ``attention_mask`` (int64 [batch, sequence], both axes dynamic); outputs
``last_hidden_state`` and ``pooler_output``. Deterministic (torch.manual_seed(0)); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path


def export_bert_base(path: Path, seq: int = 128, opset: int = 17) -> None:
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig()).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)
            return out[0], out[1]

    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (2, seq), generator=gen)
    mask = torch.ones(2, seq, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".onnx", dir=path.parent)
    os.close(fd)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Wrapped(),
                (ids, mask),
                tmp,
                dynamo=False,
                opset_version=opset,
                input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state", "pooler_output"],
                dynamic_axes={
                    "input_ids": axes,
                    "attention_mask": axes,
                    "last_hidden_state": axes,
                    "pooler_output": {0: "batch"},
                },
            )
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, help="where to write the .onnx file")
    ap.add_argument("--seq", type=int, default=128, help="sequence length of the example input (default 128)")
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset (default 17)")
    ap.add_argument("--force", action="store_true", help="export even if the file exists")
    args = ap.parse_args(argv[1:])
    if args.path.exists() and not args.force:
        print(f"{args.path} exists ({args.path.stat().st_size / 1e6:.1f} MB); --force to export again")
        return 0
    t = time.perf_counter()
    export_bert_base(args.path, args.seq, args.opset)
    size = args.path.stat().st_size
    print(f"wrote {args.path}: {size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
