import PoseCore

/// The fast path for a model file's header: a small JSON reader (a value tree from bytes) and
/// an explicit mapping of its fields to `ModelHeader`, so that a new process does not pay for
/// Foundation's `JSONDecoder` and the Codable machinery on its first load (0.8-1.0 ms there:
/// mostly the Swift runtime's protocol-conformance lookups and Foundation's code pages;
/// docs/benchmarks.md).
///
/// It only accepts what the writer produces and what `JSONDecoder` reads the same way: plain
/// JSON with canonical integers, floats that read the same whether parsed as Float or Double,
/// well-formed UTF-8, no duplicate keys, every required field present and of its type. For
/// anything else it declines (returns nil) and `ModelFile.decodeHeader` lets `JSONDecoder`
/// decide, so the value decoded and every error reported are those of the Codable path.
/// Unknown keys are ignored, as `JSONDecoder` ignores them.
enum HeaderJSON {
    /// A parsed JSON value. A number keeps its text: each field converts it to its own type.
    /// (24 bytes a value; containers hold theirs in arrays.)
    enum Value {
        case null
        case bool(Bool)
        case number(String)
        case string(String)
        case array([Value])
        case object([(key: String, value: Value)])
    }

    /// The fast path gives up; the caller falls back to `JSONDecoder`.
    struct Declined: Error {}

    /// The header of `bytes`, or nil when this reader declines (see the type's comment).
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ModelHeader? {
        do {
            var parser = Parser(bytes: bytes)
            return try header(try parser.document())
        } catch {
            return nil
        }
    }

    // MARK: - The reader

    /// A recursive-descent reader over UTF-8 bytes (RFC 8259), nesting bounded by
    /// `ModelFile.Limits.jsonDepth`.
    struct Parser {
        let bytes: UnsafeRawBufferPointer
        var i = 0
        /// Values read so far, at most `maxValues`.
        var values = 0
        /// Beyond this the header is left to `JSONDecoder`: the value tree stays under about
        /// 25 MB plus the header's own size however hostile the header (real headers hold a
        /// few hundred values).
        static let maxValues = 1 << 20

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        /// One value, then only whitespace.
        mutating func document() throws -> Value {
            let v = try value(depth: 0)
            skipSpace()
            guard i == bytes.count else { throw Declined() }
            return v
        }

        mutating func skipSpace() {
            while i < bytes.count {
                let b = bytes[i]
                guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
                i += 1
            }
        }

        /// The next non-space byte, not consumed.
        mutating func peek() throws -> UInt8 {
            skipSpace()
            guard i < bytes.count else { throw Declined() }
            return bytes[i]
        }

        mutating func expect(_ c: UInt8) throws {
            guard try peek() == c else { throw Declined() }
            i += 1
        }

        mutating func value(depth: Int) throws -> Value {
            values += 1
            guard values <= Self.maxValues else { throw Declined() }
            switch try peek() {
            case UInt8(ascii: "{"):
                guard depth < ModelFile.Limits.jsonDepth else { throw Declined() }
                i += 1
                var members: [(key: String, value: Value)] = []
                if try peek() == UInt8(ascii: "}") {
                    i += 1
                    return .object(members)
                }
                while true {
                    guard try peek() == UInt8(ascii: "\"") else { throw Declined() }
                    let key = try string()
                    try expect(UInt8(ascii: ":"))
                    members.append((key, try value(depth: depth + 1)))
                    let c = try peek()
                    i += 1
                    if c == UInt8(ascii: "}") { break }
                    guard c == UInt8(ascii: ",") else { throw Declined() }
                }
                try checkDistinct(members)
                return .object(members)
            case UInt8(ascii: "["):
                guard depth < ModelFile.Limits.jsonDepth else { throw Declined() }
                i += 1
                var elements: [Value] = []
                if try peek() == UInt8(ascii: "]") {
                    i += 1
                    return .array(elements)
                }
                while true {
                    elements.append(try value(depth: depth + 1))
                    let c = try peek()
                    i += 1
                    if c == UInt8(ascii: "]") { break }
                    guard c == UInt8(ascii: ",") else { throw Declined() }
                }
                return .array(elements)
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            default:
                return .number(try number())
            }
        }

