/// Frame-level events: per-frame class scores from overlapping window predictions, the
/// body's motion, and an online segmentation with a "no action" state whose decisions come a
/// bounded look-ahead after each frame (docs/streaming.md "Events").
///
/// This file uses the Swift standard library only, so that an app that runs an exported model
/// (docs/coreml.md "Events in an app") can copy it and make the events the runtime makes.

/// The motion of one frame: how fast the fastest joint of a body moves, in body sizes per
/// second, from the frames `a` before it and `b` after it (`FrameMotion.lag` frames each way).
///
///     motion = max over bodies, over joints present in both a and b, of |x_b − x_a| / (t_b − t_a) / size
///
/// with `size` the body's largest extent (max − min over its present joints, on the widest
/// axis) in the frame itself. A body with fewer than two present joints in the frame, or no
/// joint present in both a and b, is not measured; a frame where no body is measured has motion
/// 0 (nobody moving), as has a frame with `t_b ≤ t_a`.
public enum FrameMotion {
    /// Frames each way (`lag` before, `lag` after) at `frameRate` frames per second: a tenth of
    /// a second, at least one frame (30 fps when the rate is unknown).
    public static func lag(frameRate: Double?) -> Int { max(1, Int(((frameRate ?? 30) * 0.1).rounded())) }

    /// The motion of `frame` (`[J, D]` coordinates and `[J]` presence each) between `a` and `b`,
    /// for `bodies` bodies of `J / bodies` joints each.
    public static func motion(
        frame: UnsafePointer<Float>, framePresent: UnsafePointer<UInt8>, a: UnsafePointer<Float>, aPresent: UnsafePointer<UInt8>,
        b: UnsafePointer<Float>, bPresent: UnsafePointer<UInt8>, seconds: Double, joints J: Int, dimensions D: Int, bodies: Int = 1
    ) -> Float {
        guard seconds > 0, bodies >= 1, J % bodies == 0, D >= 1 else { return 0 }
        let Jb = J / bodies
        var best: Float = 0
        for body in 0..<bodies {
            // One pass over the body's joints: its extent on the first three axes (more: below)
            // and the largest squared step of a joint present in a and b.
            var seen = 0, fastest: Float = -1
            var lo0 = Float.infinity, lo1 = Float.infinity, lo2 = Float.infinity
            var hi0 = -Float.infinity, hi1 = -Float.infinity, hi2 = -Float.infinity
            for j in (body * Jb)..<((body + 1) * Jb) {
                let x = frame + j * D
                if framePresent[j] != 0 {
                    seen += 1
                    lo0 = min(lo0, x[0])
                    hi0 = max(hi0, x[0])
                    if D > 1 {
                        lo1 = min(lo1, x[1])
                        hi1 = max(hi1, x[1])
                    }
                    if D > 2 {
                        lo2 = min(lo2, x[2])
                        hi2 = max(hi2, x[2])
                    }
                }
                if aPresent[j] != 0 && bPresent[j] != 0 {
                    var squared: Float = 0
                    for d in 0..<D {
                        let step = b[j * D + d] - a[j * D + d]
                        squared += step * step
                    }
                    fastest = max(fastest, squared)
                }
            }
            var size = max(hi0 - lo0, D > 1 ? hi1 - lo1 : 0, D > 2 ? hi2 - lo2 : 0)
            for d in min(D, 3)..<D {  // axes beyond the third, if any
                var low = Float.infinity, high = -Float.infinity
                for j in (body * Jb)..<((body + 1) * Jb) where framePresent[j] != 0 {
                    low = min(low, frame[j * D + d])
                    high = max(high, frame[j * D + d])
                }
                size = max(size, high - low)
            }
            guard seen >= 2 && size > 0 && size.isFinite && fastest >= 0 else { continue }
            let speed = fastest.squareRoot() / Float(seconds) / size
            if speed.isFinite { best = max(best, speed) }
        }
        return best
    }
}

