import ActionRuntime
import Datasets  // only to read the recorded poses from a file

/// Plays the first sequence of a dataset file into a live session, as a camera would give
/// its poses (one frame at a time, at the file's frame rate), and its windows and frames into
/// the model's event rule: prints every window's most likely class and every event.
func stream(model path: String, recording: String) throws {
    let model = try ActionModel(contentsOf: path)  // load once; any number of threads and sessions may share it
    let data = try DatasetLoader.read(recording).dataset
    let session = try StreamSession(model: model, options: .standard(for: model))  // records frames when the model's events need them
    var events = try EventStream(classes: model.classes, options: .standard(for: model))  // the model's own calibrated rule
    func show(_ windows: [StreamWindow], time: Double) {
        for w in windows { print("window \(w.start)-\(w.end): \(model.classes[w.classIndex]) \(w.probabilities[w.classIndex])") }
        for e in events.add(windows: windows, frames: session.takeFrames()) { report(e, time: time) }
    }
    func report(_ e: ActionEvent, time: Double) {
        print("event: \(e.label) from \(e.start) s to \(e.end) s, peak \(e.peak), emitted at \(time) s")
    }
    let sequence = data.sequences[0], frameRate = data.frameRate ?? 30
    let last = Double(sequence.frameCount - 1) / frameRate
    for f in 0..<sequence.frameCount {
        let pose = sequence.pose(at: f, skeleton: data.skeleton)  // points by joint name
        show(try session.push(pose.points, time: Double(f) / frameRate), time: Double(f) / frameRate)
    }
    show(session.finish(), time: last)  // the windows and frames that need the end of the recording
    for e in events.finish() { report(e, time: last) }
}
