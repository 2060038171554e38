import Eval
import Foundation
import TestSupport
import XCTest

#if canImport(FoundationXML)
    import FoundationXML
#endif

final class GateTests: XCTestCase {
    /// n one-window sequences over two classes c0 (even i) and c1 (odd i).
    func report(_ n: Int, wrong: Set<Int> = [], classes: [String] = ["c0", "c1"]) throws -> EvalReport {
        try Fixtures.report(Fixtures.sequences(n, classes: 2) { !wrong.contains($0) }, resamples: 300, classes: classes)
    }

    func compare(_ a: EvalReport, _ b: EvalReport, _ policy: GatePolicy = GatePolicy()) throws -> (Comparison, GateResult) {
        let c = try Comparison(baseline: a, candidate: b, baselineName: "old.json", candidateName: "new.json", confidence: 1 - policy.alpha)
        return (c, Gate.evaluate(c, policy: policy))
    }

    func testIdenticalReportsPass() throws {
        let a = try report(40, wrong: [1, 2])
        let (c, g) = try compare(a, a)
        XCTAssertEqual(c.mcnemar.baselineOnly, 0)
        XCTAssertEqual(c.mcnemar.candidateOnly, 0)
        XCTAssertEqual(c.mcnemar.pValue, 1)
        XCTAssertEqual(c.accuracyChange, Interval(low: 0, high: 0))
        XCTAssertTrue(g.passed)
        XCTAssertEqual(g.checks.map(\.name), ["accuracy", "macro F1", "recall[c0]", "recall[c1]"])
    }

    func testSmallDropFailsUnlessSignificanceIsRequired() throws {
        // Three more class-c0 sequences wrong out of 40: accuracy −0.075, recall[c0] −0.15,
        // McNemar b = 3, c = 0 → exact p = 2 · (1/2)³ = 0.25.
        let a = try report(40), b = try report(40, wrong: [0, 2, 4])
        let (c, g) = try compare(a, b)
        assertClose(c.mcnemar.pValue, 0.25)
        XCTAssertEqual(c.mcnemar.method, .exactBinomial)
        XCTAssertFalse(g.passed)
        XCTAssertEqual(g.failures.map(\.name), ["accuracy", "macro F1", "recall[c0]"])
        let accuracy = g.checks[0]
        assertClose(accuracy.drop, 0.075)
        XCTAssertEqual(accuracy.significant, false)
        XCTAssertEqual(
            accuracy.message,
            "accuracy 1.000 → 0.925 (-0.075): drops more than the allowed 0.020 (McNemar exact binomial p = 0.2500, α = 0.05)")

        var policy = GatePolicy()
        policy.requireSignificance = true
        let (_, lenient) = try compare(a, b, policy)
        XCTAssertTrue(lenient.passed, lenient.checks.map(\.message).joined(separator: "\n"))
        XCTAssertTrue(lenient.checks[0].message.contains("but not significantly"))
        // recall[c0]: McNemar on the 20 c0 sequences, p = 0.25 ≥ α/2.
        XCTAssertTrue(lenient.checks[2].message.contains("α/2 = 0.0250"), lenient.checks[2].message)
    }

    func testSignificantDropFailsEvenWhenSignificanceIsRequired() throws {
        // 30 of the 50 c0 sequences turn wrong: McNemar b = 30, c = 0 (chi-square).
        let a = try report(100), b = try report(100, wrong: Set((0..<100).filter { $0 % 10 < 6 && $0 % 2 == 0 }))
        var policy = GatePolicy()
        policy.requireSignificance = true
        let (c, g) = try compare(a, b, policy)
        XCTAssertEqual(c.mcnemar.baselineOnly, 30)
        XCTAssertEqual(c.mcnemar.method, .chiSquareCorrected)
        assertClose(c.mcnemar.pValue, 1.1924366854416816e-07, relative: 1e-9)  // scripts/eval_reference.py (0, 30)
        XCTAssertEqual(g.failures.map(\.name), ["accuracy", "macro F1", "recall[c0]"])
        XCTAssertLessThan(try XCTUnwrap(c.macroF1Change).high, 0)
        XCTAssertEqual(g.checks[1].significant, true)
    }

