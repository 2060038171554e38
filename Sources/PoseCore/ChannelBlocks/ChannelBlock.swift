/// One channel block, described once: its JSON name, its width for an input, its feature
/// kernel, its mirror image, its per-joint channels (for stgcn) and its graph form for the
/// raw-poses export. Adding a block is one file in this folder and one entry in
/// `ChannelBlocks.all` (plus docs/format.md 5.7 and the two Python readers; docs/architecture.md
/// shows the diff). `ChannelBlocksTests` fails when a registered block is missing from
/// docs/format.md, either Python reader, the ONNX export, the mirror or streaming checks.
///
/// A value of the type is the block resolved for one `InputSpec` (joint indices looked up
/// once); `InputSpec.resolvedBlocks()` builds them. Shapes: F = frames, J = joints, D = dimensions.
public protocol ChannelBlockKind: Sendable {
    /// The name in JSON (`input.channels`) and in configs, e.g. `motion`.
    static var name: String { get }
    /// Values per frame for `input`, by arithmetic alone (no resolving; `InputSpec.channelsPerFrame`).
    static func width(for input: InputSpec) -> Int
    /// Whether the block reads the input's `pairs` (default false).
    static var readsPairs: Bool { get }
    /// The block for `input`, whose skeleton, steps and pairs are valid. Throws
    /// `InputSpecError.channels` when the block cannot be built for it (say why).
    init(input: InputSpec) throws
    /// A joint-indexed block's values per joint n: joint j's are the block's channels
    /// `j·n ..< (j+1)·n` (stgcn reads them joint by joint). 0 for other blocks.
    var valuesPerJoint: Int { get }
    /// The kernel: the block's values at every frame of `window`, value q of frame f at
    /// `out[f · stride + q]`. Allocation-free; called for every window (and every stride of a
    /// live stream).
    func write<Dim: StaticDimensions>(_: Dim.Type, _ window: BlockWindow, into out: UnsafeMutablePointer<Float>, stride: Int)
    /// `write` specialised for the window's dimensions. Given by the protocol (do not implement):
    /// being a requirement, a call on `any ChannelBlockKind` reaches a copy compiled for the block.
    func write(_ window: BlockWindow, into out: UnsafeMutablePointer<Float>, stride: Int)
    /// The mirror image (docs/format.md 5.7): for each channel q of the block in the mirrored
    /// window (joints permuted by `sigma`, x negated), the channel of the original window's
    /// block it equals and the sign. Throws `InputSpecError.channels` when there is none.
    func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)]
    /// The block as graph operators on the raw-poses export's values; returns `[B, F, width]`.
    func graph(_ g: OpGraph, _ input: BlockGraphInput) -> String
}

extension ChannelBlockKind {
    public static var readsPairs: Bool { false }
    public var valuesPerJoint: Int { 0 }

    public func write(_ window: BlockWindow, into out: UnsafeMutablePointer<Float>, stride: Int) {
        if window.dimensions == 2 {
            write(Dimensions2.self, window, into: out, stride: stride)
        } else {
            write(Dimensions3.self, window, into: out, stride: stride)
        }
    }
}

/// What a block's kernel reads: one window after the steps. `coordinates [F, J, D]` are the
/// transformed coordinates with absent joints 0, `present [F, J]` 1 or 0 (after `fillGaps`, 1
/// for filled points too), `seen [F, J]` the window's own presence before any filling (what
/// `mask` and `confidence` report), `confidence [F, J]` the sampled confidences (nil: 1 for
/// every seen joint).
public struct BlockWindow {
    public let frames: Int, joints: Int, dimensions: Int
    public let coordinates: UnsafePointer<Float>
    public let present: UnsafePointer<UInt8>
    public let seen: UnsafePointer<UInt8>
    public let confidence: UnsafePointer<Float>?

    /// `seen` nil: `present` (nothing was filled).
    public init(
        frames: Int, joints: Int, dimensions: Int, coordinates: UnsafePointer<Float>, present: UnsafePointer<UInt8>,
        seen: UnsafePointer<UInt8>? = nil, confidence: UnsafePointer<Float>?
    ) {
        (self.frames, self.joints, self.dimensions) = (frames, joints, dimensions)
        (self.coordinates, self.present, self.seen, self.confidence) = (coordinates, present, seen ?? present, confidence)
    }
}

