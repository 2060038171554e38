/// Events against labelled segments of streams (docs/reports.md "Events"): how many actions a
/// stream's events find, how well their start and end match, and how late they come.

/// A true action: a labelled segment of a stream (seconds on the stream's clock).
public struct TrueSegment: Codable, Hashable, Sendable {
    public var sequence: String
    public var label: String
    public var start: Double
    public var end: Double

    public init(sequence: String, label: String, start: Double, end: Double) {
        self.sequence = sequence
        self.label = label
        self.start = start
        self.end = end
    }
}

/// An event a stream gave, and when it was emitted (stream time; nil when not known).
public struct StreamEvent: Codable, Hashable, Sendable {
    public var sequence: String
    public var label: String
    public var start: Double
    public var end: Double
    public var emitted: Double?

    public init(sequence: String, label: String, start: Double, end: Double, emitted: Double? = nil) {
        self.sequence = sequence
        self.label = label
        self.start = start
        self.end = end
        self.emitted = emitted
    }
}

/// The metrics of events against true segments.
///
/// - **F1 at IoU t** (segmental F1, Lea et al. 2017, as the temporal action segmentation
///   literature reports it): the events of each sequence in order of start; each takes the
///   true segment of its label and sequence with the highest IoU (intersection over union of
///   the two intervals); it is a true positive when that IoU is at least t and the segment was
///   not taken yet, else a false positive; segments never taken are false negatives.
/// - **Matched pairs**: one event per segment of the same label and sequence, greedily from the
///   highest IoU above 0. Start and end errors (absolute, seconds), the latency (emission
///   minus the segment's end, signed) and the mean IoU are over these pairs; an event in no pair
///   is **extra**, a segment in none is **missed**.
/// - Quantiles are linear between order statistics (numpy's default).
public struct EventMetrics: Codable, Hashable, Sendable {
    public struct AtIoU: Codable, Hashable, Sendable {
        public var iou: Double
        public var truePositives: Int
        public var precision: Double
        public var recall: Double
        public var f1: Double
    }

    /// The median and 90th percentile of some seconds, and how many values.
    public struct Seconds: Codable, Hashable, Sendable {
        public var count: Int
        public var median: Double
        public var p90: Double
        public var mean: Double
    }

    /// The IoU thresholds reported.
    public static let thresholds = [0.5, 0.7]

    public var segments: Int
    public var events: Int
    public var sequences: Int
    public var atIoU: [AtIoU]
    public var matched: Int
    public var extra: Int
    public var missed: Int
    public var meanIoU: Double
    /// Extra events per 12 true segments.
    public var extraPerDozen: Double
    public var startError: Seconds?
    public var endError: Seconds?
    /// Emission minus the true end, over the matched pairs whose event has an emission time.
    public var latency: Seconds?
    /// The compared lists, so that a report holds what it scored.
    public var truth: [TrueSegment]
    public var found: [StreamEvent]

    /// F1 at IoU `t`, if reported.
    public func f1(at t: Double) -> Double? { atIoU.first { abs($0.iou - t) < 1e-9 }?.f1 }