    func testImprovementAndPerClassThresholds() throws {
        let a = try report(40, wrong: [0, 2, 4]), b = try report(40)
        XCTAssertTrue(try compare(a, b).1.passed)
        // recall[c0] drops 0.15: fails at the default 0.10, passes with a class threshold of 0.2.
        var policy = GatePolicy()
        policy.maxAccuracyDrop = 0.1
        policy.maxMacroF1Drop = 0.1
        XCTAssertEqual(try compare(b, a, policy).1.failures.map(\.name), ["recall[c0]"])
        policy.classRecallDrop = ["c0": 0.2]
        XCTAssertTrue(try compare(b, a, policy).1.passed)
    }

    func testClassesAreMatchedByName() throws {
        // The same predictions with the classes listed in the other order.
        let rows = Fixtures.sequences(20, classes: 2) { $0 != 3 }
        let a = try Fixtures.report(rows, classes: ["c0", "c1"])
        let flipped = rows.map { ($0.sequence, $0.start, 1 - $0.truth, Array($0.p.reversed())) }
        let b = try Fixtures.report(flipped, classes: ["c1", "c0"])
        let (c, g) = try compare(a, b)
        XCTAssertEqual(c.candidatePredicted, c.baselinePredicted)
        XCTAssertTrue(g.passed)
        assertClose(g.checks[3].candidate, g.checks[3].baseline)
    }

    func testRefusals() throws {
        let a = try Fixtures.report()
        assertThrows(["cannot compare the reports: old.json and new.json: the label sets differ (only in the baseline: jump; only in the candidate: hop)"]) {
            _ = try self.compare(a, try Fixtures.report(classes: ["walk", "run", "hop"]))
        }
        var other = Fixtures.data
        other.hash = "fnv1a64:ffffffffffffffff"
        assertThrows(["they evaluate different datasets ('toy' fnv1a64:00000000000000da vs 'toy' fnv1a64:ffffffffffffffff)"]) {
            _ = try self.compare(a, try Fixtures.report(data: other))
        }
        var split = Fixtures.data
        split.split = "validation"
        assertThrows(["they evaluate different splits (test vs validation); evaluate both on the same split"]) {
            _ = try self.compare(a, try Fixtures.report(data: split))
        }
        let fewer = Array(Fixtures.windowRows.dropLast())
        assertThrows(["they hold different samples (12 vs 11 windows", "1 of the baseline's are not in the candidate, e.g. sequence 's6' window at frame 10", "split and stride"]) {
            _ = try self.compare(a, try Fixtures.report(fewer))
        }
        var relabeled = Fixtures.windowRows
        relabeled[0].truth = 1
        relabeled[1].truth = 1
        assertThrows(["sequence 's1' window at frame 0 is 'walk' in the baseline but 'run' in the candidate"]) {
            _ = try self.compare(a, try Fixtures.report(relabeled))
        }
        var mixed = Fixtures.windowRows
        mixed[1].truth = 1
        assertThrows(["their headline levels differ (sequence vs window); choose the level to compare"]) {
            _ = try self.compare(a, try Fixtures.report(mixed))
        }
        assertThrows(["new.json has no sequence-level predictions to pair"]) {
            _ = try Comparison(
                baseline: a, candidate: try Fixtures.report(mixed), baselineName: "old.json", candidateName: "new.json", level: .sequence)
        }
    }

