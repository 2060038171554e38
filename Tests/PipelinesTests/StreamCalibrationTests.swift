import ActionRuntime
import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// What `fit` records for streams: the clip length of whole-clip models and event thresholds
/// calibrated on a stream of the sequences back to back (docs/format.md 3.4).
final class StreamCalibrationTests: XCTestCase {
    func testThresholdsMaximiseTheF1OfEachClassOnSmoothedWindows() {
        // Six windows of class 0 (p0 0.72), then six of class 1 (p0 0.1). Smoothed over three
        // windows p0 is 0.72 x 6, 0.513, 0.307, then 0.1: class 0's F1 is 1 for thresholds in
        // (0.513, 0.72], i.e. 0.55 ... 0.70 on the grid, whose middle is 0.65.
        var p: [Float] = [], truth: [Int32] = []
        for n in 0..<12 {
            let first = n < 6
            p += first ? [0.72, 0.18, 0.1] : [0.1, 0.85, 0.05]
            truth.append(first ? 0 : 1)
        }
        let t = StreamCalibration.thresholds(probabilities: p, truth: truth, classes: 3)
        XCTAssertEqual(t.enter[0], 0.65)
        XCTAssertEqual(t.exit[0], 0.433)
        // Class 1: smoothed p1 is 0.18 x 6, 0.403, 0.627, then 0.85: F1 1 in (0.18, 0.403]
        // (0.2 ... 0.4, middle 0.3).
        XCTAssertEqual(t.enter[1], 0.3)
        XCTAssertEqual(t.exit[1], 0.2)
        // Class 2 has no window: the defaults.
        XCTAssertEqual(t.enter[2], 0.6)
        XCTAssertEqual(t.exit[2], 0.4)
    }

    /// Clips of `lengths` frames at 10 fps, labels alternating a/b.
    func clips(_ lengths: [Int], timestamps: Bool = false) -> Dataset {
        let skeleton = Skeleton(name: "two", joints: ["a", "b"], dimensions: 2, units: .pixels)
        var sequences: [PoseSequence] = []
        for (i, n) in lengths.enumerated() {
            var s = PoseSequence(
                id: "c\(i)", label: i % 2 == 0 ? "a" : "b", jointCount: 2, dimensions: 2, frameCount: n,
                coordinates: (0..<(n * 4)).map { Float($0 % 7) * 10 + Float(i) }, present: [UInt8](repeating: 1, count: n * 2), confidence: nil)
            if timestamps { s.timestamps = (0..<n).map { Double($0) * 0.05 } }  // 20 fps
            sequences.append(s)
        }
        return Dataset(name: "clips", skeleton: skeleton, sequences: sequences, classes: ["a", "b"], frameRate: timestamps ? nil : 10)
    }

    /// Clips of a two-joint body at 10 fps: the second joint is 100 + x pixels right of the
    /// first, x growing by 10 at each frame not in `still`.
    func moving(_ pattern: [(label: String, frames: Int, still: Set<Int>)]) -> Dataset {
        let skeleton = Skeleton(name: "two", joints: ["a", "b"], dimensions: 2, units: .pixels)
        let sequences = pattern.enumerated().map { i, p -> PoseSequence in
            var x: Float = 0, c: [Float] = []
            for f in 0..<p.frames {
                if !p.still.contains(f) { x += 10 }
                c += [0, 0, 100 + x, 0]
            }
            return PoseSequence(
                id: "m\(i)", label: p.label, jointCount: 2, dimensions: 2, frameCount: p.frames, coordinates: c,
                present: [UInt8](repeating: 1, count: p.frames * 2))
        }
        return Dataset(name: "moving", skeleton: skeleton, sequences: sequences, classes: ["a", "b", "c"], frameRate: 10)
    }

