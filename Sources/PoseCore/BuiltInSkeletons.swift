/// Built-in skeleton schemas. Joint names follow Apple Vision's Swift API spelling
/// (`leftShoulder`), and sides are anatomical. The Vision schemas' joint names and counts are
/// those of Vision's headers (`VNDetectHumanBodyPoseRequest.h`, `VNTypes.h`: 19 body joints,
/// 17 3D joints, 25 animal joints); `SkeletonSchemaTests` pins them.
extension Skeleton {
    /// All built-in schemas by name.
    public static let builtIn: [String: Skeleton] = {
        var all: [String: Skeleton] = [:]
        for s in [visionBody2D, visionBody3D, visionAnimal, coco17, natops, pennAction, kinectV1] {
            all[s.name] = s
        }
        return all
    }()

    /// Looks up a built-in schema by name.
    public static func named(_ name: String) throws -> Skeleton {
        guard let s = builtIn[name] else {
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
}