/// What a block's graph form reads (docs/format.md 7.1): `coordinates [B, F, J, D]` after the
/// steps with absent joints 0, `present [B, F, J, 1]` 1 or 0 (after `fillGaps`, 1 for filled
/// points too), `seen [B, F, J, 1]` the presence as given, `confidence [B, F, J, 1]` as given
/// (above 0 for seen joints), and the window's F.
public struct BlockGraphInput {
    public let coordinates: String, present: String, seen: String, confidence: String
    public let frames: Int

    /// `seen` nil: `present`.
    public init(coordinates: String, present: String, seen: String? = nil, confidence: String, frames: Int) {
        (self.coordinates, self.present, self.seen, self.confidence, self.frames) = (coordinates, present, seen ?? present, confidence, frames)
    }
}

/// A dimensionality known at compile time (2 or 3), so that kernels specialise and their inner
/// `d` loops unroll.
public protocol StaticDimensions { static var count: Int { get } }
public enum Dimensions2: StaticDimensions { public static var count: Int { 2 } }
public enum Dimensions3: StaticDimensions { public static var count: Int { 3 } }

/// The registration of every channel block: the one list the readers, writers and tests consult.
public enum ChannelBlocks {
    public static let all: [any ChannelBlockKind.Type] = [
        CoordinatesBlock.self, ConfidenceBlock.self, MaskBlock.self, MotionBlock.self, BonesBlock.self,
        RelativePositionsBlock.self, DistancesBlock.self, FastMotionBlock.self,
    ]

    static let byName: [String: any ChannelBlockKind.Type] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The block named `name`, or nil.
    public static func named(_ name: String) -> (any ChannelBlockKind.Type)? { byName[name] }
}

/// A block of per-frame features, as an `InputSpec` lists it: one of `ChannelBlocks.all`. In
/// JSON, its name (`"coordinates"`, ...). Each block's file adds its constant (`.coordinates`, ...).
public struct ChannelBlock: Hashable, Sendable, Codable, RawRepresentable, CaseIterable, CustomStringConvertible {
    /// The block's name.
    public let rawValue: String

    /// The registered block named `rawValue`, or nil.
    public init?(rawValue: String) {
        guard ChannelBlocks.named(rawValue) != nil else { return nil }
        self.rawValue = rawValue
    }

    public init(_ kind: any ChannelBlockKind.Type) { rawValue = kind.name }

    /// The block's description.
    public var kind: any ChannelBlockKind.Type { ChannelBlocks.byName[rawValue]! }  // only registered names are made

    /// Every registered block, in registration order.
    public static var allCases: [ChannelBlock] { ChannelBlocks.all.map { ChannelBlock($0) } }

    public var description: String { rawValue }

    /// Values per frame for `input`.
    public func width(for input: InputSpec) -> Int { kind.width(for: input) }

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        let name = try c.decode(String.self)
        guard let block = ChannelBlock(rawValue: name) else {
            throw DecodingError.dataCorruptedError(
                in: c, debugDescription: "unknown channel block '\(name)'; this reader knows \(ChannelBlocks.all.map { $0.name }.joined(separator: ", "))")
        }
        self = block
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}

// MARK: - Shared descriptions

/// A block of one D-vector per joint (coordinates, motion): width J·D, joint j's values at
/// `j·D ..< (j+1)·D`, read joint by joint by stgcn; in the mirror image joint j takes joint
/// σ(j)'s vector with x negated. A conforming block gives its name, its kernel and graph form.
public protocol JointVectorBlock: ChannelBlockKind {
    var dimensions: Int { get }
    init(dimensions: Int)
}

extension JointVectorBlock {
    public static func width(for input: InputSpec) -> Int { input.skeleton.jointCount * input.skeleton.dimensions }
    public init(input: InputSpec) throws { self.init(dimensions: input.skeleton.dimensions) }
    public var valuesPerJoint: Int { dimensions }
    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] {
        let D = dimensions
        return sigma.flatMap { s in (0..<D).map { d in (s * D + d, d == 0 ? -1 : 1) } }
    }
}

/// A block of one value per joint (mask, confidence): width J, joint j's value at j; in the
/// mirror image joint j takes joint σ(j)'s value.
public protocol JointValueBlock: ChannelBlockKind {
    init()
}

extension JointValueBlock {
    public static func width(for input: InputSpec) -> Int { input.skeleton.jointCount }
    public init(input: InputSpec) throws { self.init() }
    public var valuesPerJoint: Int { 1 }
    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] { sigma.map { ($0, 1) } }
}
