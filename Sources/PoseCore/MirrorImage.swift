/// The horizontal mirror image of a network input, as a channel map (docs/format.md 5.7,
/// "Mirror image"): the input of the mirrored window is `x'[t, c] = signs[c] · x[t, channels[c]]`,
/// the mirror swapping the joints of each `mirrorPairs` entry and negating x. Test-time flip
/// averaging (the `flipAverage` layer) runs a model on both.
extension InputSpec {
    public struct MirrorImage: Hashable, Sendable {
        public var channels: [Int]
        public var signs: [Float]
    }

    /// Throws when the window is not centred by a step (negating x mirrors it only about the
    /// origin), when the skeleton has no mirror pairs, or when a bone's mirror is not a bone.
    public func mirrorImage() throws -> MirrorImage {
        let s = skeleton, J = s.jointCount, D = s.dimensions
        guard steps.contains(where: { if case .centre = $0 { return true } else { return false } }) else {
            throw InputSpecError.channels("a mirror image needs centred coordinates (a centre step; centring is none)")
        }
        let sigma = s.mirrorPermutation
        guard sigma != Array(0..<J) else {
            throw InputSpecError.channels("skeleton '\(s.name)' has no mirrorPairs, so its mirror image is unknown")
        }
        let bones = s.bones.map { ($0.count == 2 ? s.index(of: $0[0]) : nil, $0.count == 2 ? s.index(of: $0[1]) : nil) }
        var out = MirrorImage(channels: [], signs: [])
        func add(_ channel: Int, _ sign: Float) {
            out.channels.append(channel)
            out.signs.append(sign)
        }
        var offset = 0
        for block in channels {
            switch block {
            case .relativePositions, .distances:
                func pairIndex(_ a: Int, _ b: Int) -> Int { a * (2 * J - a - 1) / 2 + (b - a - 1) }
                for i in 0..<J {
                    for j in (i + 1)..<max(J, i + 1) {
                        let a = min(sigma[i], sigma[j]), b = max(sigma[i], sigma[j]), swapped: Float = sigma[i] > sigma[j] ? -1 : 1
                        if block == .distances {
                            add(offset + pairIndex(a, b), 1)
                        } else {
                            for d in 0..<D { add(offset + pairIndex(a, b) * D + d, (d == 0 ? -1 : 1) * swapped) }
                        }
                    }
                }
            case .coordinates, .motion, .motion2:
                for j in 0..<J { for d in 0..<D { add(offset + sigma[j] * D + d, d == 0 ? -1 : 1) } }
            case .confidence, .mask:
                for j in 0..<J { add(offset + sigma[j], 1) }
            case .bones:
                for (b, (p, c)) in bones.enumerated() {
                    guard let p, let c else { throw InputSpecError.channels("bone \(s.bones[b]) names a joint the skeleton lacks") }
                    if let same = bones.firstIndex(where: { $0.0 == sigma[p] && $0.1 == sigma[c] }) {
                        for d in 0..<D { add(offset + same * D + d, d == 0 ? -1 : 1) }
                    } else if let reversed = bones.firstIndex(where: { $0.0 == sigma[c] && $0.1 == sigma[p] }) {
                        for d in 0..<D { add(offset + reversed * D + d, d == 0 ? 1 : -1) }
                    } else {
                        throw InputSpecError.channels("the mirror image of bone \(s.bones[b]) is not a bone of skeleton '\(s.name)'")
                    }
                }
            }
            offset += block.width(s)
        }
        return out
    }
}
