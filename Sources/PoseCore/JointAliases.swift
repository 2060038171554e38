/// Other spellings of a built-in skeleton's joint names: a detector's raw keys (Vision's
/// `head_joint`), another library's names (OpenPose's `RShoulder`, the Kinect SDK's
/// `ShoulderLeft`). Readers and the runtime resolve joint names through these tables
/// (`Skeleton.resolveJoint`), so data written with any of them lands on the same joints.
public struct JointAliasTable: Sendable, Equatable {
    /// A short identifier, e.g. `vision-raw`.
    public var name: String
    /// The skeleton whose joints the aliases name.
    public var skeleton: String
    /// Alias to the skeleton's joint name.
    public var aliases: [String: String]

    public init(name: String, skeleton: String, aliases: [String: String]) {
        self.name = name
        self.skeleton = skeleton
        self.aliases = aliases
    }
}

/// How a joint name matched a skeleton (`Skeleton.resolveJoint`).
public enum JointNameMatch: Equatable, Sendable, CustomStringConvertible {
    /// The skeleton's own name.
    case exact
    /// An alias of the named table.
    case alias(table: String)
    /// The skeleton's name compared without case, `_`, `-`, `.` and spaces
    /// (`left_shoulder`, `LEFT_SHOULDER`).
    case loose

    public var description: String {
        switch self {
        case .exact: return "the skeleton's names"
        case .alias(let table): return "alias table \(table)"
        case .loose: return "names compared without case and separators"
        }
    }
}

extension Skeleton {
    /// Every alias table, for the built-in skeletons they name.
    public static let aliasTables: [JointAliasTable] = [
        JointAliasTable(
            name: "vision-raw", skeleton: "vision-body-2d",
            aliases: [
                "head_joint": "nose", "left_eye_joint": "leftEye", "right_eye_joint": "rightEye",
                "left_ear_joint": "leftEar", "right_ear_joint": "rightEar", "neck_1_joint": "neck",
                "left_shoulder_1_joint": "leftShoulder", "right_shoulder_1_joint": "rightShoulder",
                "left_forearm_joint": "leftElbow", "right_forearm_joint": "rightElbow",
                "left_hand_joint": "leftWrist", "right_hand_joint": "rightWrist",
                "left_upLeg_joint": "leftHip", "right_upLeg_joint": "rightHip",
                "left_leg_joint": "leftKnee", "right_leg_joint": "rightKnee",
                "left_foot_joint": "leftAnkle", "right_foot_joint": "rightAnkle",
            ]),
        JointAliasTable(
            name: "vision-3d-raw", skeleton: "vision-body-3d",
            aliases: [
                "human_top_head_3D": "topHead", "human_center_head_3D": "centerHead",
                "human_center_shoulder_3D": "centerShoulder", "human_left_shoulder_3D": "leftShoulder",
                "human_right_shoulder_3D": "rightShoulder", "human_spine_3D": "spine", "human_root_3D": "root",
                "human_left_hip_3D": "leftHip", "human_right_hip_3D": "rightHip",
                "human_left_elbow_3D": "leftElbow", "human_right_elbow_3D": "rightElbow",
                "human_left_wrist_3D": "leftWrist", "human_right_wrist_3D": "rightWrist",
                "human_left_knee_3D": "leftKnee", "human_right_knee_3D": "rightKnee",
                "human_left_ankle_3D": "leftAnkle", "human_right_ankle_3D": "rightAnkle",
            ]),
        JointAliasTable(
            name: "vision-animal-raw", skeleton: "vision-animal",
            aliases: [
                "animal_joint_left_ear_top": "leftEarTop", "animal_joint_right_ear_top": "rightEarTop",
                "animal_joint_left_ear_middle": "leftEarMiddle", "animal_joint_right_ear_middle": "rightEarMiddle",
                "animal_joint_left_ear_bottom": "leftEarBottom", "animal_joint_right_ear_bottom": "rightEarBottom",
                "animal_joint_left_eye": "leftEye", "animal_joint_right_eye": "rightEye", "animal_joint_nose": "nose",
                // Vision's raw key for the neck is spelt "heck".
                "animal_joint_heck": "neck",
                "animal_joint_left_front_elbow": "leftFrontElbow", "animal_joint_right_front_elbow": "rightFrontElbow",
                "animal_joint_left_front_knee": "leftFrontKnee", "animal_joint_right_front_knee": "rightFrontKnee",
                "animal_joint_left_front_paw": "leftFrontPaw", "animal_joint_right_front_paw": "rightFrontPaw",
                "animal_joint_left_back_elbow": "leftBackElbow", "animal_joint_right_back_elbow": "rightBackElbow",
                "animal_joint_left_back_knee": "leftBackKnee", "animal_joint_right_back_knee": "rightBackKnee",
                "animal_joint_left_back_paw": "leftBackPaw", "animal_joint_right_back_paw": "rightBackPaw",
                "animal_joint_tail_top": "tailTop", "animal_joint_tail_middle": "tailMiddle",
                "animal_joint_tail_bottom": "tailBottom",
            ]),
        JointAliasTable(name: "openpose", skeleton: "openpose-body-25", aliases: openPoseNames),
        JointAliasTable(name: "openpose", skeleton: "openpose-coco-18", aliases: openPoseNames.filter { openPoseCOCO18.joints.contains($0.value) }),
        JointAliasTable(
            name: "kinect-v2-sdk", skeleton: "kinect-v2-25",
            aliases: [
                "SpineBase": "spineBase", "SpineMid": "spineMid", "Neck": "neck", "Head": "head",
                "ShoulderLeft": "leftShoulder", "ElbowLeft": "leftElbow", "WristLeft": "leftWrist", "HandLeft": "leftHand",
                "ShoulderRight": "rightShoulder", "ElbowRight": "rightElbow", "WristRight": "rightWrist", "HandRight": "rightHand",
                "HipLeft": "leftHip", "KneeLeft": "leftKnee", "AnkleLeft": "leftAnkle", "FootLeft": "leftFoot",
                "HipRight": "rightHip", "KneeRight": "rightKnee", "AnkleRight": "rightAnkle", "FootRight": "rightFoot",
                "SpineShoulder": "spineShoulder", "HandTipLeft": "leftHandTip", "ThumbLeft": "leftThumb",
                "HandTipRight": "rightHandTip", "ThumbRight": "rightThumb",
            ]),
        JointAliasTable(
            name: "kinect-v1-sdk", skeleton: "kinect-v1-20",
            aliases: [
                "HIP_CENTER": "hipCenter", "SPINE": "spine", "SHOULDER_CENTER": "shoulderCenter", "HEAD": "head",
                "SHOULDER_LEFT": "leftShoulder", "ELBOW_LEFT": "leftElbow", "WRIST_LEFT": "leftWrist", "HAND_LEFT": "leftHand",
                "SHOULDER_RIGHT": "rightShoulder", "ELBOW_RIGHT": "rightElbow", "WRIST_RIGHT": "rightWrist", "HAND_RIGHT": "rightHand",
                "HIP_LEFT": "leftHip", "KNEE_LEFT": "leftKnee", "ANKLE_LEFT": "leftAnkle", "FOOT_LEFT": "leftFoot",
                "HIP_RIGHT": "rightHip", "KNEE_RIGHT": "rightKnee", "ANKLE_RIGHT": "rightAnkle", "FOOT_RIGHT": "rightFoot",
            ]),
    ]

