import Datasets
import Foundation
import PoseCore

/// The training recipe `fit` chooses from the data when the user has not: how sequences become
/// windows, how coordinates are normalised, which channels the network sees, and how hard to
/// regularise. Each choice is a rule on a `DatasetProfile` fact, written down here and in
/// docs/training.md ("The recipe"), and was chosen by cross-validation on the training splits
/// of the shared datasets (docs/benchmarks.md). Keys the user set (config file or flag) are
/// never changed.
public enum Recipe {
    /// One decision: what was seen, what was set.
    public struct Choice: Equatable, Sendable, CustomStringConvertible {
        /// A short topic: `windows`, `coordinates`, `channels`, `size`, `training`.
        public var topic: String
        /// What the data showed.
        public var seen: String
        /// What was set, as config keys and values.
        public var set: String
        public var description: String { "\(topic): \(seen) → \(set)" }
    }

    /// Sequences at most this long (seconds; frames at 30 fps when the rate is unknown) are
    /// clips with one label each, classified whole; longer ones are recordings cut into sliding
    /// windows.
    public static let clipSeconds = 10.0
    /// A class with fewer training sequences than this makes the dataset small: augmentation,
    /// every sequence used for training (no validation split).
    public static let smallClass = 60

    /// `base` with every key not in `explicit` chosen for `profile`, and the choices made.
    /// `explicit` holds config keys (`windowMode`, `channels`, ...) the user set.
    public static func choose(
        _ base: TrainingConfig, explicit: Set<String>, profile p: DatasetProfile
    ) -> (config: TrainingConfig, choices: [Choice]) {
        var c = base
        var choices: [Choice] = []
        var setKeys: [String] = []
        /// Sets `key` unless the user did; returns whether it was set.
        func set<T>(_ key: String, _ path: WritableKeyPath<TrainingConfig, T>, _ value: T) -> Bool {
            guard !explicit.contains(key) else { return false }
            c[keyPath: path] = value
            setKeys.append("\(key) \(show(value))")
            return true
        }
        func note(_ topic: String, _ seen: String) {
            if !setKeys.isEmpty { choices.append(Choice(topic: topic, seen: seen, set: setKeys.joined(separator: ", "))) }
            setKeys = []
        }
        var sk = p.skeleton
        let D = sk.dimensions

        // Windows.
        let length =
            p.frames.min == p.frames.max
            ? "\(p.sequences) sequences of \(p.frames.median) frames"
            : "\(p.sequences) sequences of \(p.frames.min)-\(p.frames.max) frames (median \(p.frames.median))"
        let rate = p.frameRate ?? 30
        let clipFrames = Int((clipSeconds * rate).rounded())
        if p.eventShare >= 0.5 {
            _ = set("useEvents", \.useEvents, true)
            _ = set("windowMode", \.windowMode, WindowSpec.Mode.sliding)
            note("windows", "\(Int((p.eventShare * 100).rounded()))% of the training sequences have labeled events")
        } else if p.frames.median <= clipFrames {
            let fit = set("windowMode", \.windowMode, WindowSpec.Mode.fit)
            _ = set("windowFrames", \.windowFrames, fitFrames(p.frames.median))
            var seen = "\(length): clips, one label each (at most \(Int(clipSeconds)) s)"
            // A window length or frame rate given without a window mode reads like consecutive
            // frames; say what it means for whole clips.
            let given = ["windowFrames", "frameRate"].filter(explicit.contains)
            if fit && !given.isEmpty {
                let at = c.frameRate.map { " at \(format($0)) fps" } ?? ""
                seen +=
                    "; with the \(given.joined(separator: " and ")) you gave, each whole clip\(at) is resampled to \(c.windowFrames) frames: "
                    + "the model takes a whole clip (the training clips' median: \(format(Double(p.frames.median) / rate)) s), not the last \(c.windowFrames) frames of a stream "
                    + "(windowMode sliding for that)"
            }
            note("windows", seen)
        } else {
            let frames = min(64, max(16, Int((2 * rate).rounded())))
            _ = set("windowMode", \.windowMode, WindowSpec.Mode.sliding)
            _ = set("windowFrames", \.windowFrames, frames)
            _ = set("windowStride", \.windowStride, max(1, frames / 3))
            note("windows", "\(length): recordings longer than \(Int(clipSeconds)) s, cut into 2 s windows")
        }

        // Coordinates: centre, scale, facing.
        if !sk.centre.isEmpty {
            _ = set("centring", \.centring, InputSpec.Centring.window)
        } else if p.offset > 1 {
            _ = set("centring", \.centring, InputSpec.Centring.mean)
        } else {
            _ = set("centring", \.centring, InputSpec.Centring.none)
        }
        let centreText =
            !sk.centre.isEmpty
            ? "centre joints \(sk.centre.joined(separator: "+"))"
            : p.offset > 1
                ? "no centre joints, bodies \(format(p.offset)) body sizes from the origin"
                : "no centre joints, bodies already centred"
        var scaleText: String
        if !sk.torsoUpper.isEmpty && !sk.torsoLower.isEmpty {
            _ = set("scaling", \.scaling, InputSpec.Scaling.torso)
            scaleText = "torso known"
        } else if p.bodySize > 0 && p.bodySize.isFinite && !PreprocessingStep.divisors.contains(Float(p.bodySize)) {
            // Bodies 1e-7 across: no divisor a model file holds; the lint's units warning says why.
            scaleText = "no torso, body size \(format(p.bodySize)) \(units(sk)), outside the 1e-06 to 1e+06 a divisor may be: not scaled"
        } else if p.bodySize > 0 && p.bodySize.isFinite {
            if set("scaling", \.scaling, InputSpec.Scaling.fixed) {
                _ = set("scaleDivisor", \.scaleDivisor, Optional(Double(Float(p.bodySize))))
            }
            scaleText = "no torso, body size \(format(p.bodySize)) \(units(sk))"
        } else {
            scaleText = "no body size measurable"
        }
        if let spreads = differentUnits(p.axisSpread) {
            // Said, not fixed: dividing each axis by its spread measured worse than one divisor
            // when only the depth was in other units (docs/benchmarks.md).
            scaleText += "; the axes spread \(spreads.map { format($0) }.joined(separator: ", ")): different units? axisDivisors converts them"
        }
        var facing = ""
        // A skeleton that names no mirror pairs: those of the inferred tree (`MirrorPairs`), for
        // the facing below and the flips of the laterality rule, as a named skeleton's.
        if sk.mirrorPairs.isEmpty {
            if !p.inferredMirrorPairs.isEmpty && set("mirrorPairs", \.mirrorPairs, p.inferredMirrorPairs) {
                facing += "; the inferred tree mirrors \(p.inferredMirrorPairs.count) joint pairs (subtrees of one shape and bone lengths)"
            }
            if !c.mirrorPairs.isEmpty {
                sk.mirrorPairs = c.mirrorPairs
                var tree = sk
                tree.bones = c.graph.isEmpty ? p.inferredBones : c.graph
                let sides = MirrorPairs.sideJoints(tree)
                if D == 3 { facing += ", sides \(sides.left.joined(separator: "+")) | \(sides.right.joined(separator: "+"))" }
            }
        }
        if D == 3 && hasFacingPairs(sk) {
            // A camera elsewhere sees the bodies turned: each window is turned to face one way,
            // unless the user says the cameras stay where they were (docs/benchmarks.md,
            // "Views the training set never showed").
            let align = c.views != .same
            _ = set("alignFacing", \.alignFacing, align)
            let spread = p.facingSpread.map { ", the direction bodies face varies by \(Int($0.rounded()))° between sequences" } ?? ""
            facing += spread + (align ? "; views \(c.views.rawValue): a camera elsewhere sees them turned" : "; views same: kept as recorded")
        }
        note("coordinates", "\(D)D \(units(sk)), \(centreText), \(scaleText)\(facing)")

        // Channels, and the bones of a skeleton that names none.
        var channels: [ChannelBlock] = [.coordinates, .mask]
        var bonesText = "skeleton '\(sk.name)' has \(sk.bones.count) bones"
        if sk.bones.isEmpty {
            bonesText = "skeleton '\(sk.name)' names no bones"
            if !explicit.contains("graph") && !p.inferredBones.isEmpty {
                _ = set("graph", \.graph, p.inferredBones)
                bonesText += "; a tree of \(p.inferredBones.count) short, rigid joint pairs in the data become its bones"
            }
        }
        if !sk.bones.isEmpty || !c.graph.isEmpty { channels.append(.bones) }
        _ = set("channels", \.channels, channels)
        note("channels", bonesText)

        // Members: the network over those channels, and a Fourier temporal pyramid of the
        // joint pairs' relative positions with a linear classifier; their probabilities averaged.
        var seen: [String] = []
        // (A skeleton of one joint has no pairs: that member would have no input.)
        if !explicit.contains("architecture") && !explicit.contains("streams") && sk.jointCount > 1,
            set("members", \.members, [.init(architecture: c.architecture, channels: c.channels), .init(architecture: .ftp, channels: [.relativePositions])])
        {
            let average = c.memberAverage == .logProbabilities ? "log-probabilities averaged (a geometric mean)" : "probabilities averaged"
            seen.append("two members, \(average): \(c.architecture.rawValue) over \(show(c.channels)), and ftp over the relative positions of the joint pairs (a logistic regression solved before training)")
        }
        // The relational blocks of a large skeleton read its key joints' pairs; a pyramid reads
        // filled gaps.
        let blocks = Set(c.members.isEmpty ? c.streams.flatMap { $0 } + c.channels : c.members.flatMap(\.channels))
        if blocks.contains(.relativePositions) || blocks.contains(.distances) {
            if let pairs = p.keyPairs, set("pairs", \.pairs, pairs) {
                seen.append("\(sk.jointCount) joints: the pairs of key joints (\(pairs.count), \(pairs.count * D) values a frame)")
            } else if c.pairs.isEmpty {
                seen.append("every joint pair (\(sk.jointCount * (sk.jointCount - 1) / 2 * D) values a frame)")
            }
        }
        if p.absentShare > 0 && (c.architecture == .ftp || c.members.contains { $0.architecture == .ftp }) && set("fillGaps", \.fillGaps, true) {
            seen.append("\(String(format: "%.1f", p.absentShare * 100))% of the joints are absent: gaps filled in time (the mask still says which were seen)")
        }
        note("model", seen.joined(separator: "; "))

        // People: the body order the reader chose for the whole file (no config key; the model
        // keeps the roles, so that eval, predict and live streams place people the same way).
        if let order = p.bodyOrder { choices.append(peopleChoice(order)) }

        // Size: regularisation and the use of every sequence.
        let small = p.smallestClass < smallClass
        _ = set("validationFraction", \.validationFraction, small ? 0 : 0.1)
        _ = set("labelSmoothing", \.labelSmoothing, Float(0.1))
        var sides = ""
        // 3D bodies that cannot be turned to face one way (no left/right pairs): wider turns about
        // the vertical axis in training (`unturnedRotation`), for small data unless the cameras
        // stay where they were, for any data when they will stand elsewhere.
        let turns = D == 3 && !c.alignFacing && (c.views == .other || (c.views == .auto && small))
        // 2D bodies cannot be turned to face one way: a camera elsewhere is imitated in training
        // (`viewChange`), for any data unless the cameras stay where they were: it gained on every
        // 2D development set, the training cameras' views too (`viewChangeByDefault`).
        let views2D = D == 2 && (c.views == .other || (c.views == .auto && viewChangeByDefault))
        // 3D bodies seen by a camera higher or lower (or rolled) lean: tilts in training
        // (`cameraTilt`), for any data unless the cameras stay where they were.
        let tilts3D = D == 3 && c.views != .same
        if small || turns || views2D || tilts3D {
            var a = small ? standardAugmentation : AugmentationConfig()
            if small, let l = p.laterality {
                // Flips when the classes do not keep to one side (left- and right-handed performers).
                let flips = l.consistency < consistencyToKeepSides
                if flips { a.flipProbability = 0.5 }
                sides = String(format: "; left/right: asymmetry %.2f, consistency within classes %.2f", l.asymmetry, l.consistency)
                sides += flips ? " (< \(consistencyToKeepSides): either side, flips)" : " (≥ \(consistencyToKeepSides): a mirror image changes the class, no flips)"
            }
            if turns {
                (a.rotationProbability, a.maxRotationDegrees) = (0.5, unturnedRotation)
                sides += "; views \(c.views.rawValue) and no left/right joints to turn the bodies by: turns up to ±\(Int(unturnedRotation))°"
            }
            if views2D {
                (a.viewProbability, a.maxViewDegrees) = (viewChange.probability, viewChange.degrees)
                sides +=
                    "; views \(c.views.rawValue) and a 2D skeleton, which cannot be turned to face one way: cameras moved up to ±\(Int(viewChange.degrees))° about the bodies"
                    + " (x foreshortened, the depth guessed from the bones made visible, each limb toward or away)"
            }
            if tilts3D {
                (a.tiltProbability, a.maxTiltDegrees) = (cameraTilt.probability, cameraTilt.degrees)
                sides += "; views \(c.views.rawValue): cameras tilted up to ±\(Int(cameraTilt.degrees))° (higher or lower than the training ones)"
            }
            _ = set("augmentation", \.augmentation, a)
        }
        let a = c.augmentation
        let otherCameras = (views2D && a.viewProbability > 0 && a.maxViewDegrees > 0) || (tilts3D && a.tiltProbability > 0 && a.maxTiltDegrees > 0)
        if otherCameras && (c.architecture == .ftp || c.members.contains { $0.architecture == .ftp }) && set("linearHeadCopies", \.linearHeadCopies, viewCopies) {
            sides += "; the pyramid's linear head fits \(viewCopies) copies of each window so changed too (fewer beyond 1,250 rows)"
        }
        note(
            "size",
            "\(p.sequences) training sequences, \(p.classes) classes, smallest \(p.smallestClass)"
                + (small ? " (small: every sequence trains, augmented)" : "") + sides)

        // Training length and schedule: 120 epochs, more when an epoch is only a few batches.
        _ = set("schedule", \.schedule, LearningRateSchedule.Kind.cosine)
        var steps = ""
        if c.windowMode == .fit && !c.useEvents {
            let windows = max(1, Int((Double(p.sequences) * (1 - c.validationFraction)).rounded()))
            let batchSize = max(1, c.batchSize)
            let batches = (windows + batchSize - 1) / batchSize
            let epochs = trainingEpochs(batchesPerEpoch: batches)
            _ = set("epochs", \.epochs, epochs)
            if epochs > 120 { steps = "; \(windows) windows are \(batches) batch\(batches == 1 ? "" : "es") an epoch, at least \(minimumSteps) steps" }
        } else {
            _ = set("epochs", \.epochs, 120)
        }
        note("training", "a decaying schedule ends every run well without a validation split" + steps)
        return (c, choices)
    }