    func testPolicyFile() throws {
        let dir = try temporaryDirectory()
        func file(_ text: String) throws -> String {
            let url = dir.appendingPathComponent("\(UUID().uuidString).json")
            try Data(text.utf8).write(to: url)
            return url.path
        }
        let good = try file(#"{"maxAccuracyDrop": 0.05, "classRecallDrop": {"wave": 0.2}, "requireSignificance": true, "level": "window"}"#)
        let p = try GatePolicy.load(good)
        XCTAssertEqual(p.maxAccuracyDrop, 0.05)
        XCTAssertEqual(p.maxMacroF1Drop, 0.02)  // default kept
        XCTAssertEqual(p.recallThreshold("wave"), 0.2)
        XCTAssertEqual(p.recallThreshold("other"), 0.10)
        XCTAssertTrue(p.requireSignificance)
        XCTAssertEqual(p.requestedLevel, .window)
        let typo = try file(#"{"maxAcuracyDrop": 0.05}"#)
        assertThrows([typo, "invalid gate policy: unknown key 'maxAcuracyDrop'"]) { _ = try GatePolicy.load(typo) }
        let range = try file(#"{"alpha": 1.5}"#)
        assertThrows([range, "alpha must be between 0 and 1"]) { _ = try GatePolicy.load(range) }
        let type = try file(#"{"maxMacroF1Drop": "a lot"}"#)
        assertThrows([type, "expected Double at maxMacroF1Drop"]) { _ = try GatePolicy.load(type) }
        let level = try file(#"{"level": "frame"}"#)
        assertThrows(["level must be headline, window or sequence, got 'frame'"]) { _ = try GatePolicy.load(level) }
        let array = try file("[1, 2]")
        assertThrows([array, "not a JSON object"]) { _ = try GatePolicy.load(array) }
    }

    func testJUnitXMLIsWellFormed() throws {
        let a = try report(40), b = try report(40, wrong: [0, 2, 4])
        let (c, g) = try compare(a, b)
        let xml = JUnitReport.render(c, gate: g)
        let parsed = try XCTUnwrap(ReportFormatsTests.parseXML(xml))
        XCTAssertEqual(parsed.elements.first, "testsuites")
        XCTAssertEqual(parsed.elements.filter { $0 == "testcase" }.count, 4)
        XCTAssertEqual(parsed.elements.filter { $0 == "failure" }.count, 3)
        let suite = try XCTUnwrap(parsed.elements.firstIndex(of: "testsuite"))
        XCTAssertEqual(parsed.attributes[suite]["tests"], "4")
        XCTAssertEqual(parsed.attributes[suite]["failures"], "3")
        let names = zip(parsed.elements, parsed.attributes).filter { $0.0 == "testcase" }.map { $0.1["name"] ?? "" }
        XCTAssertEqual(names, ["accuracy", "macro F1", "recall[c0]", "recall[c1]"])
        let properties = zip(parsed.elements, parsed.attributes).filter { $0.0 == "property" }.map { $0.1["name"] ?? "" }
        XCTAssertTrue(properties.contains("baseline.model"))
        XCTAssertTrue(properties.contains("candidate.data hash"))
        XCTAssertTrue(parsed.text.contains("gate: FAILED (3 of 4 checks)"))
    }

    func testComparisonText() throws {
        let a = try report(40), b = try report(40, wrong: [0, 2, 4])
        let (c, g) = try compare(a, b)
        let text = CompareReport.text(c, gate: g)
        XCTAssertTrue(text.contains("paired            40 sequences, sequence level (the headline)\n"), text)
        XCTAssertTrue(text.contains("accuracy                 1.000      0.925   -0.075   ["), text)
        XCTAssertTrue(text.contains("McNemar on the 40 paired sequences: baseline right/candidate wrong 3, baseline wrong/candidate right 0, exact binomial p = 0.2500\n"), text)
        XCTAssertTrue(text.contains("[0] c0    -3    +3\n"), text)  // three c0 sequences moved to c1
        XCTAssertTrue(text.hasSuffix("gate: FAILED (3 of 4 checks)\n"), text)
        let md = CompareReport.markdown(c, gate: g)
        XCTAssertTrue(md.contains("## Regression gate: FAILED ❌ (3 of 4 checks)"))
        XCTAssertTrue(md.contains("| recall[c0] | **FAIL** |"))
    }
}
