"""A PyTorch inference loop on a GPU with the usual mistakes: inputs copied
from pageable memory, a result read back with .item() every step, many
small kernels.  Needs a CUDA device (make check-gpu runs it there):

    inferscope run --report report.html examples/torch_gpu.py
"""
import sys

import torch

from inferscope import mark_event, scope


def main(steps=50):
    if not torch.cuda.is_available():
        sys.exit("torch_gpu.py: no CUDA device")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256)
                                  for _ in range(8)]).to(dev).eval()
    host = torch.randn(64, 256)              # pageable on purpose
    total = 0.0
    with torch.no_grad():
        for i in range(steps):
            with scope("step"):
                with scope("h2d"):
                    x = host.to(dev)
                with scope("forward"):
                    y = model(x)
                with scope("readback"):
                    total += y.sum().item()     # a sync every step
            if i % 10 == 0:
                mark_event("progress", metadata={"step": i})
    torch.cuda.synchronize()
    print("%d steps, checksum %.3f" % (steps, total))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