    /// The "people" line of data read with `bodies=M`: the body order its reader chose for the
    /// whole file and why (`BodyOrder`), and what the model keeps of it. Not a config key: `fit`
    /// prints it with the recipe off too.
    public static func peopleChoice(_ order: BodyOrder) -> Choice {
        let kept = order.rule.roles.map { "body order \(BodyOrder.quoted($0)) (the model keeps it: input.bodyRoles)" } ?? "body order: first appearance in each sequence"
        return Choice(topic: "people", seen: "\(order.bodies) bodies a frame; \(order)", set: kept)
    }

    /// The laterality consistency (`DatasetProfile.Laterality`) from which the classes are
    /// taken to keep to one side of the body, so that a mirror image would change the class
    /// (NATOPS 0.97-0.98: flips cost it 0.9-1.7 points); below it the classes are done with either
    /// side (Penn Action 0.52, left- and right-handed players; UTKinect 0.72; UTKinect's pairs
    /// 0.90) and the small-data augmentation flips half of the windows (+2 to +4 points there).
    public static let consistencyToKeepSides = 0.95

    /// The augmentation of small datasets: small rotations, scale, jitter, speed and time-warp
    /// changes, each applied to half of the windows. No flips: they change lateral classes
    /// (a left-hand wave is not a right-hand wave); the recipe adds them only for classes that
    /// do not keep to one side (`consistencyToKeepSides`).
    public static let standardAugmentation: AugmentationConfig = {
        var a = AugmentationConfig()
        a.rotationProbability = 0.5
        a.maxRotationDegrees = 15
        a.scaleProbability = 0.5
        a.maxScaleChange = 0.1
        a.jitterProbability = 0.5
        a.jitterStandardDeviation = 0.02
        a.speedProbability = 0.5
        a.maxSpeedChange = 0.15
        a.timeWarpProbability = 0.5
        a.maxTimeWarp = 0.2
        return a
    }()

