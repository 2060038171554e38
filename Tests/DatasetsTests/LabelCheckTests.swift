import Datasets
import PoseCore
import XCTest

/// `Dataset.labels(outside:split:)`: what `predict` warns about and `eval` refuses.
final class LabelCheckTests: XCTestCase {
    func testLabelsOutsideTheClassesAreCountedPerLabel() {
        let d = PrepFixtures.dataset(
            [
                ("a", "wave", nil, "train", 2), ("b", "jump", nil, "test", 2), ("c", "jump", nil, "train", 2),
                ("d", "kick", nil, "test", 2), ("e", "clap", nil, "test", 2),
            ], classes: ["wave", "clap", "jump", "kick"])
        let all = d.labels(outside: ["wave", "clap"])
        XCTAssertEqual(all.map(\.label), ["jump", "kick"])
        XCTAssertEqual(all.map(\.sequences), [2, 1])
        XCTAssertEqual(d.labels(outside: ["wave", "clap"], split: "train").map(\.label), ["jump"])
        XCTAssertEqual(d.labels(outside: ["wave", "clap"], split: "train").map(\.sequences), [1])
        XCTAssertTrue(d.labels(outside: ["wave", "clap", "jump", "kick"]).isEmpty)
        var unlabeled = d
        for i in unlabeled.sequences.indices { unlabeled.sequences[i].label = nil }
        XCTAssertTrue(unlabeled.labels(outside: []).isEmpty)
    }
}
