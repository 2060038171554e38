import Foundation

/// Thresholds of the regression gate. A JSON policy file has these keys (all optional;
/// unknown keys are refused so that a typo cannot silently loosen the gate).
public struct GatePolicy: Codable, Hashable, Sendable {
    /// Largest allowed drop of accuracy (baseline − candidate), e.g. 0.02 = two points.
    public var maxAccuracyDrop: Double = 0.02
    public var maxMacroF1Drop: Double = 0.02
    /// Largest allowed drop of any class's recall, unless `classRecallDrop` names the class.
    public var maxClassRecallDrop: Double = 0.10
    /// Per-class overrides of `maxClassRecallDrop`, by label.
    public var classRecallDrop: [String: Double] = [:]
    /// When true, a drop beyond its threshold fails only if it is also significant.
    public var requireSignificance: Bool = false
    /// Significance level.
    public var alpha: Double = 0.05
    /// `headline` (default), `window` or `sequence`.
    public var level: String = "headline"
    /// When both reports score events (`eval --events`): the largest allowed drop of the
    /// event F1 at IoU 0.5, and the largest allowed rise, in seconds, of the median start and
    /// end errors and of the median latency.
    public var maxEventF1Drop: Double = 0.05
    public var maxBoundaryErrorRise: Double = 0.1
    public var maxLatencyRise: Double = 0.25
    /// Calibration, checked only when given: the largest allowed rise of the expected
    /// calibration error and of the log loss (candidate − baseline, at the compared level).
    public var maxECERise: Double? = nil
    public var maxLogLossRise: Double? = nil

    public init() {}

    static let keys: Set<String> = [
        "maxAccuracyDrop", "maxMacroF1Drop", "maxClassRecallDrop", "classRecallDrop", "requireSignificance", "alpha", "level",
        "maxEventF1Drop", "maxBoundaryErrorRise", "maxLatencyRise", "maxECERise", "maxLogLossRise",
    ]

    /// Reads a policy file. Missing keys keep their defaults.
    public static func load(_ path: String) throws -> GatePolicy {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EvalError.badPolicy(file: path, reason: "cannot read the file; check the path")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw EvalError.badPolicy(file: path, reason: "not a JSON object")
        }
        let unknown = Set(object.keys).subtracting(keys)
        if let first = unknown.sorted().first {
            throw EvalError.badPolicy(file: path, reason: "unknown key '\(first)'; known keys: \(keys.sorted().joined(separator: ", "))")
        }
        struct Partial: Decodable {
            var maxAccuracyDrop: Double?, maxMacroF1Drop: Double?, maxClassRecallDrop: Double?
            var classRecallDrop: [String: Double]?, requireSignificance: Bool?, alpha: Double?, level: String?
            var maxEventF1Drop: Double?, maxBoundaryErrorRise: Double?, maxLatencyRise: Double?
            var maxECERise: Double?, maxLogLossRise: Double?
        }
        let p: Partial
        do {
            p = try JSONDecoder().decode(Partial.self, from: data)
        } catch {
            throw EvalError.badPolicy(file: path, reason: ReportJSON.summary(error))
        }
        var policy = GatePolicy()
        if let v = p.maxAccuracyDrop { policy.maxAccuracyDrop = v }
        if let v = p.maxMacroF1Drop { policy.maxMacroF1Drop = v }
        if let v = p.maxClassRecallDrop { policy.maxClassRecallDrop = v }
        if let v = p.classRecallDrop { policy.classRecallDrop = v }
        if let v = p.requireSignificance { policy.requireSignificance = v }
        if let v = p.alpha { policy.alpha = v }
        if let v = p.level { policy.level = v }
        if let v = p.maxEventF1Drop { policy.maxEventF1Drop = v }
        if let v = p.maxBoundaryErrorRise { policy.maxBoundaryErrorRise = v }
        if let v = p.maxLatencyRise { policy.maxLatencyRise = v }
        if let v = p.maxECERise { policy.maxECERise = v }
        if let v = p.maxLogLossRise { policy.maxLogLossRise = v }
        do { try policy.validate() } catch let e as EvalError {
            if case .badPolicy(_, let why) = e { throw EvalError.badPolicy(file: path, reason: why) }
            throw e
        }
        return policy
    }

    /// Thresholds in [0, 1], alpha in (0, 1), a known level.
    public func validate() throws {
        func bad(_ why: String) -> EvalError { .badPolicy(file: "policy", reason: why) }
        for (name, v) in [("maxAccuracyDrop", maxAccuracyDrop), ("maxMacroF1Drop", maxMacroF1Drop), ("maxClassRecallDrop", maxClassRecallDrop)]
        where !(v >= 0 && v <= 1) {
            throw bad("\(name) must be between 0 and 1, got \(v)")
        }
        if !(maxEventF1Drop >= 0 && maxEventF1Drop <= 1) { throw bad("maxEventF1Drop must be between 0 and 1, got \(maxEventF1Drop)") }
        for (name, v) in [("maxBoundaryErrorRise", maxBoundaryErrorRise), ("maxLatencyRise", maxLatencyRise)] where !(v >= 0 && v <= 3600) {
            throw bad("\(name) must be 0 to 3600 seconds, got \(v)")
        }
        if let v = maxECERise, !(v >= 0 && v <= 1) { throw bad("maxECERise must be between 0 and 1, got \(v)") }
        if let v = maxLogLossRise, !(v >= 0 && v.isFinite) { throw bad("maxLogLossRise must be a finite number ≥ 0, got \(v)") }
        for (label, v) in classRecallDrop where !(v >= 0 && v <= 1) {
            throw bad("classRecallDrop for '\(label)' must be between 0 and 1, got \(v)")
        }
        guard alpha > 0 && alpha < 1 else { throw bad("alpha must be between 0 and 1 (exclusive), got \(alpha)") }
        guard requestedLevel != nil || level == "headline" else {
            throw bad("level must be headline, window or sequence, got '\(level)'")
        }
    }

    /// Every label named by `classRecallDrop` must be one of the compared classes, so that a
    /// misspelt label cannot silently fall back to the default threshold.
    public func check(classes: [String]) throws {
        let unknown = Set(classRecallDrop.keys).subtracting(classes)
        if let first = unknown.sorted().first {
            throw EvalError.badPolicy(
                file: "policy", reason: "classRecallDrop names '\(first)', which is not among the classes (\(classes.joined(separator: ", ")))")
        }
    }

    /// The level asked for, nil for the headline.
    public var requestedLevel: Level? { Level(rawValue: level) }

    public func recallThreshold(_ label: String) -> Double { classRecallDrop[label] ?? maxClassRecallDrop }
}

