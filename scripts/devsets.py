#!/usr/bin/env python3
"""Development sets derived from the shared datasets, so that every recipe choice is measured on
more than the three official splits (issue 30: "each choice measured on at least six sets").

    scripts/devsets.py [--datasets ../shared/datasets] [--out runs/devsets] [--only NAME,...]

Imports NATOPS, UTKinect-Action3D and Penn Action with `actiontrain import` (official splits),
then writes native `.jsonl` sets beside them (test splits are never changed, only the training
side or the representation):

| set | what it is | stands for |
|---|---|---|
| natops, utk, penn | the official splits | |
| natops15, penn15, penn30 | 15 / 30 training sequences per class (the first ones of each class) | small datasets |
| natopsanon, utkanon, pennanon | the official sets with joints renamed j0, j1, ...: no bones, centre, torso or mirror pairs | an unknown skeleton |
| utk2d | UTKinect projected to 640x480 pixels through a Kinect v1 camera (f = 525 px), a 2D skeleton | 2D pose from a camera |
| utkview | UTKinect with every sequence turned about the vertical axis by a random angle in +-60 degrees | views that vary |
| natops2d | NATOPS's x and y only (pixels at 200 per unit), a 2D skeleton | 2D arm gestures |
| utkrot45, utkrot90, natopsrot45, natopsrot90 | the test split turned 45 / 90 degrees about the vertical axis (the training split as recorded) | a deployment camera at another azimuth |
| utk2drot45, utk2drot90 | utk2d whose test split is projected from a camera 45 / 90 degrees around | 2D pose from another viewpoint |
| utkanonrot90 | utkanon whose test split is turned 90 degrees about the vertical axis | an unknown 3D skeleton seen from another side |
| utkcams | every training sequence as seen by cameras at -30 and +30 degrees (two copies), every test sequence by a third at +90 | a multi-view set tested on an unseen camera |
| utktilt | the test split seen by a camera pitched 20 degrees down | a deployment camera higher than the training one |
| utkcamstilt | utkcams with its training cameras pitched 0 and 10 degrees down, the unseen test camera 25 degrees | cameras at other heights and azimuths |
| utkpairs2d | two people in 2D: each utk2d sequence beside another subject's sequence of the same class, 300 px to the right, started at a random offset | two-person 2D data |

Penn Action and UTKinect stay outside the repository (their terms): the default output folder
`runs/` is ignored by git.
"""
import argparse, json, math, os, random, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--datasets", default=os.path.join(os.path.dirname(root), "shared", "datasets"))
ap.add_argument("--out", default=os.path.join(root, "runs", "devsets"))
ap.add_argument("--only", default="", help="comma-separated set names (default: all)")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
only = set(filter(None, args.only.split(",")))


def binary():
    subprocess.run(["swift", "build", "-c", "release", "--product", "actiontrain"], cwd=root, check=True, capture_output=True)
    path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=root, check=True,
                          capture_output=True, text=True).stdout.strip()
    return os.path.join(path, "actiontrain")


