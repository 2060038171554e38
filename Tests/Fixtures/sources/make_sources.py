#!/usr/bin/env python3
"""Regenerates the generated files of Tests/Fixtures/sources (the .jsonl files there are
written by hand). Values are chosen so that tests can assert them exactly.

    python3 Tests/Fixtures/sources/make_sources.py
"""
import os

here = os.path.dirname(os.path.abspath(__file__))
out = lambda name: os.path.join(here, name)

# MediaPipe Pose, as a Python script writes it: 33 landmarks by MediaPipe's snake_case names,
# normalised x, y (origin top-left) and visibility; one clip of 3 frames.
MEDIAPIPE = ["nose", "left_eye_inner", "left_eye", "left_eye_outer", "right_eye_inner", "right_eye",
             "right_eye_outer", "left_ear", "right_ear", "mouth_left", "mouth_right", "left_shoulder",
             "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_pinky",
             "right_pinky", "left_index", "right_index", "left_thumb", "right_thumb", "left_hip", "right_hip",
             "left_knee", "right_knee", "left_ankle", "right_ankle", "left_heel", "right_heel",
             "left_foot_index", "right_foot_index"]
with open(out("mediapipe.csv"), "w") as f:
    f.write("clip,label,frame," + ",".join(f"{n}_x,{n}_y,{n}_visibility" for n in MEDIAPIPE) + "\n")
    for t in range(3):
        row = []
        for k, n in enumerate(MEDIAPIPE):
            # Head at the top (y 0.2), feet at the bottom (y 0.9): y grows downwards.
            y = 0.2 + 0.7 * k / 32
            row += [f"{0.4 + 0.005 * k + 0.01 * t:.4f}", f"{y:.4f}", "0.9" if k != 17 else "0.0"]
        f.write(f"mp-1,squat,{t}," + ",".join(row) + "\n")

# OpenPose BODY_25 by OpenPose's names, pixels with confidence (0 where not detected).
BODY25 = ["Nose", "Neck", "RShoulder", "RElbow", "RWrist", "LShoulder", "LElbow", "LWrist", "MidHip", "RHip",
          "RKnee", "RAnkle", "LHip", "LKnee", "LAnkle", "REye", "LEye", "REar", "LEar", "LBigToe", "LSmallToe",
          "LHeel", "RBigToe", "RSmallToe", "RHeel"]
with open(out("openpose-body25.csv"), "w") as f:
    f.write("id,label," + ",".join(f"{n}_x,{n}_y,{n}_c" for n in BODY25) + "\n")
    for t in range(2):
        row = []
        for k, n in enumerate(BODY25):
            row += [str(300 + 2 * k + t), str(100 + 20 * k), "0" if n == "REar" else "0.8"]
        f.write("op-1,wave," + ",".join(row) + "\n")

# Kinect v2 (NTU RGB+D's 25 joints) by the SDK's JointType names, metres, y up.
KINECT2 = ["SpineBase", "SpineMid", "Neck", "Head", "ShoulderLeft", "ElbowLeft", "WristLeft", "HandLeft",
           "ShoulderRight", "ElbowRight", "WristRight", "HandRight", "HipLeft", "KneeLeft", "AnkleLeft", "FootLeft",
           "HipRight", "KneeRight", "AnkleRight", "FootRight", "SpineShoulder", "HandTipLeft", "ThumbLeft",
           "HandTipRight", "ThumbRight"]
HEIGHT = {"Head": 0.7, "Neck": 0.55, "SpineShoulder": 0.5, "SpineMid": 0.25, "SpineBase": 0.0, "HipLeft": -0.05,
          "HipRight": -0.05, "KneeLeft": -0.45, "KneeRight": -0.45, "AnkleLeft": -0.85, "AnkleRight": -0.85,
          "FootLeft": -0.9, "FootRight": -0.9}
with open(out("kinect-v2.csv"), "w") as f:
    f.write("sequence,label,t," + ",".join(f"{n}_x,{n}_y,{n}_z" for n in KINECT2) + "\n")
    for t in range(3):
        row = []
        for k, n in enumerate(KINECT2):
            side = -0.2 if "Left" in n else 0.2 if "Right" in n else 0.0
            row += [f"{side:.2f}", f"{HEIGHT.get(n, 0.3):.2f}", f"{2.5 + 0.01 * t:.2f}"]
        f.write(f"ntu-1,wave,{t / 30:.6f}," + ",".join(row) + "\n")

# Several people: X [N, M, T, J, C] (coco-17 with confidence). Sequence 0 has one person and a
# zero-padded second body (as PYSKL pads NTU); sequence 1 has two people, the second larger.
import numpy as np
X = np.zeros((2, 2, 3, 17, 3), dtype=np.float32)
for t in range(3):
    for j in range(17):
        X[0, 0, t, j] = [100 + j + t, 100 + 10 * j, 0.9]
        X[1, 0, t, j] = [100 + j, 100 + 5 * j, 0.9]
        X[1, 1, t, j] = [400 + 2 * j, 50 + 20 * j, 0.6]
np.savez(out("people.npz"), X=X, y=np.array(["wave", "handshake"]), skeleton=np.array("coco-17"),
         image_size=np.array([640, 480]))

# The same three sequences as CSV and as .npz (issue 18: one class order for both), labels in
# the order wave, clap, wave; and an .npz whose split is 0/1 integers.
Y = ["wave", "clap", "wave"]
with open(out("order.csv"), "w") as f:
    f.write("id,label,nose_x,nose_y\n")
    for n, label in enumerate(Y):
        f.write(f"s{n},{label},{10 * n + 1},{10 * n + 2}\n")
P = np.zeros((3, 1, 17, 2), dtype=np.float32)
for n in range(3):
    P[n, 0, 0] = [10 * n + 1, 10 * n + 2]