    func testTheMotionNumbersComeFromTheTrainingClips() throws {
        // Two clips of a with still frames at both ends and a pause inside; b moving throughout
        // (1 and 3 s); no clip of c.
        let d = moving([
            ("a", 20, Set(0...2).union(8...12).union(17...19)), ("b", 10, []), ("b", 30, []), ("a", 20, Set(0...3).union(8...13).union(16...19)),
        ])
        let input = InputSpec(skeleton: d.skeleton, window: WindowSpec(frames: 8, mode: .sliding, frameRate: 10), steps: [], channels: [.coordinates])
        let m = try StreamCalibration.motion(d, indices: [0, 1, 2, 3], input: input, clip: nil)
        // Motion over ±1 frame (0.2 s): 0 where both neighbours hold the pose, which more than a
        // tenth of the frames do: still means no motion at all.
        XCTAssertEqual(m.stillBelow, 0)
        // a: the first clip still in frames 0-1 (frame 2 moves to 3), 8-11 and 17-19, the second
        // in 0-2, 8-12 and 16-19: pauses inside of 0.3 and 0.4 s (90th percentile 0.39), first
        // moving frames at 0.2 and 0.3 s, last at 1.6 and 1.5 s of 1.9; b: none, the shortest hold.
        XCTAssertEqual(m.hold, [0.39, StreamCalibration.shortestHold, FrameOptions.defaultHold])
        XCTAssertEqual(m.leadIn, [0.25, 0, 0])
        XCTAssertEqual(m.leadOut, [0.35, 0, 0])
        // Half the 5th percentile of the durations: a 1.9 and 1.9 s; b 0.9 and 2.9 s (0.9 + 0.05 · 2).
        XCTAssertEqual(m.minimumDuration, [0.95, 0.5, 0])
    }

    func testMoreClipsThanItMeasuresAreSpreadOverTheFileSoNoClassIsLeftOut() throws {
        // 1,001 clips of a (1 s), then 20 of b (3 s): the first 1,000 clips would all be a's.
        let count = StreamCalibration.maximumSequences + 1
        let a = (label: "a", frames: 10, still: Set<Int>()), b = (label: "b", frames: 30, still: Set<Int>())
        let d = moving(Array(repeating: a, count: count) + Array(repeating: b, count: 20))
        let input = InputSpec(skeleton: d.skeleton, window: WindowSpec(frames: 8, mode: .sliding, frameRate: 10), steps: [], channels: [.coordinates])
        let m = try StreamCalibration.motion(d, indices: Array(d.sequences.indices), input: input, clip: nil)
        // b's numbers are measured (half its 2.9 s), not the defaults of a class without clips.
        XCTAssertEqual(m.minimumDuration, [0.45, 1.45, 0])
        XCTAssertEqual(m.hold, [StreamCalibration.shortestHold, StreamCalibration.shortestHold, FrameOptions.defaultHold])
    }

    func testFrameThresholdsMaximiseTheF1OfEachClassOnFrameScores() {
        // 20 frames, class a then b from frame 10; windows of 4 frames every 2, p_a 0.8 for those
        // starting before frame 8, else 0.2. With a look-ahead of 10 frames every window counts.
        let input = FrameCalibrationInput(
            lookAhead: 1, frameRate: 10, stillBelow: 0, hold: [0.2, 0.2, 0.2], leadIn: [0, 0, 0], leadOut: [0, 0, 0], minimumDuration: [0, 0, 0],
            windowStarts: Array(stride(from: 0, to: 17, by: 2)), windowEnds: Array(stride(from: 4, to: 21, by: 2)), runFrames: [10, 10], runClasses: [0, 1])
        var p: [Float] = []
        for s in input.windowStarts { p += s < 8 ? [0.8, 0.2, 0] : [0.2, 0.8, 0] }
        let t = StreamCalibration.frameThresholds(probabilities: p, input: input, classes: 3)
        // Frame scores of a: 0.8 on frames 0-7; on frame 8 the windows from 6 (weight 2) and 8
        // (weight 1) give 0.6, on frame 9 (weights 1 and 2) 0.4; 0.2 from frame 10. a's F1 is 1
        // for thresholds in (0.2, 0.4]: 0.25 ... 0.40 on the grid, middle 0.35. b's in (0.6, 0.8]: 0.75.
        XCTAssertEqual(t.enter[0], 0.35)
        XCTAssertEqual(t.exit[0], 0.233)
        XCTAssertEqual(t.enter[1], 0.75)
        XCTAssertEqual(t.exit[1], 0.5)
        XCTAssertEqual([t.enter[2], t.exit[2]], [0.6, 0.4], "no frame of c: the defaults")
        // A look-ahead of 1 frame scores a frame with the windows whose last two frames it is:
        // b's scores are 0.2 to frame 9, 0.8 from 10 (frames 0-1: none), so b's threshold is
        // the middle of (0.2, 0.8].
        var short = input
        short.lookAhead = 0.1
        XCTAssertEqual(StreamCalibration.frameThresholds(probabilities: p, input: short, classes: 3).enter[1], 0.55)
    }

