#!/usr/bin/env python3
"""Regenerates the NumPy / zip / deflate fixtures of Tests/DatasetsTests (numpy only).

    python3 Tests/Fixtures/make_fixtures.py

The values are chosen by hand so that tests can assert them exactly."""
import io, os, zlib, zipfile
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
out = lambda name: os.path.join(here, name)

# coco-17, 3 sequences padded to 4 frames, x, y, confidence.
X = np.zeros((3, 4, 17, 3), dtype=np.float32)
for n in range(3):
    for t in range(4):
        for j in range(17):
            X[n, t, j] = [100 * n + 10 * t + j + 0.5, 200 + j * 0.25, 0.9]
X[0, 1, 5] = [np.nan, np.nan, 0.0]      # not detected: NaN coordinates
X[1, 2, 0, 2] = 0.0                      # confidence 0 -> absent
np.savez(out("coco_small.npz"), X=X, y=np.array(["wave", "clap", "wave"]), groups=np.array([7, 7, 8]),
         split=np.array(["train", "train", "test"]), lengths=np.array([4, 3, 2]), frame_rate=np.float64(30),
         image_size=np.array([640, 480]), skeleton=np.array("coco-17"))
np.savez_compressed(out("coco_small_compressed.npz"), X=X, y=np.array(["wave", "clap", "wave"]),
                    groups=np.array([7, 7, 8]), split=np.array(["train", "train", "test"]),
                    lengths=np.array([4, 3, 2]), frame_rate=np.float64(30), image_size=np.array([640, 480]),
                    skeleton=np.array("coco-17"))

# natops-8, float64, no confidence, integer labels with names.
Z = np.arange(2 * 2 * 8 * 3, dtype=np.float64).reshape(2, 2, 8, 3) / 8
np.savez(out("natops_ints.npz"), X=Z, y=np.array([1, 0]), label_names=np.array(["all-clear", "i-have-command"]),
         skeleton=np.array("natops-8"), n_train=np.int64(1))

# Bare X.npy + y.npy.
np.save(out("bare_X.npy"), X[:2, :2])
np.save(out("bare_y.npy"), np.array([3, 4], dtype=np.int32))

# Create ML: 2 sequences x 3 frames x [3, 18], normalised, origin bottom-left.
P = np.zeros((2, 3, 3, 18), dtype=np.float32)
for n in range(2):
    for t in range(3):
        P[n, t, 0, :] = np.linspace(0.1, 0.9, 18) + 0.01 * t   # x
        P[n, t, 1, :] = 0.25 + 0.5 * n                          # y (from the bottom)
        P[n, t, 2, :] = 0.8                                     # confidence
P[0, 1, 2, 3] = 0.0   # rightElbow not detected in frame 1
P[1, 2, :, :] = 0.0   # padding frame: nothing detected
np.savez(out("createml.npz"), poses=P, image_size=np.array([640, 480]), y=np.array(["jump", "squat"]))

# Bad inputs.
np.savez(out("bad_dtype.npz"), X=np.zeros((1, 2, 17, 3), dtype=np.int32), y=np.array(["a"]))
np.savez(out("bad_shape.npz"), X=np.zeros((2, 17, 3), dtype=np.float32), y=np.array(["a", "b"]))
np.save(out("fortran.npy"), np.asfortranarray(np.zeros((2, 3, 17, 3), dtype=np.float32)))
np.save(out("object.npy"), np.array([{"a": 1}], dtype=object), allow_pickle=True)
np.savez(out("bad_label.npz"), X=np.zeros((2, 1, 17, 3), dtype=np.float32), y=np.array([0, 5]),
         label_names=np.array(["a", "b"]), skeleton=np.array("coco-17"))
with open(out("coco_small.npz"), "rb") as f:
    good = f.read()
with open(out("truncated.npz"), "wb") as f:
    f.write(good[: len(good) // 2])
damaged = bytearray(good)
i = good.find(b"\x93NUMPY", good.find(b"X.npy")) + 200   # inside X's data
damaged[i] ^= 0xFF
with open(out("damaged_crc.npz"), "wb") as f:
    f.write(bytes(damaged))

# Raw deflate streams (no zlib header) of several shapes. The expected output is rebuilt by
# the Swift test with the same recipe (see InflateTests.expectedText).
def expected_text():
    out = bytearray(b"actiontrain deflate fixture " * 400)
    x = 12345
    for _ in range(3000):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append((x >> 16) & 0xFF)
    out += bytes(range(256)) * 40
    period = bytes((k * 7 + k // 13) & 0xFF for k in range(1000))
    out += period * 1200          # 1.2 MB: crosses the decoder's 1 MiB flush with 32 KiB history
    return bytes(out)

text = expected_text()
for level in (1, 9):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    with open(out(f"inflate_level{level}.deflate"), "wb") as f:
        f.write(c.compress(text) + c.flush())
c = zlib.compressobj(0, zlib.DEFLATED, -15)
with open(out("inflate_stored.deflate"), "wb") as f:
    f.write(c.compress(text[:5000]) + c.flush())
c = zlib.compressobj(6, zlib.DEFLATED, -15, strategy=zlib.Z_FIXED)
with open(out("inflate_fixed.deflate"), "wb") as f:
    f.write(c.compress(text[:20000]) + c.flush())
