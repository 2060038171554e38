import Datasets
import PoseCore
import TestSupport
import XCTest

final class SplitTests: XCTestCase {
    /// 12 subjects with uneven class mixes: subject k has (k % 3 + 1) "a", (k + 1) % 4 + 1 "b"
    /// and 2 "c" sequences (78 sequences: 24 a, 30 b, 24 c).
    func grouped(subjects: Int = 12) -> Dataset {
        var specs: [(id: String, label: String, group: String?, split: String?, frames: Int)] = []
        for k in 0..<subjects {
            for (label, n) in [("a", k % 3 + 1), ("b", (k + 1) % 4 + 1), ("c", 2)] {
                for r in 0..<n { specs.append(("s\(k)-\(label)\(r)", label, "subject-\(k)", nil, 2)) }
            }
        }
        return PrepFixtures.dataset(specs)
    }

    func ungrouped(_ counts: [String: Int]) -> Dataset {
        var specs: [(id: String, label: String, group: String?, split: String?, frames: Int)] = []
        for (label, n) in counts.sorted(by: { $0.key < $1.key }) {
            for r in 0..<n { specs.append(("\(label)\(r)", label, nil, nil, 2)) }
        }
        return PrepFixtures.dataset(specs)
    }

    func groups(_ d: Dataset, _ idx: [Int]) -> Set<String> { Set(idx.compactMap { d.sequences[$0].group }) }
    func count(_ d: Dataset, _ idx: [Int], _ label: String) -> Int { idx.filter { d.sequences[$0].label == label }.count }

    func testGroupAwareSplitKeepsGroupsWholeAndStratifies() throws {
        let d = grouped()
        let all = Array(d.sequences.indices)
        for seed: UInt64 in [0, 1, 2, 3, 4] {
            let s = try Splits.split(d, indices: all, fraction: 0.25, seed: seed)
            XCTAssertEqual((s.first + s.second).sorted(), all)
            XCTAssertTrue(groups(d, s.first).isDisjoint(with: groups(d, s.second)), "a subject crosses the split (seed \(seed))")
            for label in ["a", "b", "c"] {
                let share = Double(count(d, s.second, label)) / Double(count(d, all, label))
                XCTAssertEqual(share, 0.25, accuracy: 0.04, "class \(label), seed \(seed)")
            }
            XCTAssertEqual(s.warnings, [])
        }
        XCTAssertEqual(try Splits.split(d, indices: all, fraction: 0.25, seed: 7), try Splits.split(d, indices: all, fraction: 0.25, seed: 7))
        XCTAssertNotEqual(
            try Splits.split(d, indices: all, fraction: 0.25, seed: 7).second,
            try Splits.split(d, indices: all, fraction: 0.25, seed: 8).second)
    }

    func testWithoutGroupsEveryClassGetsItsShareToWithinOne() throws {
        let d = ungrouped(["a": 10, "b": 7, "c": 5, "d": 1])
        let s = try Splits.split(d, indices: Array(d.sequences.indices), fraction: 0.2, seed: 3)
        for (label, n) in [("a", 10), ("b", 7), ("c", 5)] {
            XCTAssertLessThan(abs(Double(count(d, s.second, label)) - 0.2 * Double(n)), 1, label)
        }
        XCTAssertEqual(count(d, s.second, "a"), 2)
        XCTAssertEqual(count(d, s.second, "c"), 1)
        // One "d" sequence cannot be on both sides: a warning, not an error.
        XCTAssertEqual(s.warnings, [.classMissing(class: "d", part: "validation")])
        XCTAssertTrue(s.warnings[0].description.contains("class 'd' has no sequence in validation"))
        // The compatibility form gives the same parts.
        let compat = Splits.stratified(d, indices: Array(d.sequences.indices), fraction: 0.2, seed: 3)
        XCTAssertEqual(compat.first, s.first)
        XCTAssertEqual(compat.second, s.second)
    }

