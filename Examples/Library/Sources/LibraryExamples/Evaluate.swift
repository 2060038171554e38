import ActionTrainKit
import Foundation

/// Scores a model file on a dataset file (its "test" split when it has one, else every
/// sequence) at the window and the sequence level, and writes the reports into the folder
/// `reports`: report.txt, report.json (docs/reports.md), Markdown, CSV, SVG and HTML.
func evaluate(model path: String, data: String, reports folder: String) throws {
    let model = try ActionModel(contentsOf: path)
    let dataset = try DatasetLoader.read(data).dataset
    let report = try Evaluation.run(
        model: model, modelPath: path, dataset: dataset, dataPath: data, options: Evaluation.Options(),
        warn: { print("warning: \($0)") })
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    for file in try Reports.files(report) { try AtomicFile.write(file.data, to: "\(folder)/\(file.name)") }
    print(TextReport.render(report))
    let headline = report.headlineMetrics
    print("accuracy \(headline.accuracy) over \(headline.samples) \(headline.level.rawValue)s")
}
