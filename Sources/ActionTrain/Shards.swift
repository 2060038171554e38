import ActionRuntime
import Foundation
import PoseCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A shard directory: pre-windowed, preprocessed network inputs in memory-mappable files
/// (`actiontrain convert --to shards`, docs/datasets.md "Shards"), for training on data larger
/// than memory. `manifest.json` lists the shards; each shard holds float32 features
/// `[windows, frames, channels]`, int32 labels and int32 group ids (the source sequence's
/// index in the dataset), behind a small JSON header and followed by a CRC-32.
public struct ShardManifest: Codable, Equatable, Sendable {
    public static let formatName = "actiontrain-shards"
    public static let formatVersion = 1
    public static let fileName = "manifest.json"

    /// `stream`: the windows of the calibration stream (the validation or training sequences
    /// back to back, as a live session cuts them), labelled with the class playing at their
    /// middle, for the model file's event thresholds (Pipelines' `StreamCalibration`).
    public enum Role: String, Codable, Sendable, CaseIterable { case train, validation, stream }

    /// What a model needs for streams besides the `stream` windows (`ModelHeader.Streaming`):
    /// a whole-clip model's clip, and which sequences made the calibration stream.
    public struct Streams: Codable, Equatable, Sendable {
        public var clipFrames: Int?
        public var clipFrameRate: Double?
        /// `validation` or `training`.
        public var sequences: String
        /// What the frame-level calibration needs besides the network (absent in manifests of
        /// earlier versions, whose models then make events from windows).
        public var frames: FrameCalibrationInput?
        public init(clipFrames: Int?, clipFrameRate: Double?, sequences: String, frames: FrameCalibrationInput? = nil) {
            (self.clipFrames, self.clipFrameRate, self.sequences, self.frames) = (clipFrames, clipFrameRate, sequences, frames)
        }
    }

    /// One shard file.
    public struct Entry: Codable, Equatable, Sendable {
        public var file: String
        public var role: Role
        public var windows: Int
        public var bytes: Int
        public var crc32: UInt32

        public init(file: String, role: Role, windows: Int, bytes: Int, crc32: UInt32) {
            (self.file, self.role, self.windows, self.bytes, self.crc32) = (file, role, windows, bytes, crc32)
        }
    }

    public var format = formatName
    public var version = formatVersion
    public var dataset: String
    public var datasetHash: String
    /// The data's recorded frame rate (the model file keeps it).
    public var frameRate: Double?
    public var classes: [String]
    /// The network input the windows were made for.
    public var input: InputSpec
    /// The resolved config of the conversion; fit starts from it.
    public var config: TrainingConfig
    /// The config keys that determined the windows: a fit whose config differs in one is refused.
    public var windowKeys: [String]
    public var shards: [Entry]
    /// Shards and windows per role, as the conversion wrote them (absent in manifests of
    /// earlier versions): a manifest that lost entries (all the validation shards, say) no
    /// longer adds up to them.
    public var totals: Totals?
    /// The calibration stream's description (absent in manifests of earlier versions, whose
    /// models then get no thresholds or clip length).
    public var streams: Streams?
    /// The cross-validation folds a solved linear head chooses its penalty on: each fold's
    /// held-out training sequences, by their index in the dataset (the `groups` of the
    /// windows). Absent in manifests of earlier versions and when the config needs none; a
    /// head then takes the fallback penalty.
    public var folds: [[Int]]?
    /// The training windows' raw poses, for the model file (docs/format.md 3.5; absent in
    /// manifests of earlier versions, whose models then keep none).
    public var poseStatistics: ModelHeader.PoseStatistics?

    /// How many shards and windows a role has.
    public struct Count: Codable, Equatable, Sendable {
        public var shards: Int
        public var windows: Int
        public init(shards: Int, windows: Int) { (self.shards, self.windows) = (shards, windows) }
    }

