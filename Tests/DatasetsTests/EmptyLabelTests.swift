@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// An empty label is an error whatever the format (`DatasetLoader.checked`): it would train a
/// class that no report can name.
final class EmptyLabelTests: XCTestCase {
    func write(_ name: String, _ text: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("empty-label-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    let header = #"{"actiontrain": "poses", "version": 1, "skeleton": {"name": "rig", "dimensions": 2, "units": "pixels", "joints": ["a", "b"]}}"#
    func sequence(_ id: String, _ label: String) -> String {
        #"{"id": "\#(id)", "label": "\#(label)", "frames": [{"pose": {"a": [1, 2], "b": [3, 4]}}]}"#
    }

    func testAnEmptyLabelNamesTheFileAndTheSequence() throws {
        let path = try write("poses.jsonl", [header, sequence("s1", "wave"), sequence("s2", ""), sequence("s3", " ")].joined(separator: "\n") + "\n")
        assertThrows(["poses.jsonl: sequence 's2': the label is empty", "give every sequence and segment a class name"]) {
            _ = try DatasetLoader.read(path)
        }
    }

    func testABlankLabelCellInACSVFileIsNoLabelNotAClass() throws {
        let path = try write("poses.csv", "id,label,a_x,a_y,b_x,b_y\ns1,wave,1,2,3,4\ns2,  ,1,2,3,4\n")
        var options = ReadOptions()
        options.skeleton = Skeleton(name: "rig", joints: ["a", "b"], dimensions: 2, units: .pixels)
        let d = try DatasetLoader.read(path, options: options).dataset
        XCTAssertEqual(d.classes, ["wave"])
        XCTAssertEqual(d.sequences.map(\.label), ["wave", nil])
    }

    func testAnEmptyNameInTheClassListIsRefused() throws {
        let listed = #"{"actiontrain": "poses", "version": 1, "skeleton": {"name": "rig", "dimensions": 2, "units": "pixels", "joints": ["a", "b"]}, "classes": ["wave", ""]}"#
        let path = try write("poses.jsonl", [listed, sequence("s1", "wave")].joined(separator: "\n") + "\n")
        assertThrows(["poses.jsonl: the class list [wave, ] holds an empty name"]) { _ = try DatasetLoader.read(path) }
    }

    func testLabelsWithNamesStillRead() throws {
        let path = try write("poses.jsonl", [header, sequence("s1", "wave"), sequence("s2", "clap")].joined(separator: "\n") + "\n")
        XCTAssertEqual(try DatasetLoader.read(path).dataset.classes, ["clap", "wave"])
    }

    /// An empty id: before, read as any other id (reports and predictions named the sequence
    /// ''). The native reader names the line; every other format is caught where they all pass.
    func testAnEmptyIdNamesTheLineOrTheSequencesPlace() throws {
        let path = try write("poses.jsonl", [header, sequence("s1", "wave"), sequence("", "clap"), sequence(" ", "clap")].joined(separator: "\n") + "\n")
        assertThrows(["poses.jsonl:3: the sequence's id is empty; give every sequence a unique id that is not empty"]) { _ = try DatasetLoader.read(path) }
        let skeleton = Skeleton(name: "rig", joints: ["a", "b"], dimensions: 2, units: .pixels)
        let sequences = ["s1", "s2", " "].map { PoseSequence(id: $0, label: "wave", jointCount: 2, dimensions: 2, hasConfidence: false) }
        let d = Dataset(name: "d", skeleton: skeleton, sequences: sequences, classes: ["wave"])
        assertThrows(["d.npz: sequence 3 of 3 (in the file's order, label 'wave') has an empty id; give every sequence a unique id that is not empty"]) {
            _ = try DatasetLoader.checked(d, file: "d.npz", strict: false)
        }
    }
}