    public init(truth: [TrueSegment], events: [StreamEvent]) {
        self.truth = truth
        found = events
        segments = truth.count
        self.events = events.count
        sequences = Set(truth.map(\.sequence)).union(events.map(\.sequence)).count
        func iou(_ e: StreamEvent, _ s: TrueSegment) -> Double {
            let inter = min(e.end, s.end) - max(e.start, s.start), union = max(e.end, s.end) - min(e.start, s.start)
            return union > 0 ? max(0, inter) / union : (e.start == s.start ? 1 : 0)  // two instants: the same one or not
        }
        var bySequence: [String: [Int]] = [:]
        for (i, s) in truth.enumerated() { bySequence[s.sequence, default: []].append(i) }
        let order = events.indices.sorted { (events[$0].sequence, events[$0].start, $0) < (events[$1].sequence, events[$1].start, $1) }
        atIoU = Self.thresholds.map { t in
            var hit = [Bool](repeating: false, count: truth.count), tp = 0, fp = 0
            for j in order {
                let e = events[j]
                var best = -1.0, at: Int?
                for i in bySequence[e.sequence] ?? [] where truth[i].label == e.label {
                    let v = iou(e, truth[i])
                    if v > best { (best, at) = (v, i) }
                }
                if let i = at, best >= t, !hit[i] {
                    hit[i] = true
                    tp += 1
                } else {
                    fp += 1
                }
            }
            let precision = Double(tp) / Double(max(1, tp + fp)), recall = Double(tp) / Double(max(1, truth.count))
            let f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0
            return AtIoU(iou: t, truePositives: tp, precision: precision, recall: recall, f1: f1)
        }
        var candidates: [(iou: Double, event: Int, segment: Int)] = []
        for (j, e) in events.enumerated() {
            for i in bySequence[e.sequence] ?? [] where truth[i].label == e.label {
                let v = iou(e, truth[i])
                if v > 0 { candidates.append((v, j, i)) }
            }
        }
        candidates.sort { ($0.iou, -$0.event, -$0.segment) > ($1.iou, -$1.event, -$1.segment) }
        var usedEvent = Set<Int>(), usedSegment = Set<Int>(), pairs: [(event: Int, segment: Int, iou: Double)] = []
        for c in candidates where !usedEvent.contains(c.event) && !usedSegment.contains(c.segment) {
            usedEvent.insert(c.event)
            usedSegment.insert(c.segment)
            pairs.append((c.event, c.segment, c.iou))
        }
        pairs.sort { $0.segment < $1.segment }
        matched = pairs.count
        extra = events.count - pairs.count
        missed = truth.count - pairs.count
        meanIoU = pairs.isEmpty ? 0 : pairs.map(\.iou).reduce(0, +) / Double(pairs.count)
        extraPerDozen = truth.isEmpty ? 0 : Double(extra) * 12 / Double(truth.count)
        startError = Self.seconds(pairs.map { abs(events[$0.event].start - truth[$0.segment].start) })
        endError = Self.seconds(pairs.map { abs(events[$0.event].end - truth[$0.segment].end) })
        latency = Self.seconds(pairs.compactMap { p in events[p.event].emitted.map { $0 - truth[p.segment].end } })
    }

    static func seconds(_ values: [Double]) -> Seconds? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return Seconds(
            count: values.count, median: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), mean: values.reduce(0, +) / Double(values.count))
    }

    /// The `q` quantile of sorted values, linear between order statistics.
    static func quantile(_ sorted: [Double], _ q: Double) -> Double {
        let x = q * Double(sorted.count - 1), lo = Int(x.rounded(.down)), hi = min(lo + 1, sorted.count - 1)
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (x - Double(lo))
    }
}

extension EventMetrics {
    /// The metrics as text lines (the text report's events section).
    public func textLines(digits: Int = 3) -> String {
        var out = Text.padRight("", 20) + Text.pad("precision", 10) + Text.pad("recall", 8) + Text.pad("F1", 8) + "\n"
        for a in atIoU {
            out +=
                Text.padRight("IoU >= \(a.iou)", 20) + Text.pad(Text.fixed(a.precision, digits), 10) + Text.pad(Text.fixed(a.recall, digits), 8)
                + Text.pad(Text.fixed(a.f1, digits), 8) + "\n"
        }
        out += "\n" + Text.padRight("seconds", 20) + Text.pad("median", 10) + Text.pad("p90", 8) + Text.pad("mean", 8) + "\n"
        for (name, s) in [("start error", startError), ("end error", endError), ("latency", latency)] {
            guard let s else { continue }
            out +=
                Text.padRight(name, 20) + Text.pad(Text.fixed(s.median, digits), 10) + Text.pad(Text.fixed(s.p90, digits), 8)
                + Text.pad(Text.fixed(s.mean, digits), 8) + "\n"
        }
        out += "\n\(matched) of \(segments) segments matched (mean IoU \(Text.fixed(meanIoU, digits))), \(missed) missed; "
        out += "\(extra) extra event\(extra == 1 ? "" : "s") (\(Text.fixed(extraPerDozen, 2)) per dozen segments)\n"
        return out
    }

    /// How the numbers are defined, in one paragraph (every report's events footnote).
    public static let definition =
        "Events against the true segments: F1 at IoU t is the segmental F1 (each event, in order, takes the true segment of its label with the highest IoU; a true positive when the IoU is at least t and the segment is not taken yet). Errors and latency are over one-to-one pairs of the same label with IoU above 0, taken from the highest IoU; an event in no pair is extra, a segment in none is missed. Latency is the stream time at which the event was emitted minus the segment's end."
}
