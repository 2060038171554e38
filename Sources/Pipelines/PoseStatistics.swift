import ActionRuntime
import Datasets
import Foundation
import PoseCore

extension ModelHeader.PoseStatistics {
    /// The statistics of `windows`' raw poses (docs/format.md 3.5): per frame of each window,
    /// the centre (mean of the present joints) and each present joint's offset from it; per
    /// joint the share of frames it is present in, its mean confidence and its change per
    /// coordinate between consecutive frames. At most `limit` windows, spread evenly; nil when
    /// no frame has a present joint. Sums in Double, in window order; values kept to 4
    /// significant digits (deterministic, and short in the header).
    public init?(of windows: WindowSet, limit: Int = 4096) {
        let F = windows.spec.window.frames, J = windows.spec.skeleton.jointCount, D = windows.spec.skeleton.dimensions
        let n = min(limit, windows.count)
        guard n > 0 else { return nil }
        var positions = [Double](repeating: 0, count: F), coordinates = [Float](repeating: 0, count: F * J * D)
        var present = [UInt8](repeating: 0, count: F * J), confidence = [Float](repeating: 0, count: F * J)
        var centre = [Double](repeating: 0, count: D), centreSquares = [Double](repeating: 0, count: D), centred = 0.0
        var offset = [Double](repeating: 0, count: J * D), offsetSquares = [Double](repeating: 0, count: J * D)
        var seen = [Double](repeating: 0, count: J), confidences = [Double](repeating: 0, count: J)
        var moves = [Double](repeating: 0, count: J), movePairs = [Double](repeating: 0, count: J)
        var frames = 0.0
        for w in 0..<n {
            windows.sample(w * windows.count / n, positions: &positions, coordinates: &coordinates, present: &present, confidence: &confidence)
            for f in 0..<F {
                frames += 1
                var c = [Double](repeating: 0, count: D), k = 0.0
                for j in 0..<J where present[f * J + j] != 0 {
                    k += 1
                    for d in 0..<D { c[d] += Double(coordinates[(f * J + j) * D + d]) }
                }
                guard k > 0 else { continue }
                centred += 1
                for d in 0..<D {
                    c[d] /= k
                    centre[d] += c[d]
                    centreSquares[d] += c[d] * c[d]
                }
                for j in 0..<J where present[f * J + j] != 0 {
                    seen[j] += 1
                    confidences[j] += Double(confidence[f * J + j])
                    for d in 0..<D {
                        let o = Double(coordinates[(f * J + j) * D + d]) - c[d]
                        offset[j * D + d] += o
                        offsetSquares[j * D + d] += o * o
                    }
                    guard f > 0, present[(f - 1) * J + j] != 0 else { continue }
                    movePairs[j] += 1
                    for d in 0..<D {
                        let m = Double(coordinates[(f * J + j) * D + d]) - Double(coordinates[((f - 1) * J + j) * D + d])
                        moves[j] += m * m / Double(D)
                    }
                }
            }
        }
        guard centred > 0 else { return nil }  // no frame had a joint
        /// Mean and standard deviation from a sum and a sum of squares over `count` values.
        func moments(_ sum: Double, _ squares: Double, _ count: Double) -> (Double, Double) {
            guard count > 0 else { return (0, 0) }
            let mean = sum / count
            return (mean, max(0, squares / count - mean * mean).squareRoot())
        }
        let c = (0..<D).map { moments(centre[$0], centreSquares[$0], centred) }
        let o = (0..<(J * D)).map { moments(offset[$0], offsetSquares[$0], seen[$0 / D]) }
        let all = c.flatMap { [$0.0, $0.1] } + o.flatMap { [$0.0, $0.1] } + moves
        guard all.allSatisfy(\.isFinite) else { return nil }  // coordinates so large that their squares overflow
        self.init(
            windows: n, centreMean: c.map { Self.rounded($0.0) }, centreSpread: c.map { Self.rounded($0.1) },
            offsetMean: o.map { Self.rounded($0.0) }, offsetSpread: o.map { Self.rounded($0.1) },
            present: seen.map { Self.rounded($0 / frames) },
            confidence: (0..<J).map { seen[$0] > 0 ? Self.rounded(confidences[$0] / seen[$0]) : 0 },
            motion: (0..<J).map { movePairs[$0] > 0 ? Self.rounded((moves[$0] / movePairs[$0]).squareRoot()) : 0 })
    }

    /// The statistics a fit keeps: of the windows of the training sequences `train` of
    /// `dataset` cut for `input` a third of a window apart (the same for a fit in memory and a
    /// fit from shards, whose manifest keeps them).
    public static func training(_ dataset: Dataset, train: [Int], input: InputSpec) throws -> Self? {
        guard !train.isEmpty else { return nil }
        return Self(
            of: try WindowSet(dataset: dataset, indices: train, spec: input, stride: max(1, input.window.frames / 3), classes: dataset.classes))
    }

    /// `x` to 4 significant digits.
    static func rounded(_ x: Double) -> Double {
        guard x != 0 else { return 0 }
        let scale = pow(10, 3 - floor(log10(abs(x))))
        return (x * scale).rounded() / scale
    }
}
