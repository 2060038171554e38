import ActionRuntime
import Dispatch
import Foundation
import PoseCore

/// Live pose streams (docs/streaming.md): frames per second of pushing frames into sessions,
/// with a window prediction at every frame (stride 1) and every 15th, for both reference
/// models (at 30 fps, 45-frame windows), 1 and 64 sessions, 1 and 2 threads; per-push latency
/// p50 and p99, frames per second of wall time and of CPU time (the median of three runs by
/// the latter); beside the plain baseline of building each window yourself and calling
/// `ActionModel.probabilities(window:)`. With `--load`, the load test at full size: 64
/// streams of 3 people for 60 s at 30 fps pushed concurrently on 2 threads, compared with the
/// same streams run one at a time.
///
///     actiontrain-bench stream [--seconds S] [--load]
///     actiontrain-bench stream --events [--seconds S] [--reps N] [--strides 15,1]   (events from windows vs from frames)
///
/// Frames are pushed by joint name, camera timing jittered by up to ±3 ms (so every model
/// frame is interpolated). Threads: 1 session on 2 threads runs the model's own 2-thread
/// split; 64 sessions on 2 threads are two pushing threads, each with half the sessions, the
/// model on one thread each.
enum StreamBench {
    static func model(_ r: InferenceBench.Reference) throws -> ActionModel {
        var input = InferenceBench.input
        input.window.frameRate = 30
        let network = try Network(layers: r.layers, input: Shape(time: 45, channels: input.channelsPerFrame))
        network.initialize(seed: 0)
        let bytes = try ModelFile.encode(
            classes: ["wave_right", "wave_left", "clap", "squat", "walk_in_place", "other"], input: input, network: network,
            provenance: .init(seed: 0))
        return try ActionModel(bytes: bytes)
    }

