@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

final class SkeletonSchemaTests: XCTestCase {
    /// Joint names of Apple's Vision headers (VNDetectHumanBodyPoseRequest.h, VNTypes.h).
    func testBuiltInsMatchAppleVisionJointNames() {
        let body2D: Set = [
            "nose", "leftEye", "rightEye", "leftEar", "rightEar", "leftShoulder", "rightShoulder", "neck", "leftElbow",
            "rightElbow", "leftWrist", "rightWrist", "leftHip", "rightHip", "root", "leftKnee", "rightKnee", "leftAnkle", "rightAnkle",
        ]
        let body3D: Set = [
            "root", "rightHip", "rightKnee", "rightAnkle", "leftHip", "leftKnee", "leftAnkle", "spine", "centerShoulder",
            "centerHead", "topHead", "leftShoulder", "leftElbow", "leftWrist", "rightShoulder", "rightElbow", "rightWrist",
        ]
        let animal: Set = [
            "leftEarTop", "rightEarTop", "leftEarMiddle", "rightEarMiddle", "leftEarBottom", "rightEarBottom", "leftEye", "rightEye",
            "nose", "neck", "leftFrontElbow", "rightFrontElbow", "leftFrontKnee", "rightFrontKnee", "leftFrontPaw", "rightFrontPaw",
            "leftBackElbow", "rightBackElbow", "leftBackKnee", "rightBackKnee", "leftBackPaw", "rightBackPaw", "tailTop", "tailMiddle",
            "tailBottom",
        ]
        XCTAssertEqual(Set(Skeleton.visionBody2D.joints), body2D)
        XCTAssertEqual(Skeleton.visionBody2D.jointCount, 19)
        XCTAssertEqual(Set(Skeleton.visionBody3D.joints), body3D)
        XCTAssertEqual(Skeleton.visionBody3D.jointCount, 17)
        XCTAssertEqual(Set(Skeleton.visionAnimal.joints), animal)
        XCTAssertEqual(Skeleton.visionAnimal.jointCount, 25)
        XCTAssertEqual(Set(CreateMLFormat.jointOrder), body2D.subtracting(["root"]))
        let counts = Skeleton.builtIn.mapValues(\.jointCount)
        XCTAssertEqual(counts, ["vision-body-2d": 19, "vision-body-3d": 17, "vision-animal": 25, "coco-17": 17, "natops-8": 8, "penn-action-13": 13, "kinect-v1-20": 20, "mediapipe-pose-33": 33, "openpose-body-25": 25, "openpose-coco-18": 18, "kinect-v2-25": 25])
    }

    func testEveryBuiltInIsConsistentAndMirrorsAreAnatomical() {
        for s in Skeleton.builtIn.values {
            XCTAssertTrue(s.problems().isEmpty, "\(s.name): \(s.problems())")
            let perm = s.mirrorPermutation
            for (j, m) in perm.enumerated() {
                XCTAssertEqual(perm[m], j, "\(s.name): mirroring twice is the identity")
                let a = s.joints[j], b = s.joints[m]
                if a.hasPrefix("left") { XCTAssertEqual(b, "right" + a.dropFirst(4), "\(s.name)") }
                if a.hasPrefix("right") { XCTAssertEqual(b, "left" + a.dropFirst(5), "\(s.name)") }
            }
        }
    }

    func testSchemaFileErrorsNameTheField() throws {
        let dir = try temporaryDirectory()
        func load(_ json: String) throws -> Skeleton {
            let path = dir.appendingPathComponent("s.json").path
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            return try SkeletonFile.load(path)
        }
        let ok = try load(#"{"name": "r", "joints": ["a", "leftX", "rightX"], "dimensions": 3, "mirrorPairs": [["leftX", "rightX"]], "center": ["a"], "bones": [["a", "leftX"]]}"#)
        XCTAssertEqual(ok.units, .metres)
        XCTAssertEqual(ok.centre, ["a"])
        XCTAssertEqual(ok.mirrorPermutation, [0, 2, 1])
        assertThrows(["s.json", "skeleton field \"joints\"", "required"]) { _ = try load(#"{"name": "r", "dimensions": 2}"#) }
        assertThrows(["skeleton field \"dimensions\"", "2 (x, y) or 3"]) { _ = try load(#"{"name": "r", "joints": ["a"], "dimensions": 4}"#) }
        assertThrows(["skeleton field \"bonez\"", "unknown field"]) { _ = try load(#"{"name": "r", "joints": ["a"], "dimensions": 2, "bonez": []}"#) }
        assertThrows(["skeleton field \"bones\"", "'b'", "not in \"joints\""]) { _ = try load(#"{"name": "r", "joints": ["a"], "dimensions": 2, "bones": [["a", "b"]]}"#) }
        assertThrows(["skeleton field \"joints\"", "'a' is listed twice"]) { _ = try load(#"{"name": "r", "joints": ["a", "a"], "dimensions": 2}"#) }
        assertThrows(["skeleton field \"units\""]) { _ = try load(#"{"name": "r", "joints": ["a"], "dimensions": 2, "units": "inches"}"#) }
        assertThrows(["s.json:1:14:", "expected"]) { _ = try load(#"{"name": "r" "joints": []}"#) }
        XCTAssertEqual(try SkeletonFile.resolve("coco-17"), .coco17)
        assertThrows(["nope", "neither a built-in skeleton nor a schema file", "coco-17"]) { _ = try SkeletonFile.resolve("nope") }
    }
}