/// Turns one stream's window predictions and frame motions into events, frame by frame.
///
/// Inputs, in the order a stream makes them (`add(window:...)` when a window is predicted,
/// `add(frame:...)` when a frame's motion is known, `now` being the newest frame's time then):
///
/// 1. **Frame scores.** Each window adds its class probabilities to the frames it covers, frame
///    `k` of the window `[s, e)` weighted by its position, `min(k − s + 1, e − k)` (a triangle
///    peaking in the middle), counting only windows that end at most `lookAhead` seconds after
///    the frame. A frame's scores are the weighted mean.
/// 2. **Rest.** A frame whose motion is at most `stillBelow` is still; a run of still frames that
///    lasts `hold[c]` seconds (c the running event's class, the smallest `hold` without one) is
///    rest, the "no action" state, from its first frame.
/// 3. **Decisions**, frame by frame in order, once the frame is `lookAhead` seconds old (a
///    frame in a rest run, and those before the run, as soon as the run is rest). An event is
///    one action: it adds up the scores of its frames, and its class is the one with the highest
///    sum (a background class never), revised at every frame until the event is emitted.
///    - a rest frame ends the running event where the body stopped: `motionLag` frames before
///      the last moving frame before the run (whose motion saw `motionLag` frames ahead), plus
///      `leadOut[c]`;
///    - otherwise, with no event running, the top class c starts one when its score reaches
///      `enter[c]`, from the first moving frame after the last rest minus `leadIn[c]` when that
///      is at most `lookAhead` seconds back, else from the frame; never before the previous event's end;
///    - a frame no window scored yet (a look-ahead shorter than the windows' stride) changes
///      nothing;
///    - a running event ends when the top class is a background class or under `floor`
///      (abstain), or when no class's score is at its `exit` any more;
///    - another action follows without rest when a class c' leads the event's class c for long
///      enough: from the frame where c' first scored above c, its lead (score of c' minus score
///      of c) adds up, frame by frame times the seconds between frames, to `switchEvidence`
///      (0.3: 0.3 s at a full lead, longer at a smaller one) while c' is at its `enter[c']`.
///      The event then ends at that frame and c' starts there, each with the scores of its own
///      frames, unless the event's frames before it were also c''s or lasted less than c's
///      `minimumDuration` (a first guess: the event goes on, its class from all its frames).
///      A lead that falls back to 0 is forgotten: a class that leads for a moment inside an
///      action (a phase that looks like another action) does not split it.
/// 4. Events shorter than their class's `minimumDuration` are dropped.
///
/// An event is returned by the call that decides its end, so it comes at most `lookAhead`
/// seconds after its last frame (and `hold[c]` plus the motion lag after it when rest ends it;
/// a switch when the evidence is complete, `lookAhead` after that frame).
/// The same inputs in the same order give the same events, however they are grouped.
public struct FrameSegmenter: Sendable {
    /// The rule's numbers: per class (in the model's class order) and for the stream.
    public struct Settings: Equatable, Sendable {
        /// Per class: the frame score that starts an event and the one it must keep.
        public var enter: [Float]
        public var exit: [Float]
        /// Per class: seconds of stillness that end an event of the class.
        public var hold: [Double]
        /// Per class: seconds before the first moving frame an event starts, and after the last
        /// moving frame it ends, when motion places its start or end.
        public var leadIn: [Double]
        public var leadOut: [Double]
        /// Per class: the shortest event, in seconds.
        public var minimumDuration: [Double]
        /// Per class: true for a class that never makes events (its frames abstain).
        public var background: [Bool]
        /// Seconds after a frame at which it is decided: the bound on how late an event comes.
        public var lookAhead: Double
        /// Motion (body sizes per second, `FrameMotion`) at or below which a frame is still.
        public var stillBelow: Float
        /// A frame whose top score is under this abstains (0: off).
        public var floor: Float
        /// Score-seconds by which another class must lead the running event's class for a new
        /// action to start without rest (`defaultSwitchEvidence`; 0: as soon as it leads at its
        /// `enter`).
        public var switchEvidence: Double
        /// Frames each way of the motion (`FrameMotion.lag` at the stream's rate): rest ends an
        /// event this many frames before its last moving frame (0: at it).
        public var motionLag: Int

        /// The evidence a switch needs by default, in score-seconds.
        public static let defaultSwitchEvidence = 0.3

        public init(
            enter: [Float], exit: [Float], hold: [Double], leadIn: [Double], leadOut: [Double], minimumDuration: [Double],
            background: [Bool], lookAhead: Double, stillBelow: Float, floor: Float = 0, switchEvidence: Double = defaultSwitchEvidence,
            motionLag: Int = 0
        ) {
            self.enter = enter
            self.exit = exit
            self.hold = hold
            self.leadIn = leadIn
            self.leadOut = leadOut
            self.minimumDuration = minimumDuration
            self.background = background
            self.lookAhead = lookAhead
            self.stillBelow = stillBelow
            self.floor = floor
            self.switchEvidence = switchEvidence
            self.motionLag = motionLag
        }

        public var classes: Int { enter.count }

