// library-examples: the examples of docs/library.md, one subcommand each.
import Foundation

let usage = """
    usage: library-examples train DATA RUN EPOCHS [WINDOW_FRAMES]
           library-examples evaluate MODEL DATA REPORTS
           library-examples export MODEL OUT
           library-examples export-coreml MODEL OUT
           library-examples stream MODEL RECORDING
           library-examples cancel-and-resume DATA RUN EPOCHS [WINDOW_FRAMES]
    """
let args = Array(CommandLine.arguments.dropFirst())
func number(_ i: Int) -> Int? { i < args.count ? Int(args[i]) : nil }
do {
    switch (args.first ?? "", args.count) {
    case ("train", 4...5): try train(data: args[1], run: args[2], epochs: number(3)!, windowFrames: number(4))
    case ("evaluate", 4): try evaluate(model: args[1], data: args[2], reports: args[3])
    case ("export", 3): try export(model: args[1], to: args[2])
    case ("export-coreml", 3): try exportCoreML(model: args[1], to: args[2])
    case ("stream", 3): try stream(model: args[1], recording: args[2])
    case ("cancel-and-resume", 4...5):
        try cancelAndResume(data: args[1], run: args[2], epochs: number(3)!, windowFrames: number(4), stopAfter: 2)
    default:
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
