import ActionRuntime
import PoseCore

/// The input of a Create ML action classifier, `poses [F, 3, 18]` (each frame one
/// `VNHumanBodyPoseObservation.keypointsMultiArray()`: a row of x, one of y, one of
/// confidence, for 18 keypoints), turned into the raw poses the preprocessing takes.
public struct CreateMLInput: Equatable, Sendable {
    /// What the model's `root` joint (not among the 18) becomes.
    public enum Root: String, Sendable, CaseIterable {
        /// Always absent, as in data imported from Create ML keypoints.
        case absent
        /// The midpoint of `leftHip` and `rightHip` where both are present (Vision's root
        /// lies between the hips), for models trained on Vision poses that had a root.
        case hips
    }

    /// Width / height of the app's video frames.
    public var aspectRatio: Double
    /// Width and height in pixels, when known: needed when the preprocessing is not
    /// scale-invariant (no `scaleByTorso` step).
    public var imageSize: [Double]?
    /// The joint of each of the 18 keypoints, in the array's order.
    public var keypointOrder: [String]
    public var root: Root

    public init(aspectRatio: Double, imageSize: [Double]? = nil, keypointOrder: [String] = Skeleton.createMLKeypointOrder, root: Root) {
        self.aspectRatio = aspectRatio
        self.imageSize = imageSize
        self.keypointOrder = keypointOrder
        self.root = root
    }

    /// The pixel-like units the graph converts to: the image size, or (scale-invariant
    /// preprocessing) image heights, `[aspectRatio, 1]`.
    public var units: (width: Double, height: Double) {
        if let s = imageSize { return (s[0], s[1]) }
        return (aspectRatio, 1)
    }

    /// How the graph builds the model's joints: for each joint of `skeleton`, its keypoint
    /// (0..<18), 18 for "always absent" or 19 for the hips' midpoint; and the hips' keypoints.
    /// Throws when the model cannot take Create ML's input.
    func plan(for spec: InputSpec) throws -> (sources: [Int], hips: (left: Int, right: Int)?) {
        let s = spec.skeleton
        func refuse(_ why: String) -> CoreMLExport.ExportError { .interface("the Create ML interface: \(why)") }
        guard keypointOrder.count == 18, Set(keypointOrder).count == 18 else {
            throw refuse("the keypoint order must name 18 distinct joints, got \(keypointOrder.count): \(keypointOrder)")
        }
        guard s.dimensions == 2, s.units == .pixels, (spec.bodies ?? 1) == 1 else {
            throw refuse(
                "Create ML's input holds one person's 2D Vision keypoints; this model's skeleton '\(s.name)' is \(s.dimensions)D in \(s.units.rawValue)\((spec.bodies ?? 1) > 1 ? " with \(spec.bodies!) bodies" : "") (use the native interface)"
            )
        }
        guard aspectRatio.isFinite, aspectRatio > 0, imageSize.map({ $0.count == 2 && $0.allSatisfy { $0.isFinite && $0 > 0 } }) ?? true else {
            throw refuse("the aspect ratio and image size must be positive")
        }
        if imageSize == nil && !spec.steps.contains(where: { if case .scaleByTorso = $0 { return true } else { return false } }) {
            throw CoreMLExport.ExportError.imageSizeNeeded
        }
        let missing = s.joints.filter { !keypointOrder.contains($0) && $0 != "root" }
        guard missing.isEmpty else {
            throw refuse("the joints \(missing) of skeleton '\(s.name)' are not among the 18 keypoints \(keypointOrder)")
        }
        let hips = root == .hips ? keypointOrder.firstIndex(of: "leftHip").flatMap { l in keypointOrder.firstIndex(of: "rightHip").map { (l, $0) } } : nil
        if root == .hips && hips == nil { throw refuse("a root from the hips needs leftHip and rightHip among the keypoints") }
        let sources = s.joints.map { keypointOrder.firstIndex(of: $0) ?? (hips == nil ? 18 : 19) }
        return (sources, hips)
    }
}

extension ONNXGraph {
    /// Create ML's `poses [F, 3, 18]` (Vision's normalised points, origin bottom-left, y up;
    /// confidence 0 = not detected) as raw poses `[1, F, J, 3]` on the model's skeleton, in
    /// its pixel convention (origin top-left, y down): `x_px = x · W`, `y_px = (1 − y) · H`, the
    /// confidence unchanged (`CreateMLInput.units` gives W and H). Joint j is keypoint
    /// `sources[j]`; 18 is a joint that is always absent; 19 the midpoint of the `hips`
    /// keypoints with their mean confidence where both are detected, else absent.
    func createMLPoses(_ poses: String, frames F: Int, sources: [Int], hips: (left: Int, right: Int)?, units: (width: Double, height: Double)) -> String {
        let batch = reshape(poses, [1, F, 3, 18])
        let points = node("Transpose", [batch], attributes: [("perm", .ints([0, 1, 3, 2]))], name: "createml.points")  // [1, F, 18, 3]
        var rows = [points, node("Mul", [slice(points, axis: 2, 0, 1), constant(0)], name: "createml.absent")]
        if let hips {
            let pair = gather(points, [hips.left, hips.right], axis: 2)  // [1, F, 2, 3]
            let detected = sum(node("Cast", [positive(slice(pair, axis: 3, 2, 3))], attributes: [("to", .int(1))], name: "createml.hips"), [2])
            let both = node("Cast", [node("Greater", [detected, constant(1.5)], name: "createml.hips")], attributes: [("to", .int(1))], name: "createml.hips")
            let mean = node("ReduceMean", [pair], attributes: [("axes", .ints([2])), ("keepdims", .int(1))], name: "createml.hips")
            rows.append(node("Mul", [mean, both], name: "createml.root"))  // [1, F, 1, 3]
        }
        let all = node("Concat", rows, attributes: [("axis", .int(2))], name: "createml.rows")
        let joints = gather(all, sources, axis: 2)  // [1, F, J, 3]
        let (W, H) = (Float(units.width), Float(units.height))
        let scaled = node("Mul", [joints, floats("createml.scale", [3], [W, -H, 1])], name: "createml.pixels")
        return node("Add", [scaled, floats("createml.offset", [3], [0, H, 0])], name: "createml.pixels")
    }
}
