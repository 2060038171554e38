import Eval
import PoseCore
import TestSupport
import XCTest

final class BootstrapTests: XCTestCase {
    func testSameSeedSameIntervalOtherSeedOtherInterval() throws {
        let rows = Fixtures.sequences(60, classes: 3) { $0 % 4 != 0 }
        let a = try Fixtures.report(rows, resamples: 300, seed: 11).window
        let b = try Fixtures.report(rows, resamples: 300, seed: 11).window
        let c = try Fixtures.report(rows, resamples: 300, seed: 12).window
        XCTAssertEqual(a.accuracyCI, b.accuracyCI)
        XCTAssertEqual(a.macroF1CI, b.macroF1CI)
        XCTAssertNotEqual(a.accuracyCI, c.accuracyCI)
        let ci = try XCTUnwrap(a.accuracyCI)
        XCTAssertTrue(ci.contains(a.accuracy), "\(ci) should hold the point estimate \(a.accuracy)")
        XCTAssertLessThan(ci.low, ci.high)
    }

    func testPercentileInterpolatesLikeNumpy() {
        // numpy.percentile([1, 2, 3, 4], 25) = 1.75; ([1..5], 97.5) = 4.9.
        assertClose(Bootstrap.percentile([1, 2, 3, 4], 0.25), 1.75)
        assertClose(Bootstrap.percentile([1, 2, 3, 4, 5], 0.975), 4.9)
        assertClose(Bootstrap.percentile([7], 0.5), 7)
    }

    /// Coverage sanity: for Bernoulli(0.8) samples of size 100, the 95% percentile interval
    /// should hold 0.8 in roughly 95% of 120 replications (binomial sd ≈ 2%; the percentile
    /// interval under-covers a little at this size).
    func testCoverageIsNearNominal() {
        var g = SeededGenerator(seed: 2024)
        var covered = 0
        let trials = 120, n = 100
        for trial in 0..<trials {
            let truth = (0..<n).map { Int32($0 % 2) }
            let predicted = truth.map { t -> Int32 in g.nextUnitDouble() < 0.8 ? t : 1 - t }
            let ci = Bootstrap.intervals(
                unit: Array(0..<n), unitCount: n, truth: truth, predicted: predicted, classes: 2, resamples: 300,
                seed: UInt64(trial)
            ).accuracy
            if ci.contains(0.8) { covered += 1 }
        }
        let rate = Double(covered) / Double(trials)
        XCTAssertGreaterThan(rate, 0.86, "coverage \(rate)")
        XCTAssertLessThan(rate, 0.995, "coverage \(rate)")
    }

    /// Resampling sequences, not windows: when every window of a sequence shares its outcome,
    /// the interval must be as wide as for one sample per sequence, not √(windows) narrower.
    func testResamplesWholeSequences() {
        var g = SeededGenerator(seed: 5)
        let sequences = 40, windows = 25
        let outcome = (0..<sequences).map { _ in g.nextUnitDouble() < 0.7 }
        var unit: [Int] = [], truth: [Int32] = [], predicted: [Int32] = []
        for s in 0..<sequences {
            for _ in 0..<windows {
                unit.append(s)
                truth.append(Int32(s % 2))
                predicted.append(outcome[s] ? Int32(s % 2) : Int32(1 - s % 2))
            }
        }
        let clustered = Bootstrap.intervals(
            unit: unit, unitCount: sequences, truth: truth, predicted: predicted, classes: 2, resamples: 400, seed: 1
        ).accuracy
        let naive = Bootstrap.intervals(
            unit: Array(0..<unit.count), unitCount: unit.count, truth: truth, predicted: predicted, classes: 2, resamples: 400,
            seed: 1
        ).accuracy
        let perSequence = Bootstrap.intervals(
            unit: Array(0..<sequences), unitCount: sequences, truth: (0..<sequences).map { Int32($0 % 2) },
            predicted: (0..<sequences).map { outcome[$0] ? Int32($0 % 2) : Int32(1 - $0 % 2) }, classes: 2, resamples: 400, seed: 1
        ).accuracy
        let w = clustered.high - clustered.low, wn = naive.high - naive.low, ws = perSequence.high - perSequence.low
        XCTAssertGreaterThan(w, 3 * wn, "clustered \(w) vs window-level \(wn)")
        assertClose(w, ws, absolute: 0.03, relative: 0, "clustered \(w) vs one sample per sequence \(ws)")
    }

    func testPairedDifferenceOfIdenticalModelsIsZero() {
        let truth: [Int32] = [0, 1, 0, 1, 1, 0]
        let p: [Int32] = [0, 1, 1, 1, 0, 0]
        let d = Bootstrap.pairedDifference(
            unit: Array(0..<6), unitCount: 6, truth: truth, baseline: p, candidate: p, classes: 2, resamples: 100, seed: 3)
        XCTAssertEqual(d.accuracy, Interval(low: 0, high: 0))
        XCTAssertEqual(d.macroF1, Interval(low: 0, high: 0))
    }

    /// 10,000 classes of one sample each: a resample is O(classes), not a 10⁸-cell confusion
    /// matrix (before, `fit`'s report of such data ran for hours in the bootstrap). Every sample
    /// right: accuracy and macro-F1 1 in every resample; every sample taken for the class after
    /// its own: both 0, and a paired difference of 1.
    func testManyClassesOfOneSampleEach() {
        let K = 10_000
        let truth = (0..<K).map(Int32.init), wrong = (0..<K).map { Int32(($0 + 1) % K) }
        let right = Bootstrap.intervals(unit: Array(0..<K), unitCount: K, truth: truth, predicted: truth, classes: K, resamples: 20, seed: 3)
        XCTAssertEqual(right.accuracy, Interval(low: 1, high: 1))
        XCTAssertEqual(right.macroF1, Interval(low: 1, high: 1))
        let none = Bootstrap.intervals(unit: Array(0..<K), unitCount: K, truth: truth, predicted: wrong, classes: K, resamples: 20, seed: 3)
        XCTAssertEqual(none.macroF1, Interval(low: 0, high: 0))
        let d = Bootstrap.pairedDifference(
            unit: Array(0..<K), unitCount: K, truth: truth, baseline: wrong, candidate: truth, classes: K, resamples: 20, seed: 3)
        XCTAssertEqual(d.accuracy, Interval(low: 1, high: 1))
    }
}
