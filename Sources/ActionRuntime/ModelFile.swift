import Foundation
import PoseCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads and writes the binary model file: a 64-byte preamble, a space-padded JSON header,
/// and 64-byte-aligned little-endian float32 tensors that tile the data section.
/// The byte layout and every rule are in docs/format.md.
public enum ModelFile {
    public static let magic: [UInt8] = [0x89, 0x41, 0x54, 0x4D, 0x0D, 0x0A, 0x1A, 0x0A]  // \x89 A T M \r \n \x1a \n
    public static let majorVersion = 1
    public static let minorVersion = 8
    public static let formatName = "actiontrain.model"
    public static let preambleSize = 64
    public static let alignment = 64

    /// The reader's limits (docs/format.md 2.1): a hostile file cannot make it allocate more.
    public enum Limits {
        public static let fileBytes = 1 << 31
        public static let headerBytes = 16 << 20
        public static let jsonDepth = 64
        public static let layers = 1024
        /// Layer lists (`residual`, `averageProbabilities`, `flipAverage`) nested in each other.
        public static let nestingDepth = 8
        public static let tensors = 4096
        public static let tensorRank = 4
        public static let tensorValues = 1 << 28
        public static let inputTime = InputSpec.maxFrames
        public static let inputChannels = 1 << 20
        public static let activationValues = 1 << 24
        /// Activations of all layers together, per window: what a forward pass allocates.
        public static let totalActivationValues = 1 << 26
        public static let classes = 1 << 16
        public static let joints = 1 << 16
        /// `layerNorm`'s ε (float32).
        public static let layerNormEpsilon: ClosedRange<Float> = 1e-12...1
    }

    // MARK: - Writing

    /// Serialises a model: header, the layers' data (format 1.8: `standardize`'s statistics,
    /// `graphConv`'s adjacency; `headerForm`) and the network's parameters. Identical inputs give identical bytes
    /// (sorted keys, no time stamps). Refuses NaN or infinite weights, which no reader accepts.
    public static func encode(
        classes: [String], input: InputSpec, network: Network, provenance: ModelHeader.Provenance,
        trainingFrameRate: Double? = nil, streaming: ModelHeader.Streaming? = nil, poseStatistics: ModelHeader.PoseStatistics? = nil,
        calibration: ModelHeader.Calibration? = nil
    ) throws -> [UInt8] {
        guard !classes.isEmpty, Set(classes).count == classes.count else {
            throw ModelFileError.cannotEncode("the class labels must be non-empty and distinct, got \(classes)")
        }
        guard network.classCount == classes.count else {
            throw ModelFileError.cannotEncode("the network has \(network.classCount) outputs for \(classes.count) classes")
        }
        // The layers' data (format 1.8: standardize's statistics, graphConv's adjacency) first,
        // then the parameters.
        let (layers, layerData) = try headerForm(network.specs)
        let entries = layerData.map(\.tensor) + network.tensors.map { ParameterShape($0.name, $0.shape, layout: $0.layout) }
        var tensors: [ModelHeader.Tensor] = []
        var offset = 0
        for e in entries {
            let length = e.shape.reduce(4, *)
            tensors.append(ModelHeader.Tensor(name: e.name, dtype: "float32", shape: e.shape, layout: e.layout, offset: offset, length: length))
            offset = align(offset + length)
        }
        let dataLength = offset
        let header = ModelHeader(
            format: formatName, classes: classes,
            coordinateSystem: .init(units: input.skeleton.units), input: input, inputShape: network.inputShape,
            trainingFrameRate: trainingFrameRate, layers: layers, tensors: tensors, provenance: provenance, streaming: streaming,
            poseStatistics: poseStatistics, calibration: calibration)
        do {
            try validate(header)  // what a reader would refuse is not written
        } catch let e as ModelFileError {
            throw ModelFileError.cannotEncode("a reader would refuse it: \(e)")
        }
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
            func write(_ src: UnsafePointer<Float>, _ stored: ModelHeader.Tensor) {
                let dst = raw.baseAddress! + dataStart + stored.offset
                #if _endian(little)
                    dst.copyMemory(from: src, byteCount: stored.length)
                #else
                    for i in 0..<(stored.length / 4) { dst.storeBytes(of: src[i].bitPattern.littleEndian, toByteOffset: 4 * i, as: UInt32.self) }
                #endif
            }
            for (stored, d) in zip(tensors, layerData) { d.values.withUnsafeBufferPointer { write($0.baseAddress!, stored) } }
            for (stored, info) in zip(tensors.dropFirst(layerData.count), network.tensors) { write(network.parameters + info.offset, stored) }
        }
        out.replaceSubrange(preambleSize..<dataStart, with: headerBytes)
        let pass = out.withUnsafeBytes { BackgroundChecksum(UnsafeRawBufferPointer(rebasing: $0[dataStart..<total])).finish() }
        if let offset = pass.firstNonFinite {
            let e = out.withUnsafeBytes { nonFiniteError(tensors, data: UnsafeRawBufferPointer(rebasing: $0[dataStart..<total]), at: offset) }
            guard case .nonFiniteValues(let name, let count, let index, let first) = e else { throw e }
            throw ModelFileError.cannotEncode(
                "tensor '\(name)' holds \(count) NaN or infinite value\(count == 1 ? "" : "s") (the first, \(first), at \(index)); "
                    + "weights must be finite: the training diverged, lower the learning rate")
        }
        let dataCRC = pass.crc
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

