"""leap.torch's per-call overhead and a compiled training step against eager.

Two measures (CPU, one process; run it once per commit to compare, alternating):

* **overhead**: a tiny cone-beam problem (16³ volume, 8 views of 16 x 16), where the
  kernels take little time: a ``Projector`` forward, and a forward + backward, against
  the kernels alone (``CTSystem.project`` / ``backproject`` into preallocated arrays),
  each best of ``--repeats`` blocks of ``--calls`` calls taken in turns (µs per call);
  the differences are the Python around the kernels. Run with ``NUMBA_NUM_THREADS=1``
  for steadier figures.
* **training step**: a small network with the projector inside (3-D conv → project →
  loss against a target sinogram → backward → an SGD update), eager against
  ``torch.compile(step, fullgraph=True)`` with the ``eager`` and ``inductor`` back-ends
  (ms per step, best of ``--repeats`` blocks after a warm-up that compiles).

Usage::

    python benchmarks/bench_torch_ops.py                 # both measures
    python benchmarks/bench_torch_ops.py --only overhead
    python benchmarks/bench_torch_ops.py --size 32 --views 32 --only step
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from leaptorch import Projector


def make_projector(n, views):
    proj = Projector(forward_project=True)
    proj.set_conebeam(views, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                      proj.leapct.setAngleArray(views, 360.0), 4.0 * n, 8.0 * n)
    proj.set_volume(n, n, n, 0.5, 0.5)
    return proj


def best_per_call(fn, calls, repeats):
    fn()                                    # compile and warm
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def interleaved_best(fns, calls, repeats):
    """Best µs per call of each of ``fns``, measured in turns (a block of each, then the
    next round), so that a slow spell of the machine hits them alike."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / calls * 1e6)
    return best


def overhead(args):
    proj = make_projector(args.size, args.views)
    f = torch.rand(1, args.size, args.size, args.size)
    fg = f.clone().requires_grad_(True)
    system = proj.leapct.system
    out = np.empty(system.projection_shape, np.float32)
    vol = np.empty(system.volume_shape, np.float32)
    g = np.asarray(proj(f)[0])

    def forward_backward():
        proj(fg).sum().backward()

    fns = {
        # the kernels alone, writing into preallocated arrays (the NumPy API's floor)
        "kernel: project": lambda: system.project(f.numpy()[0], out=out),
        "kernel: back-project": lambda: system.backproject(g, out=vol),
        "Projector forward": lambda: proj(f),
        "forward + backward": forward_backward,
    }
    t = interleaved_best(fns, args.calls, args.repeats)
    print(f"overhead: {args.size}³ volume, {args.views} views, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads")
    for name, v in t.items():
        print(f"  {name:34s} {v:9.1f} µs/call")
    kp, kb = t["kernel: project"], t["kernel: back-project"]
    print(f"  {'overhead of forward':34s} {t['Projector forward'] - kp:9.1f} µs/call")
    print(f"  {'overhead of forward + backward':34s} "
          f"{t['forward + backward'] - kp - kb:9.1f} µs/call")


class Net(torch.nn.Module):
    def __init__(self, proj):
        super().__init__()
        self.conv = torch.nn.Conv3d(1, 1, 3, padding=1)
        self.proj = proj

    def forward(self, x):
        return self.proj(torch.relu(self.conv(x[:, None]))[:, 0])


def training_step(args):
    """Eager against torch.compile(step, fullgraph=True), eager and inductor back-ends.
    The step is the test suite's (tests/torch/test_custom_ops.py): forward, loss.backward()
    (traced, trace_autograd_ops) and a written-out SGD update, since torch.optim's
    optimizers break the graph around step() by design."""
    torch.manual_seed(0)
    proj = make_projector(args.size, args.views)
    x = torch.rand(2, args.size, args.size, args.size)
    target = proj(torch.rand(2, args.size, args.size, args.size))
    print(f"training step: {args.size}³, {args.views} views, batch 2")
    results = {}
    modes = ("eager", "compile:eager", "compile:inductor")
    for mode in modes:
        torch._dynamo.reset()
        net = Net(proj)

        def step():
            loss = torch.nn.functional.mse_loss(net(x), target)
            loss.backward()
            with torch.no_grad():
                for p in net.parameters():
                    p -= 1e-3 * p.grad
            return loss.detach()

        def run(fn=(step if mode == "eager" else
                    torch.compile(step, fullgraph=True, backend=mode.split(":")[1]))):
            net.zero_grad(set_to_none=True)
            return fn()

        with torch._dynamo.config.patch(trace_autograd_ops=True):
            t0 = time.perf_counter()
            run()
            first = time.perf_counter() - t0
            t = best_per_call(run, args.steps, args.repeats)
        results[mode] = t
        print(f"  {mode:18s} {t * 1e3:8.2f} ms/step (first call {first:.2f} s)")
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=("overhead", "step"))
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--views", type=int, default=8)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    np.random.seed(0)
    if args.only in (None, "overhead"):
        overhead(args)
    if args.only in (None, "step"):
        training_step(args)


if __name__ == "__main__":
    main()
