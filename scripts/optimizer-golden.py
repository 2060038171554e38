#!/usr/bin/env python3
"""Golden values for Tests/ActionTrainTests/OptimizerTests.swift, computed with PyTorch.

    /root/.venvs/bench/bin/python scripts/optimizer-golden.py

Runs torch.optim.SGD / Adam / AdamW (foreach=False), clip_grad_norm_ and the learning-rate
schedulers on tiny fixed inputs, and three whole training steps of a small MLP (forward,
cross-entropy with label smoothing and class weights, backward, optimiser), and prints the
results as Swift array literals (Tests/ActionTrainTests/OptimizerTests.swift, `Golden`). The tests
compare actiontrain's optimisers with these numbers; re-run this script only to regenerate
them (they do not change unless PyTorch's formulas do).
"""
import math

import torch

torch.set_default_dtype(torch.float32)
P0 = [0.5, -1.5, 2.0, 0.25, -0.01]


def grads(t):  # gradient at step t (1-based), a fixed function of t
    return [0.1 * t - 0.3, 0.2, -0.5 + 0.05 * t, 1.0 / t, 3.0 * (-1) ** t]


def run(make, steps=3):
    p = torch.nn.Parameter(torch.tensor(P0))
    opt = make([p])
    for t in range(1, steps + 1):
        p.grad = torch.tensor(grads(t))
        opt.step()
    return p.detach().tolist()


def show(name, values, kind="Float"):
    print(f"    static let {name}: [{kind}] = [{', '.join(repr(float(v)) for v in values)}]")


show("sgdMomentumL2", run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01, foreach=False)))
show("sgdNesterov", run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, foreach=False)))
show("sgdPlain", run(lambda ps: torch.optim.SGD(ps, lr=0.1, foreach=False)))
show("adamL2", run(lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1, foreach=False)))
show("adamPlain", run(lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=False)))
show("adamW", run(lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, foreach=False)))

g = torch.nn.Parameter(torch.zeros(5))
g.grad = torch.tensor(grads(1))
norm = torch.nn.utils.clip_grad_norm_([g], max_norm=1.0)
show("clipped", g.grad.tolist())
print(f"    static let clipNorm: Double = {float(norm)!r}")


def schedule(make, steps):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.1)
    sched = make(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


S, E, W = 2, 6, 4  # steps per epoch, epochs, warm-up steps (2 epochs)
T = E * S - W
show("warmupCosine", schedule(lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
    torch.optim.lr_scheduler.LinearLR(o, start_factor=1 / W, end_factor=1.0, total_iters=W - 1),
    torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=T, eta_min=0.001)], milestones=[W]), E * S), "Double")
show("warmupStep", schedule(lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
    torch.optim.lr_scheduler.LinearLR(o, start_factor=1 / W, end_factor=1.0, total_iters=W - 1),
    torch.optim.lr_scheduler.StepLR(o, step_size=3 * S, gamma=0.5)], milestones=[W]), E * S), "Double")
show("cosine", schedule(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=E * S, eta_min=0.0), E * S), "Double")

# A whole training step against PyTorch: MLP 6-5-3 (ReLU), weights and inputs from fixed
# formulas, cross-entropy with label smoothing 0.1 and class weights, 3 full-batch steps
# of Adam (lr 0.01) and of SGD with Nesterov momentum, then the parameters in actiontrain's
# arena order (per layer: weight [out, in] row-major, then bias).
def formula(n, a, b):
    return [0.4 * math.sin(a * i + b) for i in range(n)]


def mlp_steps(make_opt):
    lin1, lin2 = torch.nn.Linear(6, 5), torch.nn.Linear(5, 3)
    with torch.no_grad():
        lin1.weight.copy_(torch.tensor(formula(30, 0.7, 0.1)).view(5, 6))
        lin1.bias.copy_(torch.tensor(formula(5, 1.3, 0.2)))
        lin2.weight.copy_(torch.tensor(formula(15, 0.9, 0.3)).view(3, 5))
        lin2.bias.copy_(torch.tensor(formula(3, 1.1, 0.4)))
    params = [lin1.weight, lin1.bias, lin2.weight, lin2.bias]
    opt = make_opt(params)
    x = torch.tensor([2.5 * v for v in formula(24, 0.37, 0.5)]).view(4, 6)
    y = torch.tensor([0, 2, 1, 2])
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(lin2(torch.relu(lin1(x))), y, label_smoothing=0.1,
                                                 weight=torch.tensor([1.0, 2.0, 0.5]))
        loss.backward()
        opt.step()
    return [v for p in params for v in p.detach().flatten().tolist()]


show("mlpAdam", mlp_steps(lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=False)))
show("mlpSGD", mlp_steps(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, foreach=False)))
