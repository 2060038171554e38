import PoseCore
import XCTest

/// `JSONDocument`, the reader of hand-written JSON files (issue 38 findings 14 and 15: a key
/// given twice in a sweep grid or config was accepted, one of the two silently kept, and `8.0`
/// was taken as the integer 8).
final class JSONDocumentTests: XCTestCase {
    func parse(_ text: String) throws -> JSONDocument.Value { try JSONDocument.parse(Array(text.utf8)) }

    func assertRefused(_ text: String, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try parse(text), file: file, line: line) { XCTAssertEqual("\($0)", message, file: file, line: line) }
    }

    func testValuesKeepTheirSpellingsTypeAndTheirOrder() throws {
        let v = try parse(#" {"b": [8, 8.0, 8e0, -0, 18446744073709551615, 99999999999999999999], "a": {"s": "\u00e9\ud83d\ude00\n", "t": true, "n": null}} "#)
        XCTAssertEqual(
            v,
            .object([
                .init(key: "b", value: .array([.int(8), .double(8), .double(8), .int(0), .uint(.max), .double(1e20)])),
                .init(key: "a", value: .object([.init(key: "s", value: .string("\u{e9}\u{1F600}\n")), .init(key: "t", value: .bool(true)), .init(key: "n", value: .null)])),
            ]))
        XCTAssertEqual(JSONDocument.text(v), #"{"b": [8, 8.0, 8.0, 0, 18446744073709551615, 1e+20], "a": {"s": "é😀\n", "t": true, "n": null}}"#)
        XCTAssertEqual(try parse("\u{FEFF}[1]"), .array([.int(1)]), "a byte order mark")
        XCTAssertEqual(JSONDocument.member("a", of: [.init(key: "a", value: .int(1))]), .int(1))
    }

    func testAKeyGivenTwiceIsRefusedNamingItAndWhereItIs() {
        assertRefused(#"{"epochs": 2, "recipe": "none", "epochs": 1}"#, #"line 1, column 33: the key "epochs" appears twice in the object; give each key once"#)
        assertRefused(
            "{\"grid\": {\"learningRate\": [0.1],\n  \"learningRate\": [0.2]}}",
            #"line 2, column 3: the key "learningRate" appears twice in grid; give each key once"#)
        assertRefused(#"{"candidates": [{}, {"a": {"x": 1, "x": 2}}]}"#, #"line 1, column 36: the key "x" appears twice in candidates[1].a; give each key once"#)
        // The same key in two objects is no repetition.
        XCTAssertNoThrow(try parse(#"[{"a": 1}, {"a": 2}]"#))
    }

    func testWhatIsNotJSONIsRefusedWithItsPlace() {
        assertRefused("", "line 1, column 1: expected a value")
        assertRefused("{\"a\": 1,}", "line 1, column 9: expected a key in double quotes")
        assertRefused("[1 2]", "line 1, column 4: expected ',' or ']' in the list")
        assertRefused("{\"a\" 1}", "line 1, column 6: expected ':' after the key")
        assertRefused("[01]", "line 1, column 3: expected ',' or ']' in the list")
        assertRefused("[1.]", "line 1, column 4: expected digits after the decimal point")
        assertRefused("[NaN]", "line 1, column 2: expected a value (an object, list, string, number, true, false or null)")
        assertRefused("[\"a\u{1}\"]", "line 1, column 4: a control character in a string; escape it (\\n, \\t, \\u0000)")
        assertRefused(#"["\ud800"]"#, #"line 1, column 9: expected a low surrogate \uDC00-\uDFFF after a high one"#)
        assertRefused(#"["\udc00"]"#, "line 1, column 5: a lone surrogate escape is no character")
        assertRefused(#"["\q"]"#, #"line 1, column 3: an unknown escape \q"#)
        assertRefused("[1] 2", "line 1, column 5: expected the end of the document after its value")
        assertRefused("[" + String(repeating: "[", count: 100_000), "line 1, column 65: nested more than 64 levels")
        XCTAssertThrowsError(try JSONDocument.parse([0x5B, 0x22, 0xFF, 0x22, 0x5D])) { XCTAssertEqual("\($0)", "line 1, column 2: the string is not well-formed UTF-8") }
        XCTAssertThrowsError(try JSONDocument.parse([UInt8](repeating: 0x20, count: JSONDocument.maximumBytes + 1))) {
            XCTAssertTrue("\($0)".contains("more than the 16777216 a hand-written file may take"), "\($0)")
        }
    }
}