        /// Nil when the settings are usable, else what is wrong.
        public var problem: String? {
            let K = enter.count
            guard K >= 1 else { return "no classes" }
            for (name, count) in [
                ("exit", exit.count), ("hold", hold.count), ("leadIn", leadIn.count), ("leadOut", leadOut.count),
                ("minimumDuration", minimumDuration.count), ("background", background.count),
            ] where count != K {
                return "\(name) has \(count) values for \(K) classes"
            }
            for k in 0..<K {
                guard enter[k] > 0 && enter[k] <= 1 && exit[k] >= 0 && exit[k] <= enter[k] else {
                    return "class \(k): the thresholds need 0 <= exit <= enter <= 1 (enter > 0), got enter \(enter[k]), exit \(exit[k])"
                }
                for (name, v) in [("hold", hold[k]), ("leadIn", leadIn[k]), ("leadOut", leadOut[k]), ("minimumDuration", minimumDuration[k])]
                where !(v >= 0 && v <= 3600) {
                    return "class \(k): \(name) must be 0 to 3600 seconds, got \(v)"
                }
            }
            guard background.contains(false) else { return "every class is a background class: no event can start" }
            guard lookAhead > 0 && lookAhead <= 60 else { return "the look-ahead must be more than 0 and at most 60 seconds, got \(lookAhead)" }
            guard stillBelow >= 0 && stillBelow.isFinite else { return "the stillness threshold must be 0 or more, got \(stillBelow)" }
            guard floor >= 0 && floor <= 1 else { return "the probability floor must be in [0, 1], got \(floor)" }
            guard switchEvidence >= 0 && switchEvidence <= 3600 else {
                return "the switch evidence must be 0 to 3600 score-seconds, got \(switchEvidence)"
            }
            guard motionLag >= 0 && motionLag <= 1000 else { return "the motion lag must be 0 to 1000 frames, got \(motionLag)" }
            return nil
        }
    }

    /// One event: the class index, seconds, and the highest and mean score of the class over
    /// its frames, with the windows that scored them.
    public struct Event: Equatable, Sendable {
        public var label: Int
        public var start: Double
        public var end: Double
        public var peak: Float
        public var mean: Float
        public var windows: Int
    }

    public let settings: Settings
    private let K: Int
    private let holdLeast: Double
    // Frames not decided yet, `head ..< made`, in a ring (capacity a power of two): those below
    // `known` have their time and motion.
    private var head = 0, known = 0, made = 0
    private var times: [Double] = [], still: [Bool] = [], sums: [Float] = [], weights: [Float] = []
    private var firstWindow: [Int] = [], lastWindow: [Int] = []
    private var mask = -1
    private var windowCount = 0
    /// The scores of the frame being decided, and the classes that make events (not background).
    private var scores: [Float]
    private let eventClasses: [Int]
    // Rest: the still run ending at the newest known frame, and the rest runs not yet decided
    // past (first frame, one past the last or nil while running, where the body stopped before
    // it: the time `motionLag` frames before its last moving frame).
    private var run: (start: Int, time: Double)?
    private var stop: Double?
    private var rests: [(from: Int, to: Int?, stop: Double)] = []
    // Decisions.
    /// Some of an event's frames: their summed scores and highest score per class, their count
    /// and the windows that scored them.
    private struct Part {
        var sums: [Float], peaks: [Float], frames = 0, firstWindow = -1, lastWindow = -1
        init(classes K: Int) {
            sums = [Float](repeating: 0, count: K)
            peaks = [Float](repeating: 0, count: K)
        }
    }
    /// A class that scores above the running event's: where it started to, its lead so far
    /// (score-seconds), the event's frames before and its own frames since.
    private struct Rival {
        var label: Int, since: Double, evidence: Double, before: Part, after: Part
    }
    private struct Open {
        var label: Int, start: Double, part: Part, rivals: [Rival] = []
    }
    private var open: Open?
    private var stretch: Double?  // the first moving frame since the last rest
    private var lastEnd = -Double.infinity
    private var lastTime: Double?

    public init(settings: Settings) {
        precondition(settings.problem == nil, settings.problem ?? "")
        self.settings = settings
        K = settings.enter.count
        scores = [Float](repeating: 0, count: K)
        eventClasses = (0..<K).filter { !settings.background[$0] }
        holdLeast = zip(settings.hold, settings.background).filter { !$0.1 }.map(\.0).min() ?? 0
    }

    // MARK: - The ring of frames

    private mutating func slot(_ k: Int) -> Int { k & mask }

    /// Makes entries for frames up to `end` (exclusive).
    private mutating func reach(_ end: Int) {
        guard end > made else { return }
        if end - head > mask + 1 { grow(to: end - head) }
        for k in made..<end {
            let s = slot(k)
            times[s] = .nan
            still[s] = false
            weights[s] = 0
            firstWindow[s] = -1
            lastWindow[s] = -1
            for c in 0..<K { sums[s * K + c] = 0 }
        }
        made = end
    }

