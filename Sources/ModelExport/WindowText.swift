import ActionRuntime
import Foundation
import PoseCore

/// What an exported model's metadata says about its windows, so that an app feeds them as
/// training cut them (docs/coreml.md, "Whole clips"): sliding windows of consecutive frames,
/// or whole clips (`fit` windows) resampled to the window, with the clip's length.
enum WindowText {
    /// The `windowMode` metadata in words.
    static func mode(_ h: ModelHeader) -> String {
        let w = h.input.window
        switch w.mode {
        case .sliding:
            return "sliding: each prediction takes \(w.frames) consecutive frames (at frameRate); slide it along the stream"
        case .fit:
            return
                "fit: each prediction takes one whole clip (one performance of an action, about clipFrames frames), resampled to \(w.frames) frames as windowSampling says; not the last \(w.frames) camera frames"
        }
    }

    /// `51 frames at 20 fps, 2.5 s` (nil when the model file does not record the clip).
    static func clip(_ h: ModelHeader) -> String? {
        guard let n = h.streaming?.clipFrames else { return nil }
        let rate = h.streaming?.clipFrameRate
        return "\(n) frames" + (rate.map { " at \(format($0)) fps, \(format(Double(n - 1) / $0)) s" } ?? "")
    }

    /// The keys of a whole-clip model: `clipFrames`, `clipFrameRate`, `clipSeconds` (when the
    /// model file records the clip, format 1.3) and `windowSampling`, each as a plain value and
    /// in words.
    static func clipKeys(_ h: ModelHeader) -> [(key: String, value: String, plain: String)] {
        let F = h.input.window.frames
        var out: [(String, String, String)] = []
        if let n = h.streaming?.clipFrames {
            out.append(("clipFrames", "\(n)", "\(n) (the training clips' median length in frames, at clipFrameRate: how many frames of a stream make one clip)"))
            if let r = h.streaming?.clipFrameRate {
                out.append(("clipFrameRate", format(r), "\(format(r)) (frames per second clipFrames counts: sample the camera at this rate)"))
                out.append(("clipSeconds", format(Double(n - 1) / r), "\(format(Double(n - 1) / r)) (the clip's duration, (clipFrames − 1) / clipFrameRate)"))
            }
        } else {
            out.append(("clipFrames", "unknown", "unknown (the model file predates format 1.3 and does not record the training clips' length)"))
        }
        let sampling =
            "window frame i (0 ... \(F - 1)) is the clip of n frames at position p = i · (n − 1) / \(max(1, F - 1))"
            + (F == 1 ? " (for one frame, (n − 1) / 2)" : "")
            + ": with f = floor(p) and w = p − f, each joint present in frames f and f + 1 is interpolated, c[f] · (1 − w) + c[f + 1] · w (its confidence too), else taken from the nearer frame (f when w < 0.5) as it is, absent or not; docs/format.md 5.4-5.5"
        out.append(("windowSampling", sampling, sampling))
        return out
    }

    static func format(_ x: Double) -> String {
        x == x.rounded() ? String(Int(x)) : String(format: "%.3g", x)
    }
}