    func testTheSwitchEvidenceIsTheOneWhoseEventsMatchTheCalibrationRunsBest() throws {
        // 66 frames at 10 fps, each scored by a window of its own: class a (0.8 against 0.2) but
        // for a phase of 3 frames (10-12) inside a's first run that scores as b, and a true run
        // of b of 6 frames (30-35). b's lead over a is 0.6 per second, 0.06 per frame: the
        // phase gathers 0.18 score-seconds, the true run 0.36.
        let input = FrameCalibrationInput(
            lookAhead: 1, frameRate: 10, stillBelow: 0, hold: [0.2, 0.2], leadIn: [0, 0], leadOut: [0, 0], minimumDuration: [0, 0],
            windowStarts: Array(0..<66), windowEnds: Array(1...66), runFrames: [30, 6, 30], runClasses: [0, 1, 0])
        var p: [Float] = []
        for k in 0..<66 { p += (10...12).contains(k) || (30...35).contains(k) ? [0.2, 0.8] : [0.8, 0.2] }
        let settings = FrameSegmenter.Settings(
            enter: [0.5, 0.5], exit: [0.3, 0.3], hold: [0.2, 0.2], leadIn: [0, 0], leadOut: [0, 0], minimumDuration: [0, 0], background: [false, false],
            lookAhead: 1, stillBelow: 0, motionLag: 1)
        // Up to 0.15 the phase is split off (5 events, 3 right: F1 0.75); from 0.4 the true run is
        // never switched to (one event over everything: F1 0); 0.2, 0.25 and 0.3 find the three
        // runs (F1 1): the default, 0.3, is among the best, and stays.
        XCTAssertEqual(StreamCalibration.switchEvidence(probabilities: p, input: input, settings: settings), 0.3)
        // A phase of one frame (0.06 score-seconds) and a true run of 3 frames (0.18): 0.1 and 0.15
        // only (0.05 splits the phase, from 0.2 the run is missed): the default does clearly worse,
        // so the smaller of the two, which switches sooner.
        var short: [Float] = []
        for k in 0..<66 { short += k == 10 || (30...32).contains(k) ? [0.2, 0.8] : [0.8, 0.2] }
        var input3 = input
        input3.runFrames = [30, 3, 33]
        XCTAssertEqual(StreamCalibration.switchEvidence(probabilities: short, input: input3, settings: settings), 0.1)
        // A phase twice as long (0.36 score-seconds) and a true run of 9 frames (0.54): 0.4 and 0.5
        // only, the smaller of the two.
        var longer: [Float] = []
        for k in 0..<66 { longer += (10...15).contains(k) || (30...38).contains(k) ? [0.2, 0.8] : [0.8, 0.2] }
        var input9 = input
        input9.runFrames = [30, 9, 27]
        XCTAssertEqual(StreamCalibration.switchEvidence(probabilities: longer, input: input9, settings: settings), 0.4)
        // Still frames as rest: b's run (frames 30-32) followed by 5 still frames (rest after the
        // hold of 2 frames) ends there by rest, and the a after it starts afresh: the runs stay
        // found with 0.1 and 0.15 still, and the same frames all moving give the same value.
        input3.stillRuns = [33, 5, 28]
        XCTAssertEqual(StreamCalibration.switchEvidence(probabilities: short, input: input3, settings: settings), 0.1)
        XCTAssertEqual(StreamCalibration.stillRuns([0.5, 0.5, 0.1, 0, 0.3, 0.1], stillBelow: 0.1), [2, 2, 1, 1])
        XCTAssertEqual(StreamCalibration.stillRuns([0, 0.5], stillBelow: 0.1), [0, 1, 1], "from a moving run, empty here")
        XCTAssertNil(StreamCalibration.stillRuns([], stillBelow: 0.1))
        // No window: nothing to fit.
        var empty = input
        (empty.windowStarts, empty.windowEnds) = ([], [])
        XCTAssertNil(StreamCalibration.switchEvidence(probabilities: [], input: empty, settings: settings))
    }

