import Eval
import Foundation
import XCTest

/// Small hand-made evaluations shared by the Eval tests.
enum Fixtures {
    static let classes = ["walk", "run", "jump"]

    /// Six sequences of two windows each (starts 0 and 10), two per class. At the window level
    /// 8 of 12 are right; at the sequence level (mean of the two windows) s2 (walk → run) and
    /// s4 (run → jump) are wrong, 4 of 6 right.
    static let windowRows: [(sequence: String, start: Int, truth: Int32, p: [Float])] = [
        ("s1", 0, 0, [0.8, 0.1, 0.1]), ("s1", 10, 0, [0.6, 0.3, 0.1]),
        ("s2", 0, 0, [0.3, 0.6, 0.1]), ("s2", 10, 0, [0.5, 0.4, 0.1]),
        ("s3", 0, 1, [0.2, 0.7, 0.1]), ("s3", 10, 1, [0.1, 0.8, 0.1]),
        ("s4", 0, 1, [0.1, 0.3, 0.6]), ("s4", 10, 1, [0.2, 0.5, 0.3]),
        ("s5", 0, 2, [0.1, 0.1, 0.8]), ("s5", 10, 2, [0.2, 0.2, 0.6]),
        ("s6", 0, 2, [0.05, 0.15, 0.8]), ("s6", 10, 2, [0.3, 0.3, 0.4]),
    ]

    static func table(_ rows: [(sequence: String, start: Int, truth: Int32, p: [Float])] = windowRows, classes: Int = 3) throws
        -> PredictionTable
    {
        try PredictionTable(
            sequence: rows.map(\.sequence), start: rows.map(\.start), truth: rows.map(\.truth),
            probabilities: rows.flatMap(\.p), classes: classes)
    }

    static let model = ModelInfo(
        path: "model.atm", tool: "actiontrain 0.1.0", classes: classes,
        input: ["skeleton": "tiny (2 joints, 3D, metres)", "window": "4 frames, sliding, padding empty"],
        trainingDataHash: "fnv1a64:0000000000000001", configHash: "fnv1a64:00000000000000c0", seed: 3,
        metrics: ["validationAccuracy": 0.875], notes: ["dataset": "toy"])

    static let data = DataInfo(
        name: "toy", path: "toy.jsonl", hash: "fnv1a64:00000000000000da", split: "test", windowFrames: 4, stride: 10)

    static func report(
        _ rows: [(sequence: String, start: Int, truth: Int32, p: [Float])] = windowRows, resamples: Int = 200, seed: UInt64 = 7,
        data: DataInfo = data, classes: [String] = classes
    ) throws -> EvalReport {
        try EvalReport.evaluate(
            classes: classes, windows: try table(rows, classes: rows.first?.p.count ?? classes.count), model: model, data: data,
            settings: EvalSettings(bootstrapResamples: resamples, seed: seed), tool: "actiontrain test")
    }

    /// `r` as an older eval wrote it: its JSON without `keys` at both levels (each of which it
    /// must have), read back, as `eval --baseline` reads a report of last month.
    static func withoutKeys(_ keys: [String], _ r: EvalReport) throws -> EvalReport {
        var object = try XCTUnwrap(try JSONSerialization.jsonObject(with: try ReportJSON.encode(r)) as? [String: Any])
        for level in ["window", "sequence"] {
            var m = try XCTUnwrap(object[level] as? [String: Any])
            for key in keys { XCTAssertNotNil(m.removeValue(forKey: key), "\(level) has \(key)") }
            object[level] = m
        }
        return try ReportJSON.decode(try JSONSerialization.data(withJSONObject: object), file: "old.json")
    }

    /// `n` sequences of one window each, class `i % classes`, predicted right when `right(i)`.
    static func sequences(_ n: Int, classes K: Int = 2, right: (Int) -> Bool) -> [(sequence: String, start: Int, truth: Int32, p: [Float])] {
        (0..<n).map { i in
            let t = i % K, predicted = right(i) ? t : (t + 1) % K
            var p = [Float](repeating: 0.1 / Float(K - 1), count: K)
            p[predicted] = 0.9
            return ("q\(i)", 0, Int32(t), p)
        }
    }
}
