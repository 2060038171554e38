import Foundation
import PoseCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The JSON header of a model file. Every field is specified in docs/format.md, section 3.
public struct ModelHeader: Codable, Hashable, Sendable {
    /// One parameter tensor in the data section (docs/format.md 3.2).
    public struct Tensor: Codable, Hashable, Sendable {
        /// `layers.<i>.<param>`, e.g. `layers.1.weight`.
        public var name: String
        /// Always `float32` in version 1.
        public var dtype: String
        public var shape: [Int]
        /// Axis names, e.g. `"[outputs, inputs]"`.
        public var layout: String
        /// Byte offset from the start of the data section; the offsets tile the section.
        public var offset: Int
        /// Byte length, `4 · Π shape`.
        public var length: Int
    }

    /// Where a model came from (docs/format.md 3.3). Never changes what it computes.
    public struct Provenance: Codable, Hashable, Sendable {
        /// Writer name and version, e.g. `actiontrain 0.1.0`.
        public var tool: String
        public var datasetHash: String?
        public var configHash: String?
        public var seed: UInt64?
        /// Final metrics by name (e.g. `validationAccuracy`). Deterministic: no durations.
        public var metrics: [String: Double]
        public var notes: [String: String]

        public init(
            tool: String = ActionRuntimeInfo.tool, datasetHash: String? = nil, configHash: String? = nil,
            seed: UInt64? = nil, metrics: [String: Double] = [:], notes: [String: String] = [:]
        ) {
            self.tool = tool
            self.datasetHash = datasetHash
            self.configHash = configHash
            self.seed = seed
            self.metrics = metrics
            self.notes = notes
        }
    }

    /// The coordinate convention of the input poses, derived from the skeleton's units
    /// (docs/format.md 3.1).
    public struct CoordinateSystem: Codable, Hashable, Sendable {
        public var units: Skeleton.Units
        /// `topLeft` for pixels; `source` (the pose source's own frame) otherwise.
        public var origin: String
        /// `down` for pixels; `source` otherwise.
        public var yAxis: String
        /// Always `anatomical`: `leftWrist` is the person's left wrist.
        public var sides: String

        public init(units: Skeleton.Units) {
            self.units = units
            origin = units == .pixels ? "topLeft" : "source"
            yAxis = units == .pixels ? "down" : "source"
            sides = "anatomical"
        }
    }

    /// Always `actiontrain.model`.
    public var format: String
    /// Ordered class labels: logit `i` is `classes[i]`.
    public var classes: [String]
    public var coordinateSystem: CoordinateSystem
    /// Skeleton, window, preprocessing steps and channel blocks: how to build the input from poses.
    public var input: InputSpec
    /// Per-window network input `[time, channels]`.
    public var inputShape: Shape
    /// Frames per second of the training data before any resampling, when known.
    public var trainingFrameRate: Double?
    public var layers: [LayerSpec]
    /// Parameter tensors in data order.
    public var tensors: [Tensor]
    public var provenance: Provenance
}

public enum ActionRuntimeInfo {
    public static let version = "0.1.0"
    public static let tool = "actiontrain \(version)"
}

/// Errors reading or writing a model file. Each says what is wrong and carries its evidence.
public indirect enum ModelFileError: Error, Equatable, CustomStringConvertible {
    case notAModelFile(String)
    case unsupportedVersion(major: Int, minor: Int)
    /// The file is shorter than its preamble says (or than a preamble).
    case truncated(expected: Int, got: Int)
    /// The file is longer than its preamble says.
    case trailingBytes(expected: Int, got: Int)
    /// The section lengths of the preamble are inconsistent.
    case badPreamble(String)
    case checksumMismatch(section: String, stored: UInt32, computed: UInt32)
    case badHeader(String)
    /// A size in the file beyond the reader's limits (docs/format.md 2.1).
    case limitExceeded(what: String, value: Int, limit: Int)
    case badTensor(name: String, reason: String)
    /// Writing: the model cannot be represented (e.g. a non-finite metric).
    case cannotEncode(String)
    case io(String)
    /// Any of the above, about a named file.
    case inFile(String, ModelFileError)

    /// The error without the file name.
    public var underlying: ModelFileError {
        if case .inFile(_, let e) = self { return e.underlying }
        return self
    }

    public var description: String {
        switch self {
        case .notAModelFile(let why):
            return "not an actiontrain model file (\(why)); pass a file written by `actiontrain fit`"
        case .unsupportedVersion(let major, let minor):
            return "model file version \(major).\(minor) is not supported by this reader (major version \(ModelFile.majorVersion)); use a matching actiontrain"
        case .truncated(let expected, let got):
            return "model file is truncated: it should have \(expected) bytes but has \(got); copy it again"
        case .trailingBytes(let expected, let got):
            return "model file has trailing bytes: it should have \(expected) bytes but has \(got); copy it again"
        case .badPreamble(let why):
            return "model file preamble is invalid: \(why)"
        case .checksumMismatch(let section, let stored, let computed):
            return String(
                format: "model file is damaged: the %@ checksum does not match (stored %08x, computed %08x); copy it again",
                section, stored, computed)
        case .badHeader(let why):
            return "model file header is invalid: \(why)"
        case .limitExceeded(let what, let value, let limit):
            return "model file is beyond this reader's limits: \(what) is \(value), the limit is \(limit)"
        case .badTensor(let name, let why):
            return "model file tensor '\(name)' is invalid: \(why)"
        case .cannotEncode(let why):
            return "cannot write the model file: \(why)"
        case .io(let why):
            return why
        case .inFile(let path, let e):
            return "\(path): \(e.description)"
        }
    }
}

