import Datasets
import PoseCore
import XCTest

/// The live-stream line format (`StreamLine`) and the bounded line reader (`LineReader`).
final class StreamLineTests: XCTestCase {
    func parse(_ line: String, dimensions: Int = 2) throws -> StreamLine { try StreamLine.parse(Array(line.utf8), dimensions: dimensions) }

    func assertRefused(_ line: String, _ fragment: String, column: Int? = nil, dimensions: Int = 2, file: StaticString = #filePath, lineNumber: UInt = #line) {
        XCTAssertThrowsError(try parse(line, dimensions: dimensions), file: file, line: lineNumber) { e in
            let error = e as? StreamLineError
            XCTAssertTrue(error?.reason.contains(fragment) ?? false, "\(e)", file: file, line: lineNumber)
            if let column { XCTAssertEqual(error?.column, column, "\(e)", file: file, line: lineNumber) }
        }
    }

    func testAFrameLine() throws {
        let f = try parse(#" {"t": 1.033, "person": 2, "pose": {"leftWrist": [412.5, 300.1, 0.92], "root": [398, 420], "hand": null}, "extra": [{"a": 1}]} "#)
        XCTAssertEqual(f.time, 1.033)
        XCTAssertEqual(f.person, 2)
        XCTAssertEqual(try parse(#"{"t": 1, "person": "left \u0031"}"#).person, .name("left 1"))
        XCTAssertEqual(try parse(#"{"t": 1, "person": "2"}"#).person, .number(2), "issue 38 finding 12: one person on both paths")
        XCTAssertEqual(try parse(#"{"t": 1, "person": -4}"#).person, .number(-4))
        XCTAssertEqual(f.points, ["leftWrist": PosePoint(x: 412.5, y: 300.1, confidence: 0.92), "root": PosePoint(x: 398, y: 420)])
        XCTAssertEqual(try parse(#"{"t": 0}"#), StreamLine(time: 0, points: [:]))
        XCTAssertEqual(try parse(#"{"pose": null, "person": null, "t": -2.5e-1}"#), StreamLine(time: -0.25, points: [:]))
        let three = try parse(#"{"t": 1, "pose": {"a": [1, 2, 3], "b": [1, 2, 3, 0.5]}}"#, dimensions: 3)
        XCTAssertEqual(three.points["a"], PosePoint(x: 1, y: 2, z: 3))
        XCTAssertEqual(three.points["b"], PosePoint(x: 1, y: 2, z: 3, confidence: 0.5))
        XCTAssertEqual(try parse(#"{"t": 1, "pose": {"\u006eeck": [1, 2]}}"#).points.keys.first, "neck")
    }

    func testPythonsNaNAndInfinityAreNonFiniteValuesAndHugeNumbersStayOutOfRange() throws {
        // Python's json writes NaN, Infinity, -Infinity: the session takes such a joint as
        // absent and such a time as going backwards. A finite number beyond Float's range stays
        // finite (the largest Float), so the session refuses it as out of range rather than NaN.
        let f = try parse(#"{"t": NaN, "pose": {"a": [NaN, 2], "b": [Infinity, -Infinity, 0.5], "c": [1e300, -1e39]}}"#)
        XCTAssertTrue(f.time.isNaN)
        XCTAssertTrue(f.points["a"]!.x.isNaN)
        XCTAssertEqual(f.points["b"], PosePoint(x: .infinity, y: -.infinity, confidence: 0.5))
        XCTAssertEqual(f.points["c"], PosePoint(x: .greatestFiniteMagnitude, y: -.greatestFiniteMagnitude))
        XCTAssertEqual(try parse(#"{"t": -Infinity}"#).time, -.infinity)
    }

    func testWhatIsNotAFrameIsRefusedNamingTheColumn() {
        assertRefused(#"{"pose": {}}"#, #"no time "t" in seconds"#, column: 1)
        assertRefused(#"{"t": "1"}"#, #"the time "t" must be a number of seconds"#, column: 7)
        assertRefused(#"{"t": true}"#, #"the time "t" must be a number"#)
        assertRefused(#"{"t": 1, "person": 1.5}"#, #""person" must be a track id: an integer (below 10^15 in magnitude) or a string"#, column: 20)
        assertRefused(#"{"t": 1, "person": 1e300}"#, #""person" must be a track id"#)
        assertRefused(#"{"t": 1, "person": ["a"]}"#, #""person" must be a track id"#)
        assertRefused(#"{"t": 1, "pose": [1, 2]}"#, #""pose" must be an object of joint name to [x, y] or [x, y, confidence]"#, column: 18)
        assertRefused(#"{"t": 1, "pose": {"head": [true, false]}}"#, "joint 'head' must be [x, y] or [x, y, confidence]", column: 27)
        assertRefused(#"{"t": 1, "pose": {"head": [1]}}"#, "joint 'head' must be [x, y]")
        assertRefused(#"{"t": 1, "pose": {"head": [1, 2, 3, 4]}}"#, "joint 'head' must be [x, y]")
        assertRefused(#"{"t": 1, "pose": {"head": [1, 2, 3, 4, 5]}}"#, "joint 'head' must be [x, y, z] or [x, y, z, confidence]", dimensions: 3)
        assertRefused(#"{"t": 1, "pose": {"head": [1, "2"]}}"#, "joint 'head' must be")
        assertRefused(#"{"t": 1, "pose": {"head": 3}}"#, "joint 'head' must be")
        assertRefused(#"{"t": 1, "pose": {"head": [1, 2], "head": [3, 4]}}"#, "joint 'head' appears twice", column: 35)
        assertRefused(#"{"t": 1, "t": 2}"#, #"the key "t" appears twice"#, column: 10)
        assertRefused(#"{"t": 1} {"t": 2}"#, "the end of the line after the object", column: 10)
        assertRefused(#"{"t": 1, "pose": {"head": [1, 2]"#, "expected ',' or '}' in the pose", column: 33)
        assertRefused(#"{"t": Nan}"#, #"the time "t" must be a number"#)
        assertRefused("", "expected a JSON object", column: 1)
        assertRefused("[1, 2]", "expected a JSON object", column: 1)
        assertRefused(#"{"t": 1, "x": "#, "expected a value", column: 15)
        // Deep nesting in an ignored key is bounded by the JSON reader's depth limit.
        assertRefused(#"{"t": 1, "x": "# + String(repeating: "[", count: 100_000), "less deeply nested data")
    }

    func testTheDatasetsSpellingAndAFrameOfSeveralPeopleAreRead() throws {
        // Issue 38 finding 6: "track" (the dataset file's key) and a "people" list were other
        // keys, ignored, so every such line was person 0's.
        XCTAssertEqual(try parse(#"{"t": 1, "track": 5, "pose": {"a": [1, 2]}}"#), StreamLine(time: 1, person: 5, points: ["a": PosePoint(x: 1, y: 2)]))
        let frame = try parse(#"{"t": 2, "people": [{"track": "b", "pose": {"a": [1, 2]}}, {"person": 7, "pose": null}, {"pose": {}, "x": [1]}]}"#)
        XCTAssertEqual(frame.time, 2)
        XCTAssertEqual(
            frame.people,
            [.init(id: "b", points: ["a": PosePoint(x: 1, y: 2)]), .init(id: 7, points: [:]), .init(id: 2, points: [:])], "absent id: the position")
        XCTAssertEqual(frame.persons, frame.people)
        XCTAssertEqual(try parse(#"{"t": 2, "people": []}"#).persons, [], "nobody in view")
        XCTAssertEqual(try parse(#"{"t": 2, "person": 3}"#).persons, [.init(id: 3, points: [:])])
        assertRefused(#"{"t": 1, "track": 5, "person": 5}"#, #""person" and "track" both name the person; give one of them"#, column: 22)
        assertRefused(#"{"t": 1, "people": [], "pose": {}}"#, #""people" gives everyone in the frame, so "pose" does not go with it"#)
        assertRefused(#"{"t": 1, "person": 2, "people": []}"#, #"so "person" does not go with it"#)
        assertRefused(#"{"t": 1, "people": [{"track": 1, "pose": {}}, {"track": "1", "pose": {}}]}"#, #"person 1 appears twice in "people""#, column: 47)
        assertRefused(#"{"t": 1, "people": [{"track": 1}]}"#, #"person 1 of "people" has no "pose""#)
        assertRefused(#"{"t": 1, "people": {"track": 1}}"#, #""people" must be a list of {"track": id, "pose": {...}}"#, column: 20)
        assertRefused(#"{"t": 1, "people": [null]}"#, #""people" must be a list"#, column: 21)
        assertRefused(#"{"t": 1, "people": [{"track": 1, "pose": {"a": [1]}}]}"#, "joint 'a' must be [x, y]")
    }

    func testAPersonIsOnePersonOnBothPathsAndIllFormedIdsAreRefused() throws {
        // Issue 38 finding 12: three different ill-formed UTF-8 ids became one person "\u{FFFD}";
        // tracks 7 and "7" were one person in a file and two live.
        XCTAssertEqual(PersonID(parsing: "7"), .number(7))
        XCTAssertEqual(PersonID(parsing: "-3"), .number(-3))
        for name in ["07", "+7", "7.0", " 7", "1000000000000000", "a"] { XCTAssertEqual(PersonID(parsing: name), .name(name)) }
        XCTAssertEqual(try parse(#"{"t": 1, "person": "7"}"#).person, try parse(#"{"t": 1, "person": 7}"#).person)
        XCTAssertEqual(try parse(#"{"t": 1, "person": 7.0}"#).person, .number(7))
        XCTAssertEqual(try parse(#"{"t": 1, "person": "\u00e9"}"#).person, .name("\u{e9}"))
        for bad: [UInt8] in [[0xFF], [0xFE], [0xC3], [0xED, 0xA0, 0x80]] {
            let line = Array(#"{"t": 1, "person": ""#.utf8) + bad + Array(#""}"#.utf8)
            XCTAssertThrowsError(try StreamLine.parse(line, dimensions: 2)) {
                XCTAssertEqual("\($0)", #"column 20: the "person" id is not well-formed UTF-8"#)
            }
        }
        assertRefused(#"{"t": 1, "person": 1e15}"#, #""person" must be a track id"#)
    }

    /// A reader over `text` that returns at most `chunk` bytes per read.
    func reader(_ text: [UInt8], maximumLength: Int?, chunk: Int, reads: UnsafeMutablePointer<Int>? = nil) -> LineReader {
        var offset = 0
        return LineReader(maximumLength: maximumLength, chunkSize: chunk) { buffer in
            reads?.pointee += 1
            let n = min(buffer.count, text.count - offset)
            text.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + n)])) }
            offset += n
            return n
        }
    }

    func lines(_ text: String, maximumLength: Int? = nil, chunk: Int) throws -> [LineReader.Line] {
        var r = reader(Array(text.utf8), maximumLength: maximumLength, chunk: chunk)
        var out: [LineReader.Line] = []
        while let line = try r.next() { out.append(line) }
        return out
    }

    func testLinesAcrossChunksWithCRLFAndAnUnterminatedLastLine() throws {
        for chunk in [1, 2, 3, 7, 64, 1 << 16] {
            let got = try lines("ab\r\n\ncdef\n  \ngh", chunk: chunk)
            XCTAssertEqual(got.map(\.number), [1, 2, 3, 4, 5], "chunk \(chunk)")
            XCTAssertEqual(got.map { $0.bytes.map { String(decoding: $0, as: UTF8.self) } }, ["ab", "", "cdef", "  ", "gh"], "chunk \(chunk)")
            XCTAssertEqual(got.map(\.terminated), [true, true, true, true, false])
            XCTAssertEqual(got.map(\.isBlank), [false, true, false, true, false])
            XCTAssertEqual(try lines("x\n", chunk: chunk).count, 1, "a last newline ends the input, not a line")
        }
        XCTAssertEqual(try lines("", chunk: 4), [])
    }

    func testALineOverTheLimitIsSkippedByItsLengthOnly() throws {
        let long = String(repeating: "z", count: 1000)
        for chunk in [3, 64, 4096] {
            let got = try lines("ok\n\(long)\nnext\n\(long)", maximumLength: 100, chunk: chunk)
            XCTAssertEqual(got.map(\.number), [1, 2, 3, 4])
            XCTAssertEqual(got.map { $0.bytes?.count }, [2, nil, 4, nil], "chunk \(chunk)")
            XCTAssertEqual(got.map(\.length), [2, 1000, 4, 1000])
            XCTAssertEqual(got.last?.terminated, false)
            XCTAssertEqual(try lines(String(repeating: "y", count: 100) + "\n", maximumLength: 100, chunk: chunk).first?.bytes?.count, 100, "the limit itself is kept")
        }
    }

    func testALineIsReturnedOnceItsNewlineHasArrivedWithoutReadingFurther() throws {
        // A live stream must not wait for more input than the line it has.
        var reads = 0
        var r = reader(Array("a\nb\nc\n".utf8), maximumLength: nil, chunk: 2, reads: &reads)
        XCTAssertEqual(try r.next()?.bytes, Array("a".utf8))
        XCTAssertEqual(reads, 1)
        XCTAssertEqual(try r.next()?.bytes, Array("b".utf8))
        XCTAssertEqual(reads, 2)
    }
}
