import Datasets
import PoseCore

/// A `BatchSource` that cuts, augments and extracts every training window afresh each epoch.
///
/// Window i in epoch e is augmented with its own generator seeded by
/// `windowSeed(epoch: e, window: i)`, so a window's features depend only on (seed, epoch,
/// window index): not on the batch it lands in, its position there, or the thread count.
/// Batches are filled by `threads` workers (`concurrentlyPerform`), each taking a
/// contiguous share of the batch with its own scratch memory; nothing is allocated per window.
///
/// Shapes: `features [indices.count, valuesPerWindow]`, `labels [indices.count]`.
public final class AugmentedBatches: BatchSource {
    public let windows: WindowSet
    public let augmenter: Augmenter
    public let extractor: FeatureExtractor
    public let seed: UInt64
    /// Workers filling one batch; results do not depend on it.
    public let threads: Int
    private let scratch: [(augment: Augmenter.Workspace, features: FeatureExtractor.Workspace)]

    public init(windows: WindowSet, augmenter: Augmenter, seed: UInt64, threads: Int = 1) throws {
        guard augmenter.skeleton == windows.spec.skeleton else {
            throw AugmentationError.invalid(
                field: "skeleton",
                reason: "the augmenter is for '\(augmenter.skeleton.name)', the windows are '\(windows.spec.skeleton.name)'")
        }
        self.windows = windows
        self.augmenter = augmenter
        let extractor = try FeatureExtractor(windows.spec)
        self.extractor = extractor
        self.seed = seed
        self.threads = max(1, threads)
        let F = windows.spec.window.frames
        scratch = (0..<max(1, threads)).map { _ in
            (
                Augmenter.Workspace(
                    frames: F, skeleton: windows.spec.skeleton, confidence: windows.spec.channels.contains(.confidence)),
                extractor.makeWorkspace()
            )
        }
    }

    /// Augments `windows` with `augmentation`; `imageWidth` (pixels) makes 2D flips mirror
    /// the image (`x -> W - x`) instead of the window centre.
    public convenience init(
        windows: WindowSet, augmentation: AugmentationConfig, seed: UInt64, threads: Int = 1, imageWidth: Double? = nil
    ) throws {
        let augmenter = try Augmenter(config: augmentation, skeleton: windows.spec.skeleton, imageWidth: imageWidth)
        try self.init(windows: windows, augmenter: augmenter, seed: seed, threads: threads)
    }

    public var count: Int { windows.count }
    public var valuesPerWindow: Int { extractor.spec.valuesPerWindow }
    public func label(at index: Int) -> Int32 { windows.labels[index] }

    /// The windows as cut, without augmentation (`WindowSet.features`).
    public func plainFeatures(_ range: Range<Int>, into features: UnsafeMutablePointer<Float>) {
        windows.features(range, into: features, extractor: extractor, workspace: scratch[0].features)
    }

    /// The seed of window `window`'s generator in `epoch`.
    public func windowSeed(epoch: Int, window: Int) -> UInt64 {
        SeededGenerator.derive(SeededGenerator.derive(seed ^ 0x0A06_3E27, UInt64(epoch)), UInt64(window))
    }

    public func fill(
        indices: ArraySlice<Int>, epoch: Int, features: UnsafeMutablePointer<Float>, labels: UnsafeMutablePointer<Int32>
    ) {
        let n = indices.count
        let workers = min(threads, n)
        if workers <= 1 {
            fill(indices, 0..<n, epoch: epoch, features: features, labels: labels, scratch: scratch[0])
            return
        }
        concurrentlyPerform(iterations: workers) { w in  // each worker its own windows and scratch
            fill(
                indices, (n * w / workers)..<(n * (w + 1) / workers), epoch: epoch, features: features, labels: labels,
                scratch: scratch[w])
        }
    }

    private func fill(
        _ indices: ArraySlice<Int>, _ range: Range<Int>, epoch: Int, features: UnsafeMutablePointer<Float>,
        labels: UnsafeMutablePointer<Int32>, scratch: (augment: Augmenter.Workspace, features: FeatureExtractor.Workspace)
    ) {
        let V = valuesPerWindow, padding = windows.spec.window.padding
        let aw = scratch.augment
        for k in range {
            let i = indices[indices.startIndex + k]
            var g = SeededGenerator(seed: windowSeed(epoch: epoch, window: i))
            let p = windows.placements[i]
            augmenter.augment(
                source: windows.sequences[p.sequence], first: p.first, step: p.step, padding: padding, workspace: aw,
                using: &g)
            extractor.extract(
                coordinates: aw.coordinates, present: aw.present, confidence: aw.confidence, into: features + k * V,
                workspace: scratch.features)
            labels[k] = windows.labels[i]
        }
    }
}