    public struct Totals: Codable, Equatable, Sendable {
        public var train: Count
        public var validation: Count
        /// Absent in manifests of earlier versions (no stream shards).
        public var stream: Count?
        public init(train: Count, validation: Count, stream: Count? = nil) {
            (self.train, self.validation, self.stream) = (train, validation, stream)
        }
        public subscript(role: Role) -> Count {
            switch role {
            case .train: return train
            case .validation: return validation
            case .stream: return stream ?? Count(shards: 0, windows: 0)
            }
        }
    }

    /// The totals of `shards`.
    public static func totals(of shards: [Entry]) -> Totals {
        func count(_ role: Role) -> Count {
            let e = shards.filter { $0.role == role }
            return Count(shards: e.count, windows: e.reduce(0) { $0 + $1.windows })
        }
        let stream = count(.stream)
        return Totals(train: count(.train), validation: count(.validation), stream: stream.shards > 0 ? stream : nil)
    }

    public init(
        dataset: String, datasetHash: String, frameRate: Double?, classes: [String], input: InputSpec, config: TrainingConfig,
        windowKeys: [String], shards: [Entry] = []
    ) {
        self.dataset = dataset
        self.datasetHash = datasetHash
        self.frameRate = frameRate
        self.classes = classes
        self.input = input
        self.config = config
        self.windowKeys = windowKeys
        self.shards = shards
    }

    public var frames: Int { input.window.frames }
    public var channels: Int { input.channelsPerFrame }

    /// Reads and checks `directory/manifest.json` (not the shards).
    public static func read(_ directory: String) throws -> ShardManifest {
        let path = "\(directory)/\(fileName)"
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ShardError.unreadable(file: path, reason: "no manifest (is this a shard directory?)")
        }
        let m: ShardManifest
        do { m = try JSONDecoder().decode(ShardManifest.self, from: data) } catch {
            throw ShardError.corrupt(file: path, reason: "the manifest does not decode: \(error)")
        }
        guard m.format == formatName, m.version == formatVersion else {
            throw ShardError.corrupt(file: path, reason: "format '\(m.format)' version \(m.version); this build reads \(formatName) version \(formatVersion)")
        }
        // Before any training: a class listed twice would be refused only when the model file
        // is written, at the end.
        var seen = Set<String>()
        if let twice = m.classes.first(where: { !seen.insert($0).inserted }) {
            throw ShardError.corrupt(file: path, reason: "the class '\(twice)' is listed twice; the classes must be distinct")
        }
        guard !m.classes.isEmpty else { throw ShardError.corrupt(file: path, reason: "the manifest lists no class") }
        return m
    }

    /// True when `path` is a directory holding a manifest.
    public static func isShardDirectory(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: "\(path)/\(fileName)")
    }

    /// The name of shard `index` of `role`: `train-00000.shard`, `validation-00003.shard`.
    public static func shardName(_ role: Role, _ index: Int) -> String { "\(role.rawValue)-\(String(format: "%05d", index)).shard" }

    /// True for a name a conversion gives a shard (`<role>-<digits>.shard`).
    public static func isShardName(_ name: String) -> Bool {
        guard name.hasSuffix(".shard") else { return false }
        let stem = name.dropLast(".shard".count)
        for role in Role.allCases where stem.hasPrefix("\(role.rawValue)-") {
            let digits = stem.dropFirst(role.rawValue.count + 1)
            return digits.count >= 5 && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
        }
        return false
    }

    /// Checks the entries against what a conversion writes, before any shard is opened: each
    /// entry names a file in the directory (no path), shard k of its role is named
    /// `<role>-<k>.shard` (so none is missing, repeated or out of order), training shards come
    /// first, the counts add up to `totals`, and no shard file in the directory is left out.
    public func verify(directory: String) throws {
        let path = "\(directory)/\(Self.fileName)"
        func fail(_ why: String) -> ShardError { .manifestMismatch(file: path, reason: why) }
        var next: [Role: Int] = [.train: 0, .validation: 0, .stream: 0]
        var last = Role.train
        for (k, e) in shards.enumerated() {
            guard !e.file.contains("/"), e.file != "..", e.file != "." else {
                throw fail("entry \(k) names '\(e.file)', a path; a shard is a file in the shard directory")
            }
            let expected = Self.shardName(e.role, next[e.role]!)
            guard e.file == expected else {
                throw fail(
                    "entry \(k) is '\(e.file)' where \(e.role.rawValue) shard \(next[e.role]!) should be '\(expected)' (entries missing, repeated or reordered?)")
            }
            let order = Role.allCases
            guard order.firstIndex(of: e.role)! >= order.firstIndex(of: last)! else {
                throw fail("entry \(k) is a \(e.role.rawValue) shard after the \(last.rawValue) shards (training, then validation, then stream)")
            }
            last = e.role
            guard e.windows > 0, e.bytes > 0 else { throw fail("entry \(k) ('\(e.file)') lists \(e.windows) windows in \(e.bytes) bytes") }
            next[e.role]! += 1
        }
        if let totals {
            let found = Self.totals(of: shards)
            for role in Role.allCases where found[role] != totals[role] {
                throw fail(
                    "\(found[role].shards) \(role.rawValue) shards of \(found[role].windows) windows are listed, the conversion wrote \(totals[role].shards) of \(totals[role].windows) (entries removed?)"
                )
            }
        }
        let listed = Set(shards.map(\.file))
        let present = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter(Self.isShardName)
        if let extra = present.sorted().first(where: { !listed.contains($0) }) {
            throw fail("the directory holds \(extra), which the manifest does not list (an entry was removed?)")
        }
    }
}

