/// The gate as JUnit XML, so that CI systems (GitHub Actions test reporters, GitLab, Jenkins)
/// show each check as a test case: one `<testsuite>` with one `<testcase>` per check, a
/// `<failure>` for each failed check, the provenance of both reports as `<properties>` and the
/// whole comparison as `<system-out>`.
public enum JUnitReport {
    public static func render(_ c: Comparison, gate g: GateResult) -> String {
        let x = Text.xml
        let failures = g.failures.count
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<!-- \(EvalReport.schema) regression gate -->\n"
        out += "<testsuites name=\"actiontrain regression gate\" tests=\"\(g.checks.count)\" failures=\"\(failures)\" errors=\"0\">\n"
        let suite = "gate: \(c.baseline.data.name)\(c.baseline.data.split.map { " (\($0))" } ?? ""), \(c.level.rawValue) level"
        out += "  <testsuite name=\"\(x(suite))\" tests=\"\(g.checks.count)\" failures=\"\(failures)\" errors=\"0\" skipped=\"0\">\n"
        out += "    <properties>\n"
        var properties: [(String, String)] = [
            ("baseline.report", c.baselineName), ("candidate.report", c.candidateName), ("policy", CompareReport.policyLine(g)),
        ]
        for (side, r) in [("baseline", c.baseline), ("candidate", c.candidate)] {
            properties += r.provenance.map { ("\(side).\($0.key)", $0.value) }
        }
        for (k, v) in properties { out += "      <property name=\"\(x(k))\" value=\"\(x(v))\"/>\n" }
        out += "    </properties>\n"
        for ch in g.checks {
            let classname = ch.name.hasPrefix("recall[") ? "actiontrain.gate.recall" : "actiontrain.gate"
            out += "    <testcase classname=\"\(classname)\" name=\"\(x(ch.name))\""
            if ch.passed {
                out += "/>\n"
            } else {
                out += ">\n      <failure type=\"regression\" message=\"\(x(ch.message))\">\(x(detail(ch)))</failure>\n    </testcase>\n"
            }
        }
        out += "    <system-out>\(x(CompareReport.text(c, gate: g)))</system-out>\n"
        out += "  </testsuite>\n</testsuites>\n"
        return out
    }

    /// A suite with one errored test case, for when the gate could not run (the reports cannot
    /// be compared, a file is bad): CI then shows why instead of a missing file.
    public static func error(_ message: String, baseline: String, candidate: String) -> String {
        let x = Text.xml
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- \(EvalReport.schema) regression gate -->
            <testsuites name="actiontrain regression gate" tests="1" failures="0" errors="1">
              <testsuite name="gate" tests="1" failures="0" errors="1" skipped="0">
                <properties>
                  <property name="baseline.report" value="\(x(baseline))"/>
                  <property name="candidate.report" value="\(x(candidate))"/>
                </properties>
                <testcase classname="actiontrain.gate" name="compare">
                  <error type="incomparable" message="\(x(message))"/>
                </testcase>
              </testsuite>
            </testsuites>

            """
    }

    static func detail(_ ch: GateCheck) -> String {
        "baseline \(Text.fixed(ch.baseline, 4)), candidate \(Text.fixed(ch.candidate, 4)), drop \(Text.fixed(ch.drop, 4)), allowed \(Text.fixed(ch.threshold, 4)); \(ch.evidence)"
    }
}