/// Reads and writes the binary model file: a 64-byte preamble, a space-padded JSON header,
/// and 64-byte-aligned little-endian float32 tensors that tile the data section.
/// The byte layout and every rule are in docs/format.md.
public enum ModelFile {
    public static let magic: [UInt8] = [0x89, 0x41, 0x54, 0x4D, 0x0D, 0x0A, 0x1A, 0x0A]  // \x89 A T M \r \n \x1a \n
    public static let majorVersion = 1
    public static let minorVersion = 0
    public static let formatName = "actiontrain.model"
    public static let preambleSize = 64
    public static let alignment = 64

    /// The reader's limits (docs/format.md 2.1): a hostile file cannot make it allocate more.
    public enum Limits {
        public static let fileBytes = 1 << 31
        public static let headerBytes = 16 << 20
        public static let jsonDepth = 64
        public static let layers = 1024
        public static let residualDepth = 8
        public static let tensors = 4096
        public static let tensorRank = 4
        public static let tensorValues = 1 << 28
        public static let inputTime = 1 << 16
        public static let inputChannels = 1 << 20
        public static let activationValues = 1 << 24
        /// Activations of all layers together, per window: what a forward pass allocates.
        public static let totalActivationValues = 1 << 26
        public static let classes = 1 << 16
        public static let joints = 1 << 16
    }

    // MARK: - Writing