/// What is wrong with a shard directory; every case names the file.
public enum ShardError: Error, Equatable, CustomStringConvertible {
    case unreadable(file: String, reason: String)
    /// Bad magic, truncated, a header that does not decode.
    case corrupt(file: String, reason: String)
    case checksum(file: String, stored: UInt32, computed: UInt32)
    /// The shard disagrees with what the manifest says of it.
    case manifestMismatch(file: String, reason: String)
    /// The fit config differs from the conversion's in keys that determined the windows.
    case configMismatch(manifest: String, keys: [String])
    /// Augmentation re-cuts windows from raw poses every epoch; shards hold fixed windows.
    case augmentationNeedsPoses
    /// A fit from shards trains one network; an ensemble is fitted from the dataset.
    case ensembleNeedsPoses(members: Int)
    /// A feature that preprocessing cannot give (NaN, infinite, beyond ±`ShardFile.maxFeature`):
    /// the shard holds bad data.
    case badValue(file: String, window: Int, value: Float)
    /// The file was written to while a fit read it.
    case changed(file: String)

    public var description: String {
        switch self {
        case .unreadable(let f, let why): return "\(f): cannot read: \(why)"
        case .corrupt(let f, let why): return "\(f): corrupt shard data: \(why)"
        case .checksum(let f, let stored, let computed):
            return "\(f): CRC-32 mismatch (stored \(String(stored, radix: 16)), computed \(String(computed, radix: 16))): the file is damaged"
        case .manifestMismatch(let f, let why): return "\(f): does not match the manifest: \(why)"
        case .configMismatch(let m, let keys):
            return "\(m): the shards were cut with other values of \(keys.joined(separator: ", ")); convert the data again with this config"
        case .augmentationNeedsPoses:
            return "shards hold fixed preprocessed windows; augmentation (which re-cuts raw poses every epoch) cannot be used with them: set augmentation to none, or fit the dataset itself"
        case .ensembleNeedsPoses(let n):
            return "a fit from shards trains one network, not an ensemble of \(n); set the config's ensemble to 1, or fit the dataset itself"
        case .badValue(let f, let w, let v):
            return "\(f): window \(w) holds the feature \(v), which preprocessing never gives (features are finite and within ±\(ShardFile.maxFeature)): the shard holds bad data; convert the dataset again"
        case .changed(let f):
            return "\(f): the shard was written to while the fit read it; never write into a shard directory a fit reads (convert into a new one)"
        }
    }
}

