/// Built-in skeleton schemas. Joint names follow Apple Vision's Swift API spelling
/// (`leftShoulder`), and sides are anatomical. The Vision schemas' joint names and counts are
/// those of Vision's headers (`VNDetectHumanBodyPoseRequest.h`, `VNTypes.h`: 19 body joints,
/// 17 3D joints, 25 animal joints); `SkeletonSchemaTests` pins them.
extension Skeleton {
    /// All built-in schemas by name.
    public static let builtIn: [String: Skeleton] = {
        var all: [String: Skeleton] = [:]
        for s in [
            visionBody2D, visionBody3D, visionAnimal, coco17, natops, pennAction, kinectV1, mediaPipePose, openPoseBody25,
            openPoseCOCO18, kinectV2,
        ] {
            all[s.name] = s
        }
        return all
    }()

    /// Looks up a built-in schema by name.
    public static func named(_ name: String) throws -> Skeleton {
        guard let s = builtIn(named: name) else {
            throw PoseError.unknownSkeleton(name, known: builtIn.keys.sorted())
        }
        return s
    }

    /// Apple Vision 2D human body pose (`VNHumanBodyPoseObservation`): 19 joints in image
    /// pixels (after conversion from Vision's normalised, bottom-left coordinates). Create ML's
    /// `keypointsMultiArray()` layout has 18 of them (no `root`), see `CreateMLFormat`.
    public static let visionBody2D = Skeleton(
        name: "vision-body-2d",
        joints: [
            "nose", "leftEye", "rightEye", "leftEar", "rightEar", "neck", "root",
            "leftShoulder", "rightShoulder", "leftElbow", "rightElbow", "leftWrist", "rightWrist",
            "leftHip", "rightHip", "leftKnee", "rightKnee", "leftAnkle", "rightAnkle",
        ],
        dimensions: 2, units: .pixels,
        mirrorPairs: [
            ["leftEye", "rightEye"], ["leftEar", "rightEar"], ["leftShoulder", "rightShoulder"],
            ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"], ["leftHip", "rightHip"],
            ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"],
        ],
        bones: [
            ["nose", "leftEye"], ["nose", "rightEye"], ["leftEye", "leftEar"], ["rightEye", "rightEar"],
            ["nose", "neck"], ["neck", "leftShoulder"], ["neck", "rightShoulder"],
            ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"],
            ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"],
            ["neck", "root"], ["root", "leftHip"], ["root", "rightHip"],
            ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"],
            ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"],
        ],
        centre: ["root"],
        torsoUpper: ["neck"], torsoLower: ["root"]
    )

    /// The order of the 18 joints in `VNHumanBodyPoseObservation.keypointsMultiArray()`'s
    /// `[3, 18]` array, in Vision's joint names (`root` is not among them). Apple's Vision
    /// documentation does not state it; the evidence is the description Create ML writes into
    /// every action classifier's `poses` input, which Xcode copies into the generated model
    /// interface ("The last dimension indexes the keypoint type, ordered as: nose, neck, right
    /// shoulder, right elbow, right wrist, left shoulder, left elbow, left wrist, right hip,
    /// right knee, right ankle, left hip, left knee, left ankle, right eye, left eye, right ear,
    /// left ear"), together with Apple's Action & Vision sample, which feeds
    /// `keypointsMultiArray()` to that input unchanged. It is OpenPose's COCO-18 order.
    public static let createMLKeypointOrder = [
        "nose", "neck", "rightShoulder", "rightElbow", "rightWrist", "leftShoulder", "leftElbow", "leftWrist",
        "rightHip", "rightKnee", "rightAnkle", "leftHip", "leftKnee", "leftAnkle", "rightEye", "leftEye", "rightEar",
        "leftEar",
    ]