/// One check of the gate; one test case in the JUnit output.
public struct GateCheck: Hashable, Sendable {
    /// `accuracy`, `macro F1` or `recall[label]`.
    public var name: String
    public var baseline: Double
    public var candidate: Double
    /// `baseline − candidate` (positive: the candidate is worse); for seconds (errors, latency)
    /// `candidate − baseline`.
    public var drop: Double
    public var threshold: Double
    /// The significance evidence, e.g. `McNemar exact binomial p = 0.0120`.
    public var evidence: String
    /// Whether the drop is significant at the policy's alpha (nil when there is no test).
    public var significant: Bool?
    public var passed: Bool
    public var message: String
}

public struct GateResult: Sendable {
    public var policy: GatePolicy
    public var level: Level
    public var checks: [GateCheck]
    public var passed: Bool { checks.allSatisfy(\.passed) }
    public var failures: [GateCheck] { checks.filter { !$0.passed } }
}

/// The regression gate: fails when accuracy or macro-F1 drops by more than its threshold,
/// or any class's recall drops by more than its per-class threshold.
///
/// With `requireSignificance`, a drop beyond its threshold fails only if it is significant:
/// - accuracy: McNemar's test on the paired samples, p < α, with the candidate wrong more often;
/// - recall of class k: McNemar's test on the samples of class k, p < α / m with m the number
///   of classes with samples (Bonferroni over the per-class checks), candidate worse;
/// - macro-F1 (no paired test exists): the paired bootstrap interval of the change, at level
///   1 − α, lies entirely below 0.
public enum Gate {
    public static func evaluate(_ c: Comparison, policy: GatePolicy) -> GateResult {
        let a = c.baselineMetrics, b = c.candidateMetrics
        var checks: [GateCheck] = []
        func check(
            _ name: String, _ base: Double, _ cand: Double, _ threshold: Double, evidence: String, significant: Bool?
        ) -> GateCheck {
            let drop = base - cand
            let beyond = drop > threshold + 1e-12
            let counts = !policy.requireSignificance || significant == true
            let passed = !(beyond && counts)
            let change = "\(Text.fixed(base)) → \(Text.fixed(cand)) (\(Text.signed(-drop)))"
            let message: String
            if !beyond {
                message = "\(name) \(change): within the allowed drop of \(Text.fixed(threshold))"
            } else if passed {
                message = "\(name) \(change): drops more than \(Text.fixed(threshold)) but not significantly (\(evidence)); passes because significance is required"
            } else {
                message = "\(name) \(change): drops more than the allowed \(Text.fixed(threshold)) (\(evidence))"
            }
            return GateCheck(
                name: name, baseline: base, candidate: cand, drop: drop, threshold: threshold, evidence: evidence,
                significant: significant, passed: passed, message: message)
        }

        let m = c.mcnemar
        checks.append(
            check(
                "accuracy", a.accuracy, b.accuracy, policy.maxAccuracyDrop,
                evidence: "McNemar \(m.method.rawValue) \(Text.p(m.pValue)), α = \(policy.alpha)",
                significant: m.pValue < policy.alpha && m.baselineOnly > m.candidateOnly))

        if let ci = c.macroF1Change {
            checks.append(
                check(
                    "macro F1", a.macroF1, b.macroF1, policy.maxMacroF1Drop,
                    evidence: "paired bootstrap \(Int((c.confidence * 100).rounded()))% CI of the change \(Text.signedInterval(ci))",
                    significant: ci.high < 0))
        } else {
            checks.append(
                check("macro F1", a.macroF1, b.macroF1, policy.maxMacroF1Drop, evidence: "no bootstrap (resamples = 0)", significant: nil))
        }

        let tested = c.classes.indices.filter { a.classes[$0].support > 0 }
        let classAlpha = policy.alpha / Double(max(1, tested.count))
        for k in tested {
            let t = c.classMcNemar[k]
            let label = c.classes[k]
            checks.append(
                check(
                    "recall[\(label)]", a.classes[k].recall, c.candidateClass(k).recall, policy.recallThreshold(label),
                    evidence: "McNemar on the class's \(a.classes[k].support) samples, \(t.method.rawValue) \(Text.p(t.pValue)), α/\(tested.count) = \(Text.fixed(classAlpha, 4))",
                    significant: t.pValue < classAlpha && t.baselineOnly > t.candidateOnly))
        }
        checks += calibrationChecks(a, b, policy: policy)
        if let ea = c.baseline.events, let eb = c.candidate.events { checks += eventChecks(ea, eb, policy: policy) }
        return GateResult(policy: policy, level: c.level, checks: checks)
    }