    /// Serialises a model: header and the network's parameters. Identical inputs give
    /// identical bytes (sorted keys, no time stamps).
    public static func encode(
        classes: [String], input: InputSpec, network: Network, provenance: ModelHeader.Provenance,
        trainingFrameRate: Double? = nil
    ) throws -> [UInt8] {
        guard !classes.isEmpty, Set(classes).count == classes.count else {
            throw ModelFileError.cannotEncode("the class labels must be non-empty and distinct, got \(classes)")
        }
        guard network.classCount == classes.count else {
            throw ModelFileError.cannotEncode("the network has \(network.classCount) outputs for \(classes.count) classes")
        }
        for (k, v) in provenance.metrics where !v.isFinite {
            throw ModelFileError.cannotEncode("metric '\(k)' is \(v); metrics must be finite")
        }
        var tensors: [ModelHeader.Tensor] = []
        var offset = 0
        for t in network.tensors {
            tensors.append(
                ModelHeader.Tensor(
                    name: t.name, dtype: "float32", shape: t.shape, layout: t.layout,
                    offset: offset, length: t.count * 4))
            offset = align(offset + t.count * 4)
        }
        let dataLength = offset
        let header = ModelHeader(
            format: formatName, classes: classes,
            coordinateSystem: .init(units: input.skeleton.units), input: input, inputShape: network.inputShape,
            trainingFrameRate: trainingFrameRate, layers: network.specs, tensors: tensors, provenance: provenance)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var headerBytes: [UInt8]
        do {
            headerBytes = Array(try encoder.encode(header))
        } catch {
            throw ModelFileError.cannotEncode("the header does not encode as JSON: \(error)")
        }
        headerBytes += [UInt8](repeating: 0x20, count: align(preambleSize + headerBytes.count) - preambleSize - headerBytes.count)
        let dataStart = preambleSize + headerBytes.count
        let total = dataStart + dataLength

        var out = [UInt8](repeating: 0, count: total)
        out.withUnsafeMutableBytes { raw in
            for (stored, info) in zip(tensors, network.tensors) {
                let dst = raw.baseAddress! + dataStart + stored.offset
                let src = network.parameters + info.offset
                #if _endian(little)
                    dst.copyMemory(from: src, byteCount: stored.length)
                #else
                    for i in 0..<info.count { dst.storeBytes(of: src[i].bitPattern.littleEndian, toByteOffset: 4 * i, as: UInt32.self) }
                #endif
            }
        }
        out.replaceSubrange(preambleSize..<dataStart, with: headerBytes)
        let dataCRC = out.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[dataStart..<total])) }
        var pre: [UInt8] = magic
        pre += le(UInt16(majorVersion)) + le(UInt16(minorVersion)) + le(UInt32(0))
        pre += le(UInt64(headerBytes.count)) + le(UInt64(dataLength))
        pre += le(CRC32.checksum(headerBytes)) + le(dataCRC)
        pre += le(UInt64(total))
        pre += [UInt8](repeating: 0, count: preambleSize - pre.count)
        out.replaceSubrange(0..<preambleSize, with: pre)
        return out
    }

    // MARK: - Reading

    /// What the preamble says, after steps 1-4 of docs/format.md section 2.
    struct Preamble {
        var headerLength: Int, dataLength: Int
        var headerCRC: UInt32, dataCRC: UInt32
        var dataStart: Int { preambleSize + headerLength }
    }

    /// Steps 1-4: magic, version, total size and section lengths, for a file of `fileSize`
    /// bytes that starts with `head` (its first 64 bytes, or all of a shorter file).
    static func readPreamble(_ head: UnsafeRawBufferPointer, fileSize n: Int) throws -> Preamble {
        // 1. Magic.
        guard n > 0 else { throw ModelFileError.notAModelFile("the file is empty") }
        let m = min(head.count, magic.count)
        if !head.prefix(m).elementsEqual(magic.prefix(m)) {
            if m >= 4 && head.prefix(4).elementsEqual(magic.prefix(4)) {
                throw ModelFileError.notAModelFile("the magic bytes are damaged, as by a text-mode transfer")
            }
            throw ModelFileError.notAModelFile("wrong magic bytes")
        }
        guard n >= preambleSize, head.count >= preambleSize else { throw ModelFileError.truncated(expected: preambleSize, got: n) }
        func u16(_ o: Int) -> Int { Int(head.loadUnaligned(fromByteOffset: o, as: UInt16.self).littleEndian) }
        func u32(_ o: Int) -> UInt32 { head.loadUnaligned(fromByteOffset: o, as: UInt32.self).littleEndian }
        func u64(_ o: Int) -> UInt64 { head.loadUnaligned(fromByteOffset: o, as: UInt64.self).littleEndian }
        // 2. Version.
        let major = u16(8), minor = u16(10)
        guard major == majorVersion else { throw ModelFileError.unsupportedVersion(major: major, minor: minor) }
        // 3. Total size.
        let total64 = u64(40)
        if total64 > UInt64(n) { throw ModelFileError.truncated(expected: Int(clamping: total64), got: n) }
        if total64 < UInt64(n) { throw ModelFileError.trailingBytes(expected: Int(total64), got: n) }
        // 4. Section lengths (all now bounded by n, so they fit in Int).
        let h64 = u64(16), d64 = u64(24)
        guard h64 <= UInt64(n), d64 <= UInt64(n) else {
            throw ModelFileError.badPreamble("header length \(h64) or data length \(d64) exceeds the file size \(n)")
        }
        let headerLength = Int(h64), dataLength = Int(d64)
        guard preambleSize + headerLength + dataLength == n else {
            throw ModelFileError.badPreamble(
                "64 + header length \(headerLength) + data length \(dataLength) is not the file size \(n)")
        }
        guard headerLength > 0, (preambleSize + headerLength) % alignment == 0, dataLength % alignment == 0 else {
            throw ModelFileError.badPreamble(
                "the header length \(headerLength) and data length \(dataLength) must keep the data 64-byte aligned")
        }
        guard headerLength <= Limits.headerBytes else {
            throw ModelFileError.limitExceeded(what: "the header length", value: headerLength, limit: Limits.headerBytes)
        }
        return Preamble(headerLength: headerLength, dataLength: dataLength, headerCRC: u32(32), dataCRC: u32(36))
    }

    /// Steps 5 (header checksum), 6 and 7: the header JSON, its semantics and the tensor table.
    static func readHeader(_ headerBytes: UnsafeRawBufferPointer, _ pre: Preamble) throws -> ModelHeader {
        let crc = CRC32.checksum(headerBytes)
        guard crc == pre.headerCRC else { throw ModelFileError.checksumMismatch(section: "header", stored: pre.headerCRC, computed: crc) }
        let header = try decodeHeader(headerBytes)
        try validate(header)
        try checkTiling(header.tensors, dataLength: pre.dataLength)
        return header
    }

    /// Checks the preamble, checksums, header and tensor table (docs/format.md section 2,
    /// steps 1-7) and returns the header and the data section (a view into `bytes`).
    /// Every size is checked before it is used; nothing is allocated from a size in the file.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (header: ModelHeader, data: UnsafeRawBufferPointer) {
        let pre = try readPreamble(UnsafeRawBufferPointer(rebasing: bytes.prefix(preambleSize)), fileSize: bytes.count)
        let headerBytes = UnsafeRawBufferPointer(rebasing: bytes[preambleSize..<pre.dataStart])
        let headerCRC = CRC32.checksum(headerBytes)
        guard headerCRC == pre.headerCRC else {
            throw ModelFileError.checksumMismatch(section: "header", stored: pre.headerCRC, computed: headerCRC)
        }
        let data = UnsafeRawBufferPointer(rebasing: bytes[pre.dataStart...])
        let dataCRC = CRC32.parallelChecksum(data)
        guard dataCRC == pre.dataCRC else {
            throw ModelFileError.checksumMismatch(section: "data", stored: pre.dataCRC, computed: dataCRC)
        }
        return (try readHeader(headerBytes, pre), data)
    }

    /// Decodes the header JSON after bounding its nesting depth (a deeply nested header
    /// would otherwise recurse without bound).
    static func decodeHeader(_ headerBytes: UnsafeRawBufferPointer) throws -> ModelHeader {
        var depth = 0, inString = false, escaped = false
        for b in headerBytes {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
            } else if b == 0x22 {
                inString = true
            } else if b == 0x5B || b == 0x7B {
                depth += 1
                guard depth <= Limits.jsonDepth else {
                    throw ModelFileError.limitExceeded(what: "the JSON nesting depth", value: depth, limit: Limits.jsonDepth)
                }
            } else if b == 0x5D || b == 0x7D {
                depth -= 1
            }
        }
        do {
            return try JSONDecoder().decode(ModelHeader.self, from: Data(headerBytes))
        } catch let e as DecodingError {
            throw ModelFileError.badHeader(describe(e, header: headerBytes))
        } catch {
            throw ModelFileError.badHeader("the JSON does not decode: \(error)")
        }
    }

    /// A one-line account of a decoding error: where, and what. A preprocessing step that does
    /// not decode is named (the synthesized decoder only says it found the wrong keys).
    static func describe(_ error: DecodingError, header: UnsafeRawBufferPointer) -> String {
        func path(_ c: [CodingKey]) -> String {
            let p = c.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "the header" : String(p.drop(while: { $0 == "." }))
        }
        let context: DecodingError.Context
        var what: String
        switch error {
        case .keyNotFound(let key, let ctx):
            return "\(path(ctx.codingPath)) has no '\(key.stringValue)'"
        case .valueNotFound(let type, let ctx):
            return "\(path(ctx.codingPath)) is null, expected \(type)"
        case .typeMismatch(let type, let ctx):
            (context, what) = (ctx, "is not \(type): \(ctx.debugDescription)")
        case .dataCorrupted(let ctx):
            if ctx.codingPath.isEmpty { return "the header is not valid JSON: \(ctx.debugDescription)" }
            (context, what) = (ctx, "is invalid: \(ctx.debugDescription)")
        @unknown default:
            return "\(error)"
        }
        let keys = context.codingPath.map(\.stringValue)
        if let s = keys.firstIndex(of: "steps"), s + 1 < keys.count, let k = context.codingPath[s + 1].intValue {
            // The step's own name, from a second (failure-path only) parse.
            let object = try? JSONSerialization.jsonObject(with: Data(header))
            let steps = ((object as? [String: Any])?["input"] as? [String: Any])?["steps"] as? [Any]
            let names = (steps.flatMap { k < $0.count ? $0[k] as? [String: Any] : nil })?.keys.sorted() ?? []
            what = "unknown preprocessing step \(names.map { "'\($0)'" }.joined(separator: ", ")) (\(what)); "
                + "this reader knows centre, scaleByTorso and divide"
            return "input.steps[\(k)]: \(what)"
        }
        return "\(path(context.codingPath)) \(what)"
    }

    /// Header semantics that need no network: format, classes, coordinates, input, limits,
    /// and the shapes the layers produce (checked arithmetic; docs/format.md 2.1 and 4).
    static func validate(_ h: ModelHeader) throws {
        guard h.format == formatName else { throw ModelFileError.badHeader("format is '\(h.format)', expected '\(formatName)'") }
        guard !h.classes.isEmpty else { throw ModelFileError.badHeader("there are no classes") }
        guard h.classes.count <= Limits.classes else {
            throw ModelFileError.limitExceeded(what: "the number of classes", value: h.classes.count, limit: Limits.classes)
        }
        guard Set(h.classes).count == h.classes.count else { throw ModelFileError.badHeader("the class labels are not distinct") }
        let skeleton = h.input.skeleton
        guard skeleton.jointCount <= Limits.joints else {
            throw ModelFileError.limitExceeded(what: "the number of joints", value: skeleton.jointCount, limit: Limits.joints)
        }
        do { try h.input.validate() } catch { throw ModelFileError.badHeader("the input description is invalid: \(error)") }
        guard h.coordinateSystem == .init(units: skeleton.units) else {
            let c = h.coordinateSystem
            throw ModelFileError.badHeader(
                "coordinateSystem (units \(c.units.rawValue), origin \(c.origin), yAxis \(c.yAxis), sides \(c.sides)) "
                    + "does not match the skeleton's units '\(skeleton.units.rawValue)'")
        }
        let shape = h.inputShape
        guard shape.time >= 1, shape.channels >= 1 else {
            throw ModelFileError.badHeader("inputShape \(shape) must be positive")
        }
        guard shape.time <= Limits.inputTime else {
            throw ModelFileError.limitExceeded(what: "inputShape.time", value: shape.time, limit: Limits.inputTime)
        }
        guard shape.channels <= Limits.inputChannels else {
            throw ModelFileError.limitExceeded(what: "inputShape.channels", value: shape.channels, limit: Limits.inputChannels)
        }
        guard shape.time * shape.channels <= Limits.activationValues else {
            throw ModelFileError.limitExceeded(
                what: "inputShape.time x channels", value: shape.time * shape.channels, limit: Limits.activationValues)
        }
        // Joints are bounded, so channelsPerFrame cannot overflow.
        guard h.input.window.frames == shape.time, h.input.channelsPerFrame == shape.channels else {
            throw ModelFileError.badHeader(
                "inputShape \(shape) does not match the input description: \(h.input.window.frames) frames of \(h.input.channelsPerFrame) channels")
        }
        if let r = h.trainingFrameRate, !(r > 0 && r.isFinite) {
            throw ModelFileError.badHeader("trainingFrameRate \(r) must be a positive number")
        }
        guard h.tensors.count <= Limits.tensors else {
            throw ModelFileError.limitExceeded(what: "the number of tensors", value: h.tensors.count, limit: Limits.tensors)
        }
        var budget = ShapeBudget()
        let out = try inferShape(h.layers, input: shape, path: "layers", depth: 0, budget: &budget)
        guard out.time == 1, out.channels == h.classes.count else {
            throw ModelFileError.badHeader(
                "the network gives \(out) per window; expected [1, \(h.classes.count)] (one logit per class)")
        }
        var stored = 0
        for t in h.tensors {
            let (count, _) = try checkedCount(t)
            stored += count  // ≤ 4096 · 2^28: no overflow
        }
        guard stored == budget.parameters else {
            throw ModelFileError.badHeader(
                "the layers need \(budget.parameters) parameter values, the tensors hold \(stored)")
        }
    }

    /// Running totals of the shape pass.
    struct ShapeBudget {
        var layers = 0
        var parameters = 0
        /// Output values of every layer, plus conv1d's im2col rows, per window.
        var activations = 0
    }

    /// The output shape of `layers` for `input`, per docs/format.md section 4, with every
    /// product checked against the limits. Counts layers and parameter values.
    static func inferShape(
        _ layers: [LayerSpec], input: Shape, path: String, depth: Int, budget: inout ShapeBudget
    ) throws -> Shape {
        var s = input
        for (i, spec) in layers.enumerated() {
            let name = "\(path)[\(i)] (\(spec.typeName))"
            func bad(_ why: String) -> ModelFileError { .badHeader("\(name): \(why)") }
            func size(_ field: String, _ v: Int, max: Int = Limits.tensorValues) throws {
                guard v >= 1 else { throw bad("\(field) must be positive, got \(v)") }
                guard v <= max else { throw ModelFileError.limitExceeded(what: "\(name) \(field)", value: v, limit: max) }
            }
            func params(_ counts: [Int]) throws {
                for c in counts {
                    guard c <= Limits.tensorValues else {
                        throw ModelFileError.limitExceeded(what: "\(name) tensor values", value: c, limit: Limits.tensorValues)
                    }
                    budget.parameters += c  // ≤ 1024 layers · 2 · 2^28: no overflow
                }
            }
            budget.layers += 1
            guard budget.layers <= Limits.layers else {
                throw ModelFileError.limitExceeded(what: "the number of layers", value: budget.layers, limit: Limits.layers)
            }
            switch spec {
            case .linear(let inputs, let outputs):
                try size("inputs", inputs)
                try size("outputs", outputs)
                guard inputs == s.channels else { throw bad("expects \(inputs) channels, receives \(s)") }
                let (w, o) = inputs.multipliedReportingOverflow(by: outputs)
                guard !o else { throw ModelFileError.limitExceeded(what: "\(name) weight values", value: Int.max, limit: Limits.tensorValues) }
                try params([w, outputs])
                s = Shape(time: s.time, channels: outputs)
            case .relu, .gelu:
                break
            case .dropout(let rate):
                guard rate >= 0 && rate < 1 else { throw bad("rate \(rate) must be in [0, 1)") }
            case .layerNorm(let channels, let epsilon):
                try size("channels", channels)
                guard channels == s.channels else { throw bad("normalises \(channels) channels, receives \(s)") }
                guard epsilon > 0 && epsilon.isFinite else { throw bad("epsilon \(epsilon) must be positive") }
                try params([channels, channels])
            case .conv1d(let inputs, let outputs, let kernel, let stride, let dilation, let padding):
                for (f, v) in [("inputs", inputs), ("outputs", outputs), ("kernel", kernel), ("stride", stride), ("dilation", dilation)] {
                    try size(f, v)
                }
                guard padding >= 0, padding <= Limits.inputTime else { throw bad("padding \(padding) must be in 0...\(Limits.inputTime)") }
                guard inputs == s.channels else { throw bad("expects \(inputs) channels, receives \(s)") }
                // Every factor is ≤ 2^28, so these products fit in 64 bits.
                let span = dilation.multipliedReportingOverflow(by: kernel - 1)
                guard !span.overflow else { throw bad("dilation x (kernel - 1) overflows") }
                let reach = s.time + 2 * padding - span.partialValue - 1
                guard reach >= 0 else { throw bad("the kernel (\(kernel), dilation \(dilation)) is longer than the padded input \(s)") }
                let (w, o1) = outputs.multipliedReportingOverflow(by: kernel)
                let (w2, o2) = w.multipliedReportingOverflow(by: inputs)
                guard !o1, !o2 else { throw ModelFileError.limitExceeded(what: "\(name) weight values", value: Int.max, limit: Limits.tensorValues) }
                try params([w2, outputs])
                s = Shape(time: reach / stride + 1, channels: outputs)
                // im2col: [time, kernel · inputs] per window (each factor is bounded, see above).
                let (cols, o3) = s.time.multipliedReportingOverflow(by: kernel)
                let (im2col, o4) = cols.multipliedReportingOverflow(by: inputs)
                guard !o3, !o4, im2col <= Limits.totalActivationValues else {
                    throw ModelFileError.limitExceeded(
                        what: "\(name) im2col values per window", value: o3 || o4 ? Int.max : im2col, limit: Limits.totalActivationValues)
                }
                budget.activations += im2col
            case .flatten:
                s = Shape(time: 1, channels: s.count)
            case .globalAveragePool, .globalMaxPool:
                s = Shape(time: 1, channels: s.channels)
            case .residual(let body, let shortcut):
                guard depth + 1 <= Limits.residualDepth else {
                    throw ModelFileError.limitExceeded(what: "the residual nesting depth", value: depth + 1, limit: Limits.residualDepth)
                }
                let b = try inferShape(body, input: s, path: "\(path)[\(i)].body", depth: depth + 1, budget: &budget)
                let c = try inferShape(shortcut, input: s, path: "\(path)[\(i)].shortcut", depth: depth + 1, budget: &budget)
                guard b == c else { throw bad("the body gives \(b) but the shortcut gives \(c)") }
                s = b
            }
            let (values, o) = s.time.multipliedReportingOverflow(by: s.channels)
            guard !o, values <= Limits.activationValues else {
                throw ModelFileError.limitExceeded(
                    what: "\(name) output values per window", value: o ? Int.max : values, limit: Limits.activationValues)
            }
            budget.activations += values  // ≤ 1024 layers · 2^26: no overflow
            guard budget.activations <= Limits.totalActivationValues else {
                throw ModelFileError.limitExceeded(
                    what: "the activations of the layers up to \(name), per window,", value: budget.activations,
                    limit: Limits.totalActivationValues)
            }
        }
        return s
    }

    /// The per-window output shape of each top-level layer for `input` (for summaries).
    public static func layerOutputShapes(_ layers: [LayerSpec], input: Shape) throws -> [Shape] {
        var budget = ShapeBudget(), shape = input, shapes: [Shape] = []
        for (i, layer) in layers.enumerated() {
            shape = try inferShape([layer], input: shape, path: "layers[\(i)]", depth: 0, budget: &budget)
            shapes.append(shape)
        }
        return shapes
    }

    /// Values in a tensor, with its dtype, rank and length checked.
    static func checkedCount(_ t: ModelHeader.Tensor) throws -> (values: Int, bytes: Int) {
        func bad(_ why: String) -> ModelFileError { .badTensor(name: t.name, reason: why) }
        guard t.dtype == "float32" else { throw bad("dtype '\(t.dtype)' is not float32") }
        guard (1...Limits.tensorRank).contains(t.shape.count) else {
            throw bad("rank \(t.shape.count) is not between 1 and \(Limits.tensorRank)")
        }
        var count = 1
        for d in t.shape {
            guard d >= 1 else { throw bad("shape \(t.shape) has a size below 1") }
            let (p, o) = count.multipliedReportingOverflow(by: d)
            guard !o, p <= Limits.tensorValues else {
                throw ModelFileError.limitExceeded(what: "values in tensor '\(t.name)'", value: o ? Int.max : p, limit: Limits.tensorValues)
            }
            count = p
        }
        guard t.length == count * 4 else { throw bad("length \(t.length) is not 4 x \(count) values of shape \(t.shape)") }
        return (count, count * 4)
    }

    /// The tiling rule (docs/format.md 1.4): tensors in order, each at the next multiple of 64
    /// after the previous one, the data section ending at the last one rounded up to 64.
    static func checkTiling(_ tensors: [ModelHeader.Tensor], dataLength: Int) throws {
        var expected = 0
        for t in tensors {
            let (_, bytes) = try checkedCount(t)
            guard t.offset == expected else {
                let why =
                    t.offset < expected
                    ? "offset \(t.offset) overlaps the previous tensor (expected \(expected))"
                    : "offset \(t.offset) leaves a gap (expected \(expected))"
                throw ModelFileError.badTensor(name: t.name, reason: why)
            }
            guard bytes <= dataLength - expected else {
                throw ModelFileError.badTensor(
                    name: t.name, reason: "bytes \(t.offset)..<\(t.offset + bytes) run past the end of the data section (\(dataLength) bytes)")
            }
            expected = align(expected + bytes)
        }
        guard expected == dataLength else {
            throw ModelFileError.badPreamble("the data section has \(dataLength) bytes but its tensors end at \(expected)")
        }
    }

    /// Step 8: the network of a validated header, its tensors checked against the header's
    /// (names, shapes, layouts, order). The shape pass bounded every size, so building it is
    /// safe; the weights are still zeros.
    static func makeNetwork(_ header: ModelHeader) throws -> Network {
        let network: Network
        do {
            network = try Network(layers: header.layers, input: header.inputShape)
        } catch {
            throw ModelFileError.badHeader("the layers do not form a network: \(error)")
        }
        guard network.tensors.count == header.tensors.count else {
            throw ModelFileError.badHeader("the layers need \(network.tensors.count) tensors, the header lists \(header.tensors.count)")
        }
        for (expected, stored) in zip(network.tensors, header.tensors) {
            guard expected.name == stored.name, expected.shape == stored.shape, expected.layout == stored.layout else {
                throw ModelFileError.badTensor(
                    name: stored.name,
                    reason: "expected '\(expected.name)' \(expected.shape) \(expected.layout) here, found '\(stored.name)' \(stored.shape) \(stored.layout)")
            }
        }
        return network
    }

    /// Reads a model file held in memory and builds its network with the stored weights
    /// (docs/format.md section 2, all steps).
    public static func load(_ bytes: UnsafeRawBufferPointer) throws -> (header: ModelHeader, network: Network) {
        let (header, data) = try decode(bytes)
        let network = try makeNetwork(header)
        for (expected, stored) in zip(network.tensors, header.tensors) {
            let dst = network.parameters + expected.offset
            #if _endian(little)
                UnsafeMutableRawPointer(dst).copyMemory(from: data.baseAddress! + stored.offset, byteCount: stored.length)
            #else
                for i in 0..<expected.count {
                    dst[i] = Float(bitPattern: data.loadUnaligned(fromByteOffset: stored.offset + 4 * i, as: UInt32.self).littleEndian)
                }
            #endif
        }
        return (header, network)
    }

    public static func load(_ bytes: [UInt8]) throws -> (header: ModelHeader, network: Network) {
        try bytes.withUnsafeBytes { try load($0) }
    }

    /// Reads a model file from disk and builds its network. Errors name the file.
    ///
    /// By default the preamble and header are read first and, once they are checked, each
    /// tensor is read straight into the network's parameter arena, the data checksum computed
    /// over it as it arrives: no copy of the file is held. With `memoryMapped` the file is
    /// mapped read-only instead, checked in place and the tensors copied from the mapping
    /// (falling back to reading when mapping fails). Both end with the file closed and the
    /// weights in the network's own 64-byte-aligned arena. Measured in `actiontrain-bench
    /// inference`: reading is the faster of the two for repeated loads (docs/benchmarks.md).
    public static func load(contentsOf path: String, memoryMapped: Bool = false) throws -> (header: ModelHeader, network: Network) {
        do {
            let (fd, size) = try openModelFile(path)
            defer { close(fd) }
            if memoryMapped, let mapped = try withMapping(fd, size, { try load($0) }) { return mapped }
            return try loadReading(fd, size: size)
        } catch let e as ModelFileError {
            if case .inFile = e { throw e }
            throw ModelFileError.inFile(path, e)
        }
    }

    /// Opens a regular file of at most `Limits.fileBytes` bytes; returns its descriptor and size.
    static func openModelFile(_ path: String) throws -> (fd: Int32, size: Int) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            let why = errno == ENOENT ? "no such file; check the path" : String(cString: strerror(errno))
            throw ModelFileError.io("cannot open the model file: \(why)")
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw ModelFileError.io("cannot read the model file: \(why)")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw ModelFileError.io("is not a regular file; pass a model file")
        }
        let size = Int(st.st_size)
        guard size <= Limits.fileBytes else {
            close(fd)
            throw ModelFileError.limitExceeded(what: "the file size", value: size, limit: Limits.fileBytes)
        }
        return (fd, size)
    }

    /// `body` over a read-only mapping of the file, or nil when it cannot be mapped.
    static func withMapping<R>(_ fd: Int32, _ size: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard size > 0 else { return nil }
        #if os(Linux)
            let flags = MAP_PRIVATE | MAP_POPULATE
        #else
            let flags = MAP_PRIVATE
        #endif
        guard let p = mmap(nil, size, PROT_READ, flags, fd, 0), p != MAP_FAILED else { return nil }
        defer { munmap(p, size) }
        return try body(UnsafeRawBufferPointer(start: p, count: size))
    }

    /// Reads exactly `count` bytes at `offset` into `buffer`.
    static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, at offset: Int) throws {
        var done = 0
        while done < count {
            let r = pread(fd, buffer + done, count - done, off_t(offset + done))
            if r < 0 && errno == EINTR { continue }
            guard r > 0 else {
                throw ModelFileError.io("cannot read the model file: \(r < 0 ? String(cString: strerror(errno)) : "it shrank while being read")")
            }
            done += r
        }
    }

    /// The default loader: preamble, header, then the tensors straight into the network.
    static func loadReading(_ fd: Int32, size: Int) throws -> (header: ModelHeader, network: Network) {
        var head = [UInt8](repeating: 0, count: min(size, preambleSize))
        try head.withUnsafeMutableBytes { try readFully(fd, $0.baseAddress!, $0.count, at: 0) }
        let pre = try head.withUnsafeBytes { try readPreamble($0, fileSize: size) }
        // Bounded by the file size and Limits.headerBytes.
        var headerBytes = [UInt8](repeating: 0, count: pre.headerLength)
        try headerBytes.withUnsafeMutableBytes { try readFully(fd, $0.baseAddress!, $0.count, at: preambleSize) }
        let header = try headerBytes.withUnsafeBytes { try readHeader($0, pre) }
        let network = try makeNetwork(header)
        var crc: UInt32 = 0
        var gap = [UInt8](repeating: 0, count: alignment)
        for (expected, stored) in zip(network.tensors, header.tensors) {
            let dst = UnsafeMutableRawPointer(network.parameters + expected.offset)
            try readFully(fd, dst, stored.length, at: pre.dataStart + stored.offset)
            crc = CRC32.checksum(UnsafeRawBufferPointer(start: dst, count: stored.length), continuing: crc)
            let end = stored.offset + stored.length, gapLength = align(end) - end
            if gapLength > 0 {
                try gap.withUnsafeMutableBytes { g in
                    try readFully(fd, g.baseAddress!, gapLength, at: pre.dataStart + end)
                    crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: g.prefix(gapLength)), continuing: crc)
                }
            }
            #if !_endian(little)
                let values = network.parameters + expected.offset
                for i in 0..<expected.count { values[i] = Float(bitPattern: UInt32(littleEndian: values[i].bitPattern)) }
            #endif
        }
        guard crc == pre.dataCRC else { throw ModelFileError.checksumMismatch(section: "data", stored: pre.dataCRC, computed: crc) }
        return (header, network)
    }

    /// Calls `body` with the bytes of a file, mapped or read whole (for tools and benchmarks).
    /// Refuses files over the size limit before reading them. Errors name the file.
    public static func withContents<R>(
        of path: String, memoryMapped: Bool = true, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        do {
            let (fd, size) = try openModelFile(path)
            defer { close(fd) }
            if size == 0 { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
            if memoryMapped, let r = try withMapping(fd, size, body) { return r }
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: alignment)
            defer { buffer.deallocate() }
            try readFully(fd, buffer, size, at: 0)
            return try body(UnsafeRawBufferPointer(start: buffer, count: size))
        } catch let e as ModelFileError {
            if case .inFile = e { throw e }
            throw ModelFileError.inFile(path, e)
        }
    }

    static func align(_ n: Int) -> Int { (n + alignment - 1) / alignment * alignment }

    private static func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
        withUnsafeBytes(of: v.littleEndian) { Array($0) }
    }
}