/// The byte layout of one shard file (docs/datasets.md): magic, header length, JSON header,
/// zero padding to a multiple of 64, features, labels, groups, CRC-32 of everything before it.
public enum ShardFile {
    public static let magic = Array("ATSHARD1".utf8)
    static let alignment = 64
    /// The largest feature magnitude a shard may hold. Features are coordinates (the readers
    /// bound them by ±10⁶) centred, divided by a body scale, or their frame differences, far
    /// below this; a value beyond it, like NaN or infinity, comes from damaged or foreign data
    /// and would overflow the network.
    public static let maxFeature: Float = 1e9

    /// The JSON header of a shard.
    public struct Header: Codable, Equatable, Sendable {
        public var version = ShardManifest.formatVersion
        public var role: ShardManifest.Role
        public var windows: Int
        public var frames: Int
        public var channels: Int
        public var datasetHash: String

        public init(role: ShardManifest.Role, windows: Int, frames: Int, channels: Int, datasetHash: String) {
            (self.role, self.windows, self.frames, self.channels, self.datasetHash) = (role, windows, frames, channels, datasetHash)
        }
    }

    /// Byte offset of the features for a header of `headerBytes` bytes.
    static func dataOffset(headerBytes: Int) -> Int {
        (magic.count + 4 + headerBytes + alignment - 1) / alignment * alignment
    }

    /// The file size for `windows` windows of `values` floats.
    static func size(dataOffset: Int, windows: Int, values: Int) -> Int {
        dataOffset + 4 * windows * values + 8 * windows + 4
    }

    /// The bytes of a shard (little-endian hosts; `features [labels.count, frames · channels]`).
    public static func encode(header: Header, features: ArraySlice<Float>, labels: ArraySlice<Int32>, groups: ArraySlice<Int32>) throws -> [UInt8] {
        precondition(features.count == labels.count * header.frames * header.channels && groups.count == labels.count)
        let json = try JSONEncoder().encode(header)
        let offset = dataOffset(headerBytes: json.count)
        var bytes = magic
        bytes.reserveCapacity(size(dataOffset: offset, windows: labels.count, values: header.frames * header.channels))
        withUnsafeBytes(of: UInt32(json.count).littleEndian) { bytes += $0 }
        bytes += json
        bytes += [UInt8](repeating: 0, count: offset - bytes.count)
        features.withUnsafeBytes { bytes += $0 }
        labels.withUnsafeBytes { bytes += $0 }
        groups.withUnsafeBytes { bytes += $0 }
        let crc = bytes.withUnsafeBytes { CRC32.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { bytes += $0 }
        return bytes
    }
}

/// One open shard file. Opening checks the layout, the header against the manifest entry and
/// the CRC-32 (reading the file once, 16 MiB at a time) and reads the labels; features are
/// read a window at a time with `pread`, which copies from the page cache without mapping
/// anything into the process (docs/distributed.md "Datasets larger than memory" says why
/// not `mmap`).
final class ShardReader {
    let path: String
    let header: ShardFile.Header
    let labels: [Int32]
    /// Each window's source sequence (its index in the dataset).
    let groups: [Int32]
    private let fd: Int32
    private let dataOffset: Int
    private let values: Int
    /// The file as opened (`fstat`): a write into it changes its change time.
    private let identity: Identity