    /// True when `path` is meant as a model file: its extension is `.atm` (any case), or it
    /// starts with the first four bytes of the magic (`\x89ATM`), however damaged further on.
    /// Tools then report what is wrong with it as a model file (empty, wrong magic, truncated,
    /// ...) instead of trying it as another format.
    public static func looksLikeModelFile(path: String) -> Bool {
        if URL(fileURLWithPath: path).pathExtension.lowercased() == "atm" { return true }
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 4)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, 4, 0) }
        return n == 4 && head == Array(magic.prefix(4))
    }

    /// Steps 1-4: magic, version, total size and section lengths, for a file of `fileSize`
    /// bytes that starts with `head` (its first 64 bytes, or all of a shorter file).
    static func readPreamble(_ head: UnsafeRawBufferPointer, fileSize n: Int) throws -> Preamble {
        // 1. Magic: the first min(n, 8) bytes must be those of the magic.
        guard n > 0 else { throw ModelFileError.notAModelFile("the file is empty") }
        let m = min(head.count, magic.count)
        if !head.prefix(m).elementsEqual(magic.prefix(m)) {
            if m >= 4 && head.prefix(4).elementsEqual(magic.prefix(4)) {
                throw ModelFileError.notAModelFile("the magic bytes are damaged, as by a text-mode transfer")
            }
            throw ModelFileError.notAModelFile(wrongMagic(Array(head.prefix(m))))
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

    /// What a file that does not start with the magic starts with, for the error message:
    /// its first bytes in hex, and what they look like when that is recognisable.
    static func wrongMagic(_ head: [UInt8]) -> String {
        let hex = head.map { String(format: "%02X", $0) }.joined(separator: " ")
        let expected = magic.map { String(format: "%02X", $0) }.joined(separator: " ")
        func starts(_ prefix: [UInt8]) -> Bool { head.starts(with: prefix) }
        let text = head.drop(while: { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) })
        var guess = ""
        if starts([0x50, 0x4B, 0x03, 0x04]) {
            guess = ", a zip archive (a NumPy .npz?)"
        } else if starts([0x93] + Array("NUMPY".utf8)) {
            guess = ", a NumPy .npy array"
        } else if starts([0x89] + Array("PNG".utf8)) {
            guess = ", a PNG image"
        } else if let c = text.first, c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
            guess = ", JSON text (a dataset, a report or a config?)"
        } else if !head.isEmpty && head.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            guess = ", plain text"
        }
        return "wrong magic bytes: the file starts with \(hex)\(guess); a model file starts with \(expected)"
    }

    /// A header that passed steps 6 and 7, and how many of its tensors, the first ones, are the
    /// layers' data (format 1.8) rather than parameters.
    struct CheckedHeader {
        var header: ModelHeader
        var dataTensors: Int
        var layerData: ArraySlice<ModelHeader.Tensor> { header.tensors.prefix(dataTensors) }
        var parameters: ArraySlice<ModelHeader.Tensor> { header.tensors.dropFirst(dataTensors) }

        /// The header with its layers described by their data tensors, `values` reading one.
        func described(_ values: (ModelHeader.Tensor) throws -> [Float]) throws -> CheckedHeader {
            var out = self
            out.header.layers = try ModelFile.described(header.layers, byData: layerData, values: values)
            return out
        }
    }

    /// Steps 5 (header checksum), 6 and 7: the header JSON, its semantics and the tensor table.
    static func readHeader(_ headerBytes: UnsafeRawBufferPointer, _ pre: Preamble) throws -> CheckedHeader {
        let crc = CRC32.checksum(headerBytes)
        guard crc == pre.headerCRC else { throw ModelFileError.checksumMismatch(section: "header", stored: pre.headerCRC, computed: crc) }
        return try parseHeader(headerBytes, pre)
    }

    /// Steps 6 and 7 (the header's checksum is checked).
    static func parseHeader(_ headerBytes: UnsafeRawBufferPointer, _ pre: Preamble) throws -> CheckedHeader {
        let header = try decodeHeader(headerBytes)
        let dataTensors = try validate(header)
        try checkTiling(header.tensors, dataLength: pre.dataLength)
        return CheckedHeader(header: header, dataTensors: dataTensors)
    }

    /// Checks the preamble, checksums, header, tensor table and values (docs/format.md
    /// section 2, steps 1-10) and returns the header, its layers described by their data
    /// tensors (format 1.8), and the data section (a view into `bytes`). Every size is checked
    /// before it is used; nothing is allocated from a size in the file. The data CRC and the
    /// finiteness scan are one pass, on two threads for large files (`BackgroundChecksum`).
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (header: ModelHeader, data: UnsafeRawBufferPointer) {
        let (checked, data) = try decodeChecked(bytes)
        return (checked.header, data)
    }

    /// `decode`, with the count of data tensors.
    static func decodeChecked(_ bytes: UnsafeRawBufferPointer) throws -> (checked: CheckedHeader, data: UnsafeRawBufferPointer) {
        let pre = try readPreamble(UnsafeRawBufferPointer(rebasing: bytes.prefix(preambleSize)), fileSize: bytes.count)
        let headerBytes = UnsafeRawBufferPointer(rebasing: bytes[preambleSize..<pre.dataStart])
        let headerCRC = CRC32.checksum(headerBytes)
        guard headerCRC == pre.headerCRC else {
            throw ModelFileError.checksumMismatch(section: "header", stored: pre.headerCRC, computed: headerCRC)
        }
        let data = UnsafeRawBufferPointer(rebasing: bytes[pre.dataStart...])
        let pass = BackgroundChecksum(data).finish()
        guard pass.crc == pre.dataCRC else {
            throw ModelFileError.checksumMismatch(section: "data", stored: pre.dataCRC, computed: pass.crc)
        }
        let checked = try readHeader(headerBytes, pre)
        try checkValues(checked.header.tensors, data: data, firstNonFinite: pass.firstNonFinite)
        return (try checked.described { floats($0, in: data) }, data)
    }

    /// Step 11: the network of a validated header whose layers are described by their data
    /// tensors, its tensors checked against the header's parameter tensors (names, shapes,
    /// layouts, order). The shape pass bounded every size, so building it is safe; the weights
    /// are still zeros.
    static func makeNetwork(_ checked: CheckedHeader, storage: ParameterStorage? = nil) throws -> Network {
        let header = checked.header, parameters = checked.parameters
        let network: Network
        do {
            network = try Network(layers: header.layers, input: header.inputShape, storage: storage)
        } catch {
            throw ModelFileError.badHeader("the layers do not form a network: \(error)")
        }
        guard network.tensors.count == parameters.count else {
            throw ModelFileError.badHeader("the layers need \(network.tensors.count) parameter tensors, the header lists \(parameters.count)")
        }
        for (expected, stored) in zip(network.tensors, parameters) {
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
        let (checked, data) = try decodeChecked(bytes)
        return (checked.header, try makeNetwork(checked, copying: data))
    }

    /// A new network holding a copy of the weights in `data` (a checked data section).
    static func makeNetwork(_ checked: CheckedHeader, copying data: UnsafeRawBufferPointer) throws -> Network {
        let network = try makeNetwork(checked)
        for (expected, stored) in zip(network.tensors, checked.parameters) {
            let dst = network.parameters + expected.offset
            #if _endian(little)
                UnsafeMutableRawPointer(dst).copyMemory(from: data.baseAddress! + stored.offset, byteCount: stored.length)
            #else
                for i in 0..<expected.count {
                    dst[i] = Float(bitPattern: data.loadUnaligned(fromByteOffset: stored.offset + 4 * i, as: UInt32.self).littleEndian)
                }
            #endif
        }
        return network
    }

    public static func load(_ bytes: [UInt8]) throws -> (header: ModelHeader, network: Network) {
        try bytes.withUnsafeBytes { try load($0) }
    }

    /// Reads a model file from disk and builds its network. Errors name the file. Both ways
    /// make every check of docs/format.md section 2 and report the same errors.
    ///
    /// By default the preamble and header are read first and, once they are checked, each
    /// tensor is read straight into the network's own parameter arena, the data checksum
    /// computed over it as it arrives: the network does not depend on the file afterwards.
    ///
    /// With `memoryMapped` the file is mapped copy-on-write (`MAP_PRIVATE`) and checked in
    /// place, the data checksum on a helper thread while the header is checked, and the
    /// network uses the mapped tensors as its parameters when they are laid out as its arena
    /// (no padding between tensors: every one but the last a multiple of 16 values, as in the
    /// reference models); otherwise they are copied. Writes through `network.parameters` then
    /// change private copies of the pages, never the file; the mapping lives as long as the
    /// network. No arena is allocated and zero-filled, which makes this the fast start (about
    /// 0.6 ms for the 2.8 MB reference MLP in a new process, against 2.2 ms; docs/benchmarks.md),
    /// but the file must not be modified in place while the model is loaded (truncating it
    /// makes the next use of the weights fault with SIGBUS, rewriting it changes them): replace
    /// model files by renaming a new file over them, as `actiontrain fit` does. Falls back to
    /// reading when the file cannot be mapped.
    public static func load(contentsOf path: String, memoryMapped: Bool = false) throws -> (header: ModelHeader, network: Network) {
        do {
            let (fd, size) = try openModelFile(path)
            defer { close(fd) }
            if memoryMapped, let mapped = try loadMapped(fd, size: size) { return mapped }
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

    /// A model file mapped copy-on-write (`MAP_PRIVATE`): once checked, its data section can
    /// serve as a network's parameter arena (`ParameterStorage`). Writes through the network
    /// change private copies of the pages, never the file. Unmapped when released.
    final class MappedFile: ParameterStorage {
        let base: UnsafeMutableRawPointer
        let size: Int
        /// Where the data section starts, once the preamble is checked.
        var dataStart = 0

        /// Maps `size` bytes of `fd` readable and writable, or nil. Pages are faulted in as the
        /// data checksum reads them (on both of its threads); `MAP_POPULATE` measured slower,
        /// and on a writable private mapping it would copy every page.
        init?(_ fd: Int32, size: Int) {
            guard size > 0, let p = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0), p != MAP_FAILED else { return nil }
            base = p
            self.size = size
        }

        deinit { munmap(base, size) }

        var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: size) }

        var values: UnsafeMutablePointer<Float> { (base + dataStart).assumingMemoryBound(to: Float.self) }
        var count: Int { (size - dataStart) / 4 }
    }

    /// The `memoryMapped` loader: the file is mapped and checked in place (docs/format.md
    /// section 2, all steps), then the network is bound to the mapped tensors when they are
    /// laid out as its arena (every tensor but the last a multiple of 64 bytes long, so no
    /// padding between them), or given a copy of them otherwise. Nil when mapping fails.
    ///
    /// The data checksum and the finiteness scan run on a helper thread while this one checks
    /// the header and builds the network (`BackgroundChecksum`); errors keep `load`'s order:
    /// header checksum, data checksum, the header's contents, the values, then the network.
    static func loadMapped(_ fd: Int32, size: Int) throws -> (header: ModelHeader, network: Network)? {
        guard let file = MappedFile(fd, size: size) else { return nil }
        let bytes = file.bytes
        let pre = try readPreamble(UnsafeRawBufferPointer(rebasing: bytes.prefix(preambleSize)), fileSize: size)
        let headerBytes = UnsafeRawBufferPointer(rebasing: bytes[preambleSize..<pre.dataStart])
        let data = UnsafeRawBufferPointer(rebasing: bytes[pre.dataStart...])
        let checksum = BackgroundChecksum(data)
        let headerCRC = CRC32.checksum(headerBytes)
        guard headerCRC == pre.headerCRC else {
            checksum.cancel()
            throw ModelFileError.checksumMismatch(section: "header", stored: pre.headerCRC, computed: headerCRC)
        }
        // The header, its layers described by their data (whose values are checked below, with
        // the weights'), and the network bound in place (its errors held until then).
        let parsed = Result { () throws -> (CheckedHeader, Result<Network?, Error>) in
            let checked = try parseHeader(headerBytes, pre).described { floats($0, in: data) }
            #if _endian(little)
                let parameters = checked.parameters
                if isPacked(parameters) {
                    let start = parameters.first?.offset ?? 0
                    file.dataStart = pre.dataStart + start
                    return (
                        checked,
                        Result { () throws -> Network? in
                            let network = try makeNetwork(checked, storage: file)
                            return zip(network.tensors, parameters).allSatisfy({ $0.offset * 4 == $1.offset - start }) ? network : nil
                        }
                    )
                }
            #endif
            return (checked, .success(nil))
        }
        let pass = checksum.finish()
        guard pass.crc == pre.dataCRC else { throw ModelFileError.checksumMismatch(section: "data", stored: pre.dataCRC, computed: pass.crc) }
        let (checked, inPlace) = try parsed.get()
        try checkValues(checked.header.tensors, data: data, firstNonFinite: pass.firstNonFinite)
        return (checked.header, try inPlace.get() ?? makeNetwork(checked, copying: data))
    }

    /// True when each tensor starts where the previous one ends (no alignment padding).
    static func isPacked(_ tensors: ArraySlice<ModelHeader.Tensor>) -> Bool {
        var end = tensors.first?.offset ?? 0
        for t in tensors {
            guard t.offset == end else { return false }
            end += t.length
        }
        return true
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

    /// The default loader: preamble, header, the layers' data (format 1.8: the first tensors),
    /// then the parameter tensors straight into the network built from the described layers.
    static func loadReading(_ fd: Int32, size: Int) throws -> (header: ModelHeader, network: Network) {
        var head = [UInt8](repeating: 0, count: min(size, preambleSize))
        try head.withUnsafeMutableBytes { try readFully(fd, $0.baseAddress!, $0.count, at: 0) }
        let pre = try head.withUnsafeBytes { try readPreamble($0, fileSize: size) }
        // Bounded by the file size and Limits.headerBytes.
        var headerBytes = [UInt8](repeating: 0, count: pre.headerLength)
        try headerBytes.withUnsafeMutableBytes { try readFully(fd, $0.baseAddress!, $0.count, at: preambleSize) }
        var checked = try headerBytes.withUnsafeBytes { try readHeader($0, pre) }
        var crc: UInt32 = 0
        var gap = [UInt8](repeating: 0, count: alignment)
        // Steps 9 and 10 are found as the data arrives and reported after its checksum.
        var badPadding: ModelFileError?, nonFinite: ModelFileError?
        /// Reads tensor `stored` to `dst`, and the padding after it, into the checksum and checks.
        func read(_ stored: ModelHeader.Tensor, to dst: UnsafeMutableRawPointer) throws {
            try readFully(fd, dst, stored.length, at: pre.dataStart + stored.offset)
            let values = UnsafeRawBufferPointer(start: dst, count: stored.length)
            crc = CRC32.checksum(values, continuing: crc)
            if nonFinite == nil, anyNonFinite(values) { nonFinite = nonFiniteError(stored, values) }
            let end = stored.offset + stored.length, gapLength = align(end) - end
            if gapLength > 0 {
                try gap.withUnsafeMutableBytes { g in
                    try readFully(fd, g.baseAddress!, gapLength, at: pre.dataStart + end)
                    crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: g.prefix(gapLength)), continuing: crc)
                    if badPadding == nil, let k = g.prefix(gapLength).firstIndex(where: { $0 != 0 }) {
                        badPadding = .nonZeroPadding(after: stored.name, offset: end + k)
                    }
                }
            }
            #if !_endian(little)
                let words = dst.assumingMemoryBound(to: UInt32.self)
                for i in 0..<(stored.length / 4) { words[i] = UInt32(littleEndian: words[i]) }
            #endif
        }
        var layerData: [String: [Float]] = [:]
        for stored in checked.layerData {
            var values = [Float](repeating: 0, count: stored.length / 4)  // bounded by the file size (the tiling)
            try values.withUnsafeMutableBytes { try read(stored, to: $0.baseAddress!) }
            layerData[stored.name] = values
        }
        // Values that are not finite would stop the build before the checksum is known: such a
        // file is refused after it (below), and its layer data only hold a place here.
        checked = try checked.described { nonFinite == nil ? layerData[$0.name]! : [Float](repeating: 0, count: $0.length / 4) }
        let network = try makeNetwork(checked)
        for (expected, stored) in zip(network.tensors, checked.parameters) {
            try read(stored, to: UnsafeMutableRawPointer(network.parameters + expected.offset))
        }
        guard crc == pre.dataCRC else { throw ModelFileError.checksumMismatch(section: "data", stored: pre.dataCRC, computed: crc) }
        if let e = badPadding ?? nonFinite { throw e }
        return (checked.header, network)
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