    /// The calibration checks, when the policy asks for them (`maxECERise`, `maxLogLossRise`):
    /// the candidate's ECE and log loss may rise by at most that much (no significance test: the
    /// check fails on the rise alone, with or without `requireSignificance`).
    static func calibrationChecks(_ a: LevelMetrics, _ b: LevelMetrics, policy: GatePolicy) -> [GateCheck] {
        var checks: [GateCheck] = []
        for (name, va, vb, limit) in [
            ("ECE", a.expectedCalibrationError, b.expectedCalibrationError, policy.maxECERise), ("log loss", a.logLoss, b.logLoss, policy.maxLogLossRise),
        ] {
            guard let limit else { continue }
            let rise = vb - va, passed = !(rise > limit + 1e-12)
            let change = "\(Text.fixed(va, 4)) → \(Text.fixed(vb, 4)) (\(Text.signed(rise, 4)))"
            checks.append(
                GateCheck(
                    name: name, baseline: va, candidate: vb, drop: rise, threshold: limit, evidence: "no significance test for calibration",
                    significant: nil, passed: passed,
                    message: passed
                        ? "\(name) \(change): within the allowed rise of \(Text.fixed(limit, 4))"
                        : "\(name) \(change): rises more than the allowed \(Text.fixed(limit, 4))"))
        }
        return checks
    }

    /// The events' checks: F1 at IoU 0.5 may drop by `maxEventF1Drop`, the median start and
    /// end errors may rise by `maxBoundaryErrorRise` seconds and the median latency by
    /// `maxLatencyRise` (no paired test: the events of two models do not pair one to one).
    static func eventChecks(_ a: EventMetrics, _ b: EventMetrics, policy: GatePolicy) -> [GateCheck] {
        var checks: [GateCheck] = []
        let evidence = "no significance test for events"
        if let fa = a.f1(at: 0.5), let fb = b.f1(at: 0.5) {
            let drop = fa - fb, passed = !(drop > policy.maxEventF1Drop + 1e-12)
            let change = "\(Text.fixed(fa)) → \(Text.fixed(fb)) (\(Text.signed(-drop)))"
            checks.append(
                GateCheck(
                    name: "event F1 (IoU 0.5)", baseline: fa, candidate: fb, drop: drop, threshold: policy.maxEventF1Drop, evidence: evidence,
                    significant: nil, passed: passed,
                    message: passed
                        ? "event F1 (IoU 0.5) \(change): within the allowed drop of \(Text.fixed(policy.maxEventF1Drop))"
                        : "event F1 (IoU 0.5) \(change): drops more than the allowed \(Text.fixed(policy.maxEventF1Drop))"))
        }
        for (name, sa, sb, limit) in [
            ("median start error", a.startError, b.startError, policy.maxBoundaryErrorRise), ("median end error", a.endError, b.endError, policy.maxBoundaryErrorRise),
            ("median latency", a.latency, b.latency, policy.maxLatencyRise),
        ] {
            guard let sa, let sb else { continue }
            let rise = sb.median - sa.median, passed = !(rise > limit + 1e-12)
            let change = "\(Text.fixed(sa.median)) s → \(Text.fixed(sb.median)) s (\(Text.signed(rise)))"
            checks.append(
                GateCheck(
                    name: name, baseline: sa.median, candidate: sb.median, drop: rise, threshold: limit, evidence: evidence, significant: nil,
                    passed: passed,
                    message: passed
                        ? "\(name) \(change): within the allowed rise of \(Text.fixed(limit)) s"
                        : "\(name) \(change): rises more than the allowed \(Text.fixed(limit)) s"))
        }
        return checks
    }
}