    /// What changes when a file is written to: its size and modification and change times.
    struct Identity: Equatable {
        var size: Int
        var modified: timespec, changed: timespec
        init(_ st: stat) { (size, modified, changed) = (Int(st.st_size), st.st_mtim, st.st_ctim) }
        static func == (a: Identity, b: Identity) -> Bool {
            a.size == b.size && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    init(path: String, entry: ShardManifest.Entry, manifest: ShardManifest) throws {
        self.path = path
        // Never blocks (a FIFO in a shard's place), never follows a link out of the directory.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw ShardError.unreadable(
                file: path, reason: errno == ELOOP ? "it is a symbolic link; a shard is a regular file in the shard directory" : String(cString: strerror(errno)))
        }
        self.fd = fd
        do {
            var st = stat()
            guard fstat(fd, &st) == 0 else { throw ShardError.unreadable(file: path, reason: String(cString: strerror(errno))) }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                throw ShardError.unreadable(file: path, reason: "it is not a regular file (a FIFO, a device or a folder); a shard is a regular file")
            }
            let opened = Identity(st)
            let length = Int(st.st_size)
            guard length == entry.bytes else {
                throw ShardError.manifestMismatch(file: path, reason: "\(length) bytes, the manifest lists \(entry.bytes) (truncated or replaced?)")
            }
            let (header, dataOffset) = try Self.readHeader(fd, length: length, path: path)
            try Self.check(header, path: path, length: length, dataOffset: dataOffset, entry: entry, manifest: manifest)
            try Self.checkCRC(fd, path: path, length: length, stored: entry.crc32) { start, bytes in
                try Self.checkValues(bytes, at: start, header: header, dataOffset: dataOffset, path: path)
            }
            var labels = [Int32](repeating: 0, count: header.windows), groups = labels
            let labelsAt = dataOffset + 4 * header.frames * header.channels * header.windows
            try labels.withUnsafeMutableBytes { try Self.read(fd, $0.baseAddress!, $0.count, at: labelsAt, path: path) }
            try groups.withUnsafeMutableBytes { try Self.read(fd, $0.baseAddress!, $0.count, at: labelsAt + 4 * header.windows, path: path) }
            self.groups = groups
            for (i, y) in labels.enumerated() where !(0..<manifest.classes.count).contains(Int(y)) {
                throw ShardError.corrupt(file: path, reason: "window \(i) has label \(y) for \(manifest.classes.count) classes")
            }
            (self.header, self.dataOffset, values, self.labels) = (header, dataOffset, header.frames * header.channels, labels)
            identity = opened
            guard fstat(fd, &st) == 0, Identity(st) == opened else { throw ShardError.changed(file: path) }
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// Reads `count` bytes at `offset`; a short read is a truncated file.
    private static func read(_ fd: Int32, _ into: UnsafeMutableRawPointer, _ count: Int, at offset: Int, path: String) throws {
        var done = 0
        while done < count {
            let n = pread(fd, into + done, count - done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw n == 0
                    ? ShardError.corrupt(file: path, reason: "ends at byte \(offset + done) (truncated?)")
                    : ShardError.unreadable(file: path, reason: String(cString: strerror(errno)))
            }
            done += n
        }
    }

    private static func readHeader(_ fd: Int32, length: Int, path: String) throws -> (ShardFile.Header, Int) {
        let magic = ShardFile.magic
        guard length >= magic.count + 8 else { throw ShardError.corrupt(file: path, reason: "only \(length) bytes") }
        var start = [UInt8](repeating: 0, count: magic.count + 4)
        try start.withUnsafeMutableBytes { try read(fd, $0.baseAddress!, $0.count, at: 0, path: path) }
        guard Array(start.prefix(magic.count)) == magic else { throw ShardError.corrupt(file: path, reason: "not a shard file (bad magic)") }
        let json = start.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        guard magic.count + 4 + json <= length else { throw ShardError.corrupt(file: path, reason: "the header runs past the end of the file") }
        var bytes = [UInt8](repeating: 0, count: json)
        try bytes.withUnsafeMutableBytes { try read(fd, $0.baseAddress!, json, at: magic.count + 4, path: path) }
        do {
            return (try JSONDecoder().decode(ShardFile.Header.self, from: Data(bytes)), ShardFile.dataOffset(headerBytes: json))
        } catch {
            throw ShardError.corrupt(file: path, reason: "the header does not decode: \(error)")
        }
    }