    /// OpenPose's body part names (`poseParameters.cpp`) to ours.
    static let openPoseNames: [String: String] = [
        "Nose": "nose", "Neck": "neck", "RShoulder": "rightShoulder", "RElbow": "rightElbow", "RWrist": "rightWrist",
        "LShoulder": "leftShoulder", "LElbow": "leftElbow", "LWrist": "leftWrist", "MidHip": "midHip", "RHip": "rightHip",
        "RKnee": "rightKnee", "RAnkle": "rightAnkle", "LHip": "leftHip", "LKnee": "leftKnee", "LAnkle": "leftAnkle",
        "REye": "rightEye", "LEye": "leftEye", "REar": "rightEar", "LEar": "leftEar", "LBigToe": "leftBigToe",
        "LSmallToe": "leftSmallToe", "LHeel": "leftHeel", "RBigToe": "rightBigToe", "RSmallToe": "rightSmallToe",
        "RHeel": "rightHeel",
    ]

    /// The alias tables of this skeleton (by name; empty for custom skeletons).
    public var aliasTables: [JointAliasTable] { Self.aliasTables.filter { $0.skeleton == name } }

    /// A joint name in lower case without `_`, `-`, `.` and spaces, for loose matching.
    public static func looseKey(_ s: String) -> String {
        String(s.lowercased().filter { $0 != "_" && $0 != "-" && $0 != " " && $0 != "." })
    }

    /// The index of the joint `name` refers to and how it matched: the skeleton's own name,
    /// else an alias of one of its tables, else its name compared loosely (`looseKey`), or nil.
    public func resolveJoint(_ name: String) -> (index: Int, match: JointNameMatch)? {
        if let k = index(of: name) { return (k, .exact) }
        for table in aliasTables {
            if let joint = table.aliases[name], let k = index(of: joint) { return (k, .alias(table: table.name)) }
        }
        let key = Self.looseKey(name)
        if let k = joints.firstIndex(where: { Self.looseKey($0) == key }) { return (k, .loose) }
        for table in aliasTables {
            if let (_, joint) = table.aliases.first(where: { Self.looseKey($0.key) == key }), let k = index(of: joint) {
                return (k, .alias(table: table.name))
            }
        }
        return nil
    }
}