    func testSwitchEvidencesWithinTheToleranceOfTheBestTieTheDefaultFirstThenTheSmallest() {
        // Grid 0.05 0.1 0.15 0.2 0.25 0.3 0.4 0.5 0.6 0.8 1: F1 scores as measured on held-out
        // streams (docs/benchmarks.md, fourth pass).
        let utk2d = [0.558, 0.582, 0.602, 0.616, 0.638, 0.640, 0.650, 0.667, 0.674, 0.681, 0.678]
        XCTAssertEqual(StreamCalibration.choose(StreamCalibration.switchEvidenceGrid, default: 0.3, scores: utk2d), 0.5, "0.8 is best; 0.5 (0.667) is the smallest within 0.02 of it")
        let utk = [0.698, 0.718, 0.732, 0.778, 0.794, 0.811, 0.811, 0.824, 0.811, 0.804, 0.785]
        XCTAssertEqual(StreamCalibration.choose(StreamCalibration.switchEvidenceGrid, default: 0.3, scores: utk), 0.3, "the default, 0.013 under the best, ties and stays")
        let penn = [0.573, 0.593, 0.608, 0.620, 0.620, 0.624, 0.636, 0.646, 0.645, 0.634, 0.599]
        XCTAssertEqual(StreamCalibration.choose(StreamCalibration.switchEvidenceGrid, default: 0.3, scores: penn), 0.4, "the default 0.022 under the best: 0.4, 0.010 under it")
        var lower = [Double](repeating: 0.5, count: 11)
        lower[1] = 0.9
        lower[2] = 0.89
        XCTAssertEqual(StreamCalibration.choose(StreamCalibration.switchEvidenceGrid, default: 0.3, scores: lower), 0.1, "below the default too")
        XCTAssertEqual(StreamCalibration.choose(StreamCalibration.switchEvidenceGrid, default: 0.3, scores: [Double](repeating: 0.7, count: 11)), 0.3, "all tied: the default")
    }

