"""A small transformer served on a GPU, step by step, with the habits that
make inference slow: a tokenizer in Python, token ids copied from pageable
memory, features from pinned memory, a side computation on a second CUDA
stream, one CUDA graph replay, and the result read back with .item() every
step (a synchronisation).  Each step is an NVTX range named "step".

    python3 examples/torch_gpu_serve.py --steps 100 --out times.json
    is-record -o t.ist -- python3 examples/torch_gpu_serve.py --steps 100
    python3 examples/torch_gpu_serve.py --profile kineto.json   # torch.profiler

--out writes the program's own step times (time.perf_counter_ns around each
NVTX range) as JSON, which tests/gpu/serve_check.py holds the trace to.
--tokenize-reps 100 --batch 1 makes the host the bottleneck, a large
batch and model (--batch 64 --seq 512 --dim 2048) the GPU.  Needs a CUDA device (make check-gpu runs it there).
"""
import argparse
import json
import sys
import time

import torch

TEXT = ("the quick brown fox jumps over the lazy dog while the model "
        "waits for its tokens ") * 8


def tokenize(text, seq, vocab, reps):
    """A deliberately plain Python tokenizer: a hash per word, padded;
    reps times over (a slower tokenizer, the same work traced or not)."""
    for _ in range(reps):
        ids = [sum(map(ord, w)) % vocab for w in text.split()][:seq]
    return ids + [0] * (seq - len(ids))


class Model(torch.nn.Module):
    def __init__(self, vocab, dim, layers):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer(
            dim, 4, dim * 2, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(
            layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, 2)

    def forward(self, ids, feats):
        h = self.encoder(self.embed(ids) + feats)
        return self.head(h[:, 0])


def build(args, dev):
    torch.manual_seed(0)
    model = Model(args.vocab, args.dim, args.layers).to(dev).eval()
    # the CUDA graph: a small post-processing MLP, captured once
    post = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 1)).to(dev).eval()
    g_in = torch.zeros(args.batch, 2, device=dev)
    side = torch.cuda.Stream()
    with torch.no_grad():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):        # warm up off the default stream
            for _ in range(2):
                post(g_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            g_out = post(g_in)
    return model, graph, g_in, g_out, side


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--tokenize-reps", type=int, default=2)
    ap.add_argument("--profile", metavar="JSON",
                    help="run the steps under torch.profiler, export here")
    ap.add_argument("--profile-cuda-only", action="store_true",
                    help="with --profile: CUDA activity alone, no CPU ops")
    ap.add_argument("--out", metavar="JSON",
                    help="write the program's own step times here")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("torch_gpu_serve.py: no CUDA device")
    dev = torch.device("cuda")
    model, graph, g_in, g_out, side = build(args, dev)
    pinned = torch.randn(args.batch, args.seq, args.dim).pin_memory()
    steps, total = [], 0.0

    main_stream = torch.cuda.current_stream()

    def one_step():
        nonlocal total
        t0 = time.perf_counter_ns()
        torch.cuda.nvtx.range_push("step")
        ids = [tokenize(TEXT, args.seq, args.vocab, args.tokenize_reps)
               for _ in range(args.batch)]
        x = torch.tensor(ids).to(dev)              # pageable: a staged copy
        f = pinned.to(dev, non_blocking=True)      # pinned: a direct DMA
        side.wait_stream(main_stream)
        with torch.cuda.stream(side):              # the second stream
            norm = f.norm()
        main_stream.wait_stream(side)
        y = model(x, f)
        g_in.copy_(y)
        graph.replay()
        total += (g_out.sum() + norm).item()       # a sync every step
        torch.cuda.nvtx.range_pop()
        steps.append([t0, time.perf_counter_ns()])

    with torch.no_grad():
        if args.profile:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CUDA]
            if not args.profile_cuda_only:
                acts.insert(0, ProfilerActivity.CPU)
            with profile(activities=acts) as prof:
                for _ in range(args.steps):
                    with torch.profiler.record_function("step"):
                        one_step()
                torch.cuda.synchronize()
            prof.export_chrome_trace(args.profile)
        else:
            for _ in range(args.steps):
                one_step()
    torch.cuda.synchronize()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"steps": steps, "clock": "perf_counter_ns",
                       "args": vars(args)}, f)
    print("%d steps, checksum %.3f" % (args.steps, total))


if __name__ == "__main__":
    main()