P[:, :, 1:] = np.nan
np.savez(out("order.npz"), X=P, y=np.array(Y), ids=np.array(["s0", "s1", "s2"]), skeleton=np.array("coco-17"))
np.savez(out("int-split.npz"), X=P, y=np.array([2, 0, 2]), split=np.array([0, 1, 0]), skeleton=np.array("coco-17"))

# Create ML's folder per label, one pose file per clip (Vision keypoints, normalised, origin
# bottom-left): the [3, 18] array form with an image size, the object form with Vision's raw
# key strings, and a CSV clip.
import json
ORDER = ["nose", "neck", "rightShoulder", "rightElbow", "rightWrist", "leftShoulder", "leftElbow", "leftWrist",
         "rightHip", "rightKnee", "rightAnkle", "leftHip", "leftKnee", "leftAnkle", "rightEye", "leftEye", "rightEar",
         "leftEar"]
os.makedirs(out("createml/wave"), exist_ok=True)
os.makedirs(out("createml/clap"), exist_ok=True)
frames = []
for t in range(2):
    xs = [round(0.25 + 0.025 * k + 0.125 * t, 4) for k in range(18)]
    ys = [round(0.9 - 0.025 * k, 4) for k in range(18)]
    cs = [0.0 if k == 4 else 0.5 for k in range(18)]  # the right wrist is not detected
    frames.append([xs, ys, cs])
with open(out("createml/wave/clip-1.json"), "w") as f:
    json.dump({"imageSize": [400, 200], "frameRate": 30, "frames": frames}, f)
with open(out("createml/wave/clip-2.json"), "w") as f:
    json.dump([{"head_joint": {"x": 0.5, "y": 0.75, "confidence": 0.9}, "left_foot_joint": [0.5, 0.25, 0.8]}, None], f)
with open(out("createml/clap/c1.csv"), "w") as f:
    f.write("nose_x,nose_y,nose_c,left_ankle_x,left_ankle_y,left_ankle_c\n0.5,0.75,0.9,0.5,0.25,0.8\n")

# MMAction2 / PYSKL annotation pickles, written with pickle.dump of real NumPy arrays (the
# reader must never execute them). 2D: protocol 2, as mmcv.dump writes, float16 keypoints and
# scores, a split dictionary; 3D: protocol 5 (in-band buffers), NTU-style two bodies with a
# zero-padded second body; a bare list of annotations at protocol 4.
import pickle

def body2d(t, shift):
    k = np.zeros((17, 2), dtype=np.float16)
    for j in range(17):
        k[j] = [100 + shift + j + t, 50 + 20 * j]
    return k

ann2d = []
for n, (name, label) in enumerate([("clip-a", 0), ("clip-b", 2), ("clip-c", 0)]):
    kp = np.stack([np.stack([body2d(t, 10 * n) for t in range(3)])])       # [1, 3, 17, 2]
    score = np.full((1, 3, 17), 0.5, dtype=np.float16)
    score[0, 1, 0] = 0.0                                                   # nose not detected in frame 1
    ann2d.append({"frame_dir": name, "label": label if n != 1 else np.int64(label), "img_shape": (480, 640),
                  "original_shape": (480, 640), "total_frames": 3, "keypoint": kp, "keypoint_score": score})
with open(out("pyskl-2d.pkl"), "wb") as f:
    pickle.dump({"split": {"xsub_train": ["clip-a", "clip-b"], "xsub_val": ["clip-c"]}, "annotations": ann2d}, f, protocol=2)

def body3d(t, dx):
    k = np.zeros((25, 3), dtype=np.float32)
    for j in range(25):
        k[j] = [dx + 0.01 * j, 1.0 - 0.04 * j + 0.01 * t, 3.0]
    return k

ann3d = []
for n, name in enumerate(["S001C001P001R001A050", "S001C001P002R001A001"]):
    kp = np.zeros((2, 2, 25, 3), dtype=np.float32)
    for t in range(2):
        kp[0, t] = body3d(t, -0.5)
        if n == 0:
            kp[1, t] = body3d(t, 0.5)      # a two-person action
    ann3d.append({"frame_dir": name, "label": 49 if n == 0 else 0, "total_frames": 2, "keypoint": kp})
with open(out("pyskl-3d.pkl"), "wb") as f:
    pickle.dump({"split": {"xsub_train": [ann3d[0]["frame_dir"]], "xsub_val": [ann3d[1]["frame_dir"]],
                           "xview_train": [ann3d[1]["frame_dir"]], "xview_val": [ann3d[0]["frame_dir"]]},
                 "annotations": ann3d}, f, protocol=5)
with open(out("pyskl-list.pkl"), "wb") as f:
    pickle.dump(ann2d[:1], f, protocol=4)
# Protocol 0 (text opcodes, strings as raw-unicode-escape, the array bytes as latin1 strings).
with open(out("pyskl-p0.pkl"), "wb") as f:
    pickle.dump({"split": {"xsub_train": ["clip-a", "clip-b"], "xsub_val": ["clip-c"]}, "annotations": ann2d}, f, protocol=0)

# Pickles that must be refused: code to run, Python objects in an array, a set.
class Evil:
    def __reduce__(self):
        import os
        return (os.system, ("echo this must never run",))
with open(out("evil.pkl"), "wb") as f:
    pickle.dump({"annotations": [Evil()]}, f, protocol=4)
with open(out("object-array.pkl"), "wb") as f:
    pickle.dump({"annotations": [{"frame_dir": "x", "keypoint": np.array([None, 1], dtype=object)}]}, f, protocol=2)
with open(out("set.pkl"), "wb") as f:
    pickle.dump({"annotations": [], "tags": {"a"}}, f, protocol=4)
