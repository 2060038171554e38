import Foundation
import PoseCore

/// The JSON header of a model file (see docs/format.md).
public struct ModelHeader: Codable, Hashable, Sendable {
    public struct Tensor: Codable, Hashable, Sendable {
        public var name: String
        public var dtype: String
        public var shape: [Int]
        /// Human-readable axis names, e.g. `"[outputs, inputs]"`.
        public var layout: String
        /// Byte offset from the start of the data section (a multiple of 64).
        public var offset: Int
        /// Byte length (`4 · Π shape`).
        public var length: Int
    }

    public struct Provenance: Codable, Hashable, Sendable {
        public var tool: String
        public var datasetHash: String?
        public var configHash: String?
        public var seed: UInt64?
        /// Final metrics by name (e.g. `validationAccuracy`).
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

    public var format: String
    /// Ordered class labels: logit `i` is `classes[i]`.
    public var classes: [String]
    /// Skeleton, window and preprocessing: how to build the input from poses.
    public var input: InputSpec
    /// Per-window network input `[time, channels]`.
    public var inputShape: Shape
    public var layers: [LayerSpec]
    public var tensors: [Tensor]
    public var provenance: Provenance
}

public enum ActionRuntimeInfo {
    public static let version = "0.1.0"
    public static let tool = "actiontrain \(version)"
}

/// Errors reading a model file. Each names what is wrong.
public enum ModelFileError: Error, Equatable, CustomStringConvertible {
    case notAModelFile(String)
    case unsupportedVersion(major: Int, minor: Int)
    case truncated(expected: Int, got: Int)
    case checksumMismatch(section: String)
    case badHeader(String)
    case badTensor(name: String, reason: String)
    case io(String)

    public var description: String {
        switch self {
        case .notAModelFile(let why):
            return "not an actiontrain model file (\(why)); pass a file written by `actiontrain fit`"
        case .unsupportedVersion(let major, let minor):
            return "model file version \(major).\(minor) is newer than this reader (\(ModelFile.majorVersion).x); upgrade actiontrain"
        case .truncated(let expected, let got):
            return "model file is truncated or has trailing bytes: header says \(expected) bytes, file has \(got)"
        case .checksumMismatch(let section):
            return "model file is damaged: the \(section) checksum does not match"
        case .badHeader(let why):
            return "model file header is invalid: \(why)"
        case .badTensor(let name, let why):
            return "model file tensor '\(name)' is invalid: \(why)"
        case .io(let why):
            return why
        }
    }
}

/// Reads and writes the binary model file: a 64-byte preamble, a JSON header, and
/// 64-byte-aligned little-endian float32 tensors. Byte layout in docs/format.md.
public enum ModelFile {
    public static let magic: [UInt8] = [0x89, 0x41, 0x54, 0x4D, 0x0D, 0x0A, 0x1A, 0x0A]  // \x89 A T M \r \n \x1a \n
    public static let majorVersion = 1
    public static let minorVersion = 0
    public static let preambleSize = 64
    public static let alignment = 64
    /// Upper bounds that keep a hostile file from asking for absurd allocations.
    public static let maxHeaderBytes = 16 << 20
    public static let maxTensorValues = 1 << 31

    /// Serialises a header and the network's parameters. Identical inputs give identical bytes.
    public static func encode(
        classes: [String], input: InputSpec, network: Network, provenance: ModelHeader.Provenance
    ) throws -> [UInt8] {
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
            format: "actiontrain.model", classes: classes, input: input, inputShape: network.inputShape,
            layers: network.specs, tensors: tensors, provenance: provenance)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let headerBytes = Array(try encoder.encode(header))
        let dataStart = align(preambleSize + headerBytes.count)
        let total = dataStart + dataLength

        var out = [UInt8](repeating: 0, count: total)
        for t in zip(tensors, network.tensors) {
            let src = UnsafeBufferPointer(start: network.parameters + t.1.offset, count: t.1.count)
            var pos = dataStart + t.0.offset
            for v in src {
                let bits = v.bitPattern.littleEndian
                withUnsafeBytes(of: bits) { b in for k in 0..<4 { out[pos + k] = b[k] } }
                pos += 4
            }
        }
        out.replaceSubrange(preambleSize..<(preambleSize + headerBytes.count), with: headerBytes)
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

