import Eval
import Foundation
import TestSupport
import XCTest

/// Events against true segments (`EventMetrics`), worked by hand, and in the reports and the gate.
final class EventMetricsTests: XCTestCase {
    /// Stream s: walk 0-2 s, run 3-5 s, walk 6-8 s; stream t: run 0-4 s.
    static let truth = [
        TrueSegment(sequence: "s", label: "walk", start: 0, end: 2), TrueSegment(sequence: "s", label: "run", start: 3, end: 5),
        TrueSegment(sequence: "s", label: "walk", start: 6, end: 8), TrueSegment(sequence: "t", label: "run", start: 0, end: 4),
    ]
    /// IoU 1.8/2.1 with the first walk, 1.5/2.4 with the run, none (a second run after it), 1/2
    /// with the second walk; in t a walk where a run is (no walk there).
    static let events = [
        StreamEvent(sequence: "s", label: "walk", start: 0.2, end: 2.1, emitted: 2.5), StreamEvent(sequence: "s", label: "run", start: 3.5, end: 5.4, emitted: 6),
        StreamEvent(sequence: "s", label: "run", start: 5.5, end: 6, emitted: 6.3), StreamEvent(sequence: "s", label: "walk", start: 6, end: 7, emitted: 7.2),
        StreamEvent(sequence: "t", label: "walk", start: 0, end: 4, emitted: 4.5),
    ]

    func testMetricsByHand() throws {
        let m = EventMetrics(truth: Self.truth, events: Self.events)
        XCTAssertEqual(m.segments, 4)
        XCTAssertEqual(m.events, 5)
        XCTAssertEqual(m.sequences, 2)
        // IoU ≥ 0.5: the walks (0.857, 0.5) and the run (0.625) are true positives, 2 false: P 3/5, R 3/4.
        let half = try XCTUnwrap(m.atIoU.first)
        XCTAssertEqual(half.iou, 0.5)
        XCTAssertEqual(half.truePositives, 3)
        assertClose(half.precision, 0.6)
        assertClose(half.recall, 0.75)
        assertClose(half.f1, 2 * 0.6 * 0.75 / 1.35)
        // IoU ≥ 0.7: only the first walk: P 1/5, R 1/4.
        assertClose(try XCTUnwrap(m.f1(at: 0.7)), 2 * 0.2 * 0.25 / 0.45)
        XCTAssertEqual(m.matched, 3)
        XCTAssertEqual(m.extra, 2)
        XCTAssertEqual(m.missed, 1)
        assertClose(m.extraPerDozen, 6)
        assertClose(m.meanIoU, (1.8 / 2.1 + 0.625 + 0.5) / 3)
        // Start errors 0.2, 0.5, 0 (median 0.2, p90 0.2 + 0.8 · 0.3); end errors 0.1, 0.4, 1;
        // latency 0.5, 1, -0.8 (the second walk was emitted before its true end).
        let start = try XCTUnwrap(m.startError), end = try XCTUnwrap(m.endError), latency = try XCTUnwrap(m.latency)
        assertClose(start.median, 0.2)
        assertClose(start.p90, 0.44)
        assertClose(start.mean, 0.7 / 3)
        assertClose(end.median, 0.4)
        assertClose(end.p90, 0.88)
        assertClose(latency.median, 0.5)
        assertClose(latency.p90, 0.9)
        XCTAssertEqual(latency.count, 3)
        // A segment's own event found twice: the second is extra, the order of events does not matter.
        let twice = EventMetrics(truth: [Self.truth[0]], events: [Self.events[0], Self.events[0]])
        XCTAssertEqual([twice.matched, twice.extra], [1, 1])
        let reversed = EventMetrics(truth: Self.truth, events: Self.events.reversed())
        XCTAssertEqual(reversed.atIoU, m.atIoU)
        XCTAssertEqual([reversed.startError, reversed.endError, reversed.latency], [m.startError, m.endError, m.latency])
        // No emission times: no latency.
        XCTAssertNil(
            EventMetrics(
                truth: Self.truth,
                events: Self.events.map {
                    var e = $0; e.emitted = nil; return e
                }
            ).latency)
        // Nothing found.
        let none = EventMetrics(truth: Self.truth, events: [])
        XCTAssertEqual([none.matched, none.missed], [0, 4])
        XCTAssertEqual(none.f1(at: 0.5), 0)
        XCTAssertNil(none.startError)
    }

