import Datasets

/// Any bytes: the native reader must throw or return, never crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNativeFormat(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = try? NativeFormat.parse(Array(UnsafeBufferPointer(start: data, count: size)), file: "fuzz")
    return 0
}
