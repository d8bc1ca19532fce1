"""A small numpy inference loop with a Python tokenizer step, annotated
with InferScope's API.  Run it under is-record:

    is-record -o run.ist -- python3 examples/mlp_infer.py
"""
import numpy as np

from inferscope import mark_event, scope

VOCAB = ["the", "model", "runs", "fast", "on", "a", "small", "batch", "of",
         "text", "tokens", "with", "numpy"]
INDEX = {w: i for i, w in enumerate(VOCAB)}
RNG = np.random.default_rng(0)
EMB = RNG.standard_normal((len(VOCAB) + 1, 64)).astype(np.float32)
W1 = RNG.standard_normal((64, 256)).astype(np.float32) * 0.1
W2 = RNG.standard_normal((256, 8)).astype(np.float32) * 0.1


@scope("tokenize")
def tokenize(text):
    return [INDEX.get(w.strip(".,"), len(VOCAB)) for w in text.split()]


def infer(ids):
    x = EMB[ids].mean(axis=0)
    h = np.maximum(x @ W1, 0.0)
    z = h @ W2
    e = np.exp(z - z.max())
    return e / e.sum()


def main():
    text = " ".join(VOCAB * 3) + "."
    for step in range(200):
        with scope("request"):
            ids = tokenize(text)
            with scope("infer"):
                probs = infer(ids)
        if step % 50 == 0:
            mark_event("progress", metadata={"step": step,
                                             "top": int(probs.argmax())})


if __name__ == "__main__":
    main()