    /// Parses and validates a model file. Every size is checked before it is used.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (header: ModelHeader, data: UnsafeRawBufferPointer) {
        guard bytes.count >= preambleSize else {
            if bytes.count >= 4 && !bytes.starts(with: magic.prefix(4)) {
                throw ModelFileError.notAModelFile("wrong magic bytes")
            }
            throw ModelFileError.truncated(expected: preambleSize, got: bytes.count)
        }
        guard bytes.starts(with: magic) else {
            if bytes.starts(with: magic.prefix(4)) {
                throw ModelFileError.notAModelFile("magic bytes damaged, as by a text-mode transfer")
            }
            throw ModelFileError.notAModelFile("wrong magic bytes")
        }
        func u16(_ o: Int) -> Int { Int(bytes.loadUnaligned(fromByteOffset: o, as: UInt16.self).littleEndian) }
        func u32(_ o: Int) -> UInt32 { bytes.loadUnaligned(fromByteOffset: o, as: UInt32.self).littleEndian }
        func u64(_ o: Int) -> UInt64 { bytes.loadUnaligned(fromByteOffset: o, as: UInt64.self).littleEndian }
        let major = u16(8), minor = u16(10)
        guard major == majorVersion else { throw ModelFileError.unsupportedVersion(major: major, minor: minor) }
        let headerLength64 = u64(16), dataLength64 = u64(24), total64 = u64(40)
        guard total64 == UInt64(bytes.count) else {
            throw ModelFileError.truncated(expected: Int(clamping: total64), got: bytes.count)
        }
        guard headerLength64 > 0, headerLength64 <= UInt64(maxHeaderBytes) else {
            throw ModelFileError.badHeader("header length \(headerLength64) is out of range")
        }
        let headerLength = Int(headerLength64)
        let dataStart = align(preambleSize + headerLength)
        guard dataLength64 <= UInt64(bytes.count), dataStart + Int(dataLength64) == bytes.count else {
            throw ModelFileError.badHeader("section lengths (header \(headerLength), data \(dataLength64)) do not add up to the file size \(bytes.count)")
        }
        let dataLength = Int(dataLength64)
        let headerBytes = UnsafeRawBufferPointer(rebasing: bytes[preambleSize..<(preambleSize + headerLength)])
        guard CRC32.checksum(headerBytes) == u32(32) else { throw ModelFileError.checksumMismatch(section: "header") }
        let data = UnsafeRawBufferPointer(rebasing: bytes[dataStart..<(dataStart + dataLength)])
        guard CRC32.checksum(data) == u32(36) else { throw ModelFileError.checksumMismatch(section: "data") }

        let header: ModelHeader
        do {
            header = try JSONDecoder().decode(ModelHeader.self, from: Data(headerBytes))
        } catch {
            throw ModelFileError.badHeader("JSON does not decode: \(error)")
        }
        try validate(header, dataLength: dataLength)
        return (header, data)
    }

    /// Checks the header's tensors: offsets aligned, in range, non-overlapping, and shapes
    /// that do not overflow.
    static func validate(_ header: ModelHeader, dataLength: Int) throws {
        guard header.format == "actiontrain.model" else { throw ModelFileError.badHeader("format is '\(header.format)'") }
        guard !header.classes.isEmpty else { throw ModelFileError.badHeader("no classes") }
        var end = 0
        for t in header.tensors {
            guard t.dtype == "float32" else { throw ModelFileError.badTensor(name: t.name, reason: "dtype \(t.dtype) is not float32") }
            var count = 1
            for d in t.shape {
                guard d > 0 else { throw ModelFileError.badTensor(name: t.name, reason: "shape \(t.shape) has a non-positive size") }
                let (p, o) = count.multipliedReportingOverflow(by: d)
                guard !o, p <= maxTensorValues else { throw ModelFileError.badTensor(name: t.name, reason: "shape \(t.shape) is too large") }
                count = p
            }
            guard t.length == count * 4 else {
                throw ModelFileError.badTensor(name: t.name, reason: "length \(t.length) does not match shape \(t.shape)")
            }
            guard t.offset % alignment == 0 else { throw ModelFileError.badTensor(name: t.name, reason: "offset \(t.offset) is not 64-byte aligned") }
            guard t.offset >= end else { throw ModelFileError.badTensor(name: t.name, reason: "it overlaps the previous tensor") }
            let (e, o) = t.offset.addingReportingOverflow(t.length)
            guard !o, e <= dataLength else { throw ModelFileError.badTensor(name: t.name, reason: "it runs past the end of the data") }
            end = e
        }
    }

    /// Reads a model file and builds its network with the stored weights.
    public static func load(_ bytes: [UInt8]) throws -> (header: ModelHeader, network: Network) {
        try bytes.withUnsafeBytes { raw in
            let (header, data) = try decode(raw)
            let network: Network
            do {
                network = try Network(layers: header.layers, input: header.inputShape)
            } catch let e as ModelError {
                throw ModelFileError.badHeader("the layers do not form a network: \(e)")
            }
            guard network.outputShape.channels == header.classes.count else {
                throw ModelFileError.badHeader("the network gives \(network.outputShape.channels) outputs for \(header.classes.count) classes")
            }
            guard network.tensors.count == header.tensors.count else {
                throw ModelFileError.badHeader("the layers need \(network.tensors.count) tensors, the header lists \(header.tensors.count)")
            }
            for (expected, stored) in zip(network.tensors, header.tensors) {
                guard expected.name == stored.name, expected.shape == stored.shape else {
                    throw ModelFileError.badTensor(
                        name: stored.name, reason: "expected '\(expected.name)' with shape \(expected.shape), found shape \(stored.shape)")
                }
                let dst = network.parameters + expected.offset
                for i in 0..<expected.count {
                    dst[i] = Float(bitPattern: data.loadUnaligned(fromByteOffset: stored.offset + 4 * i, as: UInt32.self).littleEndian)
                }
            }
            return (header, network)
        }
    }

    static func align(_ n: Int) -> Int { (n + alignment - 1) / alignment * alignment }

    private static func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
        withUnsafeBytes(of: v.littleEndian) { Array($0) }
    }
}
