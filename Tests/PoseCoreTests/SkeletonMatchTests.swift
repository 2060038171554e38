import PoseCore
import XCTest

/// The skeleton check of `predict` and `eval`: the first joint that differs (issue 16 item 10).
final class SkeletonMatchTests: XCTestCase {
    let model = Skeleton(name: "arm", joints: ["shoulder", "elbow", "wrist", "hand"], dimensions: 2, units: .pixels)

    func data(_ joints: [String], dimensions: Int = 2, name: String = "arm") -> Skeleton {
        Skeleton(name: name, joints: joints, dimensions: dimensions, units: .pixels)
    }

    func testTheSameSkeletonMatches() {
        XCTAssertNil(model.mismatch(data: data(model.joints)))
        XCTAssertNil(model.mismatch(data: data(model.joints, name: "renamed")))  // the joints matter, not the name
    }

    func testReorderedJointsNameTheFirstJointThatDiffers() {
        XCTAssertEqual(
            model.mismatch(data: data(["shoulder", "wrist", "elbow", "hand"])),
            "joint 1 is 'wrist' in the data's skeleton 'arm' (4 joints, 2D) but 'elbow' in the model's 'arm' (4 joints, 2D); "
                + "the model has 'wrist' at index 2: put the data's joints in the model's order")
        XCTAssertEqual(
            model.mismatch(data: data(["shoulder", "elbow", "wrist", "palm"])),
            "joint 3 is 'palm' in the data's skeleton 'arm' (4 joints, 2D) but 'hand' in the model's 'arm' (4 joints, 2D)")
    }

    func testMissingOrExtraJointsAndDimensions() {
        XCTAssertEqual(
            model.mismatch(data: data(["shoulder", "elbow", "wrist"])),
            "the data's skeleton 'arm' (3 joints, 2D) has 3 joints, the model's 'arm' (4 joints, 2D) has 4: the model's joint 3 'hand' is not in the data")
        XCTAssertEqual(
            model.mismatch(data: data(model.joints + ["finger"])),
            "the data's skeleton 'arm' (5 joints, 2D) has 5 joints, the model's 'arm' (4 joints, 2D) has 4: the data's joint 4 'finger' is not in the model")
        XCTAssertEqual(
            model.mismatch(data: data(model.joints, dimensions: 3)),
            "the data's skeleton 'arm' (4 joints, 3D) is 3D but the model's 'arm' (4 joints, 2D) is 2D")
    }

    /// Another skeleton that shares a joint name (a person's joints for a model of two animals):
    /// before, "joint 0 is 'p1.nose' in the data's skeleton 'vision-body-2dx2' (38 joints, 2D)
    /// but 'p1.leftEarTop' in the model's ...; the model has 'p1.nose' at index 8: put the
    /// data's joints in the model's order", which no order of its joints could do.
    func testAnotherSkeletonIsNotToldToReorderItsJoints() {
        let animals = Skeleton.visionAnimal.bodies(2), people = Skeleton.visionBody2D.bodies(2)
        XCTAssertEqual(
            animals.mismatch(data: people),
            "joint 0 is 'p1.nose' in the data's skeleton 'vision-body-2dx2' (38 joints, 2D) but 'p1.leftEarTop' in the model's 'vision-animalx2' (50 joints, 2D)")
        XCTAssertEqual(
            model.mismatch(data: data(["elbow", "shoulder", "wrist", "palm"])),
            "joint 0 is 'elbow' in the data's skeleton 'arm' (4 joints, 2D) but 'shoulder' in the model's 'arm' (4 joints, 2D)")
    }
}
