import ActionRuntime
import Foundation
import PoseCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a run stands: the position inside the epoch loop and everything the trainer keeps
/// between epochs except the large vectors (which `TrainerState` carries). JSON inside the
/// checkpoint header.
public struct TrainingProgress: Codable, Equatable, Sendable {
    /// The epoch in progress or next to run (1-based).
    public var epoch: Int = 1
    /// Batches of `epoch` already trained.
    public var batch: Int = 0
    /// Optimiser steps taken over the whole run (indexes the learning-rate schedule).
    public var globalStep: Int = 0
    /// Partial sums of `epoch` so far: summed batch loss × batch size, correct predictions,
    /// windows seen, and wall-clock seconds.
    public var lossSum: Double = 0
    public var correct: Int = 0
    public var seen: Int = 0
    public var seconds: Double = 0
    /// State of the dropout random stream inside `epoch` (nil at an epoch boundary: the
    /// stream is then derived from the seed and the epoch).
    public var dropoutState: UInt64? = nil
    /// One record per finished epoch.
    public var records: [EpochRecord] = []
    /// Best value of the monitored metric so far, and its epoch.
    public var bestMetric: Double? = nil
    public var bestEpoch: Int? = nil
    public var epochsWithoutImprovement: Int = 0
    /// Set when training ended early because `monitor` stopped improving.
    public var stoppedEarly: Bool = false

    public init() {}
}

/// Everything `Trainer` needs to continue a run bit-identically.
public struct TrainerState: Equatable, Sendable {
    public var progress: TrainingProgress
    public var parameters: [Float]
    public var optimizer: OptimizerState
    /// Parameters of the best validation epoch so far (kept-best model), if any.
    public var bestParameters: [Float]?
    /// The running average of the parameters (`averageEpochs`), if any.
    public var averagedParameters: [Float]? = nil
}

/// A checkpoint file (`checkpoint.atc` in the run folder): the resolved config, the trainer's
/// state and caller metadata (e.g. the dataset path and hash).
///
/// Byte layout, all integers little-endian:
///
///     0   8  magic  89 41 54 43 0D 0A 1A 0A  ("\x89ATC\r\n\x1a\n")
///     8   4  format version (1)
///     12  4  CRC-32 (IEEE) of every byte from offset 24 to the end
///     16  8  header length H in bytes
///     24  H  header: JSON (UTF-8) — config, progress, metadata, and the list of arrays
///     24+H   the arrays in header order, float32, no padding
///
/// The file size must be exactly 24 + H + 4·Σ counts; a torn or altered file fails the length
/// or checksum test and is rejected with a `CheckpointError` before anything is used.
public struct Checkpoint: Equatable, Sendable {
    public var config: TrainingConfig
    public var state: TrainerState
    public var metadata: [String: String]

    public init(config: TrainingConfig, state: TrainerState, metadata: [String: String] = [:]) {
        self.config = config
        self.state = state
        self.metadata = metadata
    }

    public static let magic: [UInt8] = [0x89, 0x41, 0x54, 0x43, 0x0D, 0x0A, 0x1A, 0x0A]
    public static let version: UInt32 = 1
    static let preambleSize = 24
    static let maxHeaderBytes = 64 << 20

    struct ArrayInfo: Codable, Equatable {
        var name: String
        var count: Int
    }

    struct Header: Codable {
        var format: String
        var tool: String
        var config: TrainingConfig
        var progress: TrainingProgress
        var optimizer: String
        var optimizerStep: Int
        var metadata: [String: String]
        var arrays: [ArrayInfo]
    }