    private mutating func grow(to count: Int) {
        var capacity = max(64, mask + 1)
        while capacity < count { capacity *= 2 }
        var t = [Double](repeating: .nan, count: capacity), st = [Bool](repeating: false, count: capacity)
        var su = [Float](repeating: 0, count: capacity * K), w = [Float](repeating: 0, count: capacity)
        var fw = [Int](repeating: -1, count: capacity), lw = [Int](repeating: -1, count: capacity)
        let newMask = capacity - 1
        for k in head..<made {
            let from = k & mask, to = k & newMask
            t[to] = times[from]
            st[to] = still[from]
            w[to] = weights[from]
            fw[to] = firstWindow[from]
            lw[to] = lastWindow[from]
            for c in 0..<K { su[to * K + c] = sums[from * K + c] }
        }
        (times, still, sums, weights, firstWindow, lastWindow, mask) = (t, st, su, w, fw, lw, newMask)
    }

    // MARK: - Inputs

    /// A window's probabilities over frames `start ..< end` (frame indices of the stream), which
    /// ended at `endTime` seconds. Decides nothing.
    public mutating func add(window start: Int, end: Int, endTime: Double, probabilities p: [Float]) {
        precondition(p.count == K, "probabilities for \(K) classes expected")
        guard end > start else { return }
        let id = windowCount
        windowCount += 1
        let from = max(start, head)
        guard from < end else { return }
        reach(end)
        for k in from..<end {
            let s = slot(k)
            if k < known && endTime > times[s] + settings.lookAhead { continue }  // ends too late for this frame
            let w = Float(min(k - start + 1, end - k))
            for c in 0..<K { sums[s * K + c] += w * p[c] }
            weights[s] += w
            if firstWindow[s] < 0 { firstWindow[s] = id }
            lastWindow[s] = id
        }
    }

    /// Frame `index`'s time and motion, known at `now` seconds (the newest frame's time); frames
    /// come in order, each once (a frame seen before is ignored; after a gap, the frames before
    /// it are finished as by `finish()` and the segmentation starts again at `index`). Returns
    /// the events this decides, in order.
    public mutating func add(frame index: Int, time: Double, motion: Float, now: Double) -> [Event] {
        guard index >= known else { return [] }  // already seen: ignored
        var out: [Event] = []
        if index > known {  // frames missing (dropped): what came before ends there
            if known > 0 { out = finish() }
            (head, known, made) = (index, index, index)
        }
        reach(index + 1)
        let s = slot(index)
        times[s] = time
        let isStill = !(motion > settings.stillBelow)  // NaN: not measured, still
        still[s] = isStill
        known = index + 1
        if isStill {
            if run == nil { run = (index, time) }
            if let r = run, rests.last.map({ $0.to != nil || $0.from != r.start }) ?? true, time - r.time >= holdLeast {
                // The run may be rest: decide the frames before it first, so that the running
                // class (whose hold applies) is known.
                while head < r.start { decide(into: &out) }
                let hold = open.map { settings.hold[label(of: $0)] } ?? holdLeast
                if time - r.time >= hold { rests.append((r.start, nil, stop ?? r.time)) }
            }
        } else {
            if run != nil, let last = rests.last, last.to == nil { rests[rests.count - 1].to = index }
            run = nil
            stop = times[slot(max(index - settings.motionLag, head))]
        }
        while head < known && (times[slot(head)] + settings.lookAhead <= now || isRest(head)) { decide(into: &out) }
        return out
    }

    /// Decides every frame known so far and ends the running event at the last one (the stream
    /// ended, or restarts: the segmenter then starts afresh).
    public mutating func finish() -> [Event] {
        var out: [Event] = []
        while head < known { decide(into: &out) }
        if let t = lastTime { close(at: t, into: &out) }
        let settings = self.settings
        self = FrameSegmenter(settings: settings)
        return out
    }

    // MARK: - Decisions

    private func isRest(_ k: Int) -> Bool {
        guard let r = rests.first else { return false }
        return k >= r.from && (r.to.map { k < $0 } ?? true)
    }