    func testTheMinimumFactorIsTheSmallestThatDropsAShortFalseEvent() throws {
        // 75 frames at 10 fps, each scored by a window of its own; still frames rest after the
        // hold (0.2 s). A rest, 20 frames of a (a 0.8), a rest of 10 frames, then 5 moving
        // frames that are no action but score as b (b 0.8), 10 still frames, 10 frames of b, a rest.
        let input = FrameCalibrationInput(
            lookAhead: 1, frameRate: 10, stillBelow: 0, hold: [0.2, 0.2], leadIn: [0, 0], leadOut: [0, 0], minimumDuration: [0.5, 0.25],
            windowStarts: Array(0..<75), windowEnds: Array(1...75), runFrames: [10, 20, 25, 10, 10], runClasses: [-1, 0, -1, 1, -1],
            stillRuns: [0, 10, 20, 10, 5, 10, 10, 10])
        var p: [Float] = []
        for k in 0..<75 { p += (10..<30).contains(k) ? [0.8, 0.2] : (40..<45).contains(k) || (55..<65).contains(k) ? [0.2, 0.8] : [0.5, 0.5] }
        let settings = FrameSegmenter.Settings(
            enter: [0.5, 0.5], exit: [0.3, 0.3], hold: [0.2, 0.2], leadIn: [0, 0], leadOut: [0, 0], minimumDuration: [0.5, 0.25],
            background: [false, false], lookAhead: 1, stillBelow: 0, motionLag: 1)
        // The false b lasts 0.3 s (from its first moving frame to where the body stopped, a
        // frame's lag before its last moving frame): kept by b's minimum of 0.25 s (3 events, 2
        // right: F1 0.8), dropped from a factor of 1.25 (0.3125 s; F1 1), while the true b (0.8
        // s) and a (1.8 s) stay with a factor of 2: the smallest of the best, 1.25.
        let events = StreamCalibration.play(probabilities: p, input: input, settings: settings).map(\.event)
        XCTAssertEqual(events.map(\.label), [0, 1, 1])
        assertClose(events[1].end - events[1].start, 0.3, absolute: 1e-9)
        XCTAssertEqual(StreamCalibration.minimumFactor(probabilities: p, input: input, settings: settings), 1.25)
        // Without the false event every factor finds both: 1 stays.
        var clean = p
        for k in 40..<45 { (clean[2 * k], clean[2 * k + 1]) = (0.5, 0.5) }
        XCTAssertEqual(StreamCalibration.minimumFactor(probabilities: clean, input: input, settings: settings), 1)
        // A true b of 0.4 s: dropped from 1.25 too (b's minimum 0.3125 s... 0.5 s), so 1 stays.
        var short = input
        short.runFrames = [10, 20, 25, 10, 10]
        var shortP = p
        for k in 60..<65 { (shortP[2 * k], shortP[2 * k + 1]) = (0.5, 0.5) }
        short.stillRuns = [0, 10, 20, 10, 5, 10, 5, 15]
        short.runFrames = [10, 20, 25, 5, 15]
        XCTAssertEqual(StreamCalibration.minimumFactor(probabilities: shortP, input: short, settings: settings), 1)
        // The choice: values within 0.02 of the best F1 tie; the default among them stays, else the smallest.
        XCTAssertEqual(StreamCalibration.choose(StreamCalibration.minimumFactorGrid, default: 1, scores: [0.636, 0.646, 0.656, 0.667]), 1.5)
        XCTAssertEqual(StreamCalibration.choose(StreamCalibration.minimumFactorGrid, default: 1, scores: [0.667, 0.677, 0.681, 0.681]), 1)
    }

    func testEventF1MatchesEachEventToTheTrueSegmentOfItsClassAtIoUHalf() {
        let truth = [(label: 0, start: 0.0, end: 2.9), (label: 1, start: 3.0, end: 3.5), (label: 0, start: 3.6, end: 6.5)]
        // The phase split off: [0, 1] (IoU 0.34 with the first a: a miss), [1, 1.3] of b (no
        // overlap with b's segment), [1.3, 3.0] (IoU 0.53: a hit), b and a exact: 3 of 5 and 3.
        let split = [(label: 0, start: 0.0, end: 1.0), (label: 1, start: 1.0, end: 1.3), (label: 0, start: 1.3, end: 3.0), (1, 3.0, 3.6), (0, 3.6, 6.5)]
        assertClose(StreamCalibration.eventF1(split, truth: truth), 0.75)
        assertClose(StreamCalibration.eventF1([(0, 0.0, 6.5)], truth: truth), 0)
        assertClose(StreamCalibration.eventF1([(1, 0.0, 2.9)], truth: truth), 0, "a wrong class never matches")
        // One true segment is matched once: a second event over it is extra.
        assertClose(StreamCalibration.eventF1([(1, 3.0, 3.5), (1, 3.0, 3.5)], truth: truth), 2.0 / 5)
        assertClose(StreamCalibration.eventF1([], truth: []), 1)
    }

    func testTheClipIsTheMedianTrainingLengthAtTheClipRate() throws {
        var input = InputSpec(skeleton: clips([1]).skeleton, window: WindowSpec(frames: 8, mode: .fit), steps: [], channels: [.coordinates])
        let d = clips([5, 9, 12, 30, 7])
        XCTAssertEqual(StreamCalibration.clip(d, indices: Array(0..<5), input: input)?.frames, 9)
        XCTAssertEqual(StreamCalibration.clip(d, indices: Array(0..<5), input: input)?.frameRate, 10)
        XCTAssertEqual(StreamCalibration.clip(d, indices: [3, 4], input: input)?.frames, 30)
        // At the window's own rate (20 fps): 9 frames at 10 fps span 0.8 s, 17 frames at 20.
        input.window.frameRate = 20
        XCTAssertEqual(StreamCalibration.clip(d, indices: Array(0..<5), input: input)?.frames, 17)
        // From timestamps (20 fps): as recorded.
        input.window.frameRate = nil
        let stamped = clips([5, 9, 12], timestamps: true)
        XCTAssertEqual(StreamCalibration.clip(stamped, indices: [0, 1, 2], input: input)?.frames, 9)
        XCTAssertEqual(try XCTUnwrap(StreamCalibration.clip(stamped, indices: [0, 1, 2], input: input)?.frameRate), 20, accuracy: 1e-9)
        // Sliding windows slide their own window.
        input.window.mode = .sliding
        XCTAssertNil(StreamCalibration.clip(d, indices: [0], input: input))
    }