    /// The file's bytes. Identical checkpoints give identical bytes.
    public func encode() throws -> [UInt8] {
        var arrays: [(String, [Float])] = [("parameters", state.parameters)]
        for b in state.optimizer.buffers { arrays.append(("optimizer.\(b.name)", b.values)) }
        if let best = state.bestParameters { arrays.append(("bestParameters", best)) }
        if let average = state.averagedParameters { arrays.append(("averagedParameters", average)) }
        let header = Header(
            format: "actiontrain.checkpoint", tool: ActionRuntimeInfo.tool, config: config, progress: state.progress,
            optimizer: state.optimizer.name, optimizerStep: state.optimizer.step, metadata: metadata,
            arrays: arrays.map { ArrayInfo(name: $0.0, count: $0.1.count) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = Array(try encoder.encode(header))
        var out = [UInt8]()
        out.reserveCapacity(Checkpoint.preambleSize + json.count + 4 * arrays.reduce(0) { $0 + $1.1.count })
        out += Checkpoint.magic
        out += le(Checkpoint.version)
        out += [0, 0, 0, 0]  // CRC, filled below
        out += le(UInt64(json.count))
        out += json
        for (_, values) in arrays { appendLittleEndian(values, to: &out) }
        let crc = out.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[Checkpoint.preambleSize...])) }
        out.replaceSubrange(12..<16, with: le(crc))
        return out
    }

    /// Parses and verifies a checkpoint; `source` names it in errors.
    public static func decode(_ bytes: [UInt8], source: String) throws -> Checkpoint {
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        guard bytes.count >= preambleSize, Array(bytes[0..<8]) == magic else {
            throw CheckpointError.notACheckpoint(source)
        }
        let version = u32(8)
        guard version == Checkpoint.version else { throw CheckpointError.unsupportedVersion(source, version) }
        let headerLength64 = u64(16)
        guard headerLength64 <= UInt64(min(maxHeaderBytes, bytes.count - preambleSize)) else {
            throw CheckpointError.truncated(source, expected: nil, got: bytes.count)
        }
        let headerLength = Int(headerLength64)
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[preambleSize...])) }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(bytes[preambleSize..<(preambleSize + headerLength)]))
        } catch {
            // A torn write usually lands here or below; the checksum says which it is.
            if crc != u32(12) { throw CheckpointError.checksumMismatch(source) }
            throw CheckpointError.badHeader(source, "\(error)")
        }
        var expected = preambleSize + headerLength
        for a in header.arrays {
            guard a.count >= 0, a.count <= (Int.max - expected) / 4 else {
                throw CheckpointError.badHeader(source, "array '\(a.name)' has an invalid length \(a.count)")
            }
            expected += 4 * a.count
        }
        guard expected == bytes.count else { throw CheckpointError.truncated(source, expected: expected, got: bytes.count) }
        guard crc == u32(12) else { throw CheckpointError.checksumMismatch(source) }
        guard header.format == "actiontrain.checkpoint" else {
            throw CheckpointError.badHeader(source, "format is '\(header.format)'")
        }
        var arrays: [String: [Float]] = [:]
        var order: [String] = []
        var offset = preambleSize + headerLength
        for a in header.arrays {
            let values = readLittleEndian(bytes, at: offset, count: a.count)
            offset += 4 * a.count
            arrays[a.name] = values
            order.append(a.name)
        }
        guard let parameters = arrays["parameters"] else { throw CheckpointError.badHeader(source, "no parameters") }
        let buffers = order.filter { $0.hasPrefix("optimizer.") }.map { (name: String($0.dropFirst(10)), values: arrays[$0]!) }
        let state = TrainerState(
            progress: header.progress, parameters: parameters,
            optimizer: OptimizerState(name: header.optimizer, step: header.optimizerStep, buffers: buffers),
            bestParameters: arrays["bestParameters"], averagedParameters: arrays["averagedParameters"])
        return Checkpoint(config: header.config, state: state, metadata: header.metadata)
    }

    /// Reads and verifies `path`.
    public static func read(_ path: String) throws -> Checkpoint {
        guard let data = FileManager.default.contents(atPath: path) else { throw CheckpointError.unreadable(path) }
        return try decode([UInt8](data), source: path)
    }

    /// Writes `path` atomically (`AtomicWrite`): a crash at any moment leaves either the
    /// previous checkpoint or the new one, never a mix.
    public func write(to path: String) throws {
        try Checkpoint.writeAtomically(try encode(), to: path)
    }

    public static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        do {
            try AtomicWrite.write(bytes, to: path)
        } catch let e as AtomicWrite.WriteError {
            throw CheckpointError.io(path, e.reason)
        }
    }
}

/// Float32 values as little-endian bytes (a plain copy on little-endian machines).
func appendLittleEndian(_ values: [Float], to out: inout [UInt8]) {
    #if _endian(little)
        values.withUnsafeBytes { out.append(contentsOf: $0) }
    #else
        for v in values { out += le(v.bitPattern) }
    #endif
}

func readLittleEndian(_ bytes: [UInt8], at offset: Int, count: Int) -> [Float] {
    var values = [Float](repeating: 0, count: count)
    bytes.withUnsafeBytes { raw in
        values.withUnsafeMutableBytes { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + 4 * count)]))
        }
    }
    #if _endian(big)
        for i in values.indices { values[i] = Float(bitPattern: UInt32(littleEndian: values[i].bitPattern)) }
    #endif
    return values
}

private func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }

/// A checkpoint that cannot be used, with the file and what is wrong.
public enum CheckpointError: Error, Equatable, CustomStringConvertible {
    case unreadable(String)
    case notACheckpoint(String)
    case unsupportedVersion(String, UInt32)
    /// The file is shorter or longer than its header says (a torn write): expected bytes if known.
    case truncated(String, expected: Int?, got: Int)
    case checksumMismatch(String)
    case badHeader(String, String)
    case io(String, String)

    public var description: String {
        switch self {
        case .unreadable(let p): return "\(p): cannot read the checkpoint; check the path"
        case .notACheckpoint(let p): return "\(p): not an actiontrain checkpoint"
        case .unsupportedVersion(let p, let v):
            return "\(p): checkpoint version \(v) is not supported (this build reads version \(Checkpoint.version))"
        case .truncated(let p, let expected, let got):
            let e = expected.map { "\($0) bytes expected, " } ?? ""
            return "\(p): the checkpoint is truncated or torn (\(e)\(got) found); it cannot be resumed"
        case .checksumMismatch(let p): return "\(p): the checkpoint is damaged (checksum mismatch); it cannot be resumed"
        case .badHeader(let p, let why): return "\(p): the checkpoint header is invalid: \(why)"
        case .io(let p, let why): return "\(p): cannot write the checkpoint: \(why)"
        }
    }
}
