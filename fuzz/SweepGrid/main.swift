import ActionTrain
import Foundation
import PoseCore

/// Any bytes as a hand-written config file and as a sweep grid (issue 38): `JSONDocument` and
/// `SweepGrid` must throw or return, never crash, hang or allocate without bound (a grid's
/// candidates are counted before any is built), and every object of config keys they pass on
/// is decoded over the defaults as `actiontrain fit --config` does and validated, then turned
/// into the input for a skeleton: `TrainingConfig.validate` must bound what it lets through.
///
/// The defaults are kept as bytes and parsed for each input: a value tree kept for the whole run
/// is reported as leaked at exit (LeakSanitizer finds no pointer to the boxes of an indirect
/// enum, whose pointers carry the case in their spare bits).
let defaults = Array(try! JSONEncoder().encode(TrainingConfig()))

/// The defaults with `keys` over them, decoded and validated (nil when refused).
func config(_ keys: [JSONDocument.Member]) -> TrainingConfig? {
    guard case .object(var merged) = try! JSONDocument.parse(defaults) else { fatalError("the defaults are an object") }
    for k in keys {
        if let i = merged.firstIndex(where: { $0.key == k.key }) { merged[i] = k } else { merged.append(k) }
    }
    guard let c = try? JSONDecoder().decode(TrainingConfig.self, from: Data(JSONDocument.text(.object(merged)).utf8)), (try? c.validate()) != nil else {
        return nil
    }
    precondition(c.threads <= TrainingConfig.Limits.threads && c.epochs <= TrainingConfig.Limits.epochs, "validate let a count beyond its bound through")
    _ = try? c.inputSpec(for: .coco17, imageSize: nil)
    return c
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSweepGrid(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if case .object(let members)? = try? JSONDocument.parse(bytes) { _ = config(members) }
    if let grid = try? SweepGrid(parsing: bytes, check: { keys, _ in _ = config(keys) }) {
        precondition(grid.candidates.count <= SweepGrid.maximumCandidates, "more candidates than the bound")
        precondition(grid.candidates.count * grid.folds * grid.seeds <= SweepGrid.maximumTrials, "more trials than the bound")
        for c in grid.candidates.prefix(8) { _ = config(grid.config + c) }
    }
    return 0
}
