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
///
/// Only regular files are ever replaced (PoseCore's `AtomicWrite.target`): a FIFO or a character
/// device (`--json /dev/null`, `/dev/stdout` on a terminal) is written into as a stream, needs
/// no --force and gets no record; a block device or a socket is refused, with or without
/// --force.
enum OutputGuard {
    static let recordName = ".actiontrain-outputs.json"

    /// `inputs` are the command's own input files (model, data, baseline): never replaced,
    /// with --force neither (`checkOutput`).
    static func check(_ path: String, force: Bool, inputs: [String] = []) throws {
        switch AtomicWrite.target(path) {
        case .absent, .stream: return
        case .folder: throw CLIError.failure("\(path) is a folder; pass a file path")
        case .refused(let kind): throw CLIError.failure("\(path) is \(kind); actiontrain writes regular files only (or streams into a FIFO or a character device)")
        case .regularFile: break
        }
        if let input = inputs.first(where: { sameFile($0, path) }) {
            throw CLIError.failure("\(path) is the input \(input) (the same file); choose another output path, the input is never overwritten")
        }
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
    /// A FIFO or character device among them is streamed into and not recorded.
    static func write(_ files: [(name: String, data: Data)], in folder: String) throws {
        var recorded: [(name: String, data: Data)] = []
        for f in files {
            let path = "\(folder)/\(f.name)"
            if case .stream = AtomicWrite.target(path) {} else { recorded.append(f) }
            try AtomicFile.write(f.data, to: path)
        }
        guard !recorded.isEmpty else { return }
        var record = read(folder)
        for f in recorded { record[f.name] = FNV1a64.text(of: f.data) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try AtomicFile.write(try encoder.encode(record), to: "\(folder)/\(recordName)")
    }

    /// Writes one file (atomically) and records its hash in its folder's record.
    static func write(_ data: Data, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try write([(url.lastPathComponent, data)], in: url.deletingLastPathComponent().path)
    }

    /// The checks of a command that writes one named file (export, convert, import): a FIFO or
    /// character device is streamed into; a folder, a block device or a socket is refused; an
    /// existing regular file needs --force (`exists` says so); and the output may never be one
    /// of `inputs` (the same file, also through links or another name), with --force neither.
    static func checkOutput(_ path: String, force: Bool, inputs: [String], exists: String) throws {
        guard !path.isEmpty else { throw CLIError.usage("the output path is empty; give a file name") }
        switch AtomicWrite.target(path) {
        case .absent:
            // Said before any work that would come first (a fit's training, an export's check).
            if let problem = AtomicWrite.folderProblem(path) { throw CLIError.failure("\(problem)") }
            return
        case .stream: break
        case .folder: throw CLIError.failure("\(path) is a folder; give a file path")
        case .refused(let kind): throw CLIError.failure("\(path) is \(kind); actiontrain writes regular files only (or streams into a FIFO or a character device)")
        case .regularFile:
            if let input = inputs.first(where: { sameFile($0, path) }) {
                throw CLIError.failure("\(path) is the input \(input) (the same file); choose another output path, the input is never overwritten")
            }
            if !force { throw CLIError.failure(exists) }
        }
    }

    /// True when both paths name one existing file (device and inode, links followed).
    static func sameFile(_ a: String, _ b: String) -> Bool {
        var x = stat(), y = stat()
        guard stat(a, &x) == 0, stat(b, &y) == 0 else { return false }
        return x.st_dev == y.st_dev && x.st_ino == y.st_ino
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