    func testSplitsThatCannotBeMadeAreErrors() {
        let one = PrepFixtures.dataset([("x", "a", "p1", nil, 2), ("y", "b", "p1", nil, 2)])
        assertThrows(["toy: cannot hold out a validation share", "all 2 sequences belong to group 'p1'"]) {
            _ = try Splits.split(one, indices: [0, 1], fraction: 0.2, seed: 0)
        }
        assertThrows(["fraction must be in [0, 1)"]) { _ = try Splits.split(one, indices: [0, 1], fraction: 1, seed: 0) }
        XCTAssertEqual(try Splits.split(one, indices: [0, 1], fraction: 0, seed: 0).second, [])
        XCTAssertEqual(Splits.stratified(one, indices: [1, 0], fraction: 0.2, seed: 0).first, [0, 1])
    }

    func testKFoldPartitionsEverythingOnceAndKeepsGroupsWhole() throws {
        let d = grouped()
        let all = Array(d.sequences.indices)
        let (folds, warnings) = try Splits.kFold(d, indices: all, k: 4, seed: 1)
        XCTAssertEqual(folds.count, 4)
        XCTAssertEqual(folds.flatMap(\.test).sorted(), all)
        for f in folds {
            XCTAssertEqual((f.train + f.test).sorted(), all)
            XCTAssertTrue(groups(d, f.train).isDisjoint(with: groups(d, f.test)), f.name)
            for label in ["a", "b", "c"] {
                let share = Double(count(d, f.test, label)) / Double(count(d, all, label))
                XCTAssertEqual(share, 0.25, accuracy: 0.08, "\(f.name), class \(label)")
            }
        }
        XCTAssertEqual(folds.map(\.name), ["fold 1", "fold 2", "fold 3", "fold 4"])
        XCTAssertEqual(warnings, [])
        // Without groups, a class with fewer sequences than folds warns.
        let small = ungrouped(["a": 6, "b": 2])
        let (f2, w2) = try Splits.kFold(small, indices: Array(small.sequences.indices), k: 3, seed: 0)
        XCTAssertEqual(f2.map { count(small, $0.test, "a") }, [2, 2, 2])
        XCTAssertEqual(w2.count, 1)
        XCTAssertTrue(w2[0].description.contains("class 'b'"))
    }

    func testKFoldErrors() {
        let d = grouped(subjects: 3)
        assertThrows(["4-fold cross-validation needs at least 4 groups", "only 3 groups"]) {
            _ = try Splits.kFold(d, indices: Array(d.sequences.indices), k: 4, seed: 0)
        }
        assertThrows(["k >= 2"]) { _ = try Splits.kFold(d, indices: Array(d.sequences.indices), k: 1, seed: 0) }
    }

    func testLeaveOneGroupOut() throws {
        var d = grouped(subjects: 3)
        let all = Array(d.sequences.indices)
        let (folds, warnings) = try Splits.leaveOneGroupOut(d, indices: all)
        XCTAssertEqual(folds.map(\.name), ["subject-0", "subject-1", "subject-2"])
        XCTAssertEqual(folds.flatMap(\.test).sorted(), all)
        for f in folds { XCTAssertEqual(groups(d, f.test), [f.name]) }
        XCTAssertEqual(warnings, [])
        // A class that only subject 1 performed: its fold trains without it.
        d.sequences[0].label = "rare"
        d.sequences[0].group = "subject-1"
        let (_, w) = try Splits.leaveOneGroupOut(d, indices: all)
        XCTAssertEqual(w, [.classMissing(class: "rare", part: "the training part of fold 'subject-1'")])
        d.sequences[1].group = nil
        assertThrows(["sequence 's0-b0' has no group"]) { _ = try Splits.leaveOneGroupOut(d, indices: all) }
    }

    func testGivenSplits() {
        let d = PrepFixtures.dataset([("a", "x", nil, "train", 1), ("b", "x", nil, "test", 1), ("c", "x", nil, nil, 1), ("d", "x", nil, "train", 1)])
        XCTAssertEqual(Splits.given(d), ["train": [0, 3], "test": [1]])
    }
}
