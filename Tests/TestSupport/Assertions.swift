import XCTest

/// Asserts that two float arrays have the same count and agree element-wise within
/// `|a − b| ≤ absolute + relative·|b|`. Reports the first bad index with both values.
public func assertClose(
    _ actual: [Float], _ expected: [Float], absolute: Float = 1e-5, relative: Float = 1e-4,
    _ message: String = "", file: StaticString = #filePath, line: UInt = #line
) {
    guard actual.count == expected.count else {
        XCTFail("shape mismatch: \(actual.count) values vs \(expected.count) expected. \(message)", file: file, line: line)
        return
    }
    for i in actual.indices {
        let a = actual[i], b = expected[i]
        if !(abs(a - b) <= absolute + relative * abs(b)) {
            XCTFail("index \(i): got \(a), expected \(b) (tolerance abs \(absolute), rel \(relative)). \(message)", file: file, line: line)
            return
        }
    }
}

/// Scalar form of `assertClose`.
public func assertClose(
    _ actual: Double, _ expected: Double, absolute: Double = 1e-9, relative: Double = 1e-6,
    _ message: String = "", file: StaticString = #filePath, line: UInt = #line
) {
    if !(abs(actual - expected) <= absolute + relative * abs(expected)) {
        XCTFail("got \(actual), expected \(expected) (tolerance abs \(absolute), rel \(relative)). \(message)", file: file, line: line)
    }
}

/// Asserts that `body` throws an error whose description contains every fragment.
public func assertThrows(
    _ fragments: [String], file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
) {
    do {
        try body()
        XCTFail("expected an error containing \(fragments)", file: file, line: line)
    } catch {
        let text = String(describing: error)
        for f in fragments where !text.contains(f) {
            XCTFail("error '\(text)' does not contain '\(f)'", file: file, line: line)
        }
    }
}

/// A fresh temporary directory, removed by the caller's `addTeardownBlock` if wanted.
public func temporaryDirectory(_ name: String = #function) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("actiontrain-tests-\(name.filter(\.isLetter))-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
