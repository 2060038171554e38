import Datasets
import PoseCore

let rig = Skeleton(name: "rig-3", joints: ["head", "leftHand", "rightHand"], dimensions: 2, units: .pixels)

/// Any bytes: the CSV reader must throw or return, never crash or hang. Tried with header
/// inference (built-in skeletons) and with a small custom skeleton so that rows get parsed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSVFormat(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? CSVFormat.parse(bytes, file: "fuzz")
    var m = CSVMapping()
    m.skeleton = rig
    _ = try? CSVFormat.parse(bytes, file: "fuzz", mapping: m)
    m.people = .split
    _ = try? CSVFormat.parse(bytes, file: "fuzz", mapping: m)
    return 0
}