    /// Axes whose spreads differ by a factor in this range are taken to be in different units
    /// (a body's spreads differ by at most about 5 in metres or pixels, depth against height;
    /// pixels against metres give about 300, image fractions against millimetres about 2,000).
    /// Beyond it the small axis is noise on a flat one (2D points stored as 3D), left alone.
    public static let unitRatios = 10.0...10_000.0

    /// The axes' spreads (as Float-exact doubles) when their ratio is in `unitRatios` (e.g. x, y
    /// in image pixels and z in metres), else nil.
    static func differentUnits(_ spreads: [Double]) -> [Double]? {
        guard spreads.count > 1, let lo = spreads.min(), let hi = spreads.max(), lo > 0, hi.isFinite, unitRatios.contains(hi / lo) else {
            return nil
        }
        return spreads.map { Double(Float($0)) }
    }

    /// The largest turn about the vertical axis in the augmentation of 3D bodies that cannot be
    /// turned to face one way (half of the windows; the standard augmentation turns by up to
    /// 15°): UTKinect with its joints made anonymous 0.953 -> 0.973, its test split turned 90°
    /// 0.835 -> 0.875 (docs/benchmarks.md, "New cameras and new people").
    public static let unturnedRotation = 45.0

    /// The view change of 2D windows (`AugmentationConfig.viewProbability`, `maxViewDegrees`):
    /// every window seen by a camera moved about the body by a yaw uniform in ±90° (on every
    /// window rather than half: utk2drot90 0.889 -> 0.912, the same-view sets within 0.6 points;
    /// docs/benchmarks.md, "2D views (issue 36 item 2)").
    public static let viewChange = (probability: 1.0, degrees: 90.0)

