#!/usr/bin/env python3
"""PyTorch reference timings for actiontrain-bench layers graphconv: the same layer as
Conv2d(I, P*O, (K, 1)) over [B, I, T, J] plus einsum with A, forward and backward (with dx).

    scripts/graphconv-torch.py [THREADS ...] [--cpu]

--cpu (one thread) times with this thread's CPU clock, as actiontrain-bench's --cpu does."""
import sys, time
import torch

CPU = "--cpu" in sys.argv
clock = time.thread_time if CPU else time.perf_counter


def median(f, reps=5, min_s=0.1):
    f()
    out = []
    for _ in range(reps):
        n, t0 = 0, clock()
        while True:
            f(); n += 1
            el = clock() - t0
            if el >= min_s: break
        out.append(el / n)
    return sorted(out)[len(out) // 2]

cases = [(64, 64, 25, 3, 64, 1, 3), (64, 64, 25, 64, 64, 1, 3), (64, 64, 25, 64, 64, 9, 1), (64, 64, 25, 9, 64, 9, 3),
         (32, 32, 15, 9, 32, 9, 3), (32, 32, 15, 3, 32, 1, 3)]
for threads in [int(a) for a in sys.argv[1:] if a != "--cpu"] or [1, 2]:
    torch.set_num_threads(threads)
    for B, T, J, I, O, K, P in cases:
        conv = torch.nn.Conv2d(I, P * O, (K, 1), padding=((K - 1) // 2, 0))
        A = torch.rand(P, J, J)
        x = torch.randn(B, I, T, J, requires_grad=True)
        def fwd():
            z = conv(x).view(B, P, O, T, J)
            return torch.einsum("bpoti,pji->botj", z, A)
        y = fwd()
        g = torch.randn_like(y)
        f = median(lambda: fwd())
        fb = median(lambda: fwd().backward(g))
        print(f"B {B} T {T} J {J} I {I} O {O} K {K} P {P} threads {threads}: forward {f*1e3:.3f} ms, backward {(fb - f)*1e3:.3f} ms")