        /// Reads one value without keeping it, throwing `DuplicateKey` at the first object that
        /// repeats a key (keys compared after escapes are resolved; a key that does not decode
        /// is compared as written).
        mutating func walk(path: String) throws {
            switch try peek() {
            case UInt8(ascii: "{"):
                i += 1
                var keys = Set<String>()
                if try peek() == UInt8(ascii: "}") {
                    i += 1
                    return
                }
                while true {
                    guard try peek() == UInt8(ascii: "\"") else { throw Declined() }
                    let start = i
                    let key: String
                    do { key = try string() } catch {
                        i = start + 1
                        while i < bytes.count && bytes[i] != UInt8(ascii: "\"") { i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1 }
                        i += 1
                        guard i <= bytes.count else { throw Declined() }
                        key = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                    }
                    guard keys.insert(key).inserted else { throw DuplicateKey(path: path, key: key) }
                    try expect(UInt8(ascii: ":"))
                    try walk(path: path.isEmpty ? key : "\(path).\(key)")
                    let c = try peek()
                    i += 1
                    if c == UInt8(ascii: "}") { return }
                    guard c == UInt8(ascii: ",") else { throw Declined() }
                }
            case UInt8(ascii: "["):
                i += 1
                if try peek() == UInt8(ascii: "]") {
                    i += 1
                    return
                }
                var k = 0
                while true {
                    try walk(path: "\(path)[\(k)]")
                    k += 1
                    let c = try peek()
                    i += 1
                    if c == UInt8(ascii: "]") { return }
                    guard c == UInt8(ascii: ",") else { throw Declined() }
                }
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: _ = try number()
            }
        }

