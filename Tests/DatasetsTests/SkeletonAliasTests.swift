@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 13 item 3: the skeletons people have, and the alias tables for their names. One
/// hand-made (or make_sources.py-made) file per source in Tests/Fixtures/sources.
final class SkeletonAliasTests: XCTestCase {
    func source(_ name: String) -> String { fixture("sources/" + name) }

    func testNewBuiltInsHaveTheirToolsOrder() {
        let body25 = Skeleton.openPoseBody25.joints
        XCTAssertEqual([body25[0], body25[1], body25[8], body25[11], body25[19], body25[24]], ["nose", "neck", "midHip", "rightAnkle", "leftBigToe", "rightHeel"])
        let mp = Skeleton.mediaPipePose.joints
        XCTAssertEqual([mp[0], mp[1], mp[9], mp[11], mp[17], mp[31], mp[32]], ["nose", "leftEyeInner", "mouthLeft", "leftShoulder", "leftPinky", "leftFootIndex", "rightFootIndex"])
        let k2 = Skeleton.kinectV2.joints
        XCTAssertEqual([k2[0], k2[3], k2[4], k2[20], k2[21], k2[24]], ["spineBase", "head", "leftShoulder", "spineShoulder", "leftHandTip", "rightThumb"])
        XCTAssertEqual(Skeleton.openPoseCOCO18.joints, CreateMLFormat.jointOrder, "Create ML's layout is OpenPose's COCO-18 order")
        XCTAssertEqual(Array(body25[0..<8]), Array(Skeleton.openPoseCOCO18.joints[0..<8]))
    }

    func testEveryAliasNamesAJointOfItsSkeletonAndTheTablesAreComplete() {
        for table in Skeleton.aliasTables {
            let s = Skeleton.builtIn[table.skeleton]!
            for (alias, joint) in table.aliases { XCTAssertNotNil(s.index(of: joint), "\(table.name): \(alias) → \(joint)") }
            XCTAssertEqual(Set(table.aliases.values).count, table.aliases.count, "\(table.name): one alias per joint")
        }
        let counts = Dictionary(Skeleton.aliasTables.map { ("\($0.name)/\($0.skeleton)", $0.aliases.count) }, uniquingKeysWith: +)
        XCTAssertEqual(
            counts,
            [
                "vision-raw/vision-body-2d": 18, "vision-3d-raw/vision-body-3d": 17, "vision-animal-raw/vision-animal": 25,
                "openpose/openpose-body-25": 25, "openpose/openpose-coco-18": 18, "kinect-v2-sdk/kinect-v2-25": 25,
                "kinect-v1-sdk/kinect-v1-20": 20,
            ], "Vision's root has no other key (its raw value is \"root\")")
    }

    func testResolveJoint() {
        let v = Skeleton.visionBody2D
        XCTAssertEqual(v.resolveJoint("leftWrist")?.match, .exact)
        XCTAssertEqual(v.resolveJoint("left_hand_joint")?.index, v.index(of: "leftWrist"))
        XCTAssertEqual(v.resolveJoint("left_hand_joint")?.match, .alias(table: "vision-raw"))
        XCTAssertEqual(v.resolveJoint("LEFT_WRIST")?.match, .loose)
        XCTAssertEqual(v.resolveJoint("root")?.match, .exact)
        XCTAssertNil(v.resolveJoint("left_hand"), "not a name, alias or loose match")
        XCTAssertEqual(Skeleton.visionAnimal.resolveJoint("animal_joint_heck")?.index, Skeleton.visionAnimal.index(of: "neck"))
        XCTAssertEqual(Skeleton.kinectV2.resolveJoint("ShoulderLeft")?.index, 4)
        XCTAssertEqual(Skeleton.kinectV1.resolveJoint("shoulder_left")?.match, .alias(table: "kinect-v1-sdk"), "an alias compared loosely")
    }

