import Datasets

/// Any bytes: the UEA .ts reader must throw or return, never crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUEAFormat(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = try? UEAFormat.parse(Array(UnsafeBufferPointer(start: data, count: size)), file: "fuzz_TRAIN.ts")
    return 0
}