    func testTheCalibrationWindowsAreASessionsOnTheClipsBackToBack() throws {
        let d = clips([20, 24, 16, 30])
        let input = InputSpec(skeleton: d.skeleton, window: WindowSpec(frames: 8, mode: .fit), steps: [], channels: [.coordinates])
        let clip = try XCTUnwrap(StreamCalibration.clip(d, indices: [0, 1, 2, 3], input: input))
        XCTAssertEqual(clip.frames, 24)
        let w = try XCTUnwrap(StreamCalibration.windows(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 5))
        // 90 frames at 10 fps, a window of 24 frames every 8: starts 0, 8, ..., 64 and 66.
        XCTAssertEqual(w.count, 10)
        // Each window's truth is the clip at its middle; the clips' order is seeded.
        XCTAssertEqual(Set(w.labels), [0, 1])
        let again = try XCTUnwrap(StreamCalibration.windows(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 5))
        XCTAssertEqual(again.features, w.features)
        XCTAssertEqual(again.labels, w.labels)
        XCTAssertNotEqual(try StreamCalibration.windows(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 6)?.features, w.features)
    }

    func testTheHeldOutStreamRestsBetweenClipsAsADeploymentDoes() throws {
        let d = clips([20, 24, 16, 30])  // a, b, a, b at 10 fps
        let input = InputSpec(skeleton: d.skeleton, window: WindowSpec(frames: 8, mode: .fit), steps: [], channels: [.coordinates])
        let clip = try XCTUnwrap(StreamCalibration.clip(d, indices: [0, 1, 2, 3], input: input))
        var never = StreamCalibration.Rests()
        never.share = 0
        // Without a drawn rest: one before the first clip, one after the last (still frames: class -1).
        let s = try XCTUnwrap(StreamCalibration.stream(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 5, rests: never))
        XCTAssertEqual(s.runClasses.count, 6)
        XCTAssertEqual([s.runClasses[0], s.runClasses[5]], [-1, -1])
        XCTAssertEqual(s.runFrames[1...4].sorted(), [16, 20, 24, 30], "the clips at their own rate")
        for k in [0, 5] { XCTAssertTrue((15...20).contains(s.runFrames[k]), "1.5 to 2 s at 10 fps: \(s.runFrames[k])") }
        // Its motion, a session's, one value a frame: the clips move (their joints change every
        // frame), the still body does not (jitter of 0.3% of its size) but where it leaves a clip.
        let motion = try XCTUnwrap(s.motion)
        XCTAssertEqual(motion.count, s.runFrames.reduce(0, +))
        let runs = try XCTUnwrap(StreamCalibration.stillRuns(motion, stillBelow: 0.1))
        XCTAssertEqual(runs.count, 5, "moving (none), still, moving, still, moving: \(runs)")
        XCTAssertEqual(runs[1], s.runFrames[0], "every frame of the rest: it holds the clip's first pose")
        XCTAssertEqual(runs[3], s.runFrames[5] - 1, "the rest's frames but its first, whose motion sees the clip's last frames")
        // Two clips of one label always have a rest between them; with a share of 1 every clip does.
        let same = try XCTUnwrap(StreamCalibration.stream(d, indices: [0, 2], input: input, clip: clip, seed: 5, rests: never))
        XCTAssertEqual(same.runClasses, [-1, 0, -1, 0, -1])
        var always = never
        always.share = 1
        let every = try XCTUnwrap(StreamCalibration.stream(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 5, rests: always))
        XCTAssertEqual(every.runClasses.enumerated().filter { $0.offset % 2 == 0 }.map(\.element), [-1, -1, -1, -1, -1])
        // Without rests: the clips back to back, no motion measured.
        let plain = try XCTUnwrap(StreamCalibration.stream(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 5))
        XCTAssertFalse(plain.runClasses.contains(-1))
        XCTAssertNil(plain.motion)
    }