    func report(events: EventMetrics?) throws -> EvalReport {
        var r = try Fixtures.report(resamples: 0)
        r.events = events
        return r
    }

    func testTheReportsShowTheEventsAndTheJSONKeepsThem() throws {
        let r = try report(events: EventMetrics(truth: Self.truth, events: Self.events))
        let text = TextReport.render(r)
        XCTAssertTrue(text.contains("== events: 5 events against 4 true segments in 2 streams =="), text)
        XCTAssertTrue(text.contains("IoU >= 0.5               0.600   0.750   0.667"), text)
        XCTAssertTrue(text.contains("start error              0.200   0.440   0.233"), text)
        XCTAssertTrue(text.contains("3 of 4 segments matched (mean IoU 0.661), 1 missed; 2 extra events (6.00 per dozen segments)"), text)
        let markdown = MarkdownReport.render(r)
        XCTAssertTrue(markdown.contains("| ≥ 0.7 | 0.200 | 0.250 | 0.222 |"), markdown)
        XCTAssertTrue(markdown.contains("| latency | 0.500 | 0.900 | 0.233 |"), markdown)
        let html = HTMLReport.render(r)
        XCTAssertTrue(html.contains("<h2>Events: 5 events against 4 true segments in 2 streams</h2>"), html)
        let again = try ReportJSON.decode(try ReportJSON.encode(r), file: "report.json")
        XCTAssertEqual(again.events, r.events)
        // Without events the reports say nothing of them.
        let plain = try report(events: nil)
        XCTAssertFalse(TextReport.render(plain).contains("events"))
        XCTAssertNil(try ReportJSON.decode(try ReportJSON.encode(plain), file: "report.json").events)
    }

    func testTheGateChecksTheEventsOfBothReports() throws {
        let base = EventMetrics(truth: Self.truth, events: Self.events)
        // The candidate finds the same events 0.3 s later at the end and emits them 0.3 s later.
        let later = EventMetrics(
            truth: Self.truth,
            events: Self.events.map {
                var e = $0; e.end += 0.3; e.emitted! += 0.3; return e
            })
        let a = try report(events: base), b = try report(events: later)
        let c = try Comparison(baseline: a, candidate: b)
        let g = Gate.evaluate(c, policy: GatePolicy())
        let names = g.checks.map(\.name)
        XCTAssertEqual(Array(names.suffix(4)), ["event F1 (IoU 0.5)", "median start error", "median end error", "median latency"])
        XCTAssertEqual(g.failures.map(\.name), ["median end error", "median latency"])
        let end = try XCTUnwrap(g.checks.first { $0.name == "median end error" })
        assertClose(end.drop, 0.3)
        XCTAssertEqual(end.message, "median end error 0.400 s → 0.700 s (+0.300): rises more than the allowed 0.100 s")
        var lenient = GatePolicy()
        lenient.maxBoundaryErrorRise = 0.5
        lenient.maxLatencyRise = 0.5
        XCTAssertTrue(Gate.evaluate(c, policy: lenient).passed)
        // Without events on one side, no event checks.
        XCTAssertFalse(Gate.evaluate(try Comparison(baseline: a, candidate: try report(events: nil)), policy: GatePolicy()).checks.contains { $0.name.contains("event") })
        // The policy file's keys.
        let dir = try temporaryDirectory("EventGate")
        let path = dir.appendingPathComponent("policy.json").path
        try Data(#"{"maxEventF1Drop": 0.1, "maxBoundaryErrorRise": 0.2, "maxLatencyRise": 1}"#.utf8).write(to: URL(fileURLWithPath: path))
        let p = try GatePolicy.load(path)
        XCTAssertEqual([p.maxEventF1Drop, p.maxBoundaryErrorRise, p.maxLatencyRise], [0.1, 0.2, 1])
        try Data(#"{"maxLatencyRise": -1}"#.utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try GatePolicy.load(path)) { XCTAssertTrue("\($0)".contains("maxLatencyRise must be 0 to 3600 seconds"), "\($0)") }
    }
}
