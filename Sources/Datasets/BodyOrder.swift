import Foundation
import PoseCore

/// How `--people bodies=M` orders the bodies of a sequence (docs/datasets.md, "Several people
/// per frame"). One rule serves a whole file, so that body k means the same person in every
/// sequence when the data says who is who.
public enum BodyOrderRule: Sendable, Hashable, CustomStringConvertible {
    /// In each sequence, the order of first appearance: the first frame in which a track has a
    /// joint present, then the order in which the tracks were first listed.
    case appearance
    /// Tracks named by role: the track whose id is `roles[k]` takes body k + 1 in every
    /// sequence; the sequence's other chosen tracks take the free bodies, lowest first, in order
    /// of first appearance. At most M roles.
    case roles([String])

    /// The rule an interaction model was trained with: its `bodyRoles`, else first appearance;
    /// nil for a model of one body.
    public init?(modelInput input: InputSpec) {
        guard let m = input.bodies, m > 1 else { return nil }
        self = input.bodyRoles.map { .roles($0) } ?? .appearance
    }

    /// The roles, or nil for first appearance.
    public var roles: [String]? {
        if case .roles(let r) = self { return r }
        return nil
    }

    public var description: String {
        switch self {
        case .appearance: return "first appearance"
        case .roles(let r): return "tracks " + BodyOrder.quoted(r)
        }
    }
}

/// The body order a reader applied to a file read with `bodies=M` (M > 1) and what it rests on
/// (`Dataset.bodyOrder`; `fit`'s recipe prints `description`).
///
/// Decided from the file (no rule given): the ids chosen in more than half of the sequences of
/// several bodies recur; when 2 to M ids recur they are roles, ordered by their mean place in
/// order of first appearance (the order that moves the fewest sequences from first appearance;
/// ties: the one seen first in the file). Unless the bodies contradict the names: in the
/// sequences where the roles' order and first appearance differ, each body is compared with
/// where the bodies of its role sit and how much they move in the sequences where the two
/// orders agree (`People.bodyDescriptors`); when first appearance fits clearly more of them
/// than the names do (by more than twice the standard deviation of a fair coin's count), the
/// names are labels that do not follow roles, and first appearance is kept. Otherwise (ids that
/// do not recur: a tracker's), first appearance.
public struct BodyOrder: Sendable, Equatable, CustomStringConvertible {
    public var rule: BodyOrderRule
    /// The rule was given (`ReadOptions.bodyOrder`, a model's), not decided from the file.
    public var given: Bool
    /// Bodies per frame.
    public var bodies: Int
    /// Sequences with two or more chosen tracks.
    public var sequences: Int
    /// Sequences (of any number of tracks) whose bodies are not in order of first appearance.
    public var reordered: Int
    /// Decided: the ids chosen in more than half of the sequences of several bodies (in body
    /// order when they are the roles). Given: the roles.
    public var recurring: [String]
    /// Sequences of several bodies whose chosen tracks all have recurring (given: role) ids.
    public var covered: Int
    /// Where the roles' order and first appearance differ, the sequences whose bodies sit and
    /// move as each orders them; nil when not compared.
    public var votes: Votes?

    public struct Votes: Sendable, Equatable {
        public var names: Int
        public var appearance: Int

        public init(names: Int, appearance: Int) {
            self.names = names
            self.appearance = appearance
        }
    }

    public init(
        rule: BodyOrderRule, given: Bool, bodies: Int, sequences: Int, reordered: Int, recurring: [String], covered: Int, votes: Votes? = nil
    ) {
        self.rule = rule
        self.given = given
        self.bodies = bodies
        self.sequences = sequences
        self.reordered = reordered
        self.recurring = recurring
        self.covered = covered
        self.votes = votes
    }

    /// Whether first appearance fits clearly more sequences than the names: by more than twice
    /// the standard deviation of a fair coin's count (a one-sided sign test at about 2%).
    public static func contradicts(_ v: Votes) -> Bool {
        v.appearance > v.names && Double(v.appearance - v.names) > 2 * Double(v.appearance + v.names).squareRoot()
    }

    public static func quoted(_ ids: [String]) -> String { ids.map { "'\($0)'" }.joined(separator: ", ") }

