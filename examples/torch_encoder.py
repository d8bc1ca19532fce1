"""Transformer-encoder inference on the CPU with Debian's python3-torch: a
pure-Python tokenizer, batching, the model, and reading each result back.

    inferscope run --report report.html examples/torch_encoder.py

The scopes and markers are InferScope's API; without is-record they cost
nothing.
"""
import sys

import torch

from inferscope import mark_event, scope

WORDS = ("the quick brown fox jumps over a lazy dog while the model "
         "tokenizes every request one character class at a time").split()


def tokenize(text, vocab):
    # deliberately naive: a Python loop per character, as real
    # preprocessing written in Python often is
    ids, word = [], []
    for ch in text.lower():
        if ch.isalnum():
            word.append(ch)
        elif word:
            w = "".join(word)
            ids.append(vocab.setdefault(w, len(vocab) % 1000))
            word = []
    if word:
        ids.append(vocab.setdefault("".join(word), len(vocab) % 1000))
    return ids


def main(batches=30, batch=8, seq=48):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    emb = torch.nn.Embedding(1000, 128)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4,
                                             dim_feedforward=256,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    vocab = {}
    total = 0.0
    for b in range(batches):
        with scope("tokenize"):
            texts = [" ".join(WORDS[(b + i + k) % len(WORDS)]
                              for k in range(seq)) * 4
                     for i in range(batch)]
            ids = [tokenize(t, vocab)[:seq] for t in texts]
        mark_event("batch", metadata={"index": b, "requests": batch,
                                      "tokens": sum(map(len, ids))})
        with scope("forward"), torch.no_grad():
            x = emb(torch.tensor(ids))
            out = model(x)
        with scope("postprocess"):
            total += float(out.mean())      # one value back per batch
    print("%d batches, checksum %.4f" % (batches, total))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
