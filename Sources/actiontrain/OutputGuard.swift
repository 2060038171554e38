import Eval
import Foundation

/// Nothing a user gave is overwritten without asking: an existing file may be replaced only
/// when actiontrain wrote it for a report (it carries the report marker near its top, or is
/// the classification report of earlier versions), when it is empty, or with --force.
enum OutputGuard {
    static func check(_ path: String, force: Bool) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        guard !isDirectory.boolValue else { throw CLIError.failure("\(path) is a folder; pass a file path") }
        if force || isOurs(path) || isEmpty(path) { return }
        throw CLIError.failure("\(path) exists and was not written by actiontrain eval; pass --force to replace it or choose another path")
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