    private mutating func decide(into out: inout [Event]) {
        let k = head, s = slot(k), t = times[s]
        let dt = lastTime.map { max(0, t - $0) } ?? 0
        defer {
            head += 1
            lastTime = t
            while let r = rests.first, let to = r.to, head >= to { rests.removeFirst() }
        }
        if isRest(k) {
            if let o = open { close(at: min(max(rests[0].stop + settings.leadOut[label(of: o)], o.start), t), into: &out) }
            stretch = nil
            return
        }
        if stretch == nil { stretch = t }
        let w = weights[s]
        guard w > 0 else { return }  // no window scored the frame (a look-ahead under the stride): nothing changes
        var top = -1, best: Float = -1  // the top class, background classes included
        for c in 0..<K {
            let v = sums[s * K + c] / w
            scores[c] = v
            if v > best { (best, top) = (v, c) }
        }
        let abstains = settings.background[top] || best < settings.floor
        guard open != nil else {
            if !abstains && best >= settings.enter[top] {
                var start = t
                if let first = stretch, t - first <= settings.lookAhead { start = first - settings.leadIn[top] }
                var part = Part(classes: K)
                Self.add(scores, (firstWindow[s], lastWindow[s]), to: &part)
                open = Open(label: top, start: max(start, lastEnd), part: part)
            }
            return
        }
        if abstains || !eventClasses.contains(where: { scores[$0] >= settings.exit[$0] }) {  // no class at its exit
            close(at: t, into: &out)
            return
        }
        // The classes that lead the event's: their evidence, forgotten when it falls to 0. (The
        // event is changed in place, `open!`, so that its sums are not copied.)
        let c0 = label(of: open!), lead = scores[c0], windows = (firstWindow[s], lastWindow[s])
        var i = 0
        while i < open!.rivals.count {
            let c = open!.rivals[i].label
            open!.rivals[i].evidence += Double(scores[c] - lead) * dt
            if c == c0 || open!.rivals[i].evidence <= 0 {
                open!.rivals.remove(at: i)
            } else {
                Self.add(scores, windows, to: &open!.rivals[i].after)
                i += 1
            }
        }
        for c in eventClasses where scores[c] > lead && c != c0 && !open!.rivals.contains(where: { $0.label == c }) {
            var r = Rival(label: c, since: t, evidence: Double(scores[c] - lead) * dt, before: open!.part, after: Part(classes: K))
            Self.add(scores, windows, to: &r.after)
            open!.rivals.append(r)
        }
        Self.add(scores, windows, to: &open!.part)
        var chosen: Int?
        for (i, r) in open!.rivals.enumerated() where r.evidence >= settings.switchEvidence && scores[r.label] >= settings.enter[r.label] {
            if chosen.map({ r.evidence > open!.rivals[$0].evidence }) ?? true { chosen = i }
        }
        guard let i = chosen else { return }
        let o = open!, r = o.rivals[i], before = r.before.frames > 0 ? leader(r.before) : o.label
        let boundary = max(r.since, o.start)
        if before == r.label {
            open!.rivals.remove(at: i)  // the event was the rival's class before it led: no new action
        } else if boundary - o.start < settings.minimumDuration[before] {
            open!.rivals.removeAll()  // too short to stand alone: a first guess, the event goes on
        } else {
            open = Open(label: o.label, start: o.start, part: r.before)
            close(at: boundary, into: &out)
            open = Open(label: r.label, start: boundary, part: r.after)
        }
    }

    /// Adds a frame's scores and windows (first and last, -1 for none) to `part`.
    private static func add(_ scores: [Float], _ windows: (first: Int, last: Int), to part: inout Part) {
        let first = part.frames == 0
        for c in scores.indices {
            let v = scores[c]
            part.sums[c] += v
            part.peaks[c] = first ? v : max(part.peaks[c], v)
        }
        part.frames += 1
        if windows.first >= 0 {
            part.firstWindow = part.firstWindow < 0 ? windows.first : min(part.firstWindow, windows.first)
            part.lastWindow = max(part.lastWindow, windows.last)
        }
    }

    /// The class with the highest summed score over `part`'s frames, background classes left out
    /// (the first of a tie).
    private func leader(_ part: Part) -> Int {
        var top = -1
        for c in eventClasses where top < 0 || part.sums[c] > part.sums[top] { top = c }
        return top
    }

    /// The running event's class: its frames' leader.
    private func label(of o: Open) -> Int { o.part.frames > 0 ? leader(o.part) : o.label }

    /// Ends the running event at `end`; reports it if it lasts its class's minimum duration.
    private mutating func close(at end: Double, into out: inout [Event]) {
        guard let o = open else { return }
        open = nil
        let c = label(of: o), p = o.part
        guard end - o.start >= settings.minimumDuration[c] && end > o.start else { return }
        lastEnd = end
        out.append(
            Event(
                label: c, start: o.start, end: end, peak: p.peaks[c], mean: p.sums[c] / Float(max(1, p.frames)),
                windows: p.firstWindow < 0 ? 0 : p.lastWindow - p.firstWindow + 1))
    }
}