    func testTheHeldOutStreamIsEachFoldsClipsScoredByItsOwnNetwork() throws {
        let d = clips([20, 24, 16, 30, 22, 18])
        let input = InputSpec(skeleton: d.skeleton, window: WindowSpec(frames: 8, mode: .fit), steps: [], channels: [.coordinates])
        let clip = try XCTUnwrap(StreamCalibration.clip(d, indices: Array(d.sequences.indices), input: input))
        var c = TrainingConfig()
        c.seed = 5
        let source = StreamCalibration.Source(dataset: d, train: Array(d.sequences.indices), validation: [], config: c, input: input)
        // Two networks that give each class the same probability whatever the window, 0.9 / 0.1
        // and 0.2 / 0.8 (no weights, biases log(p)).
        func constant(_ p: [Float]) throws -> Network {
            let n = try Network(layers: [.flatten, .linear(inputs: input.valuesPerWindow, outputs: 2)], input: Shape(time: 8, channels: input.valuesPerWindow / 8))
            var values = [Float](repeating: 0, count: n.parameterCount)
            for (k, v) in p.enumerated() { values[values.count - 2 + k] = log(v) }
            values.withUnsafeBufferPointer { n.load(parameters: $0) }
            return n
        }
        let folds = [
            ModelCalibration.HeldOut(network: try constant([0.9, 0.1]), sequences: [0, 1, 2]),
            ModelCalibration.HeldOut(network: try constant([0.2, 0.8]), sequences: [3, 4, 5]),
        ]
        let (p, stream) = try XCTUnwrap(StreamCalibration.heldOutStream(source, folds: folds))
        let first = try XCTUnwrap(StreamCalibration.stream(d, indices: [0, 1, 2], input: input, clip: clip, seed: 5, rests: .init()))
        let second = try XCTUnwrap(StreamCalibration.stream(d, indices: [3, 4, 5], input: input, clip: clip, seed: 6, rests: .init()))
        let n1 = first.runFrames.reduce(0, +), n2 = second.runFrames.reduce(0, +)
        XCTAssertEqual(stream.runFrames, first.runFrames + second.runFrames)
        XCTAssertEqual(stream.runClasses, first.runClasses + second.runClasses)
        XCTAssertEqual(stream.windowStarts, first.starts.map { min($0, n1) } + second.starts.map { min($0, n2) + n1 }, "the second fold's frames follow the first's")
        XCTAssertEqual(stream.windowEnds, first.ends.map { min($0, n1) } + second.ends.map { min($0, n2) + n1 })
        // Each fold's windows scored by its own network.
        let W1 = first.starts.count
        XCTAssertEqual(p.count, 2 * (W1 + second.starts.count))
        for w in 0..<stream.windowStarts.count { assertClose(Double(p[2 * w]), w < W1 ? 0.9 : 0.2, absolute: 1e-5) }
        XCTAssertEqual(stream.stillRuns, StreamCalibration.stillRuns(first.motion! + second.motion!, stillBelow: stream.stillBelow))
        XCTAssertNil(try StreamCalibration.heldOutStream(source, folds: []))
    }

