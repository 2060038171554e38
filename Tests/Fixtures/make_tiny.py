#!/usr/bin/env python3
"""Writes Tests/Fixtures/tiny-natops.jsonl: a tiny native-format dataset for fast CLI tests.

    python3 Tests/Fixtures/make_tiny.py

Skeleton natops-8 (8 joints, 3D). Three classes ("raise", "lower", "wave"), 8 sequences
each, 10 frames, with a "group" per sequence. Each class moves the hand tips along its own
trajectory plus seeded noise, so a small model separates them within a few epochs. Values
have 3 decimals to keep the file small. Deterministic (seed 7).
"""
import json
import math
import random
from pathlib import Path

rng = random.Random(7)
joints = ["leftHandTip", "rightHandTip", "leftElbow", "rightElbow",
          "leftWrist", "rightWrist", "leftThumb", "rightThumb"]
base = {j: [(-0.4 if j.startswith("left") else 0.4), -0.8 - 0.2 * i % 3, -0.3] for i, j in enumerate(joints)}
classes = ["raise", "lower", "wave"]
lines = [json.dumps({"actiontrain": "poses", "version": 1, "skeleton": "natops-8", "frameRate": 10.0,
                     "classes": classes})]
for c, name in enumerate(classes):
    for k in range(8):
        frames = []
        phase = rng.uniform(0, 1)
        for t in range(10):
            s = t / 9
            pose = {}
            for j in joints:
                x, y, z = base[j]
                hand = "Hand" in j or "Wrist" in j or "Thumb" in j
                if hand and name == "raise":
                    y -= 0.8 * s
                elif hand and name == "lower":
                    y += 0.8 * s
                elif hand and name == "wave":
                    x += 0.3 * math.sin(2 * math.pi * (2 * s + phase))
                pose[j] = [round(x + rng.gauss(0, 0.03), 3), round(y + rng.gauss(0, 0.03), 3),
                           round(z + rng.gauss(0, 0.03), 3)]
            frames.append({"pose": pose})
        lines.append(json.dumps({"id": f"{name}-{k}", "label": name, "group": f"{name}-{k}", "frames": frames},
                                separators=(",", ":")))
out = Path(__file__).with_name("tiny-natops.jsonl")
out.write_text("\n".join(lines) + "\n")
print(f"wrote {out} ({out.stat().st_size} bytes)")
