import ActionRuntime
import Datasets  // only to read the recorded poses from a file

/// Plays the first sequence of a dataset file into a live session, as a camera would give
/// its poses (one frame at a time, at the file's frame rate), and its windows into an event
/// detector: prints every window's most likely class and every event.
func stream(model path: String, recording: String) throws {
    let model = try ActionModel(contentsOf: path)  // load once; any number of threads and sessions may share it
    let data = try DatasetLoader.read(recording).dataset
    let session = try StreamSession(model: model, options: .standard(for: model))
    var detector = try EventDetector(classes: model.classes, options: .standard(for: model))  // the model's own thresholds
    func report(_ event: ActionEvent?) {
        if let e = event { print("event: \(e.label) from \(e.start) s to \(e.end) s, peak \(e.peak), \(e.windows) windows") }
    }
    func show(_ windows: [StreamWindow]) {
        for w in windows {
            print("window \(w.start)-\(w.end): \(model.classes[w.classIndex]) \(w.probabilities[w.classIndex])")
            report(detector.add(probabilities: w.probabilities, start: w.startTime, end: w.endTime))
        }
    }
    let sequence = data.sequences[0], frameRate = data.frameRate ?? 30
    for f in 0..<sequence.frameCount {
        let pose = sequence.pose(at: f, skeleton: data.skeleton)  // points by joint name
        show(try session.push(pose.points, time: Double(f) / frameRate))
    }
    show(session.finish())  // the windows that need the end of the recording
    report(detector.finish())
}
