"""A numpy MLP inference loop with a Python tokenizer step."""
import sys

import numpy as np

VOCAB = ["the", "model", "runs", "fast", "slow", "on", "cpu", "gpu", "with",
         "tokens", "batch", "of", "text", "and", "a", "small", "network"]
RNG = np.random.default_rng(0)
INDEX = {w: i for i, w in enumerate(VOCAB)}
EMB = RNG.standard_normal((len(VOCAB) + 1, 64)).astype(np.float32)
W1 = RNG.standard_normal((64, 256)).astype(np.float32) * 0.1
W2 = RNG.standard_normal((256, 16)).astype(np.float32) * 0.1


def tokenize(text):
    out = []
    for word in text.lower().split():
        word = word.strip(".,!?")
        out.append(INDEX.get(word, len(VOCAB)))
    return out


def infer(ids):
    x = EMB[ids].mean(axis=0)
    h = np.maximum(x @ W1, 0.0)
    z = h @ W2
    e = np.exp(z - z.max())
    return e / e.sum()


def main(n):
    words = [VOCAB[i % len(VOCAB)] for i in range(40)]
    text = " ".join(words) + "."
    total = 0.0
    for i in range(n):
        probs = infer(tokenize(text))
        total += float(probs[i % 16])
    print("%.6f" % total)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