    func testVisionRawKeysInTheNativeFormat() throws {
        let two = try DatasetLoader.read(source("vision-raw-2d.jsonl"))
        XCTAssertEqual(two.jointNames, [.alias(table: "vision-raw")])
        let s = two.dataset.sequences[0], sk = Skeleton.visionBody2D
        XCTAssertEqual(Array(s.coordinates[(2 * sk.index(of: "nose")!)...].prefix(2)), [960, 200])
        XCTAssertEqual(s.present[sk.index(of: "leftAnkle")!], 1)
        XCTAssertEqual(s.present[sk.index(of: "leftWrist")!], 0, "confidence 0")
        XCTAssertEqual(two.space.problems, [])

        let three = try DatasetLoader.read(source("vision-raw-3d.jsonl"))
        XCTAssertEqual(three.jointNames, [.alias(table: "vision-3d-raw")])
        let t = three.dataset.sequences[0], k = Skeleton.visionBody3D.index(of: "leftAnkle")!
        XCTAssertEqual(Array(t.coordinates[(3 * k)..<(3 * k + 3)]), [0.245, -0.612, -0.078])
        XCTAssertEqual(t.bodyHeight, 1.62)
        XCTAssertNil(three.space.vertical, "one frame is too few to tell the vertical axis")

        let animal = try DatasetLoader.read(source("vision-animal-raw.jsonl"))
        XCTAssertEqual(animal.jointNames, [.alias(table: "vision-animal-raw")])
        XCTAssertEqual(animal.dataset.sequences[0].present.filter { $0 != 0 }.count, 4)
        XCTAssertEqual(Array(animal.dataset.sequences[0].coordinates[(2 * Skeleton.visionAnimal.index(of: "neck")!)...].prefix(2)), [450, 320])
        // A joint given by its name and by an alias in one frame is given twice.
        let twice =
            #"{"actiontrain": "poses", "version": 1, "skeleton": "vision-body-2d"}"# + "\n"
            + #"{"id": "a", "frames": [{"pose": {"nose": [1, 2], "head_joint": [1, 2]}}]}"# + "\n"
        assertThrows(["x.jsonl:2:", "joint 'nose'", "the joint is given twice in one frame"]) {
            _ = try NativeFormat.parse(Array(twice.utf8), file: "x.jsonl")
        }
    }

    func testCSVHeadersOfEachToolInferTheirSkeleton() throws {
        let mp = try DatasetLoader.read(source("mediapipe.csv"))
        XCTAssertEqual(mp.dataset.skeleton.name, "mediapipe-pose-33")
        XCTAssertEqual(mp.jointNames, [.loose])
        XCTAssertEqual(mp.dataset.sequences[0].frameCount, 3)
        XCTAssertEqual(mp.dataset.sequences[0].present[17], 0, "visibility 0: absent")
        XCTAssertEqual(mp.space.problems.map(\.code), ["normalised-as-pixels"], "MediaPipe writes normalised points, y down")
        let fixed = try CoordinateFix.fromNormalised(mp.dataset, imageSize: [1000, 500], origin: .topLeft)
        assertClose(Array(fixed.sequences[0].coordinates[0..<2]), [400, 100], absolute: 1e-3)
        XCTAssertEqual(CoordinateSpace.measure(fixed).problems, [])

        let op = try DatasetLoader.read(source("openpose-body25.csv"))
        XCTAssertEqual(op.dataset.skeleton.name, "openpose-body-25")
        XCTAssertEqual(op.jointNames, [.alias(table: "openpose")])
        let rEar = Skeleton.openPoseBody25.index(of: "rightEar")!, midHip = Skeleton.openPoseBody25.index(of: "midHip")!
        XCTAssertEqual(op.dataset.sequences[0].present[rEar], 0)
        XCTAssertEqual(Array(op.dataset.sequences[0].coordinates[(2 * midHip)..<(2 * midHip + 2)]), [316, 260])

        let kinect = try DatasetLoader.read(source("kinect-v2.csv"))
        XCTAssertEqual(kinect.dataset.skeleton.name, "kinect-v2-25")
        XCTAssertEqual(kinect.jointNames, [.alias(table: "kinect-v2-sdk")])
        XCTAssertEqual(kinect.space.scale, .metres)
        XCTAssertEqual(kinect.space.vertical?.description, "y up")
        XCTAssertEqual(Array(kinect.dataset.sequences[0].coordinates[(3 * 3)..<(3 * 3 + 3)]), [0, 0.7, 2.5], "Head")
    }

    func testNumpyArraysOfTheNewSkeletons() throws {
        // [1, 2, 33, 3]: only MediaPipe has 33 joints.
        let values = (0..<(2 * 33 * 3)).map { Float($0 % 97) }
        let d = try NumpyFormat.parseArchive(try NumpyFormatTests.archive(X: values, shape: [1, 2, 33, 3]), file: "mp.npz")
        XCTAssertEqual(d.skeleton.name, "mediapipe-pose-33")
        // 25 joints x 3 channels: BODY_25 with confidence, the animal with confidence, or Kinect v2 in 3D.
        assertThrows(["25 joints and 3 channels, which fits several built-in skeletons (kinect-v2-25, openpose-body-25, vision-animal)", "name a skeleton"]) {
            _ = try NumpyFormat.parseArchive(try NumpyFormatTests.archive(X: Array(repeating: 1, count: 75), shape: [1, 1, 25, 3]), file: "x.npz")
        }
    }
}