    private static func check(
        _ header: ShardFile.Header, path: String, length: Int, dataOffset: Int, entry: ShardManifest.Entry, manifest: ShardManifest
    ) throws {
        let expected = ShardFile.size(dataOffset: dataOffset, windows: header.windows, values: header.frames * header.channels)
        guard length == expected else {
            throw ShardError.corrupt(file: path, reason: "\(length) bytes, its header implies \(expected) (truncated?)")
        }
        var differences: [String] = []
        if header.windows != entry.windows { differences.append("\(header.windows) windows, the manifest lists \(entry.windows)") }
        if header.role != entry.role { differences.append("role \(header.role.rawValue), the manifest lists \(entry.role.rawValue)") }
        if header.frames != manifest.frames || header.channels != manifest.channels {
            differences.append("windows of \(header.frames)x\(header.channels), the manifest's are \(manifest.frames)x\(manifest.channels)")
        }
        if header.datasetHash != manifest.datasetHash { differences.append("dataset \(header.datasetHash), the manifest's is \(manifest.datasetHash)") }
        if let first = differences.first { throw ShardError.manifestMismatch(file: path, reason: first) }
    }

    /// Refuses a feature that preprocessing cannot give (`ShardFile.maxFeature`), naming its
    /// window: `bytes` are the file's bytes from offset `start` (a multiple of 4).
    private static func checkValues(_ bytes: UnsafeRawBufferPointer, at start: Int, header: ShardFile.Header, dataOffset: Int, path: String) throws {
        let end = dataOffset + 4 * header.windows * header.frames * header.channels
        let from = max(start, dataOffset), to = min(start + bytes.count, end)
        guard from < to else { return }
        let floats = UnsafeRawBufferPointer(rebasing: bytes[(from - start)..<(to - start)]).bindMemory(to: Float.self)
        guard let bad = floats.firstIndex(where: { !(abs($0) <= ShardFile.maxFeature) }) else { return }
        throw ShardError.badValue(file: path, window: ((from - dataOffset) / 4 + bad) / (header.frames * header.channels), value: floats[bad])
    }

    private static func checkCRC(
        _ fd: Int32, path: String, length: Int, stored expected: UInt32, each: (Int, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var stored: UInt32 = 0
        try withUnsafeMutableBytes(of: &stored) { try read(fd, $0.baseAddress!, 4, at: length - 4, path: path) }
        stored = UInt32(littleEndian: stored)
        guard stored == expected else {
            throw ShardError.manifestMismatch(file: path, reason: "CRC-32 \(String(stored, radix: 16)), the manifest lists \(String(expected, radix: 16))")
        }
        var buffer = [UInt8](repeating: 0, count: min(1 << 24, length))
        var crc: UInt32 = 0
        for start in stride(from: 0, to: length - 4, by: buffer.count) {
            let n = min(buffer.count, length - 4 - start)
            try buffer.withUnsafeMutableBytes {
                try read(fd, $0.baseAddress!, n, at: start, path: path)
                let chunk = UnsafeRawBufferPointer(rebasing: $0[..<n])
                crc = CRC32.checksum(chunk, continuing: crc)
                try each(start, chunk)
            }
        }
        guard crc == stored else { throw ShardError.checksum(file: path, stored: stored, computed: crc) }
    }

    /// Copies window `row`'s features to `into`. The file was checked when opened; this
    /// fails only when it changed under the run (written to, truncated, unreadable).
    func features(_ row: Int, into: UnsafeMutablePointer<Float>) throws {
        try Self.read(fd, into, 4 * values, at: dataOffset + 4 * values * row, path: path)
        var st = stat()
        guard fstat(fd, &st) == 0, Identity(st) == identity else { throw ShardError.changed(file: path) }
    }
}

/// The windows of a shard directory's shards of one role, as a `BatchSource`: each batch is
/// read from the files as it is needed, so resident memory stays at a batch plus the labels
/// (4 bytes a window) whatever the data's size.
public final class ShardBatches: BatchSource {
    private let shards: [ShardReader]
    /// `starts[s]`: the index of shard s's first window.
    private let starts: [Int]
    public let labels: [Int32]
    /// Each window's source sequence (its index in the dataset).
    public let sequences: [Int]
    public let valuesPerWindow: Int
    /// The first read that failed after opening (a shard changed under the run); the windows
    /// it should have filled are zeros. `ShardRun` stops training on it and throws it.
    public private(set) var readError: ShardError?

