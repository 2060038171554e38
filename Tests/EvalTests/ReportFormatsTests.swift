import Eval
import Foundation
import TestSupport
import XCTest

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Checks the structure of the Markdown, CSV, SVG and HTML reports (the terminal report has
/// its golden test).
final class ReportFormatsTests: XCTestCase {
    /// Parses XML with Foundation and collects element names, or fails with the parser's error.
    final class Collector: NSObject, XMLParserDelegate {
        var elements: [String] = []
        var attributes: [[String: String]] = []
        var text = ""
        func parser(_ p: XMLParser, didStartElement e: String, namespaceURI: String?, qualifiedName: String?, attributes a: [String: String]) {
            elements.append(e)
            attributes.append(a)
        }
        func parser(_ p: XMLParser, foundCharacters s: String) { text += s }
    }

    static func parseXML(_ s: String, file: StaticString = #filePath, line: UInt = #line) -> Collector? {
        let parser = XMLParser(data: Data(s.utf8))
        let c = Collector()
        parser.delegate = c
        guard parser.parse() else {
            XCTFail("not well-formed XML: \(String(describing: parser.parserError)) line \(parser.lineNumber)", file: file, line: line)
            return nil
        }
        return c
    }

    func testEveryFileCarriesTheProvenanceAndTheMarker() throws {
        let r = try Fixtures.report()
        let files = try Reports.files(r)
        XCTAssertEqual(
            files.map(\.name),
            [
                "report.txt", "report.json", "report.md", "report.html", "confusion.svg", "reliability.svg", "metrics.csv", "classes.csv",
                "confusion.csv", "predictions.csv",
            ])
        for f in files {
            let text = String(decoding: f.data, as: UTF8.self)
            XCTAssertTrue(text.prefix(4096).contains(Reports.marker) || f.name == "report.json", "\(f.name) lacks the marker near its top")
            XCTAssertTrue(text.contains("model.atm"), "\(f.name) lacks the model path")
            XCTAssertTrue(text.contains("fnv1a64:00000000000000c0"), "\(f.name) lacks the training config hash")
            XCTAssertTrue(text.contains("fnv1a64:00000000000000da"), "\(f.name) lacks the data hash")
        }
        let json = String(decoding: files[1].data, as: UTF8.self)
        XCTAssertTrue(json.contains("\"schema\" : \"actiontrain.eval\""))
    }

    func testMarkdown() throws {
        let md = MarkdownReport.render(try Fixtures.report())
        XCTAssertTrue(md.contains("**Headline (sequence level, 6 sequences): accuracy 0.667 [0.333, 1.000], macro F1 0.656 [0.167, 1.000].**"), md)
        XCTAssertTrue(md.contains("| metric | sequence level | window level |\n|---|---:|---:|\n| samples | 6 | 12 |\n"), md)
        XCTAssertTrue(md.contains("| walk | 1.000 | 0.500 | 0.667 | 2 |"), md)
        XCTAssertTrue(md.contains("| true \\ predicted | walk | run | jump |\n|---|---:|---:|---:|\n| walk | **1** | 1 | 0 |\n"), md)
        XCTAssertTrue(md.contains("<details><summary>window level"), md)
    }

    func testMarkdownEscapesPipes() throws {
        var r = try Fixtures.report()
        r.data.name = "a|b"
        XCTAssertTrue(MarkdownReport.render(r).contains("## Evaluation: a\\|b (test)"))
    }

    func testCSV() throws {
        let r = try Fixtures.report()
        let files = Dictionary(uniqueKeysWithValues: CSVReport.files(r).map { ($0.name, $0.text) })
        func rows(_ name: String) -> [String] { files[name]!.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") } }
        XCTAssertEqual(rows("metrics.csv")[0], "level,metric,value,ci_low,ci_high")
        XCTAssertTrue(rows("metrics.csv").contains("sequence,accuracy,0.666667,0.333333,1"), rows("metrics.csv").joined(separator: "\n"))
        XCTAssertTrue(rows("classes.csv").contains("window,walk,1,0.75,0.857143,4"))
        XCTAssertTrue(rows("confusion.csv").contains("sequence,walk,run,1,0.5,0.5,0.166667"))
        let predictions = rows("predictions.csv")
        XCTAssertEqual(predictions[0], "sequence,start,true,predicted,p_walk,p_run,p_jump")
        XCTAssertEqual(predictions.count, 13)
        XCTAssertEqual(predictions[4], "s2,10,walk,walk,0.5,0.4,0.1")
        XCTAssertTrue(files["predictions.csv"]!.hasPrefix("# actiontrain.eval report, schema 1\n# model: model.atm\n"))
    }

    func testCSVQuotesFields() throws {
        var rows = Fixtures.windowRows
        rows[0].sequence = "clip \"1\", take 2"
        rows[1].sequence = "clip \"1\", take 2"
        let csv = CSVReport.predictions(try Fixtures.report(rows))
        XCTAssertTrue(csv.contains("\n\"clip \"\"1\"\", take 2\",0,walk,walk,"), csv)
    }

    func testSVGHeatmapIsWellFormed() throws {
        let r = try Fixtures.report()
        let svg = SVGHeatmap.render(r)
        let c = try XCTUnwrap(Self.parseXML(svg))
        XCTAssertEqual(c.elements.first, "svg")
        XCTAssertEqual(c.elements.filter { $0 == "rect" }.count, 1 + 9)  // background + K² cells
        XCTAssertTrue(c.text.contains("Confusion matrix, sequence level (6 sequences)"))
        // Diagonal cell of jump: 2 of 2 → darkest colour; an empty cell is white.
        XCTAssertTrue(svg.contains("fill=\"rgb(8,48,107)\""))
        XCTAssertTrue(svg.contains("fill=\"rgb(247,251,255)\""))
        XCTAssertFalse(svg.contains("<script"))
        XCTAssertFalse(svg.contains("href"))
    }

    func testSVGEscapesLabels() throws {
        let rows = Fixtures.windowRows
        let r = try EvalReport.evaluate(
            classes: ["<walk>", "r&n", "\"jump\""], windows: try Fixtures.table(rows), model: Fixtures.model, data: Fixtures.data,
            settings: EvalSettings(bootstrapResamples: 0), tool: "t")
        XCTAssertNotNil(Self.parseXML(SVGHeatmap.render(r)))
        XCTAssertTrue(HTMLReport.render(r).contains("&lt;walk&gt;"))
    }

    func testHTMLIsSelfContainedAndBounded() throws {
        let html = HTMLReport.render(try Fixtures.report())
        XCTAssertTrue(html.hasPrefix("<!DOCTYPE html>"))
        for section in ["Per class", "Confusion matrix", "Most confused pairs", "Calibration", "Worst-confused examples"] {
            XCTAssertTrue(html.contains(section), "missing \(section)")
        }
        // No external resources: the only URL is the SVG namespace.
        let urls = html.components(separatedBy: "http").count - 1
        let namespaces = html.components(separatedBy: "http://www.w3.org/2000/svg").count - 1
        XCTAssertEqual(urls, namespaces)
        XCTAssertFalse(html.contains("<script"))
        XCTAssertFalse(html.contains("<link"))
        // Worst-confused windows: s2 start 0 (run at 0.6) and s4 start 0 (jump at 0.6), ties by order.
        let wrong = HTMLReport.worstConfused(try XCTUnwrap(try Fixtures.report().predictions?.window), limit: 20)
        XCTAssertEqual(wrong, [2, 6])
        XCTAssertTrue(html.contains("<tr><td>s4</td><td class=\"n\">0</td><td>run</td><td>jump</td><td class=\"n\">0.600</td><td class=\"n\">0.300</td></tr>"))
    }

    func testHTMLStaysSmallForManySamples() throws {
        // 20,000 windows: the page must not list them (examples and pairs are capped).
        let rows = Fixtures.sequences(20_000, classes: 3) { $0 % 3 != 0 }
        let r = try Fixtures.report(rows, resamples: 10)
        let html = HTMLReport.render(r)
        XCTAssertLessThan(html.utf8.count, 60_000)
        XCTAssertEqual(html.components(separatedBy: "<h3>Worst-confused examples (the 20 most confident").count, 3)
        XCTAssertLessThan(SVGHeatmap.render(r).utf8.count, 20_000)
    }
}
