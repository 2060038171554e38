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
/// Every file but the log is written to a temporary file and renamed into place. A run folder
/// made by `create` or `claim` holds the folder's `FolderLock` while the value (and the run
/// that keeps it) lives: a second process that would write into it is refused, naming the
/// holder.
public struct RunFolder: Sendable {
    public static let checkpointName = "checkpoint.atc"

    public let path: String
    /// This process's lock of the folder; nil for a folder only read.
    public let lock: FolderLock?
    public var configPath: String { "\(path)/config.json" }
    public var logPath: String { "\(path)/log.jsonl" }
    public var curvesPath: String { "\(path)/curves.svg" }
    public var checkpointPath: String { "\(path)/\(Self.checkpointName)" }
    public var modelPath: String { "\(path)/model.atm" }
    public var reportJSONPath: String { "\(path)/report.json" }
    public var reportTextPath: String { "\(path)/report.txt" }
    /// The evidence a temperature was fitted on (`calibration temperature`): its labels and
    /// uncalibrated logits, with the temperature and the scores before and after.
    public var calibrationPath: String { "\(path)/calibration.json" }

    /// An existing run folder, not checked and not locked (to read it).
    public init(existing path: String) {
        self.path = path
        lock = nil
    }

    init(path: String, lock: FolderLock) {
        self.path = path
        self.lock = lock
    }

    /// An existing run folder locked for writing (`FolderLock`), to resume it.
    public static func claim(_ path: String, command: String = "fit") throws -> RunFolder {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw FitError.noCheckpoint(folder: path)
        }
        return RunFolder(path: path, lock: try locking(path) { try FolderLock(path, command: command) })
    }

    /// `body`'s lock, its errors as `FitError`s.
    static func locking(_ path: String, _ body: () throws -> FolderLock) throws -> FolderLock {
        do { return try body() } catch let e as FolderLock.Busy {
            throw FitError.runFolderInUse(path, holder: e.holder)
        } catch let e as AtomicWrite.WriteError {
            throw FitError.cannotCreateFolder(path, reason: e.reason)
        }
    }

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

    /// Creates the folder for a new run and locks it (`FolderLock`; a folder another process
    /// writes is refused, naming it). An existing non-empty folder is refused unless
    /// `replacing`, which removes its checkpoints (the run's and its members'; the other files
    /// are overwritten as the run goes). The check comes after the lock, so of two processes
    /// starting on one new folder, the second finds it locked or holding the first's run.
    public static func create(_ path: String, replacing: Bool, command: String = "fit") throws -> RunFolder {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue { throw FitError.runFolderIsAFile(path) }
        let lock = try locking(path) { try FolderLock.creatingFolder(path, command: command) }
        let contents = ((try? fm.contentsOfDirectory(atPath: path)) ?? []).filter { !FolderLock.isLockName($0) }
        if !contents.isEmpty && !replacing { throw FitError.runFolderNotEmpty(path) }
        if replacing {
            for folder in [path] + contents.map({ "\(path)/\($0)" }) { try? fm.removeItem(atPath: "\(folder)/\(checkpointName)") }
        }
        return RunFolder(path: path, lock: lock)
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

/// Files written whole (PoseCore's `AtomicWrite`): to a recognisable temporary file of this
/// process's own, `.<name>.<pid>-<random>.tmp`, flushed and renamed into place, so that a
/// reader (or a crash) never sees half a file, two writers never mix theirs, and a kill leaves
/// a file that `FitRun.resume` removes.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String) throws {
        try data.withUnsafeBytes { try AtomicWrite.write($0, to: path) }
    }
}
