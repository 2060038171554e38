import ActionTrain
import Foundation
import PoseCore

/// The folder of one fit run and the files in it:
///
/// | file | written |
/// |---|---|
/// | `config.json` | at the start: the resolved config (sorted keys) |
/// | `log.jsonl` | one `EpochRecord` per line, flushed after every epoch |
/// | `curves.svg` | after every epoch |
/// | `checkpoint.atc` | after every epoch and when interrupted (`Checkpoint`) |
/// | `model.atm` | at the end |
/// | `report.json`, `report.txt` | at the end, the validation report (when there is a validation split) |
/// | `member<m>/` | with `ensemble` > 1: member m's log, curves, checkpoint and model (m from 1), instead of the run's |
///
/// Every file but the log is written to a temporary file and renamed into place.
public struct RunFolder: Sendable {
    public static let checkpointName = "checkpoint.atc"

    public let path: String
    public var configPath: String { "\(path)/config.json" }
    public var logPath: String { "\(path)/log.jsonl" }
    public var curvesPath: String { "\(path)/curves.svg" }
    public var checkpointPath: String { "\(path)/\(Self.checkpointName)" }
    public var modelPath: String { "\(path)/model.atm" }
    public var reportJSONPath: String { "\(path)/report.json" }
    public var reportTextPath: String { "\(path)/report.txt" }

    /// An existing run folder (to resume), not checked.
    public init(existing path: String) { self.path = path }

    /// The folder of ensemble member m (from 0): `member<m+1>/`.
    public func member(_ m: Int) -> RunFolder { RunFolder(existing: "\(path)/member\(m + 1)") }

    /// The run folder of a checkpoint at `path`: its folder, or for an ensemble member's, the
    /// folder above.
    public static func run(ofCheckpoint path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let name = (folder as NSString).lastPathComponent
        let isMember = name.hasPrefix("member") && Int(name.dropFirst(6)) != nil
        return isMember ? (folder as NSString).deletingLastPathComponent : folder
    }

    /// Creates the folder for a new run. An existing non-empty folder is refused unless
    /// `replacing`, which removes its checkpoints (the run's and its members'; the other files
    /// are overwritten as the run goes).
    public static func create(_ path: String, replacing: Bool) throws -> RunFolder {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw FitError.runFolderIsAFile(path) }
            let contents = (try? fm.contentsOfDirectory(atPath: path)) ?? []
            if !contents.isEmpty && !replacing { throw FitError.runFolderNotEmpty(path) }
            if replacing {
                for folder in [path] + contents.map({ "\(path)/\($0)" }) { try? fm.removeItem(atPath: "\(folder)/\(checkpointName)") }
            }
        }
        do {
            try fm.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw FitError.cannotCreateFolder(path, reason: error.localizedDescription)
        }
        return RunFolder(existing: path)
    }

    /// The config as saved in `config.json` (its bytes are also the model's config hash).
    public static func encode(_ config: TrainingConfig) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try encoder.encode(config)
    }

    /// A new `log.jsonl` holding `records` (those of the checkpoint a run resumes from, so
    /// that epochs logged after the last checkpoint do not appear twice).
    func startLog(_ records: [EpochRecord]) throws -> EpochLog {
        let log = try EpochLog(path: logPath)
        for r in records { try log.append(r) }
        return log
    }
}

/// Appends epoch records to `log.jsonl` (created empty), one JSON object a line, flushing
/// each so that the log survives a crash.
final class EpochLog {
    let handle: FileHandle
    let path: String
    let encoder = JSONEncoder()

    init(path: String) throws {
        self.path = path
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
            throw WriteError(path: path, reason: "cannot create the log file")
        }
        handle = h
        encoder.outputFormatting = [.sortedKeys]
    }

    func append(_ record: EpochRecord) throws {
        let line = String(decoding: try encoder.encode(record), as: UTF8.self)
        do { try handle.write(contentsOf: Data((line + "\n").utf8)) } catch {
            throw WriteError(path: path, reason: error.localizedDescription)
        }
    }

    deinit { try? handle.close() }
}

/// Files written whole (PoseCore's `AtomicWrite`): to a recognisable temporary file
/// `.<name>.tmp`, flushed and renamed into place, so that a reader (or a crash) never sees half
/// a file, and a kill leaves a file that the next write or `FitRun.resume` removes.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String) throws {
        try data.withUnsafeBytes { try AtomicWrite.write($0, to: path) }
    }
}