def read(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    return lines[0], lines[1:]


def write(name, header, sequences):
    path = os.path.join(args.out, name + ".jsonl")
    with open(path, "w") as f:
        f.write(json.dumps(header) + "\n")
        for s in sequences:
            f.write(json.dumps(s, separators=(", ", ": ")) + "\n")
    train = sum(1 for s in sequences if s.get("split") == "train")
    print(f"{name}: {len(sequences)} sequences ({train} train) -> {path}")


def wanted(name):
    return not only or name in only


def per_class(sequences, n):
    """The first n training sequences of each class, and every other split unchanged."""
    count, kept = {}, []
    for s in sequences:
        if s.get("split") == "train":
            c = count.get(s["label"], 0)
            if c >= n:
                continue
            count[s["label"]] = c + 1
        kept.append(s)
    return kept


def map_points(sequences, f):
    """Each sequence with every pose's points mapped by f(name, point) -> (name, point) or None."""
    out = []
    for s in sequences:
        s = dict(s)
        frames = []
        for fr in s["frames"]:
            fr = dict(fr)
            pose = {}
            for k, v in fr["pose"].items():
                r = f(k, v)
                if r is not None:
                    pose[r[0]] = r[1]
            fr["pose"] = pose
            frames.append(fr)
        s["frames"] = frames
        out.append(s)
    return out


KINECT = dict(
    joints=["hipCenter", "spine", "shoulderCenter", "head", "leftShoulder", "leftElbow", "leftWrist", "leftHand",
            "rightShoulder", "rightElbow", "rightWrist", "rightHand", "leftHip", "leftKnee", "leftAnkle", "leftFoot",
            "rightHip", "rightKnee", "rightAnkle", "rightFoot"],
    mirrorPairs=[["leftShoulder", "rightShoulder"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"],
                 ["leftHand", "rightHand"], ["leftHip", "rightHip"], ["leftKnee", "rightKnee"],
                 ["leftAnkle", "rightAnkle"], ["leftFoot", "rightFoot"]],
    bones=[["hipCenter", "spine"], ["spine", "shoulderCenter"], ["shoulderCenter", "head"],
           ["shoulderCenter", "leftShoulder"], ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"], ["leftWrist", "leftHand"],
           ["shoulderCenter", "rightShoulder"], ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"], ["rightWrist", "rightHand"],
           ["hipCenter", "leftHip"], ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"], ["leftAnkle", "leftFoot"],
           ["hipCenter", "rightHip"], ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"], ["rightAnkle", "rightFoot"]],
    centre=["hipCenter"], torsoUpper=["shoulderCenter"], torsoLower=["hipCenter"])


def project(v):
    """Kinect v1 camera space (metres, y up) to 640x480 image pixels (y down)."""
    x, y, z = v[:3]
    z = max(z, 0.3)
    return [round(320 + 525 * x / z, 2), round(240 - 525 * y / z, 2)]


exe = binary()
src = {}
for name, kind, folder in [("natops", "natops", "natops"), ("utk", "utkinect", "utkinect_action3d"),
                           ("penn", "penn-action", "penn_action")]:
    path = os.path.join(args.out, name + ".jsonl")
    if not os.path.exists(path):
        subprocess.run([exe, "import", kind, os.path.join(args.datasets, folder), "--out", path, "--force"],
                       check=True, capture_output=True)
    src[name] = read(path)
    print(f"{name}: {len(src[name][1])} sequences -> {path}")

rng = random.Random(30)
if wanted("natops15"):
    h, s = src["natops"]
    write("natops15", h, per_class(s, 15))
if wanted("penn15"):
    h, s = src["penn"]
    write("penn15", h, per_class(s, 15))
if wanted("penn30"):
    h, s = src["penn"]
    write("penn30", h, per_class(s, 30))
ANON = {  # the built-in skeletons' joints, dimensions and units
    "utk": (KINECT["joints"], 3, "metres"),
    "natops": (["leftHandTip", "rightHandTip", "leftElbow", "rightElbow", "leftWrist", "rightWrist", "leftThumb", "rightThumb"], 3, "metres"),
    "penn": (["head", "leftShoulder", "rightShoulder", "leftElbow", "rightElbow", "leftWrist", "rightWrist", "leftHip", "rightHip",
              "leftKnee", "rightKnee", "leftAnkle", "rightAnkle"], 2, "pixels"),
}
for base, (joints, dims, units) in ANON.items():
    if wanted(base + "anon"):
        h, s = src[base]
        names = {j: f"j{i}" for i, j in enumerate(joints)}
        h = dict(h, skeleton={"name": f"anon-{len(joints)}", "dimensions": dims, "units": units, "joints": list(names.values())})
        write(base + "anon", h, map_points(s, lambda k, v: (names[k], v)))
if wanted("utk2d") or wanted("utkpairs2d"):
    h, s = src["utk"]
    h2 = dict(h, skeleton=dict(KINECT, name="kinect-v1-20-2d", dimensions=2, units="pixels"), imageSize=[640, 480])
    utk2d = map_points(s, lambda k, v: (k, project(v)))
    if wanted("utk2d"):
        write("utk2d", h2, utk2d)
    if wanted("utkpairs2d"):
        pairs = []
        for a in utk2d:
            others = [b for b in utk2d if b["label"] == a["label"] and b.get("group") != a.get("group")
                      and b.get("split") == a.get("split")]
            b = rng.choice(others)
            offset = rng.randrange(0, max(1, len(b["frames"]) // 3))
            frames = []
            for i, fa in enumerate(a["frames"]):
                people = [{"track": "a", "pose": fa["pose"]}]
                j = i + offset
                if j < len(b["frames"]):
                    people.append({"track": "b", "pose": {k: [v[0] + 300, v[1]] for k, v in b["frames"][j]["pose"].items()}})
                frame = {"people": people}
                if "t" in fa:
                    frame["t"] = fa["t"]
                frames.append(frame)
            pairs.append(dict(a, frames=frames))
        write("utkpairs2d", h2, pairs)
if wanted("utkview"):
    h, s = src["utk"]
    out = []
    for seq in s:
        a = math.radians(rng.uniform(-60, 60))
        c, sn = math.cos(a), math.sin(a)
        # About the vertical (y) axis through the sequence's first hip centre, so the body stays in view.
        first = next((fr["pose"]["hipCenter"] for fr in seq["frames"] if "hipCenter" in fr["pose"]), [0, 0, 2])
        def turn(k, v, c=c, sn=sn, o=first):
            x, z = v[0] - o[0], v[2] - o[2]
            return k, [round(o[0] + c * x + sn * z, 6), v[1], round(o[2] - sn * x + c * z, 6)] + v[3:]
        out += map_points([seq], turn)
    write("utkview", h, out)


def turn_about_vertical(seq, degrees, centre_joint):
    """`seq` turned by `degrees` about the vertical (y) axis through its first `centre_joint`
    (the mean of its first pose when the skeleton has none), so the body stays in view: what a
    camera at another azimuth sees of the same motion."""
    a = math.radians(degrees)
    c, sn = math.cos(a), math.sin(a)
    first = next((fr["pose"][centre_joint] for fr in seq["frames"] if centre_joint in fr["pose"]), None)
    if first is None:
        pts = [v for fr in seq["frames"] for v in fr["pose"].values()][:64] or [[0, 0, 0]]
        first = [sum(v[d] for v in pts) / len(pts) for d in range(3)]

    def turn(k, v, o=first):
        x, z = v[0] - o[0], v[2] - o[2]
        return k, [round(o[0] + c * x + sn * z, 6), v[1], round(o[2] - sn * x + c * z, 6)] + v[3:]
    return map_points([seq], turn)[0]


# Cross-view sets (issue 36): the training split as recorded, the test split seen from another
# azimuth; and "train on some views, test on another", as multi-view sets are evaluated.
CROSS = {"utk": "hipCenter", "natops": None}
for base, centre in CROSS.items():
    for degrees in (45, 90):
        name = f"{base}rot{degrees}"
        if not (wanted(name) or (base == "utk" and wanted(f"utk2drot{degrees}"))):
            continue
        h, s = src[base]
        turned = [turn_about_vertical(q, degrees, centre) if q.get("split") == "test" else q for q in s]
        if wanted(name):
            write(name, h, turned)
        if base == "utk" and wanted(f"utk2drot{degrees}"):
            h2 = dict(h, skeleton=dict(KINECT, name="kinect-v1-20-2d", dimensions=2, units="pixels"), imageSize=[640, 480])
            write(f"utk2drot{degrees}", h2, map_points(turned, lambda k, v: (k, project(v))))
if wanted("utkanonrot90"):
    # An unknown skeleton (no names, so no left/right pairs to turn it by) seen from a camera 90° around.
    h, s = read(os.path.join(args.out, "utkanon.jsonl")) if os.path.exists(os.path.join(args.out, "utkanon.jsonl")) else (None, None)
    if h is None:
        sys.exit("devsets: utkanonrot90 needs utkanon first (--only utkanon,utkanonrot90)")
    write("utkanonrot90", h, [turn_about_vertical(q, 90, "j0") if q.get("split") == "test" else q for q in s])
if wanted("utkcams"):
    # Three cameras around the performer: every training sequence seen by the cameras at -30 and
    # +30 degrees (two copies, as a multi-view recording gives), every test sequence by the third
    # camera at +90 degrees (60 degrees beyond the nearest training view).
    h, s = src["utk"]
    out = []
    for q in s:
        if q.get("split") == "test":
            out.append(dict(turn_about_vertical(q, 90, "hipCenter"), id=q["id"] + "@cam3" if "id" in q else None))
        else:
            for cam, degrees in (("cam1", -30), ("cam2", 30)):
                out.append(dict(turn_about_vertical(q, degrees, "hipCenter"), id=q["id"] + "@" + cam if "id" in q else None))
    write("utkcams", h, [{k: v for k, v in q.items() if v is not None} for q in out])
def tilt_about_horizontal(seq, degrees, centre_joint):
    """`seq` as seen by a camera pitched `degrees` down: turned about the camera's horizontal
    (x) axis through its first `centre_joint`, so the body's vertical is no longer the y axis."""
    a = math.radians(degrees)
    c, sn = math.cos(a), math.sin(a)
    first = next((fr["pose"][centre_joint] for fr in seq["frames"] if centre_joint in fr["pose"]), [0, 0, 2])

    def turn(k, v, o=first):
        y, z = v[1] - o[1], v[2] - o[2]
        return k, [v[0], round(o[1] + c * y - sn * z, 6), round(o[2] + sn * y + c * z, 6)] + v[3:]
    return map_points([seq], turn)[0]


if wanted("utktilt") or wanted("utkcamstilt"):
    # Cameras that look down (issue 36: a multi-view set's cameras stand at different heights):
    # utktilt, the test split seen by a camera pitched 20 degrees down, same azimuth; utkcamstilt,
    # utkcams' two training cameras pitched 0 and 10 degrees, its unseen test camera at +90
    # degrees pitched 25 degrees down.
    h, s = src["utk"]
    if wanted("utktilt"):
        write("utktilt", h, [tilt_about_horizontal(q, 20, "hipCenter") if q.get("split") == "test" else q for q in s])
    if wanted("utkcamstilt"):
        out = []
        for q in s:
            views = [("cam3", 90, 25)] if q.get("split") == "test" else [("cam1", -30, 0), ("cam2", 30, 10)]
            for cam, yaw, pitch in views:
                v = tilt_about_horizontal(turn_about_vertical(q, yaw, "hipCenter"), pitch, "hipCenter")
                out.append(dict(v, id=q["id"] + "@" + cam) if "id" in q else v)
        write("utkcamstilt", h, out)
if wanted("natops2d"):
    h, s = src["natops"]
    sk = {"name": "natops-8-2d", "dimensions": 2, "units": "pixels",
          "joints": ["leftHandTip", "rightHandTip", "leftElbow", "rightElbow", "leftWrist", "rightWrist", "leftThumb", "rightThumb"],
          "mirrorPairs": [["leftHandTip", "rightHandTip"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"],
                          ["leftThumb", "rightThumb"]]}
    write("natops2d", dict(h, skeleton=sk), map_points(s, lambda k, v: (k, [round(320 + 200 * v[0], 2), round(240 - 200 * v[1], 2)])))
