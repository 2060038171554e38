import Foundation
import PoseCore

/// Create ML's action-classifier keypoint layout: per frame, the `[3, 18]` MLMultiArray that
/// Vision's `VNHumanBodyPoseObservation.keypointsMultiArray()` returns (x row, y row,
/// confidence row; 18 joints in the order of `jointOrder`), stacked into an `.npz`:
///
/// | array | shape | meaning |
/// |---|---|---|
/// | `poses` | `[N, frames, 3, 18]` float32/64 | the stacked keypoint arrays |
/// | `image_size` or `image_sizes` | `[2]` or `[N, 2]` | video width and height in pixels |
/// | `y`, `label_names`, `groups`, `split`, `lengths`, `ids`, `frame_rate` | | as in `NumpyFormat` |
///
/// Vision's points are normalised to [0, 1] with the origin at the bottom-left of the image
/// (y up). They are converted to the Pose contract on the `vision-body-2d` skeleton:
/// `x_px = x · width`, `y_px = (1 − y) · height` (origin top-left, y down). A confidence of 0
/// (Vision's "not detected", also used for padding frames) makes the joint absent. Vision's
/// 19th joint, `root`, is not in the Create ML layout and is always absent.
public enum CreateMLFormat {
    /// The 18 keypoints in Create ML's order, as Xcode's generated model interface states
    /// ("nose, neck, right shoulder, right elbow, right wrist, left shoulder, left elbow, left
    /// wrist, right hip, right knee, right ankle, left hip, left knee, left ankle, right eye,
    /// left eye, right ear, left ear"), in Vision's joint names.
    public static let jointOrder = [
        "nose", "neck", "rightShoulder", "rightElbow", "rightWrist", "leftShoulder", "leftElbow", "leftWrist",
        "rightHip", "rightKnee", "rightAnkle", "leftHip", "leftKnee", "leftAnkle", "rightEye", "leftEye", "rightEar",
        "leftEar",
    ]

    /// `minConfidence`: a point whose confidence is at or below it is absent (default 0);
    /// `classes`: the class order when the archive has no `label_names`.
    public static func read(_ path: String, minConfidence: Float = 0, classes: [String]? = nil) throws -> Dataset {
        try read(try NumpySource(path: path), minConfidence: minConfidence, classes: classes)
    }

    /// Reads an archive held in memory (tests).
    public static func parseArchive(_ bytes: [UInt8], file: String, minConfidence: Float = 0) throws -> Dataset {
        try read(NumpySource(archive: ZipArchive(reader: FileReader(bytes: bytes, name: file))), minConfidence: minConfidence, classes: nil)
    }

    static func read(_ source: NumpySource, minConfidence: Float, classes: [String]?) throws -> Dataset {
        let meta = try source.small(except: source.first(of: ["poses", "X", "x"]) ?? "poses")
        var sizes: (Int) -> [Double]? = { _ in nil }
        var single: [Double]? = nil
        if let s = meta["image_size"] {
            let v = s.doubles()
            guard s.header.isNumeric, v.count == 2, v.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw DatasetError.numpy(source.location("image_size"), problem: "'image_size' must be [width, height] in pixels", fix: "e.g. numpy.array([1920, 1080])")
            }
            single = v
            sizes = { _ in v }
        } else if let s = meta["image_sizes"] {
            let v = s.doubles()
            guard s.header.isNumeric, s.shape.count == 2, s.shape[1] == 2, v.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw DatasetError.numpy(source.location("image_sizes"), problem: "'image_sizes' must be [N, 2] widths and heights", fix: "fix it")
            }
            sizes = { n in n < s.shape[0] ? [v[2 * n], v[2 * n + 1]] : nil }
        }
        var options = NumpyFormat.Options()
        options.minConfidence = minConfidence
        options.classes = classes
        var d = try NumpyFormat.read(source, options: options, layout: .createML(imageSizes: sizes))
        if let single {
            d.imageSize = single
            for k in d.sequences.indices { d.sequences[k].imageSize = nil }
        }
        return d
    }
}