    /// Opens and checks the shards of `role` listed in the manifest of `directory`.
    public init(directory: String, manifest: ShardManifest, role: ShardManifest.Role) throws {
        shards = try manifest.shards.filter { $0.role == role }.map {
            try ShardReader(path: "\(directory)/\($0.file)", entry: $0, manifest: manifest)
        }
        var starts: [Int] = [], labels: [Int32] = [], sequences: [Int] = []
        for s in shards {
            starts.append(labels.count)
            labels += s.labels
            sequences += s.groups.map(Int.init)
        }
        self.starts = starts
        self.labels = labels
        self.sequences = sequences
        valuesPerWindow = manifest.frames * manifest.channels
    }

    public var count: Int { labels.count }
    public func label(at index: Int) -> Int32 { labels[index] }

    public func fill(
        indices: ArraySlice<Int>, epoch: Int, features: UnsafeMutablePointer<Float>, labels: UnsafeMutablePointer<Int32>
    ) {
        for (k, i) in indices.enumerated() {
            let s = shard(of: i), row = features + k * valuesPerWindow
            do { try shards[s].features(i - starts[s], into: row) } catch {
                readError = readError ?? (error as? ShardError)
                row.update(repeating: 0, count: valuesPerWindow)
            }
            labels[k] = self.labels[i]
        }
    }

    /// Every window in memory (the validation windows, which are evaluated whole).
    public func tensors() -> TensorSet {
        var x = [Float](repeating: 0, count: count * valuesPerWindow)
        var y = [Int32](repeating: 0, count: count)
        x.withUnsafeMutableBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { fill(indices: ArraySlice(0..<count), epoch: 1, features: xp.baseAddress!, labels: $0.baseAddress!) }
        }
        return TensorSet(features: x, labels: y, valuesPerWindow: valuesPerWindow)
    }

    private func shard(of i: Int) -> Int {
        var lo = 0, hi = starts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= i { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }
}

/// What a model file's frame-level event numbers need besides the network (Pipelines'
/// `StreamCalibration`, docs/format.md 3.4): those measured on the training clips' motion, and
/// the calibration stream's windows and frames, whose scores the network then gives.
public struct FrameCalibrationInput: Codable, Equatable, Sendable {
    /// Seconds after a frame at which it is decided.
    public var lookAhead: Double
    /// The calibration stream's frames per second (frames as recorded: the data's, else 30).
    public var frameRate: Double
    /// Motion at or below which a frame is still, and per class (in class order) the hold, lead-in,
    /// lead-out and minimum duration in seconds.
    public var stillBelow: Double
    public var hold: [Double]
    public var leadIn: [Double]
    public var leadOut: [Double]
    public var minimumDuration: [Double]
    /// Each calibration window's first frame and one past its last, in the stream's frames
    /// (the windows of the `stream` shards, in order).
    public var windowStarts: [Int]
    public var windowEnds: [Int]
    /// The stream's frames by class, run by run: `runFrames[i]` frames of class `runClasses[i]`.
    public var runFrames: [Int]
    public var runClasses: [Int32]
    /// The stream's frames moving and still in turn, run by run from a moving run (which may be
    /// empty): a frame is still when its motion (`FrameMotion`) is at most `stillBelow`. Nil: not
    /// measured (every frame moving).
    public var stillRuns: [Int]?

    public init(
        lookAhead: Double, frameRate: Double, stillBelow: Double, hold: [Double], leadIn: [Double], leadOut: [Double], minimumDuration: [Double],
        windowStarts: [Int], windowEnds: [Int], runFrames: [Int], runClasses: [Int32], stillRuns: [Int]? = nil
    ) {
        self.stillRuns = stillRuns
        self.lookAhead = lookAhead
        self.frameRate = frameRate
        self.stillBelow = stillBelow
        self.hold = hold
        self.leadIn = leadIn
        self.leadOut = leadOut
        self.minimumDuration = minimumDuration
        self.windowStarts = windowStarts
        self.windowEnds = windowEnds
        self.runFrames = runFrames
        self.runClasses = runClasses
    }
}