    /// The camera tilt of 3D windows (`AugmentationConfig.tiltProbability`, `maxTiltDegrees`):
    /// every window turned about a horizontal axis by up to ±30°, as a camera higher or lower than
    /// the training ones sees the body (docs/benchmarks.md, "Cameras higher or lower").
    public static let cameraTilt = (probability: 1.0, degrees: 30.0)

    /// The augmented copies of each training window a solved linear head fits where the recipe
    /// imitates other cameras (`linearHeadCopies`; 2D views, 3D tilts): the head is solved once,
    /// before training, so it sees no augmentation otherwise.
    public static let viewCopies = 4

    /// Whether `views auto` imitates other cameras for 2D data too, or only `views other`: it
    /// does, since the views of the training cameras lost nothing (docs/benchmarks.md).
    public static let viewChangeByDefault = true

    /// Optimiser steps a run takes at least (the epochs grow for datasets of a few batches):
    /// 1,000 since every window of small data is augmented, and a 2D one seen from a camera
    /// drawn anew (docs/benchmarks.md, "Longer training for augmented small data").
    public static let minimumSteps = 1000

    /// Epochs for `batchesPerEpoch`: 120, or enough for `minimumSteps` (rounded up to tens),
    /// at most 1000.
    static func trainingEpochs(batchesPerEpoch: Int) -> Int {
        let needed = (minimumSteps + max(1, batchesPerEpoch) - 1) / max(1, batchesPerEpoch)
        return min(1000, max(120, (needed + 9) / 10 * 10))
    }

