import XCTest

/// Whether a missing test prerequisite (python3 with numpy or onnxruntime, the shared datasets)
/// fails the run instead of skipping the test: under CI, that is with `ACTIONTRAIN_CI=1` (set
/// by .ci/run) or with `CI` set, as CI services do (anything but empty, "false" or "0").
public var prerequisitesRequired: Bool {
    let env = ProcessInfo.processInfo.environment
    let ci = env["CI"] ?? ""
    return env["ACTIONTRAIN_CI"] == "1" || !ci.isEmpty && ci != "false" && ci != "0"
}

/// What to throw when `what` is missing: a failure under CI (`prerequisitesRequired`), else
/// an `XCTSkip`; `fix` says how to get it.
public func missingPrerequisite(_ what: String, fix: String) -> Error {
    struct Missing: Error, CustomStringConvertible { let description: String }
    if prerequisitesRequired { return Missing(description: "\(what) is required under CI (.ci/run provides it): \(fix)") }
    return XCTSkip("\(what) is not available; \(fix)")
}
