import Datasets
import PoseCore

/// Tiny datasets for the data-preparation tests (windows, augmentation, splits, lint).
enum PrepFixtures {
    /// 2D, pixels: a nose, two hands, two hips (hips are the centre; torso nose -> hips).
    static let body2D = Skeleton(
        name: "toy-body", joints: ["nose", "leftHand", "rightHand", "leftHip", "rightHip"], dimensions: 2,
        units: .pixels, mirrorPairs: [["leftHand", "rightHand"], ["leftHip", "rightHip"]],
        bones: [["nose", "leftHand"], ["nose", "rightHand"], ["leftHip", "rightHip"]],
        centre: ["leftHip", "rightHip"], torsoUpper: ["nose"], torsoLower: ["leftHip", "rightHip"])

    /// 3D, metres, y up: same joints.
    static let body3D = Skeleton(
        name: "toy-body-3d", joints: body2D.joints, dimensions: 3, units: .metres, mirrorPairs: body2D.mirrorPairs,
        bones: body2D.bones, centre: body2D.centre, torsoUpper: body2D.torsoUpper, torsoLower: body2D.torsoLower)

    /// A sequence of `frames` frames of a waving person: every joint moves with the frame
    /// index so that frames differ; `absent` lists (frame, joint) pairs left out.
    static func sequence(
        id: String, label: String?, frames: Int, skeleton: Skeleton = body2D, offset: Float = 0,
        absent: Set<[Int]> = [], confidence: Bool = false
    ) -> PoseSequence {
        var s = PoseSequence(
            id: id, label: label, jointCount: skeleton.jointCount, dimensions: skeleton.dimensions,
            hasConfidence: confidence)
        let base: [(Float, Float, Float)] = [(100, 50, 0.1), (70, 90, 0.2), (130, 90, -0.2), (90, 150, 0.05), (110, 150, -0.05)]
        for f in 0..<frames {
            let t = Float(f)
            let frame: [PosePoint?] = base.enumerated().map { j, b in
                if absent.contains([f, j]) { return nil }
                let wave: Float = j == 2 ? 10 * t : t
                return PosePoint(
                    x: b.0 + wave + offset, y: b.1 - Float(j) * t * 0.5, z: b.2 + 0.01 * t,
                    confidence: confidence ? 0.5 + Float(j) * 0.1 : nil)
            }
            s.appendFrame(frame)
        }
        return s
    }

    /// Frame f, joint j as (x, y[, z]) of a sequence.
    static func point(_ s: PoseSequence, _ f: Int, _ j: Int) -> [Float] {
        let base = (f * s.jointCount + j) * s.dimensions
        return Array(s.coordinates[base..<base + s.dimensions])
    }

    static func isPresent(_ s: PoseSequence, _ f: Int, _ j: Int) -> Bool { s.present[f * s.jointCount + j] != 0 }

    /// A dataset of sequences with labels, groups and splits given as tuples.
    static func dataset(
        _ specs: [(id: String, label: String, group: String?, split: String?, frames: Int)], classes: [String]? = nil,
        frameRate: Double? = nil
    ) -> Dataset {
        var seqs: [PoseSequence] = []
        for (k, s) in specs.enumerated() {
            var seq = sequence(id: s.id, label: s.label, frames: s.frames, offset: Float(k))
            seq.group = s.group
            seq.split = s.split
            seqs.append(seq)
        }
        return Dataset(name: "toy", skeleton: body2D, sequences: seqs, classes: classes, frameRate: frameRate)
    }
}