    /// `count` frames of one person from `seed`: 19 joints by name, about 30 fps.
    static func frames(_ count: Int, seed: UInt64) -> [(time: Double, points: [String: PosePoint])] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { f in
            var points: [String: PosePoint] = [:]
            for j in 0..<19 where g.nextUnitFloat() > 0.1 {
                points["j\(j)"] = PosePoint(x: 300 + Float(j) * 9 + g.nextSymmetric(20), y: 200 + Float(j) * 13 + g.nextSymmetric(20), confidence: 0.5 + 0.5 * g.nextUnitFloat())
            }
            return (Double(f) / 30 + Double(g.nextSymmetric(0.003)), points)
        }
    }

    struct Figures {
        /// Frames per second of wall time, and per second of this process's CPU time (what the
        /// work costs, whatever share of the cores other processes take).
        var framesPerSecond: Double, framesPerCPUSecond: Double, p50: Double, p99: Double
    }

    /// Pushes `perSession` frames into each of `sessions` streams on `threads` threads;
    /// `push(session, frame)` does the work of one frame.
    static func measure(sessions: Int, threads: Int, perSession: Int, _ push: @escaping (Int, Int) -> Void) -> Figures {
        let pushers = min(threads, sessions)
        let saved = BLAS.threads
        BLAS.threads = threads / pushers
        defer { BLAS.threads = saved }
        var latencies = [[UInt64]](repeating: [], count: pushers)
        let t0 = Clock.now(), cpu0 = ForeignLoad.processCPUSeconds()
        latencies.withUnsafeMutableBufferPointer { lat in
            let lat = lat
            concurrentlyPerform(iterations: pushers) { p in  // each pusher its own sessions and latency list
                var mine: [UInt64] = []
                mine.reserveCapacity(perSession * sessions / pushers + 1)
                for f in 0..<perSession {
                    for s in stride(from: p, to: sessions, by: pushers) {
                        let a = Clock.now()
                        push(s, f)
                        mine.append(Clock.now() - a)
                    }
                }
                lat[p] = mine
            }
        }
        let seconds = Double(Clock.now() - t0) / 1e9, cpu = ForeignLoad.processCPUSeconds() - cpu0
        let all = latencies.flatMap { $0 }.sorted()
        return Figures(
            framesPerSecond: Double(all.count) / seconds, framesPerCPUSecond: Double(all.count) / cpu, p50: Double(all[all.count / 2]) / 1e3,
            p99: Double(all[min(all.count - 1, all.count * 99 / 100)]) / 1e3)
    }

    static func run(_ args: [String]) throws {
        if args.contains("--load") { return try load() }
        let seconds = args.firstIndex(of: "--seconds").map { Double(args[$0 + 1])! } ?? 20
        if args.contains("--events") {
            let strides = args.firstIndex(of: "--strides").map { args[$0 + 1].split(separator: ",").map { Int($0)! } } ?? [15, 1]
            return try events(seconds: seconds, reps: args.firstIndex(of: "--reps").map { Int(args[$0 + 1])! } ?? 5, strides: strides)
        }
        print("stream: frames/s pushed (all sessions), per-push latency p50 / p99 µs; baseline = build each window, probabilities(window:)")
        for r in InferenceBench.references {
            let model = try model(r)
            for stride in [1, 15] {
                for (sessions, threads) in [(1, 1), (1, 2), (64, 1), (64, 2)] {
                    let perSession = max(60, Int(seconds * 30) / (sessions == 1 ? 1 : 2))
                    let data = (0..<sessions).map { frames(perSession, seed: UInt64($0)) }
                    // Three runs each, interleaved with the baseline's; the median run by frames/s.
                    var runs: [(live: Figures, baseline: Figures)] = []
                    for _ in 0..<3 {
                        let streams = try (0..<sessions).map { _ in try StreamSession(model: model, options: StreamOptions(stride: stride)) }
                        let live = measure(sessions: sessions, threads: threads, perSession: perSession) { s, f in
                            _ = try! streams[s].push(data[s][f].points, time: data[s][f].time)
                        }
                        runs.append((live, measure(sessions: sessions, threads: threads, perSession: perSession, Baseline(model, data, stride).push)))
                    }
                    let live = runs.map(\.live).sorted { $0.framesPerCPUSecond < $1.framesPerCPUSecond }[1]
                    let baseline = runs.map(\.baseline).sorted { $0.framesPerCPUSecond < $1.framesPerCPUSecond }[1]
                    let share = 30 / live.framesPerCPUSecond * 100
                    print(
                        "  \(r.name) stride \(stride), \(sessions) session\(sessions == 1 ? "" : "s"), \(threads) thread\(threads == 1 ? "" : "s"): "
                            + "\(format(live.framesPerSecond, 0)) frames/s (\(format(live.framesPerCPUSecond, 0)) per CPU-s), p50 \(format(live.p50)) p99 \(format(live.p99)) µs "
                            + "(a 30 fps person: \(format(share, 3))% of a core); baseline \(format(baseline.framesPerSecond, 0)) frames/s "
                            + "(\(format(baseline.framesPerCPUSecond, 0)) per CPU-s), p50 \(format(baseline.p50)) p99 \(format(baseline.p99)) µs")
                }
            }
        }
    }

    /// A session and its events per person, as `TrackedStream` runs them: events from windows
    /// (`EventDetector`, the rule before format 1.5, the session recording no frames) against
    /// events from frames (the session recording frames and their motion, `FrameSegmenter`
    /// with a look-ahead of 3/4 of the 1.5 s window); both reference models, stride 15 and 1,
    /// 1 and 64 sessions on one thread; `reps` interleaved runs each, frames per CPU-second and
    /// the median of the runs' ratios (frames over windows: above 1 is faster), and the ratio of
    /// a session that records frames whose events still come from windows (what recording costs).
    ///
    ///     actiontrain-bench stream --events [--seconds S] [--reps N] [--strides 15,1]
    static func events(seconds: Double, reps: Int, strides: [Int]) throws {
        print("stream --events: frames per CPU-s of a session and its events, from windows (before) and from frames (after); median of \(reps) interleaved runs")
        for r in InferenceBench.references {
            let model = try model(r)
            let windowRule = EventOptions.standard(classes: model.classes)
            var frameRule = windowRule
            frameRule.frames = FrameOptions(lookAhead: 1.1, stillBelow: 0.05)
            for stride in strides {
                for sessions in [1, 64] {
                    let perSession = max(60, Int(seconds * 30) / (sessions == 1 ? 1 : 8))
                    let data = (0..<sessions).map { frames(perSession, seed: UInt64($0)) }
                    var before: [Double] = [], after: [Double] = [], ratios: [Double] = [], recording: [Double] = [], counts = (0, 0)
                    for _ in 0..<reps {
                        var figures: [Double] = []
                        for (rule, recordFrames) in [(windowRule, false), (frameRule, true), (windowRule, true)] {
                            let options = StreamOptions(stride: stride, frames: recordFrames)
                            let streams = try (0..<sessions).map { _ in try StreamSession(model: model, options: options) }
                            // One event stream per person, each touched by the one pushing thread.
                            final class Events: @unchecked Sendable { var streams: [EventStream] = []; var found = 0 }
                            let events = Events()
                            events.streams = try (0..<sessions).map { _ in try EventStream(classes: model.classes, options: rule) }
                            let f = measure(sessions: sessions, threads: 1, perSession: perSession) { s, k in
                                let windows = try! streams[s].push(data[s][k].points, time: data[s][k].time)
                                events.found += events.streams[s].add(windows: windows, from: streams[s]).count
                            }
                            if rule.frames != nil { counts.1 = events.found } else if !recordFrames { counts.0 = events.found }
                            figures.append(f.framesPerCPUSecond)
                        }
                        before.append(figures[0])
                        after.append(figures[1])
                        ratios.append(figures[1] / figures[0])
                        recording.append(figures[2] / figures[0])
                    }
                    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
                    print(
                        "  \(r.name) stride \(stride), \(sessions) session\(sessions == 1 ? "" : "s"): windows \(format(median(before), 0)), frames \(format(median(after), 0)) per CPU-s; "
                            + "ratio \(format(median(ratios), 3)) (runs \(ratios.map { format($0, 2) }.joined(separator: " "))); recording frames alone \(format(median(recording), 3)); events \(counts.0) / \(counts.1)")
                }
            }
        }
    }

    /// The plain way: keep each person's last 45 frames, and every `stride` frames build the
    /// window (`PoseSequence.appendFrame`, no resampling) and call `probabilities(window:)`.
    /// `@unchecked Sendable`: the model is thread-safe, the data read-only, and each thread
    /// writes only its own people's `Recent`.
    final class Baseline: @unchecked Sendable {
        let model: ActionModel, data: [[(time: Double, points: [String: PosePoint])]], stride: Int
        /// Each person's last 45 frames (one object each, so threads touch only their own).
        final class Recent { var frames: [[PosePoint?]] = [] }
        let recent: [Recent]
        init(_ model: ActionModel, _ data: [[(time: Double, points: [String: PosePoint])]], _ stride: Int) {
            (self.model, self.data, self.stride) = (model, data, stride)
            recent = data.map { _ in Recent() }
        }
        func push(_ s: Int, _ f: Int) {
            let skeleton = model.input.skeleton, r = recent[s]
            var frame = [PosePoint?](repeating: nil, count: skeleton.jointCount)
            for (name, p) in data[s][f].points { frame[skeleton.index(of: name)!] = p }
            r.frames.append(frame)
            if r.frames.count > 45 { r.frames.removeFirst() }
            guard r.frames.count == 45, (f - 44) % stride == 0 else { return }
            var window = PoseSequence(id: "w", label: nil, jointCount: skeleton.jointCount, dimensions: 2, hasConfidence: true)
            for frame in r.frames { window.appendFrame(frame) }
            _ = try! model.probabilities(window: window)
        }
    }

    /// 64 streams of 3 tracks, 60 s at 30 fps, concurrently on 2 threads and one at a time.
    static func load() throws {
        let model = try model(InferenceBench.references[1])
        let streams = 64, tracks = 3, frames = 1800
        let people = (0..<(streams * tracks)).map { Self.frames(frames, seed: 1000 + UInt64($0)) }
        func run(_ s: Int) throws -> [TrackedStream.Output] {
            let stream = try TrackedStream(model: model, options: StreamOptions(stride: 15), events: .standard(classes: model.classes))
            var out: [TrackedStream.Output] = []
            for f in 0..<frames {
                for t in 0..<tracks { out += try stream.push(track: t, points: people[s * tracks + t][f].points, time: people[s * tracks][f].time) }
            }
            return out + stream.finish()
        }
        var t0 = Clock.now()
        let serial = try (0..<streams).map(run)
        let serialSeconds = Double(Clock.now() - t0) / 1e9
        // Written only under `lock`.
        final class Results: @unchecked Sendable { var outputs = [[TrackedStream.Output]?](repeating: nil, count: 64) }
        let results = Results(), lock = NSLock(), next = Atomic(0)
        t0 = Clock.now()
        concurrentlyPerform(iterations: 2) { _ in  // streams claimed from `next`, results under `lock`
            while true {
                let s = next.add()
                guard s < streams else { return }
                let out = try? run(s)
                lock.withLock { results.outputs[s] = out }
            }
        }
        let seconds = Double(Clock.now() - t0) / 1e9
        let failed = results.outputs.filter { $0 == nil }.count
        let differing = (0..<streams).filter { results.outputs[$0] != nil && results.outputs[$0]! != serial[$0] }.count
        let windows = serial.reduce(0) { $0 + $1.reduce(0) { $0 + $1.windows.count } }
        print(
            "load: \(streams) streams x \(tracks) people x 60 s at 30 fps (\(streams * tracks * frames) frames, \(windows) windows, conv, stride 15): "
                + "2 threads \(format(seconds, 2)) s (\(format(Double(streams * tracks * frames) / seconds, 0)) frames/s), one at a time \(format(serialSeconds, 2)) s; "
                + "errors \(failed), streams differing from one at a time \(differing)")
    }

    /// A counter shared by the load test's threads (`@unchecked Sendable`: `value` is only
    /// touched under `lock`).
    final class Atomic: @unchecked Sendable {
        private var value: Int
        private let lock = NSLock()
        init(_ v: Int) { value = v }
        func add() -> Int {
            lock.withLock {
                value += 1; return value - 1
            }
        }
    }
}