    /// What the order rests on, in one line.
    public var description: String {
        let several = "\(sequences) sequence\(sequences == 1 ? "" : "s") of two or more bodies"
        let moved = "\(reordered) sequence\(reordered == 1 ? "" : "s") not in order of first appearance"
        func places(_ roles: [String]) -> String { roles.enumerated().map { "body \($0.offset + 1) '\($0.element)'" }.joined(separator: ", ") }
        if given {
            switch rule {
            case .appearance: return "the model's bodies are in order of first appearance"
            case .roles(let r):
                return "the model's roles (input.bodyRoles): \(places(r)), the only tracks of \(covered) of the \(several); \(moved)"
            }
        }
        if sequences < 2 { return "\(several): bodies in order of first appearance" }
        var text: String
        if recurring.isEmpty {
            text = "track ids do not recur (none is in more than half of the \(several))"
        } else {
            text = "tracks \(BodyOrder.quoted(recurring)) recur (each in more than half of the \(several); the only tracks of \(covered))"
        }
        if let v = votes {
            text += "; where their order and first appearance differ, the bodies sit and move as the names order them in \(v.names)"
            text += " and as first appearance does in \(v.appearance)"
        }
        switch rule {
        case .roles(let r):
            return text + ": roles, \(places(r)) in every sequence; \(moved)"
        case .appearance:
            if recurring.count > bodies { return text + ": more than \(bodies) of them, bodies in order of first appearance" }
            if votes.map(BodyOrder.contradicts) == true { return text + ": the names do not follow the people, bodies in order of first appearance" }
            return text + ": bodies in order of first appearance"
        }
    }

    /// A warning for the reader to give, when the order is not what the file's names suggest
    /// (names contradicted by the bodies) or a model's roles miss tracks of the file.
    public var warning: String? {
        if given, case .roles(let r) = rule, covered < sequences {
            return "in \(sequences - covered) of the \(sequences) sequences of two or more bodies some tracks are not the model's roles \(BodyOrder.quoted(r)) "
                + "(input.bodyRoles): they take the free bodies in order of first appearance, which need not be the bodies the model learnt them in"
        }
        if !given, rule == .appearance, let v = votes, BodyOrder.contradicts(v) {
            return "tracks \(BodyOrder.quoted(recurring)) recur, but the bodies contradict the names (\(v.appearance) of \(v.appearance + v.names) sequences whose order they change "
                + "sit and move as first appearance orders them): bodies in order of first appearance; name each person by a role to keep one order"
        }
        return nil
    }
}

/// One body order for the sequences of a file read with `bodies=M`: collect, decide, resolve.
/// A reader stacks each sequence as it is parsed (`add`: the M chosen tracks side by side, in
/// the given order, else in order of first appearance) and keeps it as it would any other, so
/// that memory and every error's location are those of a plain read; the stacker keeps a few
/// numbers a sequence (its tracks' ids and `People.bodyDescriptors`). At the end of the file
/// `finish` decides the order (unless given) and moves the bodies of the sequences it changes.
struct BodyStacker {
    let bodies: Int
    /// One body's skeleton.
    let skeleton: Skeleton
    let given: BodyOrderRule?
    private(set) var summaries: [Summary] = []

    /// What the decision needs of one stacked sequence.
    struct Summary {
        /// The chosen tracks' ids (the M present in the most frames; ties: the one listed
        /// first), in order of first appearance.
        var ids: [String]
        /// Their descriptors in that order, when every body is filled and measurable (no
        /// order given).
        var descriptors: [[Double]]?
    }

    init(bodies: Int, skeleton: Skeleton, given: BodyOrderRule?) {
        self.bodies = bodies
        self.skeleton = skeleton
        self.given = given
    }

    /// The sequence's bodies side by side: in the given order, else in order of first
    /// appearance until `finish` decides.
    mutating func add(_ t: TrackedSequence) -> PoseSequence {
        let J = skeleton.jointCount
        let live = t.tracks.filter { $0.sequence.present.contains { $0 != 0 } }
        let lengths = live.map { People.presentFrames($0.sequence, J: J) }
        let firstSeen = live.map { s in
            (0..<s.sequence.frameCount).first { f in (0..<J).contains { s.sequence.present[f * J + $0] != 0 } } ?? s.sequence.frameCount
        }
        let chosen = live.indices.sorted { lengths[$0] > lengths[$1] || (lengths[$0] == lengths[$1] && $0 < $1) }.prefix(bodies)
            .sorted { firstSeen[$0] < firstSeen[$1] || (firstSeen[$0] == firstSeen[$1] && $0 < $1) }
        let ids = chosen.map { live[$0].id }, tracks = chosen.map { live[$0].sequence }
        var descriptors: [[Double]]?
        if given == nil && tracks.count == bodies && bodies > 1 {
            descriptors = People.bodyDescriptors(tracks, J: J, D: skeleton.dimensions)
        }
        summaries.append(Summary(ids: ids, descriptors: descriptors))
        return People.stack(t.base, tracks, slots: People.slots(ids, rule: given ?? .appearance, bodies: bodies))
    }