        /// Duplicate keys are declined (readers differ on which one wins).
        func checkDistinct(_ members: [(key: String, value: Value)]) throws {
            if members.count <= 16 {
                for a in 0..<members.count {
                    for b in 0..<a where members[a].key == members[b].key { throw Declined() }
                }
            } else {
                var seen = Set<String>()
                for m in members { guard seen.insert(m.key).inserted else { throw Declined() } }
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let n = word.utf8CodeUnitCount
            guard bytes.count - i >= n else { throw Declined() }
            for k in 0..<n where bytes[i + k] != word.utf8Start[k] { throw Declined() }
            i += n
        }

        /// A string at `i` (its opening quote): escapes resolved, UTF-8 checked.
        mutating func string() throws -> String {
            i += 1
            let start = i
            // The common case: no escapes, printable ASCII.
            var ascii = true
            while i < bytes.count {
                let b = bytes[i]
                if b == UInt8(ascii: "\"") {
                    let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                    i += 1
                    return ascii ? String(decoding: raw, as: UTF8.self) : try validUTF8(raw)
                }
                if b == UInt8(ascii: "\\") { break }
                guard b >= 0x20 else { throw Declined() }
                if b >= 0x80 { ascii = false }
                i += 1
            }
            // With escapes: collect the bytes.
            var out = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<i]))
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                switch b {
                case UInt8(ascii: "\""):
                    return try out.withUnsafeBytes { try validUTF8($0) }
                case UInt8(ascii: "\\"):
                    guard i < bytes.count else { throw Declined() }
                    let e = bytes[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            // A high surrogate must be followed by an escaped low one.
                            try literal("\\u")
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw Declined() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00..<0xE000).contains(scalar) {
                            throw Declined()
                        }
                        guard let u = Unicode.Scalar(scalar) else { throw Declined() }
                        out.append(contentsOf: UTF8.encode(u)!)
                    default:
                        throw Declined()
                    }
                default:
                    guard b >= 0x20 else { throw Declined() }
                    out.append(b)
                }
            }
            throw Declined()
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - i >= 4 else { throw Declined() }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[i]
                i += 1
                let d: UInt8
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
                default: throw Declined()
                }
                v = v << 4 | UInt32(d)
            }
            return v
        }

        /// The text of a number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        mutating func number() throws -> String {
            let start = i
            func digits(_ p: inout Parser) -> Int {
                let s = p.i
                while p.i < p.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(p.bytes[p.i]) { p.i += 1 }
                return p.i - s
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count else { throw Declined() }
            if bytes[i] == UInt8(ascii: "0") {
                i += 1
            } else {
                guard digits(&self) > 0 else { throw Declined() }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digits(&self) > 0 else { throw Declined() }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { throw Declined() }
            }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        }

        /// The string of well-formed UTF-8 `raw` (decoding repairs ill-formed input, so a repair
        /// shows as a difference).
        func validUTF8(_ raw: UnsafeRawBufferPointer) throws -> String {
            let s = String(decoding: raw, as: UTF8.self)
            guard s.utf8.elementsEqual(raw) else { throw Declined() }
            return s
        }
    }

    // MARK: - Duplicate keys

    /// Where the first object with a repeated key is, e.g. `input.skeleton has the key 'joints'
    /// twice`, or nil when no object repeats a key (or the JSON does not parse: `JSONDecoder`
    /// then reports that). A model header MUST NOT repeat a key (docs/format.md 1.3):
    /// `JSONDecoder` would keep one of the two silently. The fast reader declines such a
    /// header, so this runs only on the `JSONDecoder` path. Nesting is bounded by the caller.
    static func duplicateKey(_ bytes: UnsafeRawBufferPointer) -> String? {
        var parser = Parser(bytes: bytes)
        do {
            try parser.walk(path: "")
        } catch let found as DuplicateKey {
            return "\(found.path.isEmpty ? "the header" : found.path) has the key '\(found.key)' twice"
        } catch {
            return nil
        }
        return nil
    }

    struct DuplicateKey: Error {
        var path: String, key: String
    }

    // MARK: - Field mapping (the Codable forms of ModelHeader and the types inside it)

    /// An object's members; `JSONDecoder`'s keyed-container rules: unknown keys ignored, a
    /// required key present and not null, an optional key missing or null meaning nil.
    struct Object {
        let members: [(key: String, value: Value)]

        init(_ v: Value) throws {
            guard case .object(let m) = v else { throw Declined() }
            members = m
        }

        func optional(_ key: String) -> Value? {
            for m in members where m.key == key {
                if case .null = m.value { return nil }
                return m.value
            }
            return nil
        }

        func required(_ key: String) throws -> Value {
            guard let v = optional(key) else { throw Declined() }
            return v
        }

        func string(_ key: String) throws -> String { try HeaderJSON.string(try required(key)) }
        func int(_ key: String) throws -> Int { try HeaderJSON.int(try required(key)) }
        func strings(_ key: String) throws -> [String] { try array(try required(key)).map(HeaderJSON.string) }
    }

    static func string(_ v: Value) throws -> String {
        guard case .string(let s) = v else { throw Declined() }
        return s
    }

    static func bool(_ v: Value) throws -> Bool {
        guard case .bool(let b) = v else { throw Declined() }
        return b
    }

    static func array(_ v: Value) throws -> [Value] {
        guard case .array(let a) = v else { throw Declined() }
        return a
    }

    /// Integers only in canonical form (`0`, `-12`, `2565`): other spellings (`1.0`, `1e3`,
    /// `-0`) and overflow are left to `JSONDecoder`.
    static func int(_ v: Value) throws -> Int {
        guard case .number(let text) = v, text != "-0", text.utf8.dropFirst().allSatisfy(isDigit), let n = Int(text) else {
            throw Declined()
        }
        return n
    }

    static func uint64(_ v: Value) throws -> UInt64 {
        guard case .number(let text) = v, text.utf8.allSatisfy(isDigit), let n = UInt64(text) else { throw Declined() }
        return n
    }

    static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    /// A finite Double, normal or exactly zero: the correctly rounded value, as both readers
    /// give (out-of-range and subnormal spellings are left to `JSONDecoder`).
    static func double(_ v: Value) throws -> Double {
        guard case .number(let text) = v, significantDigits(text) <= 17, let d = Double(text), d.isFinite, d.isNormal || (d == 0 && isZeroMantissa(text)) else {
            throw Declined()
        }
        return d
    }

    /// A Float that reads the same parsed directly or through Double (so that it does not
    /// matter which of the two `JSONDecoder` does), normal or exactly zero.
    static func float(_ v: Value) throws -> Float {
        guard case .number(let text) = v, let direct = Float(text) else { throw Declined() }
        let d = try double(v)
        let viaDouble = Float(d)
        guard viaDouble.bitPattern == direct.bitPattern, viaDouble.isNormal || d == 0 else { throw Declined() }
        return viaDouble
    }

    /// Digits before any exponent, leading zeros aside. The writer's shortest round-trip forms
    /// have at most 17; longer ones are left to `JSONDecoder` (no reliance on both readers
    /// rounding a long decimal the same way).
    static func significantDigits(_ text: String) -> Int {
        var n = 0
        for b in text.utf8 {
            if b == UInt8(ascii: "e") || b == UInt8(ascii: "E") { break }
            if isDigit(b) && (n > 0 || b != UInt8(ascii: "0")) { n += 1 }
        }
        return n
    }

    /// True when the digits before any exponent are all zeros (the number is exactly 0).
    static func isZeroMantissa(_ text: String) -> Bool {
        for b in text.utf8 {
            if b == UInt8(ascii: "e") || b == UInt8(ascii: "E") { break }
            if b >= UInt8(ascii: "1") && b <= UInt8(ascii: "9") { return false }
        }
        return true
    }

    static func header(_ v: Value) throws -> ModelHeader {
        let o = try Object(v)
        return ModelHeader(
            format: try o.string("format"),
            classes: try o.strings("classes"),
            coordinateSystem: try coordinateSystem(try o.required("coordinateSystem")),
            input: try inputSpec(try o.required("input")),
            inputShape: try shape(try o.required("inputShape")),
            trainingFrameRate: try o.optional("trainingFrameRate").map(double),
            layers: try array(try o.required("layers")).map(layer),
            tensors: try array(try o.required("tensors")).map(tensor),
            provenance: try provenance(try o.required("provenance")),
            streaming: try o.optional("streaming").map(streaming),
            poseStatistics: try o.optional("poseStatistics").map(poseStatistics),
            calibration: try o.optional("calibration").map(calibration))
    }

    static func calibration(_ v: Value) throws -> ModelHeader.Calibration {
        let o = try Object(v)
        func number(_ key: String) throws -> Double { try double(try o.required(key)) }
        return ModelHeader.Calibration(
            method: try o.string("method"), temperature: try number("temperature"), evidence: try o.string("evidence"),
            folds: try o.optional("folds").map(int), windows: try int(try o.required("windows")), logLossBefore: try number("logLossBefore"),
            logLossAfter: try number("logLossAfter"), eceBefore: try number("eceBefore"), eceAfter: try number("eceAfter"))
    }

    static func poseStatistics(_ v: Value) throws -> ModelHeader.PoseStatistics {
        let o = try Object(v)
        func doubles(_ key: String) throws -> [Double] { try array(try o.required(key)).map(double) }
        return ModelHeader.PoseStatistics(
            windows: try int(try o.required("windows")), centreMean: try doubles("centreMean"), centreSpread: try doubles("centreSpread"),
            offsetMean: try doubles("offsetMean"), offsetSpread: try doubles("offsetSpread"), present: try doubles("present"),
            confidence: try doubles("confidence"), motion: try doubles("motion"))
    }

    static func streaming(_ v: Value) throws -> ModelHeader.Streaming {
        let o = try Object(v)
        return ModelHeader.Streaming(
            clipFrames: try o.optional("clipFrames").map(int), clipFrameRate: try o.optional("clipFrameRate").map(double),
            enter: try o.optional("enter").map { try array($0).map(double) }, exit: try o.optional("exit").map { try array($0).map(double) },
            calibration: try o.optional("calibration").map(string), frames: try o.optional("frames").map(streamingFrames))
    }

    static func streamingFrames(_ v: Value) throws -> ModelHeader.Streaming.Frames {
        let o = try Object(v)
        func numbers(_ key: String) throws -> [Double] { try array(try o.required(key)).map(double) }
        return ModelHeader.Streaming.Frames(
            lookAhead: try double(try o.required("lookAhead")), stillBelow: try double(try o.required("stillBelow")), enter: try numbers("enter"),
            exit: try numbers("exit"), hold: try numbers("hold"), leadIn: try numbers("leadIn"), leadOut: try numbers("leadOut"),
            minimumDuration: try numbers("minimumDuration"), switchEvidence: try o.optional("switchEvidence").map(double))
    }

    static func coordinateSystem(_ v: Value) throws -> ModelHeader.CoordinateSystem {
        let o = try Object(v)
        var c = ModelHeader.CoordinateSystem(units: try units(try o.required("units")))
        c.origin = try o.string("origin")
        c.yAxis = try o.string("yAxis")
        c.sides = try o.string("sides")
        return c
    }

    static func units(_ v: Value) throws -> Skeleton.Units {
        guard let u = Skeleton.Units(rawValue: try string(v)) else { throw Declined() }
        return u
    }

    static func shape(_ v: Value) throws -> Shape {
        let o = try Object(v)
        return Shape(time: try o.int("time"), channels: try o.int("channels"))
    }

    static func inputSpec(_ v: Value) throws -> InputSpec {
        let o = try Object(v)
        var spec = InputSpec(
            skeleton: try skeleton(try o.required("skeleton")),
            window: try window(try o.required("window")),
            steps: try array(try o.required("steps")).map(step),
            channels: try array(try o.required("channels")).map { c in
                guard let block = ChannelBlock(rawValue: try string(c)) else { throw Declined() }
                return block
            })
        spec.bodies = try o.optional("bodies").map(int)  // as the file says, like JSONDecoder
        spec.pairs = try o.optional("pairs").map { try array($0).map { try array($0).map(string) } }
        spec.bodyRoles = try o.optional("bodyRoles").map { try array($0).map(string) }
        return spec
    }

    static func skeleton(_ v: Value) throws -> Skeleton {
        let o = try Object(v)
        func pairs(_ key: String) throws -> [[String]] { try array(try o.required(key)).map { try array($0).map(string) } }
        return Skeleton(
            name: try o.string("name"), joints: try o.strings("joints"), dimensions: try o.int("dimensions"),
            units: try units(try o.required("units")), mirrorPairs: try pairs("mirrorPairs"), bones: try pairs("bones"),
            centre: try o.strings("centre"), torsoUpper: try o.strings("torsoUpper"), torsoLower: try o.strings("torsoLower"))
    }

    /// WindowSpec's own decoder: `mode` and `padding` default to sliding and empty.
    static func window(_ v: Value) throws -> WindowSpec {
        let o = try Object(v)
        var mode = WindowSpec.Mode.sliding, padding = WindowSpec.Padding.empty
        if let m = o.optional("mode") {
            guard let value = WindowSpec.Mode(rawValue: try string(m)) else { throw Declined() }
            mode = value
        }
        if let p = o.optional("padding") {
            guard let value = WindowSpec.Padding(rawValue: try string(p)) else { throw Declined() }
            padding = value
        }
        return WindowSpec(
            frames: try o.int("frames"), mode: mode, padding: padding, frameRate: try o.optional("frameRate").map(double))
    }

    /// PreprocessingStep's decoder, `op` form only (the legacy form is left to `JSONDecoder`).
    static func step(_ v: Value) throws -> PreprocessingStep {
        let o = try Object(v)
        switch try o.string("op") {
        case "centre":
            return .centre(joints: try o.strings("joints"), perFrame: try bool(try o.required("perFrame")))
        case "scaleByTorso":
            return .scaleByTorso(upper: try o.strings("upper"), lower: try o.strings("lower"))
        case "divide":
            return .divide(by: try array(try o.required("by")).map(float))
        case "alignFacing":
            return .alignFacing(left: try o.strings("left"), right: try o.strings("right"), verticalAxis: try o.int("verticalAxis"))
        case "fillGaps":
            return .fillGaps
        default:
            throw Declined()
        }
    }

    /// LayerSpec's decoder: the kind's own field reading (`LayerKind.init(fields:)`).
    static func layer(_ v: Value) throws -> LayerSpec {
        let o = try Object(v)
        guard let spec = try LayerSpec.decode(type: try o.string("type"), fields: o) else { throw Declined() }
        return spec
    }

    static func tensor(_ v: Value) throws -> ModelHeader.Tensor {
        let o = try Object(v)
        return ModelHeader.Tensor(
            name: try o.string("name"), dtype: try o.string("dtype"),
            shape: try array(try o.required("shape")).map(int), layout: try o.string("layout"),
            offset: try o.int("offset"), length: try o.int("length"))
    }

    static func provenance(_ v: Value) throws -> ModelHeader.Provenance {
        let o = try Object(v)
        var metrics: [String: Double] = [:], notes: [String: String] = [:]
        for m in try Object(try o.required("metrics")).members { metrics[m.key] = try double(m.value) }
        for m in try Object(try o.required("notes")).members { notes[m.key] = try string(m.value) }
        return ModelHeader.Provenance(
            tool: try o.string("tool"), datasetHash: try o.optional("datasetHash").map(string),
            configHash: try o.optional("configHash").map(string), seed: try o.optional("seed").map(uint64),
            metrics: metrics, notes: notes)
    }
}

extension HeaderJSON.Object: LayerFieldReader {
    func contains(_ key: String) -> Bool { optional(key) != nil }
    func float(_ key: String) throws -> Float { try HeaderJSON.float(try required(key)) }
    func ints(_ key: String) throws -> [Int] { try HeaderJSON.array(try required(key)).map(HeaderJSON.int) }
    func floats(_ key: String) throws -> [Float] { try HeaderJSON.array(try required(key)).map(HeaderJSON.float) }
    func layers(_ key: String) throws -> [LayerSpec] { try HeaderJSON.array(try required(key)).map(HeaderJSON.layer) }
    func layerLists(_ key: String) throws -> [[LayerSpec]] {
        try HeaderJSON.array(try required(key)).map { try HeaderJSON.array($0).map(HeaderJSON.layer) }
    }
}
