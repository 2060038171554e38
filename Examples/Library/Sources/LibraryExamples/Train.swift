import ActionTrainKit

/// A new run of `epochs` epochs on the dataset file `data`, in the run folder `folder` (created;
/// an existing one is refused). The recipe chooses every setting not given here from the
/// data (`actiontrain fit DATA --epochs N` does the same); `windowFrames` asks for sliding
/// windows of that many frames (a model of whole clips streams too, sliding its clip length).
func startRun(data: String, folder: String, epochs: Int, windowFrames: Int?) throws -> FitRun {
    let dataset = try DatasetLoader.read(data).dataset
    var config = TrainingConfig()
    var given: Set<String> = ["epochs"]  // the config keys we set; the recipe leaves them alone
    config.epochs = epochs
    if let windowFrames {
        config.windowMode = .sliding
        config.windowFrames = windowFrames
        given.formUnion(["windowMode", "windowFrames"])
    }
    let run = try FitRun.start(
        dataPath: data, dataset: dataset, config: config, explicit: given, folder: try RunFolder.create(folder, replacing: false))
    for choice in run.recipe { print("recipe: \(choice)") }
    for warning in run.warnings { print("warning: \(warning)") }
    return run
}

/// Trains to the end and writes model.atm (and, with a validation split, the validation
/// report) in the run folder, beside config.json, log.jsonl, curves.svg and the checkpoint.
func train(data: String, run folder: String, epochs: Int, windowFrames: Int?) throws {
    let run = try startRun(data: data, folder: folder, epochs: epochs, windowFrames: windowFrames)
    let outcome = try run.train(onEpoch: { e in
        print("epoch \(e.epoch): loss \(e.trainLoss), accuracy \(e.trainAccuracy)")
    })
    let result = try run.finish()
    for warning in result.warnings { print("warning: \(warning)") }
    if let report = result.validationReport { print(TextReport.render(report)) }
    print("\(outcome): wrote \(result.modelPath!)")
}
