import ActionTrainKit

/// Starts a run as `train` does, cancels it after `stopAfter` batches (an app would set a
/// flag from its Cancel button; the CLI does it on Ctrl-C), then resumes it from its folder
/// and trains it to the end. The model is the one the run would have written uninterrupted,
/// bit for bit.
func cancelAndResume(data: String, run folder: String, epochs: Int, windowFrames: Int?, stopAfter: Int) throws {
    do {
        let run = try startRun(data: data, folder: folder, epochs: epochs, windowFrames: windowFrames)
        var batches = 0
        // `shouldStop` is asked before every batch; when it says yes the run saves a checkpoint.
        let outcome = try run.train(shouldStop: { batches == stopAfter }, onBatch: { _ in batches += 1 })
        print("cancelled: \(outcome); saved \(run.checkpointPath!)")
    }  // the run ends here, which unlocks its folder (one writing process or run at a time)
    let run = try FitRun.resume(folder: RunFolder(existing: folder))
    print("resumed at epoch \(run.progress.epoch), batch \(run.progress.batch)")
    let outcome = try run.train()
    let result = try run.finish()
    print("\(outcome): wrote \(result.modelPath!)")
}
