import ActionTrain
import Dispatch
import Foundation

/// The progress display: on a terminal a bar redrawn in place (at most 10 times a second) and
/// one line per epoch; otherwise one plain line per epoch.
struct ProgressDisplay {
    let terminal: Bool
    private var lastDraw: UInt64 = 0
    private var drawn = false
    private var epochSeconds: [Double] = []

    init(terminal: Bool) { self.terminal = terminal }

    mutating func batch(_ p: BatchProgress, _ out: inout Output) {
        guard terminal else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastDraw > 100_000_000 || p.batch == p.batches else { return }
        lastDraw = now
        let width = 24, filled = p.batches > 0 ? p.batch * width / p.batches : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let rate = p.seconds > 0 ? Double(p.seen) / p.seconds : 0
        let perBatch = p.batch > 0 ? p.seconds / Double(p.batch) : 0
        let remaining = Double((p.epochs - p.epoch) * p.batches + (p.batches - p.batch)) * perBatch
        let line = String(
            format: "epoch %d/%d [%@] %d/%d  %.0f win/s  loss %.4f  acc %.3f  ETA %@", p.epoch, p.epochs, bar, p.batch,
            p.batches, rate, p.loss, p.accuracy, duration(remaining))
        out.write("\r\u{1B}[2K" + line)
        drawn = true
    }

    mutating func epoch(_ r: EpochRecord, epochs: Int, _ out: inout Output) {
        finish(&out)
        let v = r.validationAccuracy.map { String(format: "  val loss %.4f  val acc %.3f", r.validationLoss!, $0) } ?? ""
        out.line(
            String(format: "epoch %3d/%d  loss %.4f  acc %.3f", r.epoch, epochs, r.trainLoss, r.trainAccuracy) + v
                + String(format: "  %.0f windows/s  lr %.3g", r.windowsPerSecond, r.learningRate ?? 0))
    }

    /// Clears the bar line.
    mutating func finish(_ out: inout Output) {
        if drawn { out.write("\r\u{1B}[2K") }
        drawn = false
    }

    func duration(_ s: Double) -> String {
        let t = Int(s.rounded())
        return t >= 3600 ? String(format: "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60) : String(format: "%d:%02d", t / 60, t % 60)
    }
}