    /// The `fit` window length for clips whose median length is `median` frames.
    static func fitFrames(_ median: Int) -> Int { 32 }

    /// Whether windows of `sk` can be turned to face one way (`alignFacing`): it has left/right
    /// joint pairs (`Skeleton.sideJoints`: the hips and shoulders when it names them, else
    /// every mirror pair, such as NATOPS's hands, wrists and elbows).
    static func hasFacingPairs(_ sk: Skeleton) -> Bool {
        let (left, right) = sk.sideJoints
        return !left.isEmpty && !right.isEmpty
    }

    static func units(_ sk: Skeleton) -> String {
        switch sk.units {
        case .pixels: return "pixels"
        case .metres: return "metres"
        case .unitless: return "unitless"
        }
    }

    static func format(_ v: Double) -> String { String(format: v >= 10 ? "%.0f" : v >= 1 ? "%.2g" : "%.2g", v) }

    static func show<T>(_ v: T) -> String {
        switch v {
        case let list as [ChannelBlock]: return list.map(\.rawValue).joined(separator: "+")
        case let members as [TrainingConfig.Member]: return members.map { "\($0.architecture.rawValue):\(show($0.channels))" }.joined(separator: ",")
        case let edges as [[String]]: return "\(edges.count) joint pairs (\(edges.prefix(3).map { $0.joined(separator: "-") }.joined(separator: ", "))\(edges.count > 3 ? ", ..." : ""))"
        case let e as any RawRepresentable: return "\(e.rawValue)"
        case let o as Double?: return o.map { format($0) } ?? "none"
        case let a as AugmentationConfig:
            var plain = a
            (plain.flipProbability, plain.maxRotationDegrees) = (0, standardAugmentation.maxRotationDegrees)
            (plain.viewProbability, plain.maxViewDegrees) = (0, 0)
            (plain.tiltProbability, plain.maxTiltDegrees) = (0, 0)
            var parts: [String] = []
            if a.rotationProbability > 0 { parts.append("rotation ±\(Int(a.maxRotationDegrees.rounded()))°") }
            if a.scaleProbability > 0 { parts.append("scale ±\(Int((a.maxScaleChange * 100).rounded()))%") }
            if a.jitterProbability > 0 { parts.append("jitter") }
            if a.speedProbability > 0 { parts.append("speed ±\(Int((a.maxSpeedChange * 100).rounded()))%") }
            if a.timeWarpProbability > 0 { parts.append("time warp ±\(Int((a.maxTimeWarp * 100).rounded()))%") }
            if a.flipProbability > 0 { parts.append("mirror images") }
            if a.viewProbability > 0 && a.maxViewDegrees > 0 { parts.append("cameras moved ±\(Int(a.maxViewDegrees.rounded()))°") }
            if a.tiltProbability > 0 && a.maxTiltDegrees > 0 { parts.append("cameras tilted ±\(Int(a.maxTiltDegrees.rounded()))°") }
            guard plain == standardAugmentation else { return parts.isEmpty ? "none" : parts.joined(separator: ", ") }
            var kinds: [String] = []
            if a.flipProbability > 0 { kinds.append("flips") }
            if a.maxRotationDegrees != standardAugmentation.maxRotationDegrees { kinds.append("wider turns") }
            if (a.viewProbability > 0 && a.maxViewDegrees > 0) || (a.tiltProbability > 0 && a.maxTiltDegrees > 0) { kinds.append("other views") }
            let name = kinds.isEmpty ? "standard" : "standard and \(kinds.joined(separator: ", "))"
            return "\(name) (\(parts.joined(separator: ", ")))"
        default: return "\(v)"
        }
    }
}
