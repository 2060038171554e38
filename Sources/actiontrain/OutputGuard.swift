import Eval
import Foundation
import Pipelines
import PoseCore

/// Nothing a user gave is overwritten without asking. An existing report file (eval's --report
/// folder and --json, the gate's --junit and --markdown) may be replaced without --force only
/// when actiontrain wrote it and it has not changed since: every such file written goes into
/// the folder's record `.actiontrain-outputs.json` (file name → content hash), and a file
/// whose content no longer has its recorded hash was edited and is kept. A file not in a
/// record may be replaced when it carries the report marker near its top (written by an earlier
/// version), is the classification report of earlier versions, or is empty; anything else
/// needs --force.
enum OutputGuard {
    static let recordName = ".actiontrain-outputs.json"

    static func check(_ path: String, force: Bool) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        guard !isDirectory.boolValue else { throw CLIError.failure("\(path) is a folder; pass a file path") }
        if force || isEmpty(path) { return }
        switch unchangedSinceWritten(path) {
        case true?: return
        case false?:
            throw CLIError.failure("\(path) was changed since actiontrain wrote it; pass --force to replace it or choose another path")
        case nil:
            if isOurs(path) { return }
            throw CLIError.failure("\(path) exists and was not written by actiontrain eval; pass --force to replace it or choose another path")
        }
    }

    /// Writes each file (atomically) into `folder` and records their hashes.
    static func write(_ files: [(name: String, data: Data)], in folder: String) throws {
        for f in files { try AtomicFile.write(f.data, to: "\(folder)/\(f.name)") }
        var record = read(folder)
        for f in files { record[f.name] = FNV1a64.text(of: f.data) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try AtomicFile.write(try encoder.encode(record), to: "\(folder)/\(recordName)")
    }

    /// Writes one file (atomically) and records its hash in its folder's record.
    static func write(_ data: Data, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try write([(url.lastPathComponent, data)], in: url.deletingLastPathComponent().path)
    }

    /// True when the file's content has the hash its folder's record gives it, false when it
    /// differs, nil when the record does not list it.
    static func unchangedSinceWritten(_ path: String) -> Bool? {
        let url = URL(fileURLWithPath: path)
        guard let hash = read(url.deletingLastPathComponent().path)[url.lastPathComponent] else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { return false }
        return FNV1a64.text(of: data) == hash
    }

    static func read(_ folder: String) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: "\(folder)/\(recordName)") else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: data)) ?? [:]
    }

    /// An empty file holds nothing of the user's (e.g. a file CI created for us to fill).
    static func isEmpty(_ path: String) -> Bool {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue == 0
    }

    static func isOurs(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 64 << 10)) ?? Data()
        if String(decoding: head, as: UTF8.self).contains(Reports.marker) { return true }
        // The classification report.json of earlier versions (no schema field).
        guard head.count < 64 << 10, (try? JSONDecoder().decode(ClassificationReport.self, from: head)) != nil else { return false }
        return true
    }
}
