import Foundation
import PoseCore
import XCTest

final class JSONTextTests: XCTestCase {
    func testQuotesEscapesAndReadsBackWithFoundation() throws {
        let cases = ["plain", "say \"hi\"", "back\\slash", "line\nbreak\ttab\rreturn", "bell\u{07}nul\u{00}", "émoji 🤸 ok", ""]
        XCTAssertEqual(JSONText.quote("say \"hi\"\n\u{01}"), #""say \"hi\"\n\u0001""#)
        for s in cases {
            let back = try JSONSerialization.jsonObject(with: Data("[\(JSONText.quote(s))]".utf8)) as? [String]
            XCTAssertEqual(back, [s], "round trip of \(s.debugDescription)")
        }
    }
}
