"""A torch CPU transformer-encoder inference loop (Debian's python3-torch)."""
import os
import sys
import time

import torch


def main(n, profile=False):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4,
                                             dim_feedforward=256,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    x = torch.randn(4, 32, 128)

    def loop():
        out = 0.0
        with torch.no_grad():
            for _ in range(n):
                out += float(model(x).sum())
        return out

    t = time.perf_counter()
    if profile:
        from torch.profiler import ProfilerActivity, profile as prof
        with prof(activities=[ProfilerActivity.CPU]):
            r = loop()
    else:
        r = loop()
    t = time.perf_counter() - t
    print("%.3f" % r)
    if os.environ.get("BENCH_LOOP_TIME"):
        # the inference loop alone, without start-up (import torch)
        with open(os.environ["BENCH_LOOP_TIME"], "a") as f:
            f.write("%.6f\n" % t)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60,
         os.environ.get("BENCH_TORCH_PROFILER") == "1")