    func testFitRecordsTheClipAndTheThresholdsAndPredictUsesThem() throws {
        // The tiny fixture's clips, whole-clip windows, no validation split: calibrated on training.
        var c = FitRunTests.quick
        c.windowMode = .fit
        c.validationFraction = 0
        let d = try DatasetLoader.load(FitRunTests.fixture)
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: c, folder: nil)
        XCTAssertEqual(try run.train(), .finished)
        let model = try ActionModel(bytes: try run.finish().modelBytes)
        let streaming = try XCTUnwrap(model.header.streaming)
        let lengths = run.data.trainIndices.map { d.sequences[$0].frameCount }.sorted()
        XCTAssertEqual(streaming.clipFrames, lengths[lengths.count / 2])
        XCTAssertEqual(streaming.clipFrameRate, d.frameRate)
        XCTAssertEqual(streaming.calibration, "training")
        XCTAssertEqual(streaming.enter?.count, model.classes.count)
        XCTAssertEqual(try model.streamWindow().frames, lengths[lengths.count / 2])
        // Events from frames with the frame-level numbers, or from windows with the window thresholds.
        let frames = try XCTUnwrap(streaming.frames)
        let clipSeconds = Double(lengths[lengths.count / 2] - 1) / d.frameRate!
        assertClose(frames.lookAhead, (0.75 * clipSeconds * 1000).rounded() / 1000)
        XCTAssertEqual([frames.hold.count, frames.leadIn.count, frames.minimumDuration.count], [model.classes.count, model.classes.count, model.classes.count])
        XCTAssertTrue(frames.hold.allSatisfy { $0 >= StreamCalibration.shortestHold && $0 <= frames.lookAhead }, "\(frames.hold)")
        let options = EventOptions.standard(for: model)
        // The file's numbers, and the lag of the stream's motion (0.1 s at the clip's rate).
        var expected = FrameOptions(frames, classes: model.classes)
        expected.motionLag = FrameMotion.lag(frameRate: try model.streamWindow().frameRate)
        XCTAssertEqual(options.frames, expected)
        // fit records the switch evidence fitted on its calibration folds' held-out stream, and
        // the events use it.
        let fitted = try XCTUnwrap(frames.switchEvidence)
        XCTAssertTrue(StreamCalibration.switchEvidenceGrid.contains(fitted), "\(fitted)")
        XCTAssertEqual(options.frames?.switchEvidence, fitted)
        // and the minimum durations: the training clips' times one factor of the grid.
        let measured = try StreamCalibration.motion(d, indices: run.data.trainIndices, input: run.data.input, clip: (streaming.clipFrames!, streaming.clipFrameRate))
        XCTAssertTrue(
            StreamCalibration.minimumFactorGrid.contains { x in measured.minimumDuration.map { ($0 * x * 1000).rounded() / 1000 } == frames.minimumDuration },
            "\(frames.minimumDuration) against \(measured.minimumDuration)")
        XCTAssertEqual(options.frames?.motionLag, Int((d.frameRate! * 0.1).rounded()))
        let windows = EventOptions.standard(for: model, fromFrames: false)
        XCTAssertNil(windows.frames)
        for (k, name) in model.classes.enumerated() {
            XCTAssertEqual(options.thresholds(of: name).enter, Float(frames.enter[k]))
            XCTAssertEqual(options.thresholds(of: name).exit, Float(frames.exit[k]))
            XCTAssertEqual(windows.thresholds(of: name).enter, Float(streaming.enter![k]))
            XCTAssertEqual(windows.thresholds(of: name).exit, Float(streaming.exit![k]))
        }
        // With validation sequences the stream is theirs.
        c.validationFraction = 0.3
        let validated = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: c, folder: nil)
        XCTAssertEqual(try validated.train(), .finished)
        let validatedStreaming = try ActionModel(bytes: try validated.finish().modelBytes).header.streaming
        XCTAssertEqual(validatedStreaming?.calibration, "validation")
        // Calibrated on the validation windows: no fold network, nothing fitted (0.3 applies), as
        // a fit from shards, which has no sequences to play, writes it.
        XCTAssertNil(validatedStreaming?.frames?.switchEvidence)
        XCTAssertEqual(
            validatedStreaming?.frames?.minimumDuration,
            try StreamCalibration.motion(d, indices: validated.data.trainIndices, input: validated.data.input, clip: (streaming.clipFrames!, streaming.clipFrameRate))
                .minimumDuration, "the training clips' minimums, unscaled")
        // Not calibrated and no validation sequences: no held-out network either.
        c.validationFraction = 0
        c.calibration = .none
        let plain = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: c, folder: nil)
        XCTAssertEqual(try plain.train(), .finished)
        XCTAssertNil(try ActionModel(bytes: try plain.finish().modelBytes).header.streaming?.frames?.switchEvidence)
    }
}