    /// Apple Vision 3D human body pose (`VNHumanBodyPose3DObservation`): 17 joints in
    /// metres, origin at the root (hip centre).
    public static let visionBody3D = Skeleton(
        name: "vision-body-3d",
        joints: [
            "topHead", "centerHead", "centerShoulder", "leftShoulder", "rightShoulder", "spine", "root",
            "leftHip", "rightHip", "leftElbow", "rightElbow", "leftWrist", "rightWrist",
            "leftKnee", "rightKnee", "leftAnkle", "rightAnkle",
        ],
        dimensions: 3, units: .metres,
        mirrorPairs: [
            ["leftShoulder", "rightShoulder"], ["leftHip", "rightHip"], ["leftElbow", "rightElbow"],
            ["leftWrist", "rightWrist"], ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"],
        ],
        bones: [
            ["topHead", "centerHead"], ["centerHead", "centerShoulder"],
            ["centerShoulder", "leftShoulder"], ["centerShoulder", "rightShoulder"],
            ["centerShoulder", "spine"], ["spine", "root"], ["root", "leftHip"], ["root", "rightHip"],
            ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"],
            ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"],
            ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"],
            ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"],
        ],
        centre: ["root"],
        torsoUpper: ["centerShoulder"], torsoLower: ["root"]
    )

    /// Apple Vision animal body pose (`VNAnimalBodyPoseObservation`, cats and dogs):
    /// 25 joints in image pixels. Each animal in a frame is its own sequence.
    public static let visionAnimal = Skeleton(
        name: "vision-animal",
        joints: [
            "leftEarTop", "rightEarTop", "leftEarMiddle", "rightEarMiddle",
            "leftEarBottom", "rightEarBottom", "leftEye", "rightEye", "nose", "neck",
            "leftFrontElbow", "rightFrontElbow", "leftFrontKnee", "rightFrontKnee",
            "leftFrontPaw", "rightFrontPaw", "leftBackElbow", "rightBackElbow",
            "leftBackKnee", "rightBackKnee", "leftBackPaw", "rightBackPaw",
            "tailTop", "tailMiddle", "tailBottom",
        ],
        dimensions: 2, units: .pixels,
        mirrorPairs: [
            ["leftEarTop", "rightEarTop"], ["leftEarMiddle", "rightEarMiddle"],
            ["leftEarBottom", "rightEarBottom"], ["leftEye", "rightEye"],
            ["leftFrontElbow", "rightFrontElbow"], ["leftFrontKnee", "rightFrontKnee"],
            ["leftFrontPaw", "rightFrontPaw"], ["leftBackElbow", "rightBackElbow"],
            ["leftBackKnee", "rightBackKnee"], ["leftBackPaw", "rightBackPaw"],
        ],
        bones: [
            ["leftEarTop", "leftEarMiddle"], ["leftEarMiddle", "leftEarBottom"],
            ["rightEarTop", "rightEarMiddle"], ["rightEarMiddle", "rightEarBottom"],
            ["leftEye", "nose"], ["rightEye", "nose"], ["nose", "neck"],
            ["neck", "leftFrontElbow"], ["leftFrontElbow", "leftFrontKnee"], ["leftFrontKnee", "leftFrontPaw"],
            ["neck", "rightFrontElbow"], ["rightFrontElbow", "rightFrontKnee"], ["rightFrontKnee", "rightFrontPaw"],
            ["neck", "tailTop"], ["tailTop", "tailMiddle"], ["tailMiddle", "tailBottom"],
            ["tailTop", "leftBackElbow"], ["leftBackElbow", "leftBackKnee"], ["leftBackKnee", "leftBackPaw"],
            ["tailTop", "rightBackElbow"], ["rightBackElbow", "rightBackKnee"], ["rightBackKnee", "rightBackPaw"],
        ],
        centre: ["neck", "tailTop"],
        torsoUpper: ["neck"], torsoLower: ["tailTop"]
    )