    /// Decides the order (nil for one body) and moves the bodies of the sequences whose order
    /// it changes. `sequences` are the ones `add` returned, in the same order.
    mutating func finish(_ sequences: inout [PoseSequence]) -> BodyOrder? {
        precondition(sequences.count == summaries.count, "every sequence of the file is stacked")
        defer { summaries = [] }
        guard bodies > 1 else { return nil }
        let order = decide()
        if given == nil, order.rule != .appearance {
            for k in sequences.indices {
                let ids = summaries[k].ids
                let from = People.slots(ids, rule: .appearance, bodies: bodies), to = People.slots(ids, rule: order.rule, bodies: bodies)
                if from != to { People.moveBodies(&sequences[k], from: from, to: to) }
            }
        }
        return order
    }

    /// The order for the file: the given rule, else decided (`BodyOrder`).
    func decide() -> BodyOrder {
        let several = summaries.filter { $0.ids.count >= 2 }
        func order(_ rule: BodyOrderRule, recurring: [String], votes: BodyOrder.Votes? = nil) -> BodyOrder {
            let known = Set(recurring)
            let reordered = summaries.filter { p in
                People.slots(p.ids, rule: rule, bodies: bodies) != People.slots(p.ids, rule: .appearance, bodies: bodies)
            }.count
            return BodyOrder(
                rule: rule, given: given != nil, bodies: bodies, sequences: several.count, reordered: reordered, recurring: recurring,
                covered: several.filter { $0.ids.allSatisfy(known.contains) }.count, votes: votes)
        }
        if let given { return order(given, recurring: given.roles ?? []) }
        // Ids chosen in more than half of the sequences of several bodies, in order of first sight.
        var counts: [String: Int] = [:], seen: [String] = []
        for p in several {
            for id in p.ids {
                if counts[id] == nil { seen.append(id) }
                counts[id, default: 0] += 1
            }
        }
        let recurring = several.count >= 2 ? seen.filter { 2 * counts[$0]! > several.count } : []
        guard recurring.count >= 2, recurring.count <= bodies else { return order(.appearance, recurring: recurring) }
        // Ordered by their mean place among the recurring ids in order of first appearance.
        let known = Set(recurring)
        var places: [String: Double] = [:]
        for p in several {
            for (place, id) in p.ids.filter(known.contains).enumerated() { places[id, default: 0] += Double(place) }
        }
        let mean = Dictionary(uniqueKeysWithValues: recurring.map { ($0, places[$0, default: 0] / Double(counts[$0]!)) })
        let roles = recurring.enumerated().sorted { a, b in
            mean[a.element]! < mean[b.element]! || (mean[a.element]! == mean[b.element]! && a.offset < b.offset)
        }.map(\.element)
        let votes = compare(roles: roles)
        if let votes, BodyOrder.contradicts(votes) { return order(.appearance, recurring: roles, votes: votes) }
        return order(.roles(roles), recurring: roles, votes: votes)
    }

    /// The names against first appearance (`BodyOrder`): the sequences whose M bodies are all
    /// filled are split into those where both orders agree, whose bodies give each body's mean
    /// descriptor (`People.bodyDescriptors`) and a pooled variance per value, and those where
    /// they differ, each of which counts for the order whose bodies are nearer those means
    /// (the sum of squared differences over variances). Nil when no sequence differs or fewer
    /// than 3 agree.
    func compare(roles: [String]) -> BodyOrder.Votes? {
        let K = skeleton.dimensions + 1
        var agreeing: [[[Double]]] = []
        var differing: [(names: [[Double]], appearance: [[Double]])] = []
        for p in summaries {
            guard let d = p.descriptors else { continue }
            let named = People.slots(p.ids, rule: .roles(roles), bodies: bodies)
            let first = People.slots(p.ids, rule: .appearance, bodies: bodies)
            let n = named.map { d[$0!] }
            if named == first { agreeing.append(n) } else { differing.append((n, first.map { d[$0!] })) }
        }
        guard !differing.isEmpty, agreeing.count >= 3 else { return nil }
        var means = [[Double]](repeating: [Double](repeating: 0, count: K), count: bodies)
        for s in agreeing {
            for k in 0..<bodies {
                for c in 0..<K { means[k][c] += s[k][c] / Double(agreeing.count) }
            }
        }
        var variances = [Double](repeating: 0, count: K)
        for s in agreeing {
            for k in 0..<bodies {
                for c in 0..<K { variances[c] += (s[k][c] - means[k][c]) * (s[k][c] - means[k][c]) }
            }
        }
        variances = variances.map { max($0 / Double(agreeing.count * bodies), 1e-12) }
        func distance(_ s: [[Double]]) -> Double {
            var sum = 0.0
            for k in 0..<bodies {
                for c in 0..<K { sum += (s[k][c] - means[k][c]) * (s[k][c] - means[k][c]) / variances[c] }
            }
            return sum
        }
        var votes = BodyOrder.Votes(names: 0, appearance: 0)
        for (n, a) in differing {
            let dn = distance(n), da = distance(a)
            if dn < da { votes.names += 1 } else if da < dn { votes.appearance += 1 }
        }
        return votes
    }
}
