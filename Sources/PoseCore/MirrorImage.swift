/// The horizontal mirror image of a network input, as a channel map (docs/format.md 5.7,
/// "Mirror image"): the input of the mirrored window is `x'[t, c] = signs[c] · x[t, channels[c]]`,
/// the mirror swapping the joints of each `mirrorPairs` entry and negating x. Test-time flip
/// averaging (the `flipAverage` layer) runs a model on both.
extension InputSpec {
    public struct MirrorImage: Hashable, Sendable {
        public var channels: [Int]
        public var signs: [Float]
    }

    /// Each block's own mirror image (`ChannelBlockKind.mirrorImage`) at its offset. Throws
    /// when the window is not centred by a step (negating x mirrors it only about the origin),
    /// when the skeleton has no mirror pairs, or when a block has none (a bone or pair whose
    /// mirror is not one).
    public func mirrorImage() throws -> MirrorImage {
        let s = skeleton, J = s.jointCount
        guard steps.contains(where: { if case .centre = $0 { return true } else { return false } }) else {
            throw InputSpecError.channels("a mirror image needs centred coordinates (a centre step; centring is none)")
        }
        let sigma = s.mirrorPermutation
        guard sigma != Array(0..<J) else {
            throw InputSpecError.channels("skeleton '\(s.name)' has no mirrorPairs, so its mirror image is unknown")
        }
        var out = MirrorImage(channels: [], signs: [])
        for (block, offset) in try resolvedBlocks() {
            for (c, sign) in try block.mirrorImage(sigma) {
                out.channels.append(offset + c)
                out.signs.append(sign)
            }
        }
        return out
    }
}
