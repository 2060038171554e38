import Datasets

/// Any bytes as a pickle: the restricted reader and the PYSKL annotation reader must throw or
/// return, never crash, hang or run anything.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPysklPickle(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? Pickle.load(bytes)
    var options = PysklFormat.Options()
    options.people = .split
    _ = try? PysklFormat.parse(bytes, file: "fuzz.pkl", options: options)
    return 0
}