    /// COCO-17 keypoints (as written by most Python pose estimators), image pixels.
    public static let coco17 = Skeleton(
        name: "coco-17",
        joints: [
            "nose", "leftEye", "rightEye", "leftEar", "rightEar",
            "leftShoulder", "rightShoulder", "leftElbow", "rightElbow", "leftWrist", "rightWrist",
            "leftHip", "rightHip", "leftKnee", "rightKnee", "leftAnkle", "rightAnkle",
        ],
        dimensions: 2, units: .pixels,
        mirrorPairs: [
            ["leftEye", "rightEye"], ["leftEar", "rightEar"], ["leftShoulder", "rightShoulder"],
            ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"], ["leftHip", "rightHip"],
            ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"],
        ],
        bones: [
            ["nose", "leftEye"], ["nose", "rightEye"], ["leftEye", "leftEar"], ["rightEye", "rightEar"],
            ["leftShoulder", "rightShoulder"], ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"],
            ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"],
            ["leftShoulder", "leftHip"], ["rightShoulder", "rightHip"], ["leftHip", "rightHip"],
            ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"], ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"],
        ],
        centre: ["leftHip", "rightHip"],
        torsoUpper: ["leftShoulder", "rightShoulder"], torsoLower: ["leftHip", "rightHip"]
    )

    /// NATOPS (UEA archive): 8 upper-limb points in 3D, body-centred. The archive does not
    /// document units; the values have a metre-like scale, so the schema says metres.
    public static let natops = Skeleton(
        name: "natops-8",
        joints: [
            "leftHandTip", "rightHandTip", "leftElbow", "rightElbow",
            "leftWrist", "rightWrist", "leftThumb", "rightThumb",
        ],
        dimensions: 3, units: .metres,
        mirrorPairs: [
            ["leftHandTip", "rightHandTip"], ["leftElbow", "rightElbow"],
            ["leftWrist", "rightWrist"], ["leftThumb", "rightThumb"],
        ],
        bones: [
            ["leftElbow", "leftWrist"], ["leftWrist", "leftHandTip"], ["leftWrist", "leftThumb"],
            ["rightElbow", "rightWrist"], ["rightWrist", "rightHandTip"], ["rightWrist", "rightThumb"],
        ]
    )

    /// Penn Action: 13 joints in image pixels (official order).
    public static let pennAction = Skeleton(
        name: "penn-action-13",
        joints: [
            "head", "leftShoulder", "rightShoulder", "leftElbow", "rightElbow",
            "leftWrist", "rightWrist", "leftHip", "rightHip", "leftKnee", "rightKnee",
            "leftAnkle", "rightAnkle",
        ],
        dimensions: 2, units: .pixels,
        mirrorPairs: [
            ["leftShoulder", "rightShoulder"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"],
            ["leftHip", "rightHip"], ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"],
        ],
        bones: [
            ["head", "leftShoulder"], ["head", "rightShoulder"], ["leftShoulder", "rightShoulder"],
            ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"],
            ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"],
            ["leftShoulder", "leftHip"], ["rightShoulder", "rightHip"], ["leftHip", "rightHip"],
            ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"], ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"],
        ],
        centre: ["leftHip", "rightHip"],
        torsoUpper: ["leftShoulder", "rightShoulder"], torsoLower: ["leftHip", "rightHip"]
    )

    /// Kinect v1 SDK skeleton (UTKinect-Action3D): 20 joints in metres, sensor space.
    public static let kinectV1 = Skeleton(
        name: "kinect-v1-20",
        joints: [
            "hipCenter", "spine", "shoulderCenter", "head",
            "leftShoulder", "leftElbow", "leftWrist", "leftHand",
            "rightShoulder", "rightElbow", "rightWrist", "rightHand",
            "leftHip", "leftKnee", "leftAnkle", "leftFoot",
            "rightHip", "rightKnee", "rightAnkle", "rightFoot",
        ],
        dimensions: 3, units: .metres,
        mirrorPairs: [
            ["leftShoulder", "rightShoulder"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"],
            ["leftHand", "rightHand"], ["leftHip", "rightHip"], ["leftKnee", "rightKnee"],
            ["leftAnkle", "rightAnkle"], ["leftFoot", "rightFoot"],
        ],
        bones: [
            ["hipCenter", "spine"], ["spine", "shoulderCenter"], ["shoulderCenter", "head"],
            ["shoulderCenter", "leftShoulder"], ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"], ["leftWrist", "leftHand"],
            ["shoulderCenter", "rightShoulder"], ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"], ["rightWrist", "rightHand"],
            ["hipCenter", "leftHip"], ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"], ["leftAnkle", "leftFoot"],
            ["hipCenter", "rightHip"], ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"], ["rightAnkle", "rightFoot"],
        ],
        centre: ["hipCenter"],
        torsoUpper: ["shoulderCenter"], torsoLower: ["hipCenter"]
    )

    /// MediaPipe Pose (BlazePose) landmarks, 33 in MediaPipe's order (`PoseLandmark`), image
    /// pixels (MediaPipe's normalised landmarks times the image size: `convert
    /// --from-normalized`). MediaPipe's snake_case names (`left_eye_inner`) match by the
    /// case- and separator-insensitive comparison.
    public static let mediaPipePose = Skeleton(
        name: "mediapipe-pose-33",
        joints: [
            "nose", "leftEyeInner", "leftEye", "leftEyeOuter", "rightEyeInner", "rightEye", "rightEyeOuter",
            "leftEar", "rightEar", "mouthLeft", "mouthRight", "leftShoulder", "rightShoulder", "leftElbow", "rightElbow",
            "leftWrist", "rightWrist", "leftPinky", "rightPinky", "leftIndex", "rightIndex", "leftThumb", "rightThumb",
            "leftHip", "rightHip", "leftKnee", "rightKnee", "leftAnkle", "rightAnkle", "leftHeel", "rightHeel",
            "leftFootIndex", "rightFootIndex",
        ],
        dimensions: 2, units: .pixels,
        mirrorPairs: [
            ["leftEyeInner", "rightEyeInner"], ["leftEye", "rightEye"], ["leftEyeOuter", "rightEyeOuter"], ["leftEar", "rightEar"],
            ["mouthLeft", "mouthRight"], ["leftShoulder", "rightShoulder"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"],
            ["leftPinky", "rightPinky"], ["leftIndex", "rightIndex"], ["leftThumb", "rightThumb"], ["leftHip", "rightHip"],
            ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"], ["leftHeel", "rightHeel"], ["leftFootIndex", "rightFootIndex"],
        ],
        bones: [
            ["nose", "leftEyeInner"], ["leftEyeInner", "leftEye"], ["leftEye", "leftEyeOuter"], ["leftEyeOuter", "leftEar"],
            ["nose", "rightEyeInner"], ["rightEyeInner", "rightEye"], ["rightEye", "rightEyeOuter"], ["rightEyeOuter", "rightEar"],
            ["mouthLeft", "mouthRight"], ["leftShoulder", "rightShoulder"],
            ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"], ["leftWrist", "leftPinky"], ["leftWrist", "leftIndex"],
            ["leftWrist", "leftThumb"], ["leftPinky", "leftIndex"],
            ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"], ["rightWrist", "rightPinky"], ["rightWrist", "rightIndex"],
            ["rightWrist", "rightThumb"], ["rightPinky", "rightIndex"],
            ["leftShoulder", "leftHip"], ["rightShoulder", "rightHip"], ["leftHip", "rightHip"],
            ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"], ["leftAnkle", "leftHeel"], ["leftHeel", "leftFootIndex"],
            ["leftAnkle", "leftFootIndex"],
            ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"], ["rightAnkle", "rightHeel"], ["rightHeel", "rightFootIndex"],
            ["rightAnkle", "rightFootIndex"],
        ],
        centre: ["leftHip", "rightHip"],
        torsoUpper: ["leftShoulder", "rightShoulder"], torsoLower: ["leftHip", "rightHip"]
    )

    /// OpenPose BODY_25 (COCO plus mid-hip and feet), OpenPose's order, image pixels. The
    /// `openpose` alias table maps OpenPose's names (`RShoulder`, `MidHip`, `LBigToe`).
    public static let openPoseBody25 = Skeleton(
        name: "openpose-body-25",
        joints: [
            "nose", "neck", "rightShoulder", "rightElbow", "rightWrist", "leftShoulder", "leftElbow", "leftWrist",
            "midHip", "rightHip", "rightKnee", "rightAnkle", "leftHip", "leftKnee", "leftAnkle",
            "rightEye", "leftEye", "rightEar", "leftEar", "leftBigToe", "leftSmallToe", "leftHeel",
            "rightBigToe", "rightSmallToe", "rightHeel",
        ],
        dimensions: 2, units: .pixels,
        mirrorPairs: [
            ["leftShoulder", "rightShoulder"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"], ["leftHip", "rightHip"],
            ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"], ["leftEye", "rightEye"], ["leftEar", "rightEar"],
            ["leftBigToe", "rightBigToe"], ["leftSmallToe", "rightSmallToe"], ["leftHeel", "rightHeel"],
        ],
        bones: [
            ["neck", "nose"], ["nose", "rightEye"], ["rightEye", "rightEar"], ["nose", "leftEye"], ["leftEye", "leftEar"],
            ["neck", "rightShoulder"], ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"],
            ["neck", "leftShoulder"], ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"],
            ["neck", "midHip"], ["midHip", "rightHip"], ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"],
            ["rightAnkle", "rightHeel"], ["rightAnkle", "rightBigToe"], ["rightBigToe", "rightSmallToe"],
            ["midHip", "leftHip"], ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"],
            ["leftAnkle", "leftHeel"], ["leftAnkle", "leftBigToe"], ["leftBigToe", "leftSmallToe"],
        ],
        centre: ["midHip"],
        torsoUpper: ["neck"], torsoLower: ["midHip"]
    )

    /// OpenPose's 18-joint COCO model, the "Kinetics skeleton" of ST-GCN and MMAction2's
    /// `openpose` layout, image pixels. Create ML's keypoint layout has the same joints in the
    /// same order (`CreateMLFormat.jointOrder`).
    public static let openPoseCOCO18 = Skeleton(
        name: "openpose-coco-18",
        joints: [
            "nose", "neck", "rightShoulder", "rightElbow", "rightWrist", "leftShoulder", "leftElbow", "leftWrist",
            "rightHip", "rightKnee", "rightAnkle", "leftHip", "leftKnee", "leftAnkle", "rightEye", "leftEye", "rightEar", "leftEar",
        ],
        dimensions: 2, units: .pixels,
        mirrorPairs: [
            ["leftShoulder", "rightShoulder"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"], ["leftHip", "rightHip"],
            ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"], ["leftEye", "rightEye"], ["leftEar", "rightEar"],
        ],
        bones: [
            ["neck", "nose"], ["nose", "rightEye"], ["rightEye", "rightEar"], ["nose", "leftEye"], ["leftEye", "leftEar"],
            ["neck", "rightShoulder"], ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"],
            ["neck", "leftShoulder"], ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"],
            ["neck", "rightHip"], ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"],
            ["neck", "leftHip"], ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"],
        ],
        centre: ["leftHip", "rightHip"],
        torsoUpper: ["neck"], torsoLower: ["leftHip", "rightHip"]
    )

    /// Kinect v2 SDK skeleton (`JointType` order; NTU RGB+D's 25 joints, 1-based there), 3D
    /// metres in camera space (y up, z away from the sensor). The `kinect-v2-sdk` alias table
    /// maps the SDK's names (`SpineBase`, `ShoulderLeft`, `HandTipRight`).
    public static let kinectV2 = Skeleton(
        name: "kinect-v2-25",
        joints: [
            "spineBase", "spineMid", "neck", "head",
            "leftShoulder", "leftElbow", "leftWrist", "leftHand",
            "rightShoulder", "rightElbow", "rightWrist", "rightHand",
            "leftHip", "leftKnee", "leftAnkle", "leftFoot",
            "rightHip", "rightKnee", "rightAnkle", "rightFoot",
            "spineShoulder", "leftHandTip", "leftThumb", "rightHandTip", "rightThumb",
        ],
        dimensions: 3, units: .metres,
        mirrorPairs: [
            ["leftShoulder", "rightShoulder"], ["leftElbow", "rightElbow"], ["leftWrist", "rightWrist"], ["leftHand", "rightHand"],
            ["leftHip", "rightHip"], ["leftKnee", "rightKnee"], ["leftAnkle", "rightAnkle"], ["leftFoot", "rightFoot"],
            ["leftHandTip", "rightHandTip"], ["leftThumb", "rightThumb"],
        ],
        bones: [
            ["spineBase", "spineMid"], ["spineMid", "spineShoulder"], ["spineShoulder", "neck"], ["neck", "head"],
            ["spineShoulder", "leftShoulder"], ["leftShoulder", "leftElbow"], ["leftElbow", "leftWrist"], ["leftWrist", "leftHand"],
            ["leftHand", "leftHandTip"], ["leftWrist", "leftThumb"],
            ["spineShoulder", "rightShoulder"], ["rightShoulder", "rightElbow"], ["rightElbow", "rightWrist"], ["rightWrist", "rightHand"],
            ["rightHand", "rightHandTip"], ["rightWrist", "rightThumb"],
            ["spineBase", "leftHip"], ["leftHip", "leftKnee"], ["leftKnee", "leftAnkle"], ["leftAnkle", "leftFoot"],
            ["spineBase", "rightHip"], ["rightHip", "rightKnee"], ["rightKnee", "rightAnkle"], ["rightAnkle", "rightFoot"],
        ],
        centre: ["spineBase"],
        torsoUpper: ["spineShoulder"], torsoLower: ["spineBase"]
    )
}
